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

__all__ = ["Mirror", "current", "fresh", "aligned"]


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
        api = A.api()
        self.md = api.new("dnnl_memory_desc_clone", md)
        self.shape = tuple(shape)
        self.array = aligned(api.dnnl_memory_desc_get_size(self.md))
        self.floats = self.array.view(np.float32)
        self.address = P.pointer(self.array)
        self._plain = None          # the NCHW descriptor and the reorder to it, made on first use
        self._to_host = None
        self._lock = threading.Lock()   # a reorder's memory objects carry per-call state

    def matches(self, md, shape) -> bool:
        return tuple(shape) == self.shape and P.same_md(self.md, md)

    def write_host(self, flat):
        """Reorder the values into ``flat`` (the storage's host array, NCHW)."""
        size = int(np.prod(self.shape))
        with self._lock:
            if self._to_host is None:
                with P.building(P.is_serial(size)):
                    self._plain = P.plain(self.shape)
                    self._to_host = P.Reorder(self.md, self._plain.handle)
            self._to_host({A.ARGS["DNNL_ARG_FROM"]: self.address,
                           A.ARGS["DNNL_ARG_TO"]: flat[:size]})

    def __del__(self):
        try:
            if self._to_host is not None:
                self._to_host.destroy()
                self._plain.destroy()
            A.api().dnnl_memory_desc_destroy(self.md)
        except Exception:       # interpreter shutdown: the library may be gone already
            pass


def current(t, md):
    """``t``'s mirror when it is current and in layout ``md``, else None."""
    m = t.layout_mirror()
    if m is not None and type(m) is Mirror and m.matches(md, t.shape):
        return m
    return None


def fresh(t, md):
    """A mirror for ``t`` in layout ``md`` to be written (the storage's own one, reused when
    it has that layout), or None when ``t`` cannot have one (a window into a larger
    storage). The caller writes it, then calls ``t.set_layout_mirror``."""
    if not t.covers_storage() or t.dtype != np.float32:
        return None
    m = t.layout_mirror(stale_too=True)
    if type(m) is Mirror and m.matches(md, t.shape):
        return m
    return Mirror(md, t.shape)
