"""The graph builder the layers' ONNX converters write into (``to_onnx(self, g, x)``).

A converter receives the builder ``g`` and the name ``x`` of its input value, adds nodes
with ``g.node(...)`` and constants with ``g.const(...)``, and returns the name of its
output value. The builder tracks every value's static shape: a 4-D NCHW tuple whose first
entry is the batch size the export was planned with; in the graph the batch dimension stays
symbolic, so a converter never bakes it into a constant: ``Reshape`` targets use 0 (copy the
dimension) or -1, constants broadcast over the batch with a leading 1. ``g.node`` gives a
new value the shape of its first input unless told otherwise (``shape=``).

``g.refuse(why)`` raises ``onnx_export_error`` naming the layer being converted: a layer
that cannot be exported faithfully says so instead of writing a different graph.
"""

from __future__ import annotations

import numpy as np

from . import proto

__all__ = ["onnx_export_error", "graph_builder"]


class onnx_export_error(ValueError):
    """A net, layer or option that ``dnnpy.onnx.export`` cannot turn into an equivalent
    ONNX graph; the message names the layer (``layer<i>``) and why."""


class graph_builder:
    """Nodes, initialisers, graph inputs and the static shape of each value.

    ``opset``: the ONNX opset written; ``options``: the export's options (``dropout``,
    ``bn``, ...), read by converters with ``g.option(name)``; ``where``: the layer being
    converted, for errors (``"layer<3> (con_)"``)."""

    def __init__(self, opset, options=None):
        self.opset = int(opset)
        self.options = dict(options or {})
        self.where = "export"
        self._nodes = []
        self._inits = []
        self._inputs = []
        self._shapes = {}
        self._dtypes = {}
        self._used = set()
        self._tag_lookup = None
        self._prefix = "n"

    def converting(self, where, prefix, tag_lookup=None):
        """Start converting ``where`` (named in errors): its values are named ``prefix_...``
        and ``tagged(tag)`` asks ``tag_lookup(tag)``."""
        self.where, self._prefix, self._tag_lookup = where, prefix, tag_lookup

    # -- names, shapes ---------------------------------------------------------------------
    def fresh(self, hint="v"):
        """A value name not used yet, built from ``hint``."""
        base = f"{self._prefix}_{hint}" if self._prefix else hint
        name, i = base, 1
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name

    def shape(self, v):
        """The static shape of value ``v`` (batch first, as planned)."""
        return self._shapes[v]

    def dtype(self, v):
        return self._dtypes[v]

    def set_shape(self, v, shape, dtype=np.float32):
        self._shapes[v] = tuple(int(d) for d in shape)
        self._dtypes[v] = np.dtype(dtype)

    def option(self, name):
        return self.options.get(name)

    def refuse(self, why):
        """Raise ``onnx_export_error`` naming the layer being converted."""
        raise onnx_export_error(f"dnnpy.onnx.export: {self.where} cannot be exported: {why}")

    def refuse_input(self, x, expected):
        """Refuse because the value ``x`` the planned ``input_shape`` gives this layer does not
        fit its parameters (``expected`` says what they were set up for): ONNX would
        otherwise get a graph that fails to load or run, far from the cause."""
        self.refuse(f"its parameters were set up for {expected}, but with this input_shape its input "
                    f"is {self.shape(x)[1:]} (k, nr, nc); export with the input shape the net was "
                    f"trained or run with")

    # -- graph content ---------------------------------------------------------------------
    def add_input(self, name, dtype, shape, symbolic_batch=None):
        """A graph input; ``symbolic_batch`` names its first dimension (None: fixed)."""
        self._used.add(name)
        self.set_shape(name, shape, dtype)
        dims = list(shape)
        if symbolic_batch:
            dims[0] = symbolic_batch
        self._inputs.append(proto.value_info_proto(name, proto.elem_type_of(dtype), dims))
        return name

    def const(self, value, dtype=np.float32, hint="c"):
        """An initialiser holding ``value`` as ``dtype``; returns its name."""
        a = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self._inits.append(proto.tensor_proto(name, a))
        self.set_shape(name, a.shape, a.dtype)
        return name

    def ints(self, values, hint="i"):
        """A 1-D int64 initialiser (shapes, axes, pads)."""
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), np.int64, hint)

    def node(self, op, inputs, *, shape=None, dtype=None, outputs=1, hint=None, **attrs):
        """Add ``op(inputs)``; returns the output name (a list when ``outputs`` > 1). The
        outputs get ``shape`` (default: the first input's) and ``dtype`` (default: the
        first input's). An input None is an omitted optional input."""
        names = [self.fresh(hint or op.lower()) for _ in range(outputs)]
        ins = ["" if i is None else i for i in inputs]
        self._nodes.append(proto.node_proto(op, ins, names, names[0], attrs))
        first = next((i for i in ins if i), None)
        out_shape = shape if shape is not None else self._shapes.get(first)
        out_dtype = dtype if dtype is not None else self._dtypes.get(first, np.dtype(np.float32))
        for n in names:
            if out_shape is not None:
                self.set_shape(n, out_shape, out_dtype)
        return names[0] if outputs == 1 else names

    # -- tags ------------------------------------------------------------------------------
    def tagged(self, tag):
        """The value of the layer ``dnnpy.layer(sub, tag)`` finds below the layer being
        converted (the nearest tag of that kind, as in the net)."""
        if self._tag_lookup is None:
            self.refuse(f"no tagged layer can be reached from here ({tag!r})")
        return self._tag_lookup(tag)

    # -- shared decompositions ---------------------------------------------------------------
    def reshape(self, x, target, shape):
        """``Reshape(x, target)``; ``target`` uses 0 for the batch to keep it symbolic."""
        return self.node("Reshape", [x, self.ints(target, "shape")], shape=shape)

    def resize_bilinear(self, x, nr, nc):
        """dlib's bilinear resize of each plane to ``nr x nc``: align-corners sampling
        (``x_scale = (in-1)/max(out-1,1)``, as dlib's ``resize_image`` and CUDA kernel), so
        ``Resize(mode=linear, coordinate_transformation_mode=align_corners)`` with the
        output sizes. The batch size goes in through ``Shape`` so it stays symbolic."""
        n, k, _, _ = self.shape(x)
        batch_k = self.node("Shape", [x], shape=(2,), dtype=np.int64, start=0, end=2)
        sizes = self.node("Concat", [batch_k, self.ints([nr, nc], "hw")], shape=(4,), axis=0)
        return self.node("Resize", [x, None, None, sizes], shape=(n, k, nr, nc), mode="linear",
                         coordinate_transformation_mode="align_corners")

    def zero_pad_to(self, x, shape):
        """``x`` padded with zeros at the end of each of k, nr, nc up to ``shape`` (dlib's
        zero-padded merges of tensors of different sizes); x itself when already there."""
        have = self.shape(x)
        extra = [0] + [max(0, s - h) for s, h in zip(shape[1:], have[1:])]
        if not any(extra):
            return x
        return self.node("Pad", [x, self.ints([0, 0, 0, 0] + extra, "pads")],
                         shape=(have[0],) + tuple(shape[1:]), mode="constant")

    def reduce(self, op, x, axes):
        """``op`` (ReduceMean, ReduceSum, ReduceSumSquare, ReduceMax) over ``axes`` with
        keepdims; the axes are an attribute before opset 18 (13 for ReduceSum), an input since."""
        shape = tuple(1 if i in axes else d for i, d in enumerate(self.shape(x)))
        if self.opset >= 18 or op == "ReduceSum":
            return self.node(op, [x, self.ints(axes, "axes")], shape=shape, keepdims=1)
        return self.node(op, [x], shape=shape, axes=list(axes), keepdims=1)

    def image_input(self, dtype, shape, batch, layout="nchw", means=None):
        """A graph input of raw images and the preprocessing of dlib's input layers: ``Cast``
        to float, then by ``layout`` of the input: ``"nhwc"`` -> ``Transpose`` to NCHW,
        ``"nhw"`` (one channel) -> ``Unsqueeze(1)``, ``"nchw"`` as it is; ``Sub`` of the
        per-channel ``means``; ``Div`` by 256 for uint8. ``shape`` is the NCHW tensor's."""
        n, k, h, w = shape
        dtype = np.dtype(dtype)
        raw_shape = {"nhwc": (n, h, w, k), "nhw": (n, h, w), "nchw": (n, k, h, w)}[layout]
        raw = self.add_input("input", dtype, raw_shape, batch)
        x = raw if dtype == np.float32 else self.node("Cast", [raw], dtype=np.float32, to=proto.FLOAT)
        if layout == "nhwc":
            x = self.node("Transpose", [x], shape=(n, k, h, w), perm=[0, 3, 1, 2])
        elif layout == "nhw":
            x = self.node("Unsqueeze", [x, self.ints([1])], shape=(n, 1, h, w))
        if means is not None and any(means):
            x = self.node("Sub", [x, self.const(np.asarray(means, np.float32).reshape(1, k, 1, 1), hint="mean")])
        if dtype == np.uint8:
            x = self.node("Div", [x, self.scalar(256)])
        return x

    def scalar(self, value):
        """A float32 scalar constant."""
        return self.const(np.float32(value), np.float32, "s")

    # -- output --------------------------------------------------------------------------------
    def serialize_graph(self, name, outputs, symbolic_batch):
        """The GraphProto bytes; ``outputs`` is ``[(graph output name, value)]``."""
        outs = []
        for out_name, v in outputs:
            self._nodes.append(proto.node_proto("Identity", [v], [out_name], out_name))
            shape = list(self._shapes[v]) if v in self._shapes else None
            if shape and symbolic_batch and len(shape) > 0:
                shape[0] = symbolic_batch
            outs.append(proto.value_info_proto(out_name, proto.elem_type_of(self._dtypes.get(v, np.float32)),
                                               shape))
        return proto.graph_proto(name, self._nodes, self._inputs, outs, self._inits)
