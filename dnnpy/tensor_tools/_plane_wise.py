"""dlib's PLANE_WISE ``tt::gemm`` operand rules, shared by both twins (pure shape logic on
numpy or CuPy arrays).

A tensor whose planes are 1x1 (or that holds a single plane) is one matrix broadcast over
every plane; otherwise plane ``(b, c)`` starts at float ``(b*nk + c) * nr*nc``, where ``ns``
and ``nk`` are the smallest num_samples and k of the three tensors, as in dlib's loop.
"""

__all__ = ["is_plane_matrix", "plane_counts", "planes"]


def is_plane_matrix(t):
    """True when ``t`` counts as one matrix broadcast over the planes."""
    nk, rc = t.num_samples() * t.k(), t.nr() * t.nc()
    return (nk == 1 and rc > 1) or (nk > 1 and rc == 1)


def plane_counts(lhs, rhs, dest):
    """``(matrix flags of lhs, rhs, dest; ns; nk)`` for one PLANE_WISE gemm."""
    mats = [is_plane_matrix(t) for t in (lhs, rhs, dest)]
    if all(mats):
        return mats, 1, 1
    return (mats, min(t.num_samples() for t in (lhs, rhs, dest)),
            min(t.k() for t in (lhs, rhs, dest)))


def planes(t, a, is_matrix, ns, nk):
    """The ``(ns, nk, nr, nc)`` planes of array ``a`` (tensor ``t``'s data), or its single
    ``(1, 1, rows, cols)`` matrix."""
    if is_matrix:
        rows = t.num_samples() if t.num_samples() > 1 else t.nr()
        cols = t.k() if t.k() > 1 else t.nc()
        return a.reshape(1, 1, rows, cols)
    plane = t.nr() * t.nc()
    return a.reshape(-1)[:ns * nk * plane].reshape(ns, nk, t.nr(), t.nc())
