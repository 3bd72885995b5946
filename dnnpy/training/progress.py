"""dnn_trainer's console output and loss plot.

Verbose mode prints dlib's lines (``epoch: ...  learning rate: ...  average loss: ...  steps
without apparent progress: ...``, ``Epoch: ...`` at each epoch end, ``step#: ...`` from the
``*_one_step`` calls, ``Saved state to ...``). On a terminal a live status line (epoch, average
loss, learning rate, samples/s, steps without progress) is redrawn in place at most every
0.5 s; elsewhere (a log file, a pipe) dlib's plain lines are printed every 20 s (40 s for
``*_one_step``), as dlib does.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import time

from ..errors import SerializationError
from ..serialization.net import write_net
from ..serialization.primitives import Writer
from ..visitors.walk import count_parameters


def fmt(x) -> str:
    """C++ ``cast_to_string`` of a double (ostream's default: 6 significant digits)."""
    return "%g" % x


def rpad(s: str, n: int) -> str:
    return s.ljust(n)


STRING_PAD, EPOCH_PAD, LR_PAD = 11, 4, 4   # dlib's string_pad, epoch_string_pad, lr_string_pad


class null_stream:
    """A stream that discards what is written (the verbose output of ranks other than 0);
    unlike ``open(os.devnull)`` it holds no file descriptor to leak."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


class progress_display:
    """Writes the trainer's verbose output to ``stream`` (default: ``sys.stdout`` at the time
    of each write, so test capture and redirection work)."""

    live_interval = 0.5
    plain_interval = 20.0
    step_interval = 40.0

    def __init__(self, stream=None):
        self._stream = stream
        self._live = False          # a live line is on screen (needs clearing before a message)
        self._last_draw = 0.0
        self._last_plain = time.monotonic()
        self._rate_t = time.monotonic()
        self._rate_samples = 0
        self._rate = 0.0

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stdout

    def is_tty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def reset_timer(self):
        """dlib sets ``last_time = now`` at the start of every epoch."""
        self._last_plain = time.monotonic()

    def count_samples(self, n):
        self._rate_samples += n
        now = time.monotonic()
        if now - self._rate_t >= 1.0:
            self._rate = self._rate_samples / (now - self._rate_t)
            self._rate_t, self._rate_samples = now, 0

    def samples_per_second(self) -> float:
        """Over the last full second, or since the window started when none has passed."""
        if self._rate:
            return self._rate
        elapsed = time.monotonic() - self._rate_t
        return self._rate_samples / elapsed if elapsed > 0 else 0.0

    def _clear_live(self):
        if self._live:
            self.stream.write("\r\033[K")
            self._live = False

    def message(self, text):
        """A line of its own (``Saved state to ...``)."""
        self._clear_live()
        self.stream.write(text + "\n")
        self.stream.flush()

    def live(self, text):
        """Redraw the live status line (terminals only, at most every 0.5 s)."""
        now = time.monotonic()
        if now - self._last_draw < self.live_interval:
            return
        self._last_draw = now
        self.stream.write("\r\033[K" + text)
        self.stream.flush()
        self._live = True

    def plain_due(self, interval) -> bool:
        now = time.monotonic()
        if now - self._last_plain > interval:
            self._last_plain = now
            return True
        return False


def save_loss_plot(path, train_losses, test_losses=(), title="dnn_trainer loss"):
    """Write a PNG of the losses against the training step with matplotlib. x is the number of
    training steps taken before the loss was measured: training loss ``i`` (0-based) at x = i,
    each test loss ``(step, loss)`` at x = step (pairs with an unknown step, None, are left out)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("dnn_trainer.save_loss_plot needs matplotlib, which is an optional extra: "
                          "pip install 'dnnpy[plot]' (or pip install matplotlib)") from e
    # a Figure with its own Agg canvas: no pyplot, so the caller's backend and open figures
    # are left alone (matplotlib.use("Agg") would switch a notebook's backend globally)
    fig = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    if len(train_losses):
        ax.plot(range(len(train_losses)), train_losses, lw=0.8, label="training loss")
    test_losses = [(step, loss) for step, loss in test_losses if step is not None]
    if test_losses:
        steps, losses = zip(*test_losses)
        ax.plot(steps, losses, lw=0.8, marker="." if len(test_losses) < 50 else None,
                label="test loss")
        test_losses = list(losses)
    ax.set_xlabel("training step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    positive = [v for v in list(train_losses) + list(test_losses) if v > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    if len(train_losses) or len(test_losses):
        ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, format="png")


def progress_text(steps, test_steps, has_test_losses, schedule_pos, schedule_len) -> str:
    """The end of dlib's status lines: steps without apparent progress, or how much of a
    learning-rate schedule is done."""
    if schedule_len:
        return f"percent complete: {100.0 * schedule_pos / schedule_len:.2f}%"
    if not has_test_losses:
        return f"steps without apparent progress: {steps}"
    return f"steps without apparent progress: train={steps}, test={test_steps}"


def _lr_and_loss(learning_rate, loss):
    return (f"learning rate: {rpad(fmt(learning_rate), LR_PAD)}  "
            f"average loss: {rpad(fmt(loss), STRING_PAD)}  ")


def train_status(display, epoch, average_loss, learning_rate, progress):
    """``train()``'s status: a live line on a terminal, dlib's plain line every 20 s elsewhere."""
    if display.is_tty():
        display.live(f"epoch: {epoch:.3f}  average loss: {fmt(average_loss)}  "
                     f"learning rate: {fmt(learning_rate)}  "
                     f"{display.samples_per_second():.0f} samples/s  {progress}")
    elif display.plain_due(display.plain_interval):
        display.message(f"epoch: {rpad(fmt(epoch), EPOCH_PAD)}  " + _lr_and_loss(learning_rate, average_loss)
                        + progress)


def epoch_line(display, epoch, learning_rate, average_loss, progress):
    """dlib's ``Epoch: ...`` line at the end of each epoch."""
    display.message(f"Epoch: {rpad(str(epoch), EPOCH_PAD)}  " + _lr_and_loss(learning_rate, average_loss)
                    + progress)


def step_status(display, steps, learning_rate, average_loss, average_test_loss, progress):
    """dlib's ``step#: ...`` line of the ``*_one_step`` calls (with the test loss once there
    is one)."""
    text = f"step#: {rpad(str(steps), EPOCH_PAD)}  learning rate: {rpad(fmt(learning_rate), LR_PAD)}  "
    if average_test_loss is None:
        text += f"average loss: {rpad(fmt(average_loss), STRING_PAD)}  "
    else:
        text += (f"train loss: {rpad(fmt(average_loss), STRING_PAD)}  "
                 f"test loss: {rpad(fmt(average_test_loss), STRING_PAD)}  ")
    display.message(text + progress)


def describe(trainer, net) -> str:
    """dlib's ``operator<<(ostream, dnn_trainer)``: the net's size and architecture hash, the
    loss, the solver and the settings (``print(trainer)``)."""
    lines = ["dnn_trainer details: ", f"  net_type::num_layers:  {net.num_layers()}"]
    temp = copy.deepcopy(net)
    temp.clean()
    try:
        w = Writer()
        write_net(w, temp)
        size = f"{fmt(len(w.buffer) / 1024.0 / 1024.0)} MiB"
    except (SerializationError, NotImplementedError) as e:
        size = f"unknown ({type(e).__name__}: {e})"
    num_params = count_parameters(temp)
    lines.append(f"  net size: {size}" + (f" ({num_params} parameters)" if num_params > 0 else ""))
    lines.append(f"  net architecture hash: {hashlib.md5(str(net.subnet()).encode()).hexdigest()}")
    lines.append(f"  loss: {net.loss_details()!r}")
    pad = "  {:<44}".format
    lines.append(pad("get_train_one_step_calls():") + f"{trainer.get_train_one_step_calls()}")
    lines.append(pad("synchronization file:") + f"{trainer.get_synchronization_file()}")
    lines.append(pad("trainer.get_solvers()[0]:") + f"{trainer.get_solvers()[0]!r}")
    lines.append(pad("mini batch size:") + f"{trainer.get_mini_batch_size()}")
    if trainer.get_learning_rate_schedule().size:
        lines.append("  using explicit user-supplied learning rate schedule")
    else:
        lines.append(pad("learning rate:") + fmt(trainer.get_learning_rate()))
        lines.append(pad("learning rate shrink factor:") + fmt(trainer.get_learning_rate_shrink_factor()))
        lines.append(pad("min learning rate:") + fmt(trainer.get_min_learning_rate()))
        lines.append(pad("iterations without progress threshold:")
                     + f"{trainer.get_iterations_without_progress_threshold()}")
        lines.append(pad("test iterations without progress threshold:")
                     + f"{trainer.get_test_iterations_without_progress_threshold()}")
    return "\n".join(lines) + "\n"
