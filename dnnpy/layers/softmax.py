"""Normalising layers: ``softmax_`` (channel-wise / plane-wise), ``softmax_all_`` and
``l2normalize_``. All are dlib's form C: in place, and backward reads the forward output.
None of them has ``map_input_to_output`` in dlib, so none has one here.
"""

from __future__ import annotations

import numbers

from .. import tensor_tools as tt
from ..tensor import resizable_tensor
from ..tensor_tools.softmax_family import CHANNEL_WISE, PLANE_WISE
from ..templates import layer_template
from ..printing import cpp_num, xml_num
from ._serial import simple_serial
from .base import computational_layer

__all__ = ["operation_mode", "softmax_", "softmax", "softmaxm", "softmax_all_", "softmax_all",
           "l2normalize_", "l2normalize", "CHANNEL_WISE", "PLANE_WISE"]

_MODE_NAMES = {CHANNEL_WISE: "channel_wise", PLANE_WISE: "plane_wise"}



class operation_mode:
    """dlib's ``operation_mode`` enum (``softmax_<operation_mode::PLANE_WISE>``): the mode of
    ``softmax_`` and of the plane-wise ops (``tt.softmax``, ``tt.gemm``)."""

    CHANNEL_WISE = CHANNEL_WISE
    PLANE_WISE = PLANE_WISE

class softmax_(simple_serial, computational_layer):
    """CHANNEL_WISE (template ``softmax``): softmax over k at each (n, r, c).
    PLANE_WISE (template ``softmaxm``): softmax along each row (over nc) of every plane,
    as dlib's implementation does (its comment says per plane); an all -inf row gives 0s.
    The mode is a template argument in dlib, so it is not serialized."""

    dot_name = "softmax"
    backward_needs_output = True

    def template_args(self):
        return {"mode": self.mode}

    def __init__(self, mode=CHANNEL_WISE):
        super().__init__()
        if isinstance(mode, bool) or mode not in _MODE_NAMES:
            raise ValueError(f"softmax_: mode must be CHANNEL_WISE (0) or PLANE_WISE (1), got {mode!r}")
        self.mode = int(mode)

    def get_mode(self):
        return self.mode

    def forward_inplace(self, input, output):
        tt.softmax(output, input, self.mode)

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        tt.softmax_gradient(data_grad, computed_output, gradient_input, self.mode)

    def __repr__(self):
        return f"softmax (mode={_MODE_NAMES[self.mode]})"

    def to_xml(self):
        return f"<softmax mode='{_MODE_NAMES[self.mode]}'/>\n"

    def to_onnx(self, g, x):
        """CHANNEL_WISE: ``Softmax(axis=1)`` (opset 13+ normalises one axis). PLANE_WISE
        (``softmaxm``): dlib normalises each ROW of each plane (cpu_dlib.cpp and cuDNN
        alike), so ``Softmax(axis=3)``, not a softmax over the whole plane. (A row that is all
        -inf gives zeros in dnnpy and NaN in onnxruntime.)"""
        return g.node("Softmax", [x], axis=1 if self.mode == tt.CHANNEL_WISE else 3)


class softmax_all_(simple_serial, computational_layer):
    """Softmax over all ``k*nr*nc`` values of each sample."""

    dot_name = "softmax_all"
    backward_needs_output = True

    def forward_inplace(self, input, output):
        tt.softmax_all(output, input)

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        tt.softmax_all_gradient(data_grad, computed_output, gradient_input)

    def __repr__(self):
        return "softmax_all"

    def to_xml(self):
        return "<softmax_all/>\n"

    def to_onnx(self, g, x):
        """Softmax over each sample's ``k*nr*nc`` values: ``Flatten``, ``Softmax``, ``Reshape``."""
        n, k, nr, nc = g.shape(x)
        y = g.node("Softmax", [g.node("Flatten", [x], shape=(n, k * nr * nc), axis=1)], axis=1)
        return g.reshape(y, [0, k, nr, nc], (n, k, nr, nc))


DEFAULT_L2_NORM_EPS = 1e-5


class l2normalize_(simple_serial, computational_layer):
    """Each sample divided by ``sqrt(sum(x^2) + eps)`` (eps > 0, a double in dlib).

    ``norm`` (the inverse norms of the last forward) and ``temp`` are caches shared by
    forward and backward; dlib does not serialize them.
    """

    dot_name = "l2normalize"

    backward_needs_output = True

    _ser_fields = (("eps", "float64"),)  # a C++ double

    def template_args(self):
        return {"eps": self.eps}

    def __init__(self, eps=DEFAULT_L2_NORM_EPS):
        super().__init__()
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
            raise TypeError(f"l2normalize_: eps must be a real number, got {eps!r}")
        if not eps > 0:
            raise ValueError(f"l2normalize_: eps must be > 0, got {eps!r}")
        self.eps = float(eps)
        self.norm = resizable_tensor()
        self.temp = resizable_tensor()

    def get_eps(self):
        return self.eps

    def forward_inplace(self, input, output):
        tt.inverse_norms(self.norm, input, self.eps)
        tt.scale_rows(output, input, self.norm)

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        # d/dx of dot(x*norm, g) = norm*(g - out*dot(out, g)), per sample
        tt.dot_prods(self.temp, gradient_input, computed_output)
        beta = 0 if data_grad is gradient_input else 1
        tt.scale_rows2(beta, data_grad, gradient_input, computed_output, self.temp, self.norm)

    def __repr__(self):
        return f"l2normalize eps={cpp_num(self.eps)}"

    def to_xml(self):
        return f"<l2normalize eps='{xml_num(self.eps)}'/>\n"

    def to_onnx(self, g, x):
        """``x / sqrt(sum(x^2 over k, nr, nc) + eps)`` (LpNormalization has no eps)."""
        ss = g.reduce("ReduceSumSquare", x, [1, 2, 3])
        return g.node("Div", [x, g.node("Sqrt", [g.node("Add", [ss, g.scalar(self.eps)])])])


softmax = layer_template("softmax", softmax_, mode=CHANNEL_WISE)
softmaxm = layer_template("softmaxm", softmax_, mode=PLANE_WISE)
softmax_all = layer_template("softmax_all", softmax_all_)
l2normalize = layer_template("l2normalize", l2normalize_)
