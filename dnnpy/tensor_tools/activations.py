"""Dispatchers: pointwise activations, the softmax family, row norms / row scaling (for
``l2normalize_``), ``multiply`` / ``threshold`` and the ``tensor_rand`` generator (for
``dropout_``). dlib's ``tt::`` names and argument orders, destination first.

Gradient ops follow dlib's in-place rule: they ASSIGN to ``grad`` when ``grad is
gradient_input`` and ADD to it otherwise (``prelu_gradient`` always adds to ``grad`` and
assigns ``params_grad``). Forward ops may run in place (``dest is src``).

``CHANNEL_WISE`` / ``PLANE_WISE`` are dlib's ``operation_mode`` values (also used by
``tt.gemm``).
"""

from __future__ import annotations

import numbers

from ..tensor import resizable_tensor, tensor
from .backend import _backend, _check_tensors, _same_dims

__all__ = [
    "CHANNEL_WISE", "PLANE_WISE",
    "sigmoid", "sigmoid_gradient", "mish", "mish_gradient", "prelu", "prelu_gradient",
    "leaky_relu", "leaky_relu_gradient", "tanh", "tanh_gradient", "clipped_relu",
    "clipped_relu_gradient", "elu", "elu_gradient", "gelu", "gelu_gradient", "smelu",
    "smelu_gradient", "silu", "silu_gradient",
    "softmax", "softmax_gradient", "softmax_all", "softmax_all_gradient",
    "inverse_norms", "dot_prods", "scale_rows", "scale_rows2", "scale_columns",
    "multiply", "threshold", "tensor_rand",
]

# dlib's operation_mode
CHANNEL_WISE = 0
PLANE_WISE = 1


def _check_mode(op, mode):
    if isinstance(mode, bool) or mode not in (CHANNEL_WISE, PLANE_WISE):
        raise ValueError(f"{op}: mode must be CHANNEL_WISE (0) or PLANE_WISE (1), got {mode!r}")
    return int(mode)


def _check_real(op, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}")
    return float(value)


# ----------------------------------------------------------------------------------------
# pointwise activations without parameters

def sigmoid(dest, src):
    """``dest = 1/(1+exp(-src))``. Requires same dimensions; dest may be src."""
    _same_dims("sigmoid", dest=dest, src=src)
    _backend().sigmoid(dest, src)


def sigmoid_gradient(grad, dest, gradient_input):
    """Gradient of ``dot(sigmoid(x), gradient_input)`` given ``dest = sigmoid(x)``:
    ``gradient_input*dest*(1-dest)``. Assigns if ``grad is gradient_input``, else ADDS."""
    _same_dims("sigmoid_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().sigmoid_gradient(grad, dest, gradient_input)


def mish(dest, src):
    """``dest = src*tanh(log(1+exp(src)))`` (computed as ``x - 2x/(2e+e^2+2)``, e=exp(x))."""
    _same_dims("mish", dest=dest, src=src)
    _backend().mish(dest, src)


def mish_gradient(grad, src, gradient_input):
    """Gradient of ``dot(mish(src), gradient_input)``; takes the INPUT ``src``. dlib's
    derivative is clamped: exactly 1 for ``x >= 8`` and 0 for ``x <= -8``.
    Assigns if ``grad is gradient_input``, else ADDS."""
    _same_dims("mish_gradient", grad=grad, src=src, gradient_input=gradient_input)
    _backend().mish_gradient(grad, src, gradient_input)


def tanh(dest, src):
    """``dest = tanh(src)``. Requires same dimensions; dest may be src."""
    _same_dims("tanh", dest=dest, src=src)
    _backend().tanh(dest, src)


def tanh_gradient(grad, dest, gradient_input):
    """``gradient_input*(1-dest^2)`` given ``dest = tanh(x)``. Assigns if ``grad is
    gradient_input``, else ADDS."""
    _same_dims("tanh_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().tanh_gradient(grad, dest, gradient_input)


def gelu(dest, src):
    """``dest = 0.5*src*(1+erf(src/sqrt(2)))`` (exact erf)."""
    _same_dims("gelu", dest=dest, src=src)
    _backend().gelu(dest, src)


def gelu_gradient(grad, src, gradient_input):
    """Gradient of ``dot(gelu(src), gradient_input)``: ``gi*(Phi(x) + x*phi(x))``; takes the
    INPUT ``src``. Assigns if ``grad is gradient_input``, else ADDS."""
    _same_dims("gelu_gradient", grad=grad, src=src, gradient_input=gradient_input)
    _backend().gelu_gradient(grad, src, gradient_input)


def silu(dest, src):
    """``dest = src*sigmoid(src)``."""
    _same_dims("silu", dest=dest, src=src)
    _backend().silu(dest, src)


def silu_gradient(grad, src, gradient_input):
    """``gi*s*(1+x*(1-s))`` with ``s = sigmoid(x)``; takes the INPUT ``src``. Assigns if
    ``grad is gradient_input``, else ADDS."""
    _same_dims("silu_gradient", grad=grad, src=src, gradient_input=gradient_input)
    _backend().silu_gradient(grad, src, gradient_input)


# ----------------------------------------------------------------------------------------
# pointwise activations with a scalar argument

def prelu(dest, src, param):
    """``dest = src > 0 ? src : p*src`` with ``p = param.host()[0]``.
    Requires: dest and src have the same dimensions, ``param.size() == 1``."""
    _same_dims("prelu", dest=dest, src=src)
    _check_tensors("prelu", param=param)
    if param.size() != 1:
        raise ValueError(f"prelu: param must hold exactly one value, got param{param.shape}")
    _backend().prelu(dest, src, param)


def prelu_gradient(grad, src, gradient_input, param, params_grad):
    """Gradients of ``dot(prelu(src, param), gradient_input)``: ADDS the data gradient to
    ``grad`` and ASSIGNS ``params_grad[0] = sum over src <= 0 of gi*src``.

    Requires: grad, src, gradient_input have the same dimensions; ``grad is not
    gradient_input`` (prelu_ never runs in place); param and params_grad hold one value.
    """
    _same_dims("prelu_gradient", grad=grad, src=src, gradient_input=gradient_input)
    _check_tensors("prelu_gradient", param=param, params_grad=params_grad)
    if grad is gradient_input:
        raise ValueError("prelu_gradient: grad must not be gradient_input (prelu is not in place)")
    if param.size() != 1 or params_grad.size() != 1:
        raise ValueError(f"prelu_gradient: param{param.shape} and params_grad{params_grad.shape} "
                         "must each hold exactly one value")
    _backend().prelu_gradient(grad, src, gradient_input, param, params_grad)


def leaky_relu(dest, src, alpha):
    """``dest = src > 0 ? src : alpha*src``."""
    _same_dims("leaky_relu", dest=dest, src=src)
    _backend().leaky_relu(dest, src, _check_real("leaky_relu", "alpha", alpha))


def leaky_relu_gradient(grad, dest, gradient_input, alpha):
    """``dest > 0 ? gi : alpha*gi`` given ``dest = leaky_relu(x)``. Assigns if ``grad is
    gradient_input``, else ADDS."""
    _same_dims("leaky_relu_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().leaky_relu_gradient(grad, dest, gradient_input,
                                   _check_real("leaky_relu_gradient", "alpha", alpha))


def clipped_relu(dest, src, ceiling):
    """``dest = min(max(src, 0), ceiling)``."""
    _same_dims("clipped_relu", dest=dest, src=src)
    _backend().clipped_relu(dest, src, _check_real("clipped_relu", "ceiling", ceiling))


def clipped_relu_gradient(grad, dest, gradient_input, ceiling):
    """``0 < dest < ceiling ? gi : 0``. Assigns if ``grad is gradient_input``, else ADDS."""
    _same_dims("clipped_relu_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().clipped_relu_gradient(grad, dest, gradient_input,
                                     _check_real("clipped_relu_gradient", "ceiling", ceiling))


def elu(dest, src, alpha):
    """``dest = src > 0 ? src : alpha*(exp(src)-1)``."""
    _same_dims("elu", dest=dest, src=src)
    _backend().elu(dest, src, _check_real("elu", "alpha", alpha))


def elu_gradient(grad, dest, gradient_input, alpha):
    """``dest > 0 ? gi : (alpha+dest)*gi`` given ``dest = elu(x)``. Assigns if ``grad is
    gradient_input``, else ADDS."""
    _same_dims("elu_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().elu_gradient(grad, dest, gradient_input, _check_real("elu_gradient", "alpha", alpha))


def smelu(dest, src, beta):
    """``dest = src >= beta ? src : src <= -beta ? 0 : (src+beta)^2/(4*beta)``. Requires beta > 0."""
    _same_dims("smelu", dest=dest, src=src)
    beta = _check_real("smelu", "beta", beta)
    if not beta > 0:
        raise ValueError(f"smelu: beta must be > 0, got {beta}")
    _backend().smelu(dest, src, beta)


def smelu_gradient(grad, dest, gradient_input, beta):
    """From the OUTPUT: ``dest >= beta ? gi : dest == 0 ? 0 : sqrt(beta*dest)/beta*gi``.
    Assigns if ``grad is gradient_input``, else ADDS. Requires beta > 0."""
    _same_dims("smelu_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    beta = _check_real("smelu_gradient", "beta", beta)
    if not beta > 0:
        raise ValueError(f"smelu_gradient: beta must be > 0, got {beta}")
    _backend().smelu_gradient(grad, dest, gradient_input, beta)


# ----------------------------------------------------------------------------------------
# softmax family

def softmax(dest, src, mode=CHANNEL_WISE):
    """CHANNEL_WISE: softmax over k at every (n, r, c). PLANE_WISE: softmax over nc along
    every row (n, k, r) of each plane (dlib's implementation, not its comment); a row that
    is all -inf becomes all 0. Requires same dimensions; dest may be src."""
    _same_dims("softmax", dest=dest, src=src)
    _backend().softmax(dest, src, _check_mode("softmax", mode))


def softmax_gradient(grad, dest, gradient_input, mode=CHANNEL_WISE):
    """Gradient of ``dot(softmax(x, mode), gradient_input)`` given ``dest = softmax(x, mode)``:
    ``dest*(gi - sum(dest*gi))`` over the same groups. Assigns if ``grad is
    gradient_input``, else ADDS."""
    _same_dims("softmax_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().softmax_gradient(grad, dest, gradient_input, _check_mode("softmax_gradient", mode))


def softmax_all(dest, src):
    """Softmax over all ``k*nr*nc`` values of each sample."""
    _same_dims("softmax_all", dest=dest, src=src)
    _backend().softmax_all(dest, src)


def softmax_all_gradient(grad, dest, gradient_input):
    """Gradient of ``dot(softmax_all(x), gradient_input)`` given ``dest``. Assigns if
    ``grad is gradient_input``, else ADDS."""
    _same_dims("softmax_all_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().softmax_all_gradient(grad, dest, gradient_input)


# ----------------------------------------------------------------------------------------
# row norms and row scaling on mat(t) = num_samples x (k*nr*nc)

def _is_vector(t):
    # dlib's is_vector(tensor): at most one of the four dimensions is not 1
    return sum(d != 1 for d in t.shape) <= 1


def inverse_norms(invnorms, data, eps):
    """``invnorms = 1/sqrt(sum of squares of each row of mat(data) + eps)``.

    Requires: invnorms is a resizable_tensor. Ensures: ``invnorms`` is resized to
    ``(data.num_samples(), 1, 1, 1)`` and assigned.
    """
    _check_tensors("inverse_norms", invnorms=invnorms, data=data)
    if not isinstance(invnorms, resizable_tensor):
        raise TypeError("inverse_norms: invnorms must be a resizable_tensor (it is resized)")
    invnorms.set_size(data.num_samples())
    _backend().inverse_norms(invnorms, data, _check_real("inverse_norms", "eps", eps))


def dot_prods(*args):
    """Row-wise dot products of ``mat(lhs)`` and ``mat(rhs)``, two forms (as dlib):

    * ``dot_prods(out, lhs, rhs)``: out (a resizable_tensor) is resized to
      ``(lhs.num_samples(), 1, 1, 1)`` and assigned;
    * ``dot_prods(add_to, out, lhs, rhs)``: requires ``out.size() == lhs.num_samples()``
      and ``out.k() == out.nr() == out.nc() == 1``; adds if add_to, else assigns.

    Requires: lhs and rhs have the same dimensions.
    """
    if len(args) == 3 and isinstance(args[0], tensor):
        out, lhs, rhs = args
        _same_dims("dot_prods", lhs=lhs, rhs=rhs)
        _check_tensors("dot_prods", out=out)
        if not isinstance(out, resizable_tensor):
            raise TypeError("dot_prods(out, lhs, rhs): out must be a resizable_tensor (it is resized)")
        out.set_size(lhs.num_samples())
        _backend().dot_prods(False, out, lhs, rhs)
        return
    if len(args) != 4:
        raise TypeError("dot_prods(out, lhs, rhs) or dot_prods(add_to, out, lhs, rhs): "
                        f"got {len(args)} arguments")
    add_to, out, lhs, rhs = args
    _same_dims("dot_prods", lhs=lhs, rhs=rhs)
    _check_tensors("dot_prods", out=out)
    if out.size() != lhs.num_samples() or out.shape[1:] != (1, 1, 1):
        raise ValueError(f"dot_prods: out{out.shape} must be ({lhs.num_samples()}, 1, 1, 1)-sized "
                         f"for lhs{lhs.shape}")
    _backend().dot_prods(bool(add_to), out, lhs, rhs)


def scale_rows(out, m, v):
    """``out = scale_rows(mat(m), mat(v))``: row i of mat(m) times ``v[i]``.
    Requires: out and m have the same dimensions; v is a vector of m.num_samples() values."""
    _same_dims("scale_rows", out=out, m=m)
    _check_tensors("scale_rows", v=v)
    if m.size() == 0 and v.size() == 0:
        return
    if not _is_vector(v) or v.size() != m.num_samples() or m.size() == 0:
        raise ValueError(f"scale_rows: v{v.shape} must be a vector of m.num_samples() = "
                         f"{m.num_samples()} values (m{m.shape})")
    _backend().scale_rows(out, m, v)


def scale_rows2(beta, out, m1, m2, v1, v2):
    """``out = beta*out + scale_rows(mat(m1) - scale_rows(mat(m2), v1), v2)``; with
    ``beta == 0`` out is assigned (its old contents are not read).
    Requires: out, m1, m2 have the same dimensions; v1, v2 have the same dimensions and
    are vectors of m1.num_samples() values."""
    _same_dims("scale_rows2", out=out, m1=m1, m2=m2)
    _same_dims("scale_rows2", v1=v1, v2=v2)
    if not _is_vector(v1) or v1.size() != m1.num_samples():
        raise ValueError(f"scale_rows2: v1{v1.shape} must be a vector of m1.num_samples() = "
                         f"{m1.num_samples()} values")
    _backend().scale_rows2(_check_real("scale_rows2", "beta", beta), out, m1, m2, v1, v2)


def scale_columns(out, m, v):
    """``out = scale_columns(mat(m), mat(v))``: column j of mat(m) times ``v[j]``.
    Requires: out and m have the same dimensions; v is a vector of ``m.size()/m.num_samples()``
    values."""
    _same_dims("scale_columns", out=out, m=m)
    _check_tensors("scale_columns", v=v)
    if m.size() == 0 and v.size() == 0:
        return
    if not _is_vector(v) or m.size() == 0 or v.size() * m.num_samples() != m.size():
        raise ValueError(f"scale_columns: v{v.shape} must be a vector of one value per column "
                         f"of mat(m) (m{m.shape})")
    _backend().scale_columns(out, m, v)


# ----------------------------------------------------------------------------------------
# multiply, threshold, random numbers (dropout)

def multiply(add_to, dest, src1, src2):
    """Pointwise ``src1*src2`` into dest (dlib's ``tt::multiply``).

    Requires: k, nr, nc equal across the three tensors; each num_samples is 1 or
    ``MD = max`` of the three. A source with num_samples 1 is replicated over MD samples;
    if ``dest.num_samples() == 1`` (and MD > 1) the products are summed over samples.
    Ensures: assigns to dest, or adds when ``add_to``.
    """
    _check_tensors("multiply", dest=dest, src1=src1, src2=src2)
    shapes = [t.shape for t in (dest, src1, src2)]
    md = max(s[0] for s in shapes)
    if len({s[1:] for s in shapes}) != 1 or any(s[0] not in (1, md) for s in shapes):
        raise ValueError(f"multiply: dest{dest.shape}, src1{src1.shape}, src2{src2.shape} must share "
                         "k, nr, nc, and each num_samples must be 1 or the largest one")
    if dest.size() == 0:
        return
    _backend().multiply(bool(add_to), dest, src1, src2)


def threshold(data, thresh):
    """``data = data > thresh ? 1 : 0`` element-wise, in place."""
    _check_tensors("threshold", data=data)
    _backend().threshold(data, _check_real("threshold", "thresh", thresh))


class tensor_rand:
    """Fills tensors with random numbers (dlib's ``tt::tensor_rand``), seedable.

    As in dlib, the sequence differs between the CPU and CUDA backends; code must not rely
    on specific values. Each backend keeps its own generator, created from the seed the
    first time that backend is used.
    """

    def __init__(self, seed=0):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"tensor_rand: seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self._generators = {}

    def _generator(self):
        b = _backend()
        g = self._generators.get(b.NAME)
        if g is None:
            g = self._generators[b.NAME] = b.rand_generator(self.seed)
        return b, g

    def fill_uniform(self, data):
        """Fill ``data`` with uniform numbers in (0, 1]."""
        _check_tensors("tensor_rand.fill_uniform", data=data)
        b, g = self._generator()
        b.rand_fill_uniform(g, data)

    def fill_gaussian(self, data, mean=0.0, stddev=1.0):
        """Fill ``data`` with N(mean, stddev^2) numbers. Requires ``data.size()`` even (dlib)."""
        _check_tensors("tensor_rand.fill_gaussian", data=data)
        if data.size() % 2 != 0:
            raise ValueError(f"tensor_rand.fill_gaussian: data.size() must be even, got data{data.shape}")
        b, g = self._generator()
        b.rand_fill_gaussian(g, data, _check_real("tensor_rand.fill_gaussian", "mean", mean),
                             _check_real("tensor_rand.fill_gaussian", "stddev", stddev))
