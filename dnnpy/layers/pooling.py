"""Pooling layers: ``max_pool_`` and ``avg_pool_`` (dlib's layers.h), both driving
``tt.pooling``.

The window of output pixel ``(r, c)`` starts at input pixel ``(r*stride_y - padding_y,
c*stride_x - padding_x)`` and is clipped to the image: padding never wins a max and is not
counted in a mean. ``nr``/``nc`` 0 makes the window span the whole input in that direction
(``max_pool_everything`` / ``avg_pool_everything``). Padding defaults to ``nr//2`` for
stride 1, else 0, as in dlib.
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..templates import layer_template
from ._serial import expect_same
from ._window import sliding_window
from .base import computational_layer, gradient_input_target

__all__ = ["max_pool_", "avg_pool_", "max_pool", "avg_pool", "max_pool_everything",
           "avg_pool_everything"]


class _pool_base(sliding_window, computational_layer):
    """What max_pool_ and avg_pool_ share (dlib form A: backward reads the output)."""

    backward_needs_output = True
    _kind = ""

    def __init__(self, nr, nc, stride_y, stride_x, padding_y=None, padding_x=None):
        super().__init__()
        self._init_window(nr, nc, stride_y, stride_x, padding_y, padding_x, 0)
        self._pool = tt.pooling()

    def _setup_pool(self, x):
        args = (self.nr_ or x.nr(), self.nc_ or x.nc(), self.stride_y_, self.stride_x_,
                self.padding_y_, self.padding_x_)
        if self._kind == "max":
            self._pool.setup_max_pooling(*args)
        else:
            self._pool.setup_avg_pooling(*args)

    def forward(self, sub, output):
        x = sub.get_output()
        self._setup_pool(x)
        try:
            self._pool(output, x)
        except ValueError as e:
            raise ValueError(f"{self!r}: {e}") from None

    def backward(self, computed_output, gradient_input, sub, params_grad):
        x = sub.get_output()
        self._setup_pool(x)
        data_grad, add_to = gradient_input_target(sub)
        self._pool.get_gradient(gradient_input, computed_output, x, data_grad, add_to)

    def map_input_to_output(self, p):
        return self._window_map(p)

    def map_output_to_input(self, p):
        return self._window_unmap(p)

    def serialize(self, w):
        """dlib's "max_pool_2" / "avg_pool_2": the template's nr, nc, strides, then the
        paddings (all ints)."""
        w.string(f"{self._kind}_pool_2")
        for v in self._window_fields():
            w.int(v)

    def deserialize(self, r):
        """Every value must be the net type's (dlib checks them all)."""
        name = type(self).__name__
        r.expect_string(f"{self._kind}_pool_2")
        for field, expected in zip(("nr", "nc", "stride_y", "stride_x", "padding_y", "padding_x"),
                                   self._window_fields()):
            at = r.pos
            expect_same(r, name, field, r.int(f"{name} {field}"), expected, at)

    def __deepcopy__(self, memo):
        # dlib's copy constructor: the tt.pooling object is not copied (setup redoes it)
        return type(self)(*self._window_fields())

    def __repr__(self):
        return (f"{self._kind}_pool (nr={self.nr_}, nc={self.nc_}, stride_y={self.stride_y_}, "
                f"stride_x={self.stride_x_}, padding_y={self.padding_y_}, padding_x={self.padding_x_})")

    def to_xml(self):
        return f"<{self._kind}_pool {self._window_xml()}/>\n"

    def dot_label(self):
        return f"{self._kind}_pool" + self._window_dot()

    def to_onnx(self, g, x):
        """``MaxPool`` / ``AveragePool`` with pads ``[py, px, py, px]``, floor output size
        (``ceil_mode=0``) and, for averages, ``count_include_pad=0``: dlib's windows are
        clipped to the image, and ONNX leaves the padded cells out of both. A window of 0
        spans the whole input. (A max window that is all -inf gives -inf here and
        -3.4e38 in onnxruntime, which starts from the lowest float.) A window of 0 by 0 without
        padding (dlib's ``max_pool_everything`` / ``avg_pool_everything``) is ONNX's
        ``GlobalMaxPool`` / ``GlobalAveragePool``, for any input size."""
        n, k, h, w = g.shape(x)
        if self.nr_ == 0 and self.nc_ == 0 and self.padding_y_ == 0 and self.padding_x_ == 0:
            return g.node("GlobalMaxPool" if self._kind == "max" else "GlobalAveragePool", [x],
                          shape=(n, k, 1, 1))
        nr, nc = self.nr_ or h, self.nc_ or w
        oh = (h + 2 * self.padding_y_ - nr) // self.stride_y_ + 1
        ow = (w + 2 * self.padding_x_ - nc) // self.stride_x_ + 1
        attrs = dict(kernel_shape=[nr, nc], strides=[self.stride_y_, self.stride_x_],
                     pads=[self.padding_y_, self.padding_x_, self.padding_y_, self.padding_x_])
        if self._kind == "max":
            return g.node("MaxPool", [x], shape=(n, k, oh, ow), **attrs)
        return g.node("AveragePool", [x], shape=(n, k, oh, ow), count_include_pad=0, **attrs)


class max_pool_(_pool_base):
    """Max over each ``nr x nc`` window (clipped to the image); ties go to the first pixel
    in row-major order."""

    _kind = "max"


class avg_pool_(_pool_base):
    """Mean over each ``nr x nc`` window clipped to the image (padding is not counted)."""

    _kind = "avg"


max_pool = layer_template("max_pool", max_pool_)
avg_pool = layer_template("avg_pool", avg_pool_)
max_pool_everything = layer_template("max_pool_everything", max_pool_, nr=0, nc=0, stride_y=1, stride_x=1)
avg_pool_everything = layer_template("avg_pool_everything", avg_pool_, nr=0, nc=0, stride_y=1, stride_x=1)
