"""Computational layers, one module per family; each holds the details classes (``con_``)
and their bracket templates (``con``). This package re-exports every module's ``__all__``.

Modules:

- ``_dense.py``: what ``fc_`` and ``linear_`` share: outputs, bias mode, parameter layout
- ``_serial.py``: helpers for the layers' ``serialize`` / ``deserialize`` methods
- ``_window.py``: the sliding window (size, strides, paddings) of convolutions and pooling
- ``activations.py``: element-wise activation layers, in place where dlib's are
- ``adaptive_computation_time.py``: ``adaptive_computation_time_``, Graves' adaptive
  computation time
- ``affine.py``: ``affine_``, ``gamma*x + beta``: batch norm frozen for inference
- ``base.py``: the base class, parameter initialisation, multipliers and argument checks
- ``conv.py``: ``con_`` and ``cont_``, convolution and transposed convolution
- ``dropout.py``: ``dropout_``, ``dropout_rate_`` and ``multiply_``
- ``fc.py``: ``fc_``, the fully connected layer
- ``linear.py``: ``linear_``, a fully connected layer along the last dimension (transformers)
- ``merge.py``: layers combining their input with a tagged layer's output (``add_prev_``, ...)
- ``norm.py``: normalisation: ``bn_`` (``bn_con``, ``bn_fc``), ``layer_norm_``, ``rms_norm_``
- ``pooling.py``: ``max_pool_`` and ``avg_pool_``
- ``rearrange.py``: layers that move values: ``reorg_``, ``transpose_``, ``extract_``,
  ``slice_``, ``concat_``
- ``resize.py``: ``upsample_``, ``resize_to_``, ``reshape_to_`` (``flatten``),
  ``resize_prev_to_tagged_``
- ``softmax.py``: ``softmax_``, ``softmax_all_`` and ``l2normalize_``
- ``transformer.py``: transformer blocks: ``tril_``, ``positional_encodings_``, ``embeddings_``
"""

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
