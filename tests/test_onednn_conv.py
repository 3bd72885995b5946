"""The oneDNN convolution (``tensor_tools/cpu/onednn/conv.py``) against the numpy twin.

Tolerances, relative to ``max|reference|``, in float32: each output element is a sum of
``C*R*S`` (forward, data gradient: ``K*R*S``) products, or for the filter and bias
gradients of ``N*Ho*Wo`` products, summed in a different order by the two paths; the
rounding error grows with the length of the sums, so 1e-5 for y/dx and 3e-5 for dw/db
(measured here: y, dx <= 4e-7; dw <= 1.2e-6, db <= 1.7e-6).
Both layouts (``DNNPY_ONEDNN_LAYOUT=any`` and ``plain``) run every pass; ``auto`` runs once.
"""

import numpy as np
import pytest

from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor
from dnnpy.tensor_tools.cpu import conv as cpu_conv
from dnnpy.tensor_tools.cpu import onednn
from dnnpy.tensor_tools.cpu.onednn import conv as oc

if not onednn.available():
    pytest.skip(f"oneDNN is not usable here: {onednn.info()['reason']}", allow_module_level=True)

TOL_Y, TOL_W = 1e-5, 3e-5

# (data shape, filter shape, stride (y, x), padding (y, x)); the data side is the conv's
# input: for cont_ it is the layer's output (cont_'s forward is the data gradient)
SHAPES = {
    "con 63->30 4x4 s2 p0, 3 channels": ((3, 3, 63, 63), (8, 3, 4, 4), (2, 2), (0, 0)),
    "con 3x3 s1 p1": ((2, 16, 10, 10), (8, 16, 3, 3), (1, 1), (1, 1)),
    "con 1x1": ((2, 5, 7, 6), (4, 5, 1, 1), (1, 1), (0, 0)),
    "con 5x3 s(2,1) p(2,1)": ((2, 4, 9, 11), (6, 4, 5, 3), (2, 1), (2, 1)),
    "cont 4x4 s2 p1 to 3 channels": ((2, 3, 16, 16), (16, 3, 4, 4), (2, 2), (1, 1)),
}


def _tensor(a):
    t = resizable_tensor(*a.shape)
    t.host()[...] = a
    return t


def _err(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def _pair(a):
    """Two tensors holding ``a``: the oneDNN one and the numpy one."""
    return _tensor(a), _tensor(a)


@pytest.fixture(params=["any", "plain"])
def layout(request, monkeypatch):
    monkeypatch.setenv(oc.LAYOUT_ENV, request.param)
    return request.param


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_pass_matches_numpy(name, layout):
    xs, ws, (sy, sx), (py, px) = SHAPES[name]
    n, c, h, w = xs
    k, _, r, s = ws
    ho, wo = 1 + (h + 2 * py - r) // sy, 1 + (w + 2 * px - s) // sx
    ys = (n, k, ho, wo)
    rng = np.random.default_rng(7)
    x, f, dy = (_tensor(rng.standard_normal(sh).astype(np.float32)) for sh in (xs, ws, ys))
    b = _tensor(rng.standard_normal((1, k, 1, 1)).astype(np.float32))
    conv = (sy, sx, py, px)
    for add in (False, True):
        # assigning: the destination is stale (NaN/inf) and must not leak
        start = (rng.standard_normal if add else lambda sh: np.full(sh, np.nan))
        for biases, relu in ((None, False), (b, False), (b, True)):
            y1, y2 = _pair(start(ys).astype(np.float32))
            assert oc.conv_forward(add, y1, x, f, *conv, biases, relu)
            with onednn.force_numpy():
                cpu_conv.conv_forward(add, y2, x, f, *conv, biases, relu)
            assert _err(y1.host(), y2.host()) < TOL_Y, (add, biases is not None, relu)
            if relu:
                assert y1.host().min() == 0
        dx1, dx2 = _pair(start(xs).astype(np.float32))
        if not add:
            dx1.host()[0, 0, 0, :2] = (np.inf, -np.inf)
        assert oc.conv_backward_data(add, dy, f, dx1, *conv)
        with onednn.force_numpy():
            cpu_conv.conv_backward_data(add, dy, f, dx2, *conv)
        assert _err(dx1.host(), dx2.host()) < TOL_Y, add
        for bias_grad in (False, True):
            dw1, dw2 = _pair(start(ws).astype(np.float32))
            db1, db2 = _pair(np.full((1, k, 1, 1), np.nan, np.float32))
            assert oc.conv_backward_filters(add, dy, x, dw1, *conv, db1 if bias_grad else None)
            with onednn.force_numpy():
                cpu_conv.conv_backward_filters(add, dy, x, dw2, *conv, db2 if bias_grad else None)
            assert _err(dw1.host(), dw2.host()) < TOL_W, (add, bias_grad)
            if bias_grad:
                assert _err(db1.host(), db2.host()) < TOL_W
                assert _err(db1.host().ravel(), dy.host().sum(axis=(0, 2, 3))) < TOL_W
            else:
                assert np.isnan(db1.host()).all()   # not asked for: untouched


def test_parameters_as_views_of_one_tensor(monkeypatch):
    """``con_`` keeps filters and biases in one params tensor: aliases at float offsets
    (not 64-byte aligned), the bias as a flat ``(K,)`` view."""
    monkeypatch.setenv(oc.LAYOUT_ENV, "auto")
    rng = np.random.default_rng(3)
    k, c = 6, 3
    params = _tensor(rng.standard_normal((1 + k * c * 9 + k, 1, 1, 1)).astype(np.float32))
    f = alias_tensor(k, c, 3, 3)(params, 1)
    b = alias_tensor(k)(params, 1 + k * c * 9)
    x = _tensor(rng.standard_normal((2, c, 8, 8)).astype(np.float32))
    y1, y2 = _pair(np.zeros((2, k, 8, 8), np.float32))
    assert oc.conv_forward(False, y1, x, f, 1, 1, 1, 1, b, True)
    with onednn.force_numpy():
        cpu_conv.conv_forward(False, y2, x, f, 1, 1, 1, 1, b, True)
    assert _err(y1.host(), y2.host()) < TOL_Y
    grads = _tensor(np.full(params.host().shape, np.nan, np.float32))
    dw, db = alias_tensor(k, c, 3, 3)(grads, 1), alias_tensor(k)(grads, 1 + k * c * 9)
    dy = _tensor(rng.standard_normal((2, k, 8, 8)).astype(np.float32))
    assert oc.conv_backward_filters(False, dy, x, dw, 1, 1, 1, 1, db)
    assert np.isnan(grads.host().ravel()[0])          # the neighbours are untouched
    assert _err(db.host().ravel(), dy.host().sum(axis=(0, 2, 3))) < TOL_W
    chosen = {kind for kind, _ in oc.chosen_layouts()}
    assert {"conv forward", "conv backward filters"} <= chosen
    assert set(oc.chosen_layouts().values()) <= {"any", "plain"}


def test_float64_and_forced_numpy_go_to_numpy():
    with default_dtype(np.float64):
        x, f = _tensor(np.ones((1, 2, 5, 5))), _tensor(np.ones((3, 2, 3, 3)))
        y = _tensor(np.zeros((1, 3, 3, 3)))
        assert x.host().dtype == np.float64
        assert not oc.conv_forward(False, y, x, f, 1, 1, 0, 0)
        assert not oc.conv_backward_data(False, y, f, x, 1, 1, 0, 0)
        assert not oc.conv_backward_filters(False, y, x, f, 1, 1, 0, 0)
    x32, f32, y32 = (_tensor(t.host().astype(np.float32)) for t in (x, f, y))
    with onednn.force_numpy():
        assert not oc.conv_forward(False, y32, x32, f32, 1, 1, 0, 0)
        assert not oc.conv_backward_data(False, y32, f32, x32, 1, 1, 0, 0)
        assert not oc.conv_backward_filters(False, y32, x32, f32, 1, 1, 0, 0)
    assert (y32.host() == 0).all()


class _View:
    """A duck-typed tensor over any numpy array (a non-contiguous view here)."""

    def __init__(self, a):
        self.a = a

    def host_read(self):
        return self.a

    host = host_write_only = host_read


def test_a_non_contiguous_view_falls_back():
    x = _View(np.ones((1, 2, 5, 10), np.float32)[..., ::2])
    f = _View(np.ones((3, 2, 3, 3), np.float32))
    y = _View(np.zeros((1, 3, 3, 3), np.float32))
    assert not oc.conv_forward(False, y, x, f, 1, 1, 0, 0)
    assert (y.a == 0).all()


def test_layout_variable_is_checked(monkeypatch):
    monkeypatch.setenv(oc.LAYOUT_ENV, "blocked")
    with pytest.raises(ValueError, match="DNNPY_ONEDNN_LAYOUT"):
        oc.layout_mode()
    monkeypatch.delenv(oc.LAYOUT_ENV)
    assert oc.layout_mode() == "auto"


def test_auto_layout_is_a_fixed_rule(monkeypatch):
    # plain (gemm) where a data gradient writes fewer than FEW_CHANNELS channels, any
    # elsewhere (a forward writing few channels too): the same layouts, hence the same
    # rounding, in every run
    monkeypatch.setenv(oc.LAYOUT_ENV, "auto")
    oc.clear_cache()
    x, f = _tensor(np.ones((2, 3, 9, 9), np.float32)), _tensor(np.ones((16, 3, 3, 3), np.float32))
    y, dx = _tensor(np.zeros((2, 16, 4, 4), np.float32)), _tensor(np.zeros((2, 3, 9, 9), np.float32))
    assert oc.conv_forward(False, y, x, f, 2, 2, 0, 0)
    assert oc.conv_backward_data(False, y, f, dx, 2, 2, 0, 0)
    geom = (2, 3, 9, 9, 16, 3, 3, 4, 4, 2, 2, 0, 0)
    chosen = oc.chosen_layouts()
    assert chosen[("conv forward", geom)] == "any"          # writes 16 channels
    assert chosen[("conv backward data", geom)] == "plain"  # writes 3 channels
    few = (2, 16, 9, 9, 3, 3, 3, 4, 4, 2, 2, 0, 0)
    x16, f3, y3 = (_tensor(np.ones(s, np.float32)) for s in ((2, 16, 9, 9), (3, 16, 3, 3), (2, 3, 4, 4)))
    assert oc.conv_forward(False, y3, x16, f3, 2, 2, 0, 0)
    assert (y3.host() == 144).all()
    assert oc.chosen_layouts()[("conv forward", few)] == "any"   # writes 3 channels, still any


def test_auto_takes_any_for_many_channels(monkeypatch):
    monkeypatch.setenv(oc.LAYOUT_ENV, "auto")
    x, f = _tensor(np.ones((1, 8, 6, 6), np.float32)), _tensor(np.ones((9, 8, 3, 3), np.float32))
    y = _tensor(np.zeros((1, 9, 4, 4), np.float32))
    assert oc.conv_forward(False, y, x, f, 1, 1, 0, 0)
    assert (y.host() == 72).all()
    assert oc.chosen_layouts()[("conv forward", (1, 8, 6, 6, 9, 3, 3, 4, 4, 1, 1, 0, 0))] == "any"


def test_fused_relu_keeps_nan():
    # oneDNN's ReLU post-op would turn a NaN into 0 and hide a diverging net
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    x[0, 2, 3, 3] = np.nan
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    b = rng.standard_normal((1, 16, 1, 1)).astype(np.float32)
    y = resizable_tensor(1, 16, 6, 6)
    assert cpu_conv.onednn.conv_forward(False, y, _tensor(x), _tensor(w), 1, 1, 1, 1, _tensor(b), True)
    out = y.numpy()
    assert np.isnan(out[0, :, 2:5, 2:5]).all() and not np.isnan(out[0, :, 0, 0]).any()
    assert (out[~np.isnan(out)] >= 0).all()
