"""CPU twin of ``dnnpy.tensor_tools.rows`` (numpy, vectorised): row norms and row scaling.

Every op reads its inputs before it asks for a writable view, so an output may be an input.
"""

from __future__ import annotations

import numpy as np

from .._twins import twin_ops
from ._common import _store

__all__ = twin_ops("rows")


# ----------------------------------------------------------------------------------------
# row norms and scaling

def _rows(t, a):
    return a.reshape(t.num_samples(), -1)


def inverse_norms(invnorms, data, eps):
    x = _rows(data, data.host_read())
    sq = np.sum(x * x, axis=1)
    _store(invnorms, (1 / np.sqrt(sq + eps)).reshape(invnorms.shape))


def dot_prods(add_to, out, lhs, rhs):
    v = np.sum(_rows(lhs, lhs.host_read()) * _rows(rhs, rhs.host_read()), axis=1).reshape(out.shape)
    if add_to:
        out.host()[...] += v
    else:
        _store(out, v)


def scale_rows(out, m, v):
    vals = _rows(m, m.host_read()) * v.host_read().reshape(-1, 1)
    _store(out, vals.reshape(out.shape))


def scale_rows2(beta, out, m1, m2, v1, v2):
    a = _rows(m1, m1.host_read())
    b = _rows(m2, m2.host_read())
    vals = ((a - b * v1.host_read().reshape(-1, 1)) * v2.host_read().reshape(-1, 1)).reshape(out.shape)
    if beta == 0:
        _store(out, vals)   # assign: out may hold inf/NaN
    else:
        o = out.host()
        if beta != 1:
            o *= beta
        o += vals


def scale_columns(out, m, v):
    vals = _rows(m, m.host_read()) * v.host_read().reshape(1, -1)
    _store(out, vals.reshape(out.shape))
