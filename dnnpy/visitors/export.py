"""Exporting a net's structure: dlib's ``net_to_xml`` and ``net_to_dot`` (visitors.h).

Both write to a file name (str / PathLike, written as a new file) or to any object with a
``write(str)`` method, and produce dlib's text for the same net.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..core import add_layer, add_loss_layer, add_skip_layer, add_tag_layer
from .walk import net_layers

__all__ = ["net_to_xml", "net_to_dot"]


def _write(file_or_stream, text, who):
    if isinstance(file_or_stream, (str, os.PathLike)):
        with open(file_or_stream, "w", encoding="utf-8") as f:
            f.write(text)
    elif hasattr(file_or_stream, "write"):
        file_or_stream.write(text)
    else:
        raise TypeError(f"{who}: expected a file name or a stream with write(), "
                        f"got {type(file_or_stream).__name__}")


def _xml_of(obj):
    """``obj.to_xml()``; objects without one get a bare element named after their class
    (``relu_`` -> ``<relu/>``)."""
    to_xml = getattr(obj, "to_xml", None)
    if to_xml is not None:
        return to_xml()
    return f"<{type(obj).__name__.strip('_')}/>\n"


def net_to_xml(net, file_or_stream):
    """dlib's ``net_to_xml``: ``<net>``, one ``<layer idx='i' type='T'>`` element per layer
    (T in input, loss, comp, tag, skip; tags and skips carry ``id='N'`` and no body), ``</net>``.

    Each layer's body is its ``to_xml()`` text. dlib writes it with the stream precision set
    to 9 significant digits; layers format their own numbers, so their ``to_xml`` should use
    ``.9g`` to match."""
    parts = ["<net>\n"]
    for i, node in enumerate(net_layers(net)):
        if isinstance(node, add_loss_layer):
            parts.append(f"<layer idx='{i}' type='loss'>\n{_xml_of(node.loss_details())}</layer>\n")
        elif isinstance(node, add_layer):
            parts.append(f"<layer idx='{i}' type='comp'>\n{_xml_of(node.layer_details())}</layer>\n")
        elif isinstance(node, add_tag_layer):
            parts.append(f"<layer idx='{i}' type='tag' id='{node.id}'/>\n")
        elif isinstance(node, add_skip_layer):
            parts.append(f"<layer idx='{i}' type='skip' id='{node.id}'/>\n")
        else:  # the input layer
            parts.append(f"<layer idx='{i}' type='input'>\n{_xml_of(node)}</layer>\n")
    parts.append("</net>\n")
    _write(file_or_stream, "".join(parts), "net_to_xml")


# ----------------------------------------------------------------------------------------
# net_to_dot

def _get(d, *names):
    """The first of ``names`` that ``d`` has, called if it is a method."""
    for name in names:
        v = getattr(d, name, None)
        if v is not None:
            return v() if callable(v) else v
    raise AttributeError(f"net_to_dot: {d!r} has none of {names}")


def _g6(v):
    """A number as a default C++ stream prints it (6 significant digits)."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    return f"{v:g}"


def _window(d, size_names, stride_names, pad_names):
    nr, nc = (_get(d, *n) for n in size_names)
    sy, sx = (_get(d, *n) for n in stride_names)
    s = f" | {{size|{{{nr},{nc}}}}}"
    if sy != 1 or sx != 1:
        s += f" | {{stride|{{{sy},{sx}}}}}"
    if pad_names is not None:
        py, px = (_get(d, *n) for n in pad_names)
        if py != 0 or px != 0:
            s += f" | {{pad|{{{py},{px}}}}}"
    return s


_SIZE = (("nr", "_nr"), ("nc", "_nc"))
_STRIDE = (("stride_y", "_stride_y"), ("stride_x", "_stride_x"))
_PAD = (("padding_y", "padding_y_", "_padding_y"), ("padding_x", "padding_x_", "_padding_x"))


def _conv_fields(d):
    return f" | {{filters|{{{_get(d, 'num_filters', '_num_filters')}}}}}" + _window(d, _SIZE, _STRIDE, _PAD)


def _reshape_fields(d):
    s = ""
    for name in ("k", "nr", "nc"):
        v = _get(d, name + "_", "_" + name)
        s += f" | {{{name}|{{{'unchanged' if v == -1 else v}}}}}"
    return s


def _tril_fields(d):
    diag = _get(d, "diag", "_diag", "get_diag")
    value = float(_get(d, "diag_value", "_diag_value", "get_diag_value"))
    text = "-inf" if value == -math.inf else ("0" if value == 0 else _g6(np.float32(value)))
    return f" | {{diag|{{{diag}}}}} | {{diag_value|{{{text}}}}}"


# details class name -> (node name, extra record fields or None, kind); kind: "chain" (edge
# from the previous node), "merge" (also an edge from the tagged layer), "concat", "resize_as"
_DOT = {
    "con_": ("con", _conv_fields, "chain"),
    "cont_": ("cont", _conv_fields, "chain"),
    "upsample_": ("upsample", lambda d: "" if (_get(d, "scale_y"), _get(d, "scale_x")) == (1, 1) else
                  f" | {{scale|{{{_get(d, 'scale_y')},{_get(d, 'scale_x')}}}}}", "chain"),
    "resize_to_": ("resize_to", lambda d: f" | {{size|{{{_get(d, 'NR')},{_get(d, 'NC')}}}}}", "chain"),
    "max_pool_": ("max_pool", lambda d: _window(d, _SIZE, _STRIDE, _PAD), "chain"),
    "avg_pool_": ("avg_pool", lambda d: _window(d, _SIZE, _STRIDE, _PAD), "chain"),
    "layer_norm_": ("layer_norm", None, "chain"),
    "rms_norm_": ("rms_norm", None, "chain"),
    "bn_": ("batch_norm", None, "chain"),
    "fc_": ("fc", lambda d: f" | {{ outputs |{{{_get(d, 'get_num_outputs')}}}}}", "chain"),
    "linear_": ("linear", lambda d: f" | {{ outputs |{{{_get(d, 'get_num_outputs')}}}}}", "chain"),
    "dropout_": ("dropout", None, "chain"),
    "multiply_": ("multiply", None, "chain"),
    "affine_": ("affine", None, "chain"),
    "add_prev_": ("add", None, "merge"),
    "mult_prev_": ("mult", None, "merge"),
    "multm_prev_": ("multm", None, "merge"),
    "resize_prev_to_tagged_": ("resize_as", None, "resize_as"),
    "scale_": ("scale", None, "merge"),
    "scale_prev_": ("scale", None, "merge"),
    "relu_": ("relu", None, "chain"),
    "prelu_": ("prelu", None, "chain"),
    "leaky_relu_": ("leaky_relu", lambda d: f" | {{ alpha |{{{_g6(_get(d, 'get_alpha', 'alpha'))}}}}}", "chain"),
    "sig_": ("sigmoid", None, "chain"),
    "mish_": ("mish", None, "chain"),
    "htan_": ("htan", None, "chain"),
    "clipped_relu_": ("clipped_relu", None, "chain"),
    "elu_": ("elu", None, "chain"),
    "gelu_": ("gelu", None, "chain"),
    "smelu_": ("smelu", lambda d: f" | {{ beta |{{{_g6(_get(d, 'get_beta', 'beta'))}}}}}", "chain"),
    "silu_": ("silu", None, "chain"),
    "softmax_": ("softmax", None, "chain"),
    "softmax_all_": ("softmax_all", None, "chain"),
    "concat_": ("concat", None, "concat"),
    "l2normalize_": ("l2normalize", None, "chain"),
    "extract_": ("extract", lambda d: "".join(f" | {{{n}|{{{_get(d, n, '_' + n)}}}}}"
                                               for n in ("offset", "k", "nr", "nc")), "chain"),
    "reorg_": ("reorg", lambda d: "" if (_get(d, "row_stride"), _get(d, "col_stride")) == (1, 1) else
               f" | {{stride|{{{_get(d, 'row_stride')},{_get(d, 'col_stride')}}}}}", "chain"),
    "reshape_to_": ("reshape_to", _reshape_fields, "chain"),
    "transpose_": ("transpose", None, "chain"),
    "embeddings_": ("embeddings", lambda d: f" | {{num_embeddings|{{{_get(d, 'get_num_embeddings')}}}}}"
                    f" | {{embedding_dim|{{{_get(d, 'get_embedding_dim')}}}}}", "chain"),
    "positional_encodings_": ("positional_encodings", None, "chain"),
    "tril_": ("tril", _tril_fields, "chain"),
}


def _tag_ids(d):
    """The tag ids a merge / concat / loss_yolo layer reads."""
    tags = getattr(d, "tags", None)
    if tags is None:
        tags = (d.tag,)
    return [t.id for t in tags]


class _dot_writer:
    """dlib's ``visitor_net_to_dot``, visited from the input layer up."""

    def __init__(self):
        self.out = []
        self.frm = 0
        self.tag_to_layer = {}
        self.tagged_layers = []

    def _tagged(self, tid):
        if tid not in self.tag_to_layer:
            raise ValueError(f"net_to_dot: no tag{tid} below the layer that uses it")
        return self.tag_to_layer[tid]

    def update(self, i):
        self.out.append(f"{self.frm} -> {i}\n")
        self.frm = i

    def start_node(self, i, name, shape="record"):
        self.out.append(f'{i} [shape={shape}, label="{{layer|{{{i}}}}} | {name}')

    def end_node(self):
        self.out.append('"]\n')

    def visit(self, i, node):
        if isinstance(node, add_loss_layer):
            loss = node.loss_details()
            if type(loss).__name__ == "loss_yolo_":
                self.start_node(i, "loss_yolo")
                self.end_node()
                for tid in _tag_ids(loss):
                    self.out.append(f"{self._tagged(tid)} -> {i}\n")
            else:
                self.start_node(i, "loss")
                self.end_node()
                self.update(i)
        elif isinstance(node, add_tag_layer):
            self.tagged_layers.append(i)
            if isinstance(node.subnet_node(), add_skip_layer):
                # dlib's overload for a tag right above a skip: re-maps the SKIP's tag id
                self.tag_to_layer[self._check_key(node.subnet_node().id)] = self.frm
                return
            # a run of consecutive tags all point at the layer below the lowest one
            ordered = sorted(self.tagged_layers)
            diffs = [ordered[0]] + [b - a for a, b in zip(ordered, ordered[1:])]
            self.frm = i + 1
            if len(diffs) > 1 and diffs[1] == 1:
                for d in diffs[1:]:
                    if d != 1:
                        break
                    self.frm += 1
            self.tag_to_layer[node.id] = self.frm
        elif isinstance(node, add_skip_layer):
            self.frm = self._tagged(node.id)
        elif isinstance(node, add_layer):
            self._computational(i, node.layer_details())
        else:  # the input layer
            self.start_node(i, "input")
            self.end_node()
            self.frm = i

    def _check_key(self, tid):
        self._tagged(tid)  # dlib's tag_to_layer.at(t) throws when the tag is unknown
        return tid

    def _computational(self, i, d):
        spec = _DOT.get(type(d).__name__)
        if spec is None:
            # dlib's catch-all overload: no closing of the label (kept as dlib writes it)
            self.start_node(i, "unhandled layer")
            self.update(i)
            return
        name, fields, kind = spec
        self.start_node(i, name)
        if fields is not None:
            self.out.append(fields(d))
        self.end_node()
        if kind == "merge":
            self.out.append(f"{self._tagged(_tag_ids(d)[0])} -> {i}\n")
            self.update(i)
        elif kind == "resize_as":
            self.out.append(f"{i} -> {self._tagged(_tag_ids(d)[0])}[style=dashed]\n")
            self.update(i)
            self.frm = i
        elif kind == "concat":
            for tid in _tag_ids(d):
                self.out.append(f"{self._tagged(tid)} -> {i}\n")
            self.frm = i
        else:
            self.update(i)


def net_to_dot(net, file_or_stream):
    """dlib's ``net_to_dot``: a Graphviz digraph (``rankdir = BT``) with one record node per
    layer (tags and skips are not drawn: edges go to the tagged layer), written bottom-up.
    Layers dlib's visitor does not know are written as dlib writes them: an unterminated
    ``unhandled layer`` label."""
    w = _dot_writer()
    layers = net_layers(net)
    for i in range(len(layers) - 1, -1, -1):
        w.visit(i, layers[i])
    _write(file_or_stream, "digraph G {\nrankdir = BT\n" + "".join(w.out) + "}", "net_to_dot")
