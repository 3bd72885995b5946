"""A net type's constructor arguments (dlib's forwarding constructors): the arguments not yet
given to a layer (``pending_arguments``) and the error naming one no layer took,
``repeat_group`` for a repeat's blocks, the converting construction ``net_type(net)``, and
the checks that tell a layer object, an input layer object or a batch passed by mistake.
``templates.NetType.__call__`` holds the rule these serve."""

from __future__ import annotations

import numpy as np

from .core import add_loss_layer, converts, copy_net_as, copy_subnet, subnet_wrapper
from .inputs.base import input_layer

__all__ = ["repeat_group", "pending_arguments", "describe", "is_layer_object", "input_takes",
           "looks_like_a_batch", "converted", "NOTHING"]


def looks_like_a_batch(arg):
    """An array of 2+ dimensions, or a list/tuple holding arrays: what a user who forgot the
    ``()`` of ``net_type()(batch)`` passes (no layer constructor takes one)."""
    if isinstance(arg, np.ndarray):
        return arg.ndim >= 2
    return (isinstance(arg, (list, tuple)) and len(arg) > 0
            and all(isinstance(a, (np.ndarray, list, tuple)) for a in arg[:3]))


def converted(net_type, src):
    """dlib's ``net_type net2(net)``: see ``NetType.__call__``."""
    src = src.node() if isinstance(src, subnet_wrapper) else src
    if isinstance(src, add_loss_layer) and not net_type.is_loss():
        raise TypeError(f"{net_type!r}(net): the net has a loss ({src._name()}) and this type has none: "
                        f"pass the part below the loss, {net_type!r}(net.subnet())")
    if net_type.is_loss() and not isinstance(src, add_loss_layer):
        net = net_type()
        copy_subnet(net.subnet_node(), src)
        return net
    return copy_net_as(src, net_type)


class repeat_group:
    """dlib's ``repeat_group(args...)``: constructor arguments for every block of a
    ``repeat``, e.g. ``net_type2(prelu_(0.2), repeat_group(prelu_(0.3), prelu_(0.4)))`` builds
    each repeated block's two prelu layers with 0.3 and 0.4."""

    def __init__(self, *args):
        self.args = args

    def __repr__(self):
        return f"repeat_group({', '.join(map(describe, self.args))})"


class pending_arguments:
    """A net constructor's arguments not yet given to a layer (front first), and the node
    that took each."""

    def __init__(self, values, owner=None):
        self.left = list(enumerate(values))
        self.placed = {}
        self.owner = owner     # "repeat_group(...)" for a block's arguments

    def peek(self):
        return self.left[0][1] if self.left else NOTHING

    def take(self):
        """``(index, value)`` of the next argument, removed."""
        return self.left.pop(0)

    def not_taken(self, net_type, net):
        i, value = self.left[0]
        where = f"{self.owner} item {i}" if self.owner else f"argument {i}"
        after = ""
        if i - 1 in self.placed:
            j = net.index_of(self.placed[i - 1])
            after = f" below layer<{j}> (where the argument before it went)" if j is not None else ""
        if is_layer_object(value):
            same = [j for j, n in enumerate(net.layers())
                    if type(getattr(n, "layer_details", lambda: n)()) is type(value)]
            hint = (f" The net has no {type(value).__name__} layer." if not same else
                    f" Its {type(value).__name__} layers (layer<{'>, layer<'.join(map(str, same))}>) are "
                    f"above that point or declared with other template arguments.")
        else:
            takers = []
            for j, n in enumerate(net.layers()):
                details = getattr(n, "layer_details", getattr(n, "loss_details", None))
                settings = getattr(details(), "constructor_settings", {}) if details else {}
                kinds = [_PLAIN.get(c.__name__, c.__name__) for c in settings
                         if c.__module__ in ("numbers", "collections.abc", "builtins")]
                if kinds:
                    takers.append(f"layer<{j}> {type(details()).__name__} takes a {' or '.join(kinds)}")
            tried = (f" The layers taking a bare value: {'; '.join(takers)}." if takers else
                     " No layer of this net takes a bare value.")
            hint = tried + (" A bare value goes to the first layer whose class is built from such a value "
                    "in dlib (a number: prelu_, loss_epsilon_insensitive_; a dict: "
                    "loss_multimulticlass_log_); for other layers pass the layer object it "
                    "configures (e.g. loss_metric_(0.1) for the loss), or set it after "
                    "building: layer(net, i).layer_details().")
        return TypeError(
            f"{net_type!r}(...): {where} ({describe(value)}) was not taken by any layer{after}. As in dlib, "
            f"each constructor argument goes to the first layer from the top, below the previous "
            f"argument's, that can be built from it: a layer object of that layer's class with its "
            f"declared template arguments, a setting the class takes (num_fc_outputs(n), "
            f"num_con_outputs(n), a loss's options) or repeat_group(...) for a repeat's blocks.{hint}")


NOTHING = object()
_PLAIN = {"Real": "number", "Mapping": "dict"}     # a plain constructor setting, for a message


def describe(value):
    """A constructor argument for a message: a layer object as ``prelu_ (initial_param_value=0.2)``
    (its class and the first part of dlib's printed form)."""
    if not is_layer_object(value) or isinstance(value, repeat_group):
        return repr(value)
    text = " ".join(repr(value).split())
    head, _, rest = text.partition(" ")
    return f"{type(value).__name__} {rest.split(')')[0] + ')' if '(' in rest else ''}".strip()


def is_layer_object(value):
    return hasattr(value, "setup") or hasattr(value, "to_label") or isinstance(value, (input_layer, repeat_group))


def input_takes(input_cls, value):
    return isinstance(value, input_layer) and converts(type(value), input_cls)
