"""Computational layers, one module per family; each holds the details class (``con_``)
and its bracket template (``con``)."""

from .activations import relu, relu_
from .base import (get_bias_learning_rate_multiplier, get_bias_weight_decay_multiplier,
                   get_learning_rate_multiplier, get_weight_decay_multiplier, computational_layer,
                   set_random_seed)
from .conv import con, con_, cont, cont_
from .fc import FC_HAS_BIAS, FC_NO_BIAS, fc, fc_, fc_no_bias

__all__ = [
    "computational_layer", "set_random_seed", "con_", "con", "cont_", "cont", "fc_", "fc", "fc_no_bias",
    "FC_HAS_BIAS", "FC_NO_BIAS", "relu_", "relu",
    "get_learning_rate_multiplier", "get_weight_decay_multiplier",
    "get_bias_learning_rate_multiplier", "get_bias_weight_decay_multiplier",
]
