"""CPU twin of the element-wise, reduction and GEMM ops (numpy).

Same names and signatures as ``dnnpy.tensor_tools``; shape checks are done by the
dispatcher, so these functions assume valid input. Writes go through ``host()`` (or
``host_write_only()`` when the old contents are not read); reads through ``host_read()``.
"""

import numpy as np

from ...tensor import tensor
from .._plane_wise import plane_counts, planes
from .._twins import twin_ops
from . import onednn

__all__ = twin_ops("ops")


def _mat(t: tensor, a):
    """dlib's ``mat(t)``: the ``num_samples x k*nr*nc`` matrix view of an NCHW array."""
    return a.reshape(t.num_samples(), -1)


def add(*args):
    """``add(beta, dest, alpha, src)`` (broadcasting) or ``add(dest, src1, src2)`` (zero
    padded), as the dispatcher."""
    if len(args) == 3:
        _add_zero_padded(*args)
    else:
        _add_scaled(*args)


def _add_scaled(beta, dest, alpha, src):
    m = onednn.mirrored(dest, (src,), read_out=beta != 0)
    if m is not None:               # blocked values of one layout: element-wise on them
        out, (s,), commit = m
        _scaled_sum(beta, out.floats, alpha, s.floats)
        commit()
        return
    _scaled_sum(beta, None, alpha, src.host_read(), dest)


def _scaled_sum(beta, out, alpha, s, dest=None):
    """``out = beta*out + alpha*s`` (``out``: ``dest.host()`` when None)."""
    if alpha != 1:
        s = float(alpha) * s
    if out is None:
        out = dest.host()
    if beta == 0:
        # assign rather than scale: dest may hold inf/NaN (test_layer's prefill does)
        out[...] = s
        return
    if beta != 1:
        if np.shares_memory(out, s):            # dest is src: scaling out would scale s
            s = s.copy()
        out *= float(beta)
    out += s


def _add_zero_padded(dest, src1, src2):
    # one shape, blocked values of one layout: the first source holding them sets it
    m = onednn.mirrored(dest, (src1, src2)) or onednn.mirrored(dest, (src2, src1))
    if m is not None:
        out, (a, b), commit = m
        np.add(a.floats, b.floats, out=out.floats)
        commit()
        return
    a, b = src1.host_read(), src2.host_read()
    if a.shape == b.shape == dest.shape:
        np.add(a, b, out=dest.host())  # element-wise: safe when dest is a source
        return
    r1 = tuple(slice(0, min(d, s)) for d, s in zip(dest.shape, a.shape))
    r2 = tuple(slice(0, min(d, s)) for d, s in zip(dest.shape, b.shape))
    result = np.zeros(dest.shape, a.dtype)  # built aside: dest may alias src1 or src2
    result[r1] += a[r1]
    result[r2] += b[r2]
    dest.host_write_only()[...] = result


def assign_conv_bias_gradient(grad, gradient_input):
    g = gradient_input.host_read()
    n, k = g.shape[0], g.shape[1]
    grad.host_write_only()[...] = g.reshape(n, k, -1).sum(axis=(0, 2)).reshape(grad.shape)


def assign_bias_gradient(grad, gradient_input):
    g = gradient_input.host_read()
    grad.host_write_only()[...] = g.reshape(g.shape[0], -1).sum(axis=0).reshape(grad.shape)


_PLANE_WISE = 1  # dlib's operation_mode::PLANE_WISE (tensor_tools.PLANE_WISE)


def gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode=0):
    if onednn.gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode):
        return
    if mode == _PLANE_WISE:
        _gemm_plane_wise(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs)
        return
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


def _gemm_plane_wise(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs):
    mats, ns, nk = plane_counts(lhs, rhs, dest)
    a = planes(lhs, lhs.host_read(), mats[0], ns, nk)
    b = planes(rhs, rhs.host_read(), mats[1], ns, nk)
    if trans_lhs:
        a = a.swapaxes(-1, -2)
    if trans_rhs:
        b = b.swapaxes(-1, -2)
    prod = np.matmul(a, b)
    if alpha != 1:
        prod *= float(alpha)
    if beta == 0:
        full = dest.host_write_only() if dest.size() == ns * nk * dest.nr() * dest.nc() or all(mats) \
            else dest.host()
        out = planes(dest, full, mats[2], ns, nk)
        out[...] = prod
        return
    out = planes(dest, dest.host(), mats[2], ns, nk)
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


def affine_transform_rect(window, dest, src1, src2, src3, A, B, C):
    """``window`` (row and column slices of the ``num_samples x size/num_samples`` matrix
    views) of dest is assigned ``A*src1 + B*src2 + C*src3``; the rest of dest is kept."""
    n = dest.num_samples()
    a, b, c = (s.host_read().reshape(n, -1)[window] for s in (src1, src2, src3))
    result = A * a
    result += B * b
    result += C * c
    dest.host().reshape(n, -1)[window] = result


def _pointwise(ufunc, dest, src):
    s = src.host_read()
    out = dest.host()
    ufunc(s.reshape(out.shape), out=out)


def exp(dest, src):
    _pointwise(np.exp, dest, src)


def log(dest, src):
    _pointwise(np.log, dest, src)


def log10(dest, src):
    _pointwise(np.log10, dest, src)


def relu(dest, src):
    # numpy even where oneDNN is active: one pass that keeps NaN (oneDNN's ReLU maps NaN
    # to 0, and checking the input first costs as much as this maximum); on blocked values
    # where the input has them (padded lanes are 0 and stay 0)
    m = onednn.mirrored(dest, (src,))
    if m is not None:
        out, (x,), commit = m
        np.maximum(x.floats, 0.0, out=out.floats)
        commit()
        return
    np.maximum(src.host_read(), 0.0, out=dest.host())


def relu_gradient(grad, dest, gradient_input, add_to=True):
    """``gi`` where ``dest > 0``, else 0: in place (``grad is gradient_input``: zeroed where
    ``dest <= 0``, so a NaN dest keeps its gradient), added, or assigned.

    Computed as ``gi * (dest > 0)``: exact for finite values (``gi*1`` is gi, ``gi*0`` a
    zero) and several times faster than a masked ``where=`` op or ``np.where`` on a random
    mask. An infinite or NaN gradient would give ``inf*0 = NaN`` where 0 is due, so those
    elements are set to 0 afterwards (one ``isfinite`` check; the repair only runs when
    there are any)."""
    if onednn.relu_gradient(grad, dest, gradient_input, add_to):
        return
    d = dest.host_read()
    if grad is gradient_input:
        out = grad.host()
        off = np.less_equal(d, 0)
        np.logical_not(off, out=off)                 # keep: dest > 0 or NaN
        with np.errstate(invalid="ignore"):          # inf*0: repaired below
            np.multiply(out, off, out=out)
        _zero_nonfinite(out, off)
        return
    gi = gradient_input.host_read()
    keep = np.greater(d, 0)
    if add_to:
        with np.errstate(invalid="ignore"):
            masked = np.multiply(gi, keep)
        _zero_nonfinite(masked, keep)
        out = grad.host()
        out += masked
    else:
        out = grad.host_write_only()
        with np.errstate(invalid="ignore"):
            np.multiply(gi, keep, out=out)
        _zero_nonfinite(out, keep)


def _zero_nonfinite(values, keep):
    """Set to 0 the non-finite products where ``keep`` is False (``inf*0``, ``nan*0``)."""
    if not np.isfinite(values).all():
        values[~keep & ~np.isfinite(values)] = 0


def dot(a, b) -> float:
    return float(np.dot(a.host_read().ravel().astype(np.float64), b.host_read().ravel().astype(np.float64)))
