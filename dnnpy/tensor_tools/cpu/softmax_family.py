"""CPU twin of ``dnnpy.tensor_tools.softmax_family`` (numpy, vectorised): the softmax family.

Every op reads its inputs before it asks for a writable view, so an output may be an input.
"""

from __future__ import annotations

import numpy as np

from .._twins import twin_ops
from ._common import _grad_out, _store

__all__ = twin_ops("softmax_family")

CHANNEL_WISE, PLANE_WISE = 0, 1


# ----------------------------------------------------------------------------------------
# softmax family

def _groups(t, a, mode):
    """View of ``a`` whose axis 1 is the softmax axis: CHANNEL_WISE -> (n, k, nr*nc);
    PLANE_WISE -> (n*k*nr, nc, 1)."""
    n, k, nr, nc = t.shape
    if mode == CHANNEL_WISE:
        return a.reshape(n, k, nr * nc)
    return a.reshape(n * k * nr, nc, 1)


def _softmax(x, zero_all_neg_inf_rows):
    m = np.max(x, axis=1, keepdims=True) if x.shape[1] else np.zeros_like(x[:, :1])
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - m)
        y = e / np.sum(e, axis=1, keepdims=True)
    if zero_all_neg_inf_rows:
        # dlib's CPU PLANE_WISE: a row whose max is -inf (all -inf, e.g. a fully masked row) -> 0
        y = np.where(m == -np.inf, 0, y)
    return y


def softmax(dest, src, mode):
    x = _groups(src, src.host_read(), mode)
    y = _softmax(x, mode == PLANE_WISE)
    _store(dest, y.reshape(dest.shape))


def _softmax_grad_values(d, gi):
    return d * (gi - np.sum(d * gi, axis=1, keepdims=True))


def softmax_gradient(grad, dest, gradient_input, mode):
    d = _groups(dest, dest.host_read(), mode)
    gi = _groups(gradient_input, gradient_input.host_read(), mode)
    _grad_out(grad, gradient_input, _softmax_grad_values(d, gi).reshape(grad.shape))


def softmax_all(dest, src):
    x = src.host_read().reshape(src.num_samples(), -1, 1)
    _store(dest, _softmax(x, False).reshape(dest.shape))


def softmax_all_gradient(grad, dest, gradient_input):
    n = grad.num_samples()
    d = dest.host_read().reshape(n, -1, 1)
    gi = gradient_input.host_read().reshape(n, -1, 1)
    _grad_out(grad, gradient_input, _softmax_grad_values(d, gi).reshape(grad.shape))
