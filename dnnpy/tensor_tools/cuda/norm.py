"""CUDA twin of the normalisation and tensor-coefficient affine ops (``cpu/norm.py``).

Same names, signatures and semantics; the dispatchers have checked the shapes and sized
every output. As in the CPU twin, statistics (means, variances, mean squares) are
accumulated in float64 and rounded once to the dtype; the other sums (parameter
gradients, the gradient's per-statistic sums) are accumulated in double too, where the
CPU twin sums in the dtype: the GPU result is the more accurate one, and the two agree to
the CPU's summation error. Element-wise steps follow the CPU formulas term by term in the
dtype, compiled without FMA contraction (see ``activations.py``).
"""

import cupy as cp

from ._kernels import _ew, _out, _read, _red, _sum, _sum_f64, _sum_sq_f64
from .._twins import twin_ops

__all__ = twin_ops("norm")

# Reduction axes of the batch statistics: FC over samples; CONV over samples, rows, columns.
_FC_AXES = (0,)
_CONV_AXES = (0, 2, 3)
_SAMPLE_AXES = (1, 2, 3)   # layer / RMS norm: over everything in a sample

# sum of squared deviations from a float64 mean (the CPU twin's two-pass variance)
_sq_dev_f64 = _red("T x, float64 m", "((double)x - m) * ((double)x - m)", "sq_dev_f64",
                   out_type="float64")
# dest = ((x - m)*s)*g + b: every normalisation's output (b = 0 for RMS norm, m = 0 too)
_normalized = _ew("T x, T m, T s, T g, T b", "T y", "y = ((x - m) * s) * g + b;", "normalized")
_rms_out = _ew("T x, T s, T g", "T y", "y = (x * s) * g;", "rms_normalized")

# the three per-statistic sums of dlib's normalisation gradient, and the gamma gradient
_sum_gamma = _red("T g, T x, T m, T s", "(double)(g * ((x - m) * s))", "norm_gamma_grad")
_sum_dvar = _red("T g, T gam, T x, T m", "(double)((g * gam) * (x - m))", "norm_dvar")
_sum_dmean = _red("T g, T gam, T s", "(double)(-(g * gam) * s)", "norm_dmean")
_sum_xm = _red("T x, T m", "(double)(x - m)", "norm_sum_xm")
_norm_src_grad = _ew(
    "T g, T gam, T x, T m, T s, T dvar, T dmean, T c2, T c1", "T o",
    "T dx = g * gam; T xm = x - m;"
    " o = o + ((dx * s + (dvar * c2) * xm) + dmean * c1);",
    "norm_src_grad")
_norm_src_grad_assign = _ew(
    "T g, T gam, T x, T m, T s, T dvar, T dmean, T c2, T c1", "T o",
    "T dx = g * gam; T xm = x - m;"
    " o = (dx * s + (dvar * c2) * xm) + dmean * c1;",
    "norm_src_grad_assign")

_sum_rms_gamma = _red("T g, T x, T s", "(double)(g * (x * s))", "rms_gamma_grad")
_sum_rms_ds = _red("T g, T gam, T x", "(double)((g * gam) * x)", "rms_ds")
_rms_src_grad = _ew("T g, T gam, T x, T s, T ds, T c2", "T o",
                    "T dx = g * gam; o = o + (dx * s + (ds * c2) * x);", "rms_src_grad")

_affine = _ew("T a, T x, T b", "T y", "y = a * x + b;", "affine_tensors")
_mul_assign = _ew("T a, T b", "T y", "y = a * b;", "multiply_conv_assign")
_mul_add = _ew("T a, T b", "T y", "y = y + a * b;", "multiply_conv_add")
_sum_prod = _red("T x, T w", "(double)(x * w)", "multiply_conv_sum")


def _assign(t, values):
    """Assign an array (any float dtype, t's shape up to a reshape) to tensor t."""
    cp.copyto(t.device_write_only(), values.reshape(t.shape), casting="unsafe")


def _stat_shape(shape, stat_axes):
    return tuple(1 if i in stat_axes else d for i, d in enumerate(shape))


# ----------------------------------------------------------------------------------------
# batch normalisation

def _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    x = src.device_read()
    rv = running_variances.device_read()
    invstd = (1.0 / cp.sqrt(rv.astype(cp.float64) + eps)).astype(x.dtype)
    args = (x, running_means.device_read(), invstd, gamma.device_read(), beta.device_read())
    out = dest.device_write_only() if dest is not src else dest.device()
    _normalized(*args, out)


def batch_normalize_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances)


def batch_normalize_conv_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    _bn_inference(eps, dest, src, gamma, beta, running_means, running_variances)


def _bn_train(axes, eps, dest, means, invstds, f, running_means, running_variances, src,
              gamma, beta):
    x = src.device_read()
    mean = _sum_f64(x, axis=axes, keepdims=True)
    count = x.size // mean.size
    mean /= count
    var = _sq_dev_f64(x, mean, axis=axes, keepdims=True) / count   # biased, as dlib's M2/count
    unbiased = var * (count / (count - 1.0))
    invstd = 1.0 / cp.sqrt(var + eps)

    _assign(means, mean)
    _assign(invstds, invstd)
    if f == 1:
        _assign(running_means, mean)
        _assign(running_variances, unbiased)
    else:
        rm = running_means.device()
        cp.copyto(rm, (1 - f) * rm.astype(cp.float64) + f * mean, casting="unsafe")
        rv = running_variances.device()
        cp.copyto(rv, (1 - f) * rv.astype(cp.float64) + f * unbiased, casting="unsafe")

    # the output uses the statistics as stored (rounded to the dtype), as the CPU twin
    args = (x, means.device_read(), invstds.device_read(), gamma.device_read(),
            beta.device_read())
    out = dest.device_write_only() if dest is not src else dest.device()
    _normalized(*args, out)


def batch_normalize(eps, dest, means, invstds, averaging_factor, running_means,
                    running_variances, src, gamma, beta):
    _bn_train(_FC_AXES, eps, dest, means, invstds, averaging_factor, running_means,
              running_variances, src, gamma, beta)


def batch_normalize_conv(eps, dest, means, invstds, averaging_factor, running_means,
                         running_variances, src, gamma, beta):
    _bn_train(_CONV_AXES, eps, dest, means, invstds, averaging_factor, running_means,
              running_variances, src, gamma, beta)


def _normalize_gradient(stat_axes, param_axes, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, dmeans=None, dvars=None, add_to=True):
    """dlib's three-pass gradient of ``(x - m)*invstd*gamma + beta`` where m and invstd are
    statistics over ``stat_axes`` and gamma/beta are shared over ``param_axes`` (the CPU
    twin's formulas, term by term)."""
    g = gradient_input.device_read()
    x = src.device_read()
    dt = g.dtype.type
    stat = _stat_shape(g.shape, stat_axes)
    m = means.device_read().reshape(stat)
    inv = invstds.device_read().reshape(stat)
    gam = gamma.device_read()
    invnum = 1.0 / (g.size // m.size)

    bgrad = _sum(g, axis=param_axes, keepdims=True)
    ggrad = _sum_gamma(g, x, m, inv, axis=param_axes, keepdims=True)
    dvar = _sum_dvar(g, gam, x, m, axis=stat_axes, keepdims=True) * (inv ** 3 * dt(-0.5))
    dmean = (_sum_dmean(g, gam, inv, axis=stat_axes, keepdims=True)
             + dvar * dt(-2 * invnum) * _sum_xm(x, m, axis=stat_axes, keepdims=True))
    if add_to:
        _norm_src_grad(g, gam, x, m, inv, dvar, dmean, dt(2 * invnum), dt(invnum), src_grad.device())
    else:
        _norm_src_grad_assign(g, gam, x, m, inv, dvar, dmean, dt(2 * invnum), dt(invnum),
                              src_grad.device_write_only())
    _assign(beta_grad, bgrad)
    _assign(gamma_grad, ggrad)
    if dmeans is not None:
        _assign(dmeans, dmean)
        _assign(dvars, dvar)


def batch_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, add_to=True):
    _normalize_gradient(_FC_AXES, _FC_AXES, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, add_to=add_to)


def batch_normalize_conv_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                  gamma_grad, beta_grad, add_to=True):
    _normalize_gradient(_CONV_AXES, _CONV_AXES, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, add_to=add_to)


# ----------------------------------------------------------------------------------------
# layer and RMS normalisation (statistics per sample)

def layer_normalize(eps, dest, means, invstds, src, gamma, beta):
    x = src.device_read()
    n = x.shape[0]
    x2 = x.reshape(n, -1)
    count = x2.shape[1]
    mean = _sum_f64(x2, axis=1) / count
    # dlib's implementation: E[x^2] - E[x]^2 (not a two-pass variance)
    var = _sum_sq_f64(x2, axis=1) / count - mean * mean
    _assign(means, mean)
    _assign(invstds, 1.0 / cp.sqrt(var + eps))
    args = (x, means.device_read().reshape(n, 1, 1, 1), invstds.device_read().reshape(n, 1, 1, 1),
            gamma.device_read(), beta.device_read())
    out = dest.device_write_only() if dest is not src else dest.device()
    _normalized(*args, out)


def layer_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, dmeans, dvars):
    _normalize_gradient(_SAMPLE_AXES, _CONV_AXES, gradient_input, means, invstds, src, gamma,
                        src_grad, gamma_grad, beta_grad, dmeans, dvars)


def rms_normalize(eps, dest, scale, src, gamma):
    x = src.device_read()
    n = x.shape[0]
    x2 = x.reshape(n, -1)
    ms = _sum_sq_f64(x2, axis=1) / x2.shape[1]
    _assign(scale, 1.0 / cp.sqrt(ms + eps))
    args = (x, scale.device_read().reshape(n, 1, 1, 1), gamma.device_read())
    out = dest.device_write_only() if dest is not src else dest.device()
    _rms_out(*args, out)


def rms_normalize_gradient(gradient_input, scale, src, gamma, src_grad, gamma_grad, dscale):
    g = gradient_input.device_read()
    x = src.device_read()
    dt = g.dtype.type
    n = g.shape[0]
    s = scale.device_read().reshape(n, 1, 1, 1)
    gam = gamma.device_read()
    invnum = 1.0 / (g.size // n)
    ggrad = _sum_rms_gamma(g, x, s, axis=_CONV_AXES, keepdims=True)
    ds = _sum_rms_ds(g, gam, x, axis=_SAMPLE_AXES, keepdims=True) * (s ** 3 * dt(-0.5))
    _rms_src_grad(g, gam, x, s, ds, dt(2 * invnum), src_grad.device())
    _assign(gamma_grad, ggrad)
    _assign(dscale, ds)


# ----------------------------------------------------------------------------------------
# affine transforms with tensor coefficients, multiply_conv

def _affine_transform(dest, src, A, B):
    # dest may be src: element for element, safe in one kernel
    args = (_read(A, dest), _read(src, dest), _read(B, dest))
    _affine(*args, dest.device())


def affine_transform_conv(dest, src, A, B):
    _affine_transform(dest, src, A, B)


def affine_transform_tensors(dest, src, A, B):
    _affine_transform(dest, src, A, B)


def multiply_conv(add_to, dest, src1, src2):
    a = _read(src1, dest)
    b = _read(src2, dest)
    if dest.shape == src1.shape:
        (_mul_add if add_to else _mul_assign)(a, b, _out(dest, add_to))
        return
    prod = _sum_prod(a, b, axis=_CONV_AXES, keepdims=True)
    o = _out(dest, add_to)
    if add_to:
        o += prod
    else:
        o[...] = prod
