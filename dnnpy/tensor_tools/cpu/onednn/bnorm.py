"""oneDNN's batch normalization (training forward and backward) for the CPU twin's
``batch_normalize[_conv]`` and their gradients. Inference mode (one affine) stays numpy.

Conv mode is oneDNN's NCHW batch norm as is; FC mode (one statistic per (k, r, c), over
the samples) is the batch norm of the ``(N, k*r*c, 1, 1)`` view.

dlib's contract against oneDNN's: the forward returns the mean and the *biased* variance;
dnnpy stores ``means`` and ``invstds = 1/sqrt(var + eps)`` (float64 arithmetic, as the
numpy twin), and updates the running statistics in numpy on the K floats exactly as the
numpy twin does (float64, unbiased ``var*M/(M-1)``, ``f == 1`` assigns). The backward wants
the variance back: ``var = 1/invstd**2 - eps`` in float64. oneDNN's backward assigns the
source gradient; dlib adds, so ``add_to`` adds through scratch. Scale and shift gradients
are assigned, as dlib's.

Agreement: oneDNN accumulates its statistics in float32 where numpy (and dlib) use
float64; the tests bound the relative differences (tests/test_onednn_ops.py).
"""

from __future__ import annotations

import numpy as np

from . import _api as A
from . import _primitive as P
from ._common import OwnedPD, cached, float32_tensors, scratch
from ._state import active

__all__ = ["batch_normalize", "batch_normalize_conv", "batch_normalize_gradient",
           "batch_normalize_conv_gradient"]

_SRC, _DST = A.ARGS["DNNL_ARG_SRC"], A.ARGS["DNNL_ARG_DST"]
_MEAN, _VAR = A.ARGS["DNNL_ARG_MEAN"], A.ARGS["DNNL_ARG_VARIANCE"]
_SCALE, _SHIFT = A.ARGS["DNNL_ARG_SCALE"], A.ARGS["DNNL_ARG_SHIFT"]
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


def _build_forward(shape, eps):
    data_md, stat_md = P.plain(shape), P.plain((shape[1],))
    try:
        pd = _forward_pd(data_md, eps)
    except Exception:
        data_md.destroy()
        stat_md.destroy()
        raise
    return P.Primitive(pd, {_SRC: data_md, _DST: data_md, _MEAN: stat_md, _VAR: stat_md,
                            _SCALE: stat_md, _SHIFT: stat_md}, owned=[data_md, stat_md])


def _build_backward(shape, eps):
    data_md, stat_md = P.plain(shape), P.plain((shape[1],))
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


def _train(conv, eps, dest, means, invstds, f, running_means, running_variances, src, gamma,
           beta):
    if not active() or dest.is_aliased_with(src):
        return False
    x = src.host_read()
    gam, bet = gamma.host_read(), beta.host_read()
    if (not P.f32_contiguous(x, gam, bet) or not float32_tensors(dest, means, invstds)
            or x.size == 0 or x.shape[0] < 2):
        return False
    shape = _nchw(x.shape, conv)
    op = "batch_normalize_conv" if conv else "batch_normalize"
    prim = cached(_cache, (op, shape, float(eps)), lambda: _build_forward(shape, eps))
    if prim is None:
        return False
    k = shape[1]
    mean = scratch("bn_mean", (k,))
    var = scratch("bn_var", (k,))
    prim({_SRC: x, _DST: dest.host_write_only(), _MEAN: mean, _VAR: var, _SCALE: gam,
          _SHIFT: bet})
    # dlib's statistics from oneDNN's, in float64 as the numpy twin
    mean64 = mean.astype(np.float64).reshape(means.shape)
    var64 = var.astype(np.float64).reshape(means.shape)
    count = x.size // k
    unbiased = var64 * (count / (count - 1.0))
    means.host_write_only()[...] = mean64
    invstds.host_write_only()[...] = 1.0 / np.sqrt(var64 + eps)
    if f == 1:
        running_means.host_write_only()[...] = mean64
        running_variances.host_write_only()[...] = unbiased
    else:
        rm = running_means.host()
        rm[...] = (1 - f) * rm.astype(np.float64) + f * mean64
        rv = running_variances.host()
        rv[...] = (1 - f) * rv.astype(np.float64) + f * unbiased
    return True


def _gradient(conv, eps, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
              beta_grad, add_to):
    if not active():
        return False
    x = src.host_read()
    g = gradient_input.host_read()
    m, inv, gam = means.host_read(), invstds.host_read(), gamma.host_read()
    if (not P.f32_contiguous(x, g, m, inv, gam)
            or not float32_tensors(src_grad, gamma_grad, beta_grad)
            or x.size == 0 or x.shape[0] < 2):
        return False
    shape = _nchw(x.shape, conv)
    op = "batch_normalize_conv_gradient" if conv else "batch_normalize_gradient"
    prim = cached(_cache, (op, shape, float(eps)), lambda: _build_backward(shape, eps))
    if prim is None:
        return False
    var = scratch("bn_var", (shape[1],))
    var[...] = 1.0 / np.square(inv.astype(np.float64)).reshape(-1) - eps
    buffers = {_SRC: x, _MEAN: m, _VAR: var, _DIFF_DST: g, _SCALE: gam,
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


def batch_normalize(eps, dest, means, invstds, averaging_factor, running_means,
                    running_variances, src, gamma, beta) -> bool:
    """FC-mode training batch norm (the numpy twin's contract); False: numpy must run."""
    return _train(False, eps, dest, means, invstds, averaging_factor, running_means,
                  running_variances, src, gamma, beta)


def batch_normalize_conv(eps, dest, means, invstds, averaging_factor, running_means,
                         running_variances, src, gamma, beta) -> bool:
    """Conv-mode (per channel) training batch norm; False: numpy must run."""
    return _train(True, eps, dest, means, invstds, averaging_factor, running_means,
                  running_variances, src, gamma, beta)


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
