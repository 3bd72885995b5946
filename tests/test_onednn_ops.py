"""The non-conv oneDNN ops under the CPU twin (relu, pooling, batch norm, gemm) against the
numpy twin (``tt.force_numpy()``), in float32.

Tolerances, and why:
- relu forward/backward and max pooling: exact (a select; the gradient placement of tied
  windows is checked with integer gradients, whose sums are exact in any order).
- average pooling, and max-pool gradients of overlapping windows with real-valued
  gradients: a few ulps (the order in which a pixel's window shares are summed differs).
- batch norm: oneDNN accumulates its statistics in float32, numpy in float64 (as dlib):
  measured <= 1e-5 relative at 64x32x32x32, <= 4e-7 at these small shapes; bound 2e-5.
- gemm: float32 dot products of a few terms, summed in another order: 1e-6 relative.
"""

import numpy as np
import pytest

from dnnpy import layers as L
from dnnpy import test_layer
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor
from dnnpy.tensor_tools import cpu, force_numpy
from dnnpy.tensor_tools.cpu import onednn
from dnnpy.tensor_tools.cpu.onednn import _api
from dnnpy.tensor_tools.cpu.onednn import pooling as onednn_pooling

from helpers import assert_close_scaled

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN is not available")

RNG = np.random.default_rng(12)


def T(a):
    t = resizable_tensor(*a.shape)
    t.host_write_only()[...] = a
    return t


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def both(fn):
    """``fn()`` with oneDNN active, then under force_numpy (each returns arrays)."""
    got = fn()
    with force_numpy():
        want = fn()
    return got, want


# ---------------------------------------------------------------------------------------
# relu

def test_relu_forward_and_gradient_are_bit_identical_in_every_mode():
    x = rand(3, 4, 5, 6)
    x[0, 0, 0, :3] = 0.0                       # relu(0) = 0: its gradient is 0
    gi = rand(*x.shape)
    prefill = rand(*x.shape)

    def run():
        src, dest = T(x), resizable_tensor(*x.shape)
        cpu.relu(dest, src)
        add = T(prefill)
        cpu.relu_gradient(add, dest, T(gi))                     # add_to: grad += g
        assign = T(np.full(x.shape, np.nan, np.float32))
        cpu.relu_gradient(assign, dest, T(gi), add_to=False)    # assign, NaN does not leak
        inplace = T(gi)
        cpu.relu_gradient(inplace, dest, inplace)               # grad is gradient_input
        return [t.numpy() for t in (dest, add, assign, inplace)]

    for g, w in zip(*both(run)):
        assert np.array_equal(g, w)
    assert not np.isnan(run()[2]).any()


# ---------------------------------------------------------------------------------------
# pooling

POOLS = [  # (wh, ww, sy, sx, py, px), src shape
    ((2, 2, 2, 2, 0, 0), (2, 3, 8, 9)),        # odd width: dlib's floor, negative right pad
    ((3, 3, 2, 2, 1, 1), (2, 3, 7, 9)),        # overlapping windows, padding
    ((2, 3, 2, 1, 1, 2), (3, 2, 6, 7)),
    ((5, 6, 1, 1, 0, 0), (2, 2, 5, 6)),        # the whole image (max_pool_everything)
]


def _out_shape(shape, wh, ww, sy, sx, py, px):
    n, k, h, w = shape
    return (n, k, 1 + (h + 2 * py - wh) // sy, 1 + (w + 2 * px - ww) // sx)


@pytest.mark.parametrize("do_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("window,shape", POOLS)
def test_pooling_matches_numpy_with_ties(window, shape, do_max):
    # after a relu and rounding, many windows hold tied maxima (zeros and repeated values)
    x = np.round(np.maximum(rand(*shape), 0), 1)
    out_shape = _out_shape(shape, *window)
    gi_int = RNG.integers(-8, 9, out_shape).astype(np.float32)    # exact sums: placement
    gi = rand(*out_shape)
    prefill = rand(*shape)

    def run():
        src, dest, state = T(x), resizable_tensor(*out_shape), {}
        cpu.pooling_forward(dest, src, do_max, *window, state=state)
        assign = T(np.full(shape, np.nan, np.float32))
        cpu.pooling_backward(T(gi_int), dest, src, assign, do_max, *window, add_to=False,
                             state=state)
        add = T(prefill)
        cpu.pooling_backward(T(gi), dest, src, add, do_max, *window, state=state)
        return [t.numpy() for t in (dest, assign, add)]

    got, want = both(run)
    disjoint = window[2] >= window[0] and window[3] >= window[1]   # one window per pixel
    # max: forward and integer-gradient placement exact; real-valued gradients of
    # overlapping windows and every average are sums in another order (a few ulps)
    exact = (do_max, do_max, do_max and disjoint)
    for g, w, ok, what in zip(got, want, exact, ("forward", "gradient (assign)", "gradient (add)")):
        if ok:
            assert np.array_equal(g, w), what
        else:
            assert_close_scaled(g, w, 4e-7, what)


def test_max_pool_workspace_missing_or_stale_is_recomputed():
    window, shape = (3, 3, 2, 2, 1, 1), (2, 3, 7, 9)
    out_shape = _out_shape(shape, *window)
    gi = RNG.integers(-8, 9, out_shape).astype(np.float32)
    x1, x2 = rand(*shape), rand(*shape)

    def grad(src, dest, state):
        g = T(np.zeros(shape, np.float32))
        cpu.pooling_backward(T(gi), dest, src, g, True, *window, state=state)
        return g.numpy()

    src, dest, state = T(x1), resizable_tensor(*out_shape), {}
    cpu.pooling_forward(dest, src, True, *window, state=state)
    with force_numpy():
        want1 = grad(src, dest, None)
    assert np.array_equal(grad(src, dest, state), want1)      # kept workspace
    assert np.array_equal(grad(src, dest, None), want1)       # none: forward re-run
    # src written since the kept forward (dest recomputed without the state: the numpy
    # twin reads the forward output, so dest must stay the output of src)
    src.host()[...] = x2
    with force_numpy():
        cpu.pooling_forward(dest, src, True, *window)
        want2 = grad(src, dest, None)
    assert not np.array_equal(want1, want2)
    assert np.array_equal(grad(src, dest, state), want2)
    other, dest3 = T(x1), resizable_tensor(*out_shape)        # another tensor, same shape
    with force_numpy():
        cpu.pooling_forward(dest3, other, True, *window)
        want3 = grad(other, dest3, None)
    assert np.array_equal(grad(other, dest3, state), want3)


def test_max_pool_input_with_nan_propagates_as_numpy_does():
    # oneDNN's max ignores NaN; a swallowed NaN would hide a diverging net, so such inputs
    # go to numpy: NaN out, and the gradient to the window's first pixel
    window, shape = (2, 2, 2, 2, 0, 0), (2, 3, 6, 6)
    out_shape = _out_shape(shape, *window)
    x = rand(*shape)
    x[1, 2, 3, 2] = np.nan
    gi = RNG.integers(-8, 9, out_shape).astype(np.float32)

    def run():
        src, dest, state = T(x), resizable_tensor(*out_shape), {}
        cpu.pooling_forward(dest, src, True, *window, state=state)
        g = T(np.zeros(shape, np.float32))
        cpu.pooling_backward(T(gi), dest, src, g, True, *window, state=state)
        return dest.numpy(), g.numpy()

    (y, g), (y0, g0) = both(run)
    assert np.isnan(y[1, 2, 1, 1]) and np.array_equal(y, y0, equal_nan=True)
    assert np.array_equal(g, g0)


# ---------------------------------------------------------------------------------------
# batch norm

@pytest.mark.parametrize("conv,shape", [(True, (6, 4, 5, 3)), (False, (7, 3, 2, 2))],
                         ids=["conv", "fc"])
@pytest.mark.parametrize("f", [1.0, 0.25])
def test_batch_norm_matches_numpy(conv, shape, f):
    pshape = (1, shape[1], 1, 1) if conv else (1,) + shape[1:]
    x = rand(*shape) * 3 + 1
    gamma, beta, gi, prefill = rand(*pshape), rand(*pshape), rand(*shape), rand(*shape)
    old_m, old_v = rand(*pshape), np.abs(rand(*pshape)) + 0.5
    fwd = cpu.batch_normalize_conv if conv else cpu.batch_normalize
    bwd = cpu.batch_normalize_conv_gradient if conv else cpu.batch_normalize_gradient

    def run():
        src = T(x)
        dest, means, invstds = (resizable_tensor(*s) for s in (shape, pshape, pshape))
        if f == 1:   # assigned: NaN in the old running statistics must not leak
            rm, rv = T(np.full(pshape, np.nan, np.float32)), T(np.full(pshape, np.nan, np.float32))
        else:
            rm, rv = T(old_m), T(old_v)
        fwd(1e-5, dest, means, invstds, f, rm, rv, src, T(gamma), T(beta))
        out = [dest, means, invstds, rm, rv]
        for add_to in (True, False):
            sg = T(prefill) if add_to else T(np.full(shape, np.nan, np.float32))
            gg, bg = resizable_tensor(*pshape), resizable_tensor(*pshape)
            bwd(1e-5, T(gi), means, invstds, src, T(gamma), sg, gg, bg, add_to=add_to)
            out += [sg, gg, bg]
        return [t.numpy() for t in out]

    got, want = both(run)
    names = ("dest", "means", "invstds", "running_means", "running_variances", "src_grad (add)",
             "gamma_grad", "beta_grad", "src_grad (assign)", "gamma_grad", "beta_grad")
    for g, w, what in zip(got, want, names):
        assert not np.isnan(g).any(), what
        assert_close_scaled(g, w, 2e-5, what)


# ---------------------------------------------------------------------------------------
# gemm

@pytest.mark.parametrize("beta", [0.0, 1.0])
@pytest.mark.parametrize("trans_lhs,trans_rhs", [(False, False), (False, True), (True, False),
                                                 (True, True)])
def test_gemm_matches_numpy(trans_lhs, trans_rhs, beta):
    m, k, n = 6, 20, 5
    a = rand(k, m, 1, 1) if trans_lhs else rand(m, 4, 5, 1)
    b = rand(n, 2, 10, 1) if trans_rhs else rand(k, n, 1, 1)
    d0 = rand(m, n, 1, 1) if beta else np.full((m, n, 1, 1), np.nan, np.float32)

    def run():
        dest = T(d0)
        cpu.gemm(beta, dest, 1.0, T(a), trans_lhs, T(b), trans_rhs)
        return [dest.numpy()]

    (got,), (want,) = both(run)
    assert not np.isnan(got).any()
    assert_close_scaled(got, want, 1e-6, "gemm")


@pytest.mark.parametrize("trans_rhs", [False, True])
def test_matmul_arrays_matches_numpy(trans_rhs):
    lhs, rhs = rand(7, 31), (rand(40, 31) if trans_rhs else rand(31, 40))
    out = np.full((7, 40), np.nan, np.float32)
    assert onednn.matmul_arrays(lhs, rhs, out, trans_rhs=trans_rhs)
    want = lhs.astype(np.float64) @ (rhs.T if trans_rhs else rhs).astype(np.float64)
    assert_close_scaled(out, want, 1e-6, "matmul_arrays")
    # what it refuses, leaving the work to numpy: other dtypes, layouts, shapes, aliasing
    assert not onednn.matmul_arrays(lhs.astype(np.float64), rhs, out, trans_rhs)
    assert not onednn.matmul_arrays(np.asfortranarray(lhs), rhs, out, trans_rhs)
    assert not onednn.matmul_arrays(lhs, rhs, out[:, :39].copy(), trans_rhs)
    assert not onednn.matmul_arrays(lhs[:, :30].copy(), rhs, out, trans_rhs)
    square = rand(8, 8)
    assert not onednn.matmul_arrays(square, rand(8, 8), square)
    with force_numpy():
        assert not onednn.matmul_arrays(lhs, rhs, out, trans_rhs)


@pytest.mark.parametrize("trans_rhs", [False, True])
def test_matmul_arrays_serves_every_column_count_with_one_primitive(trans_rhs):
    """The right operand's column count is a run-time size: one primitive for every n
    (an image size's pyramid levels), small ones on one thread, large ones on the pool."""
    from dnnpy.tensor_tools.cpu.onednn import matmul
    lhs = rand(9, 31)
    before = len(matmul._cache._d())
    for n in (1, 40, 3, 20000, 777):
        rhs = rand(n, 31) if trans_rhs else rand(31, n)
        out = np.full((9, n), np.nan, np.float32)
        assert onednn.matmul_arrays(lhs, rhs, out, trans_rhs=trans_rhs)
        want = lhs.astype(np.float64) @ (rhs.T if trans_rhs else rhs).astype(np.float64)
        assert_close_scaled(out, want, 1e-6, f"matmul_arrays n={n}")
    assert len(matmul._cache._d()) - before <= 1


def test_unsupported_cases_fall_back_to_numpy():
    a, b = T(rand(4, 3, 1, 1)), T(rand(3, 2, 1, 1))
    assert not onednn.gemm(0.0, T(rand(4, 2, 1, 1)), 2.0, a, False, b, False)   # alpha != 1
    with default_dtype(np.float64):
        src, dest = T(rand(2, 3, 4, 4)), resizable_tensor(2, 3, 4, 4)
    assert src.host_read().dtype == np.float64
    assert not onednn.relu_gradient(dest, src, src)
    with force_numpy():
        x = T(rand(2, 3, 4, 4))
        assert not onednn.relu_gradient(resizable_tensor(2, 3, 4, 4), x, x)


def test_non_finite_inputs_keep_numpys_answers():
    # oneDNN's ReLU maps NaN to 0 (the CPU twin's ReLU forward is numpy's) and its max
    # pooling skips NaN and starts from -FLT_MAX (such inputs run on numpy), so a diverging
    # net stays visible
    x = rand(2, 3, 4, 4)
    x[0, 1, 2, 2], x[1, 0, :2, :2] = np.nan, -np.inf

    def run():
        y = resizable_tensor(*x.shape)
        cpu.relu(y, T(x))
        p = resizable_tensor(2, 3, 2, 2)
        cpu.pooling_forward(p, T(x), True, 2, 2, 2, 2, 0, 0, state={})
        return y.numpy(), p.numpy()

    (y, p), (y0, p0) = both(run)
    assert np.isnan(y[0, 1, 2, 2]) and np.array_equal(y, y0, equal_nan=True)
    assert p[1, 0, 0, 0] == -np.inf and np.array_equal(p, p0, equal_nan=True)


def test_partly_overlapping_relu_views_run_on_numpy():
    base = rand(1, 1, 1, 4096)

    def forward():
        b = T(base)
        cpu.relu(alias_tensor(1, 1, 1, 4000)(b, 33), alias_tensor(1, 1, 1, 4000)(b, 0))
        return b.numpy()

    out = rand(1, 1, 1, 4000)

    def backward():
        b, d = T(base), T(out)
        cpu.relu_gradient(alias_tensor(1, 1, 1, 4000)(b, 40), d,
                          alias_tensor(1, 1, 1, 4000)(b, 0), add_to=False)
        return b.numpy()

    want = base.ravel().copy()
    want[33:4033] = np.maximum(base.ravel()[:4000], 0)
    assert np.array_equal(forward().ravel(), want)
    got, ref = both(backward)
    assert np.array_equal(got, ref)


def test_float64_outputs_of_float32_inputs_run_on_numpy():
    x = rand(1, 2, 4, 4)
    with default_dtype(np.float64):
        y, g = resizable_tensor(1, 2, 4, 4), resizable_tensor(1, 2, 4, 4)
    assert not onednn.relu_gradient(y, T(x), T(x), add_to=False)
    assert not onednn.pooling_backward(T(rand(1, 2, 2, 2)), T(rand(1, 2, 2, 2)), T(x), g, False,
                                       2, 2, 2, 2, 0, 0)
    cpu.relu(y, T(x))
    assert np.array_equal(y.numpy(), np.maximum(x, 0))


def test_a_refused_primitive_runs_numpy_and_is_logged_once(monkeypatch, caplog):
    def refuse(*args):
        raise _api.DnnlError("dnnl_pooling_forward_primitive_desc_create", 3)

    monkeypatch.setattr(onednn_pooling, "_build_forward", refuse)
    window, shape = (2, 3, 1, 2, 0, 1), (3, 2, 7, 5)        # a geometry no other test uses
    out_shape = _out_shape(shape, *window)
    x = rand(*shape)

    def run():
        dest = resizable_tensor(*out_shape)
        cpu.pooling_forward(dest, T(x), True, *window)
        return dest.numpy()

    with caplog.at_level("INFO", logger="dnnpy.onednn"):
        got, want = both(run)
        run()
    assert np.array_equal(got, want)
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and "unimplemented" in refusals[0].getMessage()
    assert any(f.startswith("pooling_forward") for f in onednn.info()["fallbacks"])


# ---------------------------------------------------------------------------------------
# the layers' test_layer rows run with oneDNN doing the work

LAYER_ROWS = {
    "relu_": (lambda: L.relu_(), (2, 3, 4, 5), "relu_gradient"),
    "max_pool_": (lambda: L.max_pool_(3, 3, 2, 2), (2, 2, 5, 7), "pooling_backward"),
    "avg_pool_": (lambda: L.avg_pool_(2, 3, 2, 1, 1, 2), (3, 2, 6, 7), "pooling_backward"),
    "bn_con": (lambda: L.bn_(L.CONV_MODE), (4, 3, 3, 2), "batch_normalize_conv_gradient"),
    "bn_fc": (lambda: L.bn_(L.FC_MODE), (5, 2, 2, 3), "batch_normalize_gradient"),
    "fc_": (lambda: L.fc_(3), (4, 2, 3, 2), "gemm"),
}


@pytest.mark.parametrize("name", list(LAYER_ROWS))
def test_layer_rows_with_onednn(name, monkeypatch):
    make, shape, op = LAYER_ROWS[name]
    done = []
    real = getattr(onednn, op)

    def spy(*args, **kwargs):
        ok = real(*args, **kwargs)
        done.append(ok)
        return ok

    monkeypatch.setattr(onednn, op, spy)
    result = test_layer(make(), dtype=np.float32, input_shape=shape)
    assert result, f"{name}:\n{result.log}"
    assert done and all(done), f"{op}: oneDNN did not run ({done[:5]})"
