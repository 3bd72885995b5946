"""The numpy twin of ``dnnpy.tensor_tools``: the same op names and signatures as the CUDA
twin. Only the dispatcher (``dnnpy.tensor_tools``) calls these; it has already checked the
shapes."""

from .conv import conv_backward_data, conv_backward_filters, conv_forward
from .ops import (add, affine_transform, assign_bias_gradient, assign_conv_bias_gradient, dot,
                  gemm, relu, relu_gradient)

NAME = "cpu"

__all__ = [
    "conv_forward", "conv_backward_data", "conv_backward_filters", "add", "affine_transform",
    "assign_bias_gradient", "assign_conv_bias_gradient", "dot", "gemm", "relu", "relu_gradient",
]
