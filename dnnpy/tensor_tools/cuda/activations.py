"""CUDA twin of ``dnnpy.tensor_tools.activations`` (CuPy; one fused kernel per op).

Same names, signatures and assign/add semantics as ``cpu/activations.py``; the dispatchers
have checked the shapes. Numerics follow the CPU twin operation by operation, in the
tensors' dtype (float32, or float64 under ``default_dtype(np.float64)``):

* every kernel is compiled with ``--fmad=false``: numpy rounds ``a*b + c`` twice, and a
  contracted FMA would make GPU and CPU differ by more than the transcendental functions'
  own last-bit differences (these kernels are memory bound, so FMA buys nothing);
* the exact gelu evaluates erf in double, as the CPU twin does, then rounds to the dtype;
* sums (softmax denominators, row norms, dot products, prelu's parameter gradient) are
  accumulated in double and rounded once: never less accurate than numpy's float32
  pairwise sums, so GPU and CPU agree to the CPU's own summation error.

In-place use: a forward op with ``dest is src`` and a gradient with ``grad is
gradient_input`` read and write the same element in the same thread, which is safe. A
destination that overlaps a source at a *different* offset (possible with alias tensors,
never done by dnnpy's layers) would race in a kernel; ``_read`` then copies the source
first, so the result is still the CPU twin's.

The private helpers at the bottom (kernel factory, typed reductions, ``_read``) are shared
with ``norm.py`` and ``merge.py``.
"""

from __future__ import annotations

import cupy as cp
import numpy as np
from .._twins import twin_ops

__all__ = twin_ops("activations")

CHANNEL_WISE, PLANE_WISE = 0, 1

# Contracting a*b+c into one FMA changes the rounding: keep numpy's two roundings.
_OPTIONS = ("--fmad=false",)


# ----------------------------------------------------------------------------------------
# shared helpers (also used by norm.py and merge.py)

def _ew(in_params, out_params, body, name):
    """An ElementwiseKernel built once, at import (construction is host-only: CuPy compiles
    on the first call, per dtype and device)."""
    return cp.ElementwiseKernel(in_params, out_params, body, "dnnpy_" + name, options=_OPTIONS)


class _grad_kernel:
    """A gradient kernel in two variants: ``body`` computes ``v``; the assign variant stores
    it (never reading the old ``grad``, which may hold inf), the add variant adds it."""

    def __init__(self, in_params, body, name):
        self.assign = _ew(in_params, "T grad", body + " grad = v;", name + "_assign")
        self.add = _ew(in_params, "T grad", body + " grad = grad + v;", name + "_add")

    def __call__(self, add, *args):
        (self.add if add else self.assign)(*args)


def _red(in_params, map_expr, name, out_type="T"):
    """Sum of ``map_expr`` accumulated in double, stored as ``out_type``."""
    # CuPy expands the post-map expression inside parentheses, ``#define POST_MAP(a)
    # (post_map_expr)``: it must be an expression, with no trailing semicolon
    post = "y = (T)a" if out_type == "T" else "y = a"
    return cp.ReductionKernel(in_params, f"{out_type} y", map_expr, "a + b", post, "0",
                              "dnnpy_" + name, reduce_type="double", options=_OPTIONS)


_sum = _red("T x", "(double)x", "sum")
_sum_f64 = _red("T x", "(double)x", "sum_f64", out_type="float64")
_sum_prod = _red("T x, T w", "(double)(x * w)", "sum_prod")
_sum_sq_f64 = _red("T x", "(double)x * (double)x", "sum_sq_f64", out_type="float64")


def _overlaps_elsewhere(a, b):
    """True when a and b share memory but not element for element (same offset and size):
    a kernel writing one while reading the other would race."""
    # tensor._offset: the window start in the shared storage (tensor.py's representation)
    return a.is_aliased_with(b) and (a._offset, a.size()) != (b._offset, b.size())


def _read(t, *outputs):
    """``t.device_read()``, or a private copy of it when it overlaps one of ``outputs``
    other than element for element."""
    a = t.device_read()
    if any(_overlaps_elsewhere(t, o) for o in outputs):
        return a.copy()
    return a


def _out(dest, add_to=False):
    """The device view to write: read-modify-write when adding, write-only when assigning
    (call it after every input has been read, so a write-only view of a shared storage
    never skips a pending host->device copy)."""
    return dest.device() if add_to else dest.device_write_only()


def _rows(t, a):
    return a.reshape(t.num_samples(), -1)


# ----------------------------------------------------------------------------------------
# pointwise activations

_sigmoid_k = _ew("T x", "T y", "y = (T)1 / ((T)1 + exp(-x));", "sigmoid")
_sigmoid_g = _grad_kernel("T gi, T d", "T v = gi * d * ((T)1 - d);", "sigmoid_grad")

# mish: x - 2x/delta, delta = 2e + e^2 + 2 (exp overflow: delta = inf, y = x, as the CPU)
_mish_k = _ew("T x", "T y",
              "T e = exp(x); T delta = (T)2 * e + e * e + (T)2; y = x - (T)2 * x / delta;",
              "mish")
_mish_g = _grad_kernel(
    "T gi, T x",
    "T e = exp(x); T delta = (T)2 * e + e * e + (T)2;"
    " T omega = (T)4 * (x + (T)1) + (T)4 * e * e + e * e * e + e * ((T)4 * x + (T)6);"
    " T g = x >= (T)8 ? (T)1 : (x <= (T)-8 ? (T)0 : e * omega / (delta * delta));"
    " T v = gi * g;",
    "mish_grad")

_tanh_k = _ew("T x", "T y", "y = tanh(x);", "tanh")
_tanh_g = _grad_kernel("T gi, T d", "T v = gi * ((T)1 - d * d);", "tanh_grad")

# erf in double (the CPU twin's erf is float64 whatever the dtype), then rounded.
# 1.4142135623730951 is np.sqrt(2); 0.3989422804014327 is 1/np.sqrt(2*np.pi).
_gelu_k = _ew("T x", "T y",
              "T c = (T)erf((double)x / 1.4142135623730951); y = (T)0.5 * x * ((T)1 + c);",
              "gelu")
_gelu_g = _grad_kernel(
    "T gi, T x",
    "T cdf = (T)(0.5 * (1.0 + erf((double)x / 1.4142135623730951)));"
    " T pdf = exp((T)-0.5 * x * x) * (T)0.3989422804014327;"
    " T v = gi * (cdf + x * pdf);",
    "gelu_grad")

_silu_k = _ew("T x", "T y", "y = x * ((T)1 / ((T)1 + exp(-x)));", "silu")
_silu_g = _grad_kernel(
    "T gi, T x",
    "T s = (T)1 / ((T)1 + exp(-x)); T v = gi * (s * ((T)1 + x * ((T)1 - s)));",
    "silu_grad")

# prelu's parameter stays on the device (a raw 1-element array): no host sync per call
_prelu_k = _ew("T x, raw T p", "T y", "y = x > (T)0 ? x : p[0] * x;", "prelu")
_prelu_data_g = _ew("T gi, T x, raw T p", "T grad",
                    "grad = grad + (x > (T)0 ? gi : p[0] * gi);", "prelu_grad_add")
_prelu_param_g = _red("T gi, T x", "x > (T)0 ? 0.0 : (double)(gi * x)", "prelu_param_grad")

_leaky_k = _ew("T x, T alpha", "T y", "y = x > (T)0 ? x : alpha * x;", "leaky_relu")
_leaky_g = _grad_kernel("T gi, T d, T alpha", "T v = d > (T)0 ? gi : alpha * gi;",
                        "leaky_relu_grad")

# numpy's maximum/minimum propagate NaN: so do these
_clipped_k = _ew("T x, T ceiling", "T y",
                 "T a = (x > (T)0 || x != x) ? x : (T)0; y = (a < ceiling || a != a) ? a : ceiling;",
                 "clipped_relu")
_clipped_g = _grad_kernel("T gi, T d, T ceiling",
                          "T v = (d > (T)0 && d < ceiling) ? gi : (T)0;", "clipped_relu_grad")

_elu_k = _ew("T x, T alpha", "T y", "y = x > (T)0 ? x : alpha * (exp(x) - (T)1);", "elu")
_elu_g = _grad_kernel("T gi, T d, T alpha", "T v = d > (T)0 ? gi : (alpha + d) * gi;",
                      "elu_grad")

_smelu_k = _ew("T x, T beta", "T y",
               "y = x >= beta ? x : (x <= -beta ? (T)0 : (x + beta) * (x + beta) / ((T)4 * beta));",
               "smelu")
# from the output: sqrt(beta*y)/beta = (x+beta)/(2 beta) (dlib's form)
_smelu_g = _grad_kernel(
    "T gi, T d, T beta",
    "T v = d >= beta ? gi : (d == (T)0 ? (T)0 : sqrt(beta * d) / beta * gi);",
    "smelu_grad")


def _dt(t):
    return t.device_read().dtype.type


def _forward(kernel, dest, src, *scalars):
    x = _read(src, dest)
    kernel(x, *scalars, _out(dest))


def _gradient(kernel, grad, other, gradient_input, *scalars):
    # dlib's rule: assign when grad is gradient_input, otherwise add
    add = grad is not gradient_input
    gi = _read(gradient_input, grad) if add else gradient_input.device_read()
    o = _read(other, grad)
    kernel(add, gi, o, *scalars, _out(grad, add))


def sigmoid(dest, src):
    _forward(_sigmoid_k, dest, src)


def sigmoid_gradient(grad, dest, gradient_input):
    _gradient(_sigmoid_g, grad, dest, gradient_input)


def mish(dest, src):
    _forward(_mish_k, dest, src)


def mish_gradient(grad, src, gradient_input):
    _gradient(_mish_g, grad, src, gradient_input)


def tanh(dest, src):
    _forward(_tanh_k, dest, src)


def tanh_gradient(grad, dest, gradient_input):
    _gradient(_tanh_g, grad, dest, gradient_input)


def gelu(dest, src):
    _forward(_gelu_k, dest, src)


def gelu_gradient(grad, src, gradient_input):
    _gradient(_gelu_g, grad, src, gradient_input)


def silu(dest, src):
    _forward(_silu_k, dest, src)


def silu_gradient(grad, src, gradient_input):
    _gradient(_silu_g, grad, src, gradient_input)


def prelu(dest, src, param):
    x = _read(src, dest)
    p = param.device_read().reshape(-1)
    _prelu_k(x, p, _out(dest))


def prelu_gradient(grad, src, gradient_input, param, params_grad):
    x = _read(src, grad)
    gi = _read(gradient_input, grad)
    p = param.device_read().reshape(-1)
    pgrad = _prelu_param_g(gi, x)               # 0-d, accumulated in double
    _prelu_data_g(gi, x, p, grad.device())      # always adds (prelu_ is never in place)
    params_grad.device_write_only().reshape(-1)[0] = pgrad


def leaky_relu(dest, src, alpha):
    _forward(_leaky_k, dest, src, _dt(src)(alpha))


def leaky_relu_gradient(grad, dest, gradient_input, alpha):
    _gradient(_leaky_g, grad, dest, gradient_input, _dt(dest)(alpha))


def clipped_relu(dest, src, ceiling):
    _forward(_clipped_k, dest, src, _dt(src)(ceiling))


def clipped_relu_gradient(grad, dest, gradient_input, ceiling):
    _gradient(_clipped_g, grad, dest, gradient_input, _dt(dest)(ceiling))


def elu(dest, src, alpha):
    _forward(_elu_k, dest, src, _dt(src)(alpha))


def elu_gradient(grad, dest, gradient_input, alpha):
    _gradient(_elu_g, grad, dest, gradient_input, _dt(dest)(alpha))


def smelu(dest, src, beta):
    _forward(_smelu_k, dest, src, _dt(src)(beta))


def smelu_gradient(grad, dest, gradient_input, beta):
    _gradient(_smelu_g, grad, dest, gradient_input, _dt(dest)(beta))


# ----------------------------------------------------------------------------------------
# softmax family: groups are axis 1 of a 3-D view (CHANNEL_WISE (n, k, nr*nc); PLANE_WISE
# (n*k*nr, nc, 1); softmax_all (n, k*nr*nc, 1))

_exp_sum = _red("T x, T m", "(double)exp(x - m)", "softmax_exp_sum")
# zero_neg_inf: dlib's PLANE_WISE rule, a row whose max is -inf (all -inf) gives 0
_softmax_out = _ew("T x, T m, T s, int32 zero_neg_inf", "T y",
                   "y = (zero_neg_inf && isinf(m) && m < (T)0) ? (T)0 : exp(x - m) / s;",
                   "softmax_out")
_softmax_g = _grad_kernel("T gi, T d, T s", "T v = d * (gi - s);", "softmax_grad")


def _groups(t, a, mode):
    n, k, nr, nc = t.shape
    if mode == CHANNEL_WISE:
        return a.reshape(n, k, nr * nc)
    return a.reshape(n * k * nr, nc, 1)


def _softmax(x3, y3, zero_neg_inf):
    if x3.size == 0:
        return
    m = cp.max(x3, axis=1, keepdims=True)        # NaN propagates, as numpy's max
    s = _exp_sum(x3, m, axis=1, keepdims=True)
    _softmax_out(x3, m, s, np.int32(zero_neg_inf), y3)


def _softmax_gradient(grad, dest, gradient_input, view):
    add = grad is not gradient_input
    d = view(_read(dest, grad))
    gi = view(_read(gradient_input, grad) if add else gradient_input.device_read())
    s = _sum_prod(d, gi, axis=1, keepdims=True)
    _softmax_g(add, gi, d, s, view(_out(grad, add)))


def softmax(dest, src, mode):
    x = _groups(src, _read(src, dest), mode)
    _softmax(x, _groups(dest, _out(dest), mode), mode == PLANE_WISE)


def softmax_gradient(grad, dest, gradient_input, mode):
    _softmax_gradient(grad, dest, gradient_input, lambda a: _groups(grad, a, mode))


def softmax_all(dest, src):
    n = src.num_samples()
    x = _read(src, dest).reshape(n, -1, 1)
    _softmax(x, _out(dest).reshape(n, -1, 1), False)


def softmax_all_gradient(grad, dest, gradient_input):
    n = grad.num_samples()
    _softmax_gradient(grad, dest, gradient_input, lambda a: a.reshape(n, -1, 1))


# ----------------------------------------------------------------------------------------
# row norms and scaling on mat(t) = num_samples x (k*nr*nc)

_inv_sqrt = _ew("T sq, T eps", "T y", "y = (T)1 / sqrt(sq + eps);", "inverse_norm")
_scale_k = _ew("T m, T v", "T y", "y = m * v;", "scale")
_scale_rows2_k = _ew(
    "T a, T b, T v1, T v2, T beta", "T o",
    "T val = (a - b * v1) * v2;"
    " if (beta == (T)0) o = val;"                 # assign: o may hold inf/NaN
    " else o = (beta == (T)1 ? o : o * beta) + val;",
    "scale_rows2")


def inverse_norms(invnorms, data, eps):
    x = _rows(data, data.device_read())
    sq = _sum_prod(x, x, axis=1)
    _inv_sqrt(sq, x.dtype.type(eps), _out(invnorms).reshape(-1))


def dot_prods(add_to, out, lhs, rhs):
    v = _sum_prod(_rows(lhs, lhs.device_read()), _rows(rhs, rhs.device_read()), axis=1)
    o = _out(out, add_to).reshape(-1)
    if add_to:
        o += v
    else:
        o[...] = v


def scale_rows(out, m, v):
    a = _rows(m, _read(m, out))
    vv = _read(v, out).reshape(-1, 1)
    _scale_k(a, vv, _rows(out, _out(out)))


def scale_rows2(beta, out, m1, m2, v1, v2):
    a = _rows(m1, _read(m1, out))
    b = _rows(m2, _read(m2, out))
    w1 = _read(v1, out).reshape(-1, 1)
    w2 = _read(v2, out).reshape(-1, 1)
    _scale_rows2_k(a, b, w1, w2, a.dtype.type(beta), _rows(out, _out(out, beta != 0)))


def scale_columns(out, m, v):
    a = _rows(m, _read(m, out))
    vv = _read(v, out).reshape(1, -1)
    _scale_k(a, vv, _rows(out, _out(out)))


# ----------------------------------------------------------------------------------------
# multiply, threshold, random numbers

_mul = _grad_kernel("T a, T b", "T v = a * b;", "multiply")
_threshold_k = _ew("T thresh", "T d", "d = d > thresh ? (T)1 : (T)0;", "threshold")


def multiply(add_to, dest, src1, src2):
    tail = dest.shape[1:]
    a = _read(src1, dest).reshape((src1.num_samples(),) + tail)
    b = _read(src2, dest).reshape((src2.num_samples(),) + tail)
    if dest.num_samples() == 1 and max(src1.num_samples(), src2.num_samples()) != 1:
        # products summed over the samples (a num_samples of 1 broadcasts over the other)
        prod = _sum_prod(a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1), axis=0)
        o = _out(dest, add_to).reshape(-1)
        if add_to:
            o += prod
        else:
            o[...] = prod
        return
    _mul(add_to, a, b, _out(dest, add_to))


def threshold(data, thresh):
    d = data.device()
    _threshold_k(d.dtype.type(thresh), d)


def rand_generator(seed):
    """CuPy's default Generator (XORWOW bit generator) seeded with ``seed``. Its streams
    differ from the CPU twin's numpy PCG64 for the same seed, as dlib's cuRAND streams
    differ from its CPU ones: code must not rely on specific values."""
    return cp.random.default_rng(seed)


def rand_fill_uniform(gen, data):
    a = data.device_write_only()
    # Generator.random gives [0, 1); 1 - u gives dlib's documented (0, 1]
    a[...] = 1 - gen.random(a.shape, dtype=np.float64)


def rand_fill_gaussian(gen, data, mean, stddev):
    a = data.device_write_only()
    a[...] = gen.standard_normal(a.shape, dtype=np.float64) * stddev + mean
