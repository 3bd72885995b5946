"""dnn_trainer never ends silently wrong: bad mini-batches are named before the net sees them,
the divergence guard warns when quiet and a collapse raises, train() says why it stopped, a
1-sample mini-batch with bn_ is skipped, shuffling, argument checks, test-loss steps."""

import os
import warnings

import numpy as np
import pytest

from dnnpy import (TrainingDivergedError, adam, bn_con, con, dnn_trainer, fc, input,
                   loss_mean_squared, loss_multiclass_log, relu, sgd)
from dnnpy.training import batches as _batches
from dnnpy.training import sync as _sync
from dnnpy.visitors import set_all_learning_rate_multipliers
from helpers import params_of, regression_data

REG = loss_mean_squared[fc[1, relu[fc[16, input[np.float32]]]]]
CLS = loss_multiclass_log[fc[10, input[np.float32]]]
BN = loss_multiclass_log[fc[10, relu[bn_con[con[4, 3, 3, 1, 1, input[np.uint8]]]]]]






def spy_labels(monkeypatch, net, fail_at=None):
    """Record the labels of every training step (and raise KeyboardInterrupt at step fail_at)."""
    seen = []
    orig = net.compute_parameter_gradients

    def spy(x, labels):
        if fail_at is not None and len(seen) == fail_at:
            raise KeyboardInterrupt
        seen.append([float(v) for v in labels])
        return orig(x, labels)

    monkeypatch.setattr(net, "compute_parameter_gradients", spy)
    return seen


# -- non-finite inputs and labels ---------------------------------------------------------

def test_nan_input_is_named_with_epoch_batch_and_sample():
    rng = np.random.default_rng(0)
    x = [rng.random((8, 8), dtype=np.float32) for _ in range(64)]
    y = [i % 10 for i in range(64)]
    x[37][2, 5] = np.nan
    net = CLS()
    t = dnn_trainer(net, adam())
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(2)
    with pytest.raises(ValueError) as e:
        t.train(x, y)
    msg = str(e.value)
    assert msg.startswith("dnn_trainer.train: data[37] holds non-finite input values (nan at "
                          "channel 0, row 2, column 5 ")
    assert "position 5 of mini-batch 3 of 4 (data[32:48]) in epoch 1" in msg
    assert t.get_average_loss() > 0 and t._epoch_pos == 32     # two good steps, then stopped
    # as an array, shuffled: the sample keeps its name, its place is in the shuffled order
    xs = np.stack(x)
    xs[37, 2, 5] = np.inf
    t2 = dnn_trainer(net, adam())
    t2.set_mini_batch_size(16)
    order = _batches.epoch_order(64, 3, 0)
    where = int(np.flatnonzero(order == 37)[0])
    with pytest.raises(ValueError, match=rf"data\[37\] holds non-finite input values \(inf .*"
                                         rf"position {where % 16} of mini-batch {where // 16 + 1} "
                                         rf"of 4 in epoch 1 \(shuffled order\)"):
        t2.train(xs, y, shuffle=True, seed=3)
    before = params_of(net)
    with pytest.raises(ValueError, match=r"train_one_step: data\[5\] holds non-finite .* "
                                         r"position 5 of the mini-batch given to train_one_step"):
        t2.train_one_step(x[32:48], y[32:48])
    with pytest.raises(ValueError, match=r"test_one_step: data\[5\]"):
        t2.test_one_step(x[32:48], y[32:48])
    assert t2.get_train_one_step_calls() == 0 and t2.get_test_one_step_calls() == 0
    assert all(np.array_equal(a, b) for a, b in zip(before, params_of(net)))   # never updated


def test_nonfinite_float_labels_are_named():
    x, y = regression_data(32)
    y[21] = np.float32(np.inf)
    t = dnn_trainer(REG())
    t.set_mini_batch_size(8)
    with pytest.raises(ValueError, match=r"dnn_trainer.train: the label of data\[21\] is not finite "
                                         r"\(inf\); it is at position 5 of mini-batch 3 of 4"):
        t.train(x, y)
    with pytest.raises(ValueError, match=r"the label of data\[1\] is not finite \(nan; 1 more"):
        t.train_one_step(x[:4], [0.0, float("nan"), 1.0, float("nan")])
    # integer class labels are not inspected here (the loss checks them)
    assert _batches._float_labels([1, 2, 3]) is None


# -- the divergence guard: quiet warnings, collapse, stop reasons ---------------------------

def _always_nan(monkeypatch, net):
    monkeypatch.setattr(net, "compute_parameter_gradients", lambda x, labels: float("nan"))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_quiet_guard_warns_at_the_callers_line():
    x, y = regression_data(64)
    net = REG()
    t = dnn_trainer(net, sgd())
    t.set_learning_rate(1e6)
    t.set_mini_batch_size(16)
    t.set_max_num_epochs(3)
    with pytest.warns(RuntimeWarning, match=r"dnn_trainer: Loss or parameters became NaN/inf, "
                                            r"reloading saved state from the in-memory copy of "
                                            r"the last good state; learning rate shrunk to") as rec:
        t.train(x, y)
    guard = [w for w in rec if "NaN/inf" in str(w.message)]
    assert guard and all(w.filename == __file__ for w in guard)
    assert t.get_stop_reason() == "max epochs" and t.get_learning_rate() < 1e6


def test_nan_collapse_in_train_one_step_raises(monkeypatch):
    x, y = regression_data(8)
    net = REG()
    t = dnn_trainer(net)
    _always_nan(monkeypatch, net)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(TrainingDivergedError, match="now 1e-06, below the minimum 1e-05"):
            for _ in range(10):
                t.train_one_step(x, y)
    # 1e-2 -> 1e-3 -> 1e-4 -> 1e-5 (three warnings), then 1e-6 raises
    assert [str(w.message).split("shrunk to ")[1] for w in rec] == ["0.001", "0.0001", "1e-05", "1e-06"]
    assert t.get_stop_reason() == "NaN/inf collapse"
    assert isinstance(TrainingDivergedError("x"), RuntimeError)
    # with a shrink factor of 1 the rate cannot shrink: 10 reloads in a row, then an error
    t2 = dnn_trainer(REG())
    _always_nan(monkeypatch, t2._net)
    t2.set_learning_rate_shrink_factor(1)
    with pytest.warns(RuntimeWarning), pytest.raises(TrainingDivergedError, match="10 times in a row"):
        for _ in range(20):
            t2.train_one_step(x, y)


def test_stop_reasons():
    x, y = regression_data(16)
    t = dnn_trainer(REG())
    assert t.get_stop_reason() is None
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(2)
    t.train(x, y)
    assert t.get_stop_reason() == "max epochs"
    t = dnn_trainer(REG())
    t.set_mini_batch_size(4)
    t.set_learning_rate_schedule([0.01] * 3)
    t.train(x, y)
    assert t.get_stop_reason() == "learning rate schedule done"
    # a flat loss (frozen parameters): the plateau detector shrinks the rate below the minimum
    net = REG()
    set_all_learning_rate_multipliers(net, 0)
    t = dnn_trainer(net)
    t.set_mini_batch_size(1)
    t.set_iterations_without_progress_threshold(20)
    t.set_min_learning_rate(0.005)
    rng = np.random.default_rng(1)
    t.train(x, list(rng.standard_normal(16).astype(np.float32)))
    assert t.get_stop_reason() == "learning rate below min" and t.get_learning_rate() < 0.005


# -- a last mini-batch of one sample with bn_ -----------------------------------------------

def test_bn_net_skips_a_one_sample_mini_batch_with_one_warning():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (9, 6, 6), dtype=np.uint8)
    y = [i % 10 for i in range(9)]
    t = dnn_trainer(BN(), adam())
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(3)
    t.record_loss_history()
    with pytest.warns(RuntimeWarning) as rec:
        t.train(x, y)
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 1 and rec[0].filename == __file__
    assert ("skipping the mini-batch of 1 sample at data position 8 (9 samples, batch size 8): "
            "the net has layer<3> bn_con") in msgs[0]
    assert len(t.get_loss_history()) == 3                      # one step per epoch
    assert t.get_stop_reason() == "max epochs"
    # no bn_: the 1-sample mini-batch trains as in dlib
    t2 = dnn_trainer(loss_multiclass_log[fc[10, input[np.uint8]]]())
    t2.set_mini_batch_size(8)
    t2.set_max_num_epochs(1)
    t2.record_loss_history()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t2.train(x, y)
    assert len(t2.get_loss_history()) == 2
    # nothing to train on at all is an error at once
    t.set_mini_batch_size(1)
    with pytest.raises(ValueError, match=r"layer<3> bn_con, which needs mini-batches of at least 2 "
                                         r"samples, but the mini-batch size is 1"):
        t.train(x, y)
    t.set_mini_batch_size(8)
    with pytest.raises(ValueError, match="the data has 1 sample"):
        t.train(x[:1], y[:1])
    # bn_ itself names the cause for a 1-sample backward pass
    with pytest.raises(ValueError, match="bn_con: backward on a mini-batch of 1 sample"):
        t.train_one_step(x[:1], y[:1])


# -- shuffling --------------------------------------------------------------------------------

def test_shuffle_visits_a_new_order_each_epoch(monkeypatch):
    x = list(np.zeros((10, 1, 3), np.float32))
    y = [float(i) for i in range(10)]
    t = dnn_trainer(REG())
    t.set_mini_batch_size(4)
    t.set_max_num_epochs(2)
    seen = spy_labels(monkeypatch, t._net)
    t.train(x, y, shuffle=True, seed=5)
    epochs = [sum(seen[:3], []), sum(seen[3:], [])]
    for e, visited in enumerate(epochs):
        assert visited == [float(i) for i in _batches.epoch_order(10, 5, e)]
    assert epochs[0] != epochs[1] and sorted(epochs[0]) == y
    assert [len(b) for b in seen] == [4, 4, 2] * 2


def test_shuffled_resume_continues_the_same_order(tmp_path, monkeypatch):
    x = list(np.zeros((10, 1, 3), np.float32))
    y = [float(i) for i in range(10)]
    sync = str(tmp_path / "s.sync")

    def trainer(fail_at=None):
        t = dnn_trainer(REG())
        t.set_mini_batch_size(3)
        t.set_max_num_epochs(2)
        seen = spy_labels(monkeypatch, t._net, fail_at)
        return t, seen

    whole, seen_whole = trainer()
    whole.train(x, y, shuffle=True, seed=1)
    a, seen_a = trainer(fail_at=6)          # "killed" in the second epoch's third step
    a.set_synchronization_file(sync, 0)
    with pytest.raises(KeyboardInterrupt):
        a.train(x, y, shuffle=True, seed=1)
    b, seen_b = trainer()
    b.set_synchronization_file(sync, 0)
    assert (b._epoch_iteration, b._epoch_pos) == (1, 6)
    b.train(x, y, shuffle=True, seed=1)
    assert seen_a + seen_b == seen_whole


# -- arguments --------------------------------------------------------------------------------

def test_solver_class_and_net_type_are_refused():
    with pytest.raises(TypeError, match=r"^dnn_trainer: solver must be an instance such as adam\(\), "
                                        r"got the class adam$"):
        dnn_trainer(REG(), adam)
    with pytest.raises(TypeError, match="solver must be a solver instance"):
        dnn_trainer(REG(), "adam")
    with pytest.raises(TypeError, match=r"got the net type loss_mean_squared\[.*net_type\(\)"):
        dnn_trainer(REG, adam())


def test_sync_file_in_a_missing_or_unwritable_folder_is_refused_when_set(tmp_path, monkeypatch):
    t = dnn_trainer(REG())
    missing = tmp_path / "nope" / "x.sync"
    with pytest.raises(FileNotFoundError, match=r"the folder .*nope' of the sync file .*x.sync' does "
                                                r"not exist"):
        t.set_synchronization_file(missing)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        t.set_synchronization_file(tmp_path)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="cannot write in the folder"):
        t.set_synchronization_file(tmp_path / "x.sync")
    monkeypatch.undo()
    assert t.get_synchronization_file() == ""
    monkeypatch.chdir(tmp_path)                       # a bare name is in the current folder
    t.set_synchronization_file("here.sync")
    assert t.get_synchronization_file() == "here.sync"


# -- verbose messages, return values ----------------------------------------------------------

def test_saved_message_is_rate_limited_and_resume_is_told(tmp_path, capsys):
    x, y = regression_data(32)
    sync = str(tmp_path / "s.sync")
    t = dnn_trainer(REG())
    t.be_verbose()
    t.set_synchronization_file(sync, 0)              # a save before every step
    t.set_mini_batch_size(8)
    t.set_max_num_epochs(3)
    t.train(x, y)
    out = capsys.readouterr().out
    assert out.count("Saved state to") == 2          # the first save and the final one
    assert "Resumed" not in out
    t2 = dnn_trainer(REG())
    t2.set_synchronization_file(sync)
    out = capsys.readouterr().out
    newest = _sync.newest_syncfile(sync)
    assert out == f"Resumed from {newest}: 3 epochs + 0 samples done, 0 train_one_step calls, learning rate 0.01\n"


def test_one_step_calls_return_the_loss():
    x, y = regression_data(16)
    net = REG()
    t = dnn_trainer(net)
    net(x)
    before = net.compute_loss(x, y)
    assert t.train_one_step(x, y) == before
    after = net.compute_loss(x, y)
    assert t.test_one_step(x, y) == after and after != before


def test_test_losses_are_recorded_at_their_training_step(tmp_path, monkeypatch):
    x, y = regression_data(16)
    t = dnn_trainer(REG())
    t.record_loss_history()
    for _ in range(5):
        t.train_one_step(x, y)
    first = t.test_one_step(x, y)
    for _ in range(3):
        t.train_one_step(x, y)
    second = t.test_one_step(x, y)
    assert t.get_test_loss_history() == [(5, first), (8, second)]
    t2 = dnn_trainer(REG())
    t2._load_state(_sync.encode_state(t), "steps.sync")
    assert t2.get_test_loss_history() == [(5, first), (8, second)]
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure
    drawn = {}
    orig = Figure.savefig

    def capture(fig, *a, **k):
        drawn.update({ln.get_label(): list(ln.get_xdata()) for ln in fig.axes[0].lines})
        return orig(fig, *a, **k)

    monkeypatch.setattr(Figure, "savefig", capture)
    t.save_loss_plot(str(tmp_path / "p.png"))
    assert drawn == {"training loss": list(range(8)), "test loss": [5, 8]}


def test_no_state_to_reload_still_shrinks_and_warns(monkeypatch):
    """A net that cannot be encoded (a user layer without serialize) gets no in-memory copy:
    one warning says so, and a NaN/inf loss then only drops the step, still shrinking the
    learning rate (with a warning) until training collapses."""
    def refuse(t):
        raise NotImplementedError("my_layer_ has no serialize")

    monkeypatch.setattr(_sync, "encode_state", refuse)
    x, y = regression_data(8)
    t = dnn_trainer(REG())
    _always_nan(monkeypatch, t._net)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(TrainingDivergedError):
            for _ in range(10):
                t.train_one_step(x, y)
    msgs = [str(w.message) for w in rec]
    assert "cannot keep an in-memory copy" in msgs[0] and "my_layer_ has no serialize" in msgs[0]
    assert all(w.filename == __file__ for w in rec)
    assert len(msgs) == 5 and all("no good state is kept to reload" in m for m in msgs[1:])
