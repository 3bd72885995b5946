"""``dnnpy.onnx.decode``: labels (detections for ``loss_mmod`` and ``loss_yolo``) from what
an ONNX runtime computed for a model ``dnnpy.onnx.export`` wrote.

The graph stops at the loss's input (its "scores"): thresholding, the output -> image
coordinate maps (through every layer's ``map_output_to_input`` and the input layer's
``tensor_space_to_image_space``, which for a pyramid reads the level rectangles ``to_tensor``
stored on the tensor) and dlib's non-max suppression have no faithful ONNX form. So the
decoding is the loss's own ``to_label``, run on a stand-in for the subnet whose output is the
runtime's tensor: the same code as ``net(images)``, no copy of it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core import add_loss_layer, layer, subnet_wrapper
from ..tensor import resizable_tensor, tensor

__all__ = ["decode"]


class _runtime_subnet(subnet_wrapper):
    """The ``sub`` a loss's ``to_label`` sees, with the runtime's tensors in place of dnnpy's
    outputs: its own output is the graph's "scores", and ``layer(sub, tagN)`` finds a node
    whose output is the graph's ``scores_tagN`` (loss_yolo reads its heads that way).
    Everything else is the real net's: the input layer, the layers' coordinate maps, the
    sample expansion factor."""

    __slots__ = ("_output", "_tagged")

    def __init__(self, node, output, tagged=None):
        super().__init__(node)
        self._output = output
        self._tagged = tagged or {}

    def get_output(self):
        return self.node().get_output() if self._output is None else self._output

    def _find(self, match):
        # layer(sub, tag) finds nodes through the sub's _find (the protocol every sub honours)
        found = self.node()._find(match)
        out = self._tagged.get(id(found))
        return found if out is None else _runtime_subnet(found, out)


def _as_tensor(name, value):
    a = np.asarray(value)
    if a.ndim != 4 or a.dtype.kind != "f":
        raise ValueError(f"dnnpy.onnx.decode: the runtime's output {name!r} must be a 4-D float array "
                         f"(N, k, nr, nc), got {a.dtype} {a.shape}")
    return resizable_tensor(a)


def _pick(outputs, names):
    """The arrays of the graph outputs ``names`` from a ``{name: array}`` mapping, or from the
    list ``session.run(None, ...)`` returns (graph order: the names come first)."""
    if isinstance(outputs, Mapping):
        missing = [n for n in names if n not in outputs]
        if missing:
            raise ValueError(f"dnnpy.onnx.decode: the runtime's outputs have no {missing} "
                             f"(they have {sorted(outputs)})")
        return [outputs[n] for n in names]
    if isinstance(outputs, np.ndarray) and len(names) == 1 and outputs.ndim == 4:
        return [outputs]
    outputs = list(outputs)
    if len(outputs) < len(names):
        raise ValueError(f"dnnpy.onnx.decode: expected the outputs {names} first, got {len(outputs)} array(s)")
    return outputs[:len(names)]


def decode(net, outputs, x, *args, **kwargs):
    """The labels ``net(images, *args, **kwargs)`` would give, computed from a runtime's
    outputs of ``dnnpy.onnx.export(net, ...)``: the loss's ``to_label`` on the runtime's
    scores (``mmod_rect`` lists for loss_mmod, ``yolo_rect`` lists for loss_yolo, one per
    sample; any other loss's labels the same way).

    ``outputs``: what the runtime returned, either ``{output name: array}`` or the list of
    ``session.run(None, feed)`` for a model exported with the default ``outputs="scores"``
    (loss_yolo: the heads ``scores_tag<id>`` in the loss's tag order).

    ``x``: the input tensor fed to the model, as ``net.to_tensor(images)`` made it (a dnnpy
    tensor; a pyramid input layer needs that tensor, which carries the level rectangles that
    map boxes back to the image), or a 4-D numpy array for inputs without such data.

    Extra arguments go to ``to_label`` (e.g. ``adjust_threshold``)."""
    if not isinstance(net, add_loss_layer):
        raise TypeError(f"dnnpy.onnx.decode: expected a net with a loss layer, got {type(net).__name__}")
    loss = net.loss_details()
    if not isinstance(x, tensor):
        x = np.asarray(x)
        if x.ndim != 4:
            raise ValueError(f"dnnpy.onnx.decode: x must be the input tensor (net.to_tensor(images)) or a "
                             f"4-D array, got shape {x.shape}")
        x = resizable_tensor(x)
    node = net.subnet_node()
    tags = tuple(getattr(loss, "tags", ()))
    if tags:
        # the heads loss_yolo_.to_onnx makes graph outputs, in its tag order
        names = [f"scores_tag{t.id}" for t in tags]
        heads = {id(layer(node, t)): _as_tensor(n, a) for t, n, a in zip(tags, names, _pick(outputs, names))}
        sub = _runtime_subnet(node, None, heads)   # the net's own output is not read
    else:
        (scores,) = _pick(outputs, ["scores"])
        sub = _runtime_subnet(node, _as_tensor("scores", scores))
    return loss.to_label(x, sub, *args, **kwargs)
