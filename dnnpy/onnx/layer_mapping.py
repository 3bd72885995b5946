"""One ONNX node as one dlib layer (``dnnpy.onnx.import_model``'s per-node half; the graph
walk, blocks and tags are ``importer.py``'s): which layer an op becomes, with its settings and
the values to put in once the net is set up, or the ``onnx_import_error`` that says why not.

``NodeLayers`` is mixed into the importer, which provides ``consts`` (the constant tensors),
``shapes`` (the inferred ones), ``helper`` (onnx's), ``bn`` (what a BatchNormalization
becomes) and ``fail(node, why)``. A step is ``(layer object, setter, values)``; the setter
writes the values into the layer after its setup.
"""

from __future__ import annotations

import numpy as np

from .. import layers
from ..core import add_layer
from ..inputs import input_tensor

__all__ = ["NodeLayers", "pointwise_layer_output", "sample_dims", "set_affine", "set_rms_gamma"]

_DROPPED = {"Dropout", "Identity"}


def sample_dims(shape):
    """dlib's ``(k, nr, nc)`` of one sample of a graph tensor of ``shape`` (batch first): a
    matrix ``(N, C)`` is ``(C, 1, 1)`` (fc's output), a sequence ``(N, T, D)`` is ``(1, T,
    D)`` (dlib's transformer layout: linear, softmaxm and multm_prev act on the last axes),
    ``(N, C, H, W)`` is ``(C, H, W)``."""
    rest = tuple(shape[1:])
    if len(rest) == 1:
        return rest + (1, 1)
    if len(rest) == 2:
        return (1,) + rest
    if len(rest) == 3:
        return rest
    raise ValueError(f"a rank-{len(shape)} tensor: dlib's tensors have up to 3 axes per sample")


def dlib_axis(axis, rank):
    """The axis of dlib's (N, k, nr, nc) that ONNX ``axis`` of a rank-``rank`` tensor is."""
    axis %= rank
    return {2: (0, 1), 3: (0, 2, 3), 4: (0, 1, 2, 3)}[rank][axis]


# dlib's layers that reorder a sample (k, nr, nc): transpose_ swaps nr and nc; a reshape_to
# reads a sample in memory order. Every reordering of the three axes is some of both, in one
# or two ways (the output's axes as the input's -> ways; a way's steps: "T" a transpose_, a
# tuple a reshape_to to those of the input's axes, each a product of them). Of two ways, one
# starts with a reshape (which joins a Reshape before it: a head split), one ends with one
# (which joins a Reshape after it: the heads joined again).
_PERMUTATIONS = {
    (0, 1, 2): [[]],
    (0, 2, 1): [["T"]],
    (1, 0, 2): [[((), (0,), (1, 2)), "T", ((1,), (2,), (0,)), "T"],
                ["T", ((), (0, 2), (1,)), "T", ((1,), (0,), (2,))]],
    (1, 2, 0): [[((), (0,), (1, 2)), "T", ((1,), (2,), (0,))]],
    (2, 0, 1): [[((), (0, 1), (2,)), "T", ((2,), (0,), (1,))]],
    (2, 1, 0): [[((), (0, 1), (2,)), "T", ((2,), (0,), (1,)), "T"],
                ["T", ((), (0,), (2, 1)), "T", ((2,), (1,), (0,))]],
}


class NodeLayers:
    """The per-node mapping (see the module's docstring)."""

    def _affine_terms(self, node, shape):
        """``(gamma, beta, mode)`` of an Add, Sub, Mul or Div of the tensor and a constant
        (``y = gamma * x + beta``, float64): one value per channel (CONV_MODE) when the
        constant is a scalar or holds one value per channel, per (channel, row, column)
        (FC_MODE) when it holds one per element of a sample."""
        op = node.op_type
        data = self._data_inputs(node)[0]
        c = np.asarray(self._const(node, 1 if node.input[0] == data else 0, "other operand"), np.float64)
        first = node.input[0] == data                                     # x op c (or c op x)
        if op == "Div" and not first:
            raise self.fail(node, "divides a constant by the tensor: no dlib layer computes 1/x")
        if len(shape) not in (2, 3, 4):
            raise self.fail(node, f"a rank-{len(shape)} input: dlib's affine scales (N, C[, H, W]) "
                                  f"and (N, T, D) tensors")
        sample = sample_dims(shape)                                       # dlib's (k, nr, nc)
        if c.ndim > len(shape) or (c.ndim == len(shape) and c.shape[0] != 1):
            raise self.fail(node, f"a constant of shape {c.shape}: dlib's affine has one value per "
                                  f"channel or per element of a sample")
        body = c.reshape(c.shape[1:] if c.ndim == len(shape) else c.shape)
        body = body.reshape((1,) * (len(shape) - 1 - body.ndim) + body.shape)   # aligned right
        body = body.reshape(sample_dims((1,) + body.shape))                      # as (k, nr, nc)
        try:
            full = np.broadcast_to(body, sample)
        except ValueError:
            raise self.fail(node, f"a constant of shape {c.shape} does not broadcast to the samples "
                                  f"{sample}") from None
        per_channel = body.shape[1:] == (1, 1)
        mode = layers.CONV_MODE if per_channel else layers.FC_MODE
        v = full[:, 0, 0] if per_channel else full.reshape(-1)
        one, zero = np.ones_like(v), np.zeros_like(v)
        if op == "Add":
            return one, v, mode
        if op == "Sub":
            return (one, -v, mode) if first else (-one, v, mode)
        return (v, zero, mode) if op == "Mul" else (1.0 / v, zero, mode)

    def _attrs(self, node):
        return {a.name: self.helper.get_attribute_value(a) for a in node.attribute}

    def _const(self, node, i, what):
        if len(node.input) <= i or node.input[i] not in self.consts:
            raise self.fail(node, f"its {what} must be a constant (an initializer)")
        return self.consts[node.input[i]]

    def _constant_tail(self, name):
        """The constant last input of the Concat (through Casts) that makes ``name``, or None."""
        node = self.producer.get(name)
        while node is not None and node.op_type == "Cast":
            node = self.producer.get(node.input[0])
        if node is None or node.op_type != "Concat" or node.input[-1] not in self.consts:
            return None
        return np.asarray(self.consts[node.input[-1]]).reshape(-1)

    def _pads(self, node, a, kernel):
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise self.fail(node, f"auto_pad {a['auto_pad']!r}: give explicit pads")
        pads = list(a.get("pads", [0] * 4))
        if len(pads) != 4 or pads[0] != pads[2] or pads[1] != pads[3]:
            raise self.fail(node, f"pads {pads}: dlib pads each side of an axis alike (top = bottom, "
                                  f"left = right)")
        if pads[0] >= kernel[0] or pads[1] >= kernel[1]:
            raise self.fail(node, f"pads {pads}: dlib's padding must be smaller than the window {kernel}")
        return pads[0], pads[1]

    def _window(self, node, a, kernel):
        strides = list(a.get("strides", [1, 1]))
        if list(a.get("dilations", [1, 1])) != [1, 1]:
            raise self.fail(node, f"dilations {list(a['dilations'])}: dlib's layers do not dilate")
        if len(kernel) != 2:
            raise self.fail(node, f"a {len(kernel)}-D window: dlib's layers are 2-D")
        py, px = self._pads(node, a, kernel)
        return strides, py, px

    def _convolution(self, node, a):
        """Conv as ``con``, ConvTranspose as ``cont`` (weights (C_out, C_in, kh, kw) and
        (C_in, C_out, kh, kw)); no bias input: the layer's bias disabled."""
        w = self._const(node, 1, "weight")
        transposed = node.op_type == "ConvTranspose"
        if a.get("group", 1) != 1:
            raise self.fail(node, f"group {a['group']}: dlib's {'cont_' if transposed else 'con_'} has no groups")
        if transposed and any(a.get("output_padding", [0, 0])):
            raise self.fail(node, "output_padding: dlib's cont_ has none")
        strides, py, px = self._window(node, a, w.shape[2:])
        make = layers.cont_ if transposed else layers.con_
        obj = make(w.shape[1 if transposed else 0], w.shape[2], w.shape[3], strides[0], strides[1], py, px)
        bias = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if bias is None:
            obj.disable_bias()
        return (obj, set_conv, {"filters": w, "bias": bias})

    def _layers(self, node, shape, output):
        """The steps (``(layer, setter, values)``) of one-input ``node`` making its ``output``
        from a tensor of ``shape``: none for a dropped node, one or more otherwise (a Transpose
        goes through ``transpose_ways``: the importer picks a way by the steps around it)."""
        op = node.op_type
        if op in ("Split", "Slice"):
            return [self._crop(node, shape, output)]
        if op == "Flatten" or (op == "Reshape" and len(self.shapes.get(output, ())) == 2):
            if op == "Flatten" and self._attrs(node).get("axis", 1) != 1:
                raise self.fail(node, f"axis {self._attrs(node)['axis']}: only the flattening of "
                                      f"(C, H, W) per sample")
            readers = self.readers.get(output, [])
            if readers and all(r.op_type in ("Gemm", "MatMul") for r in readers):
                return []          # dlib's fc flattens (C, H, W) in this order itself
            # anything else reads the flat values: (C*H*W, 1, 1) per sample
            return _reshape(sample_dims(shape), (int(np.prod(sample_dims(shape))), 1, 1))
        if op == "Reshape" and output not in self.shapes:
            raise self.fail(node, "a target shape that shape inference could not fix")
        if op == "Reshape" and len(self.shapes.get(output, ())) in (3, 4):
            out = self.shapes[output]
            if any(d is None for d in out[1:]):
                raise self.fail(node, f"a target shape {out} that shape inference could not fix")
            if np.prod(out[1:]) != np.prod(shape[1:]) or (shape[0] and out[0] and shape[0] != out[0]):
                raise self.fail(node, f"{tuple(shape)} to {tuple(out)}: dlib's reshape_to keeps the "
                                      f"batch and reshapes each sample")
            return _reshape(sample_dims(shape), sample_dims(out))
        if op == "Where":
            return [self._where(node, shape)]
        step = self._step(node, shape)
        return [] if step is None else [step]

    def transpose_ways(self, node, shape):
        """A Transpose keeping the batch first as dlib's transpose_ and reshape_to: the one or
        two ways of steps that do it (see ``_PERMUTATIONS``; the importer keeps the shorter
        once joined with the steps around it)."""
        rank = len(shape)
        perm = list(self._attrs(node).get("perm", range(rank - 1, -1, -1)))
        if rank not in (2, 3, 4) or perm[0] != 0:
            raise self.fail(node, f"perm {perm} of a rank-{rank} tensor: dlib's layers reorder "
                                  f"within a sample (the batch axis stays first)")
        axes = [dlib_axis(p, rank) - 1 for p in perm[1:]]        # the sample's axes, reordered
        # (a sequence's k and a matrix's nr, nc are 1 and stay where they are)
        order = [0] + axes if rank == 3 else axes + [1, 2][:3 - len(axes)]
        dims = sample_dims(shape)
        ways = []
        for way in _PERMUTATIONS[tuple(order)]:
            steps, now = [], dims
            for step in way:
                if step == "T":
                    steps.append((layers.transpose_(), None, None))
                    now = (now[0], now[2], now[1])
                    continue
                to = tuple(int(np.prod([dims[i] for i in group])) for group in step)
                steps += _reshape(now, to)
                now = to
            ways.append(steps)
        return ways

    def _crop(self, node, shape, output):
        """A Split output, or a Slice with step 1 along one axis, as dlib's ``slice_``."""
        rank = len(shape)
        crop_range = self._split_range if node.op_type == "Split" else self._slice_range
        axis, begin, size = crop_range(node, shape, output)
        if size <= 0:
            raise self.fail(node, f"an empty crop ({size} elements along axis {axis})")
        dims = list(sample_dims(shape))
        offsets = [0, 0, 0]
        d = dlib_axis(axis, rank) - 1
        offsets[d], dims[d] = begin, size
        return (layers.slice_(*offsets, *dims), None, None)

    def _crop_axis(self, node, axis, rank):
        if rank not in (2, 3, 4) or axis % rank == 0:
            raise self.fail(node, f"axis {axis} of a rank-{rank} tensor: dlib's slice_ crops within a sample")
        return axis

    def _split_range(self, node, shape, output):
        """``(axis, begin, size)`` of a Split output: the sizes given (an input from opset 13,
        an attribute before), else equal parts as ONNX cuts them (each ``ceil(dim / n)``, the
        last one what is left)."""
        a = self._attrs(node)
        axis = self._crop_axis(node, a.get("axis", 0), len(shape))
        if len(node.input) > 1 and node.input[1]:
            sizes = [int(v) for v in np.asarray(self._const(node, 1, "split sizes")).reshape(-1)]
        elif "split" in a:
            sizes = list(a["split"])
        else:
            n, dim = len(node.output), shape[axis]
            part = -(-dim // n)
            sizes = [part] * (n - 1) + [dim - part * (n - 1)]
        i = list(node.output).index(output)
        return axis, sum(sizes[:i]), sizes[i]

    def _slice_range(self, node, shape, output):
        """``(axis, begin, size)`` of a Slice along one axis with step 1 (ends clipped, as
        exporters write INT64_MAX for "to the end")."""
        starts, ends = (np.asarray(self._const(node, i, w)).reshape(-1) for i, w in ((1, "starts"), (2, "ends")))
        axes = (np.asarray(self._const(node, 3, "axes")).reshape(-1) if len(node.input) > 3 and node.input[3]
                else np.arange(len(starts)))
        steps = (np.asarray(self._const(node, 4, "steps")).reshape(-1) if len(node.input) > 4 and node.input[4]
                 else np.ones_like(starts))
        if len(starts) != 1 or int(steps[0]) != 1:
            raise self.fail(node, "dlib's slice_ crops with step 1 along one axis per node")
        rank = len(shape)
        axis = self._crop_axis(node, int(axes[0]), rank)
        dim = shape[axis % rank]
        begin = int(np.clip(starts[0] + (dim if starts[0] < 0 else 0), 0, dim))
        end = int(np.clip(ends[0] + (dim if ends[0] < 0 else 0), 0, dim))
        return axis, begin, end - begin

    def _where(self, node, shape):
        """``Where(mask, fill, x)`` (or ``Where(mask, x, fill)``) with a constant causal mask
        and a constant fill: dlib's ``tril_``, which keeps ``c <= r + diag`` of every plane."""
        if len(node.input) != 3 or node.input[0] not in self.consts:
            raise self.fail(node, "only a constant condition has a dlib layer (tril_)")
        cond = np.asarray(self.consts[node.input[0]], bool)
        fill_first = node.input[1] in self.consts
        fill = np.asarray(self.consts[node.input[1 if fill_first else 2]], np.float64)
        masked = cond if fill_first else ~cond
        return self._tril(node, masked, fill, shape)

    def _tril(self, node, masked, fill, shape):
        """dlib's ``tril_`` setting the ``masked`` elements (broadcast over the planes) to ``fill``."""
        masked = np.asarray(masked)
        if len(shape) < 3 or fill.size != 1 or masked.ndim > len(shape) or masked.ndim < 2 \
                or (masked.ndim == len(shape) and masked.shape[0] != 1):
            raise self.fail(node, f"a mask of shape {masked.shape} for a tensor {tuple(shape)} with "
                                  f"{fill.size} fill values: dlib's tril_ masks the planes alike, with one value")
        masked = masked.reshape(masked.shape[1:]) if masked.ndim == len(shape) else masked
        nr, nc = shape[-2], shape[-1]
        planes = np.broadcast_to(masked, tuple(shape[1:])).reshape(-1, nr, nc)
        if not np.all(planes == planes[:1]):
            raise self.fail(node, "a mask that differs between planes: dlib's tril_ masks all alike")
        r, c = np.indices((nr, nc))
        diag = next((d for d in range(-nr, nc + 1) if np.array_equal(planes[0], c > r + d)), None)
        value = float(fill.reshape(-1)[0])
        if diag is None:
            raise self.fail(node, "a mask that is not the part above a diagonal: dlib's tril_ "
                                  "keeps c <= r + diag")
        if value == float("-inf"):
            return (layers.tril_(diag, layers.neg_infinity_tag), None, None)
        if np.isfinite(value) and value != 0 and value == int(value) and abs(value) < 2 ** 31:
            return (layers.tril_(diag, None, int(value), 1), None, None)
        raise self.fail(node, f"fill value {value}: dlib's tril_ fills with -inf or a whole "
                              f"non-zero number below 2**31 (its fill 0 masks nothing)")

    def _step(self, node, shape):
        op, a = node.op_type, self._attrs(node)
        if op in _DROPPED:
            return None
        if op in ("Conv", "ConvTranspose"):
            return self._convolution(node, a)
        if op in ("Gemm", "MatMul"):
            w = self._const(node, 1, "weight").astype(np.float32)
            if op == "Gemm":
                if a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 or a.get("transA", 0):
                    raise self.fail(node, "alpha, beta and transA must be 1, 1 and 0")
                if a.get("transB", 0):
                    w = w.T
            if w.ndim != 2:
                raise self.fail(node, f"a {w.ndim}-D weight: an fc multiplies by a matrix")
            if op == "MatMul" and len(shape) in (3, 4):       # over the last axis: dlib's linear
                return (layers.linear_(w.shape[1]), set_fc, {"weights": w, "bias": None, "bias_of": op})
            bias = None
            if op == "Gemm" and len(node.input) > 2 and node.input[2]:
                bias = self._const(node, 2, "bias").reshape(-1).astype(np.float32)
            return (layers.fc_(w.shape[1]), set_fc,
                    {"weights": w, "bias": bias, "bias_of": op if op == "MatMul" else None})
        if op == "BatchNormalization":
            scale, b, mean, var = (self._const(node, i, n).astype(np.float64)
                                   for i, n in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "variance")))
            eps = a.get("epsilon", 1e-5)
            if len(shape) != 4:
                raise self.fail(node, f"a rank-{len(shape)} input: dnnpy maps BatchNormalization of "
                                      f"(N, C, H, W) tensors (affine or bn_ in CONV_MODE)")
            if self.bn == "bn":
                return (layers.bn_(layers.CONV_MODE, eps=eps), set_bn,
                        {"gamma": scale, "beta": b, "mean": mean, "var": var})
            gamma = scale / np.sqrt(var + eps)
            return (layers.affine_(layers.CONV_MODE), set_affine, {"gamma": gamma, "beta": b - mean * gamma})
        if op == "LayerNormalization":
            rank = len(shape)
            if rank not in (2, 4) or a.get("axis", -1) % rank != 1:
                raise self.fail(node, f"axis {a.get('axis', -1)} of a rank-{rank} tensor: dlib's layer_norm "
                                      f"normalises each sample over all its values (axis 1)")
            k = shape[1]
            scale = np.asarray(self._const(node, 1, "scale"), np.float64)
            bias = (np.asarray(self._const(node, 2, "bias"), np.float64) if len(node.input) > 2 and node.input[2]
                    else np.zeros_like(scale))
            per = [np.broadcast_to(v, tuple(shape[1:])).reshape(k, -1) for v in (scale, bias)]
            if any(not np.all(v == v[:, :1]) for v in per):
                raise self.fail(node, "a scale or bias that varies within a channel: dlib's layer_norm has one "
                                      "gamma and one beta per channel")
            return (layers.layer_norm_(eps=a.get("epsilon", 1e-5)), set_norm_params,
                    {"gamma": per[0][:, 0], "beta": per[1][:, 0]})
        simple = {"Relu": layers.relu_, "Sigmoid": layers.sig_, "Tanh": layers.htan_, "Mish": layers.mish_}
        if op in simple:
            return (simple[op](), None, None)
        if op == "Gelu":                                   # opset 20's single node
            if a.get("approximate", b"none") not in (b"none", "none"):
                raise self.fail(node, "approximate='tanh': dlib's gelu is the erf form")
            return (layers.gelu_(), None, None)
        if op == "LeakyRelu":
            return (layers.leaky_relu_(a.get("alpha", 0.01)), None, None)
        if op == "Elu":
            return (layers.elu_(a.get("alpha", 1.0)), None, None)
        if op == "PRelu":
            slope = self._const(node, 1, "slope").reshape(-1)
            if slope.size != 1 and not np.all(slope == slope[0]):
                raise self.fail(node, f"{slope.size} slopes: dlib's prelu has one")
            return (layers.prelu_(float(slope[0])), None, None)
        if op == "Clip":
            lo = self.consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else None
            hi = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            if lo is None or float(lo) != 0 or hi is None:
                raise self.fail(node, "only Clip(0, ceiling) has a dlib layer (clipped_relu)")
            return (layers.clipped_relu_(float(hi)), None, None)
        if op == "Softmax":
            axis = a.get("axis", -1)
            rank = len(shape)
            if rank in (3, 4) and axis % rank == rank - 1:    # along each row: dlib's softmaxm
                return (layers.softmax_(layers.PLANE_WISE), None, None)
            if rank == 3 or axis % rank != 1:      # (a sequence's axis 1 is T; dlib's k is 1)
                raise self.fail(node, f"axis {axis} of a rank-{rank} tensor: dlib's softmax runs over "
                                      f"the channels (axis 1) or, softmaxm, along the last axis")
            return (layers.softmax_(), None, None)
        if op in ("MaxPool", "AveragePool"):
            kernel = list(a["kernel_shape"])
            if a.get("ceil_mode", 0):
                raise self.fail(node, "ceil_mode 1: dlib's pooling rounds the output size down")
            strides, py, px = self._window(node, a, kernel)
            if op == "AveragePool":
                if (py or px) and not a.get("count_include_pad", 0) == 0:
                    raise self.fail(node, "count_include_pad 1 with padding: dlib's average excludes the padding")
                return (layers.avg_pool_(kernel[0], kernel[1], strides[0], strides[1], py, px), None, None)
            return (layers.max_pool_(kernel[0], kernel[1], strides[0], strides[1], py, px), None, None)
        if op == "Resize":
            mode = a.get("mode", b"nearest")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            ctm = a.get("coordinate_transformation_mode", b"half_pixel")
            ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
            if mode != "linear" or ctm != "align_corners":
                raise self.fail(node, f"mode {mode!r} with {ctm!r} coordinates: dlib resizes bilinearly "
                                      f"with the corners aligned (torch: mode='bilinear', align_corners=True)")
            scales = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            sizes = self.consts.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
            if scales is not None and scales.size == 4:
                sy, sx = float(scales[2]), float(scales[3])
                if list(scales[:2]) != [1, 1] or sy != int(sy) or sx != int(sx) or sy < 1 or sx < 1:
                    raise self.fail(node, f"scales {list(scales)}: dlib's upsample takes whole factors of H and W")
                return (layers.upsample_(int(sy), int(sx)), None, None)
            if sizes is not None and sizes.size == 4:
                return (layers.resize_to_(int(sizes[2]), int(sizes[3])), None, None)
            out = self.shapes.get(node.output[0], ())
            if len(out) == 4 and out[2] and out[3] and not (scales is not None and scales.size):
                return (layers.resize_to_(int(out[2]), int(out[3])), None, None)   # sizes inferred
            tail = self._constant_tail(node.input[3]) if len(node.input) > 3 and node.input[3] else None
            if tail is not None and tail.size >= 2:      # Concat(Shape(x)[:2], [H, W]), as exporters write
                return (layers.resize_to_(int(tail[-2]), int(tail[-1])), None, None)
            raise self.fail(node, "its scales or sizes must be constants of 4 values")
        if op == "GlobalAveragePool":
            return (layers.avg_pool_(0, 0, 1, 1, 0, 0), None, None)
        if op == "GlobalMaxPool":
            return (layers.max_pool_(0, 0, 1, 1, 0, 0), None, None)
        raise self.fail(node, "no dlib layer computes this op (yet)")


def _reshape(dims, to):
    """The steps that read a sample of ``dims`` in memory order as ``to``: a ``reshape_to``
    (its values say from and to what, so that the importer joins consecutive ones)."""
    return [] if dims == to else [(layers.reshape_to_(*to), None, {"from": dims, "to": to})]


def pointwise_layer_output(layer, values):
    """What a pointwise dnnpy layer makes of ``values`` (1-D float32)."""
    net = add_layer[layer, input_tensor]()
    return np.asarray(net(values.reshape(1, 1, 1, -1))).reshape(-1)


def _write(dest, values, what):
    v = dest.host()
    a = np.asarray(values, np.float32)
    if a.size != v.size:
        raise ValueError(f"{what}: the graph has {a.size} values ({a.shape}) where the layer has "
                         f"{v.size} ({v.shape})")
    v.reshape(-1)[...] = a.reshape(-1)


def set_conv(d, values):
    _write(d.get_filters(), values["filters"], "filters")
    if values["bias"] is not None:
        _write(d.get_biases(), values["bias"], "bias")


def set_fc(d, values):
    w = values["weights"]                                # (inputs, outputs): dlib's layout
    _write(d.get_weights(), w, "weights")
    if values["bias"] is not None:
        _write(d.get_biases(), values["bias"], "bias")


def set_norm_params(d, values):
    """layer_norm's parameters: gamma, then beta, one per channel."""
    _write(d.get_layer_params(), np.concatenate([np.reshape(values["gamma"], -1),
                                                 np.reshape(values["beta"], -1)]), "gamma and beta")


def set_bn(d, values):
    gamma, beta = d.get_layer_params().host().reshape(2, -1)
    for dest, key in ((gamma, "gamma"), (beta, "beta")):
        if np.size(values[key]) != dest.size:
            raise ValueError(f"{key}: the graph has {np.size(values[key])} values where the layer has {dest.size}")
        dest[...] = np.asarray(values[key], np.float32).reshape(-1)
    _write(d.running_means, values["mean"], "running mean")
    _write(d.running_variances, values["var"], "running variance")
    d.num_updates = d.get_running_stats_window_size()     # a long-trained net's statistics


def set_rms_gamma(d, values):
    """rms_norm's parameters: gamma, one per channel."""
    _write(d.get_layer_params(), values["gamma"], "gamma")


def set_affine(d, values):
    _write(d.get_gamma(), values["gamma"], "gamma")
    _write(d.get_beta(), values["beta"], "beta")
