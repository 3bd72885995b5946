"""The core dispatchers: element-wise ``add``, ``affine_transform`` (and its rectangle form),
``exp``/``log``/``log10``, ``gemm`` (channel- and plane-wise), the bias gradients, ``dot``, and
``relu`` with its gradient (twins: ``cpu/ops.py``, ``cuda/ops.py``). Each docstring is the
op's contract."""

from __future__ import annotations

from ..tensor import tensor
from ._plane_wise import is_plane_matrix
from .backend import _backend, _broadcastable, _check_tensors, _same_dims
from .softmax_family import CHANNEL_WISE, PLANE_WISE

__all__ = ["add", "affine_transform", "assign_bias_gradient", "assign_conv_bias_gradient", "dot",
           "exp", "gemm", "log", "log10", "relu", "relu_gradient"]


# ----------------------------------------------------------------------------------------
# element-wise, reductions, GEMM

def add(*args):
    """Two forms, told apart by the number of arguments (dlib's two ``tt::add`` overloads).

    ``add(beta, dest, alpha, src)``: ``dest = beta*dest + alpha*src``, broadcasting src over
    dest. Requires: every dimension of src is 1 or equal to dest's (covers dlib's cases: same
    dimensions, a ``(1,k,1,1)`` bias, a ``(1,k,nr,nc)`` plane set, a per-sample scalar).
    Ensures: with ``beta == 0`` dest is assigned (its old contents, even inf/NaN, are not read).

    ``add(dest, src1, src2)``: ``dest = src1 + src2`` pointwise in 4-D with zero padding: any
    dimensions; an element missing from a source counts as 0, and dest keeps its own
    dimensions (a source larger than dest is cropped). dest may be src1 or src2.
    """
    if len(args) == 3:
        dest, src1, src2 = args
        _check_tensors("add", dest=dest, src1=src1, src2=src2)
        _backend().add(dest, src1, src2)
        return
    if len(args) != 4:
        raise TypeError(f"add takes (beta, dest, alpha, src) or (dest, src1, src2), got {len(args)} arguments")
    beta, dest, alpha, src = args
    _check_tensors("add", dest=dest, src=src)
    _broadcastable("add", dest, src)
    _backend().add(beta, dest, alpha, src)


def affine_transform(*args):
    """``dest = A*src1 [+ B*src2 [+ C*src3]] [+ constant]`` element-wise (dlib's scalar
    overloads): ``affine_transform(dest, src, A, B)`` is ``A*src + B``;
    ``affine_transform(dest, s1, s2, A, B[, C])`` is ``A*s1 + B*s2 [+ C]``; and so on.

    Requires: all tensors have dest's dimensions; the number of scalars is the number of
    sources or one more (the constant). Ensures: dest is assigned (may alias a source).

    ``affine_transform(rect, dest, src1, src2, src3, A, B, C)`` (dlib's rectangle overload)
    assigns ``A*src1 + B*src2 + C*src3`` inside ``rect`` only, on the tensors' dlib matrix
    view (``num_samples`` rows of ``size/num_samples`` columns); the rest of dest is kept.
    Requires: the four tensors have dest's size and ``num_samples``; rect (any object with
    dlib's ``left()``, ``top()``, ``right()``, ``bottom()``, inclusive) lies inside that matrix.

    Tensor coefficients (``A``, ``B`` as tensors) are ``affine_transform_tensors`` (dlib's
    overload of the same name) and ``affine_transform_conv`` (per channel).
    """
    if args and not isinstance(args[0], tensor) and hasattr(args[0], "left"):
        _affine_transform_rect(*args)
        return
    if not args or not isinstance(args[0], tensor):
        raise TypeError("affine_transform(dest, src1[, src2[, src3]], A[, B[, C]][, constant]) or "
                        "affine_transform(rect, dest, src1, src2, src3, A, B, C): "
                        f"the first argument is {type(args[0]).__name__ if args else 'missing'}")
    dest, args = args[0], args[1:]
    srcs = [a for a in args if isinstance(a, tensor)]
    coeffs = [a for a in args if not isinstance(a, tensor)]
    if not coeffs and len(srcs) in (2, 3):
        raise TypeError("affine_transform(dest, src, A, B) with tensors A and B is "
                        "tt.affine_transform_tensors(dest, src, A, B) (or tt.affine_transform_conv "
                        "for one coefficient per channel)")
    if not srcs or args[:len(srcs)] != tuple(srcs) or len(coeffs) not in (len(srcs), len(srcs) + 1):
        raise TypeError(
            "affine_transform(dest, src1[, src2[, src3]], A[, B[, C]][, constant]): "
            f"got {len(srcs)} tensors and {len(coeffs)} scalars")
    _same_dims("affine_transform", dest=dest, **{f"src{i + 1}": s for i, s in enumerate(srcs)})
    constant = coeffs[len(srcs)] if len(coeffs) > len(srcs) else 0.0
    _backend().affine_transform(dest, srcs, [float(c) for c in coeffs[:len(srcs)]], float(constant))


def _affine_transform_rect(rect, dest, src1, src2, src3, A, B, C):
    _check_tensors("affine_transform", dest=dest, src1=src1, src2=src2, src3=src3)
    bad = {n: t for n, t in (("src1", src1), ("src2", src2), ("src3", src3))
           if t.size() != dest.size() or t.num_samples() != dest.num_samples()}
    if bad:
        shapes = ", ".join(f"{n}{t.shape}" for n, t in bad.items())
        raise ValueError(f"affine_transform(rect, ...): {shapes} must have the size and "
                         f"num_samples of dest{dest.shape}")
    rows = dest.num_samples()
    cols = dest.size() // rows if rows else 0
    left, top, right, bottom = (int(v) for v in (rect.left(), rect.top(), rect.right(),
                                                 rect.bottom()))
    if right < left or bottom < top:    # an empty rectangle: nothing to assign
        return
    if left < 0 or top < 0 or right >= cols or bottom >= rows:
        raise ValueError(f"affine_transform(rect, ...): rect [left {left}, top {top}, right "
                         f"{right}, bottom {bottom}] is not inside dest's {rows}x{cols} matrix "
                         f"(dest{dest.shape})")
    window = (slice(top, bottom + 1), slice(left, right + 1))
    _backend().affine_transform_rect(window, dest, src1, src2, src3, float(A), float(B), float(C))


def _pointwise(name, dest, src):
    _check_tensors(name, dest=dest, src=src)
    if dest.size() != src.size():
        raise ValueError(f"{name}: dest{dest.shape} and src{src.shape} must have the same size")
    getattr(_backend(), name)(dest, src)


def exp(dest, src):
    """``dest = exp(src)`` element-wise (dlib's ``tt::exp``). Requires: ``dest.size() ==
    src.size()`` (the dimensions may differ). dest may be src (in place)."""
    _pointwise("exp", dest, src)


def log(dest, src):
    """``dest = log(src)`` element-wise, natural logarithm (dlib's ``tt::log``); as ``exp``.
    A value <= 0 gives -inf or NaN, as numpy's and CUDA's ``log``."""
    _pointwise("log", dest, src)


def log10(dest, src):
    """``dest = log10(src)`` element-wise (dlib's ``tt::log10``); as ``log``."""
    _pointwise("log10", dest, src)


def gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode=CHANNEL_WISE):
    """``dest = alpha * op(lhs) @ op(rhs) + beta*dest`` (dlib's ``tt::gemm``).

    ``mode=CHANNEL_WISE``: on the ``num_samples x k*nr*nc`` matrix views of the tensors.
    ``mode=PLANE_WISE``: on each ``(n, k)`` plane, an ``nr x nc`` matrix, as dlib: a tensor
    with ``num_samples*k > 1`` and ``nr*nc == 1`` is instead one ``num_samples x k`` matrix,
    used for every plane; if all three are such matrices this is one product. The planes
    computed are the first ``min(num_samples) x min(k)`` of the non-matrix tensors.

    Requires: the matrix shapes agree; in PLANE_WISE mode dest is a matrix only if lhs and
    rhs are too. Ensures: ``beta == 0`` assigns dest (PLANE_WISE: the planes computed).
    """
    _check_tensors("gemm", dest=dest, lhs=lhs, rhs=rhs)
    if mode not in (CHANNEL_WISE, PLANE_WISE):
        raise ValueError(f"gemm: mode must be CHANNEL_WISE ({CHANNEL_WISE}) or PLANE_WISE ({PLANE_WISE}), got {mode!r}")
    plane = mode == PLANE_WISE

    def mat(t, trans):
        if plane:
            r, c = _plane_matrix_shape(t)
        else:
            r, c = t.num_samples(), t.size() // max(t.num_samples(), 1)
        return (c, r) if trans else (r, c)

    (ar, ac), (br, bc) = mat(lhs, trans_lhs), mat(rhs, trans_rhs)
    dr, dc = mat(dest, False)
    if ac != br or (ar, bc) != (dr, dc):
        raise ValueError(
            f"gemm: op(lhs) is {ar}x{ac}, op(rhs) is {br}x{bc}, dest is {dr}x{dc} "
            f"(lhs{lhs.shape} trans={trans_lhs}, rhs{rhs.shape} trans={trans_rhs}, dest{dest.shape}"
            f"{', PLANE_WISE' if plane else ''})")
    if plane:
        kinds = [is_plane_matrix(t) for t in (lhs, rhs, dest)]
        if kinds[2] and not all(kinds):
            raise ValueError(f"gemm: PLANE_WISE dest{dest.shape} is a single matrix but lhs{lhs.shape} "
                             f"or rhs{rhs.shape} holds several planes")
        _backend().gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode)
    else:
        _backend().gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs)


def _plane_matrix_shape(t):
    if is_plane_matrix(t):
        return (t.num_samples() if t.num_samples() > 1 else t.nr(),
                t.k() if t.k() > 1 else t.nc())
    return t.nr(), t.nc()


def assign_bias_gradient(grad, gradient_input):
    """``grad[j] = sum over samples of gradient_input[n, j]`` for fc biases.

    Requires: ``grad.num_samples() == 1`` and ``grad.size() == gradient_input.size() /
    gradient_input.num_samples()``. Ensures: grad is assigned.
    """
    _check_tensors("assign_bias_gradient", grad=grad, gradient_input=gradient_input)
    n = gradient_input.num_samples()
    if grad.num_samples() != 1 or n == 0 or grad.size() * n != gradient_input.size():
        raise ValueError(f"assign_bias_gradient: grad{grad.shape} does not match "
                         f"gradient_input{gradient_input.shape}")
    _backend().assign_bias_gradient(grad, gradient_input)


def assign_conv_bias_gradient(grad, gradient_input):
    """``grad[k] = sum over n, r, c of gradient_input[n, k, r, c]`` for conv biases.

    Requires: grad is ``(1, gradient_input.k(), 1, 1)``. Ensures: grad is assigned.
    """
    _check_tensors("assign_conv_bias_gradient", grad=grad, gradient_input=gradient_input)
    if grad.shape != (1, gradient_input.k(), 1, 1):
        raise ValueError(f"assign_conv_bias_gradient: grad{grad.shape} must be "
                         f"(1, {gradient_input.k()}, 1, 1) for gradient_input{gradient_input.shape}")
    _backend().assign_conv_bias_gradient(grad, gradient_input)


def dot(a, b) -> float:
    """``sum(a * b)`` accumulated in float64 (dlib's ``dot(tensor, tensor)``).
    Requires: ``a.size() == b.size()``."""
    _check_tensors("dot", a=a, b=b)
    if a.size() != b.size():
        raise ValueError(f"dot: a{a.shape} and b{b.shape} differ in size")
    return _backend().dot(a, b)


# ----------------------------------------------------------------------------------------
# activations

def relu(dest, src):
    """``dest = max(0, src)``. Requires same dimensions; dest may be src (in place)."""
    _same_dims("relu", dest=dest, src=src)
    _backend().relu(dest, src)


def relu_gradient(grad, dest, gradient_input, add_to=True):
    """Gradient of ``dot(relu(x), gradient_input)`` given ``dest = relu(x)``: gradient_input
    where ``dest > 0``, else 0.

    Requires: same dimensions. Ensures: assigns to grad if ``grad is gradient_input`` (in
    place), otherwise ADDS to grad, or, with ``add_to=False``, assigns every element of
    grad (its old contents, even NaN, are not read).
    """
    _same_dims("relu_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().relu_gradient(grad, dest, gradient_input, add_to=bool(add_to))
