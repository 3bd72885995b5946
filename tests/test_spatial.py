"""Spatial group: pooling, resampling/reshaping, reorg, transpose, extract, slice, concat,
inception; their tt ops against small float64 loop references, dlib's printed forms and
quirks, and bad-input errors."""

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import (avg_pool_, avg_pool_everything, concat2, concat3, concat_,
                   extract, extract_, flatten, inception2, inception3, input_tensor, iskip,
                   itag0, itag1, itag2, layer, max_pool, max_pool_, max_pool_everything, relu,
                   reorg, reorg_, reshape_to, reshape_to_, resize_prev_to_tagged,
                   resize_prev_to_tagged_, resize_to, resize_to_, slice_, tag1, tag2, transpose_,
                   upsample, upsample_)
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.parsing import net_type_from_string


def T(a):
    return resizable_tensor(np.asarray(a, dtype=np.float64))


def zeros_like(t):
    z = resizable_tensor()
    z.copy_size(t)
    z.fill(0)
    return z


@pytest.fixture(autouse=True)
def _float64():
    with default_dtype(np.float64):
        yield


# ----------------------------------------------------------------------------------------
# pooling: loop references (dlib cpu_dlib.cpp: window clipped to the image)

def _windows_ref(h, w, wh, ww, sy, sx, py, px):
    ho = 1 + (h + 2 * py - wh) // sy
    wo = 1 + (w + 2 * px - ww) // sx
    for r in range(ho):
        for c in range(wo):
            top, left = r * sy - py, c * sx - px
            rows = [y for y in range(top, top + wh) if 0 <= y < h]
            cols = [x for x in range(left, left + ww) if 0 <= x < w]
            yield r, c, rows, cols


def pool_ref(x, do_max, wh, ww, sy, sx, py, px):
    n, k, h, w = x.shape
    out = np.zeros((n, k, 1 + (h + 2 * py - wh) // sy, 1 + (w + 2 * px - ww) // sx))
    grads = []
    for r, c, rows, cols in _windows_ref(h, w, wh, ww, sy, sx, py, px):
        for s in range(n):
            for ch in range(k):
                vals = [(x[s, ch, y, xx], y, xx) for y in rows for xx in cols]
                if do_max:
                    best = vals[0]
                    for v in vals:       # first maximum in row-major order
                        if v[0] > best[0]:
                            best = v
                    out[s, ch, r, c] = best[0]
                    grads.append((s, ch, r, c, [(best[1], best[2], 1.0)]))
                else:
                    out[s, ch, r, c] = np.mean([v[0] for v in vals])
                    grads.append((s, ch, r, c, [(y, xx, 1.0 / len(vals)) for _, y, xx in vals]))
    return out, grads


def pool_grad_ref(x, gi, grads):
    g = np.zeros_like(x)
    for s, ch, r, c, taps in grads:
        for y, xx, wgt in taps:
            g[s, ch, y, xx] += wgt * gi[s, ch, r, c]
    return g


POOL_CONFIGS = [
    (3, 3, 2, 2, 0, 0), (3, 3, 1, 1, 1, 1), (2, 3, 2, 1, 1, 2), (2, 2, 2, 2, 1, 1),
    (4, 4, 1, 1, 0, 0), (5, 6, 1, 1, 0, 0), (5, 4, 3, 2, 2, 3),
]


@pytest.mark.parametrize("do_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("cfg", POOL_CONFIGS, ids=[str(c) for c in POOL_CONFIGS])
def test_pooling_matches_loop_reference(do_max, cfg):
    rng = np.random.default_rng(1)
    # few distinct values: many ties, so the first-maximum rule is exercised
    x = rng.integers(0, 4, (2, 3, 5, 6)).astype(np.float64)
    p = tt.pooling()
    (p.setup_max_pooling if do_max else p.setup_avg_pooling)(*cfg)
    assert p.does_max_pooling() == do_max
    dest = resizable_tensor()
    p(dest, T(x))
    ref, grads = pool_ref(x, do_max, *cfg)
    np.testing.assert_allclose(np.asarray(dest), ref, rtol=1e-12, atol=1e-12)
    gi = rng.standard_normal(ref.shape)
    grad = T(np.full(x.shape, 0.5))
    p.get_gradient(T(gi), dest, T(x), grad)          # ADDS
    np.testing.assert_allclose(np.asarray(grad), 0.5 + pool_grad_ref(x, gi, grads), atol=1e-12)


ASSIGN_CONFIGS = POOL_CONFIGS + [(2, 2, 2, 2, 0, 0), (2, 3, 3, 3, 0, 0), (1, 1, 2, 2, 0, 0)]


@pytest.mark.parametrize("do_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("cfg", ASSIGN_CONFIGS, ids=[str(c) for c in ASSIGN_CONFIGS])
def test_pooling_gradient_assign_writes_every_element(do_max, cfg):
    """``add_to=False`` on a NaN-filled grad: exactly the add path on zeros (windows that
    tile the image, leave gaps, overlap or reach into the padding), and the reference."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (2, 3, 6, 6)).astype(np.float64)
    p = tt.pooling()
    (p.setup_max_pooling if do_max else p.setup_avg_pooling)(*cfg)
    dest = resizable_tensor()
    p(dest, T(x))
    gi = T(rng.standard_normal(dest.shape))
    assigned = T(np.full(x.shape, np.nan))
    p.get_gradient(gi, dest, T(x), assigned, add_to=False)
    added = T(np.zeros(x.shape))
    p.get_gradient(gi, dest, T(x), added)
    np.testing.assert_array_equal(np.asarray(assigned), np.asarray(added))
    ref, grads = pool_ref(x, do_max, *cfg)
    np.testing.assert_allclose(np.asarray(added), pool_grad_ref(x, np.asarray(gi), grads), atol=1e-12)


@pytest.mark.parametrize("add_to", [True, False])
def test_max_pool_gradient_with_nan_input_and_inf_gradient(add_to):
    """A NaN window sends its gradient to its first pixel inside the image; an infinite
    gradient reaches only its window's maximum (never ``inf*0`` = NaN elsewhere)."""
    x = np.arange(2 * 6 * 6, dtype=np.float64).reshape(1, 2, 6, 6) % 7
    x[0, 0, 3, 3] = np.nan                        # window (1, 1) of 2x2 stride 2
    p = tt.pooling()
    p.setup_max_pooling(2, 2, 2, 2, 0, 0)
    dest = resizable_tensor()
    p(dest, T(x))
    gi = np.ones(dest.shape)
    gi[0, 1, 0, 0] = np.inf
    grad = T(np.zeros(x.shape) if add_to else np.full(x.shape, np.nan))
    p.get_gradient(T(gi), dest, T(x), grad, add_to=add_to)
    g = np.asarray(grad)
    assert g[0, 0, 2, 2] == 1.0 and g[0, 0, 3, 3] == 0.0     # first pixel of the NaN window
    _, grads = pool_ref(np.nan_to_num(x, nan=-1.0), True, 2, 2, 2, 2, 0, 0)
    want = pool_grad_ref(x, gi, grads)                        # the other windows as usual
    np.testing.assert_array_equal(g[0, 1], want[0, 1])        # inf at one pixel, no NaN
    assert np.isinf(g).sum() == 1 and not np.isnan(g).any()


def test_max_pool_ignores_padding_even_for_negative_and_inf_inputs():
    x = np.full((1, 1, 3, 3), -5.0)
    x[0, 0, 0, 0] = -np.inf
    p = tt.pooling()
    p.setup_max_pooling(3, 3, 1, 1, 1, 1)
    dest = resizable_tensor()
    p(dest, T(x))
    assert np.asarray(dest).max() == -5.0     # padding (zeros in cuDNN's sense) never wins
    gi = np.ones((1, 1, 3, 3))
    grad = zeros_like(T(x))
    p.get_gradient(T(gi), dest, T(x), grad)
    # every gradient lands inside the image: total preserved
    assert np.asarray(grad).sum() == pytest.approx(9.0)
    # a window of only -inf sends its gradient to its first pixel inside the image
    x2 = np.full((1, 1, 2, 2), -np.inf)
    p.setup_max_pooling(2, 2, 1, 1, 1, 1)
    p(dest, T(x2))
    grad = zeros_like(T(x2))
    p.get_gradient(T(np.ones(dest.shape)), dest, T(x2), grad)
    assert np.asarray(grad)[0, 0].tolist() == [[4.0, 2.0], [2.0, 1.0]]


def test_pooling_torch_oracle():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 9))
    for wh, ww, sy, sx, py, px in [(3, 3, 2, 2, 1, 1), (2, 4, 1, 2, 1, 2), (3, 3, 1, 1, 1, 1)]:
        tx = torch.tensor(x)
        p = tt.pooling()
        p.setup_max_pooling(wh, ww, sy, sx, py, px)
        d = resizable_tensor()
        p(d, T(x))
        ref = torch.nn.functional.max_pool2d(tx, (wh, ww), (sy, sx), (py, px))
        np.testing.assert_allclose(np.asarray(d), ref.numpy(), atol=1e-12)
        p.setup_avg_pooling(wh, ww, sy, sx, py, px)
        p(d, T(x))
        ref = torch.nn.functional.avg_pool2d(tx, (wh, ww), (sy, sx), (py, px), count_include_pad=False)
        np.testing.assert_allclose(np.asarray(d), ref.numpy(), atol=1e-12)


def test_pooling_errors():
    p = tt.pooling()
    with pytest.raises(ValueError, match="setup"):
        p(resizable_tensor(), T(np.zeros((1, 1, 4, 4))))
    with pytest.raises(ValueError, match="padding"):
        p.setup_max_pooling(3, 3, 1, 1, 3, 0)
    p.setup_avg_pooling(5, 5, 1, 1, 0, 0)
    with pytest.raises(ValueError, match=r"pooling: the 5x5 window does not fit in src\(1, 1, 4, 4\)"):
        p(resizable_tensor(), T(np.zeros((1, 1, 4, 4))))
    x = T(np.zeros((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="share memory"):
        p.setup_avg_pooling(2, 2, 2, 2, 0, 0)
        p(x, x)
    d = resizable_tensor()
    p(d, x)
    with pytest.raises(ValueError, match="get_gradient"):
        p.get_gradient(T(np.zeros((1, 1, 3, 3))), d, x, zeros_like(x))
    # an empty src gives an empty, zero-filled dest
    p(d, T(np.zeros((0, 2, 4, 4))))
    assert d.shape == (0, 2, 2, 2)


# ----------------------------------------------------------------------------------------
# reorg, transpose, copy_tensor

def reorg_ref(x, rs, cs):
    n, k, nr, nc = x.shape
    out = np.zeros((n, k * rs * cs, nr // rs, nc // cs))
    for s in range(n):
        for kk in range(out.shape[1]):
            for r in range(out.shape[2]):
                for c in range(out.shape[3]):
                    out[s, kk, r, c] = x[s, kk % k, r * rs + (kk // k) // cs, c * cs + (kk // k) % cs]
    return out


def test_reorg_and_gradient():
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 4))
    d = resizable_tensor(2, 18, 2, 2)
    tt.reorg(False, d, 3, 2, T(x))
    np.testing.assert_array_equal(np.asarray(d), reorg_ref(x, 3, 2))
    tt.reorg(True, d, 3, 2, T(x))
    np.testing.assert_array_equal(np.asarray(d), 2 * reorg_ref(x, 3, 2))
    g = T(np.ones(x.shape))
    tt.reorg_gradient(True, g, 3, 2, T(reorg_ref(x, 3, 2)))     # the inverse permutation
    np.testing.assert_array_equal(np.asarray(g), 1 + x)
    tt.reorg_gradient(False, g, 3, 2, T(reorg_ref(x, 3, 2)))
    np.testing.assert_array_equal(np.asarray(g), x)
    with pytest.raises(ValueError, match="reorg: src"):
        tt.reorg(False, d, 4, 2, T(x))
    with pytest.raises(ValueError, match="reorg_gradient: grad"):
        tt.reorg_gradient(False, T(np.zeros((2, 3, 6, 6))), 3, 2, d)


def test_transpose_op():
    x = np.arange(2 * 3 * 2 * 5, dtype=np.float64).reshape(2, 3, 2, 5)
    d = T(np.ones((2, 3, 5, 2)))
    tt.transpose(True, d, T(x))
    np.testing.assert_array_equal(np.asarray(d), 1 + x.transpose(0, 1, 3, 2))
    tt.transpose(False, d, T(x))
    np.testing.assert_array_equal(np.asarray(d), x.transpose(0, 1, 3, 2))
    with pytest.raises(ValueError, match=r"transpose: dest\(2, 3, 5, 2\) must be"):
        tt.transpose(False, d, d)


def test_copy_tensor_both_forms():
    rng = np.random.default_rng(4)
    src = rng.standard_normal((2, 5, 3, 4))
    dest = T(np.zeros((2, 4, 3, 4)))
    tt.copy_tensor(False, dest, 1, T(src), 2, 3)
    want = np.zeros((2, 4, 3, 4))
    want[:, 1:4] = src[:, 2:5]
    np.testing.assert_array_equal(np.asarray(dest), want)
    tt.copy_tensor(True, dest, 0, T(src), 0, 1)
    want[:, 0:1] += src[:, 0:1]
    np.testing.assert_array_equal(np.asarray(dest), want)
    # the 3-D block overload
    d3 = T(np.ones((2, 2, 4, 5)))
    tt.copy_tensor(True, d3, 1, 2, 1, T(src), 3, 0, 2, 1, 2, 2)
    want3 = np.ones((2, 2, 4, 5))
    want3[:, 1:2, 2:4, 1:3] += src[:, 3:4, 0:2, 2:4]
    np.testing.assert_array_equal(np.asarray(d3), want3)
    with pytest.raises(ValueError, match="does not fit in src"):
        tt.copy_tensor(False, dest, 0, T(src), 3, 3)
    with pytest.raises(ValueError, match="does not fit in dest"):
        tt.copy_tensor(False, d3, 0, 3, 0, T(src), 0, 0, 0, 1, 2, 2)
    with pytest.raises(ValueError, match="same num_samples, nr and nc"):
        tt.copy_tensor(False, d3, 0, T(src), 0, 1)
    with pytest.raises(TypeError, match="got 5 arguments"):
        tt.copy_tensor(False, dest, 0, T(src), 0)
    with pytest.raises(ValueError, match="share memory"):
        tt.copy_tensor(False, dest, 0, dest, 2, 1)


# ----------------------------------------------------------------------------------------
# layers: printed forms, constructor arguments, maps

def test_pool_layers_defaults_repr_xml_and_maps():
    mp = max_pool_(3, 3, 1, 1)
    assert (mp.padding_y(), mp.padding_x()) == (1, 1)           # stride 1: nr//2
    assert repr(mp) == "max_pool (nr=3, nc=3, stride_y=1, stride_x=1, padding_y=1, padding_x=1)"
    ap = avg_pool_(2, 4, 2, 1)
    assert (ap.padding_y(), ap.padding_x()) == (0, 2)           # stride 2: 0
    assert repr(ap) == "avg_pool (nr=2, nc=4, stride_y=2, stride_x=1, padding_y=0, padding_x=2)"
    assert ap.to_xml() == ("<avg_pool nr='2' nc='4' stride_y='2' stride_x='1' padding_y='0' "
                           "padding_x='2'/>\n")
    mp = max_pool_(3, 3, 2, 2, 1, 1)
    assert mp.map_input_to_output((5.0, 7.0)) == ((5 + 1 - 1) / 2, (7 + 1 - 1) / 2)
    assert mp.map_output_to_input((2.0, 3.0)) == (2 * 2 - 1 + 1, 3 * 2 - 1 + 1)
    assert mp.backward_needs_output and not hasattr(mp, "forward_inplace")


def test_pool_constructor_validation():
    with pytest.raises(ValueError, match="max_pool_: padding_y=3 must be smaller"):
        max_pool_(3, 3, 1, 1, 3, 0)
    with pytest.raises(ValueError, match="avg_pool_: padding_x must be 0"):
        avg_pool_(0, 0, 1, 1, 0, 1)
    with pytest.raises(ValueError, match="max_pool_: stride_x must be >= 1"):
        max_pool_(2, 2, 1, 0)
    with pytest.raises(TypeError, match="avg_pool_: nr must be an integer"):
        avg_pool_(2.5, 2, 1, 1)


def test_pool_everything_templates_and_net():
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5))
    net = max_pool_everything[input_tensor]()
    out = np.asarray(net([x]))
    np.testing.assert_allclose(out, x.max(axis=(2, 3), keepdims=True))
    net = avg_pool_everything[input_tensor]()
    np.testing.assert_allclose(np.asarray(net([x])), x.mean(axis=(2, 3), keepdims=True))
    assert repr(net.layer_details()).startswith("avg_pool (nr=0, nc=0, stride_y=1, stride_x=1")
    # backward through a net: the gradient of the global max goes to the argmax
    net = max_pool[2, 2, 2, 2, input_tensor]()
    out = net([x])
    gi = T(np.ones(out.shape))
    net.back_propagate_error(net.to_tensor([x]), gi)
    g = np.asarray(net.get_final_data_gradient())
    assert g.sum() == pytest.approx(out.size)
    assert g[:, :, :, 4].sum() == 0         # the last column is in no 2x2 window


def test_pool_layer_error_names_layer():
    net = max_pool[5, 5, 2, 2, input_tensor]()
    with pytest.raises(ValueError, match=r"max_pool \(nr=5.*window does not fit"):
        net([np.zeros((1, 1, 3, 3))])


def test_upsample_and_resize_to():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 2, 3, 4))
    u = upsample_(2, 3)
    assert repr(u) == "upsample\t (scale_y=2, scale_x=3)"
    assert repr(upsample[2, input_tensor]().layer_details()) == "upsample\t (scale_y=2, scale_x=2)"
    assert u.to_xml() == "<upsample scale_y='2' scale_x='3'/>\n"
    assert u.map_input_to_output((1.0, 2.0)) == (3.0, 4.0)
    assert u.map_output_to_input((3.0, 4.0)) == (1.0, 2.0)
    net = upsample[2, input_tensor]()
    out = net([x])
    want = resizable_tensor(2, 2, 6, 8)
    tt.resize_bilinear(want, T(x))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
    # align corners: the corner pixels are kept
    np.testing.assert_allclose(np.asarray(out)[:, :, [0, -1]][:, :, :, [0, -1]], x[:, :, [0, -1]][:, :, :, [0, -1]])
    r = resize_to_(5, 2)
    assert repr(r) == "resize_to (nr=5, nc=2)"
    assert r.to_xml() == "<resize_to nr='5' nc='2'/>\n"
    net = resize_to[5, 2, input_tensor]()
    assert net([x]).shape == (2, 2, 5, 2)
    d = net.layer_details()
    assert (d.scale_y, d.scale_x) == (5 / 3, 2 / 4)
    assert d.map_output_to_input((1.0, 5 / 3)) == (2.0, 1.0)
    with pytest.raises(ValueError, match="upsample_: scale_y must be >= 1"):
        upsample_(0)
    with pytest.raises(ValueError, match="resize_to_: NC must be >= 1"):
        resize_to_(2, 0)


def test_reshape_to_modes_and_flatten():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, 4, 3))
    net = reshape_to[3, 2, 4, input_tensor]()
    np.testing.assert_array_equal(np.asarray(net([x])), x.reshape(2, 3, 2, 4))
    d = net.layer_details()
    assert repr(d) == "reshape_to (k=3, nr=2, nc=4, mode=pure_reshape)"
    assert (d.input_k, d.input_nr, d.input_nc, d.needs_rescale) == (2, 4, 3, False)
    assert d.map_input_to_output((3.0, 4.0)) == (3.0 * 4 / 3, 4.0 * 2 / 4)
    # same k, other element count: bilinear spatial rescale
    net = reshape_to[-1, 8, 6, input_tensor]()
    out = net([x])
    want = resizable_tensor(2, 2, 8, 6)
    tt.resize_bilinear(want, T(x))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
    assert repr(net.layer_details()) == "reshape_to (k=2, nr=8, nc=6, mode=spatial_rescale)"
    assert net.layer_details().to_xml() == "<reshape_to k='2' nr='8' nc='6' mode='spatial_rescale'/>\n"
    # other k and other count: error naming the layer
    with pytest.raises(ValueError, match="reshape_to_: cannot reshape 24 elements"):
        reshape_to[5, 1, 1, input_tensor]()([x])
    with pytest.raises(ValueError, match="reshape_to_: k must be positive or -1"):
        reshape_to_(0)
    # flatten<k,nr,nc> is reshape_to_<k*nr*nc,1,1> (its arguments are the input's dims)
    net = flatten[2, 4, 3, input_tensor]()
    np.testing.assert_array_equal(np.asarray(net([x])), x.reshape(2, 24, 1, 1))
    assert repr(net.layer_details()) == "reshape_to (k=24, nr=1, nc=1, mode=pure_reshape)"
    # backward of the pure reshape ADDS the reshaped gradient
    gi = rng.standard_normal((2, 24, 1, 1))
    net.back_propagate_error(net.to_tensor([x]), T(gi))
    np.testing.assert_array_equal(np.asarray(net.get_final_data_gradient()), gi.reshape(x.shape))


def test_reorg_transpose_layers():
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 6))
    net = reorg[input_tensor]()
    np.testing.assert_array_equal(np.asarray(net([x])), reorg_ref(x, 2, 2))
    d = net.layer_details()
    assert repr(d) == "reorg\t (row_stride=2, col_stride=2)"
    assert d.to_xml() == "<reorg row_stride='2' col_stride='2'/>\n"
    assert d.map_input_to_output((4.0, 6.0)) == (2.0, 3.0)
    assert d.map_output_to_input((2.0, 3.0)) == (4.0, 6.0)
    with pytest.raises(ValueError, match=r"reorg_: input\(1, 1, 3, 4\) rows/columns"):
        reorg[input_tensor]()([np.zeros((1, 1, 3, 4))])
    with pytest.raises(ValueError, match="reorg_: row_stride must be >= 1"):
        reorg_(0, 2)
    t = transpose_()
    assert repr(t) == "transpose" and t.to_xml() == "<transpose />\n"
    assert t.map_input_to_output((1.0, 2.0)) == (2.0, 1.0)


def test_extract_and_slice():
    x = np.random.default_rng(9).standard_normal((2, 3, 2, 2))
    net = extract[5, 2, 1, 3, input_tensor]()
    np.testing.assert_array_equal(np.asarray(net([x])), x.reshape(2, -1)[:, 5:11].reshape(2, 2, 1, 3))
    assert repr(net.layer_details()) == "extract\t (offset=5, k=2, nr=1, nc=3)"
    assert net.layer_details().to_xml() == "<extract offset='5' k='2' nr='1' nc='3'/>\n"
    with pytest.raises(ValueError, match="extract_: 6 values at offset 7 do not fit"):
        extract[7, 2, 1, 3, input_tensor]()([x])
    with pytest.raises(ValueError, match="extract_: k must be >= 1"):
        extract_(0, 0, 1, 1)
    s = slice_(1, 0, 1, 2, 2, 1)
    # dlib prints the three offsets without separators, and labels offset_nc as offset_nr in XML
    assert repr(s) == "slice\t (offset_k=1offset_nr=0offset_nc=1, k=2, nr=2, nc=1)"
    assert s.to_xml() == "<slice offset_k='1' offset_nr='0' offset_nr='1' k='2' nr='2' nc='1'/>\n"
    net = dnnpy.slice[1, 0, 1, 2, 2, 1, input_tensor]()
    np.testing.assert_array_equal(np.asarray(net([x])), x[:, 1:3, 0:2, 1:2])
    with pytest.raises(ValueError, match="slice_: the block"):
        dnnpy.slice[2, 0, 0, 2, 1, 1, input_tensor]()([x])


def test_concat_in_a_net_and_printing():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 2, 3, 3))
    net_type = concat2[tag1, tag2, tag1[relu[tag2[input_tensor]]]]
    net = net_type()
    out = np.asarray(net([x]))
    np.testing.assert_array_equal(out, np.concatenate([np.maximum(x, 0), x], axis=1))
    assert repr(net.layer_details()) == "concat\t (1,2)"
    assert net.layer_details().to_xml() == "<concat tags='1,2'/>\n"
    assert net.layer_details().tag_count() == 2
    gi = rng.standard_normal(out.shape)
    net.back_propagate_error(net.to_tensor([x]), T(gi))
    want = gi[:, 2:] + gi[:, :2] * (x > 0)
    np.testing.assert_allclose(np.asarray(net.get_final_data_gradient()), want, atol=1e-12)
    assert net_type_from_string(repr(net_type)) is net_type
    with pytest.raises(TypeError, match="concat3 takes 3 tags"):
        concat3[tag1, tag2, tag1[input_tensor]]
    with pytest.raises(TypeError, match="concat_: expected a tag template"):
        concat_(tag1, 3)
    bad = concat2[tag1, tag2, tag1[max_pool[2, 2, 2, 2, tag2[input_tensor]]]]()
    with pytest.raises(ValueError, match="concat_: the tagged outputs must agree"):
        bad([np.zeros((1, 1, 4, 4))])


def test_inception_composition():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 4, 4))
    b1 = lambda s: relu[s]                               # noqa: E731 (a dlib using-alias)
    b2 = max_pool[3, 3, 1, 1, dnnpy.SUBNET]              # a net type over SUBNET
    net_type = inception2[b1, b2, input_tensor]
    assert net_type is concat2[itag1, itag2, itag1[relu[iskip[itag2[max_pool[3, 3, 1, 1,
                                                                               itag0[input_tensor]]]]]]]
    net = net_type()
    out = np.asarray(net([x]))
    pooled = pool_ref(x, True, 3, 3, 1, 1, 1, 1)[0]
    np.testing.assert_allclose(out, np.concatenate([np.maximum(x, 0), pooled], axis=1))
    text = str(net)
    assert "concat\t (1001,1002)" in text and "skip1000" in text and "tag1000" in text
    assert net_type_from_string(repr(net_type)) is net_type
    # backward: both branches send their gradient to the block's input
    gi = rng.standard_normal(out.shape)
    net.back_propagate_error(net.to_tensor([x]), T(gi))
    grads = pool_ref(x, True, 3, 3, 1, 1, 1, 1)[1]
    want = gi[:, :3] * (x > 0) + pool_grad_ref(x, gi[:, 3:], grads)
    np.testing.assert_allclose(np.asarray(net.get_final_data_gradient()), want, atol=1e-12)
    three = inception3[b1, b1, b2, input_tensor]()
    assert three([x]).shape == (2, 9, 4, 4)
    with pytest.raises(TypeError, match="inception2"):
        inception2[b1, input_tensor]


def test_resize_prev_to_tagged():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 2, 4, 4))
    net = resize_prev_to_tagged[tag1, max_pool[2, 2, 2, 2, tag1[input_tensor]]]()
    out = np.asarray(net([x]))
    pooled = resizable_tensor(np.asarray(layer(net, 1).get_output()))
    want = resizable_tensor(2, 2, 4, 4)
    tt.resize_bilinear(want, pooled)
    np.testing.assert_array_equal(out, np.asarray(want))
    d = net.layer_details()
    assert repr(d) == "resize_prev_to_tagged1"
    assert d.to_xml() == "<resize_prev_to_tagged tag='1'/>\n"
    assert d.map_input_to_output((1.5, 2.5)) == (1.5, 2.5)
    # backward: the resize path ADDS resize_bilinear_gradient to the subnet's gradient
    gi = rng.standard_normal(out.shape)
    sub_grad = T(np.ones((2, 2, 2, 2)))
    expect = T(np.ones((2, 2, 2, 2)))
    tt.resize_bilinear_gradient(expect, T(gi))

    class _sub:
        def get_gradient_input(self):
            return sub_grad

    d.backward(T(gi), _sub(), resizable_tensor())
    np.testing.assert_allclose(np.asarray(sub_grad), np.asarray(expect), atol=1e-12)
    with pytest.raises(TypeError, match="resize_prev_to_tagged_: expected a tag template"):
        resize_prev_to_tagged_(relu)


def test_spatial_layers_are_parameterless_and_out_of_place():
    for d in (max_pool_(2, 2, 2, 2), avg_pool_(2, 2, 2, 2), upsample_(2), resize_to_(2, 2),
              reshape_to_(), reorg_(), transpose_(), extract_(0, 1, 1, 1), slice_(0, 0, 0, 1, 1, 1),
              concat_(tag1), resize_prev_to_tagged_(tag1)):
        assert d.get_layer_params().size() == 0
        assert not hasattr(d, "forward_inplace")
