"""Exporting a net's structure: dlib's ``net_to_xml`` and ``net_to_dot`` (visitors.h).

Both write to a file name (str / PathLike, written as a new file) or to any object with a
``write(str)`` method, and produce dlib's text for the same net.
"""

from __future__ import annotations

import os

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


def _xml_of(i, obj):
    """``obj.to_xml()``; part of the contract of every layer, loss and input layer, so a
    missing one is an error rather than dlib's text with the layer left out."""
    to_xml = getattr(obj, "to_xml", None)
    if to_xml is None:
        raise NotImplementedError(
            f"net_to_xml: layer<{i}> ({type(obj).__name__}) has no to_xml(); every layer, loss "
            "and input layer must define one (docs/layer_interface.md)")
    return to_xml()


def net_to_xml(net, file_or_stream):
    """dlib's ``net_to_xml``: ``<net>``, one ``<layer idx='i' type='T'>`` element per layer
    (T in input, loss, comp, tag, skip; tags and skips carry ``id='N'`` and no body), ``</net>``.

    Each layer's body is its ``to_xml()`` text, with numbers as dlib writes them at stream
    precision 9 and parameters as dlib prints a matrix (``dnnpy.printing``). A layer without
    ``to_xml`` raises ``NotImplementedError`` naming it."""
    parts = ["<net>\n"]
    for i, node in enumerate(net_layers(net)):
        if isinstance(node, add_loss_layer):
            parts.append(f"<layer idx='{i}' type='loss'>\n{_xml_of(i, node.loss_details())}</layer>\n")
        elif isinstance(node, add_layer):
            parts.append(f"<layer idx='{i}' type='comp'>\n{_xml_of(i, node.layer_details())}</layer>\n")
        elif isinstance(node, add_tag_layer):
            parts.append(f"<layer idx='{i}' type='tag' id='{node.id}'/>\n")
        elif isinstance(node, add_skip_layer):
            parts.append(f"<layer idx='{i}' type='skip' id='{node.id}'/>\n")
        else:  # the input layer
            parts.append(f"<layer idx='{i}' type='input'>\n{_xml_of(i, node)}</layer>\n")
    parts.append("</net>\n")
    _write(file_or_stream, "".join(parts), "net_to_xml")


# ----------------------------------------------------------------------------------------
# net_to_dot: each layer says how it is drawn (``dot_label()``, ``dot_edges``; layers/base.py)

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
            # dlib draws every loss as "loss" from the layer below, except loss_yolo_, whose
            # label and edges (one from each tagged layer) it owns like concat_
            loss = node.loss_details()
            label = getattr(loss, "dot_label", None)
            self._draw(i, "loss" if label is None else label(), getattr(loss, "dot_edges", "chain"), loss)
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
        label = getattr(d, "dot_label", None)
        label = None if label is None else label()
        if label is None:
            # dlib's catch-all overload: no closing of the label (kept as dlib writes it)
            self.start_node(i, "unhandled layer")
            self.update(i)
            return
        self._draw(i, label, getattr(d, "dot_edges", "chain"), d)

    def _draw(self, i, label, edges, d):
        self.start_node(i, label)
        self.end_node()
        if edges == "chain":
            self.update(i)
        elif edges == "tag":
            self.out.append(f"{self._tagged(_tag_ids(d)[0])} -> {i}\n")
            self.update(i)
        elif edges == "resize_as":
            self.out.append(f"{i} -> {self._tagged(_tag_ids(d)[0])}[style=dashed]\n")
            self.update(i)
        elif edges == "tags":
            for tid in _tag_ids(d):
                self.out.append(f"{self._tagged(tid)} -> {i}\n")
            self.frm = i
        else:
            raise ValueError(f"net_to_dot: layer<{i}> ({type(d).__name__}) has dot_edges={edges!r}; "
                             "expected 'chain', 'tag', 'tags' or 'resize_as'")


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
