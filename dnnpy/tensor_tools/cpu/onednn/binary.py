"""oneDNN's binary primitive for the CPU twin's per-channel affine transform, ``dest = A*src +
B`` with ``A`` and ``B`` of shape ``(1, C, 1, 1)`` over an NCHW ``src`` (``affine_transform_conv``,
the ``affine`` layer of dlib's inference nets): a multiplication with an addition post-op, one
multi-threaded pass where numpy makes two on one thread. The float32 operations are numpy's
(a product rounded, then a sum rounded: tests/test_cpu_twin_passes.py compares the bits).
On blocked values (a convolution's output kept in its layout, ``layout.py``) it runs at
any size, in that layout.
"""

from __future__ import annotations

from . import _api as A
from . import _primitive as P
from ._common import cached, float32_tensors
from ._state import active
from .layout import channel_tag, mirrored_blocks

__all__ = ["affine_transform_conv", "scale_shift_blocked"]

_SRC_0, _SRC_1, _DST = A.ARGS["DNNL_ARG_SRC"], A.ARGS["DNNL_ARG_SRC_1"], A.ARGS["DNNL_ARG_DST"]
# post-op 0's second source (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1)
_SHIFT = A.ARGS["DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE"] | _SRC_1
_cache = P.Cache()
# below this many elements numpy's two passes cost no more than oneDNN's call (2 threads,
# measured: 20 k elements 14 against 26 us, 170 k 35 against 42; 330 k 156 against 143,
# 2.7 M 564 against 239)
MIN_ELEMENTS = 1 << 18


class _Affine(P.Primitive):
    """On NCHW data, or on ``nChw{lanes}c`` blocked data."""

    def __init__(self, shape, lanes=0):
        # blocked data with the per-channel operands blocked alike (the same bytes as NCHW's
        # when the lanes divide the channels): oneDNN 3.2 has a JIT kernel for that, while a
        # plain (1, C, 1, 1) operand against blocked data runs its reference code, 20x slower
        tag = channel_tag(lanes)
        data = P.MemoryDesc(shape, tag)
        per_channel = P.MemoryDesc((1, shape[1], 1, 1), tag)
        attr = None
        try:
            attr = P.Attr(("binary_add", per_channel))
            pd = A.api().new("dnnl_binary_primitive_desc_create", P.engine(), A.ENUMS["dnnl_binary_mul"],
                             data.handle, per_channel.handle, data.handle, attr.handle)
        except Exception:
            for o in (data, per_channel, attr):
                if o is not None:
                    o.destroy()
            raise
        super().__init__(pd, {_SRC_0: data, _SRC_1: per_channel, _DST: data, _SHIFT: per_channel},
                         owned=[data, per_channel, attr])


def scale_shift_blocked(src, dest, a, b) -> bool:
    """``dest = a*src + b`` on blocked values (``src`` and ``dest`` mirrors of one layout,
    possibly the same), ``a`` and ``b`` float32 arrays of one value per channel (batch
    norm's steps); False when oneDNN cannot."""
    lanes = src.lanes()
    if not lanes or not active():
        return False
    key = ("affine_transform_conv",) + tuple(src.shape) + (lanes,)
    prim = cached(_cache, key, lambda: _Affine(src.shape, lanes), work=src.floats.size)
    if prim is None:
        return False
    prim({_SRC_0: src.address, _SRC_1: a, _DST: dest.address, _SHIFT: b})
    return True


def _blocked(dest, src, A_, B):
    """The transform on blocked values (``layout.mirrored``: ``src`` has them), of any size:
    it keeps a convolution's output blocked for the next one."""
    if A_.shape != (1, src.k(), 1, 1) or B.shape != A_.shape:
        return False
    if dest.is_aliased_with(A_) or dest.is_aliased_with(B):
        return False
    got = mirrored_blocks(dest, (src,), params=(A_, B))
    if got is None:
        return False
    out, (x,), commit = got
    if not scale_shift_blocked(x, out, A_.host_read(), B.host_read()):
        return False
    commit()
    return True


def affine_transform_conv(dest, src, A_, B) -> bool:
    """``dest = A*src + B`` for a 4-D ``src`` of at least ``MIN_ELEMENTS`` and per-channel
    ``A``, ``B``; dest is src (in place) or a separate tensor of src's shape, not A or B.
    False when numpy must run it."""
    if not active() or not float32_tensors(dest, src, A_, B):
        return False
    if _blocked(dest, src, A_, B):
        return True
    x, a, b = src.host_read(), A_.host_read(), B.host_read()
    if (x.ndim != 4 or x.size < MIN_ELEMENTS or dest.shape != src.shape or a.shape != (1, x.shape[1], 1, 1)
            or b.shape != a.shape or not P.f32_contiguous(x, a, b)):
        return False
    if dest.overlaps_elsewhere(src) or dest.is_aliased_with(A_) or dest.is_aliased_with(B):
        return False
    prim = cached(_cache, ("affine_transform_conv",) + tuple(x.shape), lambda: _Affine(x.shape),
                  work=x.size)
    if prim is None:
        return False
    out = dest.host() if dest.is_aliased_with(src) else dest.host_write_only()
    prim({_SRC_0: x, _SRC_1: a, _DST: out, _SHIFT: b})
    return True
