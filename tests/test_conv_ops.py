"""tt.tensor_conv against naive float64 loops, both add_to_output values; the adjoint
identity between con_ and cont_; the layers' forward values against the oracles.

Tolerance: float32 GEMMs over at most C*R*S = 75 products of O(1) values accumulate
rounding of about 1e-6 relative; 1e-4 absolute on O(1)..O(10) results leaves a wide margin
while catching any indexing error (which is O(1))."""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import alias_tensor, con, cont, input_tensor, resizable_tensor

import reference

ATOL = 1e-4

CONFIGS = [  # (N, C, H, W, K, R, S, sy, sx, py, px)
    (2, 2, 7, 6, 3, 3, 3, 1, 1, 1, 1),
    (2, 3, 8, 8, 2, 1, 1, 1, 1, 0, 0),
    (1, 2, 9, 7, 2, 5, 5, 1, 1, 2, 2),
    (2, 2, 8, 9, 3, 4, 4, 2, 2, 0, 0),
    (2, 1, 9, 10, 2, 3, 5, 3, 2, 1, 2),
    (1, 2, 7, 7, 2, 5, 3, 2, 1, 2, 1),
    (2, 2, 6, 5, 2, 2, 4, 1, 3, 1, 0),
    (2, 2, 7, 8, 2, 2, 1, 3, 2, 1, 0),  # stride larger than the filter: a phase without taps
]


def _t(a):
    return resizable_tensor(np.asarray(a, np.float32))


@pytest.fixture(params=["windows", "im2col"])
def cpu_path(request, monkeypatch):
    """Both CPU paths on every configuration: small problems take the window view + one
    tensordot, larger ones the chunked im2col GEMMs (cpu/conv.py's SMALL_COLUMNS)."""
    import dnnpy.tensor_tools.cpu.conv as cpu_conv

    monkeypatch.setattr(cpu_conv, "SMALL_COLUMNS", 1 << 62 if request.param == "windows" else 0)
    return request.param


@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(c) for c in CONFIGS])
@pytest.mark.parametrize("add_to_output", [False, True])
def test_tensor_conv_matches_loops(cfg, add_to_output, rng, cpu_path):
    _matches_loops(cfg, add_to_output, rng)


def _matches_loops(cfg, add_to_output, rng):
    n, c, h, w, k, r, s, sy, sx, py, px = cfg
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    f = rng.standard_normal((k, c, r, s)).astype(np.float32)
    conv = tt.tensor_conv()
    xt, ft = _t(x), _t(f)
    conv.setup(xt, ft, sy, sx, py, px)
    expected = reference.conv2d(x, f, None, (sy, sx), (py, px))

    base = rng.standard_normal(expected.shape).astype(np.float32) if add_to_output else np.full(expected.shape, np.inf, np.float32)
    out = _t(base)
    conv(add_to_output, out, xt, ft)
    np.testing.assert_allclose(np.asarray(out), expected + (base if add_to_output else 0), atol=ATOL)

    g = rng.standard_normal(expected.shape).astype(np.float32)
    base_dx = rng.standard_normal(x.shape).astype(np.float32) if add_to_output else np.full(x.shape, np.inf, np.float32)
    dx = _t(base_dx)
    conv.get_gradient_for_data(add_to_output, _t(g), ft, dx)
    np.testing.assert_allclose(np.asarray(dx), reference.conv2d_data_grad(g, f, x.shape, (sy, sx), (py, px))
                               + (base_dx if add_to_output else 0), atol=ATOL)

    base_df = rng.standard_normal(f.shape).astype(np.float32) if add_to_output else np.full(f.shape, np.inf, np.float32)
    df = _t(base_df)
    conv.get_gradient_for_filters(add_to_output, _t(g), xt, df)
    np.testing.assert_allclose(np.asarray(df), reference.conv2d_filter_grad(x, g, f.shape, (sy, sx), (py, px))
                               + (base_df if add_to_output else 0), atol=ATOL)



@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_con_and_cont_layers_match_loops(cfg, rng):
    n, c, h, w, k, r, s, sy, sx, py, px = cfg
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    con_net = con[k, r, s, sy, sx, py, px, input_tensor]()
    out = con_net([x])
    d = con_net.layer_details()
    filters, biases = np.asarray(d.get_filters()), np.asarray(d.get_biases())
    biases = rng.standard_normal(biases.shape).astype(np.float32)
    d.get_biases().assign(biases)
    out = con_net([x])
    np.testing.assert_allclose(np.asarray(out), reference.conv2d(x, filters, biases.ravel(), (sy, sx), (py, px)), atol=ATOL)

    cont_net = cont[k, r, s, sy, sx, py, px, input_tensor]()
    out = cont_net([x])
    d = cont_net.layer_details()
    filters = np.asarray(d.get_filters())
    assert filters.shape == (c, k, r, s)  # cont_ filters are (k_in, num_filters, nr, nc)
    biases = rng.standard_normal((1, k, 1, 1)).astype(np.float32)
    d.get_biases().assign(biases)
    out = cont_net([x])
    assert out.shape == (n, k, sy * (h - 1) + r - 2 * py, sx * (w - 1) + s - 2 * px)
    np.testing.assert_allclose(np.asarray(out), reference.conv_transpose2d(x, filters, biases.ravel(), (sy, sx), (py, px)), atol=ATOL)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_adjoint_identity(cfg, rng, cpu_path):
    """<con(x), y> == <x, cont(y)> when cont_ uses con_'s filters and neither has a bias:
    the transposed convolution is the adjoint of the convolution."""
    n, c, h, w, k, r, s, sy, sx, py, px = cfg
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # cont's output has sy*(Ho-1)+R-2py rows, fewer than H when (H+2py-R) is not a multiple
    # of the stride (PyTorch's output_padding); zero the rows and columns of x beyond it, as
    # the adjoint of con restricted to cont's output size
    ho, wo = 1 + (h + 2 * py - r) // sy, 1 + (w + 2 * px - s) // sx
    x[:, :, sy * (ho - 1) + r - 2 * py:, :] = 0
    x[:, :, :, sx * (wo - 1) + s - 2 * px:] = 0
    con_net = con[k, r, s, sy, sx, py, px, input_tensor]()
    con_net.layer_details().disable_bias()
    cx = np.asarray(con_net([x]), np.float64)
    y = rng.standard_normal(cx.shape).astype(np.float32)

    cont_net = cont[c, r, s, sy, sx, py, px, input_tensor]()
    cont_net.layer_details().disable_bias()
    cont_net([y])  # allocates filters of shape (k, c, r, s): con_'s filters, read as cont_'s
    cont_net.layer_details().get_filters().assign(con_net.layer_details().get_filters())
    cty = np.asarray(cont_net([y]), np.float64)
    xs = x[:, :, :cty.shape[2], :cty.shape[3]].astype(np.float64)
    lhs = float(np.sum(cx * y))
    rhs = float(np.sum(xs * cty))
    assert lhs == pytest.approx(rhs, rel=1e-5, abs=1e-4)


def test_conv_checks_shapes():
    conv = tt.tensor_conv()
    x = resizable_tensor(2, 3, 8, 8)
    f = resizable_tensor(4, 2, 3, 3)
    with pytest.raises(ValueError, match=r"tensor_conv.setup.*k=2.*\(2, 3, 8, 8\)"):
        conv.setup(x, f, 1, 1, 1, 1)
    f = resizable_tensor(4, 3, 3, 3)
    conv.setup(x, f, 1, 1, 1, 1)
    wrong = resizable_tensor(2, 4, 7, 8)
    with pytest.raises(ValueError, match=r"tensor_conv.__call__: output\(2, 4, 7, 8\)"):
        conv(True, wrong, x, f)
    with pytest.raises(ValueError, match="padding"):
        conv.setup(x, f, 1, 1, 3, 1)
    with pytest.raises(ValueError, match="strides"):
        conv.setup(x, f, 0, 1, 0, 0)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_tensor_conv_in_one_sample_chunks(cfg, rng, monkeypatch):
    """With a tiny im2col budget every chunk is one sample: same results."""
    import dnnpy.tensor_tools.cpu.conv as cpu_conv

    monkeypatch.setattr(cpu_conv, "IM2COL_BYTES", 1)
    monkeypatch.setattr(cpu_conv, "SMALL_COLUMNS", 0)
    _matches_loops(cfg, False, rng)
    _matches_loops(cfg, True, rng)


def test_a_destination_sharing_memory_with_an_input_is_refused():
    conv = tt.tensor_conv()
    store = resizable_tensor(1, 1, 1, 2 * 2 * 5 * 5)
    data = alias_tensor(2, 2, 5, 5)(store, 0)
    filters = resizable_tensor(2, 2, 3, 3)
    conv.setup(data, filters, 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"tensor_conv.__call__: the destination.*shares memory with data"):
        conv(False, alias_tensor(2, 2, 5, 5)(store, 0), data, filters)
    with pytest.raises(ValueError, match=r"get_gradient_for_data: the destination.*gradient_input"):
        conv.get_gradient_for_data(True, data, filters, alias_tensor(2, 2, 5, 5)(store, 0))
    with pytest.raises(ValueError, match=r"get_gradient_for_filters: the destination.*data"):
        conv.get_gradient_for_filters(True, resizable_tensor(2, 2, 5, 5), data,
                                      alias_tensor(2, 2, 3, 3)(store, 0))
