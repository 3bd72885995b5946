"""The pieces every oneDNN op is built from: the engine and per-thread streams, memory
descriptors, attributes with post-ops, primitives with their memory objects, reorders,
and the per-thread cache of prepared primitives.

A ``Primitive`` is created once per shape (oneDNN JIT-compiles it: 0.2-3 ms) and kept in a
``Cache``; a call only re-points the data handles of its memory objects at the numpy
buffers and executes (about 10 us of Python and ctypes). Memory objects are never created
with a NULL handle and executed: oneDNN does not check and the process would die.

Threads: the memory objects of a primitive carry per-call state (their data handles), so
caches and streams are per thread; the engine is shared.

Small ops run on one thread. Starting a parallel region wakes libgomp's sleeping threads
(dnnpy's default wait policy is passive, ``wait_policy.py``), which costs 80-100 us on the
2-core test machine, more than a small op takes alone: a ReLU gradient of 64K floats took
58 us on one thread and 144 us on two; a 3x3 convolution of 2.4M multiply-adds 75 us against
309 us. So a primitive whose work (``Cache.get``'s ``work``: elements visited, a
multiply-add of a convolution or matrix product counting 1/20) is under ``SERIAL_WORK`` is
created and executed with ``omp_set_num_threads(1)`` in force (oneDNN then runs it without
a parallel region); larger ones use the whole pool.

On a busy machine the limit rises to ``BUSY_SERIAL_WORK``: when other programs keep the cores
busy, a woken thread waits for a time slice, and a mid-sized op (the seed autoencoder's
convolutions, ~1.2M element-equivalents) loses more at its barrier than a second thread
gains: its training step took 24 ms on two threads and 17 ms on one beside two busy
processes on 2 cores, while the small ResNet's larger ops still gained from two (354 against
479 ms). "Busy" is read from the kernel's count of runnable threads (``/proc/loadavg``),
sampled at most every ``LOAD_PERIOD`` seconds and smoothed: busy when the other runnable
threads and this pool together outnumber the CPUs. Each primitive is kept per mode, so a
machine that gets busy or quiet again switches at the next call without rebuilding.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from collections import OrderedDict

import numpy as np

from . import _api as A

__all__ = ["engine", "stream", "MemoryDesc", "plain", "Attr", "Primitive", "Reorder", "Borrowed",
           "Cache", "pointer", "same_md", "f32_contiguous", "gomp", "building", "is_serial",
           "machine_busy", "one_thread", "SERIAL_WORK", "BUSY_SERIAL_WORK", "MAC_WORK", "LOAD_PERIOD"]

# work below this runs on one thread (module docstring); element-equivalents
SERIAL_WORK = 1 << 18
BUSY_SERIAL_WORK = 1 << 21      # the same on a busy machine
MAC_WORK = 1 / 20       # one multiply-add of a convolution or matmul, in element-equivalents
LOAD_PERIOD = 0.25      # seconds between two reads of /proc/loadavg

_engine = None
_engine_lock = threading.Lock()
_local = threading.local()

# DNNL_MEMORY_ALLOCATE: let oneDNN allocate the buffer (used for blocked intermediates)
_ALLOCATE = ctypes.c_void_p(-1 & 0xFFFFFFFFFFFFFFFF)

_PLAIN_TAGS = {1: A.ENUMS["dnnl_a"], 2: A.ENUMS["dnnl_ab"], 4: A.ENUMS["dnnl_abcd"]}


_gomp = None


def gomp():
    """libgomp (the OpenMP runtime oneDNN's gomp build links; one per process: when torch,
    which ships a libgomp with the same soname, was imported first, the copy both share, so
    one setting governs both)."""
    global _gomp
    if _gomp is None:
        _gomp = ctypes.CDLL("libgomp.so.1")
    return _gomp


@contextlib.contextmanager
def one_thread():
    """oneDNN's OpenMP pool limited to one thread inside (a small op's execution)."""
    g = gomp()
    n = g.omp_get_max_threads()
    if n == 1:
        yield
        return
    g.omp_set_num_threads(1)
    try:
        yield
    finally:
        g.omp_set_num_threads(n)


def others_running(loadavg_text):
    """The runnable threads machine-wide but the reading one, from ``/proc/loadavg``'s text
    (its fourth field is ``running/total``)."""
    return max(0, int(loadavg_text.split()[3].split("/")[0]) - 1)


_load = {"t": -1e9, "others": 0.0, "cpus": os.cpu_count() or 1}


def machine_busy(path="/proc/loadavg") -> bool:
    """Whether other runnable threads and this pool together outnumber the CPUs (smoothed
    over the last reads, one read per ``LOAD_PERIOD`` at most; False where the kernel does not
    say)."""
    now = time.monotonic()
    if now - _load["t"] >= LOAD_PERIOD:
        _load["t"] = now
        try:
            with open(path) as f:
                sample = others_running(f.read())
        except (OSError, ValueError, IndexError):
            sample = 0
        _load["others"] = 0.5 * _load["others"] + 0.5 * sample
    return _load["others"] + gomp().omp_get_max_threads() > _load["cpus"] + 0.5


def is_serial(work) -> bool:
    """Whether an op of ``work`` element-equivalents (None: unknown, never serial) runs on
    one thread now (module docstring)."""
    if work is None:
        return False
    return work < SERIAL_WORK or (work < BUSY_SERIAL_WORK and machine_busy())


@contextlib.contextmanager
def building(serial):
    """The primitives created inside are serial (created, and later executed, on one thread)
    when ``serial`` is true (``is_serial(work)``)."""
    if not serial or getattr(_local, "serial", False):
        yield
        return
    _local.serial = True
    try:
        with one_thread():
            yield
    finally:
        _local.serial = False


def engine():
    """The process's CPU engine (created at first use)."""
    global _engine
    if _engine is None:
        with _engine_lock:
            if _engine is None:
                _engine = A.api().new("dnnl_engine_create", A.ENUMS["dnnl_cpu"], 0)
    return _engine


def stream():
    """This thread's in-order stream on ``engine()``."""
    s = getattr(_local, "stream", None)
    if s is None:
        s = _local.stream = A.api().new("dnnl_stream_create", engine(),
                                        A.ENUMS["dnnl_stream_default_flags"])
    return s


def pointer(array) -> int:
    """The address of a numpy array's first element."""
    return array.__array_interface__["data"][0]


class MemoryDesc:
    """An owned ``dnnl_memory_desc_t`` for float32 data of ``shape``: with a format tag
    (``dnnl_abcd``, ``dnnl_format_tag_any``, ...) or with explicit element strides."""

    def __init__(self, shape, tag=None, strides=None):
        api = A.api()
        self.shape = tuple(int(d) for d in shape)
        if strides is not None:
            self.handle = api.new("dnnl_memory_desc_create_with_strides", len(shape),
                                  A.dims(*shape), A.ENUMS["dnnl_f32"], A.dims(*strides))
        else:
            self.handle = api.new("dnnl_memory_desc_create_with_tag", len(shape), A.dims(*shape),
                                  A.ENUMS["dnnl_f32"], tag)

    def destroy(self):
        if self.handle:
            A.api().dnnl_memory_desc_destroy(self.handle)
            self.handle = None


def plain(shape) -> MemoryDesc:
    """A dense row-major float32 descriptor (dnnl_a / ab / abcd) of ``shape``."""
    return MemoryDesc(shape, _PLAIN_TAGS[len(shape)])


class Attr:
    """Primitive attributes with post-ops: ``("relu",)`` appends an eltwise ReLU,
    ``("sum", scale)`` accumulates into the destination (``dst = scale*dst + result``),
    ``("binary_add", md)`` adds a tensor of descriptor ``md`` (broadcast; its buffer is the
    argument ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1`` of post-op ``i``)."""

    def __init__(self, *post_ops):
        api = A.api()
        self.handle = api.new("dnnl_primitive_attr_create")
        if post_ops:
            ops = api.new("dnnl_post_ops_create")
            try:
                for op in post_ops:
                    if op[0] == "relu":
                        api.dnnl_post_ops_append_eltwise(ops, A.ENUMS["dnnl_eltwise_relu"], 0.0, 0.0)
                    elif op[0] == "binary_add":
                        api.dnnl_post_ops_append_binary(ops, A.ENUMS["dnnl_binary_add"], op[1].handle)
                    elif op[0] == "sum":
                        # data type undef: "the destination's"; reorders refuse an explicit f32
                        api.dnnl_post_ops_append_sum(ops, float(op[1]), 0,
                                                     A.ENUMS["dnnl_data_type_undef"])
                    else:
                        raise ValueError(f"oneDNN Attr: unknown post-op {op!r}")
                api.dnnl_primitive_attr_set_post_ops(self.handle, ops)
            finally:
                api.dnnl_post_ops_destroy(ops)   # the attribute keeps its own copy

    def destroy(self):
        if self.handle:
            A.api().dnnl_primitive_attr_destroy(self.handle)
            self.handle = None


class Primitive:
    """A primitive descriptor, its primitive and one memory object per execution argument.

    ``pd`` is the handle a ``..._primitive_desc_create`` wrote (this object owns it).
    ``external`` lists the argument indices whose buffers the caller passes at each call;
    ``internal`` maps argument indices to descriptors (borrowed from the pd, or owned) whose
    buffers oneDNN allocates and keeps (blocked intermediates, workspaces).
    """

    def __init__(self, pd, external, internal=None, owned=()):
        api = A.api()
        self.pd = pd
        self._owned = list(owned)         # descriptors and attributes this object destroys
        self.handle = None
        self._mems = {}
        try:
            self.handle = api.new("dnnl_primitive_create", pd)
            for arg, query in external.items():
                md = self.query_md(query) if isinstance(query, int) else query.handle
                # no buffer: __call__ points it at the caller's before every execute
                self._mems[arg] = api.new("dnnl_memory_create", md, engine(), None)
            for arg, md in (internal or {}).items():
                md = self.query_md(md) if isinstance(md, int) else md.handle
                self._mems[arg] = api.new("dnnl_memory_create", md, engine(), _ALLOCATE)
        except Exception:
            self.destroy()
            raise
        self._external = list(external)
        self.serial = getattr(_local, "serial", False)     # created inside building(small)
        n = len(self._mems)
        self._args = (A.ExecArg * n)(*[A.ExecArg(arg, mem) for arg, mem in self._mems.items()])
        self._nargs = n

    def query_md(self, what, index=0):
        """A borrowed descriptor of the pd (``dnnl_query_src_md``, ...); never destroy it."""
        return A.api().dnnl_primitive_desc_query_md(self.pd, what, index)

    def memory(self, arg):
        """The memory object bound to argument ``arg`` (for chaining internal buffers)."""
        return self._mems[arg]

    def impl(self) -> str:
        """The implementation oneDNN chose (``jit:avx512_core``, ``gemm:jit``, ``ref:any``)."""
        out = ctypes.c_char_p()
        A.api().dnnl_primitive_desc_query(self.pd, A.ENUMS["dnnl_query_impl_info_str"], 0,
                                          ctypes.byref(out))
        return (out.value or b"?").decode(errors="replace")

    def __call__(self, buffers):
        """Execute with ``buffers = {arg: numpy array or address}`` for every external
        argument (each array C-contiguous float32 with the descriptor's size)."""
        api = A.api()
        if len(buffers) != len(self._external):
            raise ValueError(f"oneDNN primitive: buffers for {sorted(buffers)} given, "
                             f"{sorted(self._external)} required")
        for arg, buf in buffers.items():
            addr = buf if isinstance(buf, int) else pointer(buf)
            api.dnnl_memory_set_data_handle(self._mems[arg], ctypes.c_void_p(addr))
        s = stream()
        with one_thread() if self.serial else contextlib.nullcontext():
            api.dnnl_primitive_execute(self.handle, s, self._nargs, self._args)
            api.dnnl_stream_wait(s)

    def destroy(self):
        api = A.api()
        for mem in self._mems.values():
            api.dnnl_memory_destroy(mem)
        self._mems = {}
        if self.handle:
            api.dnnl_primitive_destroy(self.handle)
            self.handle = None
        if self.pd:
            api.dnnl_primitive_desc_destroy(self.pd)
            self.pd = None
        for o in self._owned:
            o.destroy()
        self._owned = []


class Reorder(Primitive):
    """A reorder from ``src`` to ``dst`` (descriptor handles owned elsewhere); with
    ``accumulate`` it adds onto the destination (a ``sum`` post-op, scale 1)."""

    def __init__(self, src, dst, accumulate=False):
        e = engine()
        attr = Attr(("sum", 1.0)) if accumulate else None
        try:
            pd = A.api().new("dnnl_reorder_primitive_desc_create", src, e, dst, e,
                             attr.handle if attr is not None else None)
        finally:
            if attr is not None:
                attr.destroy()
        super().__init__(pd, {A.ARGS["DNNL_ARG_FROM"]: Borrowed(src),
                              A.ARGS["DNNL_ARG_TO"]: Borrowed(dst)})


class Borrowed:
    """A descriptor handle owned elsewhere, where ``Primitive`` expects a descriptor."""

    def __init__(self, handle):
        self.handle = handle


def same_md(a, b) -> bool:
    """Whether two descriptor handles describe the same memory layout."""
    return A.api().dnnl_memory_desc_equal(a, b) == 1



class Cache:
    """A per-thread LRU dict of prepared objects (each with ``destroy()``), evicting and
    destroying the least recently used beyond ``capacity``. A key may map to None: a case
    oneDNN refused, remembered so that it is not retried at every call."""

    def __init__(self, capacity=128):
        self.capacity = capacity
        self._local = threading.local()

    def _d(self):
        d = getattr(self._local, "d", None)
        if d is None:
            d = self._local.d = OrderedDict()
        return d

    def get(self, key, build, serial=False):
        """The object for ``key`` and ``serial`` (kept apart: a primitive is built for one
        mode), built by ``build()`` inside ``building(serial)`` at the first request."""
        d = self._d()
        key = (key, bool(serial))
        if key in d:
            d.move_to_end(key)
            return d[key]
        with building(serial):
            obj = d[key] = build()
        if len(d) > self.capacity:
            _, old = d.popitem(last=False)
            if old is not None:
                old.destroy()
        return obj

    def clear(self):
        d = self._d()
        for obj in d.values():
            if obj is not None:
                obj.destroy()
        d.clear()


def f32_contiguous(*arrays) -> bool:
    """Whether every array is C-contiguous float32 (what the plain descriptors describe)."""
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)

