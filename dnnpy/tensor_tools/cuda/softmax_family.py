"""CUDA twin of ``dnnpy.tensor_tools.softmax_family`` (CuPy): the softmax family. Same names,
signatures and assign/add semantics as ``cpu/softmax_family.py``; numerics as
``activations.py`` explains (no FMA contraction, sums in double).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from .._twins import twin_ops
from ._kernels import _ew, _grad_kernel, _out, _read, _red, _sum_prod

__all__ = twin_ops("softmax_family")

CHANNEL_WISE, PLANE_WISE = 0, 1


# ----------------------------------------------------------------------------------------
# softmax family: groups are axis 1 of a 3-D view (CHANNEL_WISE (n, k, nr*nc); PLANE_WISE
# (n*k*nr, nc, 1); softmax_all (n, k*nr*nc, 1))

_exp_sum = _red("T x, T m", "(double)exp(x - m)", "softmax_exp_sum")
# zero_neg_inf: dlib's PLANE_WISE rule, a row whose max is -inf (all -inf) gives 0
_softmax_out = _ew("T x, T m, T s, int32 zero_neg_inf", "T y",
                   "y = (zero_neg_inf && isinf(m) && m < (T)0) ? (T)0 : exp(x - m) / s;",
                   "softmax_out")
_softmax_g = _grad_kernel("T gi, T d, T s", "T v = d * (gi - s);", "softmax_grad")


def _groups(t, a, mode):
    n, k, nr, nc = t.shape
    if mode == CHANNEL_WISE:
        return a.reshape(n, k, nr * nc)
    return a.reshape(n * k * nr, nc, 1)


def _softmax(x3, y3, zero_neg_inf):
    if x3.size == 0:
        return
    m = cp.max(x3, axis=1, keepdims=True)        # NaN propagates, as numpy's max
    s = _exp_sum(x3, m, axis=1, keepdims=True)
    _softmax_out(x3, m, s, np.int32(zero_neg_inf), y3)


def _softmax_gradient(grad, dest, gradient_input, view):
    add = grad is not gradient_input
    d = view(_read(dest, grad))
    gi = view(_read(gradient_input, grad) if add else gradient_input.device_read())
    s = _sum_prod(d, gi, axis=1, keepdims=True)
    _softmax_g(add, gi, d, s, view(_out(grad, add)))


def softmax(dest, src, mode):
    x = _groups(src, _read(src, dest), mode)
    _softmax(x, _groups(dest, _out(dest), mode), mode == PLANE_WISE)


def softmax_gradient(grad, dest, gradient_input, mode):
    _softmax_gradient(grad, dest, gradient_input, lambda a: _groups(grad, a, mode))


def softmax_all(dest, src):
    n = src.num_samples()
    x = _read(src, dest).reshape(n, -1, 1)
    _softmax(x, _out(dest).reshape(n, -1, 1), False)


def softmax_all_gradient(grad, dest, gradient_input):
    n = grad.num_samples()
    _softmax_gradient(grad, dest, gradient_input, lambda a: a.reshape(n, -1, 1))
