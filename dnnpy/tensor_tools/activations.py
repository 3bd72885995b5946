"""Dispatchers: the pointwise activations (dlib's ``tt::`` names and argument orders,
destination first), with and without a scalar argument.

Gradient ops follow dlib's in-place rule: they ASSIGN to ``grad`` when ``grad is
gradient_input`` and ADD to it otherwise (``prelu_gradient`` always adds to ``grad`` and
assigns ``params_grad``). Forward ops may run in place (``dest is src``).
"""

from __future__ import annotations

from .backend import _backend, _check_real, _check_tensors, _same_dims

__all__ = [
    "sigmoid", "sigmoid_gradient", "mish", "mish_gradient", "prelu", "prelu_gradient",
    "leaky_relu", "leaky_relu_gradient", "tanh", "tanh_gradient", "clipped_relu",
    "clipped_relu_gradient", "elu", "elu_gradient", "gelu", "gelu_gradient", "smelu",
    "smelu_gradient", "silu", "silu_gradient",
]


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
