"""Fully connected layer ``fc_``: ``out(N, num_outputs) = X(N, k*nr*nc) @ W + b``.

Parameters are one ``(num_inputs [+1], num_outputs)`` tensor: the row-major weight matrix
``W[in][out]``, then (with a bias) one bias row (dlib's layout).
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..printing import cpp_num, xml_matrix
from ..templates import layer_template
from ._dense import dense_base
from ._serial import read_multipliers, write_multipliers
from .base import check_int, data_gradient_wanted, gradient_input_target, with_multipliers

__all__ = ["fc_", "fc", "fc_no_bias", "FC_HAS_BIAS", "FC_NO_BIAS", "num_fc_outputs"]

FC_HAS_BIAS = 0
FC_NO_BIAS = 1


class num_fc_outputs:
    """dlib's ``num_fc_outputs(n)``: given to a net's constructor, it sets the number of
    outputs of the first fc layer it reaches (``net_type(num_fc_outputs(15))``);
    ``fc_(num_fc_outputs(15))`` is ``fc_(15)``."""

    def __init__(self, n):
        self.num_outputs = check_int("num_fc_outputs", "n", n, 1)

    def __repr__(self):
        return f"num_fc_outputs({self.num_outputs})"


class fc_(dense_base, with_multipliers):
    _mode_names = ("FC_HAS_BIAS", "FC_NO_BIAS")
    # a net constructor's num_fc_outputs(n) becomes this layer's num_outputs (templates.py)
    constructor_settings = {num_fc_outputs: "num_outputs"}

    def __init__(self, num_outputs, bias_mode=FC_HAS_BIAS):
        if isinstance(num_outputs, num_fc_outputs):
            num_outputs = num_outputs.num_outputs
        super().__init__(num_outputs, bias_mode)
        self.use_bias = True

    def _has_bias(self):
        return self.bias_mode == FC_HAS_BIAS and self.use_bias

    def bias_offset(self, size):
        """With FC_HAS_BIAS, the biases are the last ``num_outputs`` parameters (as dlib's
        solver, whether or not the bias is disabled)."""
        return size - self.get_num_outputs() if self.get_bias_mode() == FC_HAS_BIAS else None

    def _no_bias_reason(self):
        return "the bias is disabled" if self.bias_mode == FC_HAS_BIAS else super()._no_bias_reason()

    def _num_inputs_of(self, x):
        return x.k() * x.nr() * x.nc()

    def disable_bias(self):
        self.use_bias = False

    def bias_is_disabled(self):
        return not self.use_bias

    def forward(self, sub, output):
        x = sub.get_output()
        if x.k() * x.nr() * x.nc() != self.num_inputs:
            raise ValueError(f"fc_: input{x.shape} has {x.k() * x.nr() * x.nc()} values per sample, "
                             f"but the layer was set up for {self.num_inputs}")
        output.set_size(x.num_samples(), self.num_outputs)
        tt.gemm(0, output, 1, x, False, self.weights(self.params, 0), False)
        if self._has_bias():
            tt.add(1, output, 1, self.biases(self.params, self.weights.size()))

    def backward(self, gradient_input, sub, params_grad):
        if self.learning_rate_multiplier != 0:
            tt.gemm(0, self.weights(params_grad, 0), 1, sub.get_output(), True, gradient_input, False)
            if self._has_bias():
                tt.assign_bias_gradient(self.biases(params_grad, self.weights.size()), gradient_input)
        if data_gradient_wanted(sub):       # (not on a trainer's input: nothing reads it)
            data_grad, add_to = gradient_input_target(sub)
            tt.gemm(1 if add_to else 0, data_grad, 1, gradient_input, False,
                    self.weights(self.params, 0), True)

    def serialize(self, w):
        """dlib's "fc_3": num_outputs, num_inputs (unsigned), params, the weights and biases
        alias shapes, bias_mode (int), 4 double multipliers, use_bias. A layer read from an
        "fc_2" record writes "fc_2" back (no use_bias; refused once the bias is disabled)."""
        version = w.version_string(self, "fc_3", lambda v: (
            None if self.use_bias else f"{v} has no use_bias field and the bias is disabled"))
        self._write_dense(w)
        write_multipliers(w, self)
        if version == "fc_3":
            w.bool(self.use_bias)

    def deserialize(self, r):
        """Reads "fc_2" (no use_bias) or "fc_3" (remembered, and written back by
        ``serialize``); bias_mode must be the net's. num_outputs is the file's, as in dlib (the
        net that wrote it may have changed it with ``set_num_outputs``)."""
        version = r.version_string(self, "fc_2", "fc_3")
        dense = self._read_dense(r)
        read_multipliers(r, self, "fc_")
        if version == "fc_3":
            self.use_bias = r.bool("fc_ use_bias")
        self._adopt_dense(r, *dense)

    def __repr__(self):
        if self.bias_mode == FC_HAS_BIAS:
            return f"fc\t (num_outputs={self.num_outputs})" + self._multipliers_str(self.use_bias)
        return (f"fc_no_bias (num_outputs={self.num_outputs})"
                f" learning_rate_mult={cpp_num(self.learning_rate_multiplier)}"
                f" weight_decay_mult={cpp_num(self.weight_decay_multiplier)}")

    def to_xml(self):
        if self.bias_mode == FC_HAS_BIAS:
            head = (f"<fc num_outputs='{self.num_outputs}'" + self._multipliers_xml()
                    + f" use_bias='{'true' if self.use_bias else 'false'}'>\n")
            name = "fc"
        else:
            head = (f"<fc_no_bias num_outputs='{self.num_outputs}'"
                    + self._multipliers_xml(use_bias=False) + ">\n")
            name = "fc_no_bias"
        return head + xml_matrix(self.params) + f"</{name}>\n"

    def dot_label(self):
        return f"fc | {{ outputs |{{{self.num_outputs}}}}}"

    def to_onnx(self, g, x):
        """``Flatten`` (NCHW memory order, dlib's), ``Gemm`` with W ``(in, out)`` as stored
        (``MatMul`` without a bias), ``Reshape`` to ``(N, out, 1, 1)``."""
        n, k, nr, nc = g.shape(x)
        if k * nr * nc != self.num_inputs:
            g.refuse_input(x, f"{self.num_inputs} inputs (k*nr*nc)")
        flat = g.node("Flatten", [x], shape=(n, self.num_inputs), axis=1)
        w = g.const(self.get_weights().numpy().reshape(self.num_inputs, self.num_outputs), hint="W")
        if self._has_bias():
            b = g.const(self.get_biases().numpy().reshape(-1), hint="B")
            y = g.node("Gemm", [flat, w, b], shape=(n, self.num_outputs))
        else:
            y = g.node("MatMul", [flat, w], shape=(n, self.num_outputs))
        return g.reshape(y, [0, self.num_outputs, 1, 1], (n, self.num_outputs, 1, 1))


fc = layer_template("fc", fc_)
fc_no_bias = layer_template("fc_no_bias", fc_, bias_mode=FC_NO_BIAS)
