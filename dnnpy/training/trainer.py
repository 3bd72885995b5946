"""dlib's ``dnn_trainer`` (``dlib/dnn/trainer.h``): mini-batch training with automatic
learning-rate shrinking, synchronization to disk and a loss-divergence guard.

    trainer = dnn_trainer(net, adam())
    trainer.set_learning_rate(1e-3)
    trainer.set_mini_batch_size(32)
    trainer.set_synchronization_file("state.sync", timedelta(minutes=5))
    trainer.be_verbose()
    trainer.train(images, labels)          # or train(images) for an unsupervised loss
    net = trainer.get_net()

Differences from dlib, all deliberate (``docs/training.md`` has the details):

* Training runs synchronously in the calling thread (dlib queues the steps to a worker thread;
  with one device that only overlaps input conversion with compute). Every getter is
  therefore immediately current.
* Mini-batches are checked before the net sees them: non-finite inputs (after conversion)
  and non-finite float labels raise ``ValueError`` naming the sample, its mini-batch and epoch.
* A NaN/inf loss triggers the divergence guard at once (the update of that step is skipped and
  the next sync point reloads the last good state and shrinks the learning rate; dlib waits
  for the next timed sync and only shrinks after repeated increases). Non-finite parameters
  are treated the same way. Without a sync file (where dlib has no guard) the trainer keeps an
  in-memory copy of the last good state. When such reloads push the learning rate below the
  minimum, training has collapsed: ``TrainingDivergedError``. In quiet mode every reload is
  a ``RuntimeWarning``.
* ``train()`` skips a mini-batch of one sample when the net has a ``bn_`` (dlib's bn_ cannot
  train on one sample either: its gradient asserts), with a one-time warning;
  ``train(..., shuffle=True)`` visits a new order each epoch; ``get_stop_reason()`` says why
  ``train()`` returned.
* The sync file starts with a dnnpy header (magic, the net type's bracket expression), so a
  file written for another net type is rejected with an error naming both types.

Under an MPI launcher each process trains one replica on its chunk of every (global)
mini-batch, equal to single-process training; the public calls are then collective
(``data_parallel.py``, ``docs/distributed.md``).

Counting follows dlib: ``get_train_one_step_calls()`` counts ``train_one_step`` calls only
(``train()`` advances the epoch position instead).
"""

from __future__ import annotations

import copy
import math
import os
import time
import warnings
from collections import deque
from datetime import timedelta

import numpy as np

from ..core import add_loss_layer
from ..solvers import make_solvers, sgd
from .statistics import running_stats, running_stats_decayed
from ..templates import NetType
from ..tensor import resizable_tensor
from ..visitors.walk import visit_layer_parameters
from . import batches as _batches
from . import checks
from . import progress as _progress
from . import sync as _sync
from .data_parallel import make_replica_group, shared_sync_files
from .guard import TrainingDivergedError, sync_guard
from .plateau import forget_after_shrink, remember_loss, steps_without_progress

__all__ = ["dnn_trainer", "TrainingDivergedError", "STOP_MAX_EPOCHS", "STOP_MIN_LEARNING_RATE",
           "STOP_SCHEDULE_DONE", "STOP_NONFINITE"]

_NAME = "dnn_trainer"

# get_stop_reason() values
STOP_MAX_EPOCHS = "max epochs"
STOP_MIN_LEARNING_RATE = "learning rate below min"
STOP_SCHEDULE_DONE = "learning rate schedule done"
STOP_NONFINITE = "NaN/inf collapse"


class dnn_trainer:
    """Trains ``net`` (a net ending in a loss layer) with one copy of ``solver`` per
    computational layer (``sgd()`` by default). The trainer updates ``net`` in place.

    ``devices`` (dlib's ``cuda_extra_devices``, e.g. ``[0, 1]``): the GPUs of one machine.
    dnnpy trains one replica per process, so under ``mpiexec`` rank r uses
    ``devices[local rank]``; one process given several GPUs is refused with the ``mpiexec``
    command to run instead. On the CPU backend the list is accepted and ignored (one replica
    per process, as dlib's CPU build)."""

    max_consecutive_recoveries = 10   # with a shrink factor of 1, give up after this many reloads
    saved_message_interval = 60.0     # verbose: "Saved state to" at most this often (seconds)

    def __init__(self, net, solver=None, devices=None):
        if isinstance(net, NetType):
            raise TypeError(f"{_NAME}: got the net type {net!r}, not a net; build one first: "
                            f"dnn_trainer(net_type(), solver)")
        if not isinstance(net, add_loss_layer):
            raise TypeError(f"{_NAME}: the net must end in a loss layer, got {type(net).__name__}")
        self._net = net
        self._solver_prototype = copy.deepcopy(checks.check_solver(solver if solver is not None else sgd()))
        self._solvers = make_solvers(net, self._solver_prototype)
        self._unsupervised = checks.is_unsupervised(net.loss_details())
        self._replicas = make_replica_group(net, self._solver_prototype, devices)
        # verbose output from rank 0 only
        self._display = _progress.progress_display(None if self._replicas.rank == 0 else _progress.null_stream())
        self._init()

    def _init(self):
        # dlib's init() defaults (serialized in the sync file)
        self._max_num_epochs = 10000
        self._mini_batch_size = 128
        self._verbose = False
        self._learning_rate = 1e-2
        self._min_learning_rate = 1e-5
        self._iter_without_progress_thresh = 2000
        self._steps_without_progress = 0
        self._test_iter_without_progress_thresh = 500
        self._test_steps_without_progress = 0
        self._learning_rate_shrink = 0.1
        self._epoch_iteration = 0
        self._epoch_pos = 0
        self._train_one_step_calls = 0
        self._test_one_step_calls = 0
        self._gradient_check_budget = 0
        self._lr_schedule = []
        self._lr_schedule_pos = 0
        self._rs = running_stats()
        self._rs_test = running_stats_decayed(200)
        self._previous_loss_values = deque()
        self._test_previous_loss_values = deque()
        self._previous_loss_values_dump_amount = 400
        self._test_previous_loss_values_dump_amount = 100
        self._record_history = False
        self._loss_history = []            # one loss per training step
        self._test_loss_history = []       # (training step, loss) pairs
        # the sync file and the divergence guard (its own state; see guard.py)
        files = shared_sync_files(self._replicas.comm) if self._replicas.size > 1 else None
        self._guard = sync_guard(self._encode_state, self._load_state, self._params_finite,
                                 self._net.clean, files)
        # not serialized
        self._batch = resizable_tensor()   # the converted mini-batch
        self._stop_reason = None
        self._last_shrink = None           # what shrank the learning rate last ("NaN/inf", ...)
        self._nonfinite_reloads = 0
        self._last_saved_message = -math.inf
        self._warned_one_sample = set()

    # ------------------------------------------------------------------------------------
    # settings (dlib's names and defaults)

    def get_net(self, force_flush=True):
        """The net; by default first syncs to disk (or runs the in-memory divergence check)
        if it changed since the last sync, as dlib's ``get_net(force_flush_to_disk::yes)``."""
        self._sync_to_disk(bool(force_flush))
        return self._net

    def get_solvers(self):
        """One solver per computational layer, index 0 nearest the output."""
        return self._solvers

    def get_mini_batch_size(self):
        """The mini-batch size of ``train()`` (default 128)."""
        return self._mini_batch_size

    def set_mini_batch_size(self, batch_size):
        """An integer > 0."""
        self._mini_batch_size = checks.positive_int("set_mini_batch_size", batch_size)

    def get_max_num_epochs(self):
        """``train()`` runs at most this many epochs (default 10000, dlib's)."""
        return self._max_num_epochs

    def set_max_num_epochs(self, num):
        """An integer > 0. Without it (10000 epochs) ``train()`` in practice ends when the
        learning rate has shrunk below the minimum: three plateau shrinks from the defaults."""
        self._max_num_epochs = checks.positive_int("set_max_num_epochs", num)

    def be_verbose(self):
        """Print progress, saves and reloads (see ``docs/training.md``, "Verbose output")."""
        self._verbose = True

    def be_quiet(self):
        """Print nothing (the default); divergence-guard reloads are then ``RuntimeWarning``s."""
        self._verbose = False

    def is_verbose(self):
        """True after ``be_verbose()``."""
        return self._verbose

    def set_learning_rate(self, lr):
        """Sets the learning rate; a different value resets the progress counters and loss
        histories. Clears any learning-rate schedule."""
        lr = checks.positive_float("set_learning_rate", lr)
        if self._learning_rate != lr:
            self._steps_without_progress = 0
            self._test_steps_without_progress = 0
            self._previous_loss_values.clear()
            self._test_previous_loss_values.clear()
            self._guard.clear_losses()
        self._learning_rate = lr
        self._lr_schedule = []
        self._last_shrink = None

    def get_learning_rate(self):
        """The current learning rate (default 1e-2)."""
        return self._learning_rate

    def set_min_learning_rate(self, lr):
        """``train()`` stops once the learning rate drops below this. Clears any schedule."""
        lr = checks.positive_float("set_min_learning_rate", lr)
        self._lr_schedule = []
        self._min_learning_rate = lr

    def get_min_learning_rate(self):
        """The learning rate below which ``train()`` stops (default 1e-5)."""
        return self._min_learning_rate

    def set_learning_rate_schedule(self, schedule):
        """Use ``schedule[i]`` as the learning rate of update ``i`` (then ``0.99*schedule[-1]``):
        sets lr = schedule[0], min lr = min(schedule), shrink factor 1."""
        values = np.asarray(schedule, dtype=np.float64).ravel()
        if values.size == 0:
            raise ValueError(f"{_NAME}.set_learning_rate_schedule: the schedule is empty")
        if not np.all(values > 0) or not np.all(np.isfinite(values)):
            raise ValueError(f"{_NAME}.set_learning_rate_schedule: every value must be finite and "
                             f"> 0, got min {values.min()!r}")
        self.set_learning_rate(float(values[0]))
        self.set_min_learning_rate(float(values.min()))
        self.set_learning_rate_shrink_factor(1)
        self._lr_schedule = [float(v) for v in values]
        self._lr_schedule_pos = 0

    def get_learning_rate_schedule(self):
        """The schedule as a float64 array (empty when none)."""
        return np.array(self._lr_schedule, dtype=np.float64)

    def set_iterations_without_progress_threshold(self, thresh):
        """The plateau detector's window on the training loss (default 2000 steps). Clears any
        schedule."""
        self._iter_without_progress_thresh = checks.nonneg_int("set_iterations_without_progress_threshold", thresh)
        self._lr_schedule = []

    def get_iterations_without_progress_threshold(self):
        """See ``set_iterations_without_progress_threshold``."""
        return self._iter_without_progress_thresh

    def get_steps_without_progress(self):
        """The plateau detector's last count of training steps without a decreasing loss."""
        return self._steps_without_progress

    def set_test_iterations_without_progress_threshold(self, thresh):
        """The plateau detector's window on the ``test_one_step`` losses (default 500). Clears
        any schedule."""
        self._test_iter_without_progress_thresh = checks.nonneg_int(
            "set_test_iterations_without_progress_threshold", thresh)
        self._lr_schedule = []

    def get_test_iterations_without_progress_threshold(self):
        """See ``set_test_iterations_without_progress_threshold``."""
        return self._test_iter_without_progress_thresh

    def get_test_steps_without_progress(self):
        """The plateau detector's last count of test steps without a decreasing loss."""
        return self._test_steps_without_progress

    def set_learning_rate_shrink_factor(self, shrink):
        """In (0, 1]; 1 disables automatic shrinking. Clears any schedule."""
        shrink = float(shrink)
        if not 0 < shrink <= 1:
            raise ValueError(f"{_NAME}.set_learning_rate_shrink_factor: expected a value in (0, 1], "
                             f"got {shrink!r}")
        self._lr_schedule = []
        self._learning_rate_shrink = shrink
        self._steps_without_progress = 0
        self._test_steps_without_progress = 0

    def get_learning_rate_shrink_factor(self):
        """The factor a plateau (or a reload) multiplies the learning rate by (default 0.1)."""
        return self._learning_rate_shrink

    def get_train_one_step_calls(self):
        """How many times ``train_one_step`` was called (``train()``'s steps are not counted,
        as in dlib)."""
        return self._train_one_step_calls

    def get_test_one_step_calls(self):
        """How many times ``test_one_step`` was called."""
        return self._test_one_step_calls

    def get_average_loss(self):
        """Mean training loss since the last ``clear_average_loss()`` (each epoch of ``train()``
        starts with one)."""
        return self._rs.mean()

    def get_average_test_loss(self):
        """A decayed average (half-life 200 calls) of the finite ``test_one_step`` losses."""
        return self._rs_test.mean()

    def clear_average_loss(self):
        """Restart ``get_average_loss()``'s average."""
        self._rs.clear()

    def get_stop_reason(self):
        """Why the last ``train()`` returned (None before one has, or while one runs):
        ``"max epochs"``, ``"learning rate below min"`` (the plateau detector shrank it: dlib's
        normal end), ``"learning rate schedule done"``, or ``"NaN/inf collapse"`` (then
        ``train()`` raised ``TrainingDivergedError``). Module constants ``STOP_*`` hold them."""
        return self._stop_reason

    # -- loss history (dnnpy) ----------------------------------------------------------------
    def record_loss_history(self, enable=True):
        """Keep every training (and test) step's loss, for ``get_loss_history``,
        ``get_test_loss_history`` and ``save_loss_plot``; kept in the sync file too."""
        self._record_history = bool(enable)

    def get_loss_history(self):
        """The recorded training losses, one per step (a list of floats)."""
        return list(self._loss_history)

    def get_test_loss_history(self):
        """The recorded ``test_one_step`` losses as ``(step, loss)`` pairs, where ``step`` is
        the number of recorded training steps before that test (its x in ``save_loss_plot``;
        None for tests read from a sync file written before dnnpy recorded steps)."""
        return list(self._test_loss_history)

    def save_loss_plot(self, path):
        """A PNG of the recorded loss history against the training step, test losses at the
        step they were taken (needs matplotlib: ``pip install 'dnnpy[plot]'``)."""
        if not self._loss_history and not self._test_loss_history:
            raise ValueError(f"{_NAME}.save_loss_plot: no loss history was recorded; call "
                             f"record_loss_history() before training")
        _progress.save_loss_plot(path, self._loss_history, self._test_loss_history)

    # ------------------------------------------------------------------------------------
    # synchronization (the state itself is in guard.py and sync.py)

    def set_synchronization_file(self, filename, time_between_syncs=900, *, seconds=None):
        """Save the whole trainer state to ``filename`` / ``filename + "_"`` (alternating,
        the older one is overwritten, atomically) every ``time_between_syncs`` (seconds or a
        ``timedelta``; default 15 minutes) during training and at the end of ``train()``.
        If one of the files exists, the newest is loaded now: the trainer (net, solvers,
        learning rate, counters, loss histories, epoch position) resumes from it (verbose:
        one "Resumed from" line). A file for another net type raises ``SerializationError``
        naming both types; files are never modified by a failed load. A path whose folder
        does not exist or is not writable is refused here (``FileNotFoundError``,
        ``PermissionError``), not at the first save. ``seconds=`` is another name for the
        interval."""
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
        files = self._guard.files
        files.check_path(name)
        newest = files.newest(name)
        data = files.read(newest)
        if data is not None:
            was_verbose = self._verbose
            self._load_state(data, newest)
            if was_verbose or self._verbose:
                self._display.message(
                    f"Resumed from {newest}: {self._epoch_iteration} epochs + {self._epoch_pos} "
                    f"samples done, {self._train_one_step_calls} train_one_step calls, "
                    f"learning rate {_progress.fmt(self._learning_rate)}")
        self._guard.set_file(name, seconds)

    def get_synchronization_file(self):
        """The sync file name ("" when none)."""
        return self._guard.filename

    def _encode_state(self) -> bytes:
        return _sync.encode_state(self)

    def _load_state(self, data, what):
        """Replace the whole trainer state (and the net, in place) with ``data``; all or nothing."""
        s = _sync.decode_state(data, what, self)
        s.pop("commit_net")()
        s.pop("commit_solvers")()
        self._rs, self._rs_test = s.pop("rs"), s.pop("rs_test")
        self._guard.state_loaded(s.pop("previous_loss_values_to_keep_until_disk_sync"))
        for key in ("previous_loss_values", "test_previous_loss_values"):
            setattr(self, "_" + key, deque(s.pop(key)))
        for key, value in s.items():
            setattr(self, "_" + key, value)

    def _params_finite(self) -> bool:
        ok = True

        def check(t):
            nonlocal ok
            if ok and t.size() and not np.all(np.isfinite(t.host_read())):
                ok = False

        visit_layer_parameters(self._net, check)
        return ok

    def _sync_to_disk(self, force=False):
        """A sync point: the guard saves, snapshots or reloads; a reload's meaning for the
        learning rate is decided here."""
        lr_before = self._learning_rate
        event = self._guard.sync_point(force)
        if event is None:
            return
        if event.kind == "saved":
            now = time.monotonic()
            if force or now - self._last_saved_message >= self.saved_message_interval:
                self._last_saved_message = now
                self._say(f"Saved state to {event.path}")
        elif event.diverged:
            self._after_divergence(event, lr_before)
        else:
            self._after_rising_loss(event)

    def _shrink_learning_rate(self, from_rate, cause):
        self._learning_rate = from_rate * self._learning_rate_shrink
        self._last_shrink = cause
        self._steps_without_progress = 0
        self._test_steps_without_progress = 0
        self._drop_some_previous_loss_values()
        self._drop_some_test_previous_loss_values()

    def _after_divergence(self, event, lr_before):
        self._nonfinite_reloads += 1
        if event.kind == "dropped":
            text = ("Loss or parameters became NaN/inf and no good state is kept to reload "
                    "(see the warning about the in-memory copy); the step was skipped")
        else:
            text = f"Loss or parameters became NaN/inf, reloading saved state from {event.source}"
        if self._learning_rate_shrink != 1:
            # dnnpy: always shrink after NaN/inf, compounding over repeated reloads
            self._shrink_learning_rate(min(lr_before, self._learning_rate), "NaN/inf")
            text += f"; learning rate shrunk to {_progress.fmt(self._learning_rate)}"
        self._report([text])
        if self._learning_rate_shrink == 1 and event.consecutive >= self.max_consecutive_recoveries:
            self._stop_reason = STOP_NONFINITE
            raise TrainingDivergedError(
                f"{_NAME}: the loss became NaN/inf {event.consecutive} times in a row after "
                f"reloading {event.source}, and the learning rate shrink factor is 1 so the "
                f"learning rate ({self._learning_rate:g}) cannot be lowered automatically")
        if self._learning_rate < self._min_learning_rate:
            self._stop_reason = STOP_NONFINITE
            held = ("No good state was kept (see the warning about the in-memory copy): the net is "
                    "as its last step left it" if event.kind == "dropped" else
                    f"The net holds the last good state ({event.source})")
            raise TrainingDivergedError(
                f"{_NAME}: training collapsed: the loss or the parameters became NaN/inf, and "
                f"each time ({self._nonfinite_reloads} so far) the learning rate was shrunk; it is "
                f"now {self._learning_rate:g}, below the minimum {self._min_learning_rate:g}, so "
                f"training stops. {held}. Likely causes: a learning rate too high for this net "
                f"and solver, or a layer or loss computing NaN/inf (overflow, log of 0).")

    def _after_rising_loss(self, event):
        lines = [f"Loss has been increasing, reloading saved state from {event.source}"]
        if event.shrink:
            if self._learning_rate_shrink != 1:
                lines.append("(and while at it, also shrinking the learning rate)")
            self._shrink_learning_rate(self._learning_rate, "rising loss")
        self._report(lines)

    def _report(self, lines):
        """A divergence-guard message: printed when verbose, else a RuntimeWarning (the stack
        level points at the user's train/train_one_step/get_net call)."""
        if self._verbose:
            for line in lines:
                self._display.message(line)
        else:
            warnings.warn(f"{_NAME}: " + " ".join(lines), RuntimeWarning, stacklevel=5)

    # ------------------------------------------------------------------------------------
    # training

    def _check_batch(self, what, data, labels):
        return checks.check_batch(what, self._net.loss_details(), self._unsupervised, data, labels)

    def train_one_step(self, data, labels=None):
        """One update on the mini-batch ``data`` (with ``labels`` unless the loss is
        unsupervised); returns the mini-batch's loss, before the update (dlib returns nothing;
        ``get_average_loss()`` is its running mean). Non-finite inputs or float labels raise
        ``ValueError`` naming the sample; a NaN/inf loss skips the update and triggers the
        divergence guard at the next call."""
        n = self._check_batch("train_one_step", data, labels)
        self._replicas.check_data("train_one_step", n)
        self._print_periodic_verbose_status()
        self._sync_to_disk()
        loss = self._train_job(data, labels, n, _batches.one_batch_position(f"{_NAME}.train_one_step"))
        self._train_one_step_calls += 1
        return loss

    def test_one_step(self, data, labels=None):
        """Compute the loss on ``data`` without updating and return it; feeds the test-loss
        average and the test-loss plateau detection. Inputs are checked as in
        ``train_one_step``."""
        n = self._check_batch("test_one_step", data, labels)
        self._replicas.check_data("test_one_step", n)
        self._print_periodic_verbose_status()
        self._sync_to_disk()
        loss = self._test_job(data, labels, n, _batches.one_batch_position(f"{_NAME}.test_one_step"))
        self._test_one_step_calls += 1
        return loss

    def train(self, data, labels=None, *, shuffle=False, seed=0):
        """Epochs of consecutive mini-batches (the last may be partial) until
        ``get_max_num_epochs()`` epochs are done or the learning rate drops below the minimum;
        then syncs, and ``get_stop_reason()`` says which. Resumes at the stored epoch and
        position (sync files).

        The data is used in the order given, as in dlib (shuffle sorted data first with
        ``dnnpy.randomize_samples``), unless ``shuffle=True``: then each epoch visits a
        permutation drawn from ``(seed, epoch)``, the same after a resume, so pass the same
        data, ``shuffle`` and ``seed`` when resuming.

        Raises ``ValueError`` naming the sample, mini-batch and epoch for non-finite inputs or
        float labels, and ``TrainingDivergedError`` when NaN/inf losses push the learning rate
        below the minimum. A mini-batch of one sample is skipped (with a one-time warning)
        when the net has a ``bn_``, which cannot train on one sample."""
        n = self._check_batch("train", data, labels)
        self._replicas.check_data("train", n, self._mini_batch_size)
        bn = _batches.batch_norm_layer(self._net)
        checks.check_bn_batches(bn, n, self._mini_batch_size, self._replicas.size,
                                self._replicas.smallest_chunk(min(n, self._mini_batch_size)))
        if self._learning_rate < self._min_learning_rate and self._last_shrink == "NaN/inf":
            self._stop_reason = STOP_NONFINITE
            raise TrainingDivergedError(
                f"{_NAME}.train: an earlier NaN/inf collapse left the learning rate at "
                f"{self._learning_rate:g}, below the minimum {self._min_learning_rate:g}; call "
                f"set_learning_rate() with a smaller rate than before to train again")
        self._stop_reason = None
        while (self._epoch_iteration < self._max_num_epochs
               and self._learning_rate >= self._min_learning_rate):
            self._display.reset_timer()
            self.clear_average_loss()
            order = _batches.epoch_order(n, seed, self._epoch_iteration) if shuffle else None
            while self._epoch_pos < n and self._learning_rate >= self._min_learning_rate:
                if self._verbose:
                    self._train_status(n)
                self._sync_to_disk()          # may reload a state, moving epoch_pos
                pos = self._epoch_pos
                if pos >= n or self._learning_rate < self._min_learning_rate:
                    break                     # (a reload shrank the learning rate)
                end = min(pos + self._mini_batch_size, n)
                if bn is not None and self._replicas.smallest_chunk(end - pos) == 1:
                    self._skip_one_sample(bn, n, pos)
                else:
                    index = slice(pos, end) if order is None else order[pos:end]
                    where = _batches.epoch_position(f"{_NAME}.train", n, pos, end, order,
                                                    self._mini_batch_size, self._epoch_iteration)
                    self._train_job(_batches.take(data, index),
                                    None if labels is None else _batches.take(labels, index),
                                    end - pos, where)
                self._epoch_pos += self._mini_batch_size
            self._epoch_pos = 0               # dlib: also when the learning rate stopped it
            if self._verbose:
                _progress.epoch_line(self._display, self._epoch_iteration + 1, self._learning_rate,
                                     self.get_average_loss(), self._progress_text())
            self._epoch_iteration += 1
        self._sync_to_disk(True)
        self._stop_reason = self._why_stopped()

    def _why_stopped(self):
        if self._learning_rate >= self._min_learning_rate:
            return STOP_MAX_EPOCHS
        if self._lr_schedule and self._lr_schedule_pos >= len(self._lr_schedule):
            return STOP_SCHEDULE_DONE
        return STOP_MIN_LEARNING_RATE

    def _skip_one_sample(self, bn, n, pos):
        key = (n, self._mini_batch_size)
        if key not in self._warned_one_sample:
            self._warned_one_sample.add(key)
            _batches.warn_one_sample_skipped(f"{_NAME}.train", bn, n, pos, self._mini_batch_size)

    def _convert(self, data, labels, where):
        """The mini-batch as a tensor, refused if it holds NaN/inf (inputs or float labels)."""
        x = self._net.to_tensor(data, self._batch)
        _batches.check_inputs(where, self._net, x, data)
        if labels is not None:
            _batches.check_labels(where, labels)
        return x

    def _train_job(self, data, labels, n, where):
        # one process: the whole batch; several: this rank's chunk, combined (data_parallel.py)
        # the whole step holds the net's lock: a net(x) from another thread runs between
        # steps, never between this step's forward, backward and update (core/calls.py)
        with self._net.input_node().lock:
            loss = self._replicas.compute_parameter_gradients(data, labels, n, where, self._convert)
            self._guard.record_step(loss)
            self._record_loss(loss)
            self._display.count_samples(n)
            if math.isfinite(loss):
                self._net.update_parameters(self._solvers, self._learning_rate)
            # else the gradients are garbage: skip the update; the next sync point reloads

        if (self._gradient_check_budget > self._iter_without_progress_thresh
                and self._learning_rate_shrink != 1):
            # dlib's budget: the O(thresh) plateau check runs about every thresh/200 steps
            self._gradient_check_budget = 0
            self._steps_without_progress = steps_without_progress(
                self._previous_loss_values, self._iter_without_progress_thresh)
            if self._steps_without_progress >= self._iter_without_progress_thresh:
                self._learning_rate = self._learning_rate_shrink * self._learning_rate
                self._last_shrink = "plateau"
                self._steps_without_progress = 0
                self._drop_some_previous_loss_values()
        elif self._lr_schedule:
            if self._lr_schedule_pos < len(self._lr_schedule):
                self._learning_rate = self._lr_schedule[self._lr_schedule_pos]
                self._lr_schedule_pos += 1
            else:
                self._learning_rate = self._lr_schedule[-1] * 0.99
        return loss

    def _test_job(self, data, labels, n, where):
        with self._net.input_node().lock:
            loss = self._replicas.compute_loss(data, labels, n, where, self._convert)
        self._record_test_loss(loss)
        if self._learning_rate_shrink != 1:
            self._test_steps_without_progress = steps_without_progress(
                self._test_previous_loss_values, self._test_iter_without_progress_thresh)
            if self._test_steps_without_progress >= self._test_iter_without_progress_thresh:
                self._learning_rate = self._learning_rate_shrink * self._learning_rate
                self._last_shrink = "plateau"
                self._test_steps_without_progress = 0
                self._drop_some_test_previous_loss_values()
        return loss

    def _record_loss(self, loss):
        self._gradient_check_budget += 200
        self._rs.add(loss)
        remember_loss(self._previous_loss_values, loss, self._iter_without_progress_thresh)
        if self._record_history:
            self._loss_history.append(float(loss))

    def _record_test_loss(self, loss):
        remember_loss(self._test_previous_loss_values, loss, self._test_iter_without_progress_thresh)
        if math.isfinite(loss):
            self._rs_test.add(loss)
        if self._record_history:
            self._test_loss_history.append((len(self._loss_history), float(loss)))

    def _drop_some_previous_loss_values(self):
        forget_after_shrink(self._previous_loss_values, self._previous_loss_values_dump_amount,
                            self._iter_without_progress_thresh)

    def _drop_some_test_previous_loss_values(self):
        forget_after_shrink(self._test_previous_loss_values, self._test_previous_loss_values_dump_amount,
                            self._test_iter_without_progress_thresh)

    # ------------------------------------------------------------------------------------
    # verbose output

    def _progress_text(self):
        return _progress.progress_text(self._steps_without_progress, self._test_steps_without_progress,
                                       bool(self._test_previous_loss_values), self._lr_schedule_pos,
                                       len(self._lr_schedule))

    def _train_status(self, n):
        _progress.train_status(self._display, self._epoch_iteration + self._epoch_pos / n,
                               self.get_average_loss(), self._learning_rate, self._progress_text())

    def _print_periodic_verbose_status(self):
        if self._verbose and self._display.plain_due(self._display.step_interval):
            test = self.get_average_test_loss() if self._test_previous_loss_values else None
            _progress.step_status(self._display, self._train_one_step_calls, self._learning_rate,
                                  self.get_average_loss(), test, self._progress_text())
            self.clear_average_loss()

    def _say(self, text):
        if self._verbose:
            self._display.message(text)

    # ------------------------------------------------------------------------------------

    def __str__(self):
        """dlib's ``operator<<(ostream, dnn_trainer)``."""
        return _progress.describe(self, self._net)

    def __repr__(self):
        """``<dnn_trainer of NET_TYPE>``; ``print(trainer)`` gives dlib's details."""
        return f"<dnn_trainer of {self._net.net_type!r}>"
