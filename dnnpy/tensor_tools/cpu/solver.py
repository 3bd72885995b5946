"""CPU twin of the solver ops (numpy), in dlib's float arithmetic order."""

from __future__ import annotations

import numpy as np
from .._twins import twin_ops

__all__ = twin_ops("solver")


def _flat(t, write=False):
    return (t.host() if write else t.host_read()).reshape(-1)


def affine_transform_range(begin, end, dest, src1, src2, src3, A, B, C):
    if begin == end:
        return
    r = slice(begin, end)
    dt = dest.host_read().dtype.type
    value = dt(A) * _flat(src1)[r] + dt(B) * _flat(src2)[r] + dt(C) * _flat(src3)[r]
    _flat(dest, True)[r] = value


def compute_adam_update(begin, end, s, m, v, t, learning_rate, weight_decay, momentum1, momentum2,
                        params, params_grad):
    if begin == end:
        return
    r = slice(begin, end)
    dt = s.host_read().dtype.type
    alpha = dt(learning_rate * np.sqrt(1 - momentum2 ** t) / (1 - momentum1 ** t))
    b1, b2 = dt(momentum1), dt(momentum2)
    g = dt(weight_decay) * _flat(params)[r] + _flat(params_grad)[r]
    mm = _flat(m, True)
    vv = _flat(v, True)
    mm[r] = b1 * mm[r] + (1 - b1) * g
    vv[r] = b2 * vv[r] + (1 - b2) * g * g
    _flat(s, True)[r] = -alpha * mm[r] / (np.sqrt(vv[r]) + dt(1e-8))
