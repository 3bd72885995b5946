"""Walking a net (dlib core.h ``visit_layers*``, ``visit_computational_layers*``,
``visit_layer_parameters``, ``visit_layer_parameter_gradients``; visitors.h
``count_parameters``, ``set_all_learning_rate_multipliers``, ``set_learning_rate_multipliers_range``).

Layer ``i`` is dlib's ``layer<i>(net)``: 0 is the top (the loss layer, if any), the last one
is the input layer object; a ``repeat`` contributes the layers of its copies (top copy
first, each copy without its internal input) and is not a layer itself, as in dlib where
``layer<0>(repeat)`` is the first copy.

A visitor ``v`` is called as ``v(i, x)`` when it takes two positional arguments, else as
``v(x)`` (dlib calls whichever overload the visitor has).
"""

from __future__ import annotations

import inspect

from ..core import add_layer, add_tag_layer, computational_nodes, net_layers
from ..templates import tag_templates

__all__ = ["net_layers", "visit_layers", "visit_layers_backwards", "visit_layers_range",
           "visit_layers_backwards_range", "visit_layers_until_tag", "visit_computational_layers",
           "visit_computational_layers_range", "visit_layer_parameters",
           "visit_layer_parameter_gradients", "count_parameters", "set_all_learning_rate_multipliers",
           "set_learning_rate_multipliers_range"]


def _arity2(v):
    """Whether ``v`` accepts two positional arguments (dlib's ``v(i, layer)`` overload)."""
    try:
        sig = inspect.signature(v)
    except (TypeError, ValueError):
        return True
    try:
        sig.bind(0, None)
        return True
    except TypeError:
        return False


def _caller(v):
    if not callable(v):
        raise TypeError(f"visitor must be callable, got {type(v).__name__}")
    if _arity2(v):
        return v
    return lambda i, x: v(x)


def _check_range(who, layers, begin, end):
    for name, val in (("begin", begin), ("end", end)):
        if isinstance(val, bool) or not isinstance(val, int):
            raise TypeError(f"{who}: {name} must be an integer, got {val!r}")
    if not (0 <= begin <= end <= len(layers)):
        raise ValueError(f"{who}: invalid range [{begin}, {end}) for a net of {len(layers)} layers "
                         f"(requires 0 <= begin <= end <= num_layers)")


def visit_layers(net, v):
    """``v(i, layer<i>(net))`` (or ``v(layer)``) for i = 0 .. num_layers-1."""
    call, layers = _caller(v), net_layers(net)
    for i, node in enumerate(layers):
        call(i, node)


def visit_layers_backwards(net, v):
    """As ``visit_layers``, from the input layer up to layer 0."""
    call, layers = _caller(v), net_layers(net)
    for i in range(len(layers) - 1, -1, -1):
        call(i, layers[i])


def visit_layers_range(net, begin, end, v):
    """``visit_layers`` restricted to ``begin <= i < end``."""
    call, layers = _caller(v), net_layers(net)
    _check_range("visit_layers_range", layers, begin, end)
    for i in range(begin, end):
        call(i, layers[i])


def visit_layers_backwards_range(net, begin, end, v):
    """``visit_layers_backwards`` restricted to ``begin <= i < end`` (i decreasing)."""
    call, layers = _caller(v), net_layers(net)
    _check_range("visit_layers_backwards_range", layers, begin, end)
    for i in range(end - 1, begin - 1, -1):
        call(i, layers[i])


def visit_layers_until_tag(net, tag, v):
    """Visit layers from 0 down to and including the first ``add_tag_layer`` of ``tag``
    (a tag template, ``tag1``). dlib calls ``v(layer)``; a two-argument ``v`` gets ``(i, layer)``."""
    if not any(tag is t for t in tag_templates):
        raise TypeError(f"visit_layers_until_tag: expected a tag template (tag1..tag10), got {tag!r}")
    call, layers = _caller(v), net_layers(net)
    stop = next((i for i, n in enumerate(layers) if isinstance(n, add_tag_layer) and n.id == tag.id), None)
    if stop is None:
        raise ValueError(f"visit_layers_until_tag: the net has no {tag.name}")
    for i in range(stop + 1):
        call(i, layers[i])


def _computational(layers, begin, end):
    """``(i, node)`` for the add_layer nodes among ``layers[begin:end]``."""
    return [(i, layers[i]) for i in range(begin, end) if isinstance(layers[i], add_layer)]


def visit_computational_layers(net, v):
    """``v(i, details)`` (or ``v(details)``) for every computational layer; ``i`` is the
    layer's index in the net (as ``visit_layers``), not a count of computational layers."""
    call, layers = _caller(v), net_layers(net)
    for i, node in _computational(layers, 0, len(layers)):
        call(i, node.layer_details())


def visit_computational_layers_range(net, begin, end, v):
    """``visit_computational_layers`` restricted to layer indices ``begin <= i < end``."""
    call, layers = _caller(v), net_layers(net)
    _check_range("visit_computational_layers_range", layers, begin, end)
    for i, node in _computational(layers, begin, end):
        call(i, node.layer_details())


def visit_layer_parameters(net, v):
    """``v(j, details.get_layer_params())`` (or ``v(params)``) where j counts computational
    layers from the top (the index a solver is stored under)."""
    call = _caller(v)
    for j, node in enumerate(computational_nodes(net)):
        call(j, node.layer_details().get_layer_params())


def visit_layer_parameter_gradients(net, v):
    """``v(j, node.get_parameter_gradient())`` (or ``v(grad)``), j as in ``visit_layer_parameters``."""
    call = _caller(v)
    for j, node in enumerate(computational_nodes(net)):
        call(j, node.get_parameter_gradient())


def count_parameters(net) -> int:
    """Total size of every computational layer's parameters (0 before the first forward)."""
    total = 0

    def add(params):
        nonlocal total
        total += params.size()

    visit_layer_parameters(net, add)
    return total


def _set_lr(who, net, begin, end, multiplier):
    multiplier = float(multiplier)
    if not multiplier >= 0:
        raise ValueError(f"{who}: the learning rate multiplier must be >= 0, got {multiplier!r}")
    layers = net_layers(net)
    end = len(layers) if end is None else end
    _check_range(who, layers, begin, end)
    for _, node in _computational(layers, begin, end):
        setter = getattr(node.layer_details(), "set_learning_rate_multiplier", None)
        if setter is not None:  # layers without multipliers are left alone, as dlib's overloads
            setter(multiplier)


def set_all_learning_rate_multipliers(net, learning_rate_multiplier):
    """``set_learning_rate_multiplier(m)`` on every computational layer that has one.
    dlib's implementation (followed here) leaves the bias multipliers unchanged, although its
    documentation says it sets them too."""
    _set_lr("set_all_learning_rate_multipliers", net, 0, None, learning_rate_multiplier)


def set_learning_rate_multipliers_range(net, begin, end, learning_rate_multiplier):
    """``set_all_learning_rate_multipliers`` for the layers with index ``begin <= i < end``."""
    _set_lr("set_learning_rate_multipliers_range", net, begin, end, learning_rate_multiplier)
