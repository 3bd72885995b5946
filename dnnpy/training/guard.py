"""dnn_trainer's synchronization to disk and its divergence guard (trainer.h ``sync_to_disk``,
``loss_increased_since_last_disk_sync``): a ``sync_guard`` object that the trainer owns.

The guard decides when to save, whether the training went wrong since the last save, and
what to reload; the trainer owns the learning rate and decides what a reload means for it.
Their interface is small and explicit:

* the trainer gives the guard four functions: ``encode()`` (the whole training state as
  sync-file bytes), ``restore(data, source)`` (load such bytes; the trainer then calls
  ``state_loaded``), ``parameters_finite()`` and ``clean()`` (drop the net's cached
  activations before a save, as dlib does);
* ``files`` (a ``local_sync_files``) is how the guard touches the files and the clock; the
  data-parallel trainer gives one whose rank 0 alone does so and tells the others
  (``dnnpy.training.data_parallel.shared_sync_files``);
* the trainer reports each training step with ``record_step(loss)``;
* at each sync point the trainer calls ``sync_point(force)``, which saves, snapshots or
  reloads and returns what it did (a ``sync_event``) or None.

The state file format and the file handling are in ``dnnpy.training.sync``; the rules are
described in ``docs/training.md`` ("Synchronization and resume", "Divergence guard").
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections import deque
from typing import NamedTuple, Optional

from ..errors import SerializationError
from .statistics import probability_values_are_increasing, probability_values_are_increasing_robust
from . import checks
from . import sync as _sync

_NAME = "dnn_trainer"

# dlib's prob_loss_increasing_thresh: starts at the default, moves toward the max each time
# the loss is found increasing, so reloading cannot go on forever
PROB_THRESH_DEFAULT = 0.99
PROB_THRESH_MAX = 0.99999

IN_MEMORY = "the in-memory copy of the last good state"



class TrainingDivergedError(RuntimeError):
    """The loss or the parameters kept becoming NaN/inf: the divergence guard reloaded the last
    good state until it could not go on (the learning rate fell below the minimum, or 10
    reloads in a row with a shrink factor of 1). The net holds the last good state."""

class sync_event(NamedTuple):
    """What a sync point did.

    kind: "saved" (``path`` written), "reloaded" (``path`` read back, or the in-memory copy
    when ``path`` is None) or "dropped" (NaN/inf but no good state to reload: the bad step
    was only skipped). ``diverged``: the reason was NaN/inf (else a rising loss). ``shrink``:
    for a rising loss, dlib also shrinks the learning rate this time. ``consecutive``: NaN/inf
    reloads in a row, without a good save or snapshot in between."""

    kind: str
    path: Optional[str] = None
    diverged: bool = False
    shrink: bool = False
    consecutive: int = 0

    @property
    def source(self) -> str:
        return self.path if self.path is not None else IN_MEMORY


class local_sync_files:
    """The guard's access to the sync files and to the clock, in one process."""

    def check_path(self, name):
        """Refuse a sync file that could not be written later."""
        checks.check_sync_path(name)

    def newest(self, name):
        """The newest of ``name`` / ``name + "_"``."""
        return _sync.newest_syncfile(name)

    def exists(self, path):
        return os.path.exists(path)

    def read(self, path):
        """The file's bytes, None when absent."""
        return _sync.read_file(path)

    def save(self, name, encode):
        """Write ``encode()`` atomically over the older of ``name`` / ``name + "_"``; returns
        the path written."""
        data = encode()
        target = _sync.oldest_syncfile(name)
        other = name + "_" if target == name else name
        _sync.atomic_write(target, data)
        # keep "newest" well defined on file systems with coarse timestamps
        try:
            m_other = os.stat(other).st_mtime_ns
            if os.stat(target).st_mtime_ns <= m_other:
                os.utime(target, ns=(m_other + 1, m_other + 1))
        except FileNotFoundError:
            pass
        return target

    def agree(self, flag):
        """A decision read from this process's clock, as every process must take it."""
        return flag


class sync_guard:
    """The sync-file and divergence-guard state of one ``dnn_trainer`` (see the module)."""

    memory_snapshot_interval = 60.0   # seconds between in-memory copies when nothing is on disk

    def __init__(self, encode, restore, parameters_finite, clean, files=None):
        self._files = files if files is not None else local_sync_files()
        self._encode = encode
        self._restore = restore
        self._parameters_finite = parameters_finite
        self._clean = clean
        self._filename = ""
        self._interval = 15 * 60.0
        self._last_sync_time = time.monotonic()
        self._steps = 0                         # dlib's main_iteration_counter (not saved)
        self._steps_at_last_sync = 0
        self._losses_since_sync = deque()       # dlib's previous_loss_values_to_keep_until_disk_sync
        self._updated_since_sync = False
        self._prob_thresh = PROB_THRESH_DEFAULT
        self._nonfinite_seen = False
        self._consecutive_reloads = 0
        # without a file on disk: an in-memory copy of the last good state (dnnpy)
        self._memory_state = None
        self._memory_state_time = 0.0
        self._memory_enabled = True
        self._updated_since_snapshot = False

    # -- settings --------------------------------------------------------------------------
    @property
    def filename(self) -> str:
        """The sync file ("" when none)."""
        return self._filename

    @property
    def files(self) -> local_sync_files:
        """How the guard reads and writes the sync files."""
        return self._files

    @property
    def interval(self) -> float:
        """Seconds between saves."""
        return self._interval

    def set_file(self, name, seconds):
        """Save to ``name`` / ``name + "_"`` every ``seconds`` from now on."""
        self._filename = name
        self._interval = float(seconds)
        self._last_sync_time = time.monotonic()
        self._memory_state = None

    # -- state shared with the sync file ----------------------------------------------------
    @property
    def losses_since_sync(self) -> deque:
        """The training losses kept for the rising-loss test (written to the sync file)."""
        return self._losses_since_sync

    def clear_losses(self):
        """Forget the kept losses (the learning rate was changed by hand)."""
        self._losses_since_sync.clear()

    def state_loaded(self, losses_since_sync):
        """The trainer has just loaded a whole state (at ``set_synchronization_file`` or in a
        reload): take its kept losses, forget any NaN/inf seen."""
        self._losses_since_sync = deque(losses_since_sync)
        self._nonfinite_seen = False

    # -- events -----------------------------------------------------------------------------
    def record_step(self, loss):
        """One training step ran with this mini-batch loss (its update is skipped by the trainer
        when the loss is not finite; the next sync point then reloads)."""
        self._steps += 1
        self._updated_since_sync = self._updated_since_snapshot = True
        if self._filename:
            self._losses_since_sync.append(loss)
        if not math.isfinite(loss):
            self._nonfinite_seen = True

    def sync_point(self, force=False) -> Optional[sync_event]:
        """dlib's ``sync_to_disk(force)``, run before every step, at the end of ``train()`` and in
        ``get_net()``: save when the interval has passed (or ``force``), unless the training went
        wrong since the last save, in which case reload it instead. Without a file on disk the
        in-memory copy guards against NaN/inf."""
        if not self._filename:
            return self._memory_guard(force)
        newest = self._files.newest(self._filename)
        have_file = self._files.exists(newest)
        if not have_file:
            event = self._memory_guard(force)
            if event is not None:
                return event
        if not self._updated_since_sync:
            return None
        if not self._files.agree(time.monotonic() - self._last_sync_time > self._interval or force
                                 or self._nonfinite_seen):
            return None
        self._clean()
        diverged = self._nonfinite_seen or not self._parameters_finite()
        if have_file and (diverged or self.loss_increased()):
            event = self._reload(self._files.read(newest), newest, diverged)
        elif diverged:
            event = self._reload(self._memory_state, None, True)   # nothing on disk yet
        else:
            event = self._save()
        self._last_sync_time = time.monotonic()
        self._steps_at_last_sync = self._steps
        self._updated_since_sync = False
        return event

    # -- internals --------------------------------------------------------------------------
    def _save(self):
        target = self._files.save(self._filename, self._encode)
        self._memory_state = None
        self._consecutive_reloads = 0
        return sync_event("saved", target)

    def _memory_guard(self, force):
        """Without a sync file on disk: keep an in-memory copy of the last good state and restore
        it when the loss or the parameters turn NaN/inf (dlib has no guard in this case)."""
        if not self._memory_enabled:
            return self._reload(None, None, True) if self._nonfinite_seen else None
        now = time.monotonic()
        if self._memory_state is None and not self._nonfinite_seen:
            if not self._updated_since_snapshot or self._parameters_finite():
                self._take_memory_snapshot(now)
                return None
        if not self._updated_since_snapshot and not self._nonfinite_seen:
            return None
        due = self._files.agree(now - self._memory_state_time > self.memory_snapshot_interval)
        if self._nonfinite_seen or ((due or force) and not self._parameters_finite()):
            return self._reload(self._memory_state, None, True)
        if due:
            self._take_memory_snapshot(now)
        return None

    def _take_memory_snapshot(self, now):
        try:
            self._memory_state = self._encode()
        except (ImportError, SerializationError, NotImplementedError, TypeError) as e:
            self._memory_enabled = False
            self._memory_state = None
            warnings.warn(f"{_NAME}: cannot keep an in-memory copy of the training state "
                          f"({type(e).__name__}: {e}); NaN/inf losses will not be recovered from "
                          f"without a synchronization file", RuntimeWarning, stacklevel=6)
            return
        self._memory_state_time = now
        self._updated_since_snapshot = False
        self._consecutive_reloads = 0

    def _reload(self, data, path, diverged):
        """Load a saved state (``path``, or the in-memory copy when None) through the trainer;
        ``diverged`` means NaN/inf rather than a rising loss."""
        self._updated_since_sync = self._updated_since_snapshot = False
        if diverged:
            self._consecutive_reloads += 1
        if data is None:
            # no good state anywhere (the in-memory copy is disabled): only the bad step is dropped
            self._nonfinite_seen = False
            return sync_event("dropped", None, True, False, self._consecutive_reloads)
        self._restore(data, path if path is not None else IN_MEMORY)
        self._memory_state_time = time.monotonic()
        return sync_event("reloaded", path, diverged,
                          not diverged and self._prob_thresh >= PROB_THRESH_MAX,
                          self._consecutive_reloads)

    def loss_increased(self) -> bool:
        """dlib's test: has the loss been rising since (a little before) the last sync?"""
        since = self._steps - self._steps_at_last_sync
        keep = self._losses_since_sync
        while len(keep) > 2 * since:
            keep.popleft()
        if any(not math.isfinite(x) for x in keep):
            return True
        if len(keep) < 30:
            return False
        prob = max(probability_values_are_increasing(keep), probability_values_are_increasing_robust(keep))
        if prob > self._prob_thresh:
            # make the test harder each time so reloading cannot go on forever
            self._prob_thresh = min(0.1 * self._prob_thresh + 0.9, PROB_THRESH_MAX)
            return True
        self._prob_thresh = max(self._prob_thresh ** 10, PROB_THRESH_DEFAULT)
        return False
