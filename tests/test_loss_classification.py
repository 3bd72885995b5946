"""Classification losses: gradients against their own values (test_loss), loss values
against hand-written float64 references, to_label, printing, bad input, and nets."""

import math

import numpy as np
import pytest

from dnnpy import test_loss
from dnnpy.core import layer
from dnnpy.layers.fc import fc
from dnnpy.inputs.base import input
from dnnpy.loss import (classifier_output, loss_binary_hinge, loss_binary_hinge_, loss_binary_log,
                        loss_binary_log_, loss_multibinary_log, loss_multibinary_log_,
                        loss_multiclass_log, loss_multiclass_log_, loss_multiclass_log_weighted,
                        loss_multiclass_log_weighted_, loss_multimulticlass_log,
                        loss_multimulticlass_log_, weighted_label)
from dnnpy.parsing import net_type_from_string
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.testing_loss import _loss_subnet


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def run(loss, output, labels, sef=1):
    """(loss value, written gradient) on a fake float64 subnet."""
    with default_dtype(np.float64):
        sub = _loss_subnet(np.asarray(output, np.float64), sef)
        x = resizable_tensor(*sub.output.shape)
        value = loss.compute_loss_value_and_gradient(x, labels, sub)
        return value, np.array(sub.gradient_input.host_read())


def labels_of(loss, output):
    with default_dtype(np.float64):
        sub = _loss_subnet(np.asarray(output, np.float64))
        return loss.to_label(resizable_tensor(*sub.output.shape), sub)


def log1pexp(v):
    return math.log1p(math.exp(v)) if v < 30 else v


def sig(v):
    return 1 / (1 + math.exp(-v))


# ---------------------------------------------------------------------------- gradients

def test_every_loss_passes_test_loss(rng):
    cases = [
        (loss_binary_hinge_(), np.array([0.3, -0.2, 2.0, -1.5]).reshape(4, 1, 1, 1), [1, -1, 1, 1]),
        (loss_binary_log_(), rng.normal(size=(4, 1, 1, 1)), [1, -2, 0.5, -1]),
        (loss_multiclass_log_(), rng.normal(size=(4, 3, 1, 1)), [0, 2, 1, 1]),
        (loss_multiclass_log_weighted_(), rng.normal(size=(4, 3, 1, 1)),
         [weighted_label(0, 2), weighted_label(1), weighted_label(2, 0.5), weighted_label(1, 0)]),
        (loss_multimulticlass_log_({"b": ["x", "y", "z"], "a": ["p", "q"]}), rng.normal(size=(3, 5, 1, 1)),
         [{"a": "p", "b": "z"}, {"a": "q", "b": "x"}, {"a": "q", "b": "y"}]),
        (loss_multibinary_log_(), rng.normal(size=(3, 4, 1, 1)), [[1, -1, 2, -0.5]] * 3),
    ]
    for loss, out, labels in cases:
        res = test_loss(loss, out, labels)
        assert res, res.log
        assert res.loss > 0


def test_multibinary_focal_gradient_is_dlibs_not_the_derivative(rng):
    """dlib's focal gradient (loss.h) is not d(loss)/d(out) for gamma > 0; dnnpy keeps it."""
    out = rng.normal(size=(2, 3, 1, 1))
    labels = [[1, -1, 2], [-0.5, 1, -1]]
    gamma = 2.0
    value, grad = run(loss_multibinary_log_(gamma), out, labels)
    ref_loss, ref_grad = 0.0, np.zeros((2, 3))
    for i in range(2):
        for k in range(3):
            o, y = out[i, k, 0, 0], labels[i][k]
            p = sig(o)
            if y > 0:
                t = log1pexp(-o)
                f = (1 - p) ** gamma
                ref_loss += y * t * f / 2
                ref_grad[i, k] = y / 2 * f * (p * (gamma * t + 1) - 1)
            else:
                t = o + log1pexp(-o)
                f = p ** gamma
                ref_loss += -y * t * f / 2
                ref_grad[i, k] = -y / 2 * f * p * (gamma * t + 1)
    assert value == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(grad.reshape(2, 3), ref_grad, rtol=1e-12)
    assert not test_loss(loss_multibinary_log_(gamma), out, labels)   # the quirk, documented


# ---------------------------------------------------------------------------- values

def test_binary_hinge_values():
    out = np.array([0.5, -2.0, 0.25]).reshape(3, 1, 1, 1)
    value, grad = run(loss_binary_hinge_(), out, [1, -1, -1])
    assert value == pytest.approx((0.5 + 0 + 1.25) / 3, rel=1e-14)
    np.testing.assert_array_equal(grad.reshape(-1), [-1 / 3, 0, 1 / 3])


def test_binary_log_values_weight_by_magnitude():
    out = np.array([0.7, -1.2, 40.0]).reshape(3, 1, 1, 1)
    labels = [2.0, -0.5, -1.0]
    value, grad = run(loss_binary_log_(), out, labels)
    ref = (2 * -math.log(sig(0.7)) + 0.5 * -math.log(1 - sig(-1.2)) + 1 * 40.0) / 3
    assert value == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(grad.reshape(-1), [2 * (sig(0.7) - 1) / 3, 0.5 * sig(-1.2) / 3,
                                                  sig(40.0) / 3], rtol=1e-12)


def test_multiclass_values_and_safe_log():
    out = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]]).reshape(2, 3, 1, 1)
    value, grad = run(loss_multiclass_log_(), out, [1, 2])
    e = np.exp([1.0, 2.0, 0.5])
    p0 = e / e.sum()
    assert value == pytest.approx((-math.log(p0[1]) + math.log(3)) / 2, rel=1e-12)
    np.testing.assert_allclose(grad.reshape(2, 3), [(p0 - [0, 1, 0]) / 2, (np.full(3, 1 / 3) - [0, 0, 1]) / 2],
                               rtol=1e-12)
    # a probability below 1e-10 is clamped: loss log(1e10), not the true 100
    value, _ = run(loss_multiclass_log_(), np.array([100.0, 0.0]).reshape(1, 2, 1, 1), [1])
    assert value == pytest.approx(-math.log(1e-10), rel=1e-12)


def test_multiclass_weighted_scales_each_sample():
    out = np.array([[1.0, 2.0, 0.5], [0.3, -0.1, 0.2]]).reshape(2, 3, 1, 1)
    plain, g = run(loss_multiclass_log_(), out[:1], [1])
    _, g2 = run(loss_multiclass_log_(), out[1:], [0])
    value, grad = run(loss_multiclass_log_weighted_(), out, [weighted_label(1, 3.0), weighted_label(0, 0.0)])
    assert value == pytest.approx(3 * plain / 2, rel=1e-12)
    np.testing.assert_allclose(grad[0], 3 * g[0] / 2, rtol=1e-12)
    np.testing.assert_array_equal(grad[1], 0)
    assert weighted_label(4).weight == 1.0 and weighted_label(4) == weighted_label(4, 1)


def test_multimulticlass_values_blocks_in_sorted_name_order():
    loss = loss_multimulticlass_log_({"zeta": ["u", "v"], "alpha": ["a", "b", "c"]})
    assert loss.number_of_labels() == 5 and loss.number_of_classifiers() == 2
    out = np.array([[0.1, 0.9, -0.3, 1.0, 2.0]]).reshape(1, 5, 1, 1)
    value, grad = run(loss, out, [{"alpha": "c", "zeta": "u"}])
    pa = np.exp(out[0, :3, 0, 0]) / np.exp(out[0, :3, 0, 0]).sum()
    pz = np.exp(out[0, 3:, 0, 0]) / np.exp(out[0, 3:, 0, 0]).sum()
    assert value == pytest.approx(-math.log(pa[2]) - math.log(pz[0]), rel=1e-12)
    np.testing.assert_allclose(grad.reshape(-1), np.r_[pa - [0, 0, 1], pz - [1, 0]], rtol=1e-12)
    got = labels_of(loss, out)[0]
    assert set(got) == {"alpha", "zeta"}
    assert got["alpha"] == "b" and str(got["zeta"]) == "v"
    assert isinstance(got["alpha"], classifier_output) and got["alpha"].num_classes() == 3
    assert got["alpha"].label(2) == "c"
    assert got["alpha"].probability_of_class(1) == pytest.approx(pa[1], rel=1e-12)
    with pytest.raises(IndexError):
        got["alpha"].probability_of_class(3)


# ---------------------------------------------------------------------------- to_label, printing

def test_to_label():
    assert labels_of(loss_binary_hinge_(), np.array([0.5, -2.0]).reshape(2, 1, 1, 1)) == [0.5, -2.0]
    assert labels_of(loss_binary_log_(), np.array([-0.25]).reshape(1, 1, 1, 1)) == [-0.25]
    out = np.array([[1.0, 3.0, 3.0], [5.0, 0.0, 1.0]]).reshape(2, 3, 1, 1)
    labels = labels_of(loss_multiclass_log_(), out)
    assert labels == [1, 0] and all(type(v) is int for v in labels)   # first max on ties
    assert labels_of(loss_multiclass_log_weighted_(), out) == [1, 0]
    mb = labels_of(loss_multibinary_log_(), out)
    assert len(mb) == 2 and np.array_equal(mb[1], [5.0, 0.0, 1.0])


def test_repr_and_xml():
    assert repr(loss_binary_hinge_()) == "loss_binary_hinge"
    assert loss_binary_log_().to_xml() == "<loss_binary_log/>\n"
    assert repr(loss_multiclass_log_()) == "loss_multiclass_log"
    assert repr(loss_multiclass_log_weighted_()) == "loss_multiclass_log_weighted"
    assert loss_multiclass_log_weighted_().to_xml() == "<loss_multiclass_log_weighted/>\n"
    assert repr(loss_multibinary_log_()) == "loss_multibinary_log (gamma=0)"
    assert loss_multibinary_log_(2.5).to_xml() == "<loss_multibinary_log gamma='2.5'/>\n"
    assert repr(loss_multibinary_log_(0.123456789)) == "loss_multibinary_log (gamma=0.123457)"
    assert loss_multibinary_log_(0.123456789).to_xml() == "<loss_multibinary_log gamma='0.123456789'/>\n"
    mm = loss_multimulticlass_log_({"b": ["x", "y"], "a": ["p", "q", "r"]})
    assert repr(mm) == "loss_multimulticlass_log, labels={a:(p,q,r), b:(x,y)}"
    assert mm.to_xml() == f"<loss_multimulticlass_log>\n{mm!r}\n</loss_multimulticlass_log>\n"
    assert repr(loss_multimulticlass_log_()) == "loss_multimulticlass_log, labels={}"


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("loss, out, labels, err, words", [
    (loss_binary_hinge_(), (2, 1, 1, 1), [1], ValueError, "1 labels for 2"),
    (loss_binary_hinge_(), (2, 1, 1, 1), [1, 0.5], ValueError, "+1 or -1"),
    (loss_binary_hinge_(), (2, 2, 1, 1), [1, 1], ValueError, "k == 1"),
    (loss_binary_log_(), (2, 1, 1, 1), [1, 0], ValueError, "nonzero"),
    (loss_binary_log_(), (2, 1, 1, 1), ["a", 1], TypeError, "labels must be numbers, got strings"),
    (loss_binary_log_(), (2, 1, 2, 1), [1, 1], ValueError, "nr == 1"),
    (loss_multiclass_log_(), (2, 3, 1, 1), [0, 3], ValueError, "out of range"),
    (loss_multiclass_log_(), (2, 3, 1, 1), [0, -1], ValueError, "out of range"),
    (loss_multiclass_log_(), (2, 3, 1, 1), [0, 1.0], TypeError, "integers"),
    (loss_multiclass_log_(), (2, 3, 1, 2), [0, 1], ValueError, "nc == 1"),
    (loss_multiclass_log_weighted_(), (2, 3, 1, 1), [0, 1], TypeError, "weighted_label"),
    (loss_multiclass_log_weighted_(), (1, 3, 1, 1), [weighted_label(5)], ValueError, "out of range"),
    (loss_multimulticlass_log_({"a": ["p", "q"]}), (1, 3, 1, 1), [{"a": "p"}], ValueError, "k == 2"),
    (loss_multimulticlass_log_({"a": ["p", "q"]}), (1, 2, 1, 1), [{"b": "p"}], ValueError, "no entry"),
    (loss_multimulticlass_log_({"a": ["p", "q"]}), (1, 2, 1, 1), [{"a": "z"}], ValueError, "unknown label"),
    (loss_multimulticlass_log_({"a": ["p", "q"]}), (1, 2, 1, 1), ["p"], TypeError, "dict"),
    (loss_multimulticlass_log_(), (1, 2, 1, 1), [{"a": "p"}], ValueError, "label data"),
    (loss_multibinary_log_(), (1, 3, 1, 1), [[1, 1]], ValueError, "k=3"),
    (loss_multibinary_log_(), (1, 2, 1, 1), [[1, 0]], ValueError, "nonzero"),
])
def test_bad_labels_and_outputs(loss, out, labels, err, words):
    name = type(loss).__name__
    with pytest.raises(err) as e:
        run(loss, np.full(out, 0.1), labels)
    assert name in str(e.value) and words in str(e.value)


def test_sample_expansion_factor_must_be_one():
    with pytest.raises(ValueError, match="loss_multiclass_log_: needs one sample per input object \\(a sample expansion factor of 1\\)"):
        run(loss_multiclass_log_(), np.zeros((2, 3, 1, 1)), [0], sef=2)
    sub = _loss_subnet(np.zeros((2, 1, 1, 1)), 2)
    with pytest.raises(ValueError, match="loss_binary_log_.*expansion"):
        loss_binary_log_().to_label(resizable_tensor(2, 1, 1, 1), sub)


def test_constructor_validation():
    with pytest.raises(ValueError, match="loss_multibinary_log_: gamma must be >= 0"):
        loss_multibinary_log_(-1)
    with pytest.raises(TypeError, match="loss_multibinary_log_"):
        loss_multibinary_log_("2")
    with pytest.raises(ValueError, match="loss_multimulticlass_log_: .*at least two"):
        loss_multimulticlass_log_({"a": ["only"]})
    with pytest.raises(TypeError, match="loss_multimulticlass_log_"):
        loss_multimulticlass_log_({"a": "pq"})
    with pytest.raises(TypeError, match="loss_multimulticlass_log_"):
        loss_multimulticlass_log_({1: ["p", "q"]})
    with pytest.raises(TypeError, match="weighted_label"):
        weighted_label(1.5)
    with pytest.raises(ValueError, match="loss_multibinary_log"):
        loss_multibinary_log[-0.5, fc[2, input[np.float32]]]


# ---------------------------------------------------------------------------- nets

def _fc_weight_gradient_check(net_type, batch, labels, rng):
    """compute_parameter_gradients on a float64 net vs central differences of compute_loss."""
    with default_dtype(np.float64):
        net = net_type()
        net(batch)                                  # allocates and randomises the params
        fc_node = layer(net, 1)
        params = fc_node.layer_details().get_layer_params()
        params.assign(rng.normal(scale=0.5, size=params.shape))
        net.compute_parameter_gradients(batch, labels)
        grad = np.array(fc_node.get_parameter_gradient().host_read()).reshape(-1)
        assert np.any(grad != 0)
        for i in rng.choice(params.size(), size=min(6, params.size()), replace=False):
            flat = params.host().reshape(-1)
            old = flat[i]
            flat[i] = old + 1e-6
            up = net.compute_loss(batch, labels)
            params.host().reshape(-1)[i] = old - 1e-6
            down = net.compute_loss(batch, labels)
            params.host().reshape(-1)[i] = old
            assert grad[i] == pytest.approx((up - down) / 2e-6, rel=1e-5, abs=1e-8)


def test_net_multiclass_log(rng):
    net_type = loss_multiclass_log[fc[3, input[np.float32]]]
    batch = [rng.normal(size=(2, 2)).astype(np.float32) for _ in range(4)]
    net = net_type()
    labels = net(batch)
    assert len(labels) == 4 and all(type(v) is int and 0 <= v < 3 for v in labels)
    assert net.compute_loss(batch, [0, 1, 2, 0]) > 0
    assert repr(net.loss_details()) == "loss_multiclass_log"
    _fc_weight_gradient_check(loss_multiclass_log[fc[3, input[np.float64]]],
                              [b.astype(np.float64) for b in batch], [0, 1, 2, 0], rng)


def test_net_binary_losses(rng):
    batch = [rng.normal(size=(3, 1)) for _ in range(5)]
    labels = [1.0, -1.0, 1.0, 1.0, -1.0]
    for t in (loss_binary_log, loss_binary_hinge):
        net = t[fc[1, input[np.float64]]]()
        scores = net(batch)
        assert len(scores) == 5 and all(isinstance(s, float) for s in scores)
        _fc_weight_gradient_check(t[fc[1, input[np.float64]]], batch, labels, rng)


def test_net_weighted_multibinary_multimulticlass(rng):
    batch = [rng.normal(size=(2, 3)) for _ in range(3)]
    _fc_weight_gradient_check(loss_multiclass_log_weighted[fc[4, input[np.float64]]], batch,
                              [weighted_label(3, 2.0), weighted_label(0), weighted_label(1, 0.5)], rng)
    _fc_weight_gradient_check(loss_multibinary_log[fc[2, input[np.float64]]], batch,
                              [[1, -1], [-2, 1], [1, 1]], rng)
    names = {"color": ["red", "green", "blue"], "size": ["s", "l"]}
    mm = loss_multimulticlass_log[names, fc[5, input[np.float64]]]
    assert mm is loss_multimulticlass_log[dict(reversed(list(names.items()))), fc[5, input[np.float64]]]
    assert net_type_from_string(repr(mm)) is mm
    odd = loss_multimulticlass_log[{"q": ["it's", 'say "hi"', "a,b)"]}, fc[3, input[np.float64]]]
    assert net_type_from_string(repr(odd)) is odd
    assert odd().loss_details().get_labels() == {"q": ["it's", 'say "hi"', "a,b)"]}
    with pytest.raises(ValueError, match="loss_multimulticlass_log"):
        loss_multimulticlass_log["{not json", fc[3, input[np.float64]]]
    net = mm()
    assert net.loss_details().get_labels() == names
    out = net(batch)
    assert len(out) == 3 and set(out[0]) == {"color", "size"} and str(out[0]["color"]) in names["color"]
    truth = [{"color": "red", "size": "l"}, {"color": "blue", "size": "s"}, {"color": "green", "size": "s"}]
    _fc_weight_gradient_check(mm, batch, truth, rng)


def test_float32_net_computes_in_float32(rng):
    net = loss_binary_log[fc[1, input[np.float32]]]()
    batch = [rng.normal(size=(2, 2)).astype(np.float32) for _ in range(3)]
    loss = net.compute_parameter_gradients(batch, [1.0, -1.0, 0.5])
    assert np.isfinite(loss) and loss > 0
    assert layer(net, 1).get_gradient_input().host_read().dtype == np.float32
