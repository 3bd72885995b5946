"""dnn_trainer's synchronization to disk and its divergence guard (trainer.h ``sync_to_disk``,
``loss_increased_since_last_disk_sync``), as a mixin of ``dnnpy.training.dnn_trainer``.

The state file format and the file handling are in ``dnnpy.training.sync``; the rules are
described in ``docs/training.md`` ("Synchronization and resume", "Divergence guard").
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections import deque
from datetime import timedelta

import numpy as np

from ..errors import SerializationError
from ..statistics import probability_values_are_increasing, probability_values_are_increasing_robust
from . import sync as _sync

_NAME = "dnn_trainer"


class sync_and_guard:
    """The sync-file and divergence-guard half of ``dnn_trainer`` (uses its fields)."""

    memory_snapshot_interval = 60.0   # seconds between in-memory copies when nothing is on disk
    max_consecutive_recoveries = 10   # with a shrink factor of 1, give up after this many reloads


    def set_synchronization_file(self, filename, time_between_syncs=900, *, seconds=None):
        """Save the whole trainer state to ``filename`` / ``filename + "_"`` (alternating,
        the older one is overwritten, atomically) every ``time_between_syncs`` (seconds or a
        ``timedelta``; default 15 minutes) during training and at the end of ``train()``.
        If one of the files exists, the newest is loaded now: the trainer (net, solvers,
        learning rate, counters, loss histories, epoch position) resumes from it. A file for
        another net type raises ``SerializationError`` naming both types; files are never
        modified by a failed load. ``seconds=`` is accepted as another name for the interval."""
        if seconds is not None:
            time_between_syncs = seconds
        if isinstance(time_between_syncs, timedelta):
            seconds = time_between_syncs.total_seconds()
        else:
            seconds = float(time_between_syncs)
        if not seconds >= 0:
            raise ValueError(f"{_NAME}.set_synchronization_file: time_between_syncs must be >= 0, "
                             f"got {time_between_syncs!r}")
        name = os.fspath(filename)
        if not name:
            raise ValueError(f"{_NAME}.set_synchronization_file: the file name is empty")
        newest = _sync.newest_syncfile(name)
        data = _sync.read_file(newest)
        if data is not None:
            self._load_state(data, newest)
        self._sync_filename = name
        self._time_between_syncs = seconds
        self._last_sync_time = time.monotonic()
        self._memory_state = None

    def get_synchronization_file(self):
        return self._sync_filename

    def _load_state(self, data, what):
        """Replace the whole trainer state (and the net, in place) with ``data``; all or nothing."""
        s = _sync.decode_state(data, what, self)
        s.pop("commit_net")()
        s.pop("commit_solvers")()
        self._rs, self._rs_test = s.pop("rs"), s.pop("rs_test")
        for key in ("previous_loss_values", "test_previous_loss_values",
                    "previous_loss_values_to_keep_until_disk_sync"):
            setattr(self, "_" + key, deque(s.pop(key)))
        for key, value in s.items():
            setattr(self, "_" + key, value)
        self._nonfinite_seen = False

    def _params_finite(self) -> bool:
        from ..visitors.walk import visit_layer_parameters

        ok = True

        def check(t):
            nonlocal ok
            if ok and t.size() and not np.all(np.isfinite(t.host_read())):
                ok = False

        visit_layer_parameters(self._net, check)
        return ok

    def _sync_to_disk(self, do_it_now=False):
        if not self._sync_filename:
            self._memory_guard(do_it_now)
            return
        newest = _sync.newest_syncfile(self._sync_filename)
        have_file = os.path.exists(newest)
        if not have_file:
            self._memory_guard(do_it_now)     # nothing on disk yet: the in-memory copy guards
        if not self._updated_net_since_last_sync:
            return
        now = time.monotonic()
        if not (now - self._last_sync_time > self._time_between_syncs or do_it_now
                or self._nonfinite_seen):
            return
        self._net.clean()
        diverged = self._nonfinite_seen or not self._params_finite()
        if have_file and (diverged or self._loss_increased_since_last_disk_sync()):
            self._recover(_sync.read_file(newest), newest, diverged)
        elif diverged:
            # nothing on disk yet: fall back to the in-memory copy
            self._recover(self._memory_state, None, True)
        else:
            self._save()
        self._last_sync_time = time.monotonic()
        self._main_iteration_counter_at_last_disk_sync = self._main_iteration_counter
        self._updated_net_since_last_sync = False

    def _save(self):
        data = _sync.encode_state(self)
        target = _sync.oldest_syncfile(self._sync_filename)
        other = self._sync_filename + "_" if target == self._sync_filename else self._sync_filename
        _sync.atomic_write(target, data)
        # keep "newest" well defined on file systems with coarse timestamps
        try:
            m_other = os.stat(other).st_mtime_ns
            if os.stat(target).st_mtime_ns <= m_other:
                os.utime(target, ns=(m_other + 1, m_other + 1))
        except FileNotFoundError:
            pass
        self._memory_state = None
        self._consecutive_recoveries = 0
        self._say(f"Saved state to {target}")

    def _memory_guard(self, force):
        """Without a sync file: keep an in-memory copy of the last good state and restore it
        when the loss or the parameters turn NaN/inf (dlib has no guard in this case)."""
        if not self._memory_guard_enabled:
            return
        now = time.monotonic()
        if self._memory_state is None and not self._nonfinite_seen:
            if not self._updated_since_snapshot or self._params_finite():
                self._take_memory_snapshot(now)
                return
        if not self._updated_since_snapshot and not self._nonfinite_seen:
            return
        due = now - self._memory_state_time > self.memory_snapshot_interval
        if self._nonfinite_seen or ((due or force) and not self._params_finite()):
            self._recover(self._memory_state, None, True)
        elif due:
            self._take_memory_snapshot(now)

    def _take_memory_snapshot(self, now):
        try:
            self._memory_state = _sync.encode_state(self)
        except (ImportError, SerializationError, NotImplementedError, TypeError) as e:
            self._memory_guard_enabled = False
            self._memory_state = None
            warnings.warn(f"{_NAME}: cannot keep an in-memory copy of the training state "
                          f"({type(e).__name__}: {e}); NaN/inf losses will not be recovered from "
                          f"without a synchronization file", RuntimeWarning, stacklevel=4)
            return
        self._memory_state_time = now
        self._updated_since_snapshot = False
        self._consecutive_recoveries = 0

    def _recover(self, data, filename, diverged):
        """Reload a saved state (``filename``, or the in-memory copy when None) and shrink the
        learning rate as dlib does; ``diverged`` means NaN/inf rather than a rising loss."""
        lr_before = self._learning_rate
        if data is None:
            # no good state anywhere (diverged before the first snapshot): drop the bad step
            self._nonfinite_seen = False
            self._updated_net_since_last_sync = self._updated_since_snapshot = False
            return
        source = filename if filename is not None else "the in-memory copy of the last good state"
        self._load_state(data, source)
        self._sync_file_reloaded = True
        self._memory_state_time = time.monotonic()
        self._updated_net_since_last_sync = self._updated_since_snapshot = False
        if diverged:
            self._say(f"Loss or parameters became NaN/inf, reloading saved state from {source}")
            self._consecutive_recoveries += 1
            if self._learning_rate_shrink != 1:
                # dnnpy: always shrink after NaN/inf, compounding over repeated reloads
                self._learning_rate = min(lr_before, self._learning_rate) * self._learning_rate_shrink
                self._steps_without_progress = 0
                self._test_steps_without_progress = 0
                self._drop_some_previous_loss_values()
                self._drop_some_test_previous_loss_values()
            elif self._consecutive_recoveries >= self.max_consecutive_recoveries:
                raise RuntimeError(
                    f"{_NAME}: the loss became NaN/inf {self._consecutive_recoveries} times in a row "
                    f"after reloading {source}, and the learning rate shrink factor is 1 so the "
                    f"learning rate ({self._learning_rate:g}) cannot be lowered automatically")
            return
        self._say(f"Loss has been increasing, reloading saved state from {source}")
        if self._prob_loss_increasing_thresh >= self._prob_loss_increasing_thresh_max_value:
            if self._learning_rate_shrink != 1:
                self._say("(and while at it, also shrinking the learning rate)")
            self._learning_rate = self._learning_rate_shrink * self._learning_rate
            self._steps_without_progress = 0
            self._test_steps_without_progress = 0
            self._drop_some_previous_loss_values()
            self._drop_some_test_previous_loss_values()

    def _loss_increased_since_last_disk_sync(self) -> bool:
        """dlib's test: has the loss been rising since (a little before) the last sync?"""
        since = self._main_iteration_counter - self._main_iteration_counter_at_last_disk_sync
        keep = self._previous_loss_values_to_keep_until_disk_sync
        while len(keep) > 2 * since:
            keep.popleft()
        if any(not math.isfinite(x) for x in keep):
            return True
        if len(keep) < 30:
            return False
        prob = max(probability_values_are_increasing(keep), probability_values_are_increasing_robust(keep))
        if prob > self._prob_loss_increasing_thresh:
            # make the test harder each time so reloading cannot go on forever
            self._prob_loss_increasing_thresh = min(0.1 * self._prob_loss_increasing_thresh + 0.9,
                                                    self._prob_loss_increasing_thresh_max_value)
            return True
        self._prob_loss_increasing_thresh = max(self._prob_loss_increasing_thresh ** 10,
                                                self._prob_loss_increasing_thresh_default_value)
        return False

