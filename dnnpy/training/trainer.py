"""dlib's ``dnn_trainer`` (``dlib/dnn/trainer.h``): mini-batch training with automatic
learning-rate shrinking, synchronization to disk and a loss-divergence guard.

    trainer = dnn_trainer(net, adam())
    trainer.set_learning_rate(1e-3)
    trainer.set_mini_batch_size(32)
    trainer.set_synchronization_file("state.sync", timedelta(minutes=5))
    trainer.be_verbose()
    trainer.train(images, labels)          # or train(images) for an unsupervised loss
    net = trainer.get_net()

Differences from dlib, all deliberate:

* Training runs synchronously in the calling thread (dlib queues the steps to a worker thread;
  with one device that only overlaps input conversion with compute). Every getter is
  therefore immediately current.
* A NaN/inf loss triggers the divergence guard at once (the update of that step is skipped and
  the next sync point reloads the last good state and shrinks the learning rate; dlib waits
  for the next timed sync and only shrinks after repeated increases). Non-finite parameters
  are treated the same way. Without a sync file (where dlib has no guard) the trainer keeps an
  in-memory copy of the last good state (taken when training starts and then every
  ``memory_snapshot_interval`` seconds) and restores it, so the net never ends a ``train()``
  or a ``get_net()`` with non-finite parameters from a divergence.
* The sync file starts with a dnnpy header (magic, the net type's bracket expression), so a
  file written for another net type is rejected with an error naming both types.

Counting follows dlib: ``get_train_one_step_calls()`` counts ``train_one_step`` calls only
(``train()`` advances the epoch position instead).
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import math
import time
from collections import deque

import numpy as np

from ..core import add_loss_layer
from ..errors import SerializationError
from ..solvers import make_solvers, sgd
from ..statistics import (count_steps_without_decrease, count_steps_without_decrease_robust,
                         running_stats, running_stats_decayed)
from . import progress as _progress
from .guard import sync_and_guard

__all__ = ["dnn_trainer"]

_NAME = "dnn_trainer"


def _is_unsupervised(loss) -> bool:
    """dlib's ``training_label_type == no_label_type``: the loss takes no labels."""
    params = inspect.signature(loss.compute_loss_value_and_gradient).parameters
    return len(params) == 2


def _positive_int(what, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{_NAME}.{what}: expected an integer > 0, got {value!r}")
    return int(value)


def _nonneg_int(what, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{_NAME}.{what}: expected an integer >= 0, got {value!r}")
    return int(value)


def _positive_float(what, value):
    value = float(value)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{_NAME}.{what}: expected a finite value > 0, got {value!r}")
    return value


class dnn_trainer(sync_and_guard):
    """Trains ``net`` (a net ending in a loss layer) with one copy of ``solver`` per
    computational layer (``sgd()`` by default). The trainer updates ``net`` in place."""

    def __init__(self, net, solver=None):
        if not isinstance(net, add_loss_layer):
            raise TypeError(f"{_NAME}: the net must end in a loss layer, got {type(net).__name__}")
        self._net = net
        self._solver_prototype = copy.deepcopy(solver if solver is not None else sgd())
        self._solvers = make_solvers(net, self._solver_prototype)
        self._unsupervised = _is_unsupervised(net.loss_details())
        self._display = _progress.progress_display()
        self._init()

    def _init(self):
        # dlib's init() defaults
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
        self._previous_loss_values_to_keep_until_disk_sync = deque()
        self._previous_loss_values_dump_amount = 400
        self._test_previous_loss_values_dump_amount = 100
        # not serialized (dlib's too)
        self._main_iteration_counter = 0
        self._main_iteration_counter_at_last_disk_sync = 0
        self._prob_loss_increasing_thresh_default_value = 0.99
        self._prob_loss_increasing_thresh_max_value = 0.99999
        self._prob_loss_increasing_thresh = self._prob_loss_increasing_thresh_default_value
        self._updated_net_since_last_sync = False
        self._sync_file_reloaded = False
        self._sync_filename = ""
        self._time_between_syncs = 15 * 60.0
        self._last_sync_time = time.monotonic()
        # dnnpy
        self._record_history = False
        self._loss_history = []
        self._test_loss_history = []
        self._nonfinite_seen = False
        self._consecutive_recoveries = 0
        self._memory_state = None
        self._memory_state_time = 0.0
        self._memory_guard_enabled = True
        self._updated_since_snapshot = False

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
        return self._mini_batch_size

    def set_mini_batch_size(self, batch_size):
        self._mini_batch_size = _positive_int("set_mini_batch_size", batch_size)

    def get_max_num_epochs(self):
        return self._max_num_epochs

    def set_max_num_epochs(self, num):
        self._max_num_epochs = _positive_int("set_max_num_epochs", num)

    def be_verbose(self):
        self._verbose = True

    def be_quiet(self):
        self._verbose = False

    def is_verbose(self):
        return self._verbose

    def set_learning_rate(self, lr):
        """Sets the learning rate; a different value resets the progress counters and loss
        histories. Clears any learning-rate schedule."""
        lr = _positive_float("set_learning_rate", lr)
        if self._learning_rate != lr:
            self._steps_without_progress = 0
            self._test_steps_without_progress = 0
            self._previous_loss_values.clear()
            self._test_previous_loss_values.clear()
            self._previous_loss_values_to_keep_until_disk_sync.clear()
        self._learning_rate = lr
        self._lr_schedule = []

    def get_learning_rate(self):
        return self._learning_rate

    def set_min_learning_rate(self, lr):
        """``train()`` stops once the learning rate drops below this. Clears any schedule."""
        lr = _positive_float("set_min_learning_rate", lr)
        self._lr_schedule = []
        self._min_learning_rate = lr

    def get_min_learning_rate(self):
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
        return np.array(self._lr_schedule, dtype=np.float64)

    def set_iterations_without_progress_threshold(self, thresh):
        self._iter_without_progress_thresh = _nonneg_int("set_iterations_without_progress_threshold", thresh)
        self._lr_schedule = []

    def get_iterations_without_progress_threshold(self):
        return self._iter_without_progress_thresh

    def get_steps_without_progress(self):
        return self._steps_without_progress

    def set_test_iterations_without_progress_threshold(self, thresh):
        self._test_iter_without_progress_thresh = _nonneg_int(
            "set_test_iterations_without_progress_threshold", thresh)
        self._lr_schedule = []

    def get_test_iterations_without_progress_threshold(self):
        return self._test_iter_without_progress_thresh

    def get_test_steps_without_progress(self):
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
        return self._learning_rate_shrink

    def get_train_one_step_calls(self):
        return self._train_one_step_calls

    def get_test_one_step_calls(self):
        return self._test_one_step_calls

    def get_average_loss(self):
        """Mean training loss since the last ``clear_average_loss()`` (each epoch of ``train()``
        starts with one)."""
        return self._rs.mean()

    def get_average_test_loss(self):
        return self._rs_test.mean()

    def clear_average_loss(self):
        self._rs.clear()

    # -- loss history (dnnpy) ----------------------------------------------------------------
    def record_loss_history(self, enable=True):
        """Keep every training (and test) step's loss, for ``get_loss_history`` and
        ``save_loss_plot``; kept in the sync file too."""
        self._record_history = bool(enable)

    def get_loss_history(self):
        return list(self._loss_history)

    def get_test_loss_history(self):
        return list(self._test_loss_history)

    def save_loss_plot(self, path):
        """A PNG of the recorded loss history (needs matplotlib: ``pip install 'dnnpy[plot]'``)."""
        if not self._loss_history and not self._test_loss_history:
            raise ValueError(f"{_NAME}.save_loss_plot: no loss history was recorded; call "
                             f"record_loss_history() before training")
        _progress.save_loss_plot(path, self._loss_history, self._test_loss_history)

    # ------------------------------------------------------------------------------------
    # training

    def _check_batch(self, what, data, labels):
        if self._unsupervised and labels is not None:
            raise ValueError(f"{_NAME}.{what}: {type(self._net.loss_details()).__name__} is an "
                             f"unsupervised loss; call {what}(data) without labels")
        if not self._unsupervised and labels is None:
            raise ValueError(f"{_NAME}.{what}: {type(self._net.loss_details()).__name__} needs "
                             f"labels: call {what}(data, labels)")
        try:
            n = len(data)
        except TypeError:
            raise TypeError(f"{_NAME}.{what}: data must be a sequence (list or array) of inputs, "
                            f"got {type(data).__name__}") from None
        if n == 0:
            raise ValueError(f"{_NAME}.{what}: the data is empty")
        if labels is not None and len(labels) != n:
            raise ValueError(f"{_NAME}.{what}: got {n} data samples but {len(labels)} labels; "
                             f"the counts must match")
        return n

    def train_one_step(self, data, labels=None):
        """One update on the mini-batch ``data`` (with ``labels`` unless the loss is
        unsupervised)."""
        n = self._check_batch("train_one_step", data, labels)
        self._print_periodic_verbose_status()
        self._sync_to_disk()
        self._train_job(data, labels, n)
        self._train_one_step_calls += 1

    def test_one_step(self, data, labels=None):
        """Compute the loss on ``data`` without updating; feeds the test-loss average and the
        test-loss plateau detection."""
        self._check_batch("test_one_step", data, labels)
        self._print_periodic_verbose_status()
        self._sync_to_disk()
        self._test_job(data, labels)
        self._test_one_step_calls += 1

    def train(self, data, labels=None):
        """Epochs of unshuffled consecutive mini-batches (the last may be partial) until
        ``get_max_num_epochs()`` epochs are done or the learning rate drops below the
        minimum; then syncs. Resumes at the stored epoch and position (sync files)."""
        n = self._check_batch("train", data, labels)
        while (self._epoch_iteration < self._max_num_epochs
               and self._learning_rate >= self._min_learning_rate):
            self._display.reset_timer()
            self.clear_average_loss()
            while self._epoch_pos < n and self._learning_rate >= self._min_learning_rate:
                if self._verbose:
                    self._train_status(n)
                self._sync_to_disk()          # may reload a state, moving epoch_pos
                pos = self._epoch_pos
                if pos >= n or self._learning_rate < self._min_learning_rate:
                    break                     # (a reload shrank the learning rate)
                end = min(pos + self._mini_batch_size, n)
                self._train_job(data[pos:end], None if labels is None else labels[pos:end], end - pos)
                self._epoch_pos += self._mini_batch_size
            self._epoch_pos = 0               # dlib: also when the learning rate stopped it
            if self._verbose:
                self._display.message(
                    f"Epoch: {_progress.rpad(str(self._epoch_iteration + 1), _progress.EPOCH_PAD)}  "
                    f"learning rate: {_progress.rpad(_progress.fmt(self._learning_rate), _progress.LR_PAD)}  "
                    f"average loss: {_progress.rpad(_progress.fmt(self.get_average_loss()), _progress.STRING_PAD)}  "
                    + self._progress_text())
            self._epoch_iteration += 1
        self._sync_to_disk(True)

    def _train_job(self, data, labels, n):
        loss = self._net.compute_parameter_gradients(data, labels)
        self._updated_net_since_last_sync = True
        self._updated_since_snapshot = True
        self._main_iteration_counter += 1
        self._record_loss(loss)
        self._display.count_samples(n)
        if math.isfinite(loss):
            self._net.update_parameters(self._solvers, self._learning_rate)
        else:
            # the gradients are garbage: skip the update; the next sync point reloads
            self._nonfinite_seen = True

        if (self._gradient_check_budget > self._iter_without_progress_thresh
                and self._learning_rate_shrink != 1):
            # dlib's budget: the O(thresh) plateau check runs about every thresh/200 steps
            self._gradient_check_budget = 0
            self._steps_without_progress = count_steps_without_decrease(self._previous_loss_values)
            if self._steps_without_progress >= self._iter_without_progress_thresh:
                # recheck ignoring the top 10% of losses: a few bad mini-batches must not
                # shrink the learning rate
                self._steps_without_progress = count_steps_without_decrease_robust(
                    self._previous_loss_values)
                if self._steps_without_progress >= self._iter_without_progress_thresh:
                    self._learning_rate = self._learning_rate_shrink * self._learning_rate
                    self._steps_without_progress = 0
                    self._drop_some_previous_loss_values()
        elif self._lr_schedule:
            if self._lr_schedule_pos < len(self._lr_schedule):
                self._learning_rate = self._lr_schedule[self._lr_schedule_pos]
                self._lr_schedule_pos += 1
            else:
                self._learning_rate = self._lr_schedule[-1] * 0.99

    def _test_job(self, data, labels):
        loss = self._net.compute_loss(data, labels)
        self._record_test_loss(loss)
        if self._learning_rate_shrink != 1:
            self._test_steps_without_progress = count_steps_without_decrease(self._test_previous_loss_values)
            if self._test_steps_without_progress >= self._test_iter_without_progress_thresh:
                self._test_steps_without_progress = count_steps_without_decrease_robust(
                    self._test_previous_loss_values)
                if self._test_steps_without_progress >= self._test_iter_without_progress_thresh:
                    self._learning_rate = self._learning_rate_shrink * self._learning_rate
                    self._test_steps_without_progress = 0
                    self._drop_some_test_previous_loss_values()

    def _record_loss(self, loss):
        self._gradient_check_budget += 200
        self._rs.add(loss)
        self._previous_loss_values.append(loss)
        while len(self._previous_loss_values) > self._iter_without_progress_thresh:
            self._previous_loss_values.popleft()
        if self._sync_filename:
            self._previous_loss_values_to_keep_until_disk_sync.append(loss)
        if self._record_history:
            self._loss_history.append(float(loss))

    def _record_test_loss(self, loss):
        self._test_previous_loss_values.append(loss)
        if math.isfinite(loss):
            self._rs_test.add(loss)
        while len(self._test_previous_loss_values) > self._test_iter_without_progress_thresh:
            self._test_previous_loss_values.popleft()
        if self._record_history:
            self._test_loss_history.append(float(loss))

    def _drop_some_previous_loss_values(self):
        for _ in range(self._previous_loss_values_dump_amount + self._iter_without_progress_thresh // 10):
            if not self._previous_loss_values:
                break
            self._previous_loss_values.popleft()

    def _drop_some_test_previous_loss_values(self):
        for _ in range(self._test_previous_loss_values_dump_amount
                       + self._test_iter_without_progress_thresh // 10):
            if not self._test_previous_loss_values:
                break
            self._test_previous_loss_values.popleft()

    # ------------------------------------------------------------------------------------
    # verbose output

    def _progress_text(self):
        if not self._lr_schedule:
            if not self._test_previous_loss_values:
                return f"steps without apparent progress: {self._steps_without_progress}"
            return (f"steps without apparent progress: train={self._steps_without_progress}, "
                    f"test={self._test_steps_without_progress}")
        return f"percent complete: {100.0 * self._lr_schedule_pos / len(self._lr_schedule):.2f}%"

    def _train_status(self, n):
        d = self._display
        epoch = self._epoch_iteration + self._epoch_pos / n
        if d.is_tty():
            d.live(f"epoch: {epoch:.3f}  average loss: {_progress.fmt(self.get_average_loss())}  "
                   f"learning rate: {_progress.fmt(self._learning_rate)}  "
                   f"{d.samples_per_second():.0f} samples/s  {self._progress_text()}")
        elif d.plain_due(d.plain_interval):
            d.message(f"epoch: {_progress.rpad(_progress.fmt(epoch), _progress.EPOCH_PAD)}  "
                      f"learning rate: {_progress.rpad(_progress.fmt(self._learning_rate), _progress.LR_PAD)}  "
                      f"average loss: {_progress.rpad(_progress.fmt(self.get_average_loss()), _progress.STRING_PAD)}  "
                      + self._progress_text())

    def _print_periodic_verbose_status(self):
        if not self._verbose:
            return
        d = self._display
        if not d.plain_due(d.step_interval):
            return
        text = (f"step#: {_progress.rpad(str(self._train_one_step_calls), _progress.EPOCH_PAD)}  "
                f"learning rate: {_progress.rpad(_progress.fmt(self._learning_rate), _progress.LR_PAD)}  ")
        if not self._test_previous_loss_values:
            text += f"average loss: {_progress.rpad(_progress.fmt(self.get_average_loss()), _progress.STRING_PAD)}  "
        else:
            text += (f"train loss: {_progress.rpad(_progress.fmt(self.get_average_loss()), _progress.STRING_PAD)}  "
                     f"test loss: {_progress.rpad(_progress.fmt(self.get_average_test_loss()), _progress.STRING_PAD)}  ")
        d.message(text + self._progress_text())
        self.clear_average_loss()

    def _say(self, text):
        if self._verbose:
            self._display.message(text)

    # ------------------------------------------------------------------------------------

    def __str__(self):
        """dlib's ``operator<<(ostream, dnn_trainer)``."""
        from ..visitors.walk import count_parameters

        net = self._net
        lines = ["dnn_trainer details: ", f"  net_type::num_layers:  {net.num_layers()}"]
        temp = copy.deepcopy(net)
        temp.clean()
        try:
            from ..serialization.net import write_net
            from ..serialization.primitives import Writer
            w = Writer()
            write_net(w, temp)
            size = f"{_progress.fmt(len(w.buffer) / 1024.0 / 1024.0)} MiB"
        except (ImportError, SerializationError, NotImplementedError) as e:
            size = f"unknown ({type(e).__name__}: {e})"
        num_params = count_parameters(temp)
        lines.append(f"  net size: {size}" + (f" ({num_params} parameters)" if num_params > 0 else ""))
        arch = hashlib.md5(str(net.subnet()).encode()).hexdigest()
        lines.append(f"  net architecture hash: {arch}")
        lines.append(f"  loss: {net.loss_details()!r}")
        pad = "  {:<44}".format
        lines.append(pad("get_train_one_step_calls():") + f"{self._train_one_step_calls}")
        lines.append(pad("synchronization file:") + f"{self._sync_filename}")
        lines.append(pad("trainer.get_solvers()[0]:") + f"{self._solvers[0]!r}")
        lines.append(pad("mini batch size:") + f"{self._mini_batch_size}")
        if self._lr_schedule:
            lines.append("  using explicit user-supplied learning rate schedule")
        else:
            lines.append(pad("learning rate:") + _progress.fmt(self._learning_rate))
            lines.append(pad("learning rate shrink factor:") + _progress.fmt(self._learning_rate_shrink))
            lines.append(pad("min learning rate:") + _progress.fmt(self._min_learning_rate))
            lines.append(pad("iterations without progress threshold:") + f"{self._iter_without_progress_thresh}")
            lines.append(pad("test iterations without progress threshold:")
                         + f"{self._test_iter_without_progress_thresh}")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return f"<dnn_trainer of {self._net.net_type!r}>"
