"""CUDA twins of convolution and pooling (``tensor_tools/cuda/conv.py``, ``pooling.py``,
cuDNN 9) against the CPU twin. All tests need a GPU (``@pytest.mark.cuda``; skipped cleanly
without one).

Tolerances: relative 1e-4 in float32 (cuDNN runs FMA math, no TF32, by default) and 1e-10
in float64, both scaled by the largest magnitude of the reference (sums of many products
cancel). Assign mode starts from a destination full of inf and NaN: cuDNN's beta = 0 must
not read it. Add mode starts from random values. Shapes cover strides larger than the
filter, paddings, 1x1 filters, whole-input filters and windows, odd sizes, and operands at
an unaligned offset into their storage (``alias_tensor``).
"""

import threading

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor
from dnnpy.tensor_tools import cpu

from helpers import assert_close_scaled

pytestmark = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
ADD_TO = pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])
RTOL = {np.float32: 1e-4, np.float64: 1e-10}

# (data (N, C, H, W), filters (K, R, S), stride (y, x), padding (y, x))
CONV_CASES = [
    ((2, 3, 9, 11), (4, 3, 3), (1, 1), (1, 1)),
    ((3, 2, 10, 7), (5, 5, 3), (2, 1), (2, 1)),
    ((2, 3, 8, 8), (4, 2, 2), (3, 3), (0, 0)),        # stride > filter: skipped pixels
    ((2, 3, 11, 10), (3, 1, 2), (4, 3), (0, 1)),      # stride > filter, with padding
    ((2, 4, 7, 7), (3, 1, 1), (1, 1), (0, 0)),        # 1x1
    ((2, 3, 6, 5), (4, 6, 5), (1, 1), (0, 0)),        # whole-input filter
    ((1, 2, 5, 5), (3, 5, 5), (2, 2), (2, 2)),        # whole-input filter with padding
    ((4, 8, 16, 16), (16, 3, 3), (2, 2), (1, 1)),
    ((2, 3, 13, 9), (2, 4, 3), (3, 2), (1, 2)),
    ((5, 16, 12, 12), (32, 3, 3), (1, 1), (1, 1)),
    ((1, 1, 1, 1), (1, 1, 1), (1, 1), (0, 0)),
]
CONV_IDS = [f"x{c[0]}-w{c[1]}-s{c[2]}-p{c[3]}" for c in CONV_CASES]


def _gpu():
    """The CUDA twin (imported here: the module must import without CuPy)."""
    import importlib

    return importlib.import_module("dnnpy.tensor_tools.cuda")


def _out(h, r, s, p):
    return 1 + (h + 2 * p - r) // s


def _pair(arr, dtype):
    """Two tensors holding ``arr``: one for the CPU twin, one for the CUDA twin."""
    with default_dtype(dtype):
        return resizable_tensor(arr.astype(dtype)), resizable_tensor(arr.astype(dtype))


def _start(shape, add_to, rng, dtype):
    if add_to:
        return _pair(rng.standard_normal(shape), dtype)
    bad = np.full(shape, np.inf)
    bad.reshape(-1)[::2] = np.nan
    return _pair(bad, dtype)


def _close(got, want, dtype, what=""):
    assert np.asarray(got).dtype == np.asarray(want).dtype, what
    assert_close_scaled(got, want, RTOL[dtype], what)


def _conv_operands(case, rng):
    (n, c, h, w), (k, r, s), (sy, sx), (py, px) = case
    ho, wo = _out(h, r, sy, py), _out(w, s, sx, px)
    return (rng.standard_normal((n, c, h, w)), rng.standard_normal((k, c, r, s)),
            rng.standard_normal((n, k, ho, wo)), (sy, sx, py, px))


@DTYPES
@ADD_TO
@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_conv_forward(case, add_to, dtype, rng):
    x, w, y, params = _conv_operands(case, rng)
    xc, xg = _pair(x, dtype)
    wc, wg = _pair(w, dtype)
    yc, yg = _start(y.shape, add_to, rng, dtype)
    cpu.conv_forward(add_to, yc, xc, wc, *params)
    _gpu().conv_forward(add_to, yg, xg, wg, *params)
    _close(yg, yc, dtype, f"conv_forward {case}")


@DTYPES
@ADD_TO
@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_conv_backward_data(case, add_to, dtype, rng):
    x, w, dy, params = _conv_operands(case, rng)
    dyc, dyg = _pair(dy, dtype)
    wc, wg = _pair(w, dtype)
    dxc, dxg = _start(x.shape, add_to, rng, dtype)
    cpu.conv_backward_data(add_to, dyc, wc, dxc, *params)
    _gpu().conv_backward_data(add_to, dyg, wg, dxg, *params)
    _close(dxg, dxc, dtype, f"conv_backward_data {case}")


@DTYPES
@ADD_TO
@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_conv_backward_filters(case, add_to, dtype, rng):
    x, w, dy, params = _conv_operands(case, rng)
    dyc, dyg = _pair(dy, dtype)
    xc, xg = _pair(x, dtype)
    dwc, dwg = _start(w.shape, add_to, rng, dtype)
    cpu.conv_backward_filters(add_to, dyc, xc, dwc, *params)
    _gpu().conv_backward_filters(add_to, dyg, xg, dwg, *params)
    _close(dwg, dwc, dtype, f"conv_backward_filters {case}")


@DTYPES
@pytest.mark.parametrize("case", CONV_CASES[:9], ids=CONV_IDS[:9])
def test_transposed_conv_through_tensor_conv(case, dtype):
    """cont_'s three passes (forward = backward-data, data gradient = forward, filter
    gradient = backward-filter with the operands swapped), through ``tt.tensor_conv`` on
    each backend."""
    (n, c, h, w), (k, r, s), (sy, sx), (py, px) = case
    rng = np.random.default_rng(7)
    ho, wo = _out(h, r, sy, py), _out(w, s, sx, px)
    # the tconv input has the conv output's shape; its output the conv input's
    tin, filt = rng.standard_normal((n, k, ho, wo)), rng.standard_normal((k, c, r, s))
    gout = rng.standard_normal((n, c, h, w))

    def run():
        with default_dtype(dtype):
            x, f, g = resizable_tensor(tin), resizable_tensor(filt), resizable_tensor(gout)
            y, dx, df = resizable_tensor(n, c, h, w), resizable_tensor(n, k, ho, wo), resizable_tensor(k, c, r, s)
            conv = tt.tensor_conv()
            conv.setup(y, f, sy, sx, py, px)
            conv.get_gradient_for_data(False, x, f, y)            # forward
            conv(False, dx, g, f)                                  # data gradient
            conv.get_gradient_for_filters(False, x, g, df)        # filter gradient
            return [np.array(t) for t in (y, dx, df)]

    with tt.force_cpu():
        want = run()
    got = run()
    for name, a, b in zip(("forward", "data gradient", "filter gradient"), got, want):
        _close(a, b, dtype, f"cont {name} {case}")


@DTYPES
def test_fused_bias_relu(dtype, rng):
    x, w, _, params = _conv_operands(CONV_CASES[1], rng)
    b = rng.standard_normal((1, w.shape[0], 1, 1))

    def run():
        with default_dtype(dtype):
            xt, wt, bt, out = resizable_tensor(x), resizable_tensor(w), resizable_tensor(b), resizable_tensor()
            conv = tt.tensor_conv()
            conv.setup(xt, wt, *params)
            conv(False, out, xt, wt, biases=bt, use_relu=True)
            return np.array(out)

    with tt.force_cpu():
        want = run()
    got = run()
    assert (got >= 0).all() and (got == 0).any()
    _close(got, want, dtype, "conv + bias + relu")


@pytest.mark.parametrize("offset", [1, 3])
def test_unaligned_operands(offset, rng):
    """Filters and their gradient at an odd offset into a larger storage (an alias_tensor,
    like a layer's params) go through the aligned copies in handles.py."""
    x, w, dy, params = _conv_operands(CONV_CASES[0], rng)
    results = []
    for use_cuda in (False, True):
        store = resizable_tensor(w.size + offset + 5)
        store.assign(rng.standard_normal(store.size()).reshape(store.shape))
        filters = alias_tensor(*w.shape)(store, offset)
        filters.assign(w)
        grads = resizable_tensor(w.size + offset + 5)
        grads.assign(np.zeros(grads.shape))
        dw = alias_tensor(*w.shape)(grads, offset)
        xt, yt, dyt = resizable_tensor(x.astype(np.float32)), resizable_tensor(*dy.shape), resizable_tensor(dy.astype(np.float32))
        twin = _gpu() if use_cuda else cpu
        twin.conv_forward(False, yt, xt, filters, *params)
        twin.conv_backward_filters(True, dyt, xt, dw, *params)
        results.append((np.array(yt), np.array(grads)))
    _close(results[1][0], results[0][0], np.float32, "forward with unaligned filters")
    _close(results[1][1], results[0][1], np.float32, "unaligned filter gradient (and its neighbours)")


def test_zero_workspace_and_autotune(rng):
    from dnnpy.tensor_tools.cuda import conv as gconv
    from dnnpy.tensor_tools.cuda import handles

    x, w, dy, params = _conv_operands(CONV_CASES[7], rng)
    want_y = resizable_tensor(*dy.shape)
    cpu.conv_forward(False, want_y, resizable_tensor(x.astype(np.float32)), resizable_tensor(w.astype(np.float32)), *params)
    old_cap = handles.max_workspace()
    try:
        for cap, autotune in ((0, False), (old_cap, True), (1 << 16, True)):
            handles.set_max_workspace(cap)
            gconv.set_autotune(autotune)
            y = resizable_tensor(*dy.shape)
            gconv.conv_forward(False, y, resizable_tensor(x.astype(np.float32)), resizable_tensor(w.astype(np.float32)), *params)
            _close(y, want_y, np.float32, f"cap {cap} autotune {autotune}")
            key = [k for k in gconv._algorithms if k[1] == "conv_forward" and k[5] == cap and k[4] == autotune]
            assert key, "the choice was cached under its full key"
            assert all(size <= cap or algo == 0 for algo, _, size in gconv._algorithms[key[0]])
    finally:
        handles.set_max_workspace(old_cap)
        gconv.set_autotune(False)


def test_default_math_is_fma():
    from dnnpy.tensor_tools.cuda import _cudnn as C
    from dnnpy.tensor_tools.cuda import conv as gconv

    assert not gconv.tf32_allowed()
    assert gconv._base_math(np.dtype(np.float32)) == C.CUDNN_FMA_MATH
    for key, found in gconv._algorithms.items():
        if key[2] == "f":
            assert all(math == C.CUDNN_FMA_MATH for _, math, _ in found), key


# ----------------------------------------------------------------------------------------
# pooling

# (src (N, K, H, W), window (h, w) or None for the whole input, stride, padding)
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
    ((2, 3, 9, 7), (3, 3), (1, 1), (1, 1)),
    ((2, 2, 10, 11), (3, 2), (2, 3), (1, 1)),
    ((1, 4, 7, 9), (5, 3), (2, 1), (2, 0)),
    ((2, 3, 6, 6), (1, 1), (3, 3), (0, 0)),            # stride > window
    ((3, 5, 7, 7), None, (1, 1), (0, 0)),              # whole input (dlib nr = nc = 0)
    ((2, 2, 5, 9), None, (1, 1), (0, 0)),
]
POOL_IDS = [f"x{c[0]}-w{c[1]}-s{c[2]}-p{c[3]}" for c in POOL_CASES]


def _pool_run(case, do_max, dtype, x, gi, g0):
    (n, k, h, w), win, (sy, sx), (py, px) = case
    wh, ww = win if win else (h, w)
    with default_dtype(dtype):
        src, dest, grad = resizable_tensor(x), resizable_tensor(), resizable_tensor(g0)
        p = tt.pooling()
        (p.setup_max_pooling if do_max else p.setup_avg_pooling)(wh, ww, sy, sx, py, px)
        p(dest, src)
        gin = resizable_tensor(gi(dest.shape))
        p.get_gradient(gin, dest, src, grad)
        return np.array(dest), np.array(grad)


@DTYPES
@pytest.mark.parametrize("do_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
def test_pooling(case, do_max, dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(case[0])
    g0 = rng.standard_normal(case[0])       # the backward ADDS to this
    gis = {}

    def gi(shape):
        return gis.setdefault(shape, np.random.default_rng(12).standard_normal(shape))

    with tt.force_cpu():
        want = _pool_run(case, do_max, dtype, x, gi, g0)
    got = _pool_run(case, do_max, dtype, x, gi, g0)
    _close(got[0], want[0], dtype, f"pooling forward {case}")
    _close(got[1], want[1], dtype, f"pooling backward {case}")


def test_max_pooling_ties_go_to_the_first_maximum():
    """After a ReLU many windows hold only zeros: dlib (and the CPU twin) sends such a
    window's gradient to its first pixel in row-major order. Strict on purpose: a failure
    here means cuDNN breaks ties differently and the twin needs its own kernel."""
    rng = np.random.default_rng(13)
    x = np.maximum(rng.standard_normal((2, 3, 8, 8)), 0)
    x[:, :, :4, :4] = 0
    case = ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0))
    g0 = np.zeros(x.shape)

    def gi(shape):
        return np.random.default_rng(14).standard_normal(shape)

    with tt.force_cpu():
        want = _pool_run(case, True, np.float32, x, gi, g0)
    got = _pool_run(case, True, np.float32, x, gi, g0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# ----------------------------------------------------------------------------------------
# handles: threads and streams

def test_one_handle_per_thread_and_results_agree():
    from dnnpy.tensor_tools.cuda import handles

    cases = CONV_CASES[:6]
    rng = np.random.default_rng(21)
    operands = [_conv_operands(c, rng) for c in cases]
    wants = []
    for x, w, dy, params in operands:
        y = resizable_tensor(*dy.shape)
        cpu.conv_forward(False, y, resizable_tensor(x.astype(np.float32)), resizable_tensor(w.astype(np.float32)), *params)
        wants.append(np.array(y))
    seen, errors, barrier = {}, [], threading.Barrier(len(cases), timeout=120)

    def work(i):
        try:
            x, w, dy, params = operands[i]
            barrier.wait()
            for _ in range(5):
                y = resizable_tensor(*dy.shape)
                _gpu().conv_forward(False, y, resizable_tensor(x.astype(np.float32)), resizable_tensor(w.astype(np.float32)), *params)
                _close(y, wants[i], np.float32, f"thread {i}")
            seen[i] = handles.handle()
            barrier.wait()  # all alive at once: a dead thread's handle is destroyed, its address reusable
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(seen.values())) == len(cases), "each thread has its own handle"


def test_non_default_stream():
    import cupy
    from dnnpy.tensor_tools.cuda import handles

    rng = np.random.default_rng(31)
    x, w, dy, params = _conv_operands(CONV_CASES[7], rng)
    yc = resizable_tensor(*dy.shape)
    dxc, dwc = resizable_tensor(*x.shape), resizable_tensor(*w.shape)
    f32 = [a.astype(np.float32) for a in (x, w, dy)]
    cpu.conv_forward(False, yc, resizable_tensor(f32[0]), resizable_tensor(f32[1]), *params)
    cpu.conv_backward_data(False, resizable_tensor(f32[2]), resizable_tensor(f32[1]), dxc, *params)
    cpu.conv_backward_filters(False, resizable_tensor(f32[2]), resizable_tensor(f32[0]), dwc, *params)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        xt, wt, dyt = (resizable_tensor(a) for a in f32)
        for t in (xt, wt, dyt):
            t.device_read()
        yg, dxg, dwg = resizable_tensor(*dy.shape), resizable_tensor(*x.shape), resizable_tensor(*w.shape)
        _gpu().conv_forward(False, yg, xt, wt, *params)
        _gpu().conv_backward_data(False, dyt, wt, dxg, *params)
        _gpu().conv_backward_filters(False, dyt, xt, dwg, *params)
        h = handles._local.handles[cupy.cuda.runtime.getDevice()]
        assert h.stream == stream.ptr != 0
        stream.synchronize()
    for got, want, name in ((yg, yc, "forward"), (dxg, dxc, "backward data"), (dwg, dwc, "backward filters")):
        _close(got, want, np.float32, f"{name} on a non-blocking stream")
    y2 = resizable_tensor(*dy.shape)
    _gpu().conv_forward(False, y2, xt, wt, *params)   # back on the default stream
    assert handles._local.handles[cupy.cuda.runtime.getDevice()].stream == cupy.cuda.get_current_stream().ptr
    _close(y2, yc, np.float32, "forward back on the default stream")
