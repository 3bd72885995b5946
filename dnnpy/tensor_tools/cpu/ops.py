"""CPU twin of the element-wise, reduction and GEMM ops (numpy).

Same names and signatures as ``dnnpy.tensor_tools``; shape checks are done by the
dispatcher, so these functions assume valid input. Writes go through ``host()`` (or
``host_write_only()`` when the old contents are not read); reads through ``host_read()``.
"""

import numpy as np

from ...tensor import tensor

__all__ = [
    "add", "assign_conv_bias_gradient", "assign_bias_gradient", "gemm",
    "affine_transform", "relu", "relu_gradient", "dot",
]


def _mat(t: tensor, a):
    """dlib's ``mat(t)``: the ``num_samples x k*nr*nc`` matrix view of an NCHW array."""
    return a.reshape(t.num_samples(), -1)


def add(beta, dest, alpha, src):
    s = src.host_read()
    if alpha != 1:
        s = float(alpha) * s
    out = dest.host()
    if beta == 0:
        # assign rather than scale: dest may hold inf/NaN (test_layer's prefill does)
        out[...] = s
        return
    if beta != 1:
        out *= float(beta)
    out += s


def assign_conv_bias_gradient(grad, gradient_input):
    g = gradient_input.host_read()
    n, k = g.shape[0], g.shape[1]
    grad.host_write_only()[...] = g.reshape(n, k, -1).sum(axis=(0, 2)).reshape(grad.shape)


def assign_bias_gradient(grad, gradient_input):
    g = gradient_input.host_read()
    grad.host_write_only()[...] = g.reshape(g.shape[0], -1).sum(axis=0).reshape(grad.shape)


def gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs):
    a = _mat(lhs, lhs.host_read())
    b = _mat(rhs, rhs.host_read())
    if trans_lhs:
        a = a.T
    if trans_rhs:
        b = b.T
    if beta == 0:
        out = _mat(dest, dest.host_write_only())
        np.matmul(a, b, out=out)
        if alpha != 1:
            out *= float(alpha)
        return
    out = _mat(dest, dest.host())
    prod = a @ b
    if alpha != 1:
        prod *= float(alpha)
    if beta != 1:
        out *= float(beta)
    out += prod


def affine_transform(dest, srcs, coeffs, constant):
    arrays = [s.host_read() for s in srcs]
    result = float(coeffs[0]) * arrays[0]
    for c, a in zip(coeffs[1:], arrays[1:]):
        result += float(c) * a
    if constant != 0:
        result += float(constant)
    dest.host()[...] = result


def relu(dest, src):
    np.maximum(src.host_read(), 0.0, out=dest.host())


def relu_gradient(grad, dest, gradient_input):
    d = dest.host_read()
    gi = gradient_input.host_read()
    out = grad.host()
    if grad is gradient_input:
        out[d <= 0] = 0
    else:
        out += np.where(d > 0, gi, 0.0)


def dot(a, b) -> float:
    return float(np.dot(a.host_read().ravel().astype(np.float64), b.host_read().ravel().astype(np.float64)))
