"""ctypes bindings for the cuDNN 9 legacy API: the one file that declares cuDNN functions.

``SIGNATURES`` is the single table ``{name: (restype, argtypes)}`` of the functions the
twin calls (convolution and pooling, plus the two output-dimension queries the tests use);
a test checks every entry's parameter kinds against the prototypes in the headers shipped
with the nvidia-cudnn wheel. The backend binds the whole table when it chooses CUDA
(``backend._cuda_twin``), so a cuDNN without one of these symbols falls back to the CPU
with the one warning instead of failing in the middle of training. ``api()`` loads the library (``_loader``), applies the table and
returns an object whose attributes are the table's functions; those returning
``cudnnStatus_t`` raise ``CudnnError`` on any status other than success.

Conventions: handles and descriptors are ``c_void_p``; enums are ``c_int``; sizes
``c_size_t``; device pointers ``c_void_p(array.data.ptr)``; alpha/beta are host scalars
passed by reference, ``c_float`` for float (and half) data and ``c_double`` for double
data (``scaling(dtype, value)``). ctypes releases the GIL during each call.
Debug logging: ``CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr``.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import POINTER, c_char_p, c_double, c_int, c_size_t, c_void_p

import numpy as np

from ._loader import load_cudnn

__all__ = ["SIGNATURES", "CudnnError", "AlgoPerf", "api", "scaling", "data_type"]

# ----------------------------------------------------------------------------------------
# enums (values from cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h, cuDNN 9): only those used

CUDNN_STATUS_SUCCESS = 0

CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF = 0, 1, 2
CUDNN_TENSOR_NCHW = 0
CUDNN_CROSS_CORRELATION = 1
CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH = 0, 1, 2, 3
CUDNN_PROPAGATE_NAN = 1

CUDNN_POOLING_MAX = 0
CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING = 2
CUDNN_POOLING_MAX_DETERMINISTIC = 3

# the algorithms that need no workspace: the fallback when a workspace cannot be had
CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0
CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 = 0
CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0


class AlgoPerf(ctypes.Structure):
    """``cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t`` (one layout for all three;
    sizeof 48)."""

    _fields_ = [("algo", c_int), ("status", c_int), ("time", ctypes.c_float),
                ("memory", c_size_t), ("determinism", c_int), ("mathType", c_int),
                ("reserved", c_int * 3)]


# ----------------------------------------------------------------------------------------
# the signature table

_H = c_void_p            # handle or descriptor
_P = c_void_p            # device pointer, or host pointer to alpha/beta
_E = c_int               # enum
_I = c_int
_S = c_size_t
_D = c_double
_PH = POINTER(c_void_p)
_PI = POINTER(c_int)
_PS = POINTER(c_size_t)
_PERF = POINTER(AlgoPerf)

_ST = c_int              # cudnnStatus_t
_ALGO_V7 = [_H, _H, _H, _H, _H, _I, _PI, _PERF]
_FIND_EX = [_H, _H, _P, _H, _P, _H, _H, _P, _I, _PI, _PERF, _P, _S]
_WS_SIZE = [_H, _H, _H, _H, _H, _E, _PS]
_CONV_RUN = [_H, _P, _H, _P, _H, _P, _H, _E, _P, _S, _P, _H, _P]

SIGNATURES = {
    # graph library: version, errors, handles
    "cudnnGetVersion": (_S, []),
    "cudnnGetCudartVersion": (_S, []),
    "cudnnGetErrorString": (c_char_p, [_ST]),
    "cudnnGetLastErrorString": (None, [c_char_p, _S]),
    "cudnnCreate": (_ST, [_PH]),
    "cudnnDestroy": (_ST, [_H]),
    "cudnnSetStream": (_ST, [_H, c_void_p]),
    # ops library
    "cudnnOpsVersionCheck": (_ST, []),
    "cudnnCreateTensorDescriptor": (_ST, [_PH]),
    "cudnnDestroyTensorDescriptor": (_ST, [_H]),
    "cudnnSetTensor4dDescriptor": (_ST, [_H, _E, _E, _I, _I, _I, _I]),
    "cudnnCreateFilterDescriptor": (_ST, [_PH]),
    "cudnnDestroyFilterDescriptor": (_ST, [_H]),
    "cudnnSetFilter4dDescriptor": (_ST, [_H, _E, _E, _I, _I, _I, _I]),
    "cudnnCreatePoolingDescriptor": (_ST, [_PH]),
    "cudnnDestroyPoolingDescriptor": (_ST, [_H]),
    "cudnnSetPooling2dDescriptor": (_ST, [_H, _E, _E, _I, _I, _I, _I, _I, _I]),
    "cudnnGetPooling2dForwardOutputDim": (_ST, [_H, _H, _PI, _PI, _PI, _PI]),
    "cudnnPoolingForward": (_ST, [_H, _H, _P, _H, _P, _P, _H, _P]),
    "cudnnPoolingBackward": (_ST, [_H, _H, _P, _H, _P, _H, _P, _H, _P, _P, _H, _P]),
    # cnn library
    "cudnnCnnVersionCheck": (_ST, []),
    "cudnnCreateConvolutionDescriptor": (_ST, [_PH]),
    "cudnnDestroyConvolutionDescriptor": (_ST, [_H]),
    "cudnnSetConvolution2dDescriptor": (_ST, [_H, _I, _I, _I, _I, _I, _I, _E, _E]),
    "cudnnSetConvolutionMathType": (_ST, [_H, _E]),
    "cudnnGetConvolution2dForwardOutputDim": (_ST, [_H, _H, _H, _PI, _PI, _PI, _PI]),
    "cudnnGetConvolutionForwardAlgorithmMaxCount": (_ST, [_H, _PI]),
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount": (_ST, [_H, _PI]),
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount": (_ST, [_H, _PI]),
    "cudnnGetConvolutionForwardAlgorithm_v7": (_ST, _ALGO_V7),
    "cudnnGetConvolutionBackwardDataAlgorithm_v7": (_ST, _ALGO_V7),
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7": (_ST, _ALGO_V7),
    "cudnnFindConvolutionForwardAlgorithmEx": (_ST, _FIND_EX),
    "cudnnFindConvolutionBackwardDataAlgorithmEx": (_ST, _FIND_EX),
    "cudnnFindConvolutionBackwardFilterAlgorithmEx": (_ST, _FIND_EX),
    "cudnnGetConvolutionForwardWorkspaceSize": (_ST, _WS_SIZE),
    "cudnnGetConvolutionBackwardDataWorkspaceSize": (_ST, _WS_SIZE),
    "cudnnGetConvolutionBackwardFilterWorkspaceSize": (_ST, _WS_SIZE),
    "cudnnConvolutionForward": (_ST, _CONV_RUN),
    "cudnnConvolutionBackwardData": (_ST, _CONV_RUN),
    "cudnnConvolutionBackwardFilter": (_ST, _CONV_RUN),
}


# ----------------------------------------------------------------------------------------
# errors

class CudnnError(RuntimeError):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS.

    ``status`` is the number, ``name`` cuDNN's name for it, ``function`` the cuDNN function
    and ``detail`` ``cudnnGetLastErrorString`` (cuDNN 9's message, e.g.
    ``cudaGetDeviceCount(&count) != cudaSuccess``)."""

    def __init__(self, function, status, name, detail, context=""):
        self.function, self.status, self.name, self.detail = function, status, name, detail
        msg = f"{function} failed: {status} {name}"
        if detail:
            msg += f" ({detail})"
        if context:
            msg = f"{context}: {msg}"
        super().__init__(msg)


def _raise(lib, function, status):
    name = (lib.cudnnGetErrorString(status) or b"?").decode(errors="replace")
    buf = ctypes.create_string_buffer(2048)
    lib.cudnnGetLastErrorString(buf, len(buf))
    raise CudnnError(function, status, name, buf.value.decode(errors="replace").strip())


class _Api:
    """The bound functions: ``api().cudnnConvolutionForward(...)``. Status-returning ones
    raise ``CudnnError``; ``lib``, ``path`` and ``version`` describe the library."""

    def __init__(self, lib, path, version):
        self.lib, self.path, self.version = lib, path, version
        for name, (restype, argtypes) in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, self._checked(lib, name, fn) if restype is _ST else fn)

    @staticmethod
    def _checked(lib, name, fn):
        def call(*args):
            status = fn(*args)
            if status != CUDNN_STATUS_SUCCESS:
                _raise(lib, name, status)
        call.__name__ = name
        return call


_api = None
_api_lock = threading.Lock()


def api() -> _Api:
    """The bound cuDNN library, loaded on first use (``_loader.CudnnNotFoundError`` when no
    cuDNN 9 can be loaded). Host-only: needs no GPU."""
    global _api
    if _api is None:
        with _api_lock:
            if _api is None:
                _api = _Api(*load_cudnn())
    return _api


# ----------------------------------------------------------------------------------------
# small helpers shared by the ops

def data_type(dtype) -> int:
    """The cudnnDataType_t of a numpy/CuPy dtype (float32, float64, float16)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return CUDNN_DATA_FLOAT
    if dtype == np.float64:
        return CUDNN_DATA_DOUBLE
    if dtype == np.float16:
        return CUDNN_DATA_HALF
    raise TypeError(f"cuDNN: unsupported dtype {dtype} (float32, float64 or float16)")


def scaling(dtype, value):
    """alpha/beta for data of ``dtype``, as cuDNN reads it: a pointer to a host ``float``
    for float/half data, to a ``double`` for double data. Keep the returned object alive
    for the duration of the call (ctypes.byref does not own it)."""
    return c_double(value) if np.dtype(dtype) == np.float64 else ctypes.c_float(value)
