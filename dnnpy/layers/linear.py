"""``linear_``: a fully connected layer applied along ``nc`` (the last dimension), as in
transformers: ``out(n,k,r,:) = in(n,k,r,:) @ W + b``, output ``(N, k, nr, num_outputs)``.

Parameters are one ``(num_inputs [+1], num_outputs)`` tensor: ``W[in][out]`` row-major,
then (with a bias) one bias row (dlib's layout). Only a learning-rate multiplier exists
(no weight-decay multipliers), and, as in dlib's implementation, backward scales the
WEIGHT gradient (not the bias gradient) by that multiplier.
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..printing import cpp_num, xml_matrix, xml_num
from ..tensor import alias_tensor
from ..templates import layer_template
from ._dense import dense_base
from .base import data_gradient_wanted

__all__ = ["linear_", "linear", "linear_no_bias", "LINEAR_HAS_BIAS", "LINEAR_NO_BIAS"]

LINEAR_HAS_BIAS = 0
LINEAR_NO_BIAS = 1


class linear_(dense_base):
    _mode_names = ("LINEAR_HAS_BIAS", "LINEAR_NO_BIAS")

    def __init__(self, num_outputs, bias_mode=LINEAR_HAS_BIAS):
        super().__init__(num_outputs, bias_mode)
        self.learning_rate_multiplier = 1.0

    # dlib's accessors
    def get_learning_rate_multiplier(self):
        return self.learning_rate_multiplier

    def set_learning_rate_multiplier(self, val):
        self.learning_rate_multiplier = float(val)

    def get_num_inputs(self):
        return self.num_inputs

    def _num_inputs_of(self, x):
        return x.nc()

    def _rows(self, t, cols):
        """``t`` as a ``(N*k*nr) x cols`` matrix view."""
        return alias_tensor(t.num_samples() * t.k() * t.nr(), cols)(t, 0)

    def forward(self, sub, output):
        x = sub.get_output()
        if x.nc() != self.num_inputs:
            raise ValueError(f"linear_: input{x.shape} has nc={x.nc()}, but the layer was set up for "
                             f"{self.num_inputs} inputs")
        output.set_size(x.num_samples(), x.k(), x.nr(), self.num_outputs)
        o = self._rows(output, self.num_outputs)
        tt.gemm(0, o, 1, self._rows(x, self.num_inputs), False, self.weights(self.params, 0), False)
        if self._has_bias():
            tt.add(1, o, 1, self.biases(self.params, self.weights.size()))

    def backward(self, gradient_input, sub, params_grad):
        gi = self._rows(gradient_input, self.num_outputs)
        if self.learning_rate_multiplier != 0:
            x = self._rows(sub.get_output(), self.num_inputs)
            # dlib scales the weight gradient by the learning-rate multiplier (the solver
            # applies it again); the bias gradient is not scaled
            tt.gemm(0, self.weights(params_grad, 0), self.learning_rate_multiplier, x, True, gi, False)
            if self._has_bias():
                tt.assign_bias_gradient(self.biases(params_grad, self.weights.size()), gi)
        if data_gradient_wanted(sub):       # (not on a trainer's input: nothing reads it)
            sgi = self._rows(sub.get_gradient_input(), self.num_inputs)
            tt.gemm(1, sgi, 1, gi, False, self.weights(self.params, 0), True)

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    def serialize(self, w):
        """dlib's "linear_": num_outputs, num_inputs (unsigned), params, the weights and
        biases alias shapes, bias_mode (int), learning_rate_multiplier (double)."""
        w.string("linear_")
        self._write_dense(w)
        w.float64(self.learning_rate_multiplier)

    def deserialize(self, r):
        """bias_mode must be the net type's; num_outputs comes from the file, as in dlib."""
        r.expect_string("linear_")
        dense = self._read_dense(r)
        self.learning_rate_multiplier = r.float64("linear_ learning_rate_multiplier")
        self._adopt_dense(r, *dense)

    def __repr__(self):
        bias = "true" if self._has_bias() else "false"
        return (f"linear\t (num_outputs={self.num_outputs}, bias={bias})"
                f" learning_rate_mult={cpp_num(self.learning_rate_multiplier)}")

    def to_xml(self):
        bias = "true" if self._has_bias() else "false"
        return (f"<linear num_outputs='{self.num_outputs}' bias='{bias}' "
                f"learning_rate_mult='{xml_num(self.learning_rate_multiplier)}'>\n"
                + xml_matrix(self.params) + "</linear>\n")

    def dot_label(self):
        return f"linear | {{ outputs |{{{self.num_outputs}}}}}"

    def to_onnx(self, g, x):
        """``MatMul`` over the last axis (W ``(nc_in, out)``) and ``Add`` of the bias row."""
        n, k, nr, nc = g.shape(x)
        if nc != self.num_inputs:
            g.refuse_input(x, f"{self.num_inputs} inputs (nc)")
        w = g.const(self.get_weights().numpy().reshape(self.num_inputs, self.num_outputs), hint="W")
        y = g.node("MatMul", [x, w], shape=(n, k, nr, self.num_outputs))
        if self._has_bias():
            y = g.node("Add", [y, g.const(self.get_biases().numpy().reshape(-1), hint="B")])
        return y


linear = layer_template("linear", linear_)
linear_no_bias = layer_template("linear_no_bias", linear_, bias_mode=LINEAR_NO_BIAS)
