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
    s1, s2, s3 = _flat(src1)[r], _flat(src2)[r], _flat(src3)[r]
    dt = s1.dtype.type
    # (A*s1 + B*s2) + C*s3 in that order, as dlib; the B and C terms are formed before dest
    # is written, since dest may be any of the sources (the solvers pass dest = src1)
    b = np.multiply(s2, dt(B))
    c = np.multiply(s3, dt(C))
    d = _flat(dest, True)[r]
    np.multiply(s1, dt(A), out=d)
    d += b
    d += c


def compute_adam_update(begin, end, s, m, v, t, learning_rate, weight_decay, momentum1, momentum2,
                        params, params_grad):
    if begin == end:
        return
    r = slice(begin, end)
    p = _flat(params)[r]
    dt = p.dtype.type
    alpha = dt(learning_rate * np.sqrt(1 - momentum2 ** t) / (1 - momentum1 ** t))
    b1, b2 = dt(momentum1), dt(momentum2)
    # dlib's expressions, evaluated in the same order with in-place steps (same bits):
    # g = wd*p + pg; m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g; s = (-alpha*m)/(sqrt(v)+eps)
    g = np.multiply(p, dt(weight_decay))
    g += _flat(params_grad)[r]
    tmp = np.multiply(g, 1 - b1)
    mm = _flat(m, True)[r]
    mm *= b1
    mm += tmp
    np.multiply(g, 1 - b2, out=tmp)
    tmp *= g
    vv = _flat(v, True)[r]
    vv *= b2
    vv += tmp
    np.sqrt(vv, out=tmp)
    tmp += dt(1e-8)
    ss = _flat(s, True)[r]
    np.multiply(mm, -alpha, out=ss)
    ss /= tmp
