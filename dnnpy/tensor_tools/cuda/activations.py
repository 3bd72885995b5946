"""CUDA twin of ``dnnpy.tensor_tools.activations``, the pointwise activations (CuPy; one
fused kernel per op).

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

The kernel factories and the aliasing-safe reads are those of ``_kernels.py``, shared with every
module of this twin.
"""

from __future__ import annotations

from .._twins import twin_ops
from ._kernels import _ew, _grad_kernel, _out, _read, _red

__all__ = twin_ops("activations")


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
