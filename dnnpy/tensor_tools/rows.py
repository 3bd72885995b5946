"""Dispatchers: row norms and row scaling on ``mat(t)``, the ``num_samples x (k*nr*nc)``
matrix of a tensor (what ``l2normalize_`` computes with; dlib's ``tt::`` names).
"""

from __future__ import annotations

from ..tensor import resizable_tensor, tensor
from .backend import _backend, _check_real, _check_tensors, _same_dims

__all__ = ["inverse_norms", "dot_prods", "scale_rows", "scale_rows2", "scale_columns"]


# ----------------------------------------------------------------------------------------
# row norms and row scaling on mat(t) = num_samples x (k*nr*nc)

def _is_vector(t):
    # dlib's is_vector(tensor): at most one of the four dimensions is not 1
    return sum(d != 1 for d in t.shape) <= 1


def inverse_norms(invnorms, data, eps):
    """``invnorms = 1/sqrt(sum of squares of each row of mat(data) + eps)``.

    Requires: invnorms is a resizable_tensor. Ensures: ``invnorms`` is resized to
    ``(data.num_samples(), 1, 1, 1)`` and assigned.
    """
    _check_tensors("inverse_norms", invnorms=invnorms, data=data)
    if not isinstance(invnorms, resizable_tensor):
        raise TypeError("inverse_norms: invnorms must be a resizable_tensor (it is resized)")
    invnorms.set_size(data.num_samples())
    _backend().inverse_norms(invnorms, data, _check_real("inverse_norms", "eps", eps))


def dot_prods(*args):
    """Row-wise dot products of ``mat(lhs)`` and ``mat(rhs)``, two forms (as dlib):

    * ``dot_prods(out, lhs, rhs)``: out (a resizable_tensor) is resized to
      ``(lhs.num_samples(), 1, 1, 1)`` and assigned;
    * ``dot_prods(add_to, out, lhs, rhs)``: requires ``out.size() == lhs.num_samples()``
      and ``out.k() == out.nr() == out.nc() == 1``; adds if add_to, else assigns.

    Requires: lhs and rhs have the same dimensions.
    """
    if len(args) == 3 and isinstance(args[0], tensor):
        out, lhs, rhs = args
        _same_dims("dot_prods", lhs=lhs, rhs=rhs)
        _check_tensors("dot_prods", out=out)
        if not isinstance(out, resizable_tensor):
            raise TypeError("dot_prods(out, lhs, rhs): out must be a resizable_tensor (it is resized)")
        out.set_size(lhs.num_samples())
        _backend().dot_prods(False, out, lhs, rhs)
        return
    if len(args) != 4:
        raise TypeError("dot_prods(out, lhs, rhs) or dot_prods(add_to, out, lhs, rhs): "
                        f"got {len(args)} arguments")
    add_to, out, lhs, rhs = args
    _same_dims("dot_prods", lhs=lhs, rhs=rhs)
    _check_tensors("dot_prods", out=out)
    if out.size() != lhs.num_samples() or out.shape[1:] != (1, 1, 1):
        raise ValueError(f"dot_prods: out{out.shape} must be ({lhs.num_samples()}, 1, 1, 1)-sized "
                         f"for lhs{lhs.shape}")
    _backend().dot_prods(bool(add_to), out, lhs, rhs)


def scale_rows(out, m, v):
    """``out = scale_rows(mat(m), mat(v))``: row i of mat(m) times ``v[i]``.
    Requires: out and m have the same dimensions; v is a vector of m.num_samples() values."""
    _same_dims("scale_rows", out=out, m=m)
    _check_tensors("scale_rows", v=v)
    if m.size() == 0 and v.size() == 0:
        return
    if not _is_vector(v) or v.size() != m.num_samples() or m.size() == 0:
        raise ValueError(f"scale_rows: v{v.shape} must be a vector of m.num_samples() = "
                         f"{m.num_samples()} values (m{m.shape})")
    _backend().scale_rows(out, m, v)


def scale_rows2(beta, out, m1, m2, v1, v2):
    """``out = beta*out + scale_rows(mat(m1) - scale_rows(mat(m2), v1), v2)``; with
    ``beta == 0`` out is assigned (its old contents are not read).
    Requires: out, m1, m2 have the same dimensions; v1, v2 have the same dimensions and
    are vectors of m1.num_samples() values."""
    _same_dims("scale_rows2", out=out, m1=m1, m2=m2)
    _same_dims("scale_rows2", v1=v1, v2=v2)
    if not _is_vector(v1) or v1.size() != m1.num_samples():
        raise ValueError(f"scale_rows2: v1{v1.shape} must be a vector of m1.num_samples() = "
                         f"{m1.num_samples()} values")
    _backend().scale_rows2(_check_real("scale_rows2", "beta", beta), out, m1, m2, v1, v2)


def scale_columns(out, m, v):
    """``out = scale_columns(mat(m), mat(v))``: column j of mat(m) times ``v[j]``.
    Requires: out and m have the same dimensions; v is a vector of ``m.size()/m.num_samples()``
    values."""
    _same_dims("scale_columns", out=out, m=m)
    _check_tensors("scale_columns", v=v)
    if m.size() == 0 and v.size() == 0:
        return
    if not _is_vector(v) or m.size() == 0 or v.size() * m.num_samples() != m.size():
        raise ValueError(f"scale_columns: v{v.shape} must be a vector of one value per column "
                         f"of mat(m) (m{m.shape})")
    _backend().scale_columns(out, m, v)
