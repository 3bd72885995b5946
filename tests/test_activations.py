"""Activations, softmax family, l2normalize, dropout / multiply: forward values and
gradients against small float64 references written with loops and ``math``, the
assign/add rule of every gradient op, in-place runs, dlib's quirks, printing, errors."""

import math

import numpy as np
import pytest

import dnnpy
from dnnpy import (clipped_relu_, dropout_, dropout_rate_, elu_, gelu_, htan_, input_tensor,
                   l2normalize_, leaky_relu_, mish_, multiply_, prelu_, relu_, sig_, silu_,
                   smelu_, softmax_, softmax_all_)
from dnnpy import tensor_tools as tt
from dnnpy.tensor import default_dtype, resizable_tensor


def T(a, dtype=np.float64):
    a = np.asarray(a, dtype=dtype)
    a = a.reshape(a.shape + (1,) * (4 - a.ndim))
    with default_dtype(dtype):
        t = resizable_tensor(*a.shape)
    t.assign(a)
    return t


def _dt(t):
    return t.host_read().dtype.type


def A(t):
    return np.array(t.host_read(), dtype=np.float64)


# ----------------------------------------------------------------------------------------
# scalar references (x -> f(x), f'(x)), obvious code

def _sig(x):
    return 1 / (1 + math.exp(-x))


def _gelu_d(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _mish(x):
    return x * math.tanh(math.log1p(math.exp(x)))


def _mish_d(x):
    sp = math.log1p(math.exp(x))
    return math.tanh(sp) + x * (1 - math.tanh(sp) ** 2) * _sig(x)


def _smelu(x, b):
    return x if x >= b else 0.0 if x <= -b else (x + b) ** 2 / (4 * b)


def _smelu_d(x, b):
    return 1.0 if x >= b else 0.0 if x <= -b else (x + b) / (2 * b)


# layer arguments are C++ floats in dlib, and the layers store them rounded so
A1, A7 = float(np.float32(0.1)), float(np.float32(0.7))

# (layer, op name, op args, f, f', gradient op reads the output?)
POINTWISE = {
    "sig": (sig_(), "sigmoid", (), _sig, lambda x: _sig(x) * (1 - _sig(x)), True),
    "htan": (htan_(), "tanh", (), math.tanh, lambda x: 1 - math.tanh(x) ** 2, True),
    "leaky_relu 0.1": (leaky_relu_(0.1), "leaky_relu", (A1,), lambda x: x if x > 0 else A1 * x,
                       lambda x: 1.0 if x > 0 else A1, True),
    "clipped_relu 1.5": (clipped_relu_(1.5), "clipped_relu", (1.5,), lambda x: min(max(x, 0.0), 1.5),
                         lambda x: 1.0 if 0 < x < 1.5 else 0.0, True),
    "elu 0.7": (elu_(0.7), "elu", (A7,), lambda x: x if x > 0 else A7 * (math.exp(x) - 1),
                lambda x: 1.0 if x > 0 else A7 * math.exp(x), True),
    "smelu 0.5": (smelu_(0.5), "smelu", (0.5,), lambda x: _smelu(x, 0.5), lambda x: _smelu_d(x, 0.5), True),
    "mish": (mish_(), "mish", (), _mish, _mish_d, False),
    "gelu": (gelu_(), "gelu", (), lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))), _gelu_d, False),
    "silu": (silu_(), "silu", (), lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * (1 - _sig(x))), False),
}

X = np.array([-3.0, -1.7, -0.9, -0.25, 0.0, 0.2, 0.45, 0.75, 1.2, 1.49, 1.6, 4.0]).reshape(2, 3, 1, 2)


class _sub:
    """A stand-in SUBNET with a fixed output and gradient input."""

    def __init__(self, x, grad=None):
        self.output = x
        self.grad = grad if grad is not None else T(np.zeros(x.shape), _dt(x))

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.grad


def forward(layer, x):
    out = resizable_tensor()
    if hasattr(layer, "forward_inplace"):
        with default_dtype(_dt(x)):
            out.copy_size(x)
            layer.forward_inplace(x, out)
    else:
        layer.setup(_sub(x))
        with default_dtype(_dt(x)):
            layer.forward(_sub(x), out)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(POINTWISE))
def test_pointwise_forward_matches_reference(name, dtype):
    layer, _, _, f, _, _ = POINTWISE[name]
    out = forward(layer, T(X, dtype))
    ref = np.vectorize(f)(X)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(A(out), ref, rtol=tol, atol=tol)
    assert _dt(out) == dtype


@pytest.mark.parametrize("name", list(POINTWISE))
def test_pointwise_gradient_assigns_when_aliased_and_adds_otherwise(name):
    _, op, args, f, fd, from_output = POINTWISE[name]
    x = T(X)
    y = T(np.zeros(X.shape))
    getattr(tt, op)(y, x, *args)
    gi_values = np.linspace(-1, 2, X.size).reshape(X.shape)
    ref = gi_values * np.vectorize(fd)(X)
    seen = y if from_output else x
    # distinct grad: ADD to what it held
    grad = T(np.full(X.shape, 3.0))
    getattr(tt, op + "_gradient")(grad, seen, T(gi_values), *args)
    np.testing.assert_allclose(A(grad), 3 + ref, rtol=1e-9, atol=1e-12)
    # grad is gradient_input: ASSIGN
    gi = T(gi_values)
    getattr(tt, op + "_gradient")(gi, seen, gi, *args)
    np.testing.assert_allclose(A(gi), ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in POINTWISE if POINTWISE[n][5]])
def test_in_place_forward_equals_out_of_place(name):
    layer = POINTWISE[name][0]
    assert hasattr(layer, "forward_inplace") and layer.backward_needs_output
    x = T(X, np.float32)
    expected = A(forward(layer, x))
    layer.forward_inplace(x, x)
    np.testing.assert_array_equal(A(x), expected)


def test_forms_follow_dlibs_implementation():
    # prelu_ is in place in dlib's spec but not in its implementation; mish/gelu/silu read the input
    for layer in (prelu_(), mish_(), gelu_(), silu_()):
        assert not hasattr(layer, "forward_inplace") and not layer.backward_needs_output
    for layer in (dropout_(), multiply_()):
        assert hasattr(layer, "forward_inplace") and not layer.backward_needs_output
    for layer in (softmax_(), softmax_all_(), l2normalize_(), sig_(), elu_()):
        assert hasattr(layer, "forward_inplace") and layer.backward_needs_output


def test_erf_matches_math_erf():
    from dnnpy.tensor_tools.cpu.activations import erf

    x = np.concatenate([np.linspace(-8, 8, 4001), [0.0, -0.0, 2.9999999, 3.0, 3.0000001, 40.0, -np.inf]])
    ref = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x), ref, rtol=4e-15, atol=4e-16)


def test_mish_gradient_is_clamped_beyond_8():
    x = T([[-9.0, -8.0, 7.9, 8.0, 9.0]])
    g = T(np.ones((1, 5)))
    tt.mish_gradient(g, x, g)
    out = A(g).ravel()
    assert out[0] == 0 and out[1] == 0 and out[3] == 1 and out[4] == 1
    assert abs(out[2] - _mish_d(7.9)) < 1e-9 and out[2] != 1


def test_smelu_gradient_reads_the_output():
    # at y == 0 (x <= -beta) the gradient is 0; inside it is sqrt(beta*y)/beta = (x+beta)/(2beta)
    beta = 2.0
    x = T([[-3.0, -1.0, 1.0, 2.5]])
    y = T(np.zeros((1, 4)))
    tt.smelu(y, x, beta)
    g = T(np.zeros((1, 4)))
    tt.smelu_gradient(g, y, T(np.ones((1, 4))), beta)
    np.testing.assert_allclose(A(g).ravel(), [0, 0.25, 0.75, 1.0])


# ----------------------------------------------------------------------------------------
# prelu

def test_prelu_forward_backward_and_params():
    layer = prelu_(0.3)
    x = T(X)
    out = forward(layer, x)
    assert A(layer.get_layer_params()).ravel().tolist() == [pytest.approx(0.3, abs=1e-7)]
    np.testing.assert_allclose(A(out), np.where(X > 0, X, 0.3 * X), rtol=1e-7)
    gi = np.linspace(-1, 1, X.size).reshape(X.shape)
    sub = _sub(x, T(np.ones(X.shape)))
    pg = T(np.full((1, 1, 1, 1), np.inf))
    layer.backward(T(gi), sub, pg)
    p = float(np.float32(0.3))
    np.testing.assert_allclose(A(sub.grad), 1 + np.where(X > 0, gi, p * gi), rtol=1e-12)
    assert A(pg).item() == pytest.approx(sum(g * v for g, v in zip(gi.ravel(), X.ravel()) if v <= 0))


def test_prelu_gradient_refuses_aliased_grad():
    x, p, pg = T(X), T([0.25]), T([0.0])
    gi = T(np.ones(X.shape))
    with pytest.raises(ValueError, match="prelu_gradient"):
        tt.prelu_gradient(gi, x, gi, p, pg)


# ----------------------------------------------------------------------------------------
# softmax family

S = np.random.default_rng(3).standard_normal((2, 3, 2, 4))


def _softmax_ref(v):
    e = [math.exp(a - max(v)) for a in v]
    return [a / sum(e) for a in e]


def test_softmax_channel_wise_reference():
    out = forward(softmax_(tt.CHANNEL_WISE), T(S))
    ref = np.empty_like(S)
    for n in range(2):
        for r in range(2):
            for c in range(4):
                ref[n, :, r, c] = _softmax_ref(list(S[n, :, r, c]))
    np.testing.assert_allclose(A(out), ref, rtol=1e-12)


def test_softmaxm_is_row_wise_not_plane_wise():
    out = A(forward(softmax_(tt.PLANE_WISE), T(S)))
    ref = np.empty_like(S)
    for n in range(2):
        for k in range(3):
            for r in range(2):
                ref[n, k, r, :] = _softmax_ref(list(S[n, k, r, :]))
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    assert np.allclose(out.sum(axis=3), 1) and not np.allclose(out.sum(axis=(2, 3)), 1)


def test_softmaxm_all_minus_inf_row_gives_zeros():
    x = np.array([[[[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]]]])
    out = A(forward(softmax_(tt.PLANE_WISE), T(x)))
    assert out[0, 0, 0].tolist() == [0, 0, 0]
    np.testing.assert_allclose(out[0, 0, 1], [1 / (1 + math.e), 0, math.e / (1 + math.e)])


def test_softmax_all_reference_and_gradient():
    out = A(forward(softmax_all_(), T(S)))
    for n in range(2):
        np.testing.assert_allclose(out[n].ravel(), _softmax_ref(list(S[n].ravel())), rtol=1e-12)
    gi = np.random.default_rng(4).standard_normal(S.shape)
    grad = T(np.zeros(S.shape))
    tt.softmax_all_gradient(grad, T(out), T(gi))
    for n in range(2):
        p, g = out[n].ravel(), gi[n].ravel()
        np.testing.assert_allclose(A(grad)[n].ravel(), p * (g - np.dot(p, g)), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mode", [0, 1])
def test_softmax_gradient_assign_and_add(mode):
    y = T(np.zeros(S.shape))
    tt.softmax(y, T(S), mode)
    gi = np.random.default_rng(5).standard_normal(S.shape)
    axis = 1 if mode == tt.CHANNEL_WISE else 3
    yv = A(y)
    ref = yv * (gi - np.sum(yv * gi, axis=axis, keepdims=True))
    grad = T(np.ones(S.shape))
    tt.softmax_gradient(grad, y, T(gi), mode)
    np.testing.assert_allclose(A(grad), 1 + ref, rtol=1e-10)
    g2 = T(gi)
    tt.softmax_gradient(g2, y, g2, mode)
    np.testing.assert_allclose(A(g2), ref, rtol=1e-10, atol=1e-15)


def test_softmax_rejects_bad_mode_and_shapes():
    with pytest.raises(ValueError, match="softmax_"):
        softmax_(2)
    with pytest.raises(ValueError, match="softmax: "):
        tt.softmax(T(S), T(S), 5)
    with pytest.raises(ValueError, match="softmax"):
        tt.softmax(T(np.zeros((2, 3))), T(S))


# ----------------------------------------------------------------------------------------
# l2normalize and the row ops

def test_l2normalize_forward_backward_in_and_out_of_place():
    layer = l2normalize_(0.01)
    x = np.random.default_rng(6).standard_normal((3, 2, 2, 1))
    out = A(forward(layer, T(x)))
    for n in range(3):
        norm = math.sqrt(sum(v * v for v in x[n].ravel()) + 0.01)
        np.testing.assert_allclose(out[n], x[n] / norm, rtol=1e-12)
    gi = np.random.default_rng(7).standard_normal(x.shape)
    grad = T(np.full(x.shape, 2.0))
    aliased = T(gi)
    with default_dtype(np.float64):       # the layer's norm/temp caches are float64 too
        layer.backward_inplace(T(out), T(gi), grad, None)
        layer.backward_inplace(T(out), aliased, aliased, None)
    for n in range(3):
        inv = 1 / math.sqrt(float(np.sum(x[n] ** 2)) + 0.01)
        ref = inv * (gi[n] - out[n] * np.sum(out[n] * gi[n]))
        np.testing.assert_allclose(A(grad)[n], 2 + ref, rtol=1e-10)
        np.testing.assert_allclose(A(aliased)[n], ref, rtol=1e-10)
    t = T(x)
    with default_dtype(np.float64):
        layer.forward_inplace(t, t)
    np.testing.assert_allclose(A(t), out, rtol=1e-15)


def test_row_ops():
    m = np.arange(12.0).reshape(3, 4) - 5
    v = np.array([2.0, -1.0, 0.5])
    inv = resizable_tensor()
    with default_dtype(np.float64):
        tt.inverse_norms(inv, T(m), 1.0)
    assert inv.shape == (3, 1, 1, 1)
    np.testing.assert_allclose(A(inv).ravel(), [1 / math.sqrt(sum(a * a for a in r) + 1) for r in m])
    out = T(np.zeros((3, 4)))
    tt.scale_rows(out, T(m), T(v))
    np.testing.assert_allclose(A(out).reshape(3, 4), m * v[:, None])
    cols = np.array([1.0, 2.0, 3.0, 4.0])
    tt.scale_columns(out, T(m), T(cols))
    np.testing.assert_allclose(A(out).reshape(3, 4), m * cols)
    dp = resizable_tensor()
    with default_dtype(np.float64):
        tt.dot_prods(dp, T(m), T(m * 2))
    np.testing.assert_allclose(A(dp).ravel(), [2 * sum(a * a for a in r) for r in m])
    tt.dot_prods(True, dp, T(m), T(m))
    np.testing.assert_allclose(A(dp).ravel(), [3 * sum(a * a for a in r) for r in m])
    m2 = m[::-1].copy()
    v2 = np.array([1.0, 3.0, -2.0])
    o = T(np.full((3, 4), np.inf))
    tt.scale_rows2(0, o, T(m), T(m2), T(v), T(v2))          # beta 0 assigns over inf
    ref = (m - m2 * v[:, None]) * v2[:, None]
    np.testing.assert_allclose(A(o).reshape(3, 4), ref)
    tt.scale_rows2(0.5, o, T(m), T(m2), T(v), T(v2))
    np.testing.assert_allclose(A(o).reshape(3, 4), 1.5 * ref)
    with pytest.raises(ValueError, match="scale_rows"):
        tt.scale_rows(out, T(m), T([1.0, 2.0]))


# ----------------------------------------------------------------------------------------
# multiply, threshold, tensor_rand

def _mult_ref(add_to, d, s1, s2):
    md = max(d.shape[0], s1.shape[0], s2.shape[0])
    prod = np.array([s1[i % s1.shape[0]] * s2[i % s2.shape[0]] for i in range(md)])
    if d.shape[0] == 1:
        prod = prod.sum(axis=0, keepdims=True)
    return d + prod if add_to else prod


@pytest.mark.parametrize("nd,n1,n2", [(3, 3, 3), (3, 1, 3), (3, 3, 1), (1, 3, 3), (1, 1, 3), (3, 1, 1)])
@pytest.mark.parametrize("add_to", [False, True])
def test_multiply_broadcast_and_sum_rules(nd, n1, n2, add_to):
    rng = np.random.default_rng(nd * 100 + n1 * 10 + n2)
    d, s1, s2 = (rng.standard_normal((n, 2, 1, 3)) for n in (nd, n1, n2))
    dest = T(d)
    tt.multiply(add_to, dest, T(s1), T(s2))
    np.testing.assert_allclose(A(dest), _mult_ref(add_to, d, s1, s2), rtol=1e-12)


def test_multiply_shape_errors():
    with pytest.raises(ValueError, match="multiply"):
        tt.multiply(False, T(np.zeros((2, 3))), T(np.zeros((2, 4))), T(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="multiply"):
        tt.multiply(False, T(np.zeros((2, 3))), T(np.zeros((3, 3))), T(np.zeros((3, 3))))


def test_threshold_and_tensor_rand():
    t = T([[0.1, 0.5, 0.7, 0.5000001]])
    tt.threshold(t, 0.5)
    assert A(t).ravel().tolist() == [0, 0, 1, 1]
    u = T(np.zeros((50, 2, 10, 10)), np.float32)
    tt.tensor_rand(5).fill_uniform(u)
    a = A(u)
    assert a.min() > 0 and a.max() <= 1 and abs(a.mean() - 0.5) < 0.01
    u2 = T(np.zeros((50, 2, 10, 10)), np.float32)
    tt.tensor_rand(5).fill_uniform(u2)
    assert np.array_equal(A(u2), a)                    # seeded: reproducible
    r = tt.tensor_rand(6)
    r.fill_uniform(u2)
    assert not np.array_equal(A(u2), a)
    g = T(np.zeros((100, 10, 10, 10)))
    r.fill_gaussian(g, 2.0, 0.5)
    assert abs(A(g).mean() - 2) < 0.01 and abs(A(g).std() - 0.5) < 0.01
    with pytest.raises(ValueError, match="fill_gaussian"):
        r.fill_gaussian(T(np.zeros((1, 3))))


# ----------------------------------------------------------------------------------------
# dropout / multiply

def test_dropout_mask_statistics_no_rescale_and_backward_uses_the_mask():
    layer = dropout_(0.3)
    x = np.random.default_rng(8).uniform(1, 2, (20, 5, 10, 10))
    out = A(forward(layer, T(x, np.float32)))
    mask = A(layer.mask)
    assert set(np.unique(mask)) == {0.0, 1.0}
    assert abs(mask.mean() - 0.7) < 0.01                       # keep probability 1 - drop_rate
    np.testing.assert_array_equal(out, np.float32(x) * mask)   # no 1/(1-p) rescaling
    gi = np.random.default_rng(9).standard_normal(x.shape)
    grad = T(np.ones(x.shape), np.float32)
    layer.backward_inplace(T(gi, np.float32), grad, None)
    np.testing.assert_allclose(A(grad), 1 + np.float32(gi) * mask, rtol=1e-6)
    g2 = T(gi, np.float32)
    layer.backward_inplace(g2, g2, None)
    np.testing.assert_allclose(A(g2), np.float32(gi) * mask, rtol=1e-6)
    forward(layer, T(x, np.float32))
    assert not np.array_equal(A(layer.mask), mask)             # a new mask every forward
    layer.clean()
    assert layer.mask.size() == 0


def test_dropout_extreme_rates():
    x = T(np.ones((4, 3, 2, 2)), np.float32)
    assert A(forward(dropout_(0), x)).min() == 1
    assert A(forward(dropout_(1), x)).max() == 0


def test_dropout_in_a_net_backpropagates_through_its_mask():
    # multiply[1] keeps dropout off the input node, so dropout runs in place (assign mode)
    net = dnnpy.dropout[0.5, dnnpy.multiply[1.0, input_tensor]]()
    x = np.random.default_rng(10).uniform(1, 2, (3, 2, 4, 4)).astype(np.float32)
    xt = net.to_tensor([x])
    out = A(net.forward(xt))
    mask = A(net.layer_details().mask)
    np.testing.assert_array_equal(out, x * mask)
    gi = T(np.random.default_rng(11).standard_normal(x.shape), np.float32)
    net.back_propagate_error(xt, gi)
    np.testing.assert_allclose(A(net.get_final_data_gradient()), A(gi) * mask, rtol=1e-6)


def test_multiply_layer_and_conversion_from_dropout():
    m = multiply_(dropout_(0.25))
    assert m.get_multiply_value() == 0.75
    x = np.random.default_rng(12).standard_normal((2, 3, 2, 2))
    np.testing.assert_allclose(A(forward(multiply_(-1.5), T(x))), -1.5 * x)
    grad = T(np.ones(x.shape))
    multiply_(2.0).backward_inplace(T(x), grad, None)
    np.testing.assert_allclose(A(grad), 1 + 2 * x)
    g = T(x)
    multiply_(2.0).backward_inplace(g, g, None)
    np.testing.assert_allclose(A(g), 2 * x)


def test_htan_in_place_in_a_net():
    net = dnnpy.htan[dnnpy.multiply[2.0, input_tensor]]()
    x = np.random.default_rng(13).standard_normal((2, 3, 2, 2)).astype(np.float32)
    xt = net.to_tensor([x])
    out = A(net.forward(xt))
    np.testing.assert_allclose(out, np.tanh(2 * x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError):          # the multiply's getters are disabled: in place
        net.subnet().get_output()
    gi = T(np.ones(x.shape), np.float32)
    net.back_propagate_error(xt, gi)
    np.testing.assert_allclose(A(net.get_final_data_gradient()), 2 * (1 - out ** 2), rtol=1e-5)


# ----------------------------------------------------------------------------------------
# printing, maps, construction

# operator<< prints floats with 6 significant digits; to_xml with net_to_xml's precision 9,
# where a C++ float such as 0.01f shows its rounding
REPRS = [
    (relu_(), "relu", "<relu/>\n"),
    (prelu_(), "prelu\t (initial_param_value=0.25)", None),
    (leaky_relu_(), "leaky_relu\t(alpha=0.01)", "<leaky_relu alpha='0.00999999978'/>\n"),
    (sig_(), "sig", "<sig/>\n"),
    (mish_(), "mish", "<mish/>\n"),
    (htan_(), "htan", "<htan/>\n"),
    (clipped_relu_(), "clipped_relu\t(ceiling=6)", "<clipped_relu ceiling='6'/>\n"),
    (elu_(), "elu\t (alpha=1)", "<elu alpha='1'/>\n"),
    (gelu_(), "gelu", "<gelu/>\n"),
    (smelu_(), "smelu\t (beta=1)", "<smelu beta='1'/>\n"),
    (silu_(), "silu", "<silu/>\n"),
    (softmax_(), "softmax (mode=channel_wise)", "<softmax mode='channel_wise'/>\n"),
    (softmax_(1), "softmax (mode=plane_wise)", "<softmax mode='plane_wise'/>\n"),
    (softmax_all_(), "softmax_all", "<softmax_all/>\n"),
    (l2normalize_(), "l2normalize eps=1e-05", "<l2normalize eps='1e-05'/>\n"),
    (dropout_(), "dropout\t (drop_rate=0.5)", "<dropout drop_rate='0.5'/>\n"),
    (dropout_rate_(10), "dropout\t (drop_rate=0.1)", "<dropout drop_rate='0.100000001'/>\n"),
    (multiply_(), "multiply (val=0.5)", "<multiply val='0.5'/>\n"),
]


@pytest.mark.parametrize("layer,text,xml", REPRS, ids=[r[1].split()[0] for r in REPRS])
def test_repr_and_xml(layer, text, xml):
    assert repr(layer) == text
    if xml is not None:
        assert layer.to_xml() == xml


def test_prelu_xml_prints_the_parameter_and_disabled_relu():
    p = prelu_(0.5)
    p.setup(None)
    assert p.to_xml() == "<prelu initial_param_value='0.5'>\n0.5 \n</prelu>\n"
    r = relu_()
    r.disable()
    assert repr(r) == "relu\t (disabled)" and r.to_xml() == "<relu disabled='true'/>\n"


def test_identity_maps_only_where_dlib_has_them():
    with_map = [relu_(), prelu_(), leaky_relu_(), sig_(), mish_(), htan_(), clipped_relu_(), elu_(),
                gelu_(), smelu_(), silu_(), dropout_(), multiply_()]
    for layer in with_map:
        assert layer.map_input_to_output((1.5, -2.0)) == (1.5, -2.0)
        assert layer.map_output_to_input((3.0, 4.0)) == (3.0, 4.0)
    for layer in (softmax_(), softmax_all_(), l2normalize_()):
        assert not hasattr(layer, "map_input_to_output")


@pytest.mark.parametrize("make,exc,word", [
    (lambda: dropout_(1.5), ValueError, "dropout_"),
    (lambda: dropout_(-0.1), ValueError, "dropout_"),
    (lambda: dropout_rate_(101), ValueError, "dropout_rate_"),
    (lambda: dropout_rate_(0.5), TypeError, "dropout_rate_"),
    (lambda: smelu_(0), ValueError, "smelu_"),
    (lambda: leaky_relu_("a"), TypeError, "leaky_relu_"),
    (lambda: elu_(None), TypeError, "elu_"),
    (lambda: clipped_relu_(float("inf")), ValueError, "clipped_relu_"),
    (lambda: l2normalize_(0), ValueError, "l2normalize_"),
    (lambda: prelu_(True), TypeError, "prelu_"),
    (lambda: multiply_("x"), TypeError, "multiply_"),
])
def test_constructor_validation(make, exc, word):
    with pytest.raises(exc, match=word):
        make()


def test_templates_and_getters():
    assert dnnpy.dropout_10[input_tensor]().layer_details().get_drop_rate() == pytest.approx(0.1)
    assert dnnpy.dropout_rate[20, input_tensor]().layer_details().get_drop_rate() == pytest.approx(0.2)
    assert dnnpy.softmaxm[input_tensor]().layer_details().get_mode() == tt.PLANE_WISE
    assert dnnpy.softmax[input_tensor]().layer_details().get_mode() == tt.CHANNEL_WISE
    assert repr(dnnpy.elu[0.5, input_tensor]) == "elu[0.5, input_tensor]"
    assert leaky_relu_(0.2).get_alpha() == float(np.float32(0.2))   # stored as C++ float
    assert clipped_relu_(3).get_ceiling() == 3 and smelu_(2).get_beta() == 2
    assert l2normalize_(1e-3).get_eps() == 1e-3 and prelu_(0.1).get_initial_param_value() == pytest.approx(0.1)
    with pytest.raises(TypeError, match="dropout_rate"):
        dnnpy.dropout_rate[0.5, input_tensor]
