"""Normalisation and per-channel affine ops (dlib's ``tt::batch_normalize*``,
``tt::layer_normalize*``, ``tt::rms_normalize*``, ``tt::affine_transform_conv``, the
tensor-coefficient ``tt::affine_transform(dest, src, A, B)`` and ``tt::multiply_conv``).

Argument orders are dlib's. The dispatchers check shapes and size the outputs
(``dest``, ``means``, ``invstds``, running statistics, ``scale``, ...) exactly as dlib's
implementations do, then call the active backend's twin of the same name.

Gradient ops follow dlib: they ADD the data gradient to ``src_grad`` and ASSIGN the
parameter gradients (``gamma_grad``, ``beta_grad``). The batch norm gradients take
``add_to=False`` to ASSIGN ``src_grad`` instead (every element; its old contents, even NaN,
are not read): the layer's "target is stale" path.

Shapes, as dlib's implementation uses them:

* FC batch norm: ``gamma``, ``beta``, ``means``, ``invstds``, running stats are
  ``(1, k, nr, nc)``; statistics over the samples of each (k, r, c).
* CONV batch norm: those are ``(1, k, 1, 1)``; statistics over samples, rows, columns.
* Layer norm: ``gamma``, ``beta`` are ``(1, k, 1, 1)``; ``means``/``invstds`` are
  ``(num_samples, 1, 1, 1)``: statistics per sample over all k*nr*nc values.
* RMS norm: ``gamma`` is ``(1, k, 1, 1)``; ``scale`` is ``(num_samples, 1, 1, 1)`` and
  holds ``1/sqrt(mean(x**2) + eps)`` per sample (dlib's header calls it the RMS; its
  implementation stores the inverse).
"""

from __future__ import annotations

from ..tensor import resizable_tensor
from .backend import _backend, _check_tensors, _same_dims

__all__ = [
    "batch_normalize_inference", "batch_normalize", "batch_normalize_gradient",
    "batch_normalize_conv_inference", "batch_normalize_conv", "batch_normalize_conv_gradient",
    "layer_normalize", "layer_normalize_gradient", "rms_normalize", "rms_normalize_gradient",
    "affine_transform_conv", "affine_transform_tensors", "multiply_conv",
]


# ----------------------------------------------------------------------------------------
# checks

def _shapes(**named):
    return ", ".join(f"{n}{t.shape}" for n, t in named.items())


def _check_eps(op, eps):
    if not eps > 0:
        raise ValueError(f"{op}: eps must be > 0, got {eps}")


def _check_resizable(op, **named):
    for name, t in named.items():
        if not isinstance(t, resizable_tensor):
            raise TypeError(f"{op}: {name} must be a resizable_tensor, got {type(t).__name__}")


def _param_shape(conv, src):
    """The shape of gamma/beta/means/... for FC (per k, r, c) or CONV (per k) batch norm."""
    return (1, src.k(), 1, 1) if conv else (1, src.k(), src.nr(), src.nc())


def _check_bn_params(op, conv, src, **named):
    want = _param_shape(conv, src)
    bad = {n: t for n, t in named.items() if t.shape != want}
    if bad:
        raise ValueError(f"{op}: {_shapes(**bad)} must be {want} for src{src.shape}")


def _check_channel_params(op, src, **named):
    """gamma/beta of layer and RMS norm: (1, k, 1, 1)."""
    want = (1, src.k(), 1, 1)
    bad = {n: t for n, t in named.items() if t.shape != want}
    if bad:
        raise ValueError(f"{op}: {_shapes(**bad)} must be {want} for src{src.shape}")


def _check_per_sample(op, src, **named):
    bad = {n: t for n, t in named.items() if t.size() != src.num_samples()}
    if bad:
        raise ValueError(f"{op}: {_shapes(**bad)} must hold one value per sample of src{src.shape}")


# ----------------------------------------------------------------------------------------
# batch normalisation

def _bn_inference(op, conv, eps, dest, src, gamma, beta, running_means, running_variances):
    _check_tensors(op, src=src, gamma=gamma, beta=beta, running_means=running_means,
                   running_variances=running_variances)
    _check_resizable(op, dest=dest)
    _check_eps(op, eps)
    _check_bn_params(op, conv, src, gamma=gamma, beta=beta, running_means=running_means,
                     running_variances=running_variances)
    dest.copy_size(src)
    getattr(_backend(), op)(eps, dest, src, gamma, beta, running_means, running_variances)


def _bn_train(op, conv, eps, dest, means, invstds, averaging_factor, running_means,
              running_variances, src, gamma, beta):
    _check_tensors(op, src=src, gamma=gamma, beta=beta)
    _check_resizable(op, dest=dest, means=means, invstds=invstds, running_means=running_means,
                     running_variances=running_variances)
    _check_eps(op, eps)
    if src.num_samples() <= 1:
        raise ValueError(f"{op}: src{src.shape} must have more than one sample")
    if not 0 <= averaging_factor <= 1:
        raise ValueError(f"{op}: averaging_factor must be in [0, 1], got {averaging_factor}")
    _check_bn_params(op, conv, src, gamma=gamma, beta=beta)
    if averaging_factor != 1:
        # the running statistics are blended with this batch's: they must match its shape
        _check_bn_params(op, conv, src, running_means=running_means,
                         running_variances=running_variances)
    shape = _param_shape(conv, src)
    dest.copy_size(src)
    means.set_size(*shape)
    invstds.set_size(*shape)
    if averaging_factor == 1:  # dlib resizes (and then overwrites) the running statistics
        running_means.set_size(*shape)
        running_variances.set_size(*shape)
    getattr(_backend(), op)(eps, dest, means, invstds, float(averaging_factor), running_means,
                            running_variances, src, gamma, beta)


def _bn_gradient(op, conv, eps, gradient_input, means, invstds, src, gamma, src_grad,
                 gamma_grad, beta_grad, add_to):
    _check_tensors(op, gradient_input=gradient_input, means=means, invstds=invstds, src=src,
                   gamma=gamma, src_grad=src_grad, gamma_grad=gamma_grad, beta_grad=beta_grad)
    _check_eps(op, eps)
    _same_dims(op, gradient_input=gradient_input, src=src, src_grad=src_grad)
    if src.num_samples() <= 1:
        raise ValueError(f"{op}: src{src.shape} must have more than one sample")
    _check_bn_params(op, conv, src, means=means, invstds=invstds, gamma=gamma,
                     gamma_grad=gamma_grad, beta_grad=beta_grad)
    getattr(_backend(), op)(eps, gradient_input, means, invstds, src, gamma, src_grad,
                            gamma_grad, beta_grad, add_to=bool(add_to))


def batch_normalize_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    """``dest = gamma*(src - running_means)/sqrt(running_variances + eps) + beta`` for every
    sample (FC mode: one statistic per (k, r, c)).

    Requires: eps > 0; gamma, beta, running_means, running_variances are ``(1, k, nr, nc)``
    of src; dest is a resizable_tensor. Ensures: dest has src's dimensions.
    """
    _bn_inference("batch_normalize_inference", False, eps, dest, src, gamma, beta,
                  running_means, running_variances)


def batch_normalize(eps, dest, means, invstds, averaging_factor, running_means,
                    running_variances, src, gamma, beta):
    """Training-mode batch norm over the samples (FC mode: per (k, r, c)).

    Requires: eps > 0; ``src.num_samples() > 1``; gamma, beta ``(1, k, nr, nc)``;
    ``0 <= averaging_factor <= 1`` and, if it is not 1, running_means/running_variances
    already have gamma's shape. dest, means, invstds and the running stats are resizable.
    Ensures: means = the batch means, invstds = 1/sqrt(biased variance + eps);
    ``dest = (src - means)*invstds*gamma + beta``;
    ``running_means = (1-f)*running_means + f*means`` and ``running_variances =
    (1-f)*running_variances + f*N/(N-1)*variance`` (unbiased), f = averaging_factor; with
    f == 1 they are assigned (their old contents are not read).
    """
    _bn_train("batch_normalize", False, eps, dest, means, invstds, averaging_factor,
              running_means, running_variances, src, gamma, beta)


def batch_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, add_to=True):
    """Gradient of ``dot(gradient_input, batch_normalize(...))`` given the means and
    invstds that batch_normalize produced.

    Requires: gradient_input, src, src_grad same dims; ``src.num_samples() > 1``; means,
    invstds, gamma, gamma_grad, beta_grad ``(1, k, nr, nc)``. Ensures: ADDS the src
    gradient to src_grad (assigns it when ``add_to`` is False); ASSIGNS gamma_grad and
    beta_grad.
    """
    _bn_gradient("batch_normalize_gradient", False, eps, gradient_input, means, invstds, src,
                 gamma, src_grad, gamma_grad, beta_grad, add_to)


def batch_normalize_conv_inference(eps, dest, src, gamma, beta, running_means, running_variances):
    """As ``batch_normalize_inference`` with one statistic per channel: gamma, beta and the
    running stats are ``(1, k, 1, 1)``, applied at every sample, row and column."""
    _bn_inference("batch_normalize_conv_inference", True, eps, dest, src, gamma, beta,
                  running_means, running_variances)


def batch_normalize_conv(eps, dest, means, invstds, averaging_factor, running_means,
                         running_variances, src, gamma, beta):
    """As ``batch_normalize`` with statistics per channel over samples, rows and columns
    (all parameter/statistic tensors ``(1, k, 1, 1)``); the running variance is made
    unbiased with ``M/(M-1)``, ``M = num_samples*nr*nc``."""
    _bn_train("batch_normalize_conv", True, eps, dest, means, invstds, averaging_factor,
              running_means, running_variances, src, gamma, beta)


def batch_normalize_conv_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                  gamma_grad, beta_grad, add_to=True):
    """Gradient of ``batch_normalize_conv``; (1, k, 1, 1) parameter tensors. ADDS to
    src_grad (assigns it when ``add_to`` is False), ASSIGNS gamma_grad and beta_grad."""
    _bn_gradient("batch_normalize_conv_gradient", True, eps, gradient_input, means, invstds,
                 src, gamma, src_grad, gamma_grad, beta_grad, add_to)


# ----------------------------------------------------------------------------------------
# layer and RMS normalisation

def layer_normalize(eps, dest, means, invstds, src, gamma, beta):
    """Per-sample normalisation with per-channel scale and shift (dlib's implementation):
    ``m[n] = mean(src[n])``, ``invstds[n] = 1/sqrt(mean(src[n]**2) - m[n]**2 + eps)`` over
    all k*nr*nc values of sample n, ``dest[n,k,r,c] = (src - m[n])*invstds[n]*gamma[k] +
    beta[k]``.

    Requires: eps > 0; gamma and beta ``(1, k, 1, 1)``; dest, means, invstds resizable.
    Ensures: dest has src's dims; means and invstds are ``(num_samples, 1, 1, 1)``.
    """
    op = "layer_normalize"
    _check_tensors(op, src=src, gamma=gamma, beta=beta)
    _check_resizable(op, dest=dest, means=means, invstds=invstds)
    _check_eps(op, eps)
    _check_channel_params(op, src, gamma=gamma, beta=beta)
    dest.copy_size(src)
    means.set_size(src.num_samples())
    invstds.set_size(src.num_samples())
    _backend().layer_normalize(eps, dest, means, invstds, src, gamma, beta)


def layer_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                             gamma_grad, beta_grad, dmeans, dvars):
    """Gradient of ``dot(gradient_input, layer_normalize(...))``.

    Requires: gradient_input, src, src_grad same dims; means, invstds one value per
    sample; gamma, gamma_grad, beta_grad ``(1, k, 1, 1)``; dmeans, dvars resizable
    (workspace). Ensures: ADDS to src_grad; ASSIGNS gamma_grad, beta_grad; dmeans and dvars
    hold the per-sample gradients with respect to the mean and variance.
    """
    op = "layer_normalize_gradient"
    _check_tensors(op, gradient_input=gradient_input, means=means, invstds=invstds, src=src,
                   gamma=gamma, src_grad=src_grad, gamma_grad=gamma_grad, beta_grad=beta_grad)
    _check_resizable(op, dmeans=dmeans, dvars=dvars)
    _check_eps(op, eps)
    _same_dims(op, gradient_input=gradient_input, src=src, src_grad=src_grad)
    _check_per_sample(op, src, means=means, invstds=invstds)
    _check_channel_params(op, src, gamma=gamma, gamma_grad=gamma_grad, beta_grad=beta_grad)
    dmeans.copy_size(means)
    dvars.copy_size(invstds)
    _backend().layer_normalize_gradient(eps, gradient_input, means, invstds, src, gamma, src_grad,
                                        gamma_grad, beta_grad, dmeans, dvars)


def rms_normalize(eps, dest, scale, src, gamma):
    """``scale[n] = 1/sqrt(mean(src[n]**2) + eps)`` over all k*nr*nc values of sample n;
    ``dest[n,k,r,c] = src[n,k,r,c]*scale[n]*gamma[k]``.

    Requires: eps > 0; gamma ``(1, k, 1, 1)``; dest and scale resizable. Ensures: dest has
    src's dims; scale is ``(num_samples, 1, 1, 1)``.
    """
    op = "rms_normalize"
    _check_tensors(op, src=src, gamma=gamma)
    _check_resizable(op, dest=dest, scale=scale)
    _check_eps(op, eps)
    _check_channel_params(op, src, gamma=gamma)
    dest.copy_size(src)
    scale.set_size(src.num_samples())
    _backend().rms_normalize(eps, dest, scale, src, gamma)


def rms_normalize_gradient(gradient_input, scale, src, gamma, src_grad, gamma_grad, dscale):
    """Gradient of ``dot(gradient_input, rms_normalize(...))`` given its scale (no eps:
    it is inside scale).

    Requires: gradient_input, src, src_grad same dims; scale one value per sample; gamma,
    gamma_grad ``(1, k, 1, 1)``; dscale resizable (workspace). Ensures: ADDS to src_grad;
    ASSIGNS gamma_grad.
    """
    op = "rms_normalize_gradient"
    _check_tensors(op, gradient_input=gradient_input, scale=scale, src=src, gamma=gamma,
                   src_grad=src_grad, gamma_grad=gamma_grad)
    _check_resizable(op, dscale=dscale)
    _same_dims(op, gradient_input=gradient_input, src=src, src_grad=src_grad)
    _check_per_sample(op, src, scale=scale)
    _check_channel_params(op, src, gamma=gamma, gamma_grad=gamma_grad)
    dscale.copy_size(scale)
    _backend().rms_normalize_gradient(gradient_input, scale, src, gamma, src_grad, gamma_grad,
                                      dscale)


# ----------------------------------------------------------------------------------------
# affine transforms with tensor coefficients

def affine_transform_conv(dest, src, A, B):
    """``dest[n,k,r,c] = A[k]*src[n,k,r,c] + B[k]``.

    Requires: dest and src same dims (dest may be src); A and B ``(1, k, 1, 1)``.
    Ensures: dest is assigned.
    """
    op = "affine_transform_conv"
    _same_dims(op, dest=dest, src=src)
    _same_dims(op, A=A, B=B)
    if A.shape != (1, src.k(), 1, 1):
        raise ValueError(f"{op}: A{A.shape} must be (1, {src.k()}, 1, 1) for src{src.shape}")
    _backend().affine_transform_conv(dest, src, A, B)


def affine_transform_tensors(dest, src, A, B):
    """dlib's ``tt::affine_transform(dest, src, A, B)`` with tensor coefficients:
    ``dest = A*src + B`` element-wise; A and B are either ``(1, k, nr, nc)`` (applied to
    every sample) or src's dims.

    Requires: dest and src same dims (dest may be src); A and B same dims, each of
    (k, nr, nc) equal to src's, and num_samples 1 or src's. Ensures: dest is assigned.
    """
    op = "affine_transform_tensors"
    _same_dims(op, dest=dest, src=src)
    _same_dims(op, A=A, B=B)
    if A.shape[1:] != src.shape[1:] or A.num_samples() not in (1, src.num_samples()):
        raise ValueError(f"{op}: A{A.shape} and B{B.shape} must be (1, k, nr, nc) or the "
                         f"dims of src{src.shape}")
    _backend().affine_transform_tensors(dest, src, A, B)


def multiply_conv(add_to, dest, src1, src2):
    """dlib's ``tt::multiply_conv``. Two forms, chosen by dest's dims:

    * dest has src1's dims: ``dest[n,k,r,c] (+)= src1[n,k,r,c]*src2[k]``, src2 ``(1, k, 1, 1)``;
    * dest is ``(1, k, 1, 1)``: ``dest[k] (+)= sum over n, r, c of src1*src2`` (src1, src2
      same dims).

    Ensures: adds to dest if add_to, else assigns (old contents not read).
    """
    op = "multiply_conv"
    _check_tensors(op, dest=dest, src1=src1, src2=src2)
    if dest.shape == src1.shape:
        if src2.shape != (1, src1.k(), 1, 1):
            raise ValueError(f"{op}: src2{src2.shape} must be (1, {src1.k()}, 1, 1) when dest "
                             f"has src1's dims ({src1.shape})")
    elif src1.shape != src2.shape or dest.shape != (1, src1.k(), 1, 1):
        raise ValueError(f"{op}: expected dest with src1's dims and src2 (1, k, 1, 1), or dest "
                         f"(1, k, 1, 1) and src1, src2 alike; got {_shapes(dest=dest, src1=src1, src2=src2)}")
    _backend().multiply_conv(bool(add_to), dest, src1, src2)
