"""CPU twin of ``dnnpy.tensor_tools.activations``: the pointwise activations (numpy,
vectorised).

Every op reads its inputs before it asks for a writable view, so ``dest is src`` (in place)
works. Arithmetic stays in the tensors' dtype (float32, or float64 under test_layer's
float64 mode); Python-float scalars do not promote numpy arrays.
"""

from __future__ import annotations

import numpy as np
from .._twins import twin_ops
from ._common import _grad_out, _store

__all__ = twin_ops("activations")


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


# ----------------------------------------------------------------------------------------
# erf: numpy has none and numpy is dnnpy's only dependency. fdlibm's s_erf.c (the code
# behind glibc's erf, so behind dlib's std::erf), vectorised: rational approximations on
# |x| < 0.84375, [0.84375, 1.25), [1.25, 1/0.35), [1/0.35, 6), and +-1 beyond; error below
# 1 ulp in double. (A series used before cost ~270 passes over the data.)
# The coefficients below are fdlibm's, whose notice reads: "Copyright (C) 1993 by Sun
# Microsystems, Inc. All rights reserved. Developed at SunPro, a Sun Microsystems, Inc.
# business. Permission to use, copy, modify, and distribute this software is freely granted,
# provided that this notice is preserved."

_PP = (-2.37630166566501626084e-05, -5.77027029648944159157e-03, -2.84817495755985104766e-02,
       -3.25042107247001499370e-01, 1.28379167095512558561e-01)
_QQ = (-3.96022827877536812320e-06, 1.32494738004321644526e-04, 5.08130628187576562776e-03,
       6.50222499887672944485e-02, 3.97917223959155352819e-01, 1.0)
_PA = (-2.16637559486879084300e-03, 3.54783043256182359371e-02, -1.10894694282396677476e-01,
       3.18346619901161753674e-01, -3.72207876035701323847e-01, 4.14856118683748331666e-01,
       -2.36211856075265944077e-03)
_QA = (1.19844998467991074170e-02, 1.36370839120290507362e-02, 1.26171219808761642112e-01,
       7.18286544141962662868e-02, 5.40397917702171048937e-01, 1.06420880400844228286e-01, 1.0)
_RA = (-9.81432934416914548592e+00, -8.12874355063065934246e+01, -1.84605092906711035994e+02,
       -1.62396669462573470355e+02, -6.23753324503260060396e+01, -1.05586262253232909814e+01,
       -6.93858572707181764372e-01, -9.86494403484714822705e-03)
_SA = (-6.04244152148580987438e-02, 6.57024977031928170135e+00, 1.08635005541779435134e+02,
       4.29008140027567833386e+02, 6.45387271733267880336e+02, 4.34565877475229228821e+02,
       1.37657754143519042600e+02, 1.96512716674392571292e+01, 1.0)
_RB = (-4.83519191608651397019e+02, -1.02509513161107724954e+03, -6.37566443368389627722e+02,
       -1.60636384855821916062e+02, -1.77579549177547519889e+01, -7.99283237680523006574e-01,
       -9.86494292470009928597e-03)
_SB = (-2.24409524465858183362e+01, 4.74528541206955367215e+02, 2.55305040643316442583e+03,
       3.19985821950859553908e+03, 1.53672958608443695994e+03, 3.25792512996573918826e+02,
       3.03380607434824582924e+01, 1.0)
_ERX = 8.45062911510467529297e-01


def _poly(coeffs, z):
    """Horner's scheme, highest coefficient first."""
    acc = np.full_like(z, coeffs[0])
    for c in coeffs[1:]:
        acc *= z
        acc += c
    return acc


def erf(x):
    """Element-wise error function of an array, computed in float64 (fdlibm's algorithm)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    out = np.ones_like(a)                          # |x| >= 6 (and inf): 1
    r1 = a < 0.84375
    xs = a[r1]
    z = xs * xs
    out[r1] = xs + xs * (_poly(_PP, z) / _poly(_QQ, z))
    r2 = (a >= 0.84375) & (a < 1.25)
    s = a[r2] - 1
    out[r2] = _ERX + _poly(_PA, s) / _poly(_QA, s)
    for lo, hi, rc, sc in ((1.25, 1 / 0.35, _RA, _SA), (1 / 0.35, 6, _RB, _SB)):
        m = (a >= lo) & (a < hi)
        xl = a[m]
        s = 1 / (xl * xl)
        # fdlibm's exp(-z*z - 0.5625) * exp((z - x)*(z + x) + R/S), z = x with its low
        # 32 bits cleared (so z*z is exact)
        zz = (xl.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
        r = np.exp(-zz * zz - 0.5625) * np.exp((zz - xl) * (zz + xl) + _poly(rc, s) / _poly(sc, s))
        out[m] = 1 - r / xl
    out[np.isnan(a)] = np.nan
    return np.copysign(out, x)


# ----------------------------------------------------------------------------------------
# pointwise activations

def sigmoid(dest, src):
    _store(dest, _sigmoid(src.host_read()))


def sigmoid_gradient(grad, dest, gradient_input):
    d = dest.host_read()
    _grad_out(grad, gradient_input, gradient_input.host_read() * d * (1 - d))


def mish(dest, src):
    s = src.host_read()
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        delta = 2 * e + e * e + 2
        y = s - 2 * s / delta
    # exp overflow: delta = inf gives x - 0 = x, the right limit; keep it
    _store(dest, y)


def _mish_derivative(x):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        delta = 2 * e + e * e + 2
        omega = 4 * (x + 1) + 4 * e * e + e * e * e + e * (4 * x + 6)
        g = e * omega / (delta * delta)
    # dlib clamps: exactly 1 from x >= 8 and 0 from x <= -8
    return np.where(x >= 8, 1, np.where(x <= -8, 0, g)).astype(x.dtype, copy=False)


def mish_gradient(grad, src, gradient_input):
    _grad_out(grad, gradient_input, gradient_input.host_read() * _mish_derivative(src.host_read()))


def tanh(dest, src):
    _store(dest, np.tanh(src.host_read()))


def tanh_gradient(grad, dest, gradient_input):
    d = dest.host_read()
    _grad_out(grad, gradient_input, gradient_input.host_read() * (1 - d * d))


def gelu(dest, src):
    s = src.host_read()
    _store(dest, 0.5 * s * (1 + erf(s / np.sqrt(2)).astype(s.dtype)))


def gelu_gradient(grad, src, gradient_input):
    s = src.host_read()
    cdf = (0.5 * (1 + erf(s / np.sqrt(2)))).astype(s.dtype)
    pdf = np.exp(-0.5 * s * s) * s.dtype.type(1 / np.sqrt(2 * np.pi))
    _grad_out(grad, gradient_input, gradient_input.host_read() * (cdf + s * pdf))


def silu(dest, src):
    s = src.host_read()
    _store(dest, s * _sigmoid(s))


def silu_gradient(grad, src, gradient_input):
    s = src.host_read()
    sig = _sigmoid(s)
    _grad_out(grad, gradient_input, gradient_input.host_read() * (sig * (1 + s * (1 - sig))))


def prelu(dest, src, param):
    s = src.host_read()
    p = s.dtype.type(param.host_read().reshape(-1)[0])
    _store(dest, np.where(s > 0, s, p * s))


def prelu_gradient(grad, src, gradient_input, param, params_grad):
    s = src.host_read()
    gi = gradient_input.host_read()
    p = s.dtype.type(param.host_read().reshape(-1)[0])
    pos = s > 0
    pgrad = np.sum(np.where(pos, 0, gi * s))
    grad.host()[...] += np.where(pos, gi, p * gi)
    params_grad.host_write_only().reshape(-1)[0] = pgrad


def leaky_relu(dest, src, alpha):
    s = src.host_read()
    _store(dest, np.where(s > 0, s, alpha * s))


def leaky_relu_gradient(grad, dest, gradient_input, alpha):
    gi = gradient_input.host_read()
    _grad_out(grad, gradient_input, np.where(dest.host_read() > 0, gi, alpha * gi))


def clipped_relu(dest, src, ceiling):
    s = src.host_read()
    _store(dest, np.minimum(np.maximum(s, 0), s.dtype.type(ceiling)))


def clipped_relu_gradient(grad, dest, gradient_input, ceiling):
    d = dest.host_read()
    gi = gradient_input.host_read()
    _grad_out(grad, gradient_input, np.where((d > 0) & (d < ceiling), gi, 0))


def elu(dest, src, alpha):
    s = src.host_read()
    with np.errstate(over="ignore"):
        neg = alpha * (np.exp(s) - 1)   # only used where s <= 0
    _store(dest, np.where(s > 0, s, neg))


def elu_gradient(grad, dest, gradient_input, alpha):
    d = dest.host_read()
    gi = gradient_input.host_read()
    _grad_out(grad, gradient_input, np.where(d > 0, gi, (alpha + d) * gi))


def smelu(dest, src, beta):
    s = src.host_read()
    mid = (s + beta) * (s + beta) / (4 * beta)
    _store(dest, np.where(s >= beta, s, np.where(s <= -beta, 0, mid)))


def smelu_gradient(grad, dest, gradient_input, beta):
    # dlib's derivative is written in terms of the output y: sqrt(beta*y)/beta = (x+beta)/(2beta)
    d = dest.host_read()
    gi = gradient_input.host_read()
    with np.errstate(invalid="ignore"):
        mid = np.sqrt(beta * d) / beta * gi
    _grad_out(grad, gradient_input, np.where(d >= beta, gi, np.where(d == 0, 0, mid)))
