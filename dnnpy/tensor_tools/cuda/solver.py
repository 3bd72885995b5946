"""CUDA twin of the solver ops: one fused kernel each over an element range of flat tensors.

Same names and signatures as ``cpu/solver.py``. The arithmetic is dlib's (``_cuda_compute_adam_update``
and ``_cuda_affine_transform_range`` in ``cuda_dlib.cu``) in the tensor's dtype, with Adam's
``alpha`` formed in double on the host and then rounded to the dtype, as the CPU twin does.
The GPU may contract products and sums into FMAs, so results match the CPU to a few ulps,
not bit for bit (tests: ``rtol=1e-5`` in float32).
"""

from __future__ import annotations

import math

import cupy
from .._twins import twin_ops

__all__ = twin_ops("solver")

_affine_range = cupy.ElementwiseKernel(
    "T s1, T s2, T s3, T A, T B, T C", "T d", "d = A * s1 + B * s2 + C * s3",
    "dnnpy_affine_transform_range")

# m and v are read and written; s is only written (its old contents are never read).
_adam = cupy.ElementwiseKernel(
    "T p, T pg, T alpha, T weight_decay, T momentum1, T momentum2",
    "T s, T m, T v",
    """
    const T g = weight_decay * p + pg;
    m = momentum1 * m + (1 - momentum1) * g;
    v = momentum2 * v + (1 - momentum2) * g * g;
    s = -alpha * m / (sqrt(v) + (T)1e-8);
    """,
    "dnnpy_compute_adam_update")


def _range(t, begin, end, write=False):
    """Flat ``[begin, end)`` device view of t (``device()`` when written: the elements
    outside the range must survive, so the host copy is synced first if it is newer)."""
    return (t.device() if write else t.device_read()).reshape(-1)[begin:end]


def _copy_if_overlapping(dest, src, a):
    # an identical window is fine element-wise; a shifted overlap would race
    if src is not dest and dest.overlaps_elsewhere(src):
        return a.copy()
    return a


def affine_transform_range(begin, end, dest, src1, src2, src3, A, B, C):
    if begin == end:
        return
    srcs = [_copy_if_overlapping(dest, s, _range(s, begin, end)) for s in (src1, src2, src3)]
    out = _range(dest, begin, end, write=True)
    dt = out.dtype.type
    _affine_range(*srcs, dt(A), dt(B), dt(C), out)


def compute_adam_update(begin, end, s, m, v, t, learning_rate, weight_decay, momentum1, momentum2,
                        params, params_grad):
    if begin == end:
        return
    p = _range(params, begin, end)
    pg = _range(params_grad, begin, end)
    mm = _range(m, begin, end, write=True)
    vv = _range(v, begin, end, write=True)
    ss = _range(s, begin, end, write=True)
    dt = ss.dtype.type
    alpha = dt(learning_rate * math.sqrt(1 - momentum2 ** t) / (1 - momentum1 ** t))
    _adam(p, pg, alpha, dt(weight_decay), dt(momentum1), dt(momentum2), ss, mm, vv)
