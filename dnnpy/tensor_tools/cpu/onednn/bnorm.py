"""oneDNN's batch normalization backward for the CPU twin's ``batch_normalize[_conv]_gradient``.

The training forward is not here (it is numpy's, on NCHW or blocked values): oneDNN accumulates its batch statistics in float32, which
on data of mean 10 gives means 200x and variances 200x less accurate than dlib's double sums
(measured on (64,16,32,32) and (16,32,150,150): mean error 1.2e-4 / 2.1e-4 against 5e-7,
variance relative error 1.9e-5 / 1.3e-4 against 9e-8 / 8e-7), enough to fail dlib's
``test_batch_normalize_conv`` central-difference check; the numpy twin's float64-accumulated
two-pass statistics were also as fast on 2 threads (1.5 against 1.8 ms, 18.7 against
19.1 ms). The backward takes the statistics as inputs, so it uses the numpy twin's.

Conv mode is oneDNN's NCHW batch norm as is, or its blocked kernel on blocked values (a
convolution's output kept in its layout, ``layout.py``; 3x faster); FC mode (one statistic per (k, r, c), over
the samples) is the batch norm of the ``(N, k*r*c, 1, 1)`` view. dnnpy stores
``invstds = 1/sqrt(var + eps)``; oneDNN wants the biased variance back:
``var = 1/invstd**2 - eps`` in float64. oneDNN's backward assigns the source gradient; dlib
adds, so ``add_to`` adds through scratch. Scale and shift gradients are assigned, as dlib's.
"""

from __future__ import annotations

import numpy as np

from . import _api as A
from . import _primitive as P
from ._common import OwnedPD, assign_or_add, cached, float32_tensors, scratch
from ._state import active
from .layout import channel_tag, mirrored_blocks

__all__ = ["batch_normalize_gradient", "batch_normalize_conv_gradient"]

_SRC = A.ARGS["DNNL_ARG_SRC"]
_MEAN, _VAR = A.ARGS["DNNL_ARG_MEAN"], A.ARGS["DNNL_ARG_VARIANCE"]
_SCALE = A.ARGS["DNNL_ARG_SCALE"]
_DIFF_SRC, _DIFF_DST = A.ARGS["DNNL_ARG_DIFF_SRC"], A.ARGS["DNNL_ARG_DIFF_DST"]
_DIFF_SCALE, _DIFF_SHIFT = A.ARGS["DNNL_ARG_DIFF_SCALE"], A.ARGS["DNNL_ARG_DIFF_SHIFT"]
_FLAGS = A.ENUMS["dnnl_use_scale"] | A.ENUMS["dnnl_use_shift"]
_cache = P.Cache()


def _nchw(shape, conv):
    n, k, r, c = shape
    return (n, k, r, c) if conv else (n, k * r * c, 1, 1)


def _forward_pd(data_md, eps):
    return A.api().new("dnnl_batch_normalization_forward_primitive_desc_create", P.engine(),
                       A.ENUMS["dnnl_forward_training"], data_md.handle, data_md.handle,
                       float(eps), _FLAGS, None)


def _build_backward(shape, eps, lanes=0):
    """The backward primitive on NCHW data, or on ``nChw{lanes}c`` blocked data."""
    data_md = P.MemoryDesc(shape, channel_tag(lanes))
    stat_md = P.plain((shape[1],))
    hint = None
    try:
        hint = OwnedPD(_forward_pd(data_md, eps))
        pd = A.api().new("dnnl_batch_normalization_backward_primitive_desc_create", P.engine(),
                         A.ENUMS["dnnl_backward"], data_md.handle, data_md.handle,
                         data_md.handle, float(eps), _FLAGS, hint.handle, None)
    except Exception:
        for o in (data_md, stat_md, hint):
            if o is not None:
                o.destroy()
        raise
    return P.Primitive(pd, {_SRC: data_md, _MEAN: stat_md, _VAR: stat_md, _DIFF_DST: data_md,
                            _SCALE: stat_md, _DIFF_SRC: data_md, _DIFF_SCALE: stat_md,
                            _DIFF_SHIFT: stat_md}, owned=[data_md, stat_md, hint])


def _gradient(conv, eps, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
              beta_grad, add_to):
    if not active():
        return False
    if conv and _blocked_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                  gamma_grad, beta_grad, add_to):
        return True
    x = src.host_read()
    g = gradient_input.host_read()
    m, inv, gam = means.host_read(), invstds.host_read(), gamma.host_read()
    if (not P.f32_contiguous(x, g, m, inv, gam)
            or not float32_tensors(src_grad, gamma_grad, beta_grad)
            or x.size == 0 or x.shape[0] < 2):
        return False
    shape = _nchw(x.shape, conv)
    op = "batch_normalize_conv_gradient" if conv else "batch_normalize_gradient"
    prim = cached(_cache, (op, shape, float(eps)), lambda: _build_backward(shape, eps),
                  work=2 * x.size)     # two passes over the data
    if prim is None:
        return False
    buffers = {_SRC: x, _MEAN: m, _VAR: _variances(eps, invstds), _DIFF_DST: g, _SCALE: gam,
               _DIFF_SCALE: gamma_grad.host_write_only(), _DIFF_SHIFT: beta_grad.host_write_only()}
    if not add_to and not (src_grad.is_aliased_with(src)
                           or src_grad.is_aliased_with(gradient_input)):
        prim({**buffers, _DIFF_SRC: src_grad.host_write_only()})
        return True
    tmp = scratch("bn_src_grad", x.shape)
    prim({**buffers, _DIFF_SRC: tmp})
    out = src_grad.host()
    if add_to:
        np.add(out, tmp, out=out)
    else:
        out[...] = tmp
    return True


def _variances(eps, invstds):
    """oneDNN's biased variances from dnnpy's ``invstds``: ``1/invstd**2 - eps``, in float64."""
    var = scratch("bn_var", (invstds.size(),))
    var[...] = 1.0 / np.square(invstds.host_read().astype(np.float64)).reshape(-1) - eps
    return var


def _blocked_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
                      beta_grad, add_to):
    """The conv-mode gradient on blocked values: ``src`` and ``gradient_input`` held in one
    ``nChw{b}c`` layout (``layout.mirrored``; the first must have it), ``src_grad`` written
    (or added to) in it. False when they are not (or ``src_grad`` is one of them)."""
    if src_grad is src or src_grad is gradient_input or src.num_samples() < 2:
        return False
    got = mirrored_blocks(src_grad, (src, gradient_input), add_to,
                          (means, invstds, gamma, gamma_grad, beta_grad))
    if got is None:
        return False
    out, (x, g), commit = got
    lanes, shape = x.lanes(), x.shape
    prim = cached(_cache, ("batch_normalize_conv_gradient", shape, float(eps), lanes),
                  lambda: _build_backward(shape, eps, lanes), work=2 * x.floats.size)
    if prim is None:
        return False
    buffers = {_SRC: x.address, _MEAN: means.host_read(), _VAR: _variances(eps, invstds),
               _DIFF_DST: g.address, _SCALE: gamma.host_read(),
               _DIFF_SCALE: gamma_grad.host_write_only(), _DIFF_SHIFT: beta_grad.host_write_only()}
    assign_or_add(prim, buffers, _DIFF_SRC, out.floats, add_to, "bn_src_grad")
    commit()
    return True


def batch_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, add_to=True) -> bool:
    """FC-mode gradient: src_grad added to (assigned when ``add_to`` is False), gamma_grad
    and beta_grad assigned; False: numpy must run."""
    return _gradient(False, eps, gradient_input, means, invstds, src, gamma, src_grad,
                     gamma_grad, beta_grad, add_to)


def batch_normalize_conv_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                  gamma_grad, beta_grad, add_to=True) -> bool:
    """Conv-mode gradient, as ``batch_normalize_gradient``."""
    return _gradient(True, eps, gradient_input, means, invstds, src, gamma, src_grad,
                     gamma_grad, beta_grad, add_to)
