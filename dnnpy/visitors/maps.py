"""Mapping points between a net's input tensor and its output tensor (dlib visitors.h
``input_tensor_to_output_tensor`` / ``output_tensor_to_input_tensor``).

Every computational layer on the way must define ``map_input_to_output(p)`` and
``map_output_to_input(p)`` (``p`` an ``(x, y)`` tuple of floats); tags are identities, a skip
layer continues from the tag it reads, and the loss layer and input layer do nothing.

dlib quirk kept: inside ``repeat``, dlib visits ``get_repeated_layer(i).subnet()``, so the top
layer of every repeated copy is left out of the chain (harmless when that layer is an
identity map such as relu or bn, as in dlib's examples).
"""

from __future__ import annotations

import numpy as np

from ..core import (net_node, subnet_wrapper, add_layer, add_loss_layer, add_skip_layer, add_tag_layer,
                    input_node, repeat_layer)

__all__ = ["input_tensor_to_output_tensor", "output_tensor_to_input_tensor"]


def _is_end(node) -> bool:
    """The input node, or anything that is not a net node (an input layer object, the fake
    subnets of test_layer and test_loss): where a walk down stops."""
    return isinstance(node, input_node) or not isinstance(node, net_node)


def _layer_map(node, method, p):
    details = node.layer_details()
    fn = getattr(details, method, None)
    if fn is None:
        raise TypeError(f"{method}: layer {type(details).__name__} ({details!r}) has no coordinate "
                        f"map, so points cannot be mapped through this net")
    x, y = fn(p)
    return _point(x, y)


def _point(x, y):
    """A point as floats, or as float64 arrays when mapping many points at once."""
    if np.ndim(x) == 0 and np.ndim(y) == 0:
        return (float(x), float(y))
    return (np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))


def _forward(node, p):
    """``p`` in the input tensor of ``node``'s chain -> the output of ``node``."""
    if isinstance(node, subnet_wrapper):
        node = node.node()
    if _is_end(node):
        return p
    if isinstance(node, add_loss_layer):
        return _forward(node.subnet_node(), p)
    if isinstance(node, add_layer):
        return _layer_map(node, "map_input_to_output", _forward(node.subnet_node(), p))
    if isinstance(node, add_tag_layer):
        return _forward(node.subnet_node(), p)
    if isinstance(node, add_skip_layer):
        return _forward(node.tagged_node(), p)
    if isinstance(node, repeat_layer):
        p = _forward(node.subnet_node(), p)
        for copy in reversed(node.copies):
            p = _forward(copy.subnet_node(), p)  # dlib: get_repeated_layer(i).subnet()
        return p
    raise TypeError(f"input_tensor_to_output_tensor: cannot walk a {type(node).__name__}")


def _backward(node, p):
    """``p`` in the output of ``node`` -> the input tensor of its chain."""
    if isinstance(node, subnet_wrapper):
        node = node.node()
    if _is_end(node):
        return p
    if isinstance(node, add_loss_layer):
        return _backward(node.subnet_node(), p)
    if isinstance(node, add_layer):
        return _backward(node.subnet_node(), _layer_map(node, "map_output_to_input", p))
    if isinstance(node, add_tag_layer):
        return _backward(node.subnet_node(), p)
    if isinstance(node, add_skip_layer):
        return _backward(node.tagged_node(), p)
    if isinstance(node, repeat_layer):
        for copy in node.copies:
            p = _backward(copy.subnet_node(), p)  # dlib: get_repeated_layer(i).subnet()
        return _backward(node.subnet_node(), p)
    raise TypeError(f"output_tensor_to_input_tensor: cannot walk a {type(node).__name__}")


def input_tensor_to_output_tensor(net, p):
    """The point of the net's output tensor that input-tensor point ``p = (x, y)`` maps to
    (each layer's ``map_input_to_output``, from the input up). ``net`` is a net, or the
    ``sub`` a loss layer sees. ``x`` and ``y`` may be arrays (many points at once) when every
    layer's map is plain arithmetic."""
    return _forward(net, _point(*p))


def output_tensor_to_input_tensor(net, p):
    """Inverse of ``input_tensor_to_output_tensor``: each layer's ``map_output_to_input``,
    from the top down."""
    return _backward(net, _point(*p))
