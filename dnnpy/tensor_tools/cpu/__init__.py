"""The numpy twin of ``dnnpy.tensor_tools``: the same op names and signatures as the CUDA
twin, grouped in the same concept modules. Only the dispatchers call these; they have
already checked the shapes."""

from importlib import import_module

from .conv import conv_backward_data, conv_backward_filters, conv_forward
from .ops import (add, affine_transform, assign_bias_gradient, assign_conv_bias_gradient, dot,
                  gemm, relu, relu_gradient)

NAME = "cpu"

__all__ = [
    "conv_forward", "conv_backward_data", "conv_backward_filters", "add", "affine_transform",
    "assign_bias_gradient", "assign_conv_bias_gradient", "dot", "gemm", "relu", "relu_gradient",
]

for _name in ("activations", "norm", "spatial", "resize", "merge", "solver"):
    _module = import_module(f".{_name}", __name__)
    for _symbol in _module.__all__:
        globals()[_symbol] = getattr(_module, _symbol)
    __all__ += _module.__all__
del _name, _module
