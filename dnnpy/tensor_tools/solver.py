"""Ops used by the solvers (dlib's ``tt::affine_transform_range`` and
``tt::compute_adam_update``): element ranges of flat parameter tensors."""

from __future__ import annotations

from .backend import _backend, _check_tensors

__all__ = ["affine_transform_range", "compute_adam_update"]


def _check_range(op, begin, end, **tensors):
    _check_tensors(op, **tensors)
    first, *rest = tensors.values()
    size = first.size()
    if any(t.size() != size for t in rest):
        sizes = {name: t.size() for name, t in tensors.items()}
        raise ValueError(f"{op}: the tensors differ in size: {sizes}")
    if not 0 <= begin <= end <= size:
        raise ValueError(f"{op}: need 0 <= begin <= end <= size, got begin={begin}, end={end}, size={size}")


def affine_transform_range(begin, end, dest, src1, src2, src3, A, B, C):
    """For the flat elements ``i`` in ``[begin, end)``:
    ``dest[i] = A*src1[i] + B*src2[i] + C*src3[i]``.

    Requires: all four tensors have the same size (dest may be a source).
    Ensures: elements outside the range are untouched.
    """
    _check_range("affine_transform_range", begin, end, dest=dest, src1=src1, src2=src2, src3=src3)
    _backend().affine_transform_range(int(begin), int(end), dest, src1, src2, src3, float(A), float(B), float(C))


def compute_adam_update(begin, end, s, m, v, t, learning_rate, weight_decay, momentum1, momentum2,
                        params, params_grad):
    """One Adam step on the flat elements ``[begin, end)`` (dlib's formula, L2 decay folded
    into the gradient, not AdamW)::

        g = weight_decay*params + params_grad
        m = momentum1*m + (1-momentum1)*g
        v = momentum2*v + (1-momentum2)*g*g
        s = -alpha*m / (sqrt(v) + 1e-8),  alpha = lr*sqrt(1-momentum2^t)/(1-momentum1^t)

    Requires: ``t > 0``; s, m, v, params and params_grad have the same size.
    Ensures: m, v and s are updated in the range; elements outside it are untouched.
    """
    _check_range("compute_adam_update", begin, end, s=s, m=m, v=v, params=params, params_grad=params_grad)
    if t <= 0:
        raise ValueError(f"compute_adam_update: t must be > 0, got {t}")
    _backend().compute_adam_update(int(begin), int(end), s, m, v, float(t), float(learning_rate),
                                   float(weight_decay), float(momentum1), float(momentum2), params, params_grad)
