"""Element-wise activation layers (in place where dlib's are)."""

from __future__ import annotations

from .. import tensor_tools as tt
from ..templates import layer_template
from .base import computational_layer

__all__ = ["relu_", "relu"]


class relu_(computational_layer):
    """``max(0, x)``; in place; ``disable()`` turns it into the identity."""

    backward_needs_output = True

    def __init__(self):
        super().__init__()
        self.disabled = False

    def disable(self):
        self.disabled = True

    def is_disabled(self):
        return self.disabled

    def forward_inplace(self, input, output):
        if self.disabled:
            if output is not input:
                tt.add(0, output, 1, input)
            return
        tt.relu(output, input)

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        if self.disabled:
            if data_grad is not gradient_input:
                tt.add(1, data_grad, 1, gradient_input)
            return
        tt.relu_gradient(data_grad, computed_output, gradient_input)

    def __repr__(self):
        return "relu\t (disabled)" if self.disabled else "relu"


relu = layer_template("relu", relu_)
