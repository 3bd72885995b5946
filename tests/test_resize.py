"""tt.resize_bilinear / resize_bilinear_gradient against plain float64 loops (align corners,
dlib's convention), the adjoint identity, and the strided (sub-window) form."""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import alias_tensor, resizable_tensor
from dnnpy.tensor import default_dtype


def _reference(src, out_nr, out_nc):
    """Align-corners bilinear resize, one pixel at a time in float64."""
    n, k, nr, nc = src.shape
    out = np.zeros((n, k, out_nr, out_nc))
    ys = (nr - 1) / max(out_nr - 1, 1)
    xs = (nc - 1) / max(out_nc - 1, 1)
    for r in range(out_nr):
        y = r * ys
        top = int(np.floor(y)); bottom = min(top + 1, nr - 1); fy = y - top
        for c in range(out_nc):
            x = c * xs
            left = int(np.floor(x)); right = min(left + 1, nc - 1); fx = x - left
            out[:, :, r, c] = ((1 - fy) * ((1 - fx) * src[:, :, top, left] + fx * src[:, :, top, right])
                               + fy * ((1 - fx) * src[:, :, bottom, left] + fx * src[:, :, bottom, right]))
    return out


def _tensor(a):
    t = resizable_tensor(*a.shape)
    t.assign(a)
    return t


@pytest.mark.parametrize("src_shape,out_hw", [((2, 3, 5, 7), (9, 13)), ((1, 2, 8, 9), (3, 4)),
                                              ((1, 1, 1, 6), (4, 2)), ((2, 1, 37, 41), (20, 29)),
                                              ((1, 1, 4, 4), (4, 4))])
def test_forward_matches_reference(rng, src_shape, out_hw):
    src = rng.standard_normal(src_shape)
    expected = _reference(src, *out_hw)
    with default_dtype(np.float64):
        d = resizable_tensor(src_shape[0], src_shape[1], *out_hw)
        tt.resize_bilinear(d, _tensor(src))
        np.testing.assert_allclose(np.asarray(d), expected, rtol=0, atol=1e-12)
    # float32: dlib's float arithmetic, within float rounding of the float64 result
    d32 = resizable_tensor(src_shape[0], src_shape[1], *out_hw)
    tt.resize_bilinear(d32, _tensor(src.astype(np.float32)))
    np.testing.assert_allclose(np.asarray(d32), expected, rtol=0, atol=2e-5)


def test_gradient_is_adjoint_and_adds(rng):
    with default_dtype(np.float64):
        src = _tensor(rng.standard_normal((2, 3, 6, 5)))
        gi = _tensor(rng.standard_normal((2, 3, 11, 8)))
        out = resizable_tensor(2, 3, 11, 8)
        tt.resize_bilinear(out, src)
        grad = _tensor(np.full((2, 3, 6, 5), 0.5))
        tt.resize_bilinear_gradient(grad, gi)
        lhs = tt.dot(out, gi)
        rhs = float(np.sum((np.asarray(grad) - 0.5) * np.asarray(src)))
        assert abs(lhs - rhs) < 1e-10 * max(1.0, abs(lhs))


def test_strided_windows(rng):
    """Resize the top-left 3x4 window of each 5x6 plane into the bottom-right 4x4 window of
    each 6x7 plane; everything outside the destination windows is untouched."""
    big_src = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    src = _tensor(big_src)
    src_win = alias_tensor(1, 2, 3, 4)(src)
    dest = _tensor(np.full((1, 2, 6, 7), 7.0, np.float32))
    dest_win = alias_tensor(1, 2, 4, 4)(dest, 2 * 7 + 3)
    tt.resize_bilinear(dest_win, src_win, dest_row_stride=7, dest_channel_stride=42,
                       src_row_stride=6, src_channel_stride=30)
    got = np.asarray(dest)
    expected = _reference(big_src[:, :, :3, :4].astype(np.float64), 4, 4)
    np.testing.assert_allclose(got[:, :, 2:6, 3:7], expected, atol=2e-6)
    mask = np.ones(got.shape, bool)
    mask[:, :, 2:6, 3:7] = False
    assert np.all(got[mask] == 7.0)


def test_strided_forms_in_dlibs_positional_order_agree(rng):
    """dlib's ``resize_bilinear(dest, drs, dcs, src, srs, scs)`` = the keyword form; the same
    for the gradient (grad, its strides, gradient_input, its strides)."""
    src = _tensor(rng.standard_normal((1, 2, 5, 6)))
    a, b = (_tensor(np.full((1, 2, 6, 7), 7.0)) for _ in range(2))
    tt.resize_bilinear(alias_tensor(1, 2, 4, 4)(a, 3), 7, 42, alias_tensor(1, 2, 3, 4)(src), 6, 30)
    tt.resize_bilinear(alias_tensor(1, 2, 4, 4)(b, 3), alias_tensor(1, 2, 3, 4)(src),
                       dest_row_stride=7, dest_channel_stride=42, src_row_stride=6,
                       src_channel_stride=30)
    assert np.array_equal(np.asarray(a), np.asarray(b)) and not np.all(np.asarray(a) == 7)
    g1, g2 = (_tensor(np.zeros((1, 2, 5, 6))) for _ in range(2))
    gi = alias_tensor(1, 2, 4, 4)(a, 3)
    tt.resize_bilinear_gradient(alias_tensor(1, 2, 3, 4)(g1), 6, 30, gi, 7, 42)
    tt.resize_bilinear_gradient(alias_tensor(1, 2, 3, 4)(g2), gi, grad_row_stride=6,
                                grad_channel_stride=30, gradient_input_row_stride=7,
                                gradient_input_channel_stride=42)
    assert np.array_equal(np.asarray(g1), np.asarray(g2)) and np.asarray(g1).any()
    with pytest.raises(TypeError, match="resize_bilinear.*dlib's strided"):
        tt.resize_bilinear(a, 7, src)
    with pytest.raises(TypeError, match="given both"):
        tt.resize_bilinear(a, 7, 42, src, 6, 30, dest_row_stride=7)


def test_errors_name_the_op():
    with pytest.raises(ValueError, match="resize_bilinear"):
        tt.resize_bilinear(resizable_tensor(2, 3, 4, 4), resizable_tensor(2, 2, 4, 4))
    small = resizable_tensor(1, 1, 3, 3)
    with pytest.raises(ValueError, match="resize_bilinear: dest"):
        tt.resize_bilinear(small, resizable_tensor(1, 1, 2, 2), dest_row_stride=5, dest_channel_stride=20,
                           src_row_stride=2, src_channel_stride=4)


@pytest.mark.parametrize("h,w,oh,ow", [(50, 60, 20, 29), (480, 640, 400, 533), (7, 9, 30, 31), (5, 5, 3, 3)])
def test_float32_bit_exact_with_dlib(rng, h, w, oh, ow):
    """dlib's own resize_image (dlib-bin's Python bindings), when installed: identical bits."""
    dlib = pytest.importorskip("dlib")
    a = (rng.random((h, w)) * 2 - 1).astype(np.float32)
    src = _tensor(a[None, None])
    out = resizable_tensor(1, 1, oh, ow)
    tt.resize_bilinear(out, src)
    np.testing.assert_array_equal(np.asarray(out)[0, 0], dlib.resize_image(a, oh, ow))
