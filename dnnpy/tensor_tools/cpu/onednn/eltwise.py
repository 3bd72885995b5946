"""oneDNN's ReLU backward for the CPU twin's ``relu_gradient``. The forward stays numpy's
``maximum`` (one pass that keeps NaN; oneDNN's ReLU maps NaN to 0, which would hide a
diverging net, and checking the input first costs as much as numpy's pass). A gradient that
partly overlaps its inputs runs on numpy too.

dlib's ``relu_gradient(grad, dest, gradient_input)`` sees the layer's output, not its input:
oneDNN's ``eltwise_relu_use_dst_for_bwd`` computes ``gi * (dest > 0)``. For finite values
that is bit-identical to numpy's twin. Non-finite gradients differ, and only once a net
has already diverged: an infinite or NaN ``gi`` where ``dest <= 0`` gives NaN (numpy: 0, as
dlib), and a NaN ``dest`` passes ``gi`` through (dlib: only in place). Either way a NaN
shows and the trainer's divergence checks stop the run.
Tensors are treated as flat 1-D vectors: one primitive per element count, on NCHW values or
on blocked ones (``layout.mirrored``: where the output of the ReLU is blocked, the gradients
are taken in its layout).
"""

from __future__ import annotations

from . import _api as A
from . import _primitive as P
from ._common import OwnedPD, assign_or_add, cached, float32_tensors
from ._state import active
from .layout import mirrored

__all__ = ["relu_gradient"]

_DST = A.ARGS["DNNL_ARG_DST"]
_DIFF_SRC, _DIFF_DST = A.ARGS["DNNL_ARG_DIFF_SRC"], A.ARGS["DNNL_ARG_DIFF_DST"]
_cache = P.Cache()


def _forward_pd(md, alg):
    return A.api().new("dnnl_eltwise_forward_primitive_desc_create", P.engine(),
                       A.ENUMS["dnnl_forward_training"], alg, md.handle, md.handle, 0.0, 0.0,
                       None)


class _Backward(P.Primitive):
    """The backward primitive, owning the forward pd it was created from (the hint)."""

    def __init__(self, n):
        md = P.plain((n,))
        alg = A.ENUMS["dnnl_eltwise_relu_use_dst_for_bwd"]
        hint = None
        try:
            hint = OwnedPD(_forward_pd(md, alg))
            pd = A.api().new("dnnl_eltwise_backward_primitive_desc_create", P.engine(), alg,
                             md.handle, md.handle, md.handle, 0.0, 0.0, hint.handle, None)
        except Exception:
            if hint is not None:
                hint.destroy()
            md.destroy()
            raise
        super().__init__(pd, {_DIFF_DST: md, _DST: md, _DIFF_SRC: md}, owned=[md, hint])


def _blocked(grad, dest, gradient_input, add_to):
    """The gradient on blocked values (``layout.mirrored``: ``dest`` has them, the
    gradients are taken in its layout), as one flat vector like NCHW's."""
    if not float32_tensors(grad, gradient_input) or grad.is_aliased_with(dest):
        return False
    got = mirrored(grad, (dest, gradient_input), read_out=add_to and grad is not gradient_input)
    if got is None:
        return False
    out, (d, gi), commit = got
    n = d.floats.size
    prim = cached(_cache, ("relu_gradient", n), lambda: _Backward(n), work=n)
    if prim is None:
        return False
    # (in place, out is gi's mirror: assigned)
    assign_or_add(prim, {_DIFF_DST: gi.floats, _DST: d.floats}, _DIFF_SRC, out.floats,
                  add_to and grad is not gradient_input, "relu_gradient")
    commit()
    return True


def relu_gradient(grad, dest, gradient_input, add_to=True) -> bool:
    """dlib's ``relu_gradient``: ``g = (dest > 0) * gradient_input``, assigned when ``grad is
    gradient_input`` (in place) or ``add_to`` is False, added to grad otherwise."""
    if not active():
        return False
    if _blocked(grad, dest, gradient_input, add_to):
        return True
    d = dest.host_read()
    gi = gradient_input.host_read()
    if not P.f32_contiguous(d, gi) or not float32_tensors(grad) or d.size == 0:
        return False
    if grad.overlaps_elsewhere(gradient_input) or grad.is_aliased_with(dest):
        return False
    prim = cached(_cache, ("relu_gradient", d.size), lambda: _Backward(d.size), work=d.size)
    if prim is None:
        return False
    if grad is gradient_input:
        prim({_DIFF_DST: gi, _DST: d, _DIFF_SRC: grad.host()})   # in place is allowed
    else:
        assign_or_add(prim, {_DIFF_DST: gi, _DST: d}, _DIFF_SRC,
                      grad.host() if add_to else grad.host_write_only(), add_to, "relu_gradient")
    return True
