"""What the non-conv ops share: per-thread scratch buffers, an owned primitive descriptor
(the forward "hint" a backward primitive is created from), and the cache lookup that turns
oneDNN's refusal of a case into a remembered, logged fallback."""

from __future__ import annotations

import numpy as np

from .._common import scratch as _cpu_scratch
from . import _api as A
from . import _primitive as P
from ._state import note_fallback

__all__ = ["scratch", "OwnedPD", "cached", "has_non_finite", "float32_tensors", "assign_or_add"]

def scratch(slot, shape, dtype=np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape``: this thread's buffer for ``slot``
    (the CPU twin's scratch, in a namespace of its own), grown on demand and reused, so a
    training step allocates none after its first pass. Valid until the next request of the
    same slot."""
    return _cpu_scratch("onednn." + slot, shape, np.dtype(dtype))


class OwnedPD:
    """A primitive descriptor handle with ``destroy()``, for ``Primitive(owned=...)``."""

    def __init__(self, handle):
        self.handle = handle

    def destroy(self):
        if self.handle:
            A.api().dnnl_primitive_desc_destroy(self.handle)
            self.handle = None


def cached(cache, key, build, work=None):
    """``cache.get(key, build, work)``, where a ``DnnlError`` from ``build`` (oneDNN refuses
    the case) is logged once through ``note_fallback(key[0], key[1:])`` and remembered as
    None. ``work``: the op's size in element-equivalents (``_primitive.SERIAL_WORK``)."""
    def safe():
        try:
            return build()
        except A.DnnlError as e:
            note_fallback(key[0], key[1:], e.name)
            return None
    return cache.get(key, safe, P.is_serial(work))


def has_non_finite(x) -> bool:
    """Whether ``x`` holds a NaN or an infinity: its minimum and maximum (NaN propagates
    through both; SIMD reductions: 0.20 ms for both on 64x32x32x32 float32, where one
    ``np.add.reduce`` takes 0.34 ms). For the ops whose oneDNN kernels treat NaN or
    infinities otherwise than numpy (max pooling)."""
    return not (np.isfinite(x.min()) and np.isfinite(x.max()))


def float32_tensors(*tensors) -> bool:
    """Whether every tensor stores float32 (outputs too: oneDNN writes float32 bits)."""
    return all(t.dtype == np.float32 for t in tensors)


def assign_or_add(prim, buffers, out_arg, out, add_to, slot):
    """Execute ``prim`` (a backward pass: it assigns) with ``buffers`` and its output
    argument ``out_arg`` written into the array ``out``, or, with ``add_to``, into this
    thread's scratch ``slot`` and then added to ``out`` (dlib's gradients add)."""
    if add_to:
        tmp = scratch(slot, out.shape)
        prim({**buffers, out_arg: tmp})
        np.add(out, tmp, out=out)
    else:
        prim({**buffers, out_arg: out})
