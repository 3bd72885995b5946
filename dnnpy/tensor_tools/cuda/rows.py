"""CUDA twin of ``dnnpy.tensor_tools.rows`` (CuPy): row norms and row scaling. Same names,
signatures and assign/add semantics as ``cpu/rows.py``; numerics as ``activations.py``
explains (no FMA contraction, sums in double).
"""

from __future__ import annotations


from .._twins import twin_ops
from ._kernels import _ew, _out, _read, _rows, _sum_prod

__all__ = twin_ops("rows")


# ----------------------------------------------------------------------------------------
# row norms and scaling on mat(t) = num_samples x (k*nr*nc)

_inv_sqrt = _ew("T sq, T eps", "T y", "y = (T)1 / sqrt(sq + eps);", "inverse_norm")
_scale_k = _ew("T m, T v", "T y", "y = m * v;", "scale")
_scale_rows2_k = _ew(
    "T a, T b, T v1, T v2, T beta", "T o",
    "T val = (a - b * v1) * v2;"
    " if (beta == (T)0) o = val;"                 # assign: o may hold inf/NaN
    " else o = (beta == (T)1 ? o : o * beta) + val;",
    "scale_rows2")


def inverse_norms(invnorms, data, eps):
    x = _rows(data, data.device_read())
    sq = _sum_prod(x, x, axis=1)
    _inv_sqrt(sq, x.dtype.type(eps), _out(invnorms).reshape(-1))


def dot_prods(add_to, out, lhs, rhs):
    v = _sum_prod(_rows(lhs, lhs.device_read()), _rows(rhs, rhs.device_read()), axis=1)
    o = _out(out, add_to).reshape(-1)
    if add_to:
        o += v
    else:
        o[...] = v


def scale_rows(out, m, v):
    a = _rows(m, _read(m, out))
    vv = _read(v, out).reshape(-1, 1)
    _scale_k(a, vv, _rows(out, _out(out)))


def scale_rows2(beta, out, m1, m2, v1, v2):
    a = _rows(m1, _read(m1, out))
    b = _rows(m2, _read(m2, out))
    w1 = _read(v1, out).reshape(-1, 1)
    w2 = _read(v2, out).reshape(-1, 1)
    _scale_rows2_k(a, b, w1, w2, a.dtype.type(beta), _rows(out, _out(out, beta != 0)))


def scale_columns(out, m, v):
    a = _rows(m, _read(m, out))
    vv = _read(v, out).reshape(1, -1)
    _scale_k(a, vv, _rows(out, _out(out)))
