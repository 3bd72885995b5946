"""CUDA twin of bilinear resampling: dlib's ``_cuda_resize_bilinear`` kernels (cuda_dlib.cu).

Same names and signatures as ``cpu/resize.py``. The GPU arithmetic is dlib's GPU arithmetic,
NOT the CPU twin's: dlib's CPU ``resize_image`` accumulates positions (SIMD float32 lanes,
then a double-precision tail), while its CUDA kernel computes each position directly as
``r * y_scale`` in float with ``y_scale = (src.nr-1) / (float)max(dest.nr-1, 1)``. So the
two backends agree only to float rounding of the positions: for planes of size up to a few
hundred and values of order 1 the difference is below ``1e-5`` (tests: ``atol=1e-5``,
``rtol=1e-5`` in float32). Under float64 the kernels run in double.

The gradient scatters each ``gradient_input`` element to its four source pixels with
``atomicAdd`` (ADDING to grad), so its float32 result also depends on the order the
atomics land in: not bit-reproducible run to run, equal to the CPU within the same
tolerance. Double ``atomicAdd`` needs compute capability >= 6.0.

One kernel serves both of dlib's forms: the contiguous form is the strided one with
``row_stride = nc`` and ``channel_stride = nr*nc``. With explicit strides the planes are
windows of a larger storage starting at the tensor's first element (the dispatcher has
checked that they fit), so the kernels address the storage, not the tensor's window.
"""

from __future__ import annotations

import cupy
import numpy as np
from .._twins import twin_ops

__all__ = twin_ops("resize")

# One thread per destination element i: plane = i / (dnr*dnc), (r, c) inside the plane.
_POSITION = """
    const long long idx = i % dplane;
    const long long plane = i / dplane;
    const long long r = idx / dnc;
    const long long c = idx % dnc;

    const T y = r * y_scale;
    const long long top = (long long)floor(y);
    const long long bottom = top + 1 < snr - 1 ? top + 1 : snr - 1;
    const T tb_frac = y - top;

    const T x = c * x_scale;
    const long long left = (long long)floor(x);
    const long long right = left + 1 < snc - 1 ? left + 1 : snc - 1;
    const T lr_frac = x - left;

    const long long sbase = plane * schan;
    const long long dpos = plane * dchan + r * drow + c;
"""

_PARAMS = ("int64 dplane, int64 dnc, int64 drow, int64 dchan, "
           "int64 snr, int64 snc, int64 srow, int64 schan, T x_scale, T y_scale")

_resize_kernel = cupy.ElementwiseKernel(
    "raw T s, " + _PARAMS,
    "raw T d",
    _POSITION + """
    const T tl = s[sbase + top * srow + left];
    const T tr = s[sbase + top * srow + right];
    const T bl = s[sbase + bottom * srow + left];
    const T br = s[sbase + bottom * srow + right];
    d[dpos] = (1 - tb_frac) * ((1 - lr_frac) * tl + lr_frac * tr)
            + tb_frac * ((1 - lr_frac) * bl + lr_frac * br);
    """,
    "dnnpy_resize_bilinear")

# Here "d" is gradient_input (read, one thread per element) and "s" is grad (scattered to).
_resize_gradient_kernel = cupy.ElementwiseKernel(
    "raw T d, " + _PARAMS,
    "raw T s",
    _POSITION + """
    const T tmp = d[dpos];
    atomicAdd(&s[sbase + top * srow + left], tmp * (1 - tb_frac) * (1 - lr_frac));
    atomicAdd(&s[sbase + top * srow + right], tmp * (1 - tb_frac) * lr_frac);
    atomicAdd(&s[sbase + bottom * srow + left], tmp * tb_frac * (1 - lr_frac));
    atomicAdd(&s[sbase + bottom * srow + right], tmp * tb_frac * lr_frac);
    """,
    "dnnpy_resize_bilinear_gradient")


def _contiguous(t, row_stride, channel_stride):
    return row_stride == t.nc() and channel_stride == t.nr() * t.nc()


def _storage_from(t, writable):
    """The flat device storage of t from its first element on (for strided windows);
    writing marks the host copy stale. The storage is synced first, so elements outside
    the windows keep their values."""
    return t.device_strided_base(writable)


def _scales(dtype, in_nr, in_nc, out_nr, out_nc):
    """dlib's ``(in-1) / (float)max(out-1, 1)``, in the tensor's dtype."""
    dt = np.dtype(dtype).type
    return dt(in_nc - 1) / dt(max(out_nc - 1, 1)), dt(in_nr - 1) / dt(max(out_nr - 1, 1))


def resize_bilinear(dest, dest_row_stride, dest_channel_stride, src, src_row_stride, src_channel_stride):
    if dest.size() == 0 or src.size() == 0:
        return
    s = (src.device_read().reshape(-1) if _contiguous(src, src_row_stride, src_channel_stride)
         else _storage_from(src, False))
    if _contiguous(dest, dest_row_stride, dest_channel_stride):
        d = dest.device_write_only().reshape(-1)   # every element is written
    else:
        d = _storage_from(dest, True)
    x_scale, y_scale = _scales(d.dtype, src.nr(), src.nc(), dest.nr(), dest.nc())
    _resize_kernel(s, dest.nr() * dest.nc(), dest.nc(), dest_row_stride, dest_channel_stride,
                   src.nr(), src.nc(), src_row_stride, src_channel_stride, x_scale, y_scale, d,
                   size=dest.size())


def resize_bilinear_gradient(grad, grad_row_stride, grad_channel_stride,
                             gradient_input, gradient_input_row_stride, gradient_input_channel_stride):
    if grad.size() == 0 or gradient_input.size() == 0:
        return
    gi = (gradient_input.device_read().reshape(-1)
          if _contiguous(gradient_input, gradient_input_row_stride, gradient_input_channel_stride)
          else _storage_from(gradient_input, False))
    # ADDS to grad: its old contents are needed either way
    g = (grad.device().reshape(-1) if _contiguous(grad, grad_row_stride, grad_channel_stride)
         else _storage_from(grad, True))
    x_scale, y_scale = _scales(g.dtype, grad.nr(), grad.nc(), gradient_input.nr(), gradient_input.nc())
    _resize_gradient_kernel(gi, gradient_input.nr() * gradient_input.nc(), gradient_input.nc(),
                            gradient_input_row_stride, gradient_input_channel_stride,
                            grad.nr(), grad.nc(), grad_row_stride, grad_channel_stride,
                            x_scale, y_scale, g, size=gradient_input.size())
