"""CUDA twin of convolution: cuDNN 9's forward, backward-data and backward-filter calls.

Same names, signatures and semantics as ``cpu/conv.py`` (data ``(N, C, H, W)``, filters
``(K, C, R, S)``, cross-correlation, ``add_to_output`` selects ``+=`` over ``=``). The
transposed convolution (``cont_``) needs nothing extra: ``tensor_conv`` runs it through
these three calls. The forward's bias and ReLU and the filter gradient's bias gradient are
composed from this twin's ``add``, ``relu`` and ``assign_conv_bias_gradient`` (cuDNN's
fused ``cudnnConvolutionBiasActivationForward`` is a later optimisation).

Assignment uses cuDNN's beta = 0, which cuDNN documents as "the output is not read": a
destination pre-filled with inf or NaN does not leak into the result.

Math: FMA only (``CUDNN_FMA_MATH``, no TF32) for float32 by default, so results match the
CPU twin to float rounding; ``set_allow_tf32(True)`` (or env ``DNNPY_CUDNN_ALLOW_TF32=1``)
lets cuDNN use TF32 tensor cores (faster on Ampere and later, ~1e-3 relative error).
float64 uses CUDNN_DEFAULT_MATH (TF32 never applies to doubles).

Algorithm choice, cached per full key (device, op, dtype, math setting, autotune setting,
workspace cap, the three shapes, stride, padding): by default cuDNN's
``cudnnGet*Algorithm_v7`` heuristics (host-only, instant); with ``set_autotune(True)`` (or
env ``DNNPY_CUDNN_AUTOTUNE=1``) ``cudnnFind*AlgorithmEx``, which times the candidates on
the device once per key, using CuPy's pool for its workspace and a scratch output. The
candidates kept are those that succeed, fit the workspace cap (``handles.set_max_workspace``)
and respect the math setting, best first, then the zero-workspace algorithm as the last
resort. A call walks that list: a candidate cuDNN refuses at run time (NOT_SUPPORTED) is
dropped from the cache, and one whose workspace cannot be allocated is skipped for this
call.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from . import _cudnn as C
from . import handles as H
from ._cudnn import CudnnError, api
from .._twins import twin_ops

__all__ = twin_ops("conv")


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


_settings = {"autotune": _env_flag("DNNPY_CUDNN_AUTOTUNE"),
             "allow_tf32": _env_flag("DNNPY_CUDNN_ALLOW_TF32")}


def set_autotune(flag=True):
    """Choose convolution algorithms by timing them (``cudnnFind*AlgorithmEx``) instead of
    by heuristics: slower the first time each shape is seen, sometimes faster after."""
    _settings["autotune"] = bool(flag)


def set_allow_tf32(flag=True):
    """Let float32 convolutions use TF32 tensor cores (results then differ from the CPU
    twin by ~1e-3 relative)."""
    _settings["allow_tf32"] = bool(flag)


def tf32_allowed():
    return _settings["allow_tf32"]


class _Op:
    """One of the three cuDNN convolution calls. Each takes two inputs ``a`` and ``b`` and
    writes ``out``, and its descriptors come in the order (a, b, conv, out); ``kinds`` says
    which of a, b, out are filters."""

    def __init__(self, name, suffix, kinds, zero_algo):
        self.name, self.kinds, self.zero_algo = name, kinds, zero_algo
        self.max_count = f"cudnnGetConvolution{suffix}AlgorithmMaxCount"
        self.heuristic = f"cudnnGetConvolution{suffix}Algorithm_v7"
        self.find = f"cudnnFindConvolution{suffix}AlgorithmEx"
        self.ws_size = f"cudnnGetConvolution{suffix}WorkspaceSize"
        self.run = {"Forward": "cudnnConvolutionForward",
                    "BackwardData": "cudnnConvolutionBackwardData",
                    "BackwardFilter": "cudnnConvolutionBackwardFilter"}[suffix]


_FWD = _Op("conv_forward", "Forward", ("tensor", "filter", "tensor"),
           C.CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)
_BWD_DATA = _Op("conv_backward_data", "BackwardData", ("filter", "tensor", "tensor"),
                C.CUDNN_CONVOLUTION_BWD_DATA_ALGO_0)
_BWD_FILTER = _Op("conv_backward_filters", "BackwardFilter", ("tensor", "tensor", "filter"),
                  C.CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0)

_algorithms = {}            # key -> [(algo, math type, workspace bytes)], best first
_algorithms_lock = threading.Lock()


def _desc(kind, shape, dtype):
    return H.filter_desc(shape, dtype) if kind == "filter" else H.tensor_desc(shape, dtype)


def _base_math(dtype):
    if dtype == np.float64:
        return C.CUDNN_DEFAULT_MATH
    return C.CUDNN_DEFAULT_MATH if _settings["allow_tf32"] else C.CUDNN_FMA_MATH


def _workspace_size(op, h, descs, conv, algo):
    size = ctypes.c_size_t()
    getattr(api(), op.ws_size)(h, descs[0], descs[1], conv, descs[2], algo, ctypes.byref(size))
    return size.value


def _max_count(op, h):
    count = ctypes.c_int()
    getattr(api(), op.max_count)(h, ctypes.byref(count))
    return max(count.value, 1)


def _heuristics(op, h, descs, conv):
    n = _max_count(op, h)
    perfs = (C.AlgoPerf * n)()
    returned = ctypes.c_int()
    getattr(api(), op.heuristic)(h, descs[0], descs[1], conv, descs[2], n,
                                 ctypes.byref(returned), perfs)
    return list(perfs[:returned.value])


def _timed(op, h, descs, conv, a, b, out, what):
    """cudnnFind*AlgorithmEx on a scratch output (the real one may hold values to add to),
    with the largest workspace up to the cap that the device can give."""
    import cupy

    scratch = cupy.empty_like(out)
    nbytes, ws = H.max_workspace(), None
    while nbytes > 0:
        try:
            ws = H.workspace(nbytes, what)
            break
        except H.WorkspaceUnavailable:
            nbytes //= 4
    n = _max_count(op, h)
    perfs = (C.AlgoPerf * n)()
    returned = ctypes.c_int()
    getattr(api(), op.find)(h, descs[0], H.ptr(a), descs[1], H.ptr(b), conv, descs[2],
                            H.ptr(scratch), n, ctypes.byref(returned), perfs,
                            ctypes.c_void_p(ws.ptr if ws is not None else 0),
                            nbytes if ws is not None else 0)
    return list(perfs[:returned.value])


def _candidates(key, op, h, descs, dtype, params, a, b, out, what):
    with _algorithms_lock:
        found = _algorithms.get(key)
    if found is not None:
        return found
    sy, sx, py, px = params
    base = _base_math(dtype)
    conv = H.conv_desc(py, px, sy, sx, dtype, base)
    if _settings["autotune"]:
        perfs = _timed(op, h, descs, conv, a, b, out, what)
    else:
        perfs = _heuristics(op, h, descs, conv)
    cap, tf32 = H.max_workspace(), _settings["allow_tf32"] and dtype != np.float64
    found = []
    for p in perfs:
        if p.status != C.CUDNN_STATUS_SUCCESS:
            continue
        tensor_op = p.mathType in (C.CUDNN_TENSOR_OP_MATH, C.CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        if tensor_op and not tf32:
            continue  # would round float32 inputs to TF32 (or fp16)
        math = p.mathType if tf32 else base
        try:
            size = _workspace_size(op, h, descs, H.conv_desc(py, px, sy, sx, dtype, math), p.algo)
        except CudnnError:
            continue
        if size <= cap and all((p.algo, math) != (f[0], f[1]) for f in found):
            found.append((p.algo, math, size))
    if all(f[0] != op.zero_algo or f[2] != 0 for f in found):
        try:
            size = _workspace_size(op, h, descs, conv, op.zero_algo)
            found.append((op.zero_algo, base, size))
        except CudnnError:
            pass
    with _algorithms_lock:
        _algorithms[key] = found
    return found


def _drop(key, candidate):
    with _algorithms_lock:
        found = _algorithms.get(key)
        if found is not None and candidate in found:
            _algorithms[key] = [f for f in found if f != candidate]


def _run(op, add_to_output, a, b, out_tensor, stride_y, stride_x, padding_y, padding_x):
    """``out (+)= op(a, b)`` through cuDNN; ``a`` and ``b`` are CuPy arrays."""
    import cupy

    out = out_tensor.device() if add_to_output else out_tensor.device_write_only()
    dtype = out.dtype
    params = (int(stride_y), int(stride_x), int(padding_y), int(padding_x))

    def what():
        names = {"conv_forward": ("data", "filters", "output"),
                 "conv_backward_data": ("filters", "gradient_input", "data_gradient"),
                 "conv_backward_filters": ("data", "gradient_input", "filters_gradient")}[op.name]
        return (f"{op.name}: {names[0]}{tuple(a.shape)}, {names[1]}{tuple(b.shape)}, "
                f"{names[2]}{tuple(out.shape)} {dtype}, stride ({params[0]}, {params[1]}), "
                f"padding ({params[2]}, {params[3]})")

    if a.dtype != dtype or b.dtype != dtype:
        raise TypeError(f"{what()}: all tensors must have one dtype, got {a.dtype}, {b.dtype}, {dtype}")
    if out.size == 0:
        return
    if a.size == 0 or b.size == 0:  # an empty sum: the result is 0
        if not add_to_output:
            out.fill(0)
        return
    a, b = H.aligned_input(a), H.aligned_input(b)
    buf, done = H.aligned_output(out, add_to_output)
    h = H.handle()
    descs = tuple(_desc(kind, arr.shape, dtype) for kind, arr in zip(op.kinds, (a, b, buf)))
    key = (cupy.cuda.runtime.getDevice(), op.name, dtype.char, _settings["allow_tf32"],
           _settings["autotune"], H.max_workspace(), a.shape, b.shape, buf.shape, params)
    candidates = _candidates(key, op, h, descs, dtype, params, a, b, buf, what)
    alpha = C.scaling(dtype, 1.0)
    beta = C.scaling(dtype, 1.0 if add_to_output else 0.0)
    sy, sx, py, px = params
    failure = None
    for candidate in list(candidates):
        algo, math, size = candidate
        try:
            ws = H.workspace(size, what)
        except H.WorkspaceUnavailable as e:
            failure = e
            continue  # a later candidate needs less (the last one none)
        try:
            getattr(api(), op.run)(
                h, ctypes.byref(alpha), descs[0], H.ptr(a), descs[1], H.ptr(b),
                H.conv_desc(py, px, sy, sx, dtype, math), algo,
                ctypes.c_void_p(ws.ptr if ws is not None else 0), size,
                ctypes.byref(beta), descs[2], H.ptr(buf))
        except CudnnError as e:
            if 3000 <= e.status < 4000:  # CUDNN_STATUS_NOT_SUPPORTED*: try the next one
                _drop(key, candidate)
                failure = e
                continue
            raise CudnnError(e.function, e.status, e.name, e.detail,
                             context=f"{what()}, algorithm {algo}") from None
        del ws  # back to CuPy's pool; reuse is ordered after the queued call
        done()
        return
    if isinstance(failure, MemoryError):
        raise failure
    raise RuntimeError(f"{what()}: no cuDNN algorithm could run it "
                       f"(tried {[c[0] for c in candidates]}): {failure}")


def conv_forward(add_to_output, output, data, filters, stride_y, stride_x, padding_y, padding_x,
                 biases=None, use_relu=False):
    _run(_FWD, add_to_output, data.device_read(), filters.device_read(), output,
         stride_y, stride_x, padding_y, padding_x)
    import cupy  # (this module imports without CuPy: the GPU-free binding tests load it)

    out = output.device()
    if biases is not None:
        out += biases.device_read().reshape(1, -1, 1, 1)   # (1, K, 1, 1) or any K elements
    if use_relu:
        cupy.maximum(out, out.dtype.type(0), out=out)      # NaN propagates, as ops.relu


def conv_backward_data(add_to_output, gradient_input, filters, data_gradient,
                       stride_y, stride_x, padding_y, padding_x):
    _run(_BWD_DATA, add_to_output, filters.device_read(), gradient_input.device_read(),
         data_gradient, stride_y, stride_x, padding_y, padding_x)


def conv_backward_filters(add_to_output, gradient_input, data, filters_gradient,
                          stride_y, stride_x, padding_y, padding_x, bias_gradient=None):
    _run(_BWD_FILTER, add_to_output, data.device_read(), gradient_input.device_read(),
         filters_gradient, stride_y, stride_x, padding_y, padding_x)
    if bias_gradient is not None:   # as ops.assign_conv_bias_gradient
        import cupy

        g = gradient_input.device_read()
        n, k = g.shape[0], g.shape[1]
        cupy.sum(g.reshape(n, k, -1), axis=(0, 2), out=bias_gradient.device_write_only().reshape(k))
