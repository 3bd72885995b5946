"""``dnnpy.onnx.export``: a dnnpy (or dlib) net as an ONNX model, written with our own
protobuf writer (``proto.py``; no dependency beyond numpy).

The walk goes from the input layer up through ``net_layers(net)`` (dlib's ``layer<i>``
order, ``repeat`` unrolled). Each computational layer converts itself: its
``to_onnx(self, g, x)`` method (next to its forward, in ``dnnpy/layers``) adds nodes to the
``graph_builder`` ``g`` and returns its output value. Tags and skips add no nodes: a tag
names the value below it, a skip continues from the value of the tag it reads, merge layers
ask ``g.tagged(tag)``. The loss layer's ``to_onnx(g, x, outputs)`` picks the graph outputs
(its scores, and for some losses labels or probabilities computed in the graph). The input
layer's ``to_onnx(g, shape, batch)`` puts its preprocessing (mean subtraction, /256) in the
graph when ``input_mode="input_layer"``.

Anything that cannot be exported faithfully raises ``onnx_export_error`` naming the layer;
nothing is written unless the whole model was built (``dnnpy.atomic.atomic_write``).
"""

from __future__ import annotations

import json
import numbers
import os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as metadata_version

import numpy as np

from ..atomic import atomic_write
from ..core import add_layer, add_loss_layer, add_skip_layer, add_tag_layer, layer, net_layers
from . import proto
from .graph import graph_builder, onnx_export_error

__all__ = ["export", "export_bytes", "OPSETS"]

# opset -> the lowest IR version that carries it (ONNX's versioning table)
OPSETS = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10}
_OUTPUTS = ("scores", "labels", "probabilities")


def _check_options(opset, input_mode, outputs, dropout, bn, batch):
    if isinstance(opset, bool) or opset not in OPSETS:
        raise onnx_export_error(f"dnnpy.onnx.export: opset must be one of {sorted(OPSETS)}, got {opset!r}")
    if input_mode not in ("tensor", "input_layer"):
        raise onnx_export_error(f"dnnpy.onnx.export: input_mode must be 'tensor' or 'input_layer', "
                                f"got {input_mode!r}")
    outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    bad = [o for o in outputs if o not in _OUTPUTS]
    if bad or not outputs or len(set(outputs)) != len(outputs):
        raise onnx_export_error(f"dnnpy.onnx.export: outputs must be distinct names among {_OUTPUTS}, "
                                f"got {outputs!r}")
    if dropout not in ("error", "multiply"):
        raise onnx_export_error(f"dnnpy.onnx.export: dropout must be 'error' or 'multiply', got {dropout!r}")
    if bn not in ("error", "running_stats"):
        raise onnx_export_error(f"dnnpy.onnx.export: bn must be 'error' or 'running_stats', got {bn!r}")
    if batch is not None and (not isinstance(batch, str) or not batch.isidentifier()):
        raise onnx_export_error(f"dnnpy.onnx.export: batch must be a dimension name such as 'N' or None "
                                f"(fixed batch size), got {batch!r}")
    return outputs


def _tensor_shape(input_shape, input_layer_obj):
    """``(N, k, nr, nc)`` of the tensor the input layer makes; N defaults to 1."""
    if input_shape is None:
        fixed = getattr(input_layer_obj, "onnx_tensor_shape", None)
        input_shape = fixed() if fixed is not None else None
        if input_shape is None:
            raise onnx_export_error(
                f"dnnpy.onnx.export: input_shape is required for a net whose input layer is "
                f"{input_layer_obj!r}: give the shape of the tensor it makes, (k, nr, nc) or "
                f"(N, k, nr, nc) (e.g. (3, 150, 150) for 150x150 RGB images)")
    shape = tuple(input_shape)
    if len(shape) == 3:
        shape = (1,) + shape
    if len(shape) != 4 or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d > 0
                                  for d in shape):
        raise onnx_export_error(f"dnnpy.onnx.export: input_shape must be 3 or 4 positive integers "
                                f"((k, nr, nc) or (N, k, nr, nc)), got {input_shape!r}")
    return tuple(int(d) for d in shape)


def _check_set_up(layers):
    for i, node in enumerate(layers):
        if isinstance(node, add_layer) and not node.wrapper_state().setup_called:
            raise onnx_export_error(
                f"dnnpy.onnx.export: layer<{i}> ({type(node.layer_details()).__name__}) has never run, so "
                f"its parameters are not set up: run the net once (net(batch) or forward) or load "
                f"trained weights before exporting")


def _label(i, obj):
    return f"layer<{i}> ({type(obj).__name__})"


def export_bytes(net, input_shape=None, *, opset=17, input_mode="tensor", outputs="scores",
                 dropout="error", bn="error", batch="N"):
    """The ONNX model of ``net`` as bytes (the arguments are ``export``'s)."""
    outputs = _check_options(opset, input_mode, outputs, dropout, bn, batch)
    layers = net_layers(net)
    if not layers or isinstance(layers[-1], (add_layer, add_loss_layer)):
        raise onnx_export_error(f"dnnpy.onnx.export: expected a dnnpy net, got {type(net).__name__}")
    _check_set_up(layers)
    inp = layers[-1]
    shape = _tensor_shape(input_shape, inp)
    g = graph_builder(opset, {"dropout": dropout, "bn": bn, "outputs": outputs})
    values = {}

    g.converting(_label(len(layers) - 1, inp) + " (the input layer)", "n")
    if input_mode == "tensor":
        x = g.add_input("input", np.float32, shape, batch)
    else:
        convert = getattr(inp, "to_onnx", None)
        if convert is None:
            g.refuse("it has no in-graph preprocessing (to_onnx); export with input_mode='tensor' "
                     "and feed the tensor its to_tensor makes")
        x = convert(g, shape, batch)

    def lookup_from(node):
        def lookup(tag):
            try:
                found = layer(node.subnet_node(), tag)
            except ValueError as e:
                g.refuse(str(e))
            if id(found) not in values:
                g.refuse(f"the layer {tag!r} refers to is not part of the exported graph")
            return values[id(found)]
        return lookup

    graph_outputs = None
    for i in range(len(layers) - 2, -1, -1):
        node = layers[i]
        if isinstance(node, add_tag_layer):
            values[id(node)] = x
            continue
        if isinstance(node, add_skip_layer):
            found = node.tagged_node()
            if id(found) not in values:
                raise onnx_export_error(f"dnnpy.onnx.export: {_label(i, node)}: the layer it reads "
                                        f"is not part of the exported graph")
            x = values[id(found)]
            values[id(node)] = x
            continue
        if isinstance(node, add_loss_layer):
            loss = node.loss_details()
            g.converting(_label(i, loss), f"l{i}", lookup_from(node))
            convert = getattr(loss, "to_onnx", None)
            if convert is None:
                g.refuse("it has no ONNX converter (to_onnx)")
            graph_outputs = convert(g, x, outputs)
            break
        if not isinstance(node, add_layer):
            raise onnx_export_error(f"dnnpy.onnx.export: {_label(i, node)} is not a layer the exporter "
                                    f"knows (expected computational layers, tags, skips and a loss)")
        details = node.layer_details()
        g.converting(_label(i, details), f"l{i}", lookup_from(node))
        convert = getattr(details, "to_onnx", None)
        if convert is None:
            g.refuse("it has no ONNX converter (a to_onnx(g, x) method; see docs/onnx.md for how a "
                     "custom layer adds one)")
        x = convert(g, x)
        values[id(node)] = x
    if graph_outputs is None:
        if outputs != ("scores",):
            raise onnx_export_error(f"dnnpy.onnx.export: outputs={outputs!r} needs a loss layer at the top; "
                                    f"this net has none (its output is exported as 'scores')")
        graph_outputs = [("scores", x)]
    g.converting("export", "")
    graph = g.serialize_graph("dnnpy", graph_outputs, batch)
    top = layers[0]
    meta = {"dnnpy.net_type": repr(getattr(net, "net_type", type(net).__name__)),
            "dnnpy.input_layer": repr(inp),
            "dnnpy.input_mode": input_mode,
            "dnnpy.input_shape": json.dumps(list(shape)),
            "dnnpy.outputs": json.dumps([name for name, _ in graph_outputs])}
    if isinstance(top, add_loss_layer):
        meta["dnnpy.loss"] = type(top.loss_details()).__name__
    return proto.model_proto(graph, opset, OPSETS[opset], "dnnpy", _version(), meta)


def _version():
    # dnnpy/__init__.py imports this package, so its version is read from the metadata
    try:
        return metadata_version("dnnpy")
    except PackageNotFoundError:   # not installed: no version written
        return ""


def export(net, file, input_shape=None, *, opset=17, input_mode="tensor", outputs="scores",
           dropout="error", bn="error", batch="N"):
    """Write ``net`` as an ONNX model (opset 17 by default, 17..21) to ``file`` (a path,
    written atomically: no file appears unless the export succeeds; or a binary stream).

    ``input_shape``: the ``(k, nr, nc)`` or ``(N, k, nr, nc)`` of the tensor the input layer
    makes (optional for inputs of a fixed size). The spatial size is fixed in the graph;
    the batch dimension is symbolic (named ``batch``; ``batch=None`` fixes it to N).

    ``input_mode``: ``"tensor"`` (the graph input is that tensor) or ``"input_layer"`` (the
    graph input is what the input layer takes, e.g. uint8 NHWC RGB images for
    ``input_rgb_image``, and its preprocessing runs in the graph).

    ``outputs``: names among ``"scores"`` (the subnet's output, what the loss reads),
    ``"labels"`` (the loss's ``to_label`` where it is a tensor op: ArgMax for the multiclass
    losses) and ``"probabilities"`` (Softmax / Sigmoid where the loss has them).

    ``dropout="multiply"`` exports dropout as its expectation (``Mul(1 - rate)``, as
    ``inference_copy`` does); ``bn="running_stats"`` exports ``bn_`` with its running
    statistics (what dnnpy computes for a batch of ONE sample; with more it uses the batch's
    statistics). By default both refuse: convert with ``dnnpy.inference_copy(net)`` first.

    Raises ``onnx_export_error`` (a ValueError) naming the layer that cannot be exported."""
    data = export_bytes(net, input_shape, opset=opset, input_mode=input_mode, outputs=outputs,
                        dropout=dropout, bn=bn, batch=batch)
    if isinstance(file, (str, os.PathLike)):
        atomic_write(os.fspath(file), data)
    elif hasattr(file, "write"):
        file.write(data)
    else:
        raise TypeError(f"dnnpy.onnx.export: file must be a path or a binary stream, got {type(file).__name__}")
    return data
