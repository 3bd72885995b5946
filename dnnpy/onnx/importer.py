"""``dnnpy.onnx.import_model``: an ONNX model as a dnnpy net, its weights loaded.

    net = dnnpy.onnx.import_model("lenet.onnx")           # fc[10, relu[fc[84, ... input_tensor]]]
    scores = net(batch)                                     # (N, k, nr, nc): the graph's output

The graph must be what dlib's layers express; this version reads chains (every node reads
one tensor), residual blocks (the Add of two branches from one tensor, as dlib's tag and
add_prev layers) and concatenations of branches from one tensor (Concat over the channels, as
dlib's concat2..5), blocks within blocks included (the inner ones take other tag ids), of
(``layer_mapping.py``: one node as one layer): Conv (one group, no dilation, symmetric
padding), ConvTranspose (one group, no output padding), Gemm and MatMul (+ a constant Add: the
bias) as ``fc``, BatchNormalization as ``affine`` (its inference form), Relu, LeakyRelu, PRelu (one
slope), Elu, Gelu (erf), Sigmoid, Tanh, Clip (0 .. ceiling), Mish, Softmax (over the channels), MaxPool and
AveragePool (symmetric padding; an average excludes the padding, as dlib's), GlobalAveragePool,
GlobalMaxPool, Resize (bilinear, corners aligned: ``upsample`` or ``resize_to``), Flatten and
Reshape before an fc (dlib's fc flattens), Dropout and Identity (dropped).

Attention, as dlib's transformer layers: a sequence ``(N, T, D)`` is dlib's ``(N, 1, T, D)``;
MatMul by a constant over the last axis is ``linear``; the MatMul of two branches from one
tensor is ``multm_prev`` (tagged as an Add's branches are); Transpose within a sample is
``transpose`` and ``reshape_to`` (every order of the three axes is a few of them), Reshape
to 3 or 4 axes ``reshape_to``, Split and Slice ``slice``, Softmax over the last axis
``softmaxm``, a constant causal mask (Where, or an Add of 0 and -inf) ``tril_``, and an RMS
norm written out over each sample (``x / sqrt(mean(x**2) + eps)``) ``rms_norm``. The shape
computations exporters put in front of a Reshape (Shape, Gather, Unsqueeze, Concat, Constant)
are ignored when they feed only its shape.

Arithmetic with constants (Add, Sub, Mul, Div: ``gamma * x + beta`` per channel or per
element of a sample) is an ``affine`` (or joins the ``layer_norm`` of a LayerNormalization
over axis 1 before it); a zero Pad that only makes two branches' sizes meet at
an Add is dropped (dlib's ``add_prev`` pads so itself).

The input layer is ``input_tensor``: the net takes what the graph takes, float32 NCHW (or a
``(N, features)`` matrix as ``(N, features, 1, 1)``); for a sequence graph ``(N, T, D)`` it is
dlib's ``input<matrix<float>>`` (``input[float32]``): ``net(x)`` takes the ``(N, T, D)`` array
or a list of T x D matrices. ``input`` names another input layer
(``input_rgb_image_sized[150]``, or its bracket text) whose output the graph's input is, e.g.
for a model trained on what dlib's input layer makes of images. There is no loss layer unless ``loss``
names one (``"multiclass_log"``: ``loss_multiclass_log`` over the output, ...). Anything else
is refused with an ``onnx_import_error`` naming the file, the node, its op and why; nothing
half-built is returned. Needs the ``onnx`` package (``pip install 'dnnpy[onnx]'``); opsets 13
to 21.
"""

from __future__ import annotations

import importlib

import numpy as np

from .. import layers, loss as losses
from ..core import add_layer
from ..errors import SerializationError
from ..inputs import input as input_matrix, input_tensor
from ..layers import merge, rearrange
from ..serialization.files import read_source
from ..parsing import input_type_from_string
from ..templates import loss_template, skip_templates, tag_templates
from ..tensor import resizable_tensor
from .layer_mapping import (NodeLayers, dlib_axis, pointwise_layer_output, sample_dims, set_affine,
                            set_rms_gamma)

__all__ = ["import_model", "onnx_import_error", "OPSET_RANGE"]

OPSET_RANGE = (13, 21)
_ARITHMETIC = ("Add", "Sub", "Mul", "Div")     # of the tensor and a constant: an affine
_POINTWISE = {"Add", "Sub", "Mul", "Div", "Erf", "Tanh", "Sigmoid", "Exp", "Log", "Softplus",
              "Pow", "Sqrt", "Neg", "Abs", "Relu", "Reciprocal", "Max", "Min"}
_MAX_ACTIVATION_NODES = 12     # nodes of one activation written out (tanh-GELU has 8)
_MAX_FOLDS = 64          # rounds of shape inference and folding (one per dependent Pad, about)
_NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
               "Bernoulli", "Dropout"}


class onnx_import_error(ValueError):
    """An ONNX model dnnpy cannot read as a dlib net (the message says where and why)."""


def _onnx():
    """The ``onnx`` package (an optional extra, loaded on first use)."""
    try:
        return importlib.import_module("onnx")
    except ImportError as e:
        raise ImportError("dnnpy.onnx.import_model needs the onnx package: pip install 'dnnpy[onnx]'") from e


def import_model(source, *, loss=None, input=None, bn="affine"):
    """The dnnpy net an ONNX model (a path, a binary file object or the bytes) computes, with
    its weights: see the module's docstring for what is read. ``loss``: ``None`` (no loss
    layer: ``net(x)`` returns the graph's output) or a loss's name (``"multiclass_log"``,
    ``"loss_multiclass_log"``, ...) put on top. ``input``: the input layer (default
    ``input_tensor``; for a sequence graph, ``(N, T, D)``, dlib's ``input<matrix<float>>``),
    a type such as ``dnnpy.input_rgb_image_sized[150]`` or its bracket text; the graph's input
    is what that layer makes (its shape is checked). ``bn``: what a BatchNormalization
    becomes: ``"affine"`` (its inference form, dlib's choice for a trained net) or ``"bn"``
    (``bn_con`` with the graph's scale, bias, running mean and variance and epsilon, for
    further training; its running statistics go on as if averaged over a full window)."""
    if bn not in ("affine", "bn"):
        raise ValueError(f"import_model: bn must be 'affine' or 'bn', got {bn!r}")
    if isinstance(input, str):
        try:
            input = input_type_from_string(input)
        except ValueError as e:
            raise onnx_import_error(f"import_model: input={input!r}: {e}") from None
    onnx = _onnx()
    try:
        data, name = read_source(source, bytes_are_data=True)
    except SerializationError as e:
        raise onnx_import_error(str(e)) from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:      # protobuf's DecodeError and friends
        raise onnx_import_error(f"{name}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or not OPSET_RANGE[0] <= opset <= OPSET_RANGE[1]:
        raise onnx_import_error(f"{name}: opset {opset} is not supported (dnnpy reads opsets "
                                f"{OPSET_RANGE[0]} to {OPSET_RANGE[1]})")
    # shape inference and constant folding in turn: a folded Pad's pads give the shapes after
    # it, which let the next computed pads fold (torch's F.pad computes them from shapes)
    for _ in range(_MAX_FOLDS):
        try:
            model = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception as e:
            raise onnx_import_error(f"{name}: ONNX shape inference failed ({e})") from None
        importer = _Importer(model, name, onnx)
        if not importer.fold_into(model):
            break
    importer.bn = bn
    return importer.net(loss, input)


def _joined(steps, step):
    """``steps + [step]``, where a transpose after a transpose undoes it and a reshape_to
    after a reshape_to is one (or none, when the second undoes the first): a Transpose reads
    as reshapes and transposes (layer_mapping), which often meet the Reshape beside it."""
    last = steps[-1] if steps else None
    if last is None or last[0] != "layer":
        return steps + [step]
    if isinstance(step[1], layers.transpose_) and isinstance(last[1], layers.transpose_):
        return steps[:-1]
    if isinstance(step[1], layers.reshape_to_) and isinstance(last[1], layers.reshape_to_):
        before, to = last[3]["from"], step[3]["to"]
        return steps[:-1] + ([] if before == to else [("layer", layers.reshape_to_(*to), None,
                                                        {"from": before, "to": to})])
    return steps + [step]


def _add_operands_swap(sa, sb):
    """Whether an Add's operands, with steps ``sa`` and ``sb`` from their fork, trade places
    (an Add commutes): the second operand, the one tagged, should be the fork itself when a
    branch has no steps (dropped nodes, a Pad), else the longer branch (the first on ties)."""
    if not sa or not sb:
        return not sa and bool(sb)
    return len(sa) >= len(sb)


def _joined_all(steps, layer_steps):
    """``steps`` with the layers ``layer_steps`` (``(layer, setter, values)``) joined on."""
    for step in layer_steps:
        steps = _joined(steps, ("layer",) + step)
    return steps


class _Importer(NodeLayers):
    """The walk from the graph's input along its chain of nodes."""

    def __init__(self, model, name, onnx):
        self.bn = "affine"              # what a BatchNormalization becomes (import_model's bn)
        numpy_helper = onnx.numpy_helper
        self.helper = onnx.helper
        self.name, self.graph = name, model.graph
        if any(t.data_location == 1 for t in self.graph.initializer):     # EXTERNAL
            raise onnx_import_error(f"{name}: the weights are in external data files; load the model with "
                                    f"onnx.load(path) (which reads them) and pass onnx's bytes "
                                    f"(model.SerializeToString())")
        self.consts = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
        for node in self.graph.node:
            if node.op_type == "Constant" and node.attribute:
                a = node.attribute[0]
                if a.name == "value":
                    self.consts[node.output[0]] = numpy_helper.to_array(a.t)
            elif node.op_type == "Identity" and node.input[0] in self.consts:
                self.consts[node.output[0]] = self.consts[node.input[0]]     # a shared weight
        self.shapes = {}
        for v in list(self.graph.input) + list(self.graph.value_info) + list(self.graph.output):
            dims = v.type.tensor_type.shape.dim
            self.shapes[v.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
        self._fold_constants()

    def fold_into(self, model):
        """Replace the nodes whose outputs are all constants by initializers in ``model``;
        whether any node went."""
        numpy_helper = importlib.import_module("onnx.numpy_helper")
        graph = model.graph
        kept = [n for n in graph.node if not all(o in self.consts for o in n.output)]
        if len(kept) == len(graph.node):
            return False
        needed = {i for n in kept for i in n.input} | {o.name for o in graph.output}
        have = {t.name for t in graph.initializer}
        made = [numpy_helper.from_array(np.asarray(self.consts[o]), o) for n in graph.node
                if n not in kept for o in n.output if o in needed and o not in have]
        del graph.node[:]
        graph.node.extend(kept)
        graph.initializer.extend(made)
        return True

    def _fold_constants(self):
        """Evaluate the nodes whose inputs are all constants (and ``Shape`` of a tensor whose
        shape is known), in graph order, with onnx's reference runtime: exporters compute
        pads, shapes and scales so (torch's ``F.pad``: Constant, ConstantOfShape, Concat,
        Reshape, Slice, Transpose, Cast)."""
        evaluator = importlib.import_module("onnx.reference").ReferenceEvaluator
        # shapes with a dimension unknown (a dynamic batch), -1 there: a Gather or Slice of
        # their known dimensions is a constant (torch's attention scale: sqrt(Shape(q)[-1]))
        partial = {}
        for node in self.graph.node:
            if all(o in self.consts for o in node.output) or node.op_type in _NOT_FOLDED:
                continue
            inputs = [i for i in node.input if i]
            if node.op_type == "Shape":
                known = (self.consts[inputs[0]].shape if inputs and inputs[0] in self.consts
                         else self.shapes.get(inputs[0]) if inputs else None)
                if known:
                    a = self._attrs(node)
                    dims = np.array([-1 if d is None else d for d in known], np.int64)
                    dims = dims[a.get("start", 0):a.get("end", len(dims))]
                    (self.consts if (dims >= 0).all() else partial)[node.output[0]] = dims
                continue
            if node.op_type in ("Gather", "Slice") and inputs and inputs[0] in partial \
                    and all(i in self.consts for i in inputs[1:]):
                try:
                    (dims,) = evaluator(node).run(None, {inputs[0]: partial[inputs[0]],
                                                         **{i: self.consts[i] for i in inputs[1:]}})
                except Exception:    # noqa: BLE001 - not evaluable: left as it is
                    continue
                dims = np.asarray(dims)
                (self.consts if (dims >= 0).all() else partial)[node.output[0]] = dims
                continue
            if not inputs or not all(i in self.consts for i in inputs):
                continue
            try:
                values = evaluator(node).run(None, {i: self.consts[i] for i in inputs})
            except Exception:        # noqa: BLE001 - an op the reference runtime lacks: left as it is
                continue
            for name, value in zip(node.output, values):
                self.consts[name] = np.asarray(value)

    def fail(self, node, why):
        return onnx_import_error(f"{self.name}: node {node.name or '(unnamed)'} ({node.op_type}): {why}")

    def _input(self):
        inputs = [v for v in self.graph.input if v.name not in self.consts]
        if len(inputs) != 1:
            raise onnx_import_error(f"{self.name}: the graph has {len(inputs)} inputs "
                                    f"({[v.name for v in inputs]}); dnnpy reads graphs with one")
        v = inputs[0]
        shape = self.shapes[v.name]
        if len(shape) not in (2, 3, 4) or any(d is None for d in shape[1:]):
            raise onnx_import_error(f"{self.name}: the input {v.name!r} has shape {shape}: dnnpy needs "
                                    f"(N, C, H, W), (N, T, D) or (N, features) with every dimension "
                                    f"but N fixed")
        if v.type.tensor_type.elem_type != 1:          # FLOAT
            raise onnx_import_error(f"{self.name}: the input {v.name!r} is not float32")
        return v.name, shape

    def net(self, loss, input_type):
        """The net: ``input_type`` (None: ``input_tensor``, or for a sequence graph dlib's
        ``input<matrix<float>>``, whose objects are T x D matrices), the layers, the loss."""
        self.input_name, shape = self._input()
        if input_type is None:
            input_type = input_matrix[np.float32] if len(shape) == 3 else input_tensor
        self.input_type = input_type
        self.producer, self.order, self._ancestor_sets, self.readers = {}, {}, {}, {}
        for i, node in enumerate(self.graph.node):
            for o in node.output:
                self.producer[o] = node
                self.order[o] = i
            for t in node.input:
                self.readers.setdefault(t, []).append(node)
        outputs = [o.name for o in self.graph.output]
        if len(outputs) != 1:
            raise onnx_import_error(f"{self.name}: the graph has {len(outputs)} outputs ({outputs}); "
                                    f"dnnpy reads graphs with one")
        return self._build(self._steps(outputs[0]), loss)

    def _data_inputs(self, node):
        if node.op_type in ("Reshape", "Resize"):      # the rest is its target shape or scale
            return list(node.input[:1])
        return [i for i in node.input if i and i not in self.consts]

    def _steps(self, name, stop=None, live=frozenset()):
        """The steps that make tensor ``name`` from tensor ``stop`` (default: the graph's
        input): ``("layer", object, setter, values)``, ``("tag", k)``, ``("skip", k)``,
        ``("merge", "add_prev" or "multm_prev", k)``, ``("concat", ks)``. ``live``: the tag
        ids the enclosing blocks use, which the blocks inside avoid (dlib finds the nearest
        ``tagN`` below a layer)."""
        if name == (self.input_name if stop is None else stop):
            return []
        node = self.producer.get(name)
        if node is None or name == self.input_name:
            raise onnx_import_error(f"{self.name}: the tensor {name!r} is neither made by a node nor "
                                    f"the graph's input")
        inputs = self._data_inputs(node)
        if node.op_type in ("Mul", "Div") and len(inputs) == 2:
            found = self._rms_norm(node)
            if found is not None:          # x / sqrt(mean(x**2) + eps), written out
                source, step = found
                return self._steps(source, stop, live) + [("layer",) + step]
        if node.op_type in _POINTWISE:
            found = self._activation(name)
            if found is not None:          # an activation written as several pointwise nodes
                source, layer = found
                return self._steps(source, stop, live) + [("layer", layer, None, None)]
        if node.op_type in ("Add", "MatMul") and len(inputs) == 2:
            merge = "add_prev" if node.op_type == "Add" else "multm_prev"
            return self._junction(node, *inputs, merge=merge, stop=stop, live=live)
        if node.op_type == "Concat" and len(inputs) > 1:
            return self._concat(node, inputs, stop=stop, live=live)
        if len(inputs) != 1:
            raise self.fail(node, f"reads {len(inputs)} tensors {inputs}: dnnpy reads chains of "
                                  f"one-input nodes, the Add or MatMul of two branches and Concat")
        return self._append(self._steps(inputs[0], stop, live), node, name)

    def _rms_norm(self, node):
        """``(x, step)`` when ``node`` is ``x * 1/sqrt(mean(x**2) + eps)`` (the reciprocal as
        Reciprocal or Div(1, .)) or ``x / sqrt(mean(x**2) + eps)``, the mean over all of a
        sample's values and every value in between read only here: dlib's ``rms_norm`` (its
        gamma 1; a scale after it joins it). None otherwise."""
        for x, r in (node.input[:2], node.input[1::-1]):
            sqrt = self._rms_denominator(node, x, r)
            found = sqrt and self._mean_square_plus_eps(sqrt.input[0], x)
            if found:
                mean, eps = found
                self._check_rms_axes(mean, x)
                k = sample_dims(self.shapes[x])[0]
                return x, (layers.rms_norm_(eps), set_rms_gamma, {"gamma": np.ones(k)})
        return None

    def _read_once(self, t, *ops):
        """The node making ``t`` when it is one of ``ops`` and ``t`` is read only once."""
        n = self.producer.get(t)
        return n if n is not None and n.op_type in ops and len(self.readers.get(t, ())) == 1 else None

    def _scalar(self, node):
        """The value of ``node``'s one scalar constant input, or None."""
        c = [self.consts[i] for i in node.input if i in self.consts]
        return float(np.asarray(c[0]).reshape(-1)[0]) if len(c) == 1 and np.size(c[0]) == 1 else None

    def _rms_denominator(self, node, x, r):
        """The Sqrt that ``x`` is divided by: ``node`` is ``Div(x, r = Sqrt)``, or ``Mul(x, r)``
        with ``r`` a Reciprocal or ``Div(1, .)`` of a Sqrt; else None."""
        if node.op_type == "Div":
            return self._read_once(r, "Sqrt") if x == node.input[0] else None
        inv = self._read_once(r, "Reciprocal", "Div")
        if inv is None or inv.op_type == "Div" and (inv.input[0] not in self.consts or self._scalar(inv) != 1):
            return None
        return self._read_once(inv.input[-1], "Sqrt")

    def _mean_square_plus_eps(self, t, x):
        """``(ReduceMean node, eps)`` when ``t`` is ``mean(x**2) + eps`` (the square as Pow(x, 2)
        or Mul(x, x)); else None."""
        add = self._read_once(t, "Add")
        eps = add and self._scalar(add)
        mean = add and self._read_once(next(i for i in add.input if i not in self.consts), "ReduceMean")
        square = mean and self._read_once(mean.input[0], "Pow", "Mul")
        if eps is None or not square:
            return None
        squares_x = (square.op_type == "Pow" and square.input[0] == x and self._scalar(square) == 2
                     or square.op_type == "Mul" and list(square.input) == [x, x])
        return (mean, eps) if squares_x else None

    def _check_rms_axes(self, mean, x):
        """dlib's rms_norm takes the mean over every value of a sample: refuse other axes."""
        rank = len(self.shapes.get(x, ()))
        a = self._attrs(mean)
        axes = a.get("axes") if len(mean.input) < 2 else self.consts.get(mean.input[1])
        if rank < 2 or not a.get("keepdims", 1):
            raise self.fail(mean, f"an RMS norm of a rank-{rank} tensor, keepdims "
                                  f"{a.get('keepdims', 1)}: dlib's rms_norm keeps each sample's shape")
        if axes is None or sorted(int(v) % rank for v in np.reshape(axes, -1)) != list(range(1, rank)):
            raise self.fail(mean, f"an RMS norm over axes {axes} of a rank-{rank} tensor: dlib's "
                                  f"rms_norm takes the mean over all of a sample's values")

    def _append(self, steps, node, output):
        """``steps`` with one-input ``node``'s step added: its layer; for an Add of a constant
        after a MatMul, that fc's bias; for arithmetic with constants (Add, Sub, Mul, Div:
        ``gamma * x + beta``), an ``affine``, merged into an affine just before it."""
        last = steps[-1] if steps else None
        if node.op_type == "Add" and last is not None and last[0] == "layer" and last[3] is not None \
                and last[3].get("bias_of") == "MatMul":       # the bias of the fc or linear before it
            c = np.asarray(self.consts[next(i for i in node.input if i in self.consts)])
            if c.size == last[1].get_num_outputs() and c.shape[-1:] == (c.size,):    # one per output
                last[3]["bias"] = c.reshape(-1)
                last[3]["bias_of"] = None
                return steps
        shape = self.shapes.get(self._data_inputs(node)[0], ())
        if node.op_type in _ARITHMETIC:
            mask = self._is_mask(node) if node.op_type == "Add" else None
            if mask is not None:
                return steps + [("layer",) + self._tril(node, *mask, shape)]
            gamma, beta, mode = self._affine_terms(node, shape)
            mergeable = last is not None and last[0] == "layer" and (
                isinstance(last[1], layers.affine_) and last[1].get_mode() == mode
                or isinstance(last[1], layers.layer_norm_) and mode == layers.CONV_MODE)
            if mergeable:                                     # y = g2 (g1 x + b1) + b2
                last[3]["gamma"], last[3]["beta"] = gamma * last[3]["gamma"], gamma * last[3]["beta"] + beta
                return steps
            if last is not None and last[0] == "layer" and isinstance(last[1], layers.rms_norm_) \
                    and mode == layers.CONV_MODE and not np.any(beta):
                last[3]["gamma"] = gamma * last[3]["gamma"]     # rms_norm's gamma
                return steps
            return steps + [("layer", layers.affine_(mode), set_affine, {"gamma": gamma, "beta": beta})]
        if node.op_type == "Pad":
            self._check_add_padding(node)
            return steps                 # dlib's add_prev zero-pads the smaller input itself
        if node.op_type == "Transpose":      # the way that joins best with the steps before
            ways = [_joined_all(steps, way) for way in self.transpose_ways(node, shape)]
            # (of equal ones, the way ending with a reshape_to: a Reshape after it joins it)
            return min(ways, key=lambda w: (len(w), not (w and isinstance(w[-1][1], layers.reshape_to_))))
        return _joined_all(steps, self._layers(node, shape, output))

    def _is_mask(self, node):
        """For an Add of a constant of 0s and -infs (an attention mask): (the -inf places, -inf)."""
        c = next((np.asarray(self.consts[i]) for i in node.input if i in self.consts), None)
        if c is None or c.dtype.kind != "f" or not np.isneginf(c).any() or not np.all(np.isneginf(c) | (c == 0)):
            return None
        return np.isneginf(c), np.array(-np.inf)

    def _check_add_padding(self, node):
        """A Pad that dnnpy drops: zeros after the ends of the channel and spatial axes,
        feeding only an Add of two branches (dlib's add_prev adds tensors of different
        sizes as if the smaller were zero-padded so; exporters write the Pad)."""
        a = self._attrs(node)
        mode = a.get("mode", b"constant")
        pads = self.consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else a.get("pads")
        value = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else 0
        users = [n for n in self.graph.node if node.output[0] in n.input]
        pads = None if pads is None else [int(p) for p in np.asarray(pads).reshape(-1)]
        if (mode not in (b"constant", "constant") or pads is None or len(pads) != 8 or any(pads[:4])
                or pads[4] or float(np.asarray(value).reshape(-1)[0] if np.size(value) else 0) != 0
                or len(users) != 1 or users[0].op_type != "Add" or len(self._data_inputs(users[0])) != 2):
            raise self.fail(node, f"pads {pads} (mode {mode!r}): dnnpy reads only the zeros after the "
                                  f"channels, rows or columns that make two branches' sizes meet at "
                                  f"an Add (dlib's add_prev pads so itself)")

    def _activation(self, end):
        """``(x, layer)`` when tensor ``end`` is a pointwise function of one tensor ``x``
        through several nodes (exporters write GELU as Div, Erf, Add, Mul, Mul and SiLU as
        Mul(x, Sigmoid(x))) that equals one of dlib's activations: the nodes back from
        ``end`` that are pointwise with scalar constants, read nowhere else, evaluated with
        onnx's reference runtime on values from -8 to 8 and compared with dnnpy's layers
        (within 1e-5 of the value's scale). None otherwise."""
        nodes, sources, todo = {}, set(), [end]
        while todo:
            t = todo.pop()
            node = self.producer.get(t)
            if node is None or node.op_type not in _POINTWISE or t == self.input_name:
                sources.add(t)
                continue
            if id(node) in nodes:
                continue
            if any(np.size(self.consts[i]) != 1 for i in node.input if i in self.consts):
                sources.add(t)               # a per-channel constant: an affine (or a bias) before
                continue
            nodes[id(node)] = node
            if len(nodes) > _MAX_ACTIVATION_NODES:
                return None
            todo.extend(self._data_inputs(node))
        if len(nodes) < 2 or len(sources) != 1:
            return None
        inside = {o for n in nodes.values() for o in n.output} - {end}
        if any(i in inside for n in self.graph.node if id(n) not in nodes for i in n.input) or \
                any(o.name in inside for o in self.graph.output):
            return None                      # an intermediate value read elsewhere
        (source,) = sources
        probe = np.linspace(-8, 8, 1601, dtype=np.float32)
        values = {source: probe}
        evaluator = importlib.import_module("onnx.reference").ReferenceEvaluator
        for node in self.graph.node:         # graph order: every input computed before it is read
            if id(node) in nodes:
                feed = {i: values[i] if i in values else self.consts[i] for i in node.input if i}
                try:
                    out = evaluator(node).run(None, feed)
                except Exception:            # noqa: BLE001 - not evaluable: not recognised
                    return None
                values.update(zip(node.output, (np.asarray(v, np.float32) for v in out)))
        got = values.get(end)
        if got is None or got.shape != probe.shape:
            return None
        for make in (layers.gelu_, layers.silu_, layers.mish_, layers.sig_, layers.htan_, layers.relu_):
            want = pointwise_layer_output(make(), probe)
            if np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max())):
                return source, make()
        return None

    def _ancestors(self, name):
        """Every tensor ``name`` is computed from (``name`` too), through every data input."""
        if name not in self._ancestor_sets:
            out, todo = set(), [name]
            while todo:
                t = todo.pop()
                if t in out:
                    continue
                out.add(t)
                node = self.producer.get(t)
                if node is not None and t != self.input_name:
                    todo.extend(self._data_inputs(node))
            self._ancestor_sets[name] = out
        return self._ancestor_sets[name]

    def _fork(self, names, stop):
        """The latest tensor that every path from each of ``names`` back to ``stop`` (or the
        graph's input) passes through: where the branches that meet at a junction start."""
        common = set.intersection(*(self._ancestors(n) for n in names))
        if stop is not None:                  # within the enclosing branch: computed from stop
            common = {t for t in common if stop in self._ancestors(t)}
        for t in sorted(common, key=lambda t: self.order.get(t, -1), reverse=True):
            if all(self._dominates(t, n) for n in names):
                return t
        return None

    def _dominates(self, fork, name):
        seen, todo = set(), [name]
        while todo:
            t = todo.pop()
            if t == fork or t in seen:
                continue
            seen.add(t)
            node = self.producer.get(t)
            if node is None or t == self.input_name:
                return False
            todo.extend(self._data_inputs(node))
        return True

    @staticmethod
    def _free(used, preferred):
        """A tag id (1 to 10, dlib's tagN templates) not in ``used``, ``preferred`` if free."""
        for k in [preferred] + list(range(1, 11)):
            if k not in used:
                return k
        raise onnx_import_error("the graph nests its branches deeper than dlib's ten tags can mark")

    def _junction(self, node, a, b, merge, stop=None, live=frozenset()):
        """``a + b`` (``merge`` "add_prev") or ``a @ b`` ("multm_prev": dlib multiplies its
        input by the tagged tensor) where both are computed from one tensor f (either may be
        f itself or hold blocks of its own): dlib's ``merge1<a's branch<tag1<f>>>`` when b is
        f, else ``merge2<a's branch<skip1<tag2<b's branch<tag1<f>>>>>>`` (other ids inside
        other blocks). An Add puts the longer branch first, or f last."""
        ranks = {len(self.shapes.get(t, ())) for t in (a, b)}
        if merge == "multm_prev" and not (len(ranks) == 1 and ranks <= {3, 4}):
            raise self.fail(node, f"multiplies tensors of ranks {sorted(ranks)}: dlib's multm_prev "
                                  f"multiplies the planes of two (N, T, D) or (N, k, M, L) tensors")
        fork = self._fork([a, b], stop)
        if fork is None:
            raise self.fail(node, f"joins {a!r} and {b!r}, which do not both come from one tensor")
        t1 = self._free(live, 1)
        t2 = self._free(live | {t1}, 2)
        sa, sb = (self._steps(x, fork, live | {t1}) for x in (a, b))
        if merge == "add_prev" and _add_operands_swap(sa, sb):
            a, b, sa, sb = b, a, sb, sa
        steps = self._steps(fork, stop, live) + [("tag", t1)]
        if not sb:
            return steps + sa + [("merge", merge, t1)]
        sa = self._steps(a, fork, live | {t2})
        return steps + sb + [("tag", t2), ("skip", t1)] + sa + [("merge", merge, t2)]

    def _concat(self, node, inputs, stop=None, live=frozenset()):
        """The channels of several branches from one tensor f, in order: dlib's
        ``concatN<tag4..., tag(3+N)<branch_N<skip3<... tag4<branch_1<tag3<f>>>>>>>`` (other
        ids inside other blocks)."""
        axis = self._attrs(node).get("axis")
        rank = len(self.shapes.get(inputs[0], ())) or 4
        if axis is None or dlib_axis(axis, rank) != 1:
            raise self.fail(node, f"axis {axis} of a rank-{rank} tensor: dlib's concat_ joins "
                                  f"channels (dlib's k)")
        if len(node.input) != len(inputs):
            raise self.fail(node, "concatenates a constant: dlib's concat_ joins layers' outputs")
        if not 2 <= len(inputs) <= 5:
            raise self.fail(node, f"{len(inputs)} inputs: dlib's concat2..concat5 join 2 to 5")
        fork = self._fork(inputs, stop)
        if fork is None:
            raise self.fail(node, f"joins {inputs}, which do not all come from one tensor")
        t0 = self._free(live, 3)
        used, tags = live | {t0}, []
        steps = self._steps(fork, stop, live) + [("tag", t0)]
        for i, name in enumerate(inputs):
            steps += ([("skip", t0)] if i else []) + self._steps(name, fork, used)
            tags.append(self._free(used, 4 + i))
            used = used | {tags[-1]}
            steps.append(("tag", tags[-1]))
        return steps + [("concat", tuple(tags))]

    # -- the net ------------------------------------------------------------------------------
    def _build(self, steps, loss):
        net_type, made = self.input_type, []
        for step in steps:
            kind = step[0]
            if kind == "layer" and isinstance(step[1], layers.fc_) and step[3]["bias"] is None:
                step = ("layer", layers.fc_(step[1].get_num_outputs(), layers.FC_NO_BIAS)) + step[2:]
            if kind == "layer" and isinstance(step[1], layers.linear_) and step[3]["bias"] is None:
                step = ("layer", layers.linear_(step[1].get_num_outputs(), layers.LINEAR_NO_BIAS)) + step[2:]
            if kind == "layer":
                net_type = add_layer[step[1], net_type]
                made.append(step)
            elif kind == "tag":
                net_type = tag_templates[step[1] - 1][net_type]
            elif kind == "skip":
                net_type = skip_templates[step[1] - 1][net_type]
            elif kind == "concat":
                tags = tuple(tag_templates[t - 1] for t in step[1])
                net_type = getattr(rearrange, f"concat{len(tags)}")[(*tags, net_type)]
                made.append(("layer", None, None, None))
            else:
                net_type = getattr(merge, f"{step[1]}{step[2]}")[net_type]
                made.append(("layer", None, None, None))
        if loss is not None:
            key = loss if str(loss).startswith("loss_") else f"loss_{loss}"
            template = getattr(losses, key, None)
            if not isinstance(template, loss_template):
                raise onnx_import_error(f"{self.name}: no loss named {loss!r}")
            net_type = template[net_type]
        if not made and net_type is self.input_type:
            raise onnx_import_error(f"{self.name}: the graph computes nothing a dlib layer holds "
                                    f"(its output is its input)")
        net = net_type()
        # set the layers up with one sample, then put the graph's weights in
        shape = self.shapes[self.input_name]
        sample = resizable_tensor(1, *sample_dims(shape))
        sample.host_write_only()[...] = 0
        sized = type(net.input_layer())                     # an input of fixed image size
        if getattr(sized, "NR", None) and tuple(sample.shape[2:]) != (sized.NR, sized.NC):
            raise onnx_import_error(f"{self.name}: the graph's input is {tuple(shape)}, but "
                                    f"{self.input_type!r} makes {sized.NR} x {sized.NC} images")
        node = net.subnet_node() if loss is not None else net
        node.forward(sample)
        net.input_node().set_sample_expansion_factor(1)    # as to_tensor would: dlib's files hold it
        computational = [n for n in reversed(node.layers()) if isinstance(n, add_layer)]
        for n, (_, obj, setter, values) in zip(computational, made):
            if setter is not None:
                try:
                    setter(n.layer_details(), values)
                except ValueError as e:
                    raise onnx_import_error(f"{self.name}: {type(obj).__name__}: {e}") from None
        return net
