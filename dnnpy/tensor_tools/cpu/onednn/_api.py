"""ctypes bindings for oneDNN 3.x's C API: the one file that declares oneDNN functions.

``SIGNATURES`` is the single table ``{name: (restype, argtypes)}`` of the functions dnnpy
calls; ``tests/test_onednn.py`` checks every entry against the prototypes in the headers of
the ``onednn-devel-cpu-gomp`` wheel. ``api()`` loads the library (``_loader``), binds the
whole table and returns an object whose attributes are the functions; those returning
``dnnl_status_t`` raise ``DnnlError`` on any status other than ``dnnl_success``.

oneDNN 3.x, not 2.x: memory descriptors are opaque handles created and destroyed through
the API, and each ``..._primitive_desc_create`` takes the operation's parameters directly
(the 2.x operation descriptors are gone). Enum values come from ``dnnl_types.h`` of 3.2
(the test checks them against the headers too); the ``DNNL_ARG_*`` are ``#define``s.

Conventions: handles (engine, stream, memory, memory descriptor, primitive descriptor,
primitive, attributes, post-ops) are ``c_void_p``; enums and flags ``c_int`` / ``c_uint``;
``dnnl_dims_t`` is ``int64[12]`` passed by pointer (``dims(...)``). Not every int return is
a status: ``dnnl_memory_desc_equal`` returns 1 for "equal", ``dnnl_get_effective_cpu_isa``
an ISA enum, and ``dnnl_primitive_desc_query_md`` a *borrowed* descriptor (never destroy
it). ctypes releases the GIL during each call.
Debug logging: ``ONEDNN_VERBOSE=1`` (every primitive created and executed, with its
implementation, e.g. ``jit:avx512_core``).
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint, c_void_p

from ._loader import load_onednn

__all__ = ["SIGNATURES", "DnnlError", "ExecArg", "Version", "api", "dims", "ENUMS", "ARGS",
           "STATUS_NAMES"]

# ----------------------------------------------------------------------------------------
# enums (dnnl_types.h / dnnl_common_types.h of oneDNN 3.2): only those used

ENUMS = {
    "dnnl_success": 0, "dnnl_unimplemented": 3,
    "dnnl_data_type_undef": 0, "dnnl_f32": 3,
    "dnnl_format_tag_any": 1, "dnnl_a": 2, "dnnl_ab": 3, "dnnl_abcd": 5, "dnnl_ba": 14,
    "dnnl_abdc": 20, "dnnl_acdb": 22, "dnnl_bacd": 25, "dnnl_aBcd16b": 78, "dnnl_aBcd8b": 102,
    "dnnl_forward_training": 64, "dnnl_forward_inference": 96, "dnnl_backward": 128,
    "dnnl_backward_data": 160, "dnnl_backward_weights": 192,
    "dnnl_convolution_direct": 1,
    "dnnl_eltwise_relu": 0x20, "dnnl_eltwise_relu_use_dst_for_bwd": 0x100,
    "dnnl_pooling_max": 0x1ff, "dnnl_pooling_avg_exclude_padding": 0x3ff,
    "dnnl_binary_add": 0x1fff0, "dnnl_binary_mul": 0x1fff1,
    "dnnl_normalization_flags_none": 0, "dnnl_use_global_stats": 1, "dnnl_use_scale": 2,
    "dnnl_use_shift": 4,
    "dnnl_query_impl_info_str": 8,
    "dnnl_query_src_md": 129, "dnnl_query_diff_src_md": 130, "dnnl_query_weights_md": 131,
    "dnnl_query_diff_weights_md": 132, "dnnl_query_dst_md": 133, "dnnl_query_diff_dst_md": 134,
    "dnnl_query_workspace_md": 135, "dnnl_query_scratchpad_md": 136,
    "dnnl_cpu": 1, "dnnl_stream_default_flags": 1,
    "dnnl_cpu_isa_avx2": 7,
}
globals().update(ENUMS)

# the execution-argument indices (#defines in dnnl_types.h)
ARGS = {
    "DNNL_ARG_SRC": 1, "DNNL_ARG_SRC_1": 2, "DNNL_ARG_DST": 17, "DNNL_ARG_WEIGHTS": 33,
    "DNNL_ARG_BIAS": 41, "DNNL_ARG_MEAN": 49, "DNNL_ARG_VARIANCE": 50, "DNNL_ARG_SCALE": 51,
    "DNNL_ARG_SHIFT": 52, "DNNL_ARG_WORKSPACE": 64, "DNNL_ARG_SCRATCHPAD": 80,
    "DNNL_ARG_DIFF_SRC": 129, "DNNL_ARG_DIFF_DST": 145, "DNNL_ARG_DIFF_WEIGHTS": 161,
    "DNNL_ARG_DIFF_BIAS": 169, "DNNL_ARG_DIFF_SCALE": 255, "DNNL_ARG_DIFF_SHIFT": 256,
    "DNNL_ARG_FROM": 1, "DNNL_ARG_TO": 17, "DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE": 32768,
}
globals().update(ARGS)

STATUS_NAMES = {0: "success", 1: "out_of_memory", 2: "invalid_arguments", 3: "unimplemented",
                4: "last_impl_reached", 5: "runtime_error", 6: "not_required",
                7: "invalid_graph", 8: "invalid_graph_op", 9: "invalid_shape",
                10: "invalid_data_type"}

MAX_NDIMS = 12


class ExecArg(ctypes.Structure):
    """``dnnl_exec_arg_t``: ``{int arg; dnnl_memory_t memory}`` (16 bytes, 4 of padding)."""

    _fields_ = [("arg", c_int), ("memory", c_void_p)]


class Version(ctypes.Structure):
    """``dnnl_version_t``."""

    _fields_ = [("major", c_int), ("minor", c_int), ("patch", c_int), ("hash", c_char_p),
                ("cpu_runtime", c_uint), ("gpu_runtime", c_uint)]


Dims = c_int64 * MAX_NDIMS


def dims(*values) -> Dims:
    """A ``dnnl_dims_t`` holding ``values`` (the rest zero)."""
    return Dims(*(int(v) for v in values))


# ----------------------------------------------------------------------------------------
# the signature table

_H = c_void_p            # any handle
_PH = POINTER(c_void_p)  # where a create function writes the new handle
_E = c_int               # enum
_U = c_uint              # flags
_F = c_float
_D = POINTER(c_int64)    # const dnnl_dims_t
_ST = "dnnl_status_t"     # a c_int the binding checks (raises DnnlError)

SIGNATURES = {
    "dnnl_version": (POINTER(Version), []),
    "dnnl_get_effective_cpu_isa": (_E, []),
    "dnnl_set_primitive_cache_capacity": (_ST, [c_int]),
    "dnnl_get_primitive_cache_capacity": (_ST, [POINTER(c_int)]),
    "dnnl_engine_create": (_ST, [_PH, _E, c_size_t]),
    "dnnl_engine_destroy": (_ST, [_H]),
    "dnnl_stream_create": (_ST, [_PH, _H, _U]),
    "dnnl_stream_wait": (_ST, [_H]),
    "dnnl_stream_destroy": (_ST, [_H]),
    # memory
    "dnnl_memory_desc_create_with_tag": (_ST, [_PH, c_int, _D, _E, _E]),
    "dnnl_memory_desc_create_with_strides": (_ST, [_PH, c_int, _D, _E, _D]),
    "dnnl_memory_desc_destroy": (_ST, [_H]),
    "dnnl_memory_desc_clone": (_ST, [_PH, _H]),
    "dnnl_memory_desc_equal": (c_int, [_H, _H]),
    "dnnl_memory_desc_get_size": (c_size_t, [_H]),
    "dnnl_memory_create": (_ST, [_PH, _H, _H, c_void_p]),
    "dnnl_memory_set_data_handle": (_ST, [_H, c_void_p]),
    "dnnl_memory_destroy": (_ST, [_H]),
    # primitive descriptors, one per kind of operation
    "dnnl_convolution_forward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _E, _H, _H, _H, _H, _D, _D, _D, _D, _H]),
    "dnnl_convolution_backward_data_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _H, _D, _D, _D, _D, _H, _H]),
    "dnnl_convolution_backward_weights_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _H, _H, _D, _D, _D, _D, _H, _H]),
    "dnnl_batch_normalization_forward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _F, _U, _H]),
    "dnnl_batch_normalization_backward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _H, _F, _U, _H, _H]),
    "dnnl_eltwise_forward_primitive_desc_create": (_ST, [_PH, _H, _E, _E, _H, _H, _F, _F, _H]),
    "dnnl_eltwise_backward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _H, _F, _F, _H, _H]),
    "dnnl_pooling_forward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _E, _H, _H, _D, _D, _D, _D, _D, _H]),
    "dnnl_pooling_backward_primitive_desc_create":
        (_ST, [_PH, _H, _E, _H, _H, _D, _D, _D, _D, _D, _H, _H]),
    "dnnl_binary_primitive_desc_create": (_ST, [_PH, _H, _E, _H, _H, _H, _H]),
    "dnnl_matmul_primitive_desc_create": (_ST, [_PH, _H, _H, _H, _H, _H, _H]),
    "dnnl_reorder_primitive_desc_create": (_ST, [_PH, _H, _H, _H, _H, _H]),
    "dnnl_primitive_desc_query_md": (_H, [_H, _E, c_int]),
    "dnnl_primitive_desc_query": (_ST, [_H, _E, c_int, c_void_p]),
    "dnnl_primitive_desc_destroy": (_ST, [_H]),
    # primitives
    "dnnl_primitive_create": (_ST, [_PH, _H]),
    "dnnl_primitive_execute": (_ST, [_H, _H, c_int, POINTER(ExecArg)]),
    "dnnl_primitive_destroy": (_ST, [_H]),
    # attributes and post-ops
    "dnnl_primitive_attr_create": (_ST, [_PH]),
    "dnnl_primitive_attr_destroy": (_ST, [_H]),
    "dnnl_primitive_attr_set_post_ops": (_ST, [_H, _H]),
    "dnnl_post_ops_create": (_ST, [_PH]),
    "dnnl_post_ops_destroy": (_ST, [_H]),
    "dnnl_post_ops_append_eltwise": (_ST, [_H, _E, _F, _F]),
    "dnnl_post_ops_append_sum": (_ST, [_H, _F, c_int32, _E]),
    "dnnl_post_ops_append_binary": (_ST, [_H, _E, _H]),
}


# ----------------------------------------------------------------------------------------
# errors and the bound library

class DnnlError(RuntimeError):
    """A oneDNN call returned a status other than ``dnnl_success``. ``status`` is the
    number, ``name`` oneDNN's name for it (``unimplemented``: no implementation for this
    case, the caller falls back to numpy), ``function`` the C function."""

    def __init__(self, function, status):
        self.function, self.status = function, status
        self.name = STATUS_NAMES.get(status, "unknown status")
        super().__init__(f"{function} failed: {status} {self.name}")


class _Api:
    """The bound functions: ``api().dnnl_primitive_execute(...)``. Status-returning ones
    raise ``DnnlError``; ``lib``, ``path``, ``version`` and ``isa`` describe the library."""

    def __init__(self, lib, path):
        self.lib, self.path = lib, path
        for name, (restype, argtypes) in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = (c_int if restype == _ST else restype), argtypes
            setattr(self, name, self._checked(name, fn) if restype == _ST else fn)
        v = self.dnnl_version().contents
        self.version = (v.major, v.minor, v.patch)
        self.commit = (v.hash or b"").decode(errors="replace")
        self.isa = self.dnnl_get_effective_cpu_isa()

    @staticmethod
    def _checked(name, fn):
        def call(*args):
            status = fn(*args)
            if status != 0:  # dnnl_success
                raise DnnlError(name, status)
        call.__name__ = name
        return call

    def new(self, create, *args):
        """Call the ``create`` function (a name) whose first argument receives a handle;
        return the handle (``c_void_p``)."""
        handle = c_void_p()
        getattr(self, create)(ctypes.byref(handle), *args)
        return handle


def _check(lib, path):
    """Raise ``OSError`` unless ``lib`` is oneDNN 3.x with every symbol of ``SIGNATURES``,
    on a CPU where it has AVX2 kernels (below that oneDNN runs reference code, slower than
    numpy's BLAS)."""
    missing = [n for n in SIGNATURES if not hasattr(lib, n)]
    if missing:
        raise OSError(f"{path} lacks {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    lib.dnnl_version.restype = POINTER(Version)
    v = lib.dnnl_version().contents
    if v.major != 3:
        raise OSError(f"{path} is oneDNN {v.major}.{v.minor}.{v.patch}; dnnpy binds the 3.x API")
    lib.dnnl_get_effective_cpu_isa.restype = c_int
    isa = lib.dnnl_get_effective_cpu_isa()
    if isa & 7 != 7:   # the ISA enum values are cumulative bit sets; avx2 is 0x7
        raise OSError(f"this CPU offers oneDNN no AVX2 (effective ISA {isa:#x}): numpy is faster "
                      "than oneDNN's reference kernels")


_api = None
_api_lock = threading.Lock()


def api() -> _Api:
    """The bound oneDNN library, loaded on first use (``OnednnNotFoundError`` when none can
    be loaded)."""
    global _api
    if _api is None:
        with _api_lock:
            if _api is None:
                _api = _Api(*load_onednn(_check))
    return _api
