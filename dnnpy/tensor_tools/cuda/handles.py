"""cuDNN handles, workspaces and descriptor caches for the CUDA twin.

Handles: one per (thread, device), as dlib's ``thread_local cudnn_context``: cuDNN is
thread-safe as long as no two threads use one handle at once, and a handle belongs to the
device current when it was made. ``handle()`` returns the calling thread's handle for
CuPy's current device, bound to CuPy's current stream; ``cudnnSetStream`` is called only
when that stream changed since the handle's last call (it costs microseconds even when
unchanged). Handles die with their thread (a finalizer), and are deliberately leaked at
interpreter exit, as PyTorch does: destroying them after the CUDA context is gone crashes.

Workspaces come from ``cupy.cuda.alloc`` (CuPy's pool, stream-ordered per arena, so the
block can be dropped right after the call that used it is queued). They are capped by
``set_max_workspace`` (env ``DNNPY_CUDNN_MAX_WORKSPACE``, bytes; default 256 MiB; 0 while
``set_dnn_prefer_smallest_algorithms()`` is in effect): the algorithm choice in conv.py only
accepts algorithms within the cap. On out-of-memory the
pool's free blocks are released and the allocation retried once; then
``WorkspaceUnavailable`` lets the caller fall back to a zero-workspace algorithm.

Descriptors are host-only cuDNN objects: each thread caches the ones it made, keyed by
their full parameters, in a small LRU, and destroys those it evicts.
"""

from __future__ import annotations

import collections
import ctypes
import os
import threading
import weakref

from ..algorithms import dnn_prefer_smallest_algorithms
from . import _cudnn as C
from ._cudnn import CudnnError, api

__all__ = []  # no tensor op lives here (see conv.py / pooling.py)

_DEFAULT_MAX_WORKSPACE = 256 << 20
DESCRIPTOR_CACHE_SIZE = 512

_local = threading.local()


# ----------------------------------------------------------------------------------------
# handles

def create_handle(device=None):
    """A new cuDNN handle (an int) on the current device. Raises ``CudnnError`` naming the
    device when cuDNN cannot initialise (no GPU, driver too old, ...)."""
    h = ctypes.c_void_p()
    try:
        api().cudnnCreate(ctypes.byref(h))
    except CudnnError as e:
        where = "the current device" if device is None else f"device {device}"
        raise CudnnError(e.function, e.status, e.name, e.detail,
                         context=f"cannot create a cuDNN handle on {where} (no usable GPU, "
                                 "or a driver too old for this cuDNN?)") from None
    return h.value


class _Handle:
    __slots__ = ("ptr", "stream")

    def __init__(self, ptr):
        self.ptr, self.stream = ptr, None


class _ThreadHandles(dict):
    """device id -> _Handle of one thread; destroys them when the thread's state dies."""

    def __init__(self):
        super().__init__()
        self.ptrs = []  # the finalizer holds this list, not self
        fin = weakref.finalize(self, _destroy_handles, self.ptrs)
        fin.atexit = False  # leak at exit: the CUDA context may already be gone


def _destroy_handles(ptrs):
    for ptr in ptrs:
        try:
            api().cudnnDestroy(ptr)
        except Exception:
            pass


def handle():
    """This thread's cuDNN handle for CuPy's current device, set to CuPy's current stream."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    table = getattr(_local, "handles", None)
    if table is None:
        table = _local.handles = _ThreadHandles()
    h = table.get(device)
    if h is None:
        h = table[device] = _Handle(create_handle(device))
        table.ptrs.append(h.ptr)
    stream = cupy.cuda.get_current_stream().ptr
    if stream != h.stream:
        api().cudnnSetStream(h.ptr, ctypes.c_void_p(stream))
        h.stream = stream
    return h.ptr


# ----------------------------------------------------------------------------------------
# workspaces

def _env_max_workspace():
    value = os.environ.get("DNNPY_CUDNN_MAX_WORKSPACE", "").strip()
    try:
        return int(value) if value else _DEFAULT_MAX_WORKSPACE
    except ValueError:
        raise ValueError(f"DNNPY_CUDNN_MAX_WORKSPACE must be a number of bytes, got {value!r}") from None


_max_workspace = _env_max_workspace()


def set_max_workspace(nbytes):
    """Cap, in bytes, on the workspace of one cuDNN call (algorithms needing more are not
    chosen). Algorithm choices are cached per cap, so a new cap takes effect at once."""
    global _max_workspace
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError(f"set_max_workspace: nbytes must be >= 0, got {nbytes}")
    _max_workspace = nbytes


def max_workspace():
    """The workspace cap in bytes: ``set_max_workspace``'s, or 0 while dlib's
    ``set_dnn_prefer_smallest_algorithms()`` is in effect."""
    return 0 if dnn_prefer_smallest_algorithms() else _max_workspace


class WorkspaceUnavailable(MemoryError):
    """The device could not provide a cuDNN workspace even after freeing CuPy's pool."""


def workspace(nbytes, what):
    """A CuPy ``MemoryPointer`` of ``nbytes`` (None for 0). Keep it alive until the call
    using it has been queued. ``what`` (a string, or a function making one) names the op and
    shapes for the error message."""
    if nbytes <= 0:
        return None
    import cupy

    try:
        return cupy.cuda.alloc(nbytes)
    except cupy.cuda.memory.OutOfMemoryError:
        cupy.get_default_memory_pool().free_all_blocks()
        try:
            return cupy.cuda.alloc(nbytes)
        except cupy.cuda.memory.OutOfMemoryError as e:
            what = what() if callable(what) else what  # built only when needed
            raise WorkspaceUnavailable(
                f"{what}: out of device memory allocating a {nbytes}-byte cuDNN workspace "
                f"({nbytes / 2**20:.1f} MiB) even after freeing CuPy's memory pool") from e


# ----------------------------------------------------------------------------------------
# pointer alignment: cuDNN kernels may assume 16-byte aligned operands; a tensor view at an
# odd offset into its storage (an alias_tensor) is copied to an aligned buffer instead

ALIGNMENT = 16


def aligned_input(arr):
    """``arr`` itself when its data pointer is 16-byte aligned, else an aligned copy."""
    if arr.data.ptr % ALIGNMENT == 0:
        return arr
    import cupy

    return cupy.array(arr, copy=True)


def aligned_output(arr, needs_old):
    """``(buffer, done)``: write into ``buffer``, then call ``done()``. When ``arr`` is
    aligned ``buffer`` is ``arr``; else an aligned temporary (holding arr's values when
    ``needs_old``) that ``done`` copies back."""
    if arr.data.ptr % ALIGNMENT == 0:
        return arr, _nothing
    import cupy

    tmp = cupy.array(arr, copy=True) if needs_old else cupy.empty_like(arr)

    def done():
        arr[...] = tmp
    return tmp, done


def _nothing():
    pass


def ptr(arr):
    return ctypes.c_void_p(arr.data.ptr)


# ----------------------------------------------------------------------------------------
# descriptor caches

class _DescriptorCache:
    """LRU ``key -> descriptor`` for one thread; evicted descriptors are destroyed."""

    def __init__(self, capacity=DESCRIPTOR_CACHE_SIZE):
        self.capacity = capacity
        self.items = collections.OrderedDict()   # key -> (descriptor, destroy function name)
        fin = weakref.finalize(self, _destroy_all, self.items)
        fin.atexit = False

    def get(self, key, make, destroy):
        d = self.items.get(key)
        if d is not None:
            self.items.move_to_end(key)
            return d[0]
        desc = make()
        self.items[key] = (desc, destroy)
        while len(self.items) > self.capacity:
            _, (old, old_destroy) = self.items.popitem(last=False)
            getattr(api(), old_destroy)(old)
        return desc


def _destroy_all(items):
    for desc, destroy in list(items.values()):
        try:
            getattr(api(), destroy)(desc)
        except Exception:
            pass
    items.clear()


def _cache():
    c = getattr(_local, "descriptors", None)
    if c is None:
        c = _local.descriptors = _DescriptorCache()
    return c


def _new(create, destroy, setter, *args):
    a = api()
    d = ctypes.c_void_p()
    getattr(a, create)(ctypes.byref(d))
    try:
        getattr(a, setter)(d.value, *args)
    except Exception:
        getattr(a, destroy)(d.value)
        raise
    return d.value


def tensor_desc(shape, dtype):
    """A packed NCHW 4-D tensor descriptor."""
    n, k, nr, nc = (int(v) for v in shape)
    dt = C.data_type(dtype)
    return _cache().get(
        ("tensor", n, k, nr, nc, dt),
        lambda: _new("cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor",
                     "cudnnSetTensor4dDescriptor", C.CUDNN_TENSOR_NCHW, dt, n, k, nr, nc),
        "cudnnDestroyTensorDescriptor")


def filter_desc(shape, dtype):
    """A KCRS (NCHW) filter descriptor."""
    k, c, r, s = (int(v) for v in shape)
    dt = C.data_type(dtype)
    return _cache().get(
        ("filter", k, c, r, s, dt),
        lambda: _new("cudnnCreateFilterDescriptor", "cudnnDestroyFilterDescriptor",
                     "cudnnSetFilter4dDescriptor", dt, C.CUDNN_TENSOR_NCHW, k, c, r, s),
        "cudnnDestroyFilterDescriptor")


def conv_desc(padding_y, padding_x, stride_y, stride_x, dtype, math_type):
    """A 2-D cross-correlation descriptor (dilation 1, one group) computing in ``dtype``
    with ``math_type`` (CUDNN_FMA_MATH: no TF32)."""
    key = ("conv", int(padding_y), int(padding_x), int(stride_y), int(stride_x),
           C.data_type(dtype), int(math_type))

    def make():
        d = _new("cudnnCreateConvolutionDescriptor", "cudnnDestroyConvolutionDescriptor",
                 "cudnnSetConvolution2dDescriptor", key[1], key[2], key[3], key[4], 1, 1,
                 C.CUDNN_CROSS_CORRELATION, key[5])
        try:
            api().cudnnSetConvolutionMathType(d, key[6])
        except Exception:
            api().cudnnDestroyConvolutionDescriptor(d)
            raise
        return d
    return _cache().get(key, make, "cudnnDestroyConvolutionDescriptor")


def pooling_desc(mode, window_height, window_width, padding_y, padding_x, stride_y, stride_x):
    """A 2-D pooling descriptor that propagates NaN (as dlib's)."""
    args = tuple(int(v) for v in (mode, window_height, window_width, padding_y, padding_x,
                                  stride_y, stride_x))
    m, wh, ww, py, px, sy, sx = args
    return _cache().get(
        ("pooling",) + args,
        lambda: _new("cudnnCreatePoolingDescriptor", "cudnnDestroyPoolingDescriptor",
                     "cudnnSetPooling2dDescriptor", m, C.CUDNN_PROPAGATE_NAN, wh, ww, py, px,
                     sy, sx),
        "cudnnDestroyPoolingDescriptor")
