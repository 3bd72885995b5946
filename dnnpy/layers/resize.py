"""Resampling and reshaping layers: ``upsample_``, ``resize_to_``, ``reshape_to_`` (and its
``flatten`` alias) and ``resize_prev_to_tagged_``.

Resampling is ``tt.resize_bilinear`` (align corners, as dlib); its gradient ADDS to the
subnet's gradient. None of these layers has parameters.
"""

from __future__ import annotations

import numbers

from .. import tensor_tools as tt
from ..core import layer
from ..tensor import alias_tensor
from ..templates import check_tag, layer_template
from ._serial import read_type_ints, version_only
from .base import check_int, computational_layer

__all__ = ["upsample_", "resize_to_", "reshape_to_", "resize_prev_to_tagged_", "upsample",
           "resize_to", "reshape_to", "flatten", "resize_prev_to_tagged"]


class _bilinear_resample(computational_layer):
    """What upsample_ and resize_to_ share: a bilinear resize to ``_output_size(x)``, with
    scale factors ``scale_y``, ``scale_x`` (output size / input size) for the point maps."""

    def forward(self, sub, output):
        x = sub.get_output()
        output.set_size(x.num_samples(), x.k(), *self._output_size(x))
        tt.resize_bilinear(output, x)

    def backward(self, gradient_input, sub, params_grad):
        tt.resize_bilinear_gradient(sub.get_gradient_input(), gradient_input)

    def map_input_to_output(self, p):
        return (p[0] * self.scale_x, p[1] * self.scale_y)

    def map_output_to_input(self, p):
        return (p[0] / self.scale_x, p[1] / self.scale_y)

    def to_onnx(self, g, x):
        """dlib's align-corners bilinear resize (``g.resize_bilinear``)."""
        _, _, h, w = g.shape(x)
        if isinstance(self, resize_to_):
            nr, nc = self.NR, self.NC
        else:
            nr, nc = self.scale_y * h, self.scale_x * w
        return g.resize_bilinear(x, nr, nc)


class upsample_(_bilinear_resample):
    """Bilinear upsampling to ``(scale_y*nr, scale_x*nc)``. ``scale_x`` defaults to
    ``scale_y`` (dlib's ``upsample<scale>`` is ``upsample_<scale, scale>``)."""

    def template_args(self):
        return {"scale_y": self.scale_y, "scale_x": self.scale_x}

    def __init__(self, scale_y, scale_x=None):
        super().__init__()
        self.scale_y = check_int("upsample_", "scale_y", scale_y, 1)
        self.scale_x = check_int("upsample_", "scale_x", self.scale_y if scale_x is None else scale_x, 1)

    def _output_size(self, x):
        return self.scale_y * x.nr(), self.scale_x * x.nc()

    def serialize(self, w):
        """dlib's "upsample_": the template's scale_y, scale_x (ints)."""
        w.string("upsample_")
        w.int(self.scale_y)
        w.int(self.scale_x)

    def deserialize(self, r):
        r.expect_string("upsample_")
        read_type_ints(r, "upsample_", (("scale_y", self.scale_y), ("scale_x", self.scale_x)))

    def __repr__(self):
        return f"upsample\t (scale_y={self.scale_y}, scale_x={self.scale_x})"

    def to_xml(self):
        return f"<upsample scale_y='{self.scale_y}' scale_x='{self.scale_x}'/>\n"

    def dot_label(self):
        if (self.scale_y, self.scale_x) == (1, 1):
            return "upsample"
        return f"upsample | {{scale|{{{self.scale_y},{self.scale_x}}}}}"


class resize_to_(_bilinear_resample):
    """Bilinear resize of every plane to ``NR x NC``; ``scale_y = NR / in.nr`` and
    ``scale_x = NC / in.nc`` are recorded by each forward (dlib serializes them)."""

    def template_args(self):
        return {"NR": self.NR, "NC": self.NC}

    def __init__(self, NR, NC):
        super().__init__()
        self.NR = check_int("resize_to_", "NR", NR, 1)
        self.NC = check_int("resize_to_", "NC", NC, 1)
        # dlib leaves these uninitialised until the first forward; 1 keeps the maps harmless
        self.scale_y = 1.0
        self.scale_x = 1.0

    def _output_size(self, x):
        self.scale_y = self.NR / x.nr()
        self.scale_x = self.NC / x.nc()
        return self.NR, self.NC

    def serialize(self, w):
        """dlib's "resize_to_": NR, NC (the type's, longs), scale_y, scale_x (doubles)."""
        w.string("resize_to_")
        w.int(self.NR)
        w.int(self.NC)
        w.float64(self.scale_y)
        w.float64(self.scale_x)

    def deserialize(self, r):
        r.expect_string("resize_to_")
        at = r.pos
        nr, nc = r.int("resize_to_'s NR"), r.int("resize_to_'s NC")
        scale_y = r.float64("resize_to_'s scale_y")
        scale_x = r.float64("resize_to_'s scale_x")
        if (nr, nc) != (self.NR, self.NC):
            raise r.error(f"resize_to_: the file has NR={nr}, NC={nc} but the net type has "
                          f"NR={self.NR}, NC={self.NC}", at)
        self.scale_y, self.scale_x = scale_y, scale_x

    def __repr__(self):
        return f"resize_to (nr={self.NR}, nc={self.NC})"

    def to_xml(self):
        return f"<resize_to nr='{self.NR}' nc='{self.NC}'/>\n"

    def dot_label(self):
        return f"resize_to | {{size|{{{self.NR},{self.NC}}}}}"


def _check_dim(name, value):
    value = check_int("reshape_to_", name, value)
    if value != -1 and value <= 0:
        raise ValueError(f"reshape_to_: {name} must be positive or -1 (keep), got {value}")
    return value


class reshape_to_(computational_layer):
    """Reshape each sample to ``(k, nr, nc)``; -1 keeps the input's dimension.

    ``setup`` decides the mode from the first input: a pure reshape (a copy in memory order)
    when the element counts agree; otherwise, if k is unchanged, a bilinear spatial rescale
    to ``nr x nc``; anything else is an error.
    """

    def template_args(self):
        return {"k": self.k_, "nr": self.nr_, "nc": self.nc_}

    def __init__(self, k=-1, nr=-1, nc=-1):
        super().__init__()
        self.k_ = _check_dim("k", k)
        self.nr_ = _check_dim("nr", nr)
        self.nc_ = _check_dim("nc", nc)
        self.output_k, self.output_nr, self.output_nc = self.k_, self.nr_, self.nc_
        self.input_k = self.input_nr = self.input_nc = 0
        self.needs_rescale = False

    # dlib's accessors
    def get_output_k(self):
        return self.output_k

    def get_output_nr(self):
        return self.output_nr

    def get_output_nc(self):
        return self.output_nc

    def set_output_k(self, k):
        self.output_k = _check_dim("k", k)

    def set_output_nr(self, nr):
        self.output_nr = _check_dim("nr", nr)

    def set_output_nc(self, nc):
        self.output_nc = _check_dim("nc", nc)

    def setup(self, sub):
        x = sub.get_output()
        self.input_k, self.input_nr, self.input_nc = x.k(), x.nr(), x.nc()
        # dlib fills in -1 from the *template* arguments, so set_output_*(-1) stays -1
        if self.k_ == -1:
            self.output_k = self.input_k
        if self.nr_ == -1:
            self.output_nr = self.input_nr
        if self.nc_ == -1:
            self.output_nc = self.input_nc
        n_in = self.input_k * self.input_nr * self.input_nc
        n_out = self.output_k * self.output_nr * self.output_nc
        if n_in != n_out and self.input_k == self.output_k:
            self.needs_rescale = True
        if n_in != n_out and not self.needs_rescale:
            raise ValueError(f"reshape_to_: cannot reshape {n_in} elements (input{x.shape}) into "
                             f"(k={self.output_k}, nr={self.output_nr}, nc={self.output_nc}) = "
                             f"{n_out} elements; a spatial rescale needs the same k")

    def _out_shape(self, n):
        return (n, self.output_k, self.output_nr, self.output_nc)

    def forward(self, sub, output):
        x = sub.get_output()
        output.set_size(*self._out_shape(x.num_samples()))
        if self.needs_rescale:
            tt.resize_bilinear(output, x)
            return
        if x.size() != output.size():
            raise ValueError(f"reshape_to_: input{x.shape} does not have the "
                             f"{output.size()} elements of the output{output.shape}")
        view = alias_tensor(*output.shape)(x, 0)
        tt.copy_tensor(False, output, 0, view, 0, view.k())

    def backward(self, gradient_input, sub, params_grad):
        grad = sub.get_gradient_input()
        if self.needs_rescale:
            tt.resize_bilinear_gradient(grad, gradient_input)
            return
        view = alias_tensor(*grad.shape)(gradient_input, 0)
        tt.copy_tensor(True, grad, 0, view, 0, grad.k())

    def map_input_to_output(self, p):
        return (p[0] * (self.output_nc / self.input_nc), p[1] * (self.output_nr / self.input_nr))

    def map_output_to_input(self, p):
        return (p[0] * (self.input_nc / self.output_nc), p[1] * (self.input_nr / self.output_nr))

    def _mode(self):
        return "spatial_rescale" if self.needs_rescale else "pure_reshape"

    _SER_FIELDS = ("input_k", "input_nr", "input_nc", "output_k", "output_nr", "output_nc")

    def serialize(self, w):
        """dlib's "reshape_to_": the input and output dims (longs; set by setup and the
        setters, not by the type), needs_rescale (bool)."""
        w.string("reshape_to_")
        for f in self._SER_FIELDS:
            w.int(getattr(self, f))
        w.bool(self.needs_rescale)

    def deserialize(self, r):
        """Restores every field from the file (dlib does not compare them with the type);
        input dims must be >= 0, output dims positive or -1."""
        r.expect_string("reshape_to_")
        values = []
        for f in self._SER_FIELDS:
            at = r.pos
            v = r.int(f"reshape_to_'s {f}")
            lowest = 0 if f.startswith("input") else -1
            if v < lowest or (f.startswith("output") and v == 0):
                raise r.error(f"reshape_to_: the file has {f}={v}, which is not a valid dimension", at)
            values.append(v)
        needs_rescale = r.bool("reshape_to_'s needs_rescale")
        for f, v in zip(self._SER_FIELDS, values):
            setattr(self, f, v)
        self.needs_rescale = needs_rescale

    def __repr__(self):
        return (f"reshape_to (k={self.output_k}, nr={self.output_nr}, nc={self.output_nc}, "
                f"mode={self._mode()})")

    def to_xml(self):
        return (f"<reshape_to k='{self.output_k}' nr='{self.output_nr}' nc='{self.output_nc}' "
                f"mode='{self._mode()}'/>\n")

    def dot_label(self):
        # the template's arguments, -1 written "unchanged"
        return "reshape_to" + "".join(
            f" | {{{name}|{{{'unchanged' if v == -1 else v}}}}}"
            for name, v in (("k", self.k_), ("nr", self.nr_), ("nc", self.nc_)))

    def to_onnx(self, g, x):
        """A pure reshape (same element count): ``Reshape`` to ``(0, k, nr, nc)``; a spatial
        rescale: the align-corners ``Resize``."""
        n = g.shape(x)[0]
        if self.needs_rescale:
            return g.resize_bilinear(x, self.output_nr, self.output_nc)
        out = (self.output_k, self.output_nr, self.output_nc)
        return g.reshape(x, [0, *out], (n, *out))


def _flatten(k, nr, nc):
    """dlib's ``flatten<k, nr, nc>`` is ``reshape_to_<k*nr*nc, 1, 1>``: its arguments are
    the input's dimensions, the output is one ``k*nr*nc`` channel vector per sample."""
    for name, v in (("k", k), ("nr", nr), ("nc", nc)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"flatten: {name} must be an integer, got {v!r}")
    return reshape_to_(int(k) * int(nr) * int(nc), 1, 1)


class resize_prev_to_tagged_(version_only, computational_layer):
    """Bilinear-resize the subnet's output to the tagged layer's ``nr x nc`` (a plain copy
    when they already agree); k and num_samples are the subnet's."""

    _ser_version = "resize_prev_to_tagged_"  # the tag id is not stored (dlib)
    dot_name, dot_edges = "resize_as", "resize_as"

    def template_args(self):
        return {"tag": self.tag}

    def __init__(self, tag):
        super().__init__()
        self.tag = check_tag("resize_prev_to_tagged_", tag)

    @property
    def id(self):
        return self.tag.id

    def _tag_list(self):
        return (self.tag,)

    def forward(self, sub, output):
        prev = sub.get_output()
        tagged = layer(sub, self.tag).get_output()
        if prev.num_samples() != tagged.num_samples():
            raise ValueError(f"resize_prev_to_tagged_: the subnet's output{prev.shape} and "
                             f"{self.tag.name}'s output{tagged.shape} differ in num_samples")
        output.set_size(prev.num_samples(), prev.k(), tagged.nr(), tagged.nc())
        if prev.shape[2:] == tagged.shape[2:]:
            tt.copy_tensor(False, output, 0, prev, 0, prev.k())
        else:
            tt.resize_bilinear(output, prev)

    def backward(self, gradient_input, sub, params_grad):
        grad = sub.get_gradient_input()
        if grad.shape[2:] == gradient_input.shape[2:]:
            tt.copy_tensor(True, grad, 0, gradient_input, 0, grad.k())
        else:
            tt.resize_bilinear_gradient(grad, gradient_input)

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    def __repr__(self):
        return f"resize_prev_to_tagged{self.id}"

    def to_xml(self):
        return f"<resize_prev_to_tagged tag='{self.id}'/>\n"

    def to_onnx(self, g, x):
        """The align-corners ``Resize`` to the tagged value's ``nr x nc`` (nothing when equal)."""
        _, _, nr, nc = g.shape(g.tagged(self.tag))
        if g.shape(x)[2:] == (nr, nc):
            return x
        return g.resize_bilinear(x, nr, nc)


upsample = layer_template("upsample", upsample_)
resize_to = layer_template("resize_to", resize_to_)
reshape_to = layer_template("reshape_to", reshape_to_)
flatten = layer_template("flatten", _flatten)
resize_prev_to_tagged = layer_template("resize_prev_to_tagged", resize_prev_to_tagged_)
