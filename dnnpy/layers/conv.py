"""Convolution layers: ``con_`` and the transposed convolution ``cont_``.

Both keep their parameters in one flat tensor, filters first, then ``num_filters`` biases,
reached through ``alias_tensor`` views (dlib's layout, so dlib's files load as they are).
``con_`` filters are ``(num_filters, k_in, nr, nc)``; ``cont_`` filters are
``(k_in, num_filters, nr, nc)``: they are the filters of the convolution that ``cont_``
runs backwards (docs/transposed_convolution.md).
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..printing import xml_matrix
from ..tensor import alias_tensor
from ..templates import layer_template
from ._serial import (check_fits, expect_same, read_alias, read_multipliers, write_alias,
                      write_multipliers)
from ._window import sliding_window
from .base import (check_int, computational_layer, data_gradient_wanted, gradient_input_target,
                   randomize_parameters, with_multipliers)

__all__ = ["con_", "cont_", "con", "cont", "num_con_outputs"]


_WINDOW_FIELDS = ("nr", "nc", "stride_y", "stride_x", "padding_y", "padding_x")


class num_con_outputs:
    """dlib's ``num_con_outputs(n)``: given to a net's constructor, it sets the number of
    filters of the first con (or cont) layer it reaches (``net_type(num_con_outputs(8))``);
    ``con_(num_con_outputs(8), 5, 5, 1, 1)`` is ``con_(8, 5, 5, 1, 1)``."""

    def __init__(self, n):
        self.num_outputs = check_int("num_con_outputs", "n", n, 1)

    def __repr__(self):
        return f"num_con_outputs({self.num_outputs})"


class _conv_base(sliding_window, computational_layer, with_multipliers):
    """Constructor arguments and bookkeeping shared by con_ and cont_."""

    # a net constructor's num_con_outputs(n) becomes this layer's num_filters (templates.py)
    constructor_settings = {num_con_outputs: "num_filters"}

    _allow_whole_input = False  # con_ accepts nr/nc == 0: the filter spans the whole input
    _window_noun = "filter"

    def template_args(self):
        return {"num_filters": self.num_filters_, **super().template_args()}

    def __init__(self, num_filters, nr, nc, stride_y, stride_x, padding_y=None, padding_x=None):
        super().__init__()
        if isinstance(num_filters, num_con_outputs):
            num_filters = num_filters.num_outputs
        self.num_filters_ = check_int(type(self).__name__, "num_filters", num_filters, 1)
        self._init_window(nr, nc, stride_y, stride_x, padding_y, padding_x,
                          0 if self._allow_whole_input else 1)
        self.use_bias = True
        # dlib's default-constructed alias_tensor: all four dims 0 (nr() of a whole-input
        # filter is 0 until set up)
        self.filters = alias_tensor(0, 0, 0, 0)
        self.biases = alias_tensor(0, 0, 0, 0)
        self._conv = tt.tensor_conv()

    # dlib's accessors (the window's are sliding_window's)
    def num_filters(self):
        return self.num_filters_

    def bias_offset(self, size):
        """The biases follow the filters: the last ``num_filters`` parameters."""
        return size - self.num_filters()

    def nr(self):
        return self.nr_ if self.nr_ else self.filters.nr()

    def nc(self):
        return self.nc_ if self.nc_ else self.filters.nc()

    def set_num_filters(self, num):
        num = check_int(type(self).__name__, "num_filters", num, 1)
        if num != self.num_filters_ and self.params.size() != 0:
            raise ValueError(f"{type(self).__name__}: can't change the number of filters once the "
                             "parameters are allocated")
        self.num_filters_ = num

    def bias_is_disabled(self):
        return not self.use_bias

    def get_filters(self):
        return self.filters(self.params, 0)

    def get_biases(self):
        if not self.use_bias:
            raise ValueError(f"{type(self).__name__}: the bias is disabled")
        return self.biases(self.params, self.filters.size())

    def _allocate(self, filter_shape):
        """Filters then biases in one flat tensor; Glorot init with dlib's fan, zero biases."""
        nf = self.num_filters_
        self.filters = alias_tensor(*filter_shape)
        self.params.set_size(self.filters.size() + (nf if self.use_bias else 0))
        randomize_parameters(self.params, self.filters.size() // nf + nf)
        if self.use_bias:
            self.biases = alias_tensor(1, nf)
            self.biases(self.params, self.filters.size()).fill(0)

    def _assign_bias_gradient(self, params_grad, gradient_input):
        if self.use_bias:
            tt.assign_conv_bias_gradient(self.biases(params_grad, self.filters.size()), gradient_input)

    # -- serialization (dlib's serialize/deserialize friends) ----------------------------
    _version = ""            # the version string written
    _versions_read = ()      # the version strings accepted
    _versions_with_use_bias = ()

    def serialize(self, w):
        """params, num_filters, the template's nr/nc/strides, the paddings, the filter and
        bias alias shapes, 4 double multipliers, use_bias (con_5+, cont_2), use_relu (con_6).
        A layer read from an older record writes that record's version back (refused when
        the record cannot hold the bias being disabled or a fused relu)."""
        version = w.version_string(self, self._version, self._old_version_problem)
        w.tensor(self.params)
        for v in (self.num_filters_, *self._window_fields()):
            w.int(v)
        write_alias(w, self.filters)
        write_alias(w, self.biases)
        write_multipliers(w, self)
        if version in self._versions_with_use_bias:
            w.bool(self.use_bias)
        self._serialize_tail(w, version)

    def _old_version_problem(self, version):
        if version not in self._versions_with_use_bias and not self.use_bias:
            return f"{version} has no use_bias field and the bias is disabled"
        return None

    def _serialize_tail(self, w, version):
        pass

    def _deserialize_tail(self, r, version):
        pass

    def deserialize(self, r):
        """Reads any version dlib reads (remembered, and written back by ``serialize``). The
        file's nr, nc, strides and paddings must be the net's; num_filters is the file's, as in
        dlib (the net that wrote it may have changed it with ``set_num_filters``, as dlib's MMOD
        examples do for one filter per detector window)."""
        name = type(self).__name__
        version = r.version_string(self, *self._versions_read)
        r.tensor(f"{name} params", into=self.params)
        at = r.pos
        num_filters = r.int(f"{name} num_filters")
        if num_filters < 1:
            raise r.error(f"{name}: the file has num_filters={num_filters}, which must be >= 1", at)
        for field, expected in zip(_WINDOW_FIELDS, self._window_fields()):
            at = r.pos
            expect_same(r, name, field, r.int(f"{name} {field}"), expected, at)
        self.num_filters_ = num_filters
        self.filters = read_alias(r, f"{name} filters")
        self.biases = read_alias(r, f"{name} biases")
        read_multipliers(r, self, name)
        if version in self._versions_with_use_bias:
            self.use_bias = r.bool(f"{name} use_bias")
        self._deserialize_tail(r, version)
        self._check_read_shapes(r)

    def _check_read_shapes(self, r):
        name = type(self).__name__
        if self.params.size() == 0:
            return
        check_fits(r, name, self.params, ("filters", self.filters, 0),
                   *((("biases", self.biases, self.filters.size()),) if self.use_bias else ()))
        out_dim = self.filters.num_samples() if isinstance(self, con_) else self.filters.k()
        if out_dim != self.num_filters_ or (self.use_bias and self.biases.size() != self.num_filters_):
            raise r.error(f"{name}: the file's filters {self.filters.shape} and biases "
                          f"{self.biases.shape} do not match num_filters={self.num_filters_}")
        for field, size, got in (("nr", self.nr_, self.filters.nr()), ("nc", self.nc_, self.filters.nc())):
            if size and got != size:
                raise r.error(f"{name}: the file's filters {self.filters.shape} have {field}={got} "
                              f"but the net type has {size}")

    def _xml(self, name, nr, nc, tail):
        """dlib's to_xml: the window (``nr``, ``nc`` as each layer's to_xml prints them), the
        multipliers, use_bias, ``tail``, then the params (filters and biases) as a matrix."""
        bias = "true" if self.use_bias else "false"
        return (f"<{name} num_filters='{self.num_filters_}' nr='{nr}' nc='{nc}' "
                f"stride_y='{self.stride_y_}' stride_x='{self.stride_x_}' "
                f"padding_y='{self.padding_y_}' padding_x='{self.padding_x_}'"
                + self._multipliers_xml() + f" use_bias='{bias}'{tail}>\n"
                + xml_matrix(self.params) + f"</{name}>\n")

    def dot_label(self):
        return (type(self).__name__.rstrip("_") + f" | {{filters|{{{self.num_filters_}}}}}"
                + self._window_dot())

    def __repr__(self):
        name = type(self).__name__.rstrip("_")
        return (f"{name}\t (num_filters={self.num_filters_}, nr={self.nr()}, nc={self.nc()}, "
                f"stride_y={self.stride_y_}, stride_x={self.stride_x_}, "
                f"padding_y={self.padding_y_}, padding_x={self.padding_x_})"
                + self._multipliers_str(self.use_bias))


class con_(_conv_base):
    """Convolution (cross-correlation) with ``num_filters`` filters of ``nr x nc``.

    ``out.nr = 1 + (in.nr + 2*padding_y - nr) // stride_y`` (likewise nc). ``nr`` or ``nc``
    0 makes the filter span the whole input in that direction. Padding defaults to
    ``nr//2`` when the stride is 1, else 0 (dlib's defaults).
    """

    _allow_whole_input = True
    _version = "con_6"
    _versions_read = ("con_4", "con_5", "con_6")
    _versions_with_use_bias = ("con_5", "con_6")

    def __init__(self, num_filters, nr, nc, stride_y, stride_x, padding_y=None, padding_x=None):
        super().__init__(num_filters, nr, nc, stride_y, stride_x, padding_y, padding_x)
        self.use_relu = False

    def _serialize_tail(self, w, version):
        if version == "con_6":
            w.bool(self.use_relu)

    def _old_version_problem(self, version):
        if self.use_relu:
            return f"{version} has no use_relu field and a relu is fused into the layer"
        return super()._old_version_problem(version)

    def _deserialize_tail(self, r, version):
        if version == "con_6":
            self.use_relu = r.bool("con_ use_relu")

    def disable_bias(self):
        """Drop the biases (and their storage, if already allocated)."""
        if not self.use_bias:
            return
        self.use_bias = False
        if self.params.size():
            kept = self.params.host_read()[:self.filters.size()].copy()
            self.params.set_size(kept.size)
            self.params.assign(kept.reshape(self.params.shape))
        self.biases = alias_tensor()

    def enable_bias(self):
        if self.use_bias:
            return
        self.use_bias = True
        if self.params.size():
            kept = self.params.host_read().copy()
            self.params.set_size(self.filters.size() + self.num_filters_)
            flat = self.params.host().reshape(-1)
            flat[:kept.size] = kept.reshape(-1)
            flat[kept.size:] = 0
            self.biases = alias_tensor(1, self.num_filters_)

    def disable_relu(self):
        self.use_relu = False

    def enable_relu(self):
        """Fuse a ReLU into the forward pass (used by fuse_layers; inference only)."""
        self.use_relu = True

    def relu_is_disabled(self):
        return not self.use_relu

    def map_input_to_output(self, p):
        """dlib's con_ map: ``((x + padding_x - nc//2) / stride_x, likewise y)``."""
        return self._window_map(p)

    def map_output_to_input(self, p):
        return self._window_unmap(p)

    def setup(self, sub):
        x = sub.get_output()
        nr = self.nr_ or x.nr()
        nc = self.nc_ or x.nc()
        self._allocate((self.num_filters_, x.k(), nr, nc))

    def forward(self, sub, output):
        x = sub.get_output()
        filt = self.filters(self.params, 0)
        self._conv.setup(x, filt, self.stride_y_, self.stride_x_, self.padding_y_, self.padding_x_)
        biases = self.biases(self.params, self.filters.size()) if self.use_bias else None
        self._conv(False, output, x, filt, biases, self.use_relu)

    def backward(self, gradient_input, sub, params_grad):
        if data_gradient_wanted(sub):       # (not on a trainer's input: nothing reads it)
            data_grad, add_to = gradient_input_target(sub)
            self._conv.get_gradient_for_data(add_to, gradient_input, self.filters(self.params, 0),
                                             data_grad)
        # dlib skips the parameter gradient when it would not be used
        if self.learning_rate_multiplier != 0:
            # the bias gradient comes from the same call (sum of gradient_input per filter)
            bias_grad = self.biases(params_grad, self.filters.size()) if self.use_bias else None
            self._conv.get_gradient_for_filters(False, gradient_input, sub.get_output(),
                                                self.filters(params_grad, 0), bias_grad)

    def __repr__(self):
        s = super().__repr__()
        return s + (" use_relu=true" if self.use_relu else "")

    def to_xml(self):
        # dlib prints nr(): a whole-input filter (nr 0) shows its size once set up
        return self._xml("con", self.nr(), self.nc(),
                         f" use_relu='{'true' if self.use_relu else 'false'}'")

    def to_onnx(self, g, x):
        """``Conv`` with pads ``[py, px, py, px]`` (dlib's floor output size is ONNX's); the
        filters ``(num_filters, k, nr, nc)`` are ONNX's layout; a fused ReLU -> ``Relu``."""
        n, k, h, w = g.shape(x)
        nr, nc = self.nr(), self.nc()      # a whole-input filter (0) keeps its set-up size, as forward does
        filters = self.get_filters().numpy()
        if filters.shape[1] != k:
            g.refuse_input(x, f"{filters.shape[1]} input channels")
        filt = g.const(filters, hint="W")
        inputs = [x, filt] + ([g.const(self.get_biases().numpy().reshape(-1), hint="B")] if self.use_bias else [])
        oh = (h + 2 * self.padding_y_ - nr) // self.stride_y_ + 1
        ow = (w + 2 * self.padding_x_ - nc) // self.stride_x_ + 1
        y = g.node("Conv", inputs, shape=(n, self.num_filters_, oh, ow), kernel_shape=[nr, nc],
                   strides=[self.stride_y_, self.stride_x_],
                   pads=[self.padding_y_, self.padding_x_, self.padding_y_, self.padding_x_])
        return g.node("Relu", [y]) if self.use_relu else y


class cont_(_conv_base):
    """Transposed convolution: ``out.nr = stride_y*(in.nr - 1) + nr - 2*padding_y``.

    Forward is the data gradient of the convolution whose filters are ours, ``(k_in,
    num_filters, nr, nc)``; the data gradient is that convolution's forward; the filter
    gradient is its filter gradient with data and output gradient swapped.
    """

    _version = "cont_2"
    _versions_read = ("cont_1", "cont_2")
    _versions_with_use_bias = ("cont_2",)

    def disable_bias(self):
        self.use_bias = False

    def map_input_to_output(self, p):
        """dlib's cont_ map: the inverse of con_'s (``x*stride_x - padding_x + nc//2``)."""
        return self._window_unmap(p)

    def map_output_to_input(self, p):
        return self._window_map(p)

    def setup(self, sub):
        x = sub.get_output()
        self._allocate((x.k(), self.num_filters_, self.nr_, self.nc_))

    def forward(self, sub, output):
        x = sub.get_output()
        filt = self.filters(self.params, 0)
        output.set_size(x.num_samples(), self.num_filters_,
                        self.stride_y_ * (x.nr() - 1) + self.nr_ - 2 * self.padding_y_,
                        self.stride_x_ * (x.nc() - 1) + self.nc_ - 2 * self.padding_x_)
        self._conv.setup(output, filt, self.stride_y_, self.stride_x_, self.padding_y_, self.padding_x_)
        self._conv.get_gradient_for_data(False, x, filt, output)
        if self.use_bias:
            tt.add(1, output, 1, self.biases(self.params, self.filters.size()))

    def backward(self, gradient_input, sub, params_grad):
        if data_gradient_wanted(sub):       # (not on a trainer's input: nothing reads it)
            data_grad, add_to = gradient_input_target(sub)
            self._conv(add_to, data_grad, gradient_input, self.filters(self.params, 0))
        if self.learning_rate_multiplier != 0:
            self._conv.get_gradient_for_filters(False, sub.get_output(), gradient_input,
                                                self.filters(params_grad, 0))
            self._assign_bias_gradient(params_grad, gradient_input)

    def to_xml(self):
        return self._xml("cont", self.nr_, self.nc_, "")

    def to_onnx(self, g, x):
        """``ConvTranspose`` with pads ``[py, px, py, px]`` and no output padding: dlib's
        ``stride*(in-1) + n - 2*pad`` is ONNX's size; filters ``(k_in, num_filters, nr, nc)``
        are ONNX's layout."""
        n, k, h, w = g.shape(x)
        filters = self.get_filters().numpy()
        if filters.shape[0] != k:
            g.refuse_input(x, f"{filters.shape[0]} input channels")
        filt = g.const(filters, hint="W")
        inputs = [x, filt] + ([g.const(self.get_biases().numpy().reshape(-1), hint="B")] if self.use_bias else [])
        oh = self.stride_y_ * (h - 1) + self.nr_ - 2 * self.padding_y_
        ow = self.stride_x_ * (w - 1) + self.nc_ - 2 * self.padding_x_
        return g.node("ConvTranspose", inputs, shape=(n, self.num_filters_, oh, ow),
                      kernel_shape=[self.nr_, self.nc_], strides=[self.stride_y_, self.stride_x_],
                      pads=[self.padding_y_, self.padding_x_, self.padding_y_, self.padding_x_])


con = layer_template("con", con_)
cont = layer_template("cont", cont_)
