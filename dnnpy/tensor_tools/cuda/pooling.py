"""CUDA twin of pooling: cuDNN 9's ``cudnnPoolingForward`` / ``cudnnPoolingBackward``.

Same names, signatures and semantics as ``pooling_forward`` / ``pooling_backward`` in
``cpu/spatial.py`` (the dispatcher ``tt.pooling`` has checked the shapes; a whole-input
window, dlib's ``nr = nc = 0``, arrives here as an ordinary window the size of the input).

dlib's semantics map onto cuDNN's: the window of output ``(r, c)`` starts at
``(r*stride_y - padding_y, c*stride_x - padding_x)``; max pooling is ``CUDNN_POOLING_MAX``
(padding never wins a max), average pooling ``CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING``
(the mean over the pixels inside the image); NaN propagates. The forward assigns (beta 0:
the destination is not read); the backward ADDS to ``grad`` (beta 1), as dlib's, or with
``add_to=False`` assigns it (beta 0). ``state`` (``tt.pooling``'s workspace dict) is not
used: cuDNN's backward recomputes the maxima from ``src`` and ``dest``.
"""

from __future__ import annotations

import ctypes

from . import _cudnn as C
from . import handles as H
from ._cudnn import CudnnError, api
from .._twins import twin_ops

__all__ = twin_ops("pooling")

# dlib's choice; CUDNN_POOLING_MAX_DETERMINISTIC is the deterministic-backward variant
MAX_MODE = C.CUDNN_POOLING_MAX


def _mode(do_max):
    return MAX_MODE if do_max else C.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING


def _what(op, do_max, wh, ww, sy, sx, py, px, **shapes):
    detail = ", ".join(f"{name}{tuple(a.shape)}" for name, a in shapes.items())
    return (f"{op} ({'max' if do_max else 'avg'} {wh}x{ww}, stride ({sy}, {sx}), padding "
            f"({py}, {px})): {detail}")


def pooling_forward(dest, src, do_max, wh, ww, sy, sx, py, px, state=None):
    x = H.aligned_input(src.device_read())
    out = dest.device_write_only()
    if out.size == 0:
        return
    y, done = H.aligned_output(out, False)
    dtype = y.dtype
    h = H.handle()
    alpha, beta = C.scaling(dtype, 1.0), C.scaling(dtype, 0.0)
    try:
        api().cudnnPoolingForward(
            h, H.pooling_desc(_mode(do_max), wh, ww, py, px, sy, sx), ctypes.byref(alpha),
            H.tensor_desc(x.shape, dtype), H.ptr(x), ctypes.byref(beta),
            H.tensor_desc(y.shape, dtype), H.ptr(y))
    except CudnnError as e:
        raise CudnnError(e.function, e.status, e.name, e.detail, context=_what(
            "pooling_forward", do_max, wh, ww, sy, sx, py, px, src=x, dest=y)) from None
    done()


def pooling_backward(gradient_input, dest, src, grad, do_max, wh, ww, sy, sx, py, px,
                     add_to=True, state=None):
    dy = H.aligned_input(gradient_input.device_read())
    y = H.aligned_input(dest.device_read())
    x = H.aligned_input(src.device_read())
    g = grad.device() if add_to else grad.device_write_only()
    if g.size == 0:
        return
    if dy.size == 0:  # no windows: nothing flows back
        if not add_to:
            g.fill(0)
        return
    dx, done = H.aligned_output(g, add_to)
    dtype = dx.dtype
    h = H.handle()
    alpha, beta = C.scaling(dtype, 1.0), C.scaling(dtype, 1.0 if add_to else 0.0)
    try:
        api().cudnnPoolingBackward(
            h, H.pooling_desc(_mode(do_max), wh, ww, py, px, sy, sx), ctypes.byref(alpha),
            H.tensor_desc(y.shape, dtype), H.ptr(y), H.tensor_desc(dy.shape, dtype), H.ptr(dy),
            H.tensor_desc(x.shape, dtype), H.ptr(x), ctypes.byref(beta),
            H.tensor_desc(dx.shape, dtype), H.ptr(dx))
    except CudnnError as e:
        raise CudnnError(e.function, e.status, e.name, e.detail, context=_what(
            "pooling_backward", do_max, wh, ww, sy, sx, py, px, gradient_input=dy, dest=y,
            src=x, grad=dx)) from None
    done()
