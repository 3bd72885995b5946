"""CUDA twin of the element-wise, reduction and GEMM ops (CuPy: cuBLAS and fused kernels).

Same names, signatures and assign/add semantics as ``cpu/ops.py``; the dispatcher has
checked the shapes. Rules followed by every function here:

* Sources are fetched (``device_read()``) BEFORE the destination: ``device_write_only()``
  skips the host->device copy, which is only safe once an aliased source has been synced.
* "Assign" never computes ``0*old + new`` (gradient buffers may hold inf): cuBLAS with
  ``beta == 0`` does not read C, and the kernels below write without reading.
* Scalars are passed as numpy scalars of the tensor's dtype, so each kernel is compiled
  for float32 or float64 exactly (no silent promotion).
* A source that partially overlaps the destination (same storage, different window) is
  copied first: a GPU kernel, unlike numpy, does not guard against overlap.

Kernels are built once, at import (CuPy compiles them lazily per dtype at first launch),
so importing this module needs CuPy but no GPU. All work runs on CuPy's current stream.
Results can differ from the CPU twin in the last bits: the GPU contracts ``a*x + b`` into
FMAs and sums in a different order (tests use ``rtol=1e-5`` in float32).
"""

import cupy

from .._plane_wise import plane_counts, planes
from .._twins import twin_ops

__all__ = twin_ops("ops")

_PLANE_WISE = 1  # dlib's operation_mode::PLANE_WISE (tensor_tools.PLANE_WISE)


# ----------------------------------------------------------------------------------------
# helpers shared by this twin's modules

def _scalar(like, value):
    """``value`` as a numpy scalar of the dtype of array ``like``."""
    return like.dtype.type(value)


def _src(dest, src):
    """``src.device_read()``, copied when it partially overlaps dest (an identical window
    is fine for element-wise work: each element is read before it is written)."""
    a = src.device_read()
    if src is not dest and dest.overlaps_elsewhere(src):
        a = a.copy()
    return a


# ----------------------------------------------------------------------------------------
# kernels (module level: built once, compiled per dtype on first use)

_scale_assign = cupy.ElementwiseKernel("T s, T alpha", "T d", "d = alpha * s", "dnnpy_scale_assign")
_scale_add = cupy.ElementwiseKernel("T s, T alpha, T beta", "T d", "d = beta * d + alpha * s",
                                    "dnnpy_scale_add")

# dlib's _cuda_add2: dest = src1 + src2 where each source counts as zero outside its own
# dimensions (the sources are flat C-ordered raw arrays with their own shapes).
_add_zero_padded_kernel = cupy.ElementwiseKernel(
    "raw T s1, raw T s2, int64 k, int64 nr, int64 nc, "
    "int64 n1, int64 k1, int64 nr1, int64 nc1, int64 n2, int64 k2, int64 nr2, int64 nc2",
    "T d",
    """
    const long long c = i % nc;
    long long t = i / nc;
    const long long r = t % nr;
    t /= nr;
    const long long kk = t % k;
    const long long n = t / k;
    T v1 = 0, v2 = 0;
    if (n < n1 && kk < k1 && r < nr1 && c < nc1)
        v1 = s1[((n * k1 + kk) * nr1 + r) * nc1 + c];
    if (n < n2 && kk < k2 && r < nr2 && c < nc2)
        v2 = s2[((n * k2 + kk) * nr2 + r) * nc2 + c];
    d = v1 + v2;
    """,
    "dnnpy_add_zero_padded")

_affine1 = cupy.ElementwiseKernel("T s1, T a, T c", "T d", "d = a * s1 + c", "dnnpy_affine1")
_affine2 = cupy.ElementwiseKernel("T s1, T s2, T a, T b, T c", "T d", "d = a * s1 + b * s2 + c",
                                  "dnnpy_affine2")
_affine3 = cupy.ElementwiseKernel("T s1, T s2, T s3, T a, T b, T cc, T c", "T d",
                                  "d = a * s1 + b * s2 + cc * s3 + c", "dnnpy_affine3")

# relu_gradient, as the CPU twin: in place zeroes where dest <= 0 (NaN keeps its gradient);
# otherwise adds (or assigns) gradient_input where dest > 0 (assign writes 0 elsewhere).
_relu_grad_inplace = cupy.ElementwiseKernel("T d", "T g", "if (d <= 0) g = 0;", "dnnpy_relu_grad_inplace")
_relu_grad_add = cupy.ElementwiseKernel("T d, T gi", "T g", "if (d > 0) g += gi;", "dnnpy_relu_grad_add")
_relu_grad_assign = cupy.ElementwiseKernel("T d, T gi", "T g", "g = d > 0 ? gi : (T)0;",
                                           "dnnpy_relu_grad_assign")

# dot accumulated in float64 (dlib's dot(tensor, tensor) returns a double sum).
_dot64 = cupy.ReductionKernel("T a, T b", "float64 y", "(double)a * (double)b", "a + b", "y = a", "0",
                              "dnnpy_dot64")


# ----------------------------------------------------------------------------------------
# add

def add(*args):
    """``add(beta, dest, alpha, src)`` (broadcasting) or ``add(dest, src1, src2)`` (zero
    padded), as the dispatcher."""
    if len(args) == 3:
        _add_zero_padded(*args)
    else:
        _add_scaled(*args)


def _add_scaled(beta, dest, alpha, src):
    s = _src(dest, src)
    if beta == 0:
        # assign: the old contents (maybe inf/NaN) are never read
        out = dest.device_write_only()
        _scale_assign(s, _scalar(out, alpha), out)
        return
    out = dest.device()
    _scale_add(s, _scalar(out, alpha), _scalar(out, beta), out)


def _add_zero_padded(dest, src1, src2):
    a, b = _src(dest, src1), _src(dest, src2)
    if a.shape == b.shape == dest.shape:
        cupy.add(a, b, out=dest.device_write_only())  # element-wise: dest may be a source
        return
    # Each dest element reads the same-index element of a source of dest's shape only if
    # that source is dest itself (then it is read before it is written): no race.
    out = dest.device_write_only()
    _add_zero_padded_kernel(a.ravel(), b.ravel(), *dest.shape[1:], *src1.shape, *src2.shape, out)


# ----------------------------------------------------------------------------------------
# bias gradients, dot

def assign_conv_bias_gradient(grad, gradient_input):
    g = gradient_input.device_read()
    n, k = g.shape[0], g.shape[1]
    out = grad.device_write_only()
    cupy.sum(g.reshape(n, k, -1), axis=(0, 2), out=out.reshape(k))


def assign_bias_gradient(grad, gradient_input):
    g = gradient_input.device_read()
    out = grad.device_write_only()
    cupy.sum(g.reshape(g.shape[0], -1), axis=0, out=out.reshape(-1))


def dot(a, b) -> float:
    return float(_dot64(a.device_read().ravel(), b.device_read().ravel()))


# ----------------------------------------------------------------------------------------
# GEMM (cuBLAS; no TF32: CuPy only enables it under CUPY_TF32=1, which dnnpy never sets)

def _overlaps(dest, *srcs):
    return any(s is dest or dest.is_aliased_with(s) for s in srcs)


def gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode=0):
    # imported here: loading cuBLAS at import time would fail where the CUDA libraries
    # are absent, and the twin must import anywhere CuPy does (completeness test)
    from cupy import cublas

    if mode == _PLANE_WISE:
        _gemm_plane_wise(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs)
        return
    a = lhs.device_read().reshape(lhs.num_samples(), -1)
    b = rhs.device_read().reshape(rhs.num_samples(), -1)
    ta, tb = "T" if trans_lhs else "N", "T" if trans_rhs else "N"
    if _overlaps(dest, lhs, rhs):
        # cuBLAS must not write into its own operands: form the product aside
        prod = cublas.gemm(ta, tb, a, b, alpha=float(alpha))
        out = dest.device().reshape(dest.num_samples(), -1)
        if beta == 0:
            out[...] = prod
        else:
            _scale_add(prod, _scalar(out, 1), _scalar(out, beta), out)
        return
    if beta == 0:
        out = dest.device_write_only().reshape(dest.num_samples(), -1)
    else:
        out = dest.device().reshape(dest.num_samples(), -1)
    # out = alpha*op(a)@op(b) + beta*out in one call; with beta == 0 cuBLAS does not read out
    cublas.gemm(ta, tb, a, b, out=out, alpha=float(alpha), beta=float(beta))


def _gemm_plane_wise(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs):
    mats, ns, nk = plane_counts(lhs, rhs, dest)
    a = planes(lhs, lhs.device_read(), mats[0], ns, nk)
    b = planes(rhs, rhs.device_read(), mats[1], ns, nk)
    if trans_lhs:
        a = a.swapaxes(-1, -2)
    if trans_rhs:
        b = b.swapaxes(-1, -2)
    prod = cupy.matmul(a, b)  # batched cuBLAS; a matrix operand broadcasts over the planes
    if beta == 0:
        whole = all(mats) or dest.size() == ns * nk * dest.nr() * dest.nc()
        full = dest.device_write_only() if whole else dest.device()
        out = planes(dest, full, mats[2], ns, nk)
        if alpha == 1:
            out[...] = prod
        else:
            _scale_assign(prod, _scalar(out, alpha), out)
        return
    out = planes(dest, dest.device(), mats[2], ns, nk)
    _scale_add(prod, _scalar(out, alpha), _scalar(out, beta), out)


# ----------------------------------------------------------------------------------------
# affine_transform, relu

def affine_transform(dest, srcs, coeffs, constant):
    arrays = [_src(dest, s) for s in srcs]
    out = dest.device_write_only()
    c = _scalar(out, constant)
    k = [_scalar(out, x) for x in coeffs]
    if len(arrays) == 1:
        _affine1(arrays[0], k[0], c, out)
    elif len(arrays) == 2:
        _affine2(arrays[0], arrays[1], k[0], k[1], c, out)
    else:
        _affine3(arrays[0], arrays[1], arrays[2], k[0], k[1], k[2], c, out)


def affine_transform_rect(window, dest, src1, src2, src3, A, B, C):
    n = dest.num_samples()
    a, b, c = (_src(dest, s).reshape(n, -1)[window] for s in (src1, src2, src3))
    out = dest.device()     # read and written: only the window is assigned
    k = [_scalar(out, x) for x in (A, B, C)]
    _affine3(a, b, c, k[0], k[1], k[2], _scalar(out, 0), out.reshape(n, -1)[window])


def _pointwise(ufunc, dest, src):
    s = _src(dest, src)
    out = dest.device_write_only()
    ufunc(s.reshape(out.shape), out=out)


def exp(dest, src):
    _pointwise(cupy.exp, dest, src)


def log(dest, src):
    _pointwise(cupy.log, dest, src)


def log10(dest, src):
    _pointwise(cupy.log10, dest, src)


def relu(dest, src):
    s = _src(dest, src)
    cupy.maximum(s, _scalar(s, 0), out=dest.device_write_only())  # NaN propagates, as numpy


def relu_gradient(grad, dest, gradient_input, add_to=True):
    d = dest.device_read()
    if grad is gradient_input:
        _relu_grad_inplace(d, grad.device())
    elif add_to:
        gi = _src(grad, gradient_input)
        _relu_grad_add(d, gi, grad.device())
    else:
        gi = _src(grad, gradient_input)
        _relu_grad_assign(d, gi, grad.device_write_only())
