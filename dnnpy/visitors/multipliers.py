"""dlib core.h's free multiplier functions: ``get_learning_rate_multiplier(l)``,
``set_weight_decay_multiplier(l, m)``, ... on one layer.

dlib defines them for any layer type: a layer with the member function is read or changed,
any other is left alone (a no-op setter; a getter returning 1). They are what a custom
visitor calls, e.g. dnn_introduction3's ``visitor_weight_decay_multiplier``::

    visit_computational_layers(net, lambda l: set_weight_decay_multiplier(l, 0.001))

``layer`` is a layer's details (what ``visit_computational_layers`` passes) or the
``add_layer`` node holding them (what ``layer(net, i)`` returns).
"""

from __future__ import annotations

import numbers

from ..core import add_layer
# the getters are the ones the solvers use (one definition; they take details or a node)
from ..layers.base import (get_bias_learning_rate_multiplier, get_bias_weight_decay_multiplier,
                           get_learning_rate_multiplier, get_weight_decay_multiplier)

__all__ = ["get_learning_rate_multiplier", "set_learning_rate_multiplier",
           "get_bias_learning_rate_multiplier", "set_bias_learning_rate_multiplier",
           "get_weight_decay_multiplier", "set_weight_decay_multiplier",
           "get_bias_weight_decay_multiplier", "set_bias_weight_decay_multiplier"]


def _details(layer):
    return layer.layer_details() if isinstance(layer, add_layer) else layer


def _set(name, layer, multiplier):
    if isinstance(multiplier, bool) or not isinstance(multiplier, numbers.Real):
        raise TypeError(f"set_{name}: the multiplier must be a number, got {multiplier!r}")
    multiplier = float(multiplier)
    if not multiplier >= 0:    # dlib: DLIB_CASSERT(multiplier >= 0); also refuses nan
        raise ValueError(f"set_{name}: the multiplier must be >= 0, got {multiplier!r}")
    setter = getattr(_details(layer), "set_" + name, None)
    if setter is not None:     # layers without the multiplier are left alone, as in dlib
        setter(multiplier)


def set_learning_rate_multiplier(layer, learning_rate_multiplier):
    """Set it (>= 0) on a layer that has one; a no-op on any other layer."""
    _set("learning_rate_multiplier", layer, learning_rate_multiplier)


def set_bias_learning_rate_multiplier(layer, bias_learning_rate_multiplier):
    """Set it (>= 0) on a layer that has one; a no-op on any other layer."""
    _set("bias_learning_rate_multiplier", layer, bias_learning_rate_multiplier)


def set_weight_decay_multiplier(layer, weight_decay_multiplier):
    """Set it (>= 0) on a layer that has one; a no-op on any other layer."""
    _set("weight_decay_multiplier", layer, weight_decay_multiplier)


def set_bias_weight_decay_multiplier(layer, bias_weight_decay_multiplier):
    """Set it (>= 0) on a layer that has one; a no-op on any other layer."""
    _set("bias_weight_decay_multiplier", layer, bias_weight_decay_multiplier)
