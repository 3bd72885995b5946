"""Fully connected layer ``fc_``: ``out(N, num_outputs) = X(N, k*nr*nc) @ W + b``.

Parameters are one ``(num_inputs [+1], num_outputs)`` tensor: the row-major weight matrix
``W[in][out]``, then (with a bias) one bias row (dlib's layout).
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..tensor import alias_tensor
from ..templates import layer_template
from ._serial import check_dense_views, read_alias, read_multipliers, write_alias, write_multipliers
from .base import check_int, computational_layer, fmt, randomize_parameters, with_multipliers

__all__ = ["fc_", "fc", "fc_no_bias", "FC_HAS_BIAS", "FC_NO_BIAS"]

FC_HAS_BIAS = 0
FC_NO_BIAS = 1


class fc_(computational_layer, with_multipliers):
    def __init__(self, num_outputs, bias_mode=FC_HAS_BIAS):
        super().__init__()
        self.num_outputs = check_int("fc_", "num_outputs", num_outputs, 1)
        if bias_mode not in (FC_HAS_BIAS, FC_NO_BIAS):
            raise ValueError(f"fc_: bias_mode must be FC_HAS_BIAS (0) or FC_NO_BIAS (1), got {bias_mode!r}")
        self.bias_mode = bias_mode
        self.num_inputs = 0
        self.use_bias = True
        self.weights = alias_tensor()
        self.biases = alias_tensor()

    def _has_bias(self):
        return self.bias_mode == FC_HAS_BIAS and self.use_bias

    def get_num_outputs(self):
        return self.num_outputs

    def set_num_outputs(self, num):
        num = check_int("fc_", "num_outputs", num, 1)
        if num != self.num_outputs and self.params.size() != 0:
            raise ValueError("fc_: can't change the number of outputs once the parameters are allocated")
        self.num_outputs = num

    def get_bias_mode(self):
        return self.bias_mode

    def disable_bias(self):
        self.use_bias = False

    def bias_is_disabled(self):
        return not self.use_bias

    def get_weights(self):
        return self.weights(self.params, 0)

    def get_biases(self):
        if not self._has_bias():
            raise ValueError("fc_: this layer has no bias")
        return self.biases(self.params, self.weights.size())

    def setup(self, sub):
        x = sub.get_output()
        self.num_inputs = x.k() * x.nr() * x.nc()
        self.params.set_size(self.num_inputs + (1 if self._has_bias() else 0), self.num_outputs)
        randomize_parameters(self.params, self.num_inputs + self.num_outputs)
        self.weights = alias_tensor(self.num_inputs, self.num_outputs)
        if self._has_bias():
            self.biases = alias_tensor(1, self.num_outputs)
            self.biases(self.params, self.weights.size()).fill(0)

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
        tt.gemm(1, sub.get_gradient_input(), 1, gradient_input, False, self.weights(self.params, 0), True)

    def serialize(self, w):
        """dlib's "fc_3": num_outputs, num_inputs (unsigned), params, the weights and biases
        alias shapes, bias_mode (int), 4 double multipliers, use_bias. A layer read from an
        "fc_2" record writes "fc_2" back (no use_bias; refused once the bias is disabled)."""
        version = w.version_string(self, "fc_3", lambda v: (
            None if self.use_bias else f"{v} has no use_bias field and the bias is disabled"))
        w.uint(self.num_outputs)
        w.uint(self.num_inputs)
        w.tensor(self.params)
        write_alias(w, self.weights)
        write_alias(w, self.biases)
        w.int(self.bias_mode)
        write_multipliers(w, self)
        if version == "fc_3":
            w.bool(self.use_bias)

    def deserialize(self, r):
        """Reads "fc_2" (no use_bias) or "fc_3" (remembered, and written back by
        ``serialize``); num_outputs and bias_mode must be the net's. dlib takes num_outputs
        from the file (``set_num_outputs`` may have changed it); dnnpy refuses a count that
        differs, so a file of another type fails here: call ``set_num_outputs`` on the layer
        before reading a file whose count was changed."""
        version = r.version_string(self, "fc_2", "fc_3")
        at = r.pos
        num_outputs = r.uint("fc_ num_outputs")
        if num_outputs != self.num_outputs:
            raise r.error(f"fc_: the file has num_outputs={num_outputs} but the net type has "
                          f"{self.num_outputs} (if the file's count was changed with "
                          f"set_num_outputs, call set_num_outputs({num_outputs}) on this layer "
                          f"before reading)", at)
        num_inputs = r.uint("fc_ num_inputs")
        r.tensor("fc_ params", into=self.params)
        weights = read_alias(r, "fc_ weights")
        biases = read_alias(r, "fc_ biases")
        at = r.pos
        bias_mode = r.int("fc_ bias_mode")
        if bias_mode != self.bias_mode:
            raise r.error(f"fc_: the file has bias_mode={bias_mode} but the net type has "
                          f"{self.bias_mode} (0 = FC_HAS_BIAS, 1 = FC_NO_BIAS)", at)
        read_multipliers(r, self, "fc_")
        if version == "fc_3":
            self.use_bias = r.bool("fc_ use_bias")
        self.num_outputs, self.num_inputs = num_outputs, num_inputs
        self.weights, self.biases = weights, biases
        check_dense_views(r, "fc_", self.params, weights, biases, num_inputs, num_outputs,
                          self._has_bias())

    def __repr__(self):
        if self.bias_mode == FC_HAS_BIAS:
            return f"fc\t (num_outputs={self.num_outputs})" + self._multipliers_str(self.use_bias)
        return (f"fc_no_bias (num_outputs={self.num_outputs})"
                f" learning_rate_mult={fmt(self.learning_rate_multiplier)}"
                f" weight_decay_mult={fmt(self.weight_decay_multiplier)}")


fc = layer_template("fc", fc_)
fc_no_bias = layer_template("fc_no_bias", fc_, bias_mode=FC_NO_BIAS)
