"""``linear_``: a fully connected layer applied along ``nc`` (the last dimension), as in
transformers: ``out(n,k,r,:) = in(n,k,r,:) @ W + b``, output ``(N, k, nr, num_outputs)``.

Parameters are one ``(num_inputs [+1], num_outputs)`` tensor: ``W[in][out]`` row-major,
then (with a bias) one bias row (dlib's layout). Only a learning-rate multiplier exists
(no weight-decay multipliers), and, as in dlib's implementation, backward scales the
WEIGHT gradient (not the bias gradient) by that multiplier.
"""

from __future__ import annotations


from .. import tensor_tools as tt
from ..tensor import alias_tensor
from ..templates import layer_template
from ..printing import xml_matrix
from ._serial import check_dense_views, read_alias, write_alias
from .base import check_int, computational_layer, fmt, randomize_parameters

__all__ = ["linear_", "linear", "linear_no_bias", "LINEAR_HAS_BIAS", "LINEAR_NO_BIAS"]

LINEAR_HAS_BIAS = 0
LINEAR_NO_BIAS = 1



class linear_(computational_layer):
    def __init__(self, num_outputs, bias_mode=LINEAR_HAS_BIAS):
        super().__init__()
        self.num_outputs = check_int("linear_", "num_outputs", num_outputs, 1)
        if isinstance(bias_mode, bool) or bias_mode not in (LINEAR_HAS_BIAS, LINEAR_NO_BIAS):
            raise ValueError(f"linear_: bias_mode must be LINEAR_HAS_BIAS (0) or LINEAR_NO_BIAS (1), "
                             f"got {bias_mode!r}")
        self.bias_mode = int(bias_mode)
        self.num_inputs = 0
        self.learning_rate_multiplier = 1.0
        self.weights = alias_tensor()
        self.biases = alias_tensor()

    # dlib's accessors
    def get_learning_rate_multiplier(self):
        return self.learning_rate_multiplier

    def set_learning_rate_multiplier(self, val):
        self.learning_rate_multiplier = float(val)

    def get_num_outputs(self):
        return self.num_outputs

    def set_num_outputs(self, num):
        num = check_int("linear_", "num_outputs", num, 1)
        if num != self.num_outputs and self.params.size() != 0:
            raise ValueError("linear_: can't change the number of outputs once the parameters are allocated")
        self.num_outputs = num

    def get_num_inputs(self):
        return self.num_inputs

    def get_bias_mode(self):
        return self.bias_mode

    def _has_bias(self):
        return self.bias_mode == LINEAR_HAS_BIAS

    def get_weights(self):
        return self.weights(self.params, 0)

    def get_biases(self):
        if not self._has_bias():
            raise ValueError("linear_: this layer has no bias vector (bias_mode is LINEAR_NO_BIAS)")
        return self.biases(self.params, self.weights.size())

    def setup(self, sub):
        self.num_inputs = sub.get_output().nc()
        self.params.set_size(self.num_inputs + (1 if self._has_bias() else 0), self.num_outputs)
        randomize_parameters(self.params, self.num_inputs + self.num_outputs)
        self.weights = alias_tensor(self.num_inputs, self.num_outputs)
        if self._has_bias():
            self.biases = alias_tensor(1, self.num_outputs)
            self.biases(self.params, self.weights.size()).fill(0)

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
        w.uint(self.num_outputs)
        w.uint(self.num_inputs)
        w.tensor(self.params)
        write_alias(w, self.weights)
        write_alias(w, self.biases)
        w.int(self.bias_mode)
        w.float64(self.learning_rate_multiplier)

    def deserialize(self, r):
        """bias_mode must be the net type's; num_outputs comes from the file, as in dlib."""
        r.expect_string("linear_")
        at = r.pos
        num_outputs = r.uint("linear_ num_outputs")
        if num_outputs < 1:
            raise r.error(f"linear_: the file has num_outputs={num_outputs}, which must be >= 1", at)
        num_inputs = r.uint("linear_ num_inputs")
        r.tensor("linear_ params", into=self.params)
        weights = read_alias(r, "linear_ weights")
        biases = read_alias(r, "linear_ biases")
        at = r.pos
        bias_mode = r.int("linear_ bias_mode")
        if bias_mode != self.bias_mode:
            raise r.error(f"linear_: the file has bias_mode={bias_mode} but the net type has "
                          f"{self.bias_mode} (0 = LINEAR_HAS_BIAS, 1 = LINEAR_NO_BIAS)", at)
        self.learning_rate_multiplier = r.float64("linear_ learning_rate_multiplier")
        self.num_outputs, self.num_inputs = num_outputs, num_inputs
        self.weights, self.biases = weights, biases
        check_dense_views(r, "linear_", self.params, weights, biases, num_inputs, num_outputs,
                          self._has_bias())

    def __repr__(self):
        bias = "true" if self._has_bias() else "false"
        return (f"linear\t (num_outputs={self.num_outputs}, bias={bias})"
                f" learning_rate_mult={fmt(self.learning_rate_multiplier)}")

    def to_xml(self):
        bias = "true" if self._has_bias() else "false"
        return (f"<linear num_outputs='{self.num_outputs}' bias='{bias}' "
                f"learning_rate_mult='{fmt(self.learning_rate_multiplier)}'>\n"
                + xml_matrix(self.params) + "</linear>\n")


linear = layer_template("linear", linear_)
linear_no_bias = layer_template("linear_no_bias", linear_, bias_mode=LINEAR_NO_BIAS)
