"""What ``fc_`` and ``linear_`` share: ``num_outputs``, a bias mode, and one parameter tensor
``(num_inputs [+1], num_outputs)`` holding the row-major weights ``W[in][out]`` then (with a
bias) one bias row, reached through ``alias_tensor`` views (dlib's layout for both); their
accessors, set-up, and the common part of their records."""

from __future__ import annotations

from ..tensor import alias_tensor
from ._serial import check_dense_views, read_alias, write_alias
from .base import check_int, computational_layer, randomize_parameters

__all__ = ["dense_base"]


class dense_base(computational_layer):
    """Subclasses set ``_mode_names`` (the names of bias modes 0 and 1, for messages) and
    ``_num_inputs_of(x)`` (how many inputs a row of ``x`` gives)."""

    _mode_names = ("HAS_BIAS", "NO_BIAS")

    def template_args(self):
        return {"num_outputs": self.num_outputs, "bias_mode": self.bias_mode}

    def __init__(self, num_outputs, bias_mode=0):
        super().__init__()
        name = type(self).__name__
        self.num_outputs = check_int(name, "num_outputs", num_outputs, 1)
        if isinstance(bias_mode, bool) or bias_mode not in (0, 1):
            raise ValueError(f"{name}: bias_mode must be {self._mode_names[0]} (0) or "
                             f"{self._mode_names[1]} (1), got {bias_mode!r}")
        self.bias_mode = int(bias_mode)
        self.num_inputs = 0
        self.weights = alias_tensor()
        self.biases = alias_tensor()

    def _has_bias(self):
        return self.bias_mode == 0

    # dlib's accessors
    def get_num_outputs(self):
        return self.num_outputs

    def set_num_outputs(self, num):
        num = check_int(type(self).__name__, "num_outputs", num, 1)
        if num != self.num_outputs and self.params.size() != 0:
            raise ValueError(f"{type(self).__name__}: can't change the number of outputs once the "
                             "parameters are allocated")
        self.num_outputs = num

    def get_bias_mode(self):
        return self.bias_mode

    def get_weights(self):
        return self.weights(self.params, 0)

    def get_biases(self):
        if not self._has_bias():
            raise ValueError(f"{type(self).__name__}: this layer has no bias ({self._no_bias_reason()})")
        return self.biases(self.params, self.weights.size())

    def _no_bias_reason(self):
        return f"bias_mode is {self._mode_names[1]}"

    def setup(self, sub):
        """Glorot init of the weights with fan ``num_inputs + num_outputs``, zero biases."""
        self.num_inputs = self._num_inputs_of(sub.get_output())
        self.params.set_size(self.num_inputs + (1 if self._has_bias() else 0), self.num_outputs)
        randomize_parameters(self.params, self.num_inputs + self.num_outputs)
        self.weights = alias_tensor(self.num_inputs, self.num_outputs)
        if self._has_bias():
            self.biases = alias_tensor(1, self.num_outputs)
            self.biases(self.params, self.weights.size()).fill(0)

    # -- the record's common part: num_outputs, num_inputs (unsigned), params, the weights
    # and biases alias shapes, bias_mode (int)
    def _write_dense(self, w):
        w.uint(self.num_outputs)
        w.uint(self.num_inputs)
        w.tensor(self.params)
        write_alias(w, self.weights)
        write_alias(w, self.biases)
        w.int(self.bias_mode)

    def _check_file_num_outputs(self, r, num_outputs, at):
        """Refuse a file's num_outputs (the default keeps any count >= 1, as dlib)."""
        if num_outputs < 1:
            raise r.error(f"{type(self).__name__}: the file has num_outputs={num_outputs}, which "
                          "must be >= 1", at)

    def _read_dense(self, r):
        """Reads the common part; returns ``(num_outputs, num_inputs, weights, biases)`` for
        ``_adopt_dense`` once the subclass has read its tail. bias_mode must be the net's."""
        name = type(self).__name__
        at = r.pos
        num_outputs = r.uint(f"{name} num_outputs")
        self._check_file_num_outputs(r, num_outputs, at)
        num_inputs = r.uint(f"{name} num_inputs")
        r.tensor(f"{name} params", into=self.params)
        weights = read_alias(r, f"{name} weights")
        biases = read_alias(r, f"{name} biases")
        at = r.pos
        bias_mode = r.int(f"{name} bias_mode")
        if bias_mode != self.bias_mode:
            raise r.error(f"{name}: the file has bias_mode={bias_mode} but the net type has "
                          f"{self.bias_mode} (0 = {self._mode_names[0]}, 1 = {self._mode_names[1]})", at)
        return num_outputs, num_inputs, weights, biases

    def _adopt_dense(self, r, num_outputs, num_inputs, weights, biases):
        self.num_outputs, self.num_inputs = num_outputs, num_inputs
        self.weights, self.biases = weights, biases
        check_dense_views(r, type(self).__name__, self.params, weights, biases, num_inputs,
                          num_outputs, self._has_bias())
