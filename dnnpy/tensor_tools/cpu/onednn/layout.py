"""Tensors whose values stay in a oneDNN blocked layout between two oneDNN ops.

oneDNN's fast convolution kernels read and write blocked layouts (``nChw16c``: channels in
blocks of 16, innermost). Reordering every output back to NCHW and every input into the
blocked layout again cost a ResNet training step 30 ms of 215 (face ResNet, batch 16, 2
threads): 111 reorders into the blocked layout and 55 out of it. Instead an op may leave its
result in the tensor's *layout mirror* (``tensor.set_layout_mirror``): the storage's values
in that layout, reordered into the NCHW host array only when numpy (or the user) reads the
tensor (``tensor.host_read`` calls ``Mirror.write_host``). An input reordered into a blocked
layout is kept as the mirror too, so a second op reading the same layout (the filter
gradient reads the forward's input, and the same output gradient as the data gradient)
finds it there.

Only a view that covers its whole storage has a mirror (a layer's output or gradient
buffer; not an alias window into parameters). A mirror costs a second buffer per storage,
kept and reused while the storage and the layout stay the same.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _api as A
from . import _primitive as P
from . import _state

__all__ = ["Mirror", "current", "fresh", "fresh_output", "in_layout", "aligned", "mirrored",
           "mirrored_blocks", "channel_view", "channel_tag"]

# the channel-blocked layouts numpy can index (nChw16c on AVX-512, nChw8c on AVX2):
# lanes -> format tag; a tensor's channel c is block c // lanes, lane c % lanes
_CHANNEL_BLOCKED = {16: A.ENUMS["dnnl_aBcd16b"], 8: A.ENUMS["dnnl_aBcd8b"]}


def channel_tag(lanes):
    """The format tag of ``nChw{lanes}c`` (``Mirror.lanes``), or NCHW's for 0: what the ops
    running on blocked values build their primitives with."""
    return _CHANNEL_BLOCKED[lanes] if lanes else A.ENUMS["dnnl_abcd"]


def aligned(nbytes):
    """A 64-byte aligned uint8 buffer (oneDNN's JIT kernels are faster on aligned rows)."""
    raw = np.empty(nbytes + 64, np.uint8)
    off = (-P.pointer(raw)) % 64
    return raw[off:off + nbytes]


class Mirror:
    """A tensor storage's values in the blocked layout ``md`` (a descriptor of the tensor's
    shape; cloned, so the mirror outlives the primitive it came from): ``array``, the
    buffer, and ``floats``, its float32 view (elementwise numpy ops may run on it: padded
    channels hold zeros, which ReLU and sums keep zero)."""

    def __init__(self, md, shape):
        self._plain = None          # the NCHW descriptor and the reorders, made on first use
        self._to_host = self._from_host = None
        self._lanes = None
        self._lock = threading.Lock()   # a reorder's memory objects carry per-call state
        self.md = None
        api = A.api()
        self.md = api.new("dnnl_memory_desc_clone", md)
        self.shape = tuple(shape)
        self.array = aligned(api.dnnl_memory_desc_get_size(self.md))
        self.floats = self.array.view(np.float32)
        self.address = P.pointer(self.array)

    def matches(self, md, shape) -> bool:
        return tuple(shape) == self.shape and P.same_md(self.md, md)

    def lanes(self) -> int:
        """``b`` when the layout is ``nChw{b}c`` (channels in blocks of ``b``, innermost)
        with ``b`` dividing the channels (no padded lanes), else 0."""
        if self._lanes is None:
            self._lanes = 0
            if len(self.shape) == 4:
                for b, tag in _CHANNEL_BLOCKED.items():
                    if self.shape[1] % b == 0:
                        md = P.MemoryDesc(self.shape, tag)
                        try:
                            same = P.same_md(md.handle, self.md)
                        finally:
                            md.destroy()
                        if same:
                            self._lanes = b
                            break
        return self._lanes

    def blocks(self):
        """The values as ``(N, C/b, H, W*b)`` (``lanes()`` must be nonzero): a row's W
        pixels of b channels each, one long run for numpy's inner loops (a last axis of b
        runs 2x slower); ``channel_view`` broadcasts per-channel values against it."""
        n, c, h, w = self.shape
        b = self.lanes()
        return self.floats[:n * c * h * w].reshape(n, c // b, h, w * b)

    def write_host(self, flat):
        """Reorder the values into ``flat`` (the storage's host array, NCHW)."""
        self._reorder(True, flat)

    def read_host(self, flat):
        """Reorder ``flat`` (the storage's host array, NCHW) into the mirror."""
        self._reorder(False, flat)

    def _reorder(self, to_host, flat):
        size = int(np.prod(self.shape))
        with self._lock:
            if self._plain is None:
                self._plain = P.plain(self.shape)
            key = "_to_host" if to_host else "_from_host"
            prim = getattr(self, key)
            if prim is None:
                with P.building(P.is_serial(size)):
                    prim = (P.Reorder(self.md, self._plain.handle) if to_host
                            else P.Reorder(self._plain.handle, self.md))
                setattr(self, key, prim)
            there, here = flat[:size], self.address
            prim({A.ARGS["DNNL_ARG_FROM"]: here if to_host else there,
                  A.ARGS["DNNL_ARG_TO"]: there if to_host else here})

    def __del__(self):
        try:
            for prim in (self._to_host, self._from_host, self._plain):
                if prim is not None:
                    prim.destroy()
            if self.md is not None:
                A.api().dnnl_memory_desc_destroy(self.md)
        except Exception:       # interpreter shutdown: the library may be gone already
            pass


def current(t, md):
    """``t``'s mirror when it is current and in layout ``md``, else None."""
    m = t.layout_mirror()
    return m if type(m) is Mirror and m.matches(md, t.shape) else None


def fresh(t, md):
    """A mirror for ``t`` in layout ``md`` to be filled (the storage's own one, reused when
    it has that layout), or None when ``t`` cannot have one (a window into a larger
    storage). The caller fills it, then calls ``t.set_layout_mirror``."""
    if not t.covers_storage() or t.dtype != np.float32:
        return None
    m = t.layout_mirror(stale_too=True)
    if type(m) is Mirror and m.matches(md, t.shape):
        return m
    return Mirror(md, t.shape)


def channel_view(values, mirror):
    """Per-channel values (any array of C values) laid out to broadcast against
    ``mirror.blocks()``: ``(1, C/b, 1, W*b)``, repeated along a row."""
    n, c, h, w = mirror.shape
    b = mirror.lanes()
    return np.tile(np.asarray(values).reshape(c // b, 1, b), (1, w, 1)).reshape(1, c // b, 1, w * b)


def mirrored(out, ins, read_out=False):
    """For an element-wise or per-channel op that may run on blocked values:
    ``(out_mirror, in_mirrors, commit)``, or None when it must run on the host.

    It runs blocked when the first input has a current mirror (its layout is the op's): the
    other inputs, and ``out`` when ``read_out`` (an op adding to it), are then taken in that
    layout, reordered into it when their mirror is not current (the same cost as reordering
    the first one out, and the result stays blocked for the next oneDNN op). The op writes
    ``out_mirror`` then calls ``commit()`` (``out``'s values are now the mirror's). None
    when: oneDNN is off (``force_numpy``: the twin runs on NCHW, as everywhere), the first
    input has no current mirror, a tensor has another shape or cannot have a mirror (a
    window into a larger storage), or ``out`` overlaps an input without being that very
    tensor (an in-place op passes the same tensor)."""
    first = ins[0].layout_mirror()
    if type(first) is not Mirror or first.shape != ins[0].shape or not _state.active():
        return None
    if (out.shape != first.shape or not out.writable()
            or any(out is not t and out.is_aliased_with(t) for t in ins)):
        return None
    mirrors = [first] + [_in_layout(t, first) for t in ins[1:]]
    om = _in_layout(out, first) if read_out else fresh_output(out, first.md)
    if om is None or None in mirrors:
        return None
    return om, mirrors, lambda: out.set_layout_mirror(om, host_current=False)


def mirrored_blocks(out, ins, read_out=False, params=()):
    """``mirrored`` for a per-channel op, which indexes the channel blocks: None also when
    the layout is not ``nChw{b}c`` with ``b`` dividing the channels (``Mirror.lanes``) or a
    tensor of per-channel ``params`` is not float32 (oneDNN reads float32)."""
    if any(p.dtype != np.float32 for p in params):
        return None
    got = mirrored(out, ins, read_out)
    return got if got is not None and got[1][0].lanes() else None


def _in_layout(t, like):
    """``t``'s values in ``like``'s layout (``in_layout``); None when ``t`` has another
    shape or cannot have a mirror."""
    if t.shape != like.shape:
        return None
    return like if t.layout_mirror() is like else in_layout(t, like.md)


def fresh_output(t, md):
    """``fresh`` for an op's output: None also when ``t`` may not be written (a
    ``read_only_view``; the op's NCHW route then raises, before anything is written)."""
    return fresh(t, md) if t.writable() else None


def in_layout(t, md):
    """``t``'s current mirror in layout ``md`` (a descriptor of ``t``'s shape), reordered
    into one from the host when it has none; None when ``t`` cannot have one."""
    m = current(t, md)
    if m is not None:
        return m
    m = fresh(t, md)
    if m is not None:
        m.read_host(t.host_read().reshape(-1))
        t.set_layout_mirror(m, host_current=True)
    return m
