"""Per-pixel losses: test_loss gradients, float64 loop references for the values,
ignored pixels, to_label, printing, bad input and nets."""

import math

import numpy as np
import pytest

from dnnpy import test_loss
from dnnpy.core import layer
from dnnpy.inputs.base import input
from dnnpy.layers.conv import con
from dnnpy.loss import (label_to_ignore, loss_binary_log_per_pixel, loss_binary_log_per_pixel_,
                        loss_mean_squared_per_pixel, loss_mean_squared_per_pixel_,
                        loss_multiclass_log_per_pixel, loss_multiclass_log_per_pixel_,
                        loss_multiclass_log_per_pixel_weighted,
                        loss_multiclass_log_per_pixel_weighted_, weighted_label)
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.testing_loss import _loss_subnet


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def run(loss, output, labels):
    with default_dtype(np.float64):
        sub = _loss_subnet(np.asarray(output, np.float64))
        value = loss.compute_loss_value_and_gradient(resizable_tensor(*sub.output.shape), labels, sub)
        return value, np.array(sub.gradient_input.host_read())


def labels_of(loss, output):
    with default_dtype(np.float64):
        sub = _loss_subnet(np.asarray(output, np.float64))
        return loss.to_label(resizable_tensor(*sub.output.shape), sub)


def ref_multiclass(out, y, w):
    """Loop reference of the (weighted) per-pixel multiclass loss: (loss, gradient)."""
    n, k, nr, nc = out.shape
    scale = 1 / (n * nr * nc)
    loss, grad = 0.0, np.zeros_like(out)
    for i in range(n):
        for r in range(nr):
            for c in range(nc):
                e = [math.exp(v) for v in out[i, :, r, c]]
                p = [v / sum(e) for v in e]
                for j in range(k):
                    if j == y[i][r][c]:
                        loss += w[i][r][c] * scale * -math.log(max(p[j], 1e-10))
                        grad[i, j, r, c] = w[i][r][c] * scale * (p[j] - 1)
                    else:
                        grad[i, j, r, c] = w[i][r][c] * scale * p[j]
    return loss, grad


def test_every_loss_passes_test_loss(rng):
    o1 = rng.normal(size=(2, 1, 3, 4))
    yb = list(rng.choice([-1.0, 0.0, 2.0, -0.5], size=(2, 3, 4)))
    res = test_loss(loss_binary_log_per_pixel_(), o1, yb)
    assert res, res.log
    o3 = rng.normal(size=(2, 3, 3, 4))
    y = rng.integers(0, 3, size=(2, 3, 4)).astype(np.uint16)
    y[0, 0, 0] = label_to_ignore
    res = test_loss(loss_multiclass_log_per_pixel_(), o3, list(y))
    assert res, res.log
    w = rng.uniform(0.1, 2, size=(2, 3, 4))
    w[1, 2, 3] = 0
    y2 = y.copy()
    y2[0, 0, 0] = 1
    y2[1, 2, 3] = 9            # out of range, allowed with weight 0
    res = test_loss(loss_multiclass_log_per_pixel_weighted_(), o3, [(y2[i], w[i]) for i in range(2)])
    assert res, res.log
    res = test_loss(loss_mean_squared_per_pixel_(), o1, list(rng.normal(size=(2, 3, 4))), gradient_scale=0.5)
    assert res, res.log


def test_binary_per_pixel_values_and_ignore():
    out = np.array([[0.5, -1.0], [2.0, 0.1]]).reshape(1, 1, 2, 2)
    y = np.array([[1.0, -2.0], [0.0, 0.5]])
    value, grad = run(loss_binary_log_per_pixel_(), out, [y])
    s = lambda v: 1 / (1 + math.exp(-v))   # noqa: E731
    ref = (-math.log(s(0.5)) + 2 * -math.log(1 - s(-1.0)) + 0.5 * -math.log(s(0.1))) / 4
    assert value == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(grad.reshape(2, 2), [[(s(0.5) - 1) / 4, 2 * s(-1.0) / 4],
                                                    [0, 0.5 * (s(0.1) - 1) / 4]], rtol=1e-12)
    assert grad[0, 0, 1, 0] == 0


def test_multiclass_per_pixel_matches_loop_reference_with_ignored_pixels(rng):
    out = rng.normal(size=(2, 4, 3, 2))
    y = rng.integers(0, 4, size=(2, 3, 2)).astype(np.uint16)
    y[1, 1, 1] = y[0, 2, 0] = label_to_ignore
    w = (y != label_to_ignore).astype(float)
    value, grad = run(loss_multiclass_log_per_pixel_(), out, list(y))
    ref_loss, ref_grad = ref_multiclass(out, y, w)
    assert value == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-300)
    assert np.all(grad[1, :, 1, 1] == 0)
    # ignored pixels still count in the 1/(N*nr*nc) scale
    v1, _ = run(loss_multiclass_log_per_pixel_(), out[:1, :, :1, :1], [y[:1, :1, :1][0]])
    y_ign = np.array([[y[0, 0, 0], label_to_ignore]], dtype=np.uint16)
    v2, _ = run(loss_multiclass_log_per_pixel_(), out[:1, :, :1, :2], [y_ign])
    assert v2 == pytest.approx(v1 / 2, rel=1e-12)
    assert loss_multiclass_log_per_pixel_.label_to_ignore == 65535 == label_to_ignore


def test_weighted_per_pixel_label_forms_and_reference(rng):
    out = rng.normal(size=(2, 3, 2, 2))
    y = rng.integers(0, 3, size=(2, 2, 2))
    w = rng.uniform(0, 3, size=(2, 2, 2)).astype(np.float32).astype(np.float64)
    ref_loss, ref_grad = ref_multiclass(out, y, w)
    tuples = [(y[i], w[i]) for i in range(2)]
    objects = [[[weighted_label(int(y[i, r, c]), float(w[i, r, c])) for c in range(2)] for r in range(2)]
               for i in range(2)]
    sdt = np.dtype([("label", np.uint16), ("weight", np.float32)])
    structured = []
    for i in range(2):
        a = np.empty((2, 2), sdt)
        a["label"], a["weight"] = y[i], w[i]
        structured.append(a)
    for labels in (tuples, objects, structured):
        value, grad = run(loss_multiclass_log_per_pixel_weighted_(), out, labels)
        assert value == pytest.approx(ref_loss, rel=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12)


def test_mean_squared_per_pixel_values_and_half_gradient():
    out = np.array([[1.0, 2.0], [0.0, -1.0]]).reshape(1, 1, 2, 2)
    y = np.array([[0.5, 2.0], [1.0, 1.0]])
    value, grad = run(loss_mean_squared_per_pixel_(), out, [y])
    assert value == pytest.approx((0.25 + 0 + 1 + 4) / 4, rel=1e-14)
    np.testing.assert_allclose(grad.reshape(2, 2), (out[0, 0] - y) / 4, rtol=1e-14)
    # dlib's compute accepts k > 1 and uses channel 0 only
    out2 = np.concatenate([out, np.full_like(out, 7.0)], axis=1)
    value2, grad2 = run(loss_mean_squared_per_pixel_(), out2, [y])
    assert value2 == value and np.all(grad2[:, 1] == 0)
    with pytest.raises(ValueError, match="loss_mean_squared_per_pixel_.*k == 1"):
        labels_of(loss_mean_squared_per_pixel_(), out2)


def test_to_label(rng):
    out = rng.normal(size=(2, 3, 2, 3))
    out[0, :, 0, 0] = [1.0, 2.0, 2.0]          # tie: first max
    labels = labels_of(loss_multiclass_log_per_pixel_(), out)
    assert len(labels) == 2 and labels[0].dtype == np.uint16 and labels[0].shape == (2, 3)
    assert labels[0][0, 0] == 1
    np.testing.assert_array_equal(labels[1], np.argmax(out[1], axis=0))
    np.testing.assert_array_equal(labels_of(loss_multiclass_log_per_pixel_weighted_(), out)[1], labels[1])
    o1 = rng.normal(size=(2, 1, 2, 3))
    for loss in (loss_binary_log_per_pixel_(), loss_mean_squared_per_pixel_()):
        maps = labels_of(loss, o1)
        assert len(maps) == 2 and maps[1].shape == (2, 3)
        np.testing.assert_array_equal(maps[1], o1[1, 0])


def test_repr_and_xml():
    for loss, name in [(loss_binary_log_per_pixel_(), "loss_binary_log_per_pixel"),
                       (loss_multiclass_log_per_pixel_(), "loss_multiclass_log_per_pixel"),
                       (loss_multiclass_log_per_pixel_weighted_(), "loss_multiclass_log_per_pixel_weighted"),
                       (loss_mean_squared_per_pixel_(), "loss_mean_squared_per_pixel")]:
        assert repr(loss) == name and loss.to_xml() == f"<{name}/>\n"


@pytest.mark.parametrize("loss, shape, labels, err, words", [
    (loss_binary_log_per_pixel_(), (1, 2, 2, 2), [np.ones((2, 2))], ValueError, "k == 1"),
    (loss_binary_log_per_pixel_(), (1, 1, 2, 2), [np.ones((2, 3))], ValueError, "shape (2, 3)"),
    (loss_binary_log_per_pixel_(), (2, 1, 2, 2), [np.ones((2, 2))], ValueError, "1 labels for 2"),
    (loss_multiclass_log_per_pixel_(), (1, 3, 2, 2), [np.full((2, 2), 3)], ValueError, "out of range"),
    (loss_multiclass_log_per_pixel_(), (1, 3, 2, 2), [np.full((2, 2), -1)], ValueError, "uint16"),
    (loss_multiclass_log_per_pixel_(), (1, 3, 2, 2), [np.zeros((2, 2))], TypeError, "integers"),
    (loss_multiclass_log_per_pixel_(), (1, 3, 2, 2), [np.zeros((3, 2), int)], ValueError, "2x2"),
    (loss_multiclass_log_per_pixel_weighted_(), (1, 3, 1, 2), [(np.array([[3, 0]]), np.array([[1.0, 1.0]]))],
     ValueError, "nonzero weight"),
    (loss_multiclass_log_per_pixel_weighted_(), (1, 3, 1, 2), [np.zeros((1, 2), int)], TypeError,
     "weighted_label"),
    (loss_multiclass_log_per_pixel_weighted_(), (1, 3, 1, 2), [(np.zeros((1, 3), int), np.ones((1, 3)))],
     ValueError, "1x2"),
    (loss_mean_squared_per_pixel_(), (1, 1, 2, 2), [np.zeros((2, 1))], ValueError, "2x2"),
    (loss_mean_squared_per_pixel_(), (1, 1, 2, 2), [np.array([["a", "b"], ["c", "d"]])], TypeError,
     "numbers"),
])
def test_bad_input(loss, shape, labels, err, words):
    with pytest.raises(err) as e:
        run(loss, np.full(shape, 0.2), labels)
    assert type(loss).__name__ in str(e.value) and words in str(e.value)


def _param_gradient_check(net_type, batch, labels, rng, gradient_scale=1.0):
    with default_dtype(np.float64):
        net = net_type()
        net(batch)
        node = layer(net, 1)
        params = node.layer_details().get_layer_params()
        params.assign(rng.normal(scale=0.5, size=params.shape))
        net.compute_parameter_gradients(batch, labels)
        grad = np.array(node.get_parameter_gradient().host_read()).reshape(-1)
        assert np.any(grad != 0)
        for i in rng.choice(params.size(), size=5, replace=False):
            old = params.host().reshape(-1)[i]
            params.host().reshape(-1)[i] = old + 1e-6
            up = net.compute_loss(batch, labels)
            params.host().reshape(-1)[i] = old - 1e-6
            down = net.compute_loss(batch, labels)
            params.host().reshape(-1)[i] = old
            assert grad[i] == pytest.approx(gradient_scale * (up - down) / 2e-6, rel=1e-5, abs=1e-8)


def test_nets(rng):
    batch = [rng.normal(size=(4, 5)) for _ in range(2)]
    seg = loss_multiclass_log_per_pixel[con[3, 3, 3, 1, 1, input[np.float64]]]
    net = seg()
    maps = net(batch)
    assert len(maps) == 2 and maps[0].shape == (4, 5) and maps[0].dtype == np.uint16
    y = rng.integers(0, 3, size=(2, 4, 5)).astype(np.uint16)
    y[0, 1, 1] = label_to_ignore
    _param_gradient_check(seg, batch, list(y), rng)
    w = rng.uniform(0.5, 1.5, size=(2, 4, 5))
    _param_gradient_check(loss_multiclass_log_per_pixel_weighted[con[3, 3, 3, 1, 1, input[np.float64]]],
                          batch, [(y[i] % 3, w[i]) for i in range(2)], rng)
    yb = list(rng.choice([-1.0, 1.0, 0.0], size=(2, 4, 5)))
    _param_gradient_check(loss_binary_log_per_pixel[con[1, 3, 3, 1, 1, input[np.float64]]], batch, yb, rng)
    _param_gradient_check(loss_mean_squared_per_pixel[con[1, 3, 3, 1, 1, input[np.float64]]], batch,
                          list(rng.normal(size=(2, 4, 5))), rng, gradient_scale=0.5)


def test_float32_matches_float64_reference(rng):
    out = rng.normal(size=(2, 3, 2, 3))
    y = rng.integers(0, 3, size=(2, 2, 3)).astype(np.uint16)
    y[0, 1, 2] = label_to_ignore
    ref_loss, ref_grad = ref_multiclass(out, y, (y != label_to_ignore).astype(float))
    sub = _loss_subnet(out.astype(np.float32))    # default dtype: float32 tensors
    value = loss_multiclass_log_per_pixel_().compute_loss_value_and_gradient(
        resizable_tensor(2, 3, 2, 3), list(y), sub)
    grad = sub.gradient_input.host_read()
    assert grad.dtype == np.float32
    assert value == pytest.approx(ref_loss, rel=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-8)
