"""Computational layers, one module per family; each holds the details classes (``con_``)
and their bracket templates (``con``). This package re-exports every module's ``__all__``."""

from importlib import import_module

from .base import (computational_layer, get_bias_learning_rate_multiplier,
                   get_bias_weight_decay_multiplier, get_learning_rate_multiplier,
                   get_weight_decay_multiplier, set_random_seed)

_MODULES = ["activations", "softmax", "dropout", "conv", "fc", "linear", "norm", "affine",
            "pooling", "resize", "rearrange", "merge", "transformer", "adaptive_computation_time"]

__all__ = [
    "computational_layer", "set_random_seed",
    "get_learning_rate_multiplier", "get_weight_decay_multiplier",
    "get_bias_learning_rate_multiplier", "get_bias_weight_decay_multiplier",
]

for _name in _MODULES:
    _module = import_module(f".{_name}", __name__)
    for _symbol in _module.__all__:
        globals()[_symbol] = getattr(_module, _symbol)
    __all__ += _module.__all__
del _name, _module, _symbol
