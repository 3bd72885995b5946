"""dnn_trainer: dlib's settings, plateau detection, schedule, training, sync files, the
divergence guard, printing and the loss plot."""

import hashlib
import math
import os
import re
import sys
from datetime import timedelta

import numpy as np
import pytest

import dnnpy
from dnnpy import (SerializationError, TrainingDivergedError, adam, dnn_trainer, fc, input,
                   input_rgb_image_pair, loss_barlow_twins, loss_mean_squared, relu, sgd)
from dnnpy.visitors import set_all_learning_rate_multipliers
from helpers import params_of, regression_data

REG = loss_mean_squared[fc[1, relu[fc[16, input[np.float32]]]]]
OTHER = loss_mean_squared[fc[1, relu[fc[8, input[np.float32]]]]]






def all_finite(net):
    return all(np.all(np.isfinite(p)) for p in params_of(net))


def test_defaults_are_dlibs():
    t = dnn_trainer(REG())
    assert t.get_max_num_epochs() == 10000 and t.get_mini_batch_size() == 128
    assert t.get_learning_rate() == 1e-2 and t.get_min_learning_rate() == 1e-5
    assert t.get_iterations_without_progress_threshold() == 2000
    assert t.get_test_iterations_without_progress_threshold() == 500
    assert t.get_learning_rate_shrink_factor() == 0.1
    assert t.get_learning_rate_schedule().size == 0
    assert t.get_train_one_step_calls() == 0 and t.get_test_one_step_calls() == 0
    assert t.get_synchronization_file() == "" and t.get_steps_without_progress() == 0
    assert len(t.get_solvers()) == 3 and isinstance(t.get_solvers()[0], sgd)
    assert t.get_solvers()[0] is not t.get_solvers()[1]          # one copy per layer


def test_setter_validation():
    t = dnn_trainer(REG())
    for call in (lambda: t.set_mini_batch_size(0), lambda: t.set_max_num_epochs(-1),
                 lambda: t.set_learning_rate(0), lambda: t.set_min_learning_rate(-1),
                 lambda: t.set_learning_rate_shrink_factor(1.5),
                 lambda: t.set_learning_rate_schedule([]),
                 lambda: t.set_learning_rate_schedule([0.1, 0])):
        with pytest.raises(ValueError, match="dnn_trainer"):
            call()
    with pytest.raises(TypeError, match="loss layer"):
        dnn_trainer(REG().subnet())


def test_set_learning_rate_resets_progress():
    t = dnn_trainer(REG())
    x, y = regression_data(8)
    t.train_one_step(x, y)
    assert len(t._previous_loss_values) == 1
    t.set_learning_rate(0.01)            # same value: nothing reset
    assert len(t._previous_loss_values) == 1
    t.set_learning_rate(0.02)
    assert len(t._previous_loss_values) == 0 and t.get_learning_rate() == 0.02


def test_train_reaches_low_loss():
    x, y = regression_data()
    net = REG()
    t = dnn_trainer(net, adam())
    t.set_learning_rate(0.01)
    t.set_mini_batch_size(32)
    t.set_max_num_epochs(60)
    before = net.compute_loss(x, y)
    t.train(x, y)
    after = net.compute_loss(x, y)
    assert before > 1.0 and after < 0.05
    assert t.get_average_loss() < 0.05           # the last epoch's average
    assert t._epoch_iteration == 60 and t._epoch_pos == 0
    assert t.get_train_one_step_calls() == 0     # dlib: train() does not count one-step calls
    assert t.get_net() is net


def test_unshuffled_batches_last_partial(monkeypatch):
    x, y = regression_data(10)
    t = dnn_trainer(REG())
    t.set_mini_batch_size(4)
    t.set_max_num_epochs(2)
    seen = []
    orig = t._net.compute_parameter_gradients

    def spy(data, labels):
        seen.append([float(v) for v in labels])
        return orig(data, labels)

    monkeypatch.setattr(t._net, "compute_parameter_gradients", spy)
    t.train(x, y)
    expected = [[float(v) for v in y[i:i + 4]] for i in (0, 4, 8)]
    assert seen == expected * 2


def test_flat_loss_shrinks_learning_rate():
    # parameters frozen (lr multiplier 0): the loss is flat noise, so the plateau detector
    # must shrink the learning rate and drop old losses
    net = REG()
    set_all_learning_rate_multipliers(net, 0)
    t = dnn_trainer(net)
    t.set_iterations_without_progress_threshold(50)
    rng = np.random.default_rng(0)
    shrunk_at = None
    for step in range(400):
        x = list(rng.standard_normal((16, 1, 3)).astype(np.float32))
        t.train_one_step(x, list(rng.standard_normal(16).astype(np.float32)))
        if t.get_learning_rate() < 1e-2:
            shrunk_at = step
            break
    assert shrunk_at is not None and shrunk_at >= 49       # needs a full window first
    assert t.get_learning_rate() == pytest.approx(1e-3)
    assert t.get_steps_without_progress() == 0
    assert len(t._previous_loss_values) == 0               # 400 + 50/10 dropped
    # shrink factor 1 disables it
    t2 = dnn_trainer(net)
    t2.set_iterations_without_progress_threshold(50)
    t2.set_learning_rate_shrink_factor(1)
    for _ in range(120):
        x = list(rng.standard_normal((16, 1, 3)).astype(np.float32))
        t2.train_one_step(x, list(rng.standard_normal(16).astype(np.float32)))
    assert t2.get_learning_rate() == 1e-2


def test_learning_rate_schedule():
    x, y = regression_data(8)
    t = dnn_trainer(REG())
    t.set_learning_rate_schedule(np.array([[0.1, 0.05], [0.01, 0.02]]))
    assert list(t.get_learning_rate_schedule()) == [0.1, 0.05, 0.01, 0.02]
    assert t.get_learning_rate() == 0.1 and t.get_min_learning_rate() == 0.01
    assert t.get_learning_rate_shrink_factor() == 1
    rates = []
    for _ in range(5):
        t.train_one_step(x, y)
        rates.append(t.get_learning_rate())
    assert rates == pytest.approx([0.1, 0.05, 0.01, 0.02, 0.0198])
    assert "percent complete: 100.00%" in t._progress_text()
    t.set_min_learning_rate(1e-5)                        # clears the schedule
    assert t.get_learning_rate_schedule().size == 0

    # train() stops when the schedule runs out (lr = 0.99*last < min)
    t = dnn_trainer(REG())
    t.set_mini_batch_size(2)
    t.set_max_num_epochs(100)
    t.set_learning_rate_schedule([0.01] * 6)
    t.train(x, y)
    assert t.get_learning_rate() == pytest.approx(0.0099)
    assert t._epoch_iteration == 2                       # 4 steps + 3 steps, then stopped


def test_unsupervised_train():
    rng = np.random.default_rng(0)
    net = loss_barlow_twins[fc[8, relu[fc[16, input_rgb_image_pair]]]]()
    base = rng.integers(0, 256, (24, 4, 4, 3))
    data = [(b.astype(np.uint8), np.clip(b + rng.integers(-20, 20, b.shape), 0, 255).astype(np.uint8))
            for b in base]
    t = dnn_trainer(net, adam())
    t.set_learning_rate(1e-3)
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(15)
    t.record_loss_history()
    t.train(data)
    h = t.get_loss_history()
    assert len(h) == 45 and np.mean(h[-3:]) < np.mean(h[:3])
    t.train_one_step(data[:8])
    assert t.get_train_one_step_calls() == 1
    with pytest.raises(ValueError, match="dnn_trainer.train: .*unsupervised"):
        t.train(data, [0] * len(data))


def test_bad_input():
    x, y = regression_data(8)
    t = dnn_trainer(REG())
    with pytest.raises(ValueError, match=r"dnn_trainer.train: got 8 data samples but 7 labels"):
        t.train(x, y[:7])
    with pytest.raises(ValueError, match="dnn_trainer.train: the data is empty"):
        t.train([], [])
    with pytest.raises(ValueError, match="dnn_trainer.train_one_step: .*needs labels"):
        t.train_one_step(x)
    with pytest.raises(ValueError, match="dnn_trainer.test_one_step"):
        t.test_one_step(x, y[:3])


def test_test_one_step():
    x, y = regression_data(16)
    net = REG()
    t = dnn_trainer(net)
    net(x)                                # set the layers up
    before = params_of(net)
    t.test_one_step(x, y)
    t.test_one_step(x, y)
    assert t.get_test_one_step_calls() == 2
    assert t.get_average_test_loss() == pytest.approx(net.compute_loss(x, y), rel=1e-6)
    assert all(np.array_equal(a, b) for a, b in zip(before, params_of(net)))  # no update
    assert "train=0, test=0" in t._progress_text()


def test_print_trainer():
    x, y = regression_data(8)
    net = REG()
    t = dnn_trainer(net, adam())
    t.train_one_step(x, y)
    text = str(t)
    lines = text.splitlines()
    assert lines[0] == "dnn_trainer details: "
    assert lines[1] == "  net_type::num_layers:  5"
    assert lines[2].startswith("  net size: ") and lines[2].endswith(" MiB (81 parameters)")
    assert lines[3] == "  net architecture hash: " + hashlib.md5(str(net.subnet()).encode()).hexdigest()
    assert lines[4] == "  loss: loss_mean_squared"
    assert lines[5] == "  get_train_one_step_calls():                 1"
    assert lines[6] == "  synchronization file:                       "
    assert lines[7] == "  trainer.get_solvers()[0]:                   " + repr(t.get_solvers()[0])
    assert lines[8] == "  mini batch size:                            128"
    assert lines[9] == "  learning rate:                              0.01"
    assert lines[10] == "  learning rate shrink factor:                0.1"
    assert lines[11] == "  min learning rate:                          1e-05"
    assert lines[12] == "  iterations without progress threshold:      2000"
    assert lines[13] == "  test iterations without progress threshold: 500"
    t.set_learning_rate_schedule([0.1, 0.01])
    assert str(t).splitlines()[-1] == "  using explicit user-supplied learning rate schedule"


def test_sync_roundtrip_and_alternation(tmp_path):
    x, y = regression_data(64)
    sync = str(tmp_path / "state.sync")
    net = REG()
    t = dnn_trainer(net, adam())
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(2)
    t.record_loss_history()
    t.set_synchronization_file(sync, timedelta(seconds=0))
    t.train(x, y)
    assert os.path.exists(sync) and os.path.exists(sync + "_")   # alternated
    t.test_one_step(x, y)          # test steps do not mark the net changed (dlib)
    for _ in range(3):
        t.train_one_step(x[:16], y[:16])
    t.get_net()                                                   # forces a sync
    out = np.array(net(x))

    net2 = REG()
    t2 = dnn_trainer(net2, adam())
    t2.set_synchronization_file(sync)
    assert t2.get_train_one_step_calls() == 3 and t2.get_test_one_step_calls() == 1
    assert t2._epoch_iteration == 2 and t2.get_mini_batch_size() == 16
    assert t2.get_loss_history() == t.get_loss_history() and len(t2.get_loss_history()) == 11
    assert t2.get_average_loss() == t.get_average_loss()
    assert t2.get_average_test_loss() == t.get_average_test_loss()
    assert np.array_equal(np.array(net2(x)), out)
    for a, b in zip(t.get_solvers(), t2.get_solvers()):
        assert a.t == b.t and np.array_equal(np.asarray(a.m), np.asarray(b.m))
    # both continue identically
    t.train_one_step(x[16:32], y[16:32])
    t2.train_one_step(x[16:32], y[16:32])
    assert all(np.array_equal(a, b) for a, b in zip(params_of(net), params_of(net2)))


def test_sync_file_of_another_net_type(tmp_path):
    x, y = regression_data(16)
    sync = str(tmp_path / "s.dat")
    t = dnn_trainer(REG())
    t.set_synchronization_file(sync, 0)
    t.train_one_step(x, y)
    t.get_net()
    before = {p: (open(p, "rb").read(), os.stat(p).st_mtime_ns) for p in (sync,)}
    other = dnn_trainer(OTHER())
    with pytest.raises(SerializationError) as e:
        other.set_synchronization_file(sync)
    assert repr(REG) in str(e.value) and repr(OTHER) in str(e.value)
    assert other.get_synchronization_file() == ""
    assert {p: (open(p, "rb").read(), os.stat(p).st_mtime_ns) for p in (sync,)} == before
    assert not os.path.exists(sync + "_")
    # a different solver type is an error too, never a partial load
    t3 = dnn_trainer(REG(), adam())
    with pytest.raises(SerializationError, match="sgd2|adam2"):
        t3.set_synchronization_file(sync)
    assert t3.get_train_one_step_calls() == 0
    # garbage is a SerializationError
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a sync file at all")
    with pytest.raises(SerializationError):
        dnn_trainer(REG()).set_synchronization_file(str(bad))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # overflow while diverging
def test_divergence_without_sync_file():
    x, y = regression_data(64)
    net = REG()
    t = dnn_trainer(net, sgd())
    t.set_learning_rate(1e6)
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(5)
    t.train(x, y)
    assert all_finite(net)
    assert t.get_learning_rate() < 1e6
    assert math.isfinite(net.compute_loss(x, y))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # overflow while diverging
def test_divergence_with_sync_file(tmp_path, capsys):
    x, y = regression_data(64)
    net = REG()
    t = dnn_trainer(net, sgd())
    t.set_synchronization_file(str(tmp_path / "sync"), seconds=0)
    t.be_verbose()
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(3)
    t.train(x, y)                         # a good state on disk first
    t.set_max_num_epochs(8)
    t.set_learning_rate(1e6)
    # the first step at lr 1e6 leaves huge but finite parameters, which the next sync point
    # saves (interval 0); every reload of them diverges again, whatever the learning rate, so
    # the reloads push it below the minimum: training collapsed, and says so
    with pytest.raises(TrainingDivergedError, match=r"collapsed.*below the minimum 1e-05"):
        t.train(x, y)
    assert t.get_stop_reason() == "NaN/inf collapse"
    assert all_finite(net) and t.get_learning_rate() < 1e-5
    with pytest.raises(TrainingDivergedError, match="an earlier NaN/inf collapse"):
        t.train(x, y)                     # not a silent return the second time either
    out = capsys.readouterr().out
    assert "Saved state to " in out and "reloading saved state from " in out
    assert "Epoch: 1" in out
    # what is on disk is finite too
    t2 = dnn_trainer(REG(), sgd())
    t2.set_synchronization_file(str(tmp_path / "sync"))
    assert all_finite(t2.get_net(False))


def test_loss_increasing_check():
    from dnnpy.training.guard import sync_guard
    g = sync_guard(None, None, None, None)
    g.set_file("x", 0)
    keep = g.losses_since_sync
    for v in np.linspace(1, 2, 40):
        g.record_step(v)
    keep.extendleft(np.linspace(1, 2, 60))                                     # 100 kept
    assert g.loss_increased()
    assert len(keep) == 80                                                     # 2*40 kept
    assert g._prob_thresh == pytest.approx(0.999)
    keep.clear()
    keep.extend(np.linspace(2, 1, 80))
    assert not g.loss_increased()
    assert g._prob_thresh == pytest.approx(0.999 ** 10)   # decays, not below 0.99
    keep.clear()
    keep.extend([1.0] * 10)                                                    # < 30 values
    assert not g.loss_increased()
    keep.append(float("nan"))
    assert g.loss_increased()


def test_verbose_lines(capsys):
    x, y = regression_data(16)
    t = dnn_trainer(REG())
    t.be_verbose()
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(2)
    t.train(x, y)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Epoch: 1     learning rate: 0.01  average loss: ")
    assert out[0].endswith("steps without apparent progress: 0")
    assert out[1].startswith("Epoch: 2 ")
    t.be_quiet()
    t.set_max_num_epochs(3)
    t.train(x, y)
    assert capsys.readouterr().out == ""


def test_loss_plot(tmp_path, monkeypatch):
    x, y = regression_data(32)
    t = dnn_trainer(REG())
    with pytest.raises(ValueError, match="record_loss_history"):
        t.save_loss_plot(str(tmp_path / "a.png"))
    t.record_loss_history()
    for _ in range(5):
        t.train_one_step(x, y)
    t.test_one_step(x, y)
    assert len(t.get_loss_history()) == 5 and len(t.get_test_loss_history()) == 1
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)     # missing, even if imported before
    with pytest.raises(ImportError, match=r"dnnpy\[plot\]"):
        t.save_loss_plot(str(tmp_path / "a.png"))
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    t.save_loss_plot(str(tmp_path / "a.png"))
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exported():
    assert dnnpy.dnn_trainer is dnn_trainer


def test_every_public_method_has_a_docstring():
    missing = [name for name, f in vars(dnn_trainer).items()
               if callable(f) and not name.startswith("_") and not (f.__doc__ or "").strip()]
    assert missing == []


def test_live_progress_on_a_terminal():
    import io

    from dnnpy.training.progress import progress_display

    class tty(io.StringIO):
        def isatty(self):
            return True

    stream = tty()
    x, y = regression_data(64)
    t = dnn_trainer(REG())
    t._display = progress_display(stream)
    t._display.live_interval = 0.0            # draw every step for the test
    t.be_verbose()
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(2)
    t.train(x, y)
    out = stream.getvalue()
    assert "\r\033[Kepoch: 0.000  average loss: " in out and " samples/s  steps without" in out
    assert "\r\033[KEpoch: 1     learning rate: 0.01" in out    # the live line is cleared first
    # the count itself depends on the random initial parameters, its place does not
    assert re.search(r"steps without apparent progress: \d+\n$", out)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_before_the_first_sync(tmp_path):
    # a sync file is set but nothing is on disk yet (15 min interval): the in-memory copy guards
    x, y = regression_data(64)
    net = REG()
    t = dnn_trainer(net, sgd())
    t.set_synchronization_file(str(tmp_path / "sync"))
    t.set_learning_rate(1e6)
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(4)
    t.train(x, y)
    assert all_finite(net) and t.get_learning_rate() < 1e6
    t2 = dnn_trainer(REG(), sgd())
    t2.set_synchronization_file(str(tmp_path / "sync"))     # written at the end of train()
    assert all_finite(t2.get_net(False)) and t2.get_learning_rate() == t.get_learning_rate()


def test_resume_keeps_the_plateau_check_phase(tmp_path):
    """A resumed trainer runs dlib's budgeted plateau check at the same steps as the original
    (the check budget is trainer state, kept in the sync file)."""
    rng = np.random.default_rng(3)
    x = list(rng.standard_normal((16, 1, 3)).astype(np.float32))
    y = list(rng.standard_normal(16).astype(np.float32))      # noise: the loss stays flat
    sync = str(tmp_path / "s.sync")
    a = dnn_trainer(REG(), sgd())
    a.set_learning_rate(1e-6)
    a.set_iterations_without_progress_threshold(1000)          # a check every 6th step
    a.set_synchronization_file(sync, 3600)
    for _ in range(3):
        a.train_one_step(x, y)
    a.get_net()                                                # sync after 3 steps
    b = dnn_trainer(REG(), sgd())
    b.set_synchronization_file(sync, 3600)
    steps_a, steps_b = [], []
    for _ in range(12):
        a.train_one_step(x, y)
        b.train_one_step(x, y)
        steps_a.append(a.get_steps_without_progress())
        steps_b.append(b.get_steps_without_progress())
    assert any(steps_a) and steps_a == steps_b


def _sync_bytes_with(**fields):
    from dnnpy.training import sync as _sync
    t = dnn_trainer(REG())
    for k, v in fields.items():
        setattr(t, "_" + k, v)
    return _sync.encode_state(t)


@pytest.mark.parametrize("fields", [dict(mini_batch_size=0), dict(max_num_epochs=0),
                                    dict(lr_schedule=[0.1, 0.01], lr_schedule_pos=-1),
                                    dict(learning_rate=float("nan")),
                                    dict(min_learning_rate=-1.0),
                                    dict(learning_rate_shrink=0.0)])
def test_sync_file_with_impossible_settings_is_rejected(fields):
    """A corrupted sync file whose settings the setters would refuse (mini_batch_size 0 makes
    train() loop forever; a negative schedule position indexes from the end) is a
    SerializationError and the trainer is left as it was."""
    data = _sync_bytes_with(**fields)
    t = dnn_trainer(REG())
    with pytest.raises(SerializationError, match=next(iter(fields))):
        t._load_state(data, "corrupt.sync")
    assert t.get_mini_batch_size() == 128 and t.get_max_num_epochs() == 10000
    assert t.get_learning_rate() == 1e-2 and t._lr_schedule_pos == 0


def test_sync_file_older_extension_versions_still_read():
    """Extension version 4 (this one) adds the training step of each test loss; 3 wrote the
    loss histories as raw float64 without steps; 2 and 1 wrote them as dlib doubles (1 also
    without the plateau budget). All still read; a test loss without a step reads as None."""
    from dnnpy.serialization import Reader, read_header, with_header
    from dnnpy.serialization.primitives import Writer
    data = _sync_bytes_with(gradient_check_budget=0)
    r = Reader(data)
    kind, expr = read_header(r)               # the body is rewritten: the header's checksum too
    data = data[r.pos:]
    w4 = Writer()
    w4.int(4), w4.bool(False), w4.uint(0), w4.uint(0), w4.uint(0)   # no history recorded
    assert data.endswith(w4.bytes())
    head = data[:-len(w4.bytes())]
    w3, w2, w1 = Writer(), Writer(), Writer()
    w3.int(3), w3.bool(True), w3.uint(1), w3.raw(np.float64(0.5).tobytes())
    w3.uint(1), w3.raw(np.float64(0.75).tobytes()), w3.uint(9)
    w2.int(2), w2.bool(True), w2.uint(2), w2.float64(0.5), w2.float64(0.25), w2.uint(0), w2.uint(7)
    w1.int(1), w1.bool(False), w1.uint(0), w1.uint(0)
    t = dnn_trainer(REG())
    t._load_state(with_header(kind, expr, head + w3.bytes()), "v3.sync")
    assert t._gradient_check_budget == 9 and t.get_loss_history() == [0.5]
    assert t.get_test_loss_history() == [(None, 0.75)]
    t._load_state(with_header(kind, expr, head + w2.bytes()), "v2.sync")
    assert t._gradient_check_budget == 7 and t.get_loss_history() == [0.5, 0.25]
    t._gradient_check_budget = 600
    t._load_state(with_header(kind, expr, head + w1.bytes()), "v1.sync")
    assert t._gradient_check_budget == 0


def test_loss_history_round_trips_exactly():
    t = dnn_trainer(REG())
    t.record_loss_history()
    x, y = regression_data(16)
    for _ in range(5):
        t.train_one_step(x, y)
    history = t.get_loss_history()
    from dnnpy.training import sync as _sync
    t2 = dnn_trainer(REG())
    t2._load_state(_sync.encode_state(t), "history.sync")
    assert t2.get_loss_history() == history and len(history) == 5


def test_loss_plot_leaves_the_matplotlib_backend_alone(tmp_path):
    """save_loss_plot must not switch the caller's matplotlib backend (a notebook's)."""
    matplotlib = pytest.importorskip("matplotlib")
    plt = pytest.importorskip("matplotlib.pyplot")
    before = matplotlib.get_backend()
    plt.switch_backend("svg")
    try:
        t = dnn_trainer(REG())
        t.record_loss_history()
        x, y = regression_data(16)
        t.train_one_step(x, y)
        t.save_loss_plot(str(tmp_path / "p.png"))
        assert matplotlib.get_backend() == "svg"
        assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    finally:
        plt.switch_backend(before)
