"""Bilinear resampling of image planes (dlib's ``tt::resize_bilinear`` and its gradient).

dlib's convention is "align corners": destination pixel ``c`` samples the source at
``x = c * (src.nc - 1) / max(dest.nc - 1, 1)`` (likewise rows), so the corner pixels of both
planes coincide. The CPU twin reproduces dlib's float arithmetic (``resize_image``), so an
image pyramid built here matches dlib's to the last bit or so.
"""

from __future__ import annotations

from ..tensor import tensor
from .backend import _backend, _check_tensors

__all__ = ["resize_bilinear", "resize_bilinear_gradient"]


def _check_strides(op, name, t, row_stride, channel_stride):
    """With explicit strides a tensor describes a window inside its storage: plane ``i``
    (over samples x channels) starts ``i*channel_stride`` elements after the tensor's
    first element and rows are ``row_stride`` apart (dlib's strided overloads)."""
    if row_stride is None and channel_stride is None:
        return t.nc(), t.nr() * t.nc()
    if row_stride is None or channel_stride is None:
        raise TypeError(f"{op}: give both {name}_row_stride and {name}_channel_stride, or neither")
    row_stride, channel_stride = int(row_stride), int(channel_stride)
    if row_stride < t.nc() or channel_stride < 0:
        raise ValueError(f"{op}: {name}{t.shape} has row stride {row_stride} < nc or a negative "
                         f"channel stride {channel_stride}")
    planes = t.num_samples() * t.k()
    if planes and t.nr() and t.nc():
        last = (planes - 1) * channel_stride + (t.nr() - 1) * row_stride + t.nc()
        if last > t.elements_from_offset():
            raise ValueError(f"{op}: {name}{t.shape} with row stride {row_stride} and channel stride "
                             f"{channel_stride} reaches element {last} of the "
                             f"{t.elements_from_offset()} its storage holds from its first element")
    return row_stride, channel_stride


def _dlib_order(op, names, first, args, strides):
    """dlib's strided overloads put each tensor before its own strides,
    ``op(a, a_row_stride, a_channel_stride, b, b_row_stride, b_channel_stride)``; dnnpy's
    keyword form is ``op(a, b, a_row_stride=..., ...)``. Returns ``(b, strides)`` for either."""
    if len(args) == 5 and isinstance(args[2], tensor) and not isinstance(args[0], tensor):
        if any(v is not None for v in strides):
            raise TypeError(f"{op}: strides given both in dlib's positional order and as keywords")
        return args[2], (args[0], args[1], args[3], args[4])
    if not args or not isinstance(args[0], tensor):
        raise TypeError(f"{op}({names[0]}, {names[1]}[, strides]) or dlib's strided "
                        f"{op}({names[0]}, {names[0]}_row_stride, {names[0]}_channel_stride, "
                        f"{names[1]}, {names[1]}_row_stride, {names[1]}_channel_stride): got "
                        f"{first.__class__.__name__} then {[type(a).__name__ for a in args]}")
    given = list(args[1:]) + [None] * (5 - len(args))
    if len(args) > 5 or any(g is not None and v is not None for g, v in zip(given, strides)):
        raise TypeError(f"{op}: too many arguments, or a stride given twice")
    return args[0], tuple(g if g is not None else v for g, v in zip(given, strides))


def resize_bilinear(dest, *args, dest_row_stride=None, dest_channel_stride=None,
                    src_row_stride=None, src_channel_stride=None):
    """Every ``(n, k)`` plane of ``src`` bilinearly resized (align corners) into the plane of
    ``dest``: ``resize_bilinear(dest, src)``.

    Requires: dest and src distinct, same num_samples and k. The optional strides are dlib's
    strided overload (see ``_check_strides``): the planes are windows of larger images;
    ``resize_bilinear(dest, src, dest_row_stride=, dest_channel_stride=, src_row_stride=,
    src_channel_stride=)``, or dlib's positional order ``resize_bilinear(dest,
    dest_row_stride, dest_channel_stride, src, src_row_stride, src_channel_stride)``.
    Ensures: dest is assigned.
    """
    src, (dest_row_stride, dest_channel_stride, src_row_stride, src_channel_stride) = _dlib_order(
        "resize_bilinear", ("dest", "src"), dest, args,
        (dest_row_stride, dest_channel_stride, src_row_stride, src_channel_stride))
    _check_tensors("resize_bilinear", dest=dest, src=src)
    if dest is src or dest.num_samples() != src.num_samples() or dest.k() != src.k():
        raise ValueError(f"resize_bilinear: dest{dest.shape} and src{src.shape} must be distinct "
                         f"tensors with the same num_samples and k")
    ds = _check_strides("resize_bilinear", "dest", dest, dest_row_stride, dest_channel_stride)
    ss = _check_strides("resize_bilinear", "src", src, src_row_stride, src_channel_stride)
    _backend().resize_bilinear(dest, ds[0], ds[1], src, ss[0], ss[1])


def resize_bilinear_gradient(grad, *args, grad_row_stride=None, grad_channel_stride=None,
                             gradient_input_row_stride=None, gradient_input_channel_stride=None):
    """The gradient of ``f(SRC) = dot(gradient_input, resize_bilinear(SRC))`` ADDED to grad:
    ``resize_bilinear_gradient(grad, gradient_input)``.

    Requires: distinct tensors, same num_samples and k; gradient_input has the resized
    planes' shape, grad the source planes' shape. Optional strides as in ``resize_bilinear``
    (keywords, or dlib's order: grad, its two strides, gradient_input, its two strides).
    """
    gradient_input, (grad_row_stride, grad_channel_stride, gradient_input_row_stride,
                     gradient_input_channel_stride) = _dlib_order(
        "resize_bilinear_gradient", ("grad", "gradient_input"), grad, args,
        (grad_row_stride, grad_channel_stride, gradient_input_row_stride,
         gradient_input_channel_stride))
    _check_tensors("resize_bilinear_gradient", grad=grad, gradient_input=gradient_input)
    if (grad is gradient_input or grad.num_samples() != gradient_input.num_samples()
            or grad.k() != gradient_input.k()):
        raise ValueError(f"resize_bilinear_gradient: grad{grad.shape} and gradient_input"
                         f"{gradient_input.shape} must be distinct tensors with the same "
                         f"num_samples and k")
    gs = _check_strides("resize_bilinear_gradient", "grad", grad, grad_row_stride, grad_channel_stride)
    gis = _check_strides("resize_bilinear_gradient", "gradient_input", gradient_input,
                         gradient_input_row_stride, gradient_input_channel_stride)
    _backend().resize_bilinear_gradient(grad, gs[0], gs[1], gradient_input, gis[0], gis[1])
