"""Element-wise activation layers (dlib's layers.h), in place where dlib's are.

Two forms, as dlib's layers: C = ``forward_inplace`` + ``backward_inplace(computed_output,
...)``, B = ``forward(sub, out)`` + ``backward(gradient_input, sub, params_grad)``.
relu_, leaky_relu_, sig_, htan_, clipped_relu_, elu_, smelu_ are form C (their gradient
is written in terms of the output); prelu_, mish_, gelu_, silu_ are form B (their
gradient needs the input). dlib's spec calls prelu_ in place; its implementation is not,
and we follow the implementation.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import tensor_tools as tt
from ..templates import layer_template
from ..printing import cpp_num, xml_matrix, xml_num
from ._serial import simple_serial
from .base import computational_layer

__all__ = ["relu_", "relu", "prelu_", "prelu", "leaky_relu_", "leaky_relu", "sig_", "sig",
           "mish_", "mish", "htan_", "htan", "clipped_relu_", "clipped_relu", "elu_", "elu",
           "gelu_", "gelu", "smelu_", "smelu", "silu_", "silu"]


def as_float32(layer_name, name, value):
    """A ``float`` constructor argument, rounded as dlib stores it (C++ float), validated."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{layer_name}: {name} must be a real number, got {value!r}")
    value = float(np.float32(value))
    if not np.isfinite(value):
        raise ValueError(f"{layer_name}: {name} must be finite, got {value}")
    return value



class _identity_map:
    """dlib's ``map_input_to_output`` / ``map_output_to_input`` for point-wise layers. The
    coordinates pass through as they are: floats, or arrays when many points are mapped at
    once (loss_mmod maps all its candidate detections in one call)."""

    def map_input_to_output(self, p):
        return (p[0], p[1])

    def map_output_to_input(self, p):
        return (p[0], p[1])


class _pointwise_inplace(simple_serial, computational_layer, _identity_map):
    """Form C: ``tt.<op>(output, input[, arg])`` forward, ``tt.<op>_gradient(data_grad,
    computed_output, gradient_input[, arg])`` backward (assign/add decided by the op)."""

    backward_needs_output = True
    _op = None          # the tt op name
    _arg = None         # attribute passed as the op's scalar argument, if any

    def _args(self):
        return () if self._arg is None else (getattr(self, self._arg),)

    def forward_inplace(self, input, output):
        getattr(tt, self._op)(output, input, *self._args())

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        getattr(tt, self._op + "_gradient")(data_grad, computed_output, gradient_input, *self._args())


class _pointwise_from_input(simple_serial, computational_layer, _identity_map):
    """Form B: the gradient op takes the layer's INPUT, so the layer cannot run in place."""

    _op = None

    def forward(self, sub, output):
        output.copy_size(sub.get_output())
        getattr(tt, self._op)(output, sub.get_output())

    def backward(self, gradient_input, sub, params_grad):
        getattr(tt, self._op + "_gradient")(sub.get_gradient_input(), sub.get_output(), gradient_input)


# ----------------------------------------------------------------------------------------

class relu_(computational_layer, _identity_map):
    """``max(0, x)``; in place; ``disable()`` turns it into the identity."""

    dot_name = "relu"
    backward_needs_output = True

    def __init__(self):
        super().__init__()
        self.disabled = False

    def disable(self):
        self.params.clear()
        self.disabled = True

    def is_disabled(self):
        return self.disabled

    def forward_inplace(self, input, output):
        if self.disabled:
            if output is not input:
                tt.add(0, output, 1, input)
            return
        tt.relu(output, input)

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad, add_to=True):
        """dlib's rule: assign when ``data_grad is gradient_input``, else ADD, or assign
        every element when ``add_to`` is False (the net's stale-gradient path)."""
        if self.disabled:
            if data_grad is not gradient_input:
                tt.add(1 if add_to else 0, data_grad, 1, gradient_input)
            return
        tt.relu_gradient(data_grad, computed_output, gradient_input, add_to)

    def serialize(self, w):
        """"relu_2": disabled; a layer read from a "relu_" record writes "relu_" back (no
        fields; refused once the layer is disabled)."""
        version = w.version_string(self, "relu_2", lambda v: (
            f"{v} has no disabled field and the layer is disabled" if self.disabled else None))
        if version == "relu_2":
            w.bool(self.disabled)

    def deserialize(self, r):
        """"relu_2" carries ``disabled``; the old "relu_" has no fields."""
        if r.version_string(self, "relu_", "relu_2") == "relu_2":
            if r.bool("relu_ disabled"):
                self.disable()
            else:
                self.disabled = False

    def __repr__(self):
        return "relu\t (disabled)" if self.disabled else "relu"

    def to_xml(self):
        return "<relu disabled='true'/>\n" if self.disabled else "<relu/>\n"

    def to_onnx(self, g, x):
        """``Relu``; disabled: nothing."""
        return x if self.disabled else g.node("Relu", [x])


class prelu_(computational_layer, _identity_map):
    """``x > 0 ? x : p*x`` with one learnable scalar ``p`` (params = ``(1,1,1,1)``, set to
    ``initial_param_value`` by ``setup``). Form B: NOT in place (dlib's implementation)."""

    dot_name = "prelu"
    # net_type(0.2): dlib's prelu_(float initial_param_value) takes a bare number
    constructor_settings = {numbers.Real: "initial_param_value"}

    def template_args(self):
        return {"initial_param_value": self.initial_param_value}

    def __init__(self, initial_param_value=0.25):
        super().__init__()
        self.initial_param_value = as_float32("prelu_", "initial_param_value", initial_param_value)

    def get_initial_param_value(self):
        return self.initial_param_value

    def setup(self, sub):
        self.params.set_size(1)
        self.params.fill(self.initial_param_value)

    def forward(self, sub, output):
        output.copy_size(sub.get_output())
        tt.prelu(output, sub.get_output(), self.params)

    def backward(self, gradient_input, sub, params_grad):
        tt.prelu_gradient(sub.get_gradient_input(), sub.get_output(), gradient_input,
                          self.params, params_grad)

    def serialize(self, w):
        """dlib's "prelu_": params, initial_param_value (a C++ float)."""
        w.string("prelu_")
        w.tensor(self.params)
        w.float32(self.initial_param_value)

    def deserialize(self, r):
        r.expect_string("prelu_")
        r.tensor("prelu_ params", into=self.params)
        self.initial_param_value = r.float32("prelu_ initial_param_value")
        if self.params.size() not in (0, 1):
            raise r.error(f"prelu_: the file's params have shape {self.params.shape}; expected "
                          f"one value (or none before setup)")

    def __repr__(self):
        return f"prelu\t (initial_param_value={cpp_num(self.initial_param_value)})"

    def to_xml(self):
        return (f"<prelu initial_param_value='{xml_num(self.initial_param_value)}'>\n"
                + xml_matrix(self.params) + "</prelu>\n")

    def to_onnx(self, g, x):
        """``PRelu`` with the learned slope (one value, broadcast)."""
        return g.node("PRelu", [x, g.const(self.params.numpy().reshape(1), hint="slope")])


class leaky_relu_(_pointwise_inplace):
    """``x > 0 ? x : alpha*x``."""

    _op, _arg = "leaky_relu", "alpha"
    _ser_fields = (("alpha", "float32"),)  # a C++ float

    def template_args(self):
        return {"alpha": self.alpha}

    def __init__(self, alpha=0.01):
        super().__init__()
        self.alpha = as_float32("leaky_relu_", "alpha", alpha)

    def get_alpha(self):
        return self.alpha

    def __repr__(self):
        return f"leaky_relu\t(alpha={cpp_num(self.alpha)})"

    def to_xml(self):
        return f"<leaky_relu alpha='{xml_num(self.alpha)}'/>\n"

    def dot_label(self):
        return f"leaky_relu | {{ alpha |{{{cpp_num(self.alpha)}}}}}"

    def to_onnx(self, g, x):
        return g.node("LeakyRelu", [x], alpha=float(self.alpha))


class sig_(_pointwise_inplace):
    """``1/(1+exp(-x))``."""

    dot_name = "sigmoid"
    _op = "sigmoid"

    def __repr__(self):
        return "sig"

    def to_xml(self):
        return "<sig/>\n"

    def to_onnx(self, g, x):
        return g.node("Sigmoid", [x])


class htan_(_pointwise_inplace):
    """``tanh(x)``."""

    dot_name = "htan"
    _op = "tanh"

    def __repr__(self):
        return "htan"

    def to_xml(self):
        return "<htan/>\n"

    def to_onnx(self, g, x):
        return g.node("Tanh", [x])


class clipped_relu_(_pointwise_inplace):
    """``min(max(x, 0), ceiling)``."""

    dot_name = "clipped_relu"
    _op, _arg = "clipped_relu", "ceiling"
    _ser_fields = (("ceiling", "float32"),)  # a C++ float

    def template_args(self):
        return {"ceiling": self.ceiling}

    def __init__(self, ceiling=6.0):
        super().__init__()
        self.ceiling = as_float32("clipped_relu_", "ceiling", ceiling)

    def get_ceiling(self):
        return self.ceiling

    def __repr__(self):
        return f"clipped_relu\t(ceiling={cpp_num(self.ceiling)})"

    def to_xml(self):
        return f"<clipped_relu ceiling='{xml_num(self.ceiling)}'/>\n"

    def to_onnx(self, g, x):
        return g.node("Clip", [x, g.scalar(0), g.scalar(self.ceiling)])


class elu_(_pointwise_inplace):
    """``x > 0 ? x : alpha*(exp(x)-1)``."""

    dot_name = "elu"
    _op, _arg = "elu", "alpha"
    _ser_fields = (("alpha", "float32"),)  # a C++ float

    def template_args(self):
        return {"alpha": self.alpha}

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = as_float32("elu_", "alpha", alpha)

    def get_alpha(self):
        return self.alpha

    def __repr__(self):
        return f"elu\t (alpha={cpp_num(self.alpha)})"

    def to_xml(self):
        return f"<elu alpha='{xml_num(self.alpha)}'/>\n"

    def to_onnx(self, g, x):
        return g.node("Elu", [x], alpha=float(self.alpha))


class smelu_(_pointwise_inplace):
    """Smooth ReLU: ``x >= beta ? x : x <= -beta ? 0 : (x+beta)^2/(4*beta)``; beta > 0."""

    _op, _arg = "smelu", "beta"
    _ser_fields = (("beta", "float32"),)  # a C++ float

    def template_args(self):
        return {"beta": self.beta}

    def __init__(self, beta=1.0):
        super().__init__()
        self.beta = as_float32("smelu_", "beta", beta)
        if not self.beta > 0:
            raise ValueError(f"smelu_: beta must be > 0, got {self.beta}")

    def get_beta(self):
        return self.beta

    def __repr__(self):
        return f"smelu\t (beta={cpp_num(self.beta)})"

    def to_xml(self):
        return f"<smelu beta='{xml_num(self.beta)}'/>\n"

    def dot_label(self):
        return f"smelu | {{ beta |{{{cpp_num(self.beta)}}}}}"

    def to_onnx(self, g, x):
        """``x >= beta: x; x <= -beta: 0; else (x + beta)^2 / (4 beta)`` with two ``Where``s."""
        beta = g.scalar(self.beta)
        shifted = g.node("Add", [x, beta])
        mid = g.node("Div", [g.node("Mul", [shifted, shifted]), g.scalar(4 * np.float32(self.beta))])
        low = g.node("LessOrEqual", [x, g.scalar(-self.beta)], dtype=np.bool_)
        inner = g.node("Where", [low, g.scalar(0), mid], shape=g.shape(x), dtype=np.float32)
        high = g.node("GreaterOrEqual", [x, beta], dtype=np.bool_)
        return g.node("Where", [high, x, inner], shape=g.shape(x), dtype=np.float32)


class mish_(_pointwise_from_input):
    """``x*tanh(softplus(x))``; dlib's derivative is clamped to 1 / 0 beyond +-8."""

    dot_name = "mish"
    _op = "mish"

    def __repr__(self):
        return "mish"

    def to_xml(self):
        return "<mish/>\n"

    def to_onnx(self, g, x):
        """``Mish`` (opset 18+), else ``x * tanh(softplus(x))``."""
        if g.opset >= 18:
            return g.node("Mish", [x])
        return g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])])


class gelu_(_pointwise_from_input):
    """``0.5*x*(1+erf(x/sqrt(2)))`` (exact erf)."""

    dot_name = "gelu"
    _op = "gelu"

    def __repr__(self):
        return "gelu"

    def to_xml(self):
        return "<gelu/>\n"

    def to_onnx(self, g, x):
        """``Gelu`` (opset 20+, exact erf form), else ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
        if g.opset >= 20:
            return g.node("Gelu", [x])
        erf = g.node("Erf", [g.node("Div", [x, g.scalar(np.sqrt(2.0))])])
        return g.node("Mul", [g.node("Mul", [x, g.node("Add", [erf, g.scalar(1)])]), g.scalar(0.5)])


class silu_(_pointwise_from_input):
    """``x*sigmoid(x)``."""

    dot_name = "silu"
    _op = "silu"

    def __repr__(self):
        return "silu"

    def to_xml(self):
        return "<silu/>\n"

    def to_onnx(self, g, x):
        return g.node("Mul", [x, g.node("Sigmoid", [x])])


relu = layer_template("relu", relu_)
prelu = layer_template("prelu", prelu_)
leaky_relu = layer_template("leaky_relu", leaky_relu_)
sig = layer_template("sig", sig_)
mish = layer_template("mish", mish_)
htan = layer_template("htan", htan_)
clipped_relu = layer_template("clipped_relu", clipped_relu_)
elu = layer_template("elu", elu_)
gelu = layer_template("gelu", gelu_)
smelu = layer_template("smelu", smelu_)
silu = layer_template("silu", silu_)
