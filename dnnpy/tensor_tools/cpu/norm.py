"""CPU twin of the normalisation and tensor-coefficient affine ops (numpy, vectorised).

The dispatchers have checked the shapes and sized every output. Arithmetic runs in the
tensors' dtype; statistics (means, variances, RMS) are accumulated in float64 as dlib
accumulates its Welford sums in double. Layer and RMS norm gradients follow dlib's formulas
term by term (including terms that vanish mathematically); batch norm's uses the equivalent
per-channel affine form (``_bn_gradient``), a third of the memory passes, as close to a
float64 reference.
"""

import numpy as np
from .._twins import twin_ops
from . import onednn
from ._common import scratch

__all__ = twin_ops("norm")

# Reduction axes of the batch statistics: FC over samples; CONV over samples, rows, columns.
_FC_AXES = (0,)
_CONV_AXES = (0, 2, 3)
_SAMPLE_AXES = (1, 2, 3)   # layer / RMS norm: over everything in a sample


def _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    x = src.host_read()
    dt = x.dtype
    invstd = (1.0 / np.sqrt(running_variances.host_read().astype(np.float64) + eps)).astype(dt)
    out = dest.host_write_only() if dest is not src else dest.host()
    out[...] = gamma.host_read() * ((x - running_means.host_read()) * invstd) + beta.host_read()


def batch_normalize_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances)


def batch_normalize_conv_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances)


def _channels(a, conv):
    """``a`` as ``(N, C, L)``: CONV statistics reduce axes (0, 2) of ``(N, k, nr*nc)``; FC
    ones reduce axis 0 of ``(N, k*nr*nc)``, seen as ``(N, k*nr*nc, 1)`` (same axes)."""
    n = a.shape[0]
    return a.reshape(n, a.shape[1], -1) if conv else a.reshape(n, -1, 1)


def _channel_sums(a, b=None):
    """Per channel of ``(N, C, L)`` views: ``sum(a)`` or ``sum(a*b)`` as float64 ``(C,)``.
    Each ``(n, c)`` row of L values is summed in the data's dtype (numpy's pairwise sum, or
    one SIMD dot product per row), the N row sums in float64: the accuracy of dlib's double
    sums at a fraction of the cost of casting the batch to float64."""
    rows = a.sum(axis=2) if b is None else np.einsum("ncl,ncl->nc", a, b)
    return rows.sum(axis=0, dtype=np.float64)


def _bn_train(conv, eps, dest, means, invstds, f, running_means, running_variances, src,
              gamma, beta):
    """Batch statistics accumulated in float64 (``_channel_sums``) without a float64 copy of
    the batch: the mean; then ``d = x - mean`` (the mean as stored, in the dtype) is formed
    once, in dest, and the biased variance is ``E[d**2] - E[d]**2`` (``E[d]`` is the tiny
    correction for the stored mean's rounding, so this is the two-pass variance, not the
    cancelling ``E[x**2] - E[x]**2``). The output is ``d*(s*g) + b`` in place on d.
    Conv mode runs on oneDNN's blocked values where the input has them (``_bn_blocked``)."""
    if conv and _bn_blocked(eps, dest, means, invstds, f, running_means, running_variances,
                            src, gamma, beta):
        return
    x = src.host_read()
    x3 = _channels(x, conv)
    count = x3.shape[0] * x3.shape[2]
    mean = _channel_sums(x3) / count
    means.host_write_only()[...] = mean.reshape(means.shape)
    m = means.host_read()
    out = dest.host_write_only() if dest is not src else dest.host()
    d = _channels(out, conv)
    np.subtract(x3, _channels(m, conv), out=d)
    shift = _channel_sums(d) / count
    var = np.maximum(_channel_sums(d, d) / count - shift * shift, 0.0)   # biased, as dlib's M2/count
    _store_statistics(eps, mean, var, count, f, invstds, running_means, running_variances)
    d *= _channels(invstds.host_read() * gamma.host_read(), conv)
    d += _channels(beta.host_read(), conv)


def _store_statistics(eps, mean, var, count, f, invstds, running_means, running_variances):
    """``invstds`` from the biased variance, and the running statistics (dlib's unbiased
    running variance) updated by the averaging factor ``f``."""
    unbiased = var * (count / (count - 1.0))
    invstd = 1.0 / np.sqrt(var + eps)
    invstds.host_write_only()[...] = invstd.reshape(invstds.shape)
    if f == 1:
        running_means.host_write_only()[...] = mean.reshape(running_means.shape)
        running_variances.host_write_only()[...] = unbiased.reshape(running_variances.shape)
    else:
        rm = running_means.host()
        rm[...] = (1 - f) * rm.astype(np.float64) + f * mean.reshape(rm.shape)
        rv = running_variances.host()
        rv[...] = (1 - f) * rv.astype(np.float64) + f * unbiased.reshape(rv.shape)


def _bn_blocked(eps, dest, means, invstds, f, running_means, running_variances, src, gamma,
                beta):
    """``_bn_train``'s conv mode on the blocked values of ``src`` (a convolution's output
    left in oneDNN's ``nChw{b}c`` layout), written to ``dest``'s blocked values: the same
    statistics, with rows summed over a row of pixels in float32 and those sums in float64
    (``_blocked_sums``). False when ``src`` has no such values."""
    m = onednn.mirrored_blocks(dest, (src,), params=(gamma, beta, means, invstds))
    if m is None:
        return False
    out, (xm,), commit = m
    x, d, lanes = xm.blocks(), out.blocks(), xm.lanes()
    n, _, h, w = xm.shape
    count = n * h * w
    mean = _blocked_sums(x, lanes) / count
    means.host_write_only()[...] = mean.reshape(means.shape)
    m32 = means.host_read().reshape(-1)
    # d = x - mean: oneDNN's x*1 + (-mean) is that subtraction's rounding, in one pass
    ones = np.ones_like(m32)
    if not onednn.scale_shift_blocked(xm, out, ones, np.negative(m32)):
        np.subtract(x, onednn.channel_view(m32, xm), out=d)
    # E[d] is the stored mean's rounding, known without a pass over d
    shift = mean - m32.astype(np.float64)
    squares = np.square(d, out=scratch("bn_squares", d.shape, d.dtype))
    var = np.maximum(_blocked_sums(squares, lanes) / count - shift * shift, 0.0)
    _store_statistics(eps, mean, var, count, f, invstds, running_means, running_variances)
    scale = (invstds.host_read() * gamma.host_read()).reshape(-1)
    shifts = beta.host_read().reshape(-1)
    # one oneDNN pass with numpy's roundings (product, then sum), else numpy's two
    if not onednn.scale_shift_blocked(out, out, np.ascontiguousarray(scale),
                                      np.ascontiguousarray(shifts)):
        d *= onednn.channel_view(scale, xm)
        d += onednn.channel_view(shifts, xm)
    commit()
    return True


def _blocked_sums(a, lanes):
    """Per channel of blocked values ``(N, C/b, H, W*b)`` (``Mirror.blocks``), ``sum(a)`` as
    float64 ``(C,)``: each row of W pixels summed in the data's dtype (a matrix product with
    ones), the N*H row sums in float64."""
    n, cb, h, wb = a.shape
    w = wb // lanes
    sums = np.matmul(np.ones(w, a.dtype), a.reshape(-1, w, lanes))
    return sums.reshape(n, cb, h, lanes).sum(axis=(0, 2), dtype=np.float64).reshape(-1)


def batch_normalize(eps, dest, means, invstds, averaging_factor, running_means,
                    running_variances, src, gamma, beta):
    _bn_train(False, eps, dest, means, invstds, averaging_factor, running_means,
              running_variances, src, gamma, beta)


def batch_normalize_conv(eps, dest, means, invstds, averaging_factor, running_means,
                         running_variances, src, gamma, beta):
    _bn_train(True, eps, dest, means, invstds, averaging_factor, running_means,
              running_variances, src, gamma, beta)


def _normalize_gradient(stat_axes, param_axes, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, dmeans=None, dvars=None, add_to=True):
    """dlib's three-pass gradient of ``(x - m)*invstd*gamma + beta`` where m and invstd are
    statistics over ``stat_axes`` and gamma/beta are shared over ``param_axes``."""
    g = gradient_input.host_read()
    x = src.host_read()
    shape = g.shape
    m = means.host_read().reshape(_stat_shape(shape, stat_axes))
    inv = invstds.host_read().reshape(_stat_shape(shape, stat_axes))
    gam = gamma.host_read()
    invnum = 1.0 / (g.size // m.size)

    xm = x - m
    beta_grad.host_write_only()[...] = g.sum(axis=param_axes, keepdims=True)
    gamma_grad.host_write_only()[...] = (g * (xm * inv)).sum(axis=param_axes, keepdims=True)

    dx = g * gam
    dvar = (dx * xm).sum(axis=stat_axes, keepdims=True) * (-0.5 * inv ** 3)
    dmean = ((-dx * inv).sum(axis=stat_axes, keepdims=True)
             + dvar * (-2 * invnum) * xm.sum(axis=stat_axes, keepdims=True))
    if dmeans is not None:
        dmeans.host_write_only()[...] = dmean.reshape(dmeans.shape)
        dvars.host_write_only()[...] = dvar.reshape(dvars.shape)
    result = dx * inv + dvar * (2 * invnum) * xm + dmean * invnum
    if add_to:
        src_grad.host()[...] += result
    else:
        src_grad.host_write_only()[...] = result


def _stat_shape(shape, stat_axes):
    return tuple(1 if i in stat_axes else d for i, d in enumerate(shape))


def _bn_gradient(conv, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
                 beta_grad, add_to):
    """The gradient of ``y = (x - m)*invstd*gamma + beta`` through the batch statistics, in
    its per-channel affine form: with ``d = x - m``, ``M`` values per channel,
    ``dbeta = sum(g)`` and ``dgamma = invstd*sum(g*d)``,
    ``dx = A*g + B*d + C`` where ``A = gamma*invstd``, ``B = -A*invstd*dgamma/M`` and
    ``C = -A*dbeta/M``. Algebraically dlib's three-pass formula (whose extra terms vanish);
    sums in float64 (``_channel_sums``), two full-size passes to read and three to write
    instead of a dozen. Against a float64 reference it is as close as dlib's form (~1e-7)."""
    g = _channels(gradient_input.host_read(), conv)
    x = _channels(src.host_read(), conv)
    m = _channels(means.host_read(), conv)
    inv = invstds.host_read().reshape(-1).astype(np.float64)
    gam = gamma.host_read().reshape(-1).astype(np.float64)
    count = x.shape[0] * x.shape[2]
    d = np.subtract(x, m, out=scratch("bn_d", x.shape, x.dtype))
    dbeta = _channel_sums(g)
    dgamma = _channel_sums(g, d) * inv
    beta_grad.host_write_only()[...] = dbeta.reshape(beta_grad.shape)
    gamma_grad.host_write_only()[...] = dgamma.reshape(gamma_grad.shape)
    a = gam * inv
    shape = (1, -1, 1)
    d *= (-a * inv * dgamma / count).astype(x.dtype).reshape(shape)
    d += (-a * dbeta / count).astype(x.dtype).reshape(shape)
    coef = a.astype(x.dtype).reshape(shape)
    out = _channels(src_grad.host() if add_to else src_grad.host_write_only(), conv)
    if add_to:
        d += np.multiply(g, coef, out=scratch("bn_ga", x.shape, x.dtype))
        out += d
    else:
        np.multiply(g, coef, out=out)
        out += d


def batch_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, add_to=True):
    if onednn.batch_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                       gamma_grad, beta_grad, add_to):
        return
    _bn_gradient(False, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
                 beta_grad, add_to)


def batch_normalize_conv_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                  gamma_grad, beta_grad, add_to=True):
    if onednn.batch_normalize_conv_gradient(eps, gradient_input, means, invstds, src, gamma,
                                            src_grad, gamma_grad, beta_grad, add_to):
        return
    _bn_gradient(True, gradient_input, means, invstds, src, gamma, src_grad, gamma_grad,
                 beta_grad, add_to)


def layer_normalize(eps, dest, means, invstds, src, gamma, beta):
    x = src.host_read()
    n = x.shape[0]
    x64 = x.reshape(n, -1).astype(np.float64)
    mean = x64.mean(axis=1)
    # dlib's implementation: E[x^2] - E[x]^2 (not a two-pass variance)
    var = np.square(x64).mean(axis=1) - mean * mean
    means.host_write_only()[...] = mean.reshape(means.shape)
    invstds.host_write_only()[...] = (1.0 / np.sqrt(var + eps)).reshape(invstds.shape)
    m = means.host_read().reshape(n, 1, 1, 1)
    s = invstds.host_read().reshape(n, 1, 1, 1)
    out = dest.host_write_only() if dest is not src else dest.host()
    out[...] = ((x - m) * s) * gamma.host_read() + beta.host_read()


def layer_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, dmeans, dvars):
    _normalize_gradient(_SAMPLE_AXES, _CONV_AXES, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, dmeans, dvars)


def rms_normalize(eps, dest, scale, src, gamma):
    x = src.host_read()
    n = x.shape[0]
    ms = np.square(x.reshape(n, -1).astype(np.float64)).mean(axis=1)
    scale.host_write_only()[...] = (1.0 / np.sqrt(ms + eps)).reshape(scale.shape)
    s = scale.host_read().reshape(n, 1, 1, 1)
    out = dest.host_write_only() if dest is not src else dest.host()
    out[...] = (x * s) * gamma.host_read()


def rms_normalize_gradient(gradient_input, scale, src, gamma, src_grad, gamma_grad, dscale):
    g = gradient_input.host_read()
    x = src.host_read()
    n = g.shape[0]
    s = scale.host_read().reshape(n, 1, 1, 1)
    invnum = 1.0 / (g.size // n)
    gamma_grad.host_write_only()[...] = (g * (x * s)).sum(axis=_CONV_AXES, keepdims=True)
    dx = g * gamma.host_read()
    ds = (dx * x).sum(axis=_SAMPLE_AXES, keepdims=True) * (-0.5 * s ** 3)
    dscale.host_write_only()[...] = ds.reshape(dscale.shape)
    src_grad.host()[...] += dx * s + ds * (2 * invnum) * x


def _affine_into(dest, src, A, B):
    """``dest = A*src + B`` (A and B broadcast): two passes written straight into dest, the
    same float32 operations as ``A*src + B``; a dest overlapping src elsewhere than in place,
    or A or B, goes through a temporary."""
    a, b, x = A.host_read(), B.host_read(), src.host_read()
    if (dest.overlaps_elsewhere(src) or dest.shape != src.shape or dest.is_aliased_with(A)
            or dest.is_aliased_with(B)):
        dest.host()[...] = a * x + b
        return
    out = dest.host() if dest.is_aliased_with(src) else dest.host_write_only()
    np.multiply(x, a, out=out)
    out += b


def affine_transform_conv(dest, src, A, B):
    if onednn.affine_transform_conv(dest, src, A, B):
        return
    _affine_into(dest, src, A, B)


def affine_transform_tensors(dest, src, A, B):
    _affine_into(dest, src, A, B)


def multiply_conv(add_to, dest, src1, src2):
    a = src1.host_read()
    b = src2.host_read()
    if dest.shape == src1.shape:
        prod = a * b
    else:
        prod = (a * b).sum(axis=_CONV_AXES, keepdims=True)
    if add_to:
        dest.host()[...] += prod
    else:
        dest.host_write_only()[...] = prod
