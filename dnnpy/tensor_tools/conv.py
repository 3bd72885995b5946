"""``tt.tensor_conv``: dlib's stateful convolution object (cross-correlation, OIHW filters).

``con_`` and ``cont_`` both drive it. A transposed convolution is a convolution run
backwards: its forward is ``get_gradient_for_data``, its data gradient is the forward
call, and its filter gradient is ``get_gradient_for_filters`` with the operands swapped
(see docs/transposed_convolution.md).
"""

from __future__ import annotations

from ..tensor import resizable_tensor, tensor
from .backend import _backend, _check_tensors


def _conv_out_size(n, f, stride, pad):
    return 1 + (n + 2 * pad - f) // stride


class tensor_conv:
    """Convolution of ``data (N, C, H, W)`` with ``filters (K, C, R, S)`` giving
    ``(N, K, 1+(H+2*py-R)//sy, 1+(W+2*px-S)//sx)``.

    Call ``setup(data, filters, stride_y, stride_x, padding_y, padding_x)`` first; it
    records sizes only. ``add_to_output`` (the first argument of the three operations)
    selects ``+=`` versus ``=`` for the destination.
    """

    def __init__(self):
        self.clear()

    def clear(self):
        self._in_shape = None
        self._filter_shape = None
        self.stride_y = self.stride_x = 1
        self.padding_y = self.padding_x = 0

    def setup(self, data, filters, stride_y, stride_x, padding_y, padding_x):
        """Requires: ``filters.k() == data.k()``, strides > 0, ``0 <= padding < filter size``,
        and a filter no larger than the padded input."""
        _check_tensors("tensor_conv.setup", data=data, filters=filters)
        if stride_y <= 0 or stride_x <= 0:
            raise ValueError(f"tensor_conv.setup: strides must be > 0, got ({stride_y}, {stride_x})")
        if not (0 <= padding_y < filters.nr() and 0 <= padding_x < filters.nc()):
            raise ValueError(
                f"tensor_conv.setup: padding ({padding_y}, {padding_x}) must be >= 0 and smaller "
                f"than the filter ({filters.nr()}x{filters.nc()})")
        if filters.k() != data.k():
            raise ValueError(f"tensor_conv.setup: filters{filters.shape} have k={filters.k()} but "
                             f"data{data.shape} has k={data.k()}")
        if (data.nr() + 2 * padding_y < filters.nr()) or (data.nc() + 2 * padding_x < filters.nc()):
            raise ValueError(
                f"tensor_conv.setup: filters {filters.nr()}x{filters.nc()} do not fit data{data.shape} "
                f"padded by ({padding_y}, {padding_x})")
        self._in_shape = data.shape
        self._filter_shape = filters.shape
        self.stride_y, self.stride_x = int(stride_y), int(stride_x)
        self.padding_y, self.padding_x = int(padding_y), int(padding_x)

    # -- shapes --------------------------------------------------------------------------
    def output_shape(self, num_samples=None):
        n, _, h, w = self._in_shape
        k, _, r, s = self._filter_shape
        return (n if num_samples is None else num_samples, k,
                _conv_out_size(h, r, self.stride_y, self.padding_y),
                _conv_out_size(w, s, self.stride_x, self.padding_x))

    def _require_setup(self, op):
        if self._in_shape is None:
            raise ValueError(f"tensor_conv.{op}: call setup() first")

    def _check(self, op, **named):
        """Each named tensor must have the (k, nr, nc) recorded by setup for its role;
        num_samples must agree between data-like and output-like tensors."""
        self._require_setup(op)
        expected = {"data": self._in_shape, "data_gradient": self._in_shape,
                    "filters": self._filter_shape, "filters_gradient": self._filter_shape}
        n = None
        for name, t in named.items():
            if not isinstance(t, tensor):
                raise TypeError(f"tensor_conv.{op}: {name} must be a dnnpy tensor")
            want = expected.get(name)
            if want is None:  # output / gradient_input
                want = self.output_shape(t.num_samples())
            if name.startswith("filters"):
                ok = t.shape == want
            else:
                ok = t.shape[1:] == want[1:]
                if ok and n is not None and t.num_samples() != n:
                    ok = False
                n = t.num_samples() if n is None else n
            if not ok:
                raise ValueError(f"tensor_conv.{op}: {name}{t.shape} does not match the setup "
                                 f"(data{self._in_shape}, filters{self._filter_shape}, "
                                 f"stride ({self.stride_y}, {self.stride_x}), padding "
                                 f"({self.padding_y}, {self.padding_x}) -> output "
                                 f"{self.output_shape(t.num_samples())})")

    def _args(self):
        return self.stride_y, self.stride_x, self.padding_y, self.padding_x

    # -- operations ----------------------------------------------------------------------
    def __call__(self, add_to_output, output, data, filters, biases=None, use_relu=False):
        """``output (+)= conv(data, filters)``; then, with ``biases`` (``(1, K, 1, 1)``, or
        any tensor of K elements), ``output += biases`` per channel, and, if ``use_relu``,
        ``output = max(0, output)``: dlib's fused forward, done by the twin in one call.

        A ``resizable_tensor`` output is resized first (only when not adding)."""
        self._require_setup("__call__")
        if isinstance(output, resizable_tensor) and not add_to_output:
            output.set_size(*self.output_shape(data.num_samples()))
        self._check("__call__", data=data, filters=filters, output=output)
        if biases is not None:
            self._check_bias("__call__", biases, "biases")
        self._check_distinct("__call__", output, data=data, filters=filters, biases=biases)
        _backend().conv_forward(add_to_output, output, data, filters, *self._args(),
                                biases=biases, use_relu=bool(use_relu))

    @staticmethod
    def _check_distinct(op, written, **read):
        """dlib's requirement that the destination is not one of the inputs: a twin writing
        it while reading them (oneDNN does) would compute garbage."""
        for name, t in read.items():
            if t is not None and written.is_aliased_with(t):
                raise ValueError(f"tensor_conv.{op}: the destination{written.shape} shares memory "
                                 f"with {name}{t.shape}")

    def _check_bias(self, op, t, name):
        if not isinstance(t, tensor):
            raise TypeError(f"tensor_conv.{op}: {name} must be a dnnpy tensor")
        k = self._filter_shape[0]
        if t.size() != k:
            raise ValueError(f"tensor_conv.{op}: {name}{t.shape} must hold one value per filter "
                             f"({k}, filters{self._filter_shape})")

    def get_gradient_for_data(self, add_to_output, gradient_input, filters, data_gradient):
        """``data_gradient (+)=`` the gradient of ``dot(conv(data, filters), gradient_input)``
        with respect to data. With ``add_to_output`` False every element is assigned (the old
        contents, even NaN, are not read)."""
        self._check("get_gradient_for_data", gradient_input=gradient_input, filters=filters,
                    data_gradient=data_gradient)
        self._check_distinct("get_gradient_for_data", data_gradient,
                             gradient_input=gradient_input, filters=filters)
        _backend().conv_backward_data(add_to_output, gradient_input, filters, data_gradient,
                                      *self._args())

    def get_gradient_for_filters(self, add_to_output, gradient_input, data, filters_gradient,
                                 bias_gradient=None):
        """``filters_gradient (+)=`` the gradient of ``dot(conv(data, filters),
        gradient_input)`` with respect to filters. With ``bias_gradient`` (K elements) the
        bias gradient, the sum of ``gradient_input`` over samples, rows and columns, is also
        ASSIGNED to it (whatever ``add_to_output`` says), in the same call."""
        self._check("get_gradient_for_filters", gradient_input=gradient_input, data=data,
                    filters_gradient=filters_gradient)
        if bias_gradient is not None:
            self._check_bias("get_gradient_for_filters", bias_gradient, "bias_gradient")
            self._check_distinct("get_gradient_for_filters", bias_gradient,
                                 gradient_input=gradient_input, data=data,
                                 filters_gradient=filters_gradient)
        self._check_distinct("get_gradient_for_filters", filters_gradient,
                             gradient_input=gradient_input, data=data)
        _backend().conv_backward_filters(add_to_output, gradient_input, data, filters_gradient,
                                         *self._args(), bias_gradient=bias_gradient)
