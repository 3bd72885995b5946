"""CPU twin of bilinear resampling (numpy), reproducing dlib's ``resize_image`` arithmetic.

dlib's float-image ``resize_image`` handles the columns of each output row four at a time
with SSE floats (positions accumulated in float32), then finishes the row with a scalar
loop in double precision. Both regimes are reproduced, vectorised over every plane and row,
so pyramids and resized feature maps agree with dlib's to within float rounding of the
final sum.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided
from .._twins import twin_ops

__all__ = twin_ops("resize")


def _planes(t, row_stride, channel_stride, writable):
    """``(num_samples*k, nr, nc)`` view of t's planes with the given element strides."""
    flat = t.host_strided_base(writable)
    item = flat.itemsize
    view = as_strided(flat, shape=(t.num_samples() * t.k(), t.nr(), t.nc()),
                      strides=(channel_stride * item, row_stride * item, item), writeable=writable)
    return view


def _rows(in_nr, out_nr):
    """Top/bottom source rows and the double-precision fraction of each output row."""
    y_scale = (in_nr - 1) / max(out_nr - 1, 1)
    # dlib accumulates y += y_scale in double, starting from -y_scale
    y = np.cumsum(np.full(out_nr, y_scale)) - y_scale if out_nr else np.zeros(0)
    top = np.floor(y).astype(np.int64)
    bottom = np.minimum(top + 1, in_nr - 1)
    return top, bottom, y - top


def _columns(in_nc, out_nc, emulate_simd):
    """Split the output columns into dlib's SIMD prefix and scalar tail.

    Returns ``(n_simd, left, right, lr_frac32 for the prefix, lr_frac for the tail)``.
    Without ``emulate_simd`` (float64 tensors, which dlib does not have) every column takes
    the double-precision path.
    """
    x_scale = (in_nc - 1) / max(out_nc - 1, 1)
    blocks = (out_nc + 3) // 4 + 1 if emulate_simd else 0
    lanes0 = np.array([-4 * x_scale + j * x_scale for j in range(4)]).astype(np.float32)
    steps = np.empty((blocks + 1, 4), np.float32)
    steps[0] = lanes0
    steps[1:] = np.float32(4 * x_scale)
    xs = np.cumsum(steps, axis=0, dtype=np.float32)[1:]          # float32 sums, in order
    left = np.trunc(xs).astype(np.int64)                          # simd4i(float) truncates
    ok = left[:, 3] + 1 < in_nc                                   # dlib breaks at the first block that fails
    n_blocks = int(np.argmin(ok)) if not ok.all() else blocks
    n_simd = min(4 * n_blocks, out_nc)
    simd_x = xs[:n_blocks].reshape(-1)[:n_simd]
    simd_left = left[:n_blocks].reshape(-1)[:n_simd]
    simd_frac = simd_x - simd_left.astype(np.float32)
    # scalar tail: x = -x_scale + c*x_scale, then x += x_scale per column, in double
    tail = out_nc - n_simd
    if tail:
        x0 = -x_scale + n_simd * x_scale
        tail_x = x0 + np.cumsum(np.full(tail, x_scale))
    else:
        tail_x = np.zeros(0)
    tail_left = np.floor(tail_x).astype(np.int64)
    tail_frac = (tail_x - tail_left).astype(np.float32 if emulate_simd else np.float64)
    all_left = np.concatenate([simd_left, tail_left])
    right = np.minimum(all_left + 1, in_nc - 1)
    return n_simd, all_left, right, simd_frac, tail_frac


def resize_bilinear(dest, dest_row_stride, dest_channel_stride, src, src_row_stride, src_channel_stride):
    planes_out = _planes(dest, dest_row_stride, dest_channel_stride, True)
    planes_in = _planes(src, src_row_stride, src_channel_stride, False)
    p, out_nr, out_nc = planes_out.shape
    in_nr, in_nc = planes_in.shape[1:]
    if planes_out.size == 0 or planes_in.size == 0:
        return
    dt = planes_out.dtype.type
    top, bottom, tb = _rows(in_nr, out_nr)
    n_simd, left, right, simd_frac, tail_frac = _columns(in_nc, out_nc, dt is np.float32)

    rows_t, rows_b = planes_in[:, top, :], planes_in[:, bottom, :]
    if n_simd:
        l, r = left[:n_simd], right[:n_simd]
        lr = simd_frac.astype(dt)
        inv_lr = dt(1) - lr
        tbf = tb.astype(dt)[:, None]
        inv_tb = (1 - tb).astype(dt)[:, None]      # 1 - tb_frac in double, then to float
        out = (inv_tb * inv_lr) * rows_t[:, :, l]
        out += (inv_tb * lr) * rows_t[:, :, r]
        out += (tbf * inv_lr) * rows_b[:, :, l]
        out += (tbf * lr) * rows_b[:, :, r]
        planes_out[:, :, :n_simd] = out
    if n_simd < out_nc:
        l, r = left[n_simd:], right[n_simd:]
        lr = tail_frac.astype(dt)
        inv_lr = dt(1) - lr
        upper = inv_lr * rows_t[:, :, l] + lr * rows_t[:, :, r]
        lower = inv_lr * rows_b[:, :, l] + lr * rows_b[:, :, r]
        temp = (1 - tb)[:, None] * upper.astype(np.float64) + tb[:, None] * lower.astype(np.float64)
        planes_out[:, :, n_simd:] = temp


def _weights(in_n, out_n, dtype):
    """``(out_n, in_n)`` interpolation matrix. Positions are computed in the tensor's dtype:
    float32 as dlib's gradient does, float64 exactly (so float64 checks see the adjoint)."""
    scale = dtype(in_n - 1) / dtype(max(out_n - 1, 1))
    pos = np.arange(out_n, dtype=dtype) * scale
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, in_n - 1)
    frac = pos - lo.astype(dtype)
    w = np.zeros((out_n, in_n), dtype)
    idx = np.arange(out_n)
    np.add.at(w, (idx, lo), 1 - frac)
    np.add.at(w, (idx, hi), frac)
    return w


def resize_bilinear_gradient(grad, grad_row_stride, grad_channel_stride,
                             gradient_input, gradient_input_row_stride, gradient_input_channel_stride):
    g = _planes(grad, grad_row_stride, grad_channel_stride, True)
    gi = _planes(gradient_input, gradient_input_row_stride, gradient_input_channel_stride, False)
    if g.size == 0 or gi.size == 0:
        return
    wy = _weights(g.shape[1], gi.shape[1], g.dtype.type)
    wx = _weights(g.shape[2], gi.shape[2], g.dtype.type)
    g += wy.T @ gi @ wx
