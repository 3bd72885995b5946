"""Dispatchers of the merge layers: zero-padded products and channel scaling (dlib's names
and argument order, destination first). The zero-padded 3-argument ``add`` and the
PLANE_WISE ``gemm`` live with the core ops in ``tensor_tools/__init__.py``.
"""

from __future__ import annotations

from .backend import _backend, _check_tensors, _same_dims

__all__ = ["multiply_zero_padded", "scale_channels"]


def multiply_zero_padded(add_to, dest, src1, src2):
    """``dest = src1 * src2`` (``+=`` if add_to), pointwise in 4-D; any dimensions: an
    element missing from src1 or src2 counts as 0 (so dest is 0 outside their overlap).

    Requires: nothing about the shapes. Ensures: every element of dest is written (assigned,
    or added to when ``add_to``).
    """
    _check_tensors("multiply_zero_padded", dest=dest, src1=src1, src2=src2)
    _backend().multiply_zero_padded(bool(add_to), dest, src1, src2)


def scale_channels(add_to, dest, src, scales):
    """``dest(n,k,r,c) = src(n,k,r,c) * scales(n,k)`` (``+=`` if add_to).

    Requires: dest and src have the same dimensions; scales is ``(src.num_samples(),
    src.k(), 1, 1)``.
    """
    _same_dims("scale_channels", dest=dest, src=src)
    _check_tensors("scale_channels", scales=scales)
    if scales.shape != (src.num_samples(), src.k(), 1, 1):
        raise ValueError(f"scale_channels: scales{scales.shape} must be "
                         f"({src.num_samples()}, {src.k()}, 1, 1) for src{src.shape}")
    _backend().scale_channels(bool(add_to), dest, src, scales)
