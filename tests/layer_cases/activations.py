"""test_layer cases: pointwise activations, softmax family, l2normalize, dropout, multiply.

dropout_ draws a fresh mask every forward, which finite differences cannot follow;
test_layer itself replaces its random source (``dropout_.rnd``, a ``tt.tensor_rand``) with a
``dnnpy.testing.replaying_rand`` that restarts from its seed before every fill, so every
forward of a given shape draws the same mask. Everything else (mask creation, threshold,
multiply, the backward's reuse of the mask) is the layer's own code.
"""

from dnnpy import (clipped_relu_, dropout_, dropout_rate_, elu_, gelu_, htan_, l2normalize_,
                   leaky_relu_, mish_, multiply_, prelu_, relu_, sig_, silu_, smelu_, softmax_,
                   softmax_all_)
from dnnpy import tensor_tools as tt


def _disabled(layer):
    layer.disable()
    return layer


# (layer factory, fake-subnet shape or None for dlib's random shapes)
CASES = {
    "relu (2,3,4,5)": (lambda: relu_(), (2, 3, 4, 5)),
    "relu disabled": (lambda: _disabled(relu_()), None),
    "prelu default": (lambda: prelu_(), None),
    "prelu 0.6 (2,3,4,5)": (lambda: prelu_(0.6), (2, 3, 4, 5)),
    "leaky_relu default": (lambda: leaky_relu_(), None),
    "leaky_relu 0.3": (lambda: leaky_relu_(0.3), (2, 3, 4, 5)),
    "sig": (lambda: sig_(), None),
    "sig (3,2,1,7)": (lambda: sig_(), (3, 2, 1, 7)),
    "mish": (lambda: mish_(), None),
    "mish (2,3,4,5)": (lambda: mish_(), (2, 3, 4, 5)),
    "htan": (lambda: htan_(), None),
    "htan (3,2,1,7)": (lambda: htan_(), (3, 2, 1, 7)),
    "clipped_relu default": (lambda: clipped_relu_(), None),
    "clipped_relu 0.5": (lambda: clipped_relu_(0.5), (2, 3, 4, 5)),
    "elu default": (lambda: elu_(), None),
    "elu 0.5": (lambda: elu_(0.5), (2, 3, 4, 5)),
    "gelu": (lambda: gelu_(), None),
    "gelu (2,3,4,5)": (lambda: gelu_(), (2, 3, 4, 5)),
    "smelu default": (lambda: smelu_(), None),
    "smelu 0.5": (lambda: smelu_(0.5), (2, 3, 4, 5)),
    "silu": (lambda: silu_(), None),
    "silu (2,3,4,5)": (lambda: silu_(), (2, 3, 4, 5)),
    "softmax channel_wise": (lambda: softmax_(tt.CHANNEL_WISE), None),
    "softmax channel_wise (2,5,1,1)": (lambda: softmax_(tt.CHANNEL_WISE), (2, 5, 1, 1)),
    "softmaxm plane_wise": (lambda: softmax_(tt.PLANE_WISE), None),
    "softmaxm plane_wise (2,2,3,5)": (lambda: softmax_(tt.PLANE_WISE), (2, 2, 3, 5)),
    "softmax_all": (lambda: softmax_all_(), None),
    "softmax_all (2,3,2,3)": (lambda: softmax_all_(), (2, 3, 2, 3)),
    "l2normalize default": (lambda: l2normalize_(), None),
    "l2normalize eps 0.5 (3,4,1,1)": (lambda: l2normalize_(0.5), (3, 4, 1, 1)),
    "dropout 0.5": (lambda: dropout_(0.5), None),
    "dropout 0.2 (2,3,4,5)": (lambda: dropout_(0.2), (2, 3, 4, 5)),
    "dropout_rate 30": (lambda: dropout_rate_(30), None),
    "dropout_rate 10 (2,3,4,5)": (lambda: dropout_rate_(10), (2, 3, 4, 5)),
    "multiply default": (lambda: multiply_(), None),
    "multiply -1.5 (2,3,4,5)": (lambda: multiply_(-1.5), (2, 3, 4, 5)),
    "multiply from dropout_ 0.25": (lambda: multiply_(dropout_(0.25)), None),
}
