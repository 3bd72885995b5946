"""CPU twin of the solver ops (numpy), in dlib's float arithmetic order."""

from __future__ import annotations

import numpy as np
from .._twins import twin_ops
from ._common import scratch

__all__ = twin_ops("solver")


# elements per block: a block's two temporaries (1 MB each, this thread's scratch, reused)
# stay in the L2 cache, where whole-range temporaries (tens of MB for a large layer) cost
# fresh pages and a trip to memory each. Measured on 5.5 M parameters (2 MB L2): sgd 8.4 ->
# 3.8 ms, adam 15.7 -> 10.0; blocks of 2**15 gave 4.9 and 11.8, 2**20 4.0 and 10.7
_BLOCK = 1 << 18


def _flat(t, write=False):
    return (t.host() if write else t.host_read()).reshape(-1)


def _blocks(begin, end, dtype):
    """``(slice, t1, t2)`` for each block of ``[begin, end)``: two scratch arrays of its length."""
    size = min(_BLOCK, end - begin)
    t1, t2 = scratch("solver.t1", (size,), dtype), scratch("solver.t2", (size,), dtype)
    for start in range(begin, end, _BLOCK):
        r = slice(start, min(start + _BLOCK, end))
        yield r, t1[:r.stop - start], t2[:r.stop - start]


def affine_transform_range(begin, end, dest, src1, src2, src3, A, B, C):
    if begin == end:
        return
    s1, s2, s3, d = _flat(src1), _flat(src2), _flat(src3), _flat(dest, True)
    dt = s1.dtype.type
    A, B, C = dt(A), dt(B), dt(C)
    for r, b, c in _blocks(begin, end, s1.dtype):
        # (A*s1 + B*s2) + C*s3 in that order, as dlib; the B and C terms are formed before
        # dest is written, since dest may be any of the sources (the solvers pass dest = src1)
        np.multiply(s2[r], B, out=b)
        np.multiply(s3[r], C, out=c)
        out = d[r]
        np.multiply(s1[r], A, out=out)
        out += b
        out += c


def compute_adam_update(begin, end, s, m, v, t, learning_rate, weight_decay, momentum1, momentum2,
                        params, params_grad):
    if begin == end:
        return
    p, pg = _flat(params), _flat(params_grad)
    mf, vf, sf = _flat(m, True), _flat(v, True), _flat(s, True)
    dt = p.dtype.type
    alpha = dt(learning_rate * np.sqrt(1 - momentum2 ** t) / (1 - momentum1 ** t))
    b1, b2, wd = dt(momentum1), dt(momentum2), dt(weight_decay)
    for r, g, tmp in _blocks(begin, end, p.dtype):
        # dlib's expressions, evaluated in the same order with in-place steps (same bits):
        # g = wd*p + pg; m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g; s = (-alpha*m)/(sqrt(v)+eps)
        np.multiply(p[r], wd, out=g)
        g += pg[r]
        np.multiply(g, 1 - b1, out=tmp)
        mm = mf[r]
        mm *= b1
        mm += tmp
        np.multiply(g, 1 - b2, out=tmp)
        tmp *= g
        vv = vf[r]
        vv *= b2
        vv += tmp
        np.sqrt(vv, out=tmp)
        tmp += dt(1e-8)
        ss = sf[r]
        np.multiply(mm, -alpha, out=ss)
        ss /= tmp
