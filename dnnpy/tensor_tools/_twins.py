"""The one list of the ops that both backend twins implement (``tensor_tools.cpu`` and
``tensor_tools.cuda``), by concept module, and the loader that joins a package's concept
modules into the package.

Adding an op to both backends: write the dispatcher (``tensor_tools/<concept>.py``, in its
``__all__``, the public API) and the two twin functions (``cpu/<concept>.py``,
``cuda/<concept>.py``), and name the op once, here. Each twin module's ``__all__`` is its
row of ``TWIN_OPS``; ``tests/test_twins.py`` checks, without CuPy (it reads ``cuda/*.py``
with ``ast``), that both twins define every op of the row with the same signature.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["TWIN_OPS", "twin_ops", "join_modules"]

TWIN_OPS = {
    "ops": ("add", "assign_conv_bias_gradient", "assign_bias_gradient", "gemm", "affine_transform",
            "affine_transform_rect", "relu", "relu_gradient", "dot", "exp", "log", "log10"),
    "solver": ("affine_transform_range", "compute_adam_update"),
    "resize": ("resize_bilinear", "resize_bilinear_gradient"),
    "activations": (
        "sigmoid", "sigmoid_gradient", "mish", "mish_gradient", "prelu", "prelu_gradient",
        "leaky_relu", "leaky_relu_gradient", "tanh", "tanh_gradient", "clipped_relu",
        "clipped_relu_gradient", "elu", "elu_gradient", "gelu", "gelu_gradient", "smelu",
        "smelu_gradient", "silu", "silu_gradient"),
    "softmax_family": ("softmax", "softmax_gradient", "softmax_all", "softmax_all_gradient"),
    "rows": ("inverse_norms", "dot_prods", "scale_rows", "scale_rows2", "scale_columns"),
    "dropout": ("multiply", "threshold", "rand_generator", "rand_fill_uniform", "rand_fill_gaussian"),
    "norm": ("batch_normalize_inference", "batch_normalize", "batch_normalize_gradient",
             "batch_normalize_conv_inference", "batch_normalize_conv",
             "batch_normalize_conv_gradient", "layer_normalize", "layer_normalize_gradient",
             "rms_normalize", "rms_normalize_gradient", "affine_transform_conv",
             "affine_transform_tensors", "multiply_conv"),
    "merge": ("multiply_zero_padded", "scale_channels"),
    "embedding_table": ("embeddings", "embeddings_gradient", "calc_token_freqs"),
    "adaptive_computation_time": ("compute_act_halt_probabilities", "update_act_state",
                                  "finalize_act_output", "apply_act_depth_scaling",
                                  "act_data_gradient"),
    "spatial": ("reorg", "reorg_gradient", "copy_tensor", "transpose"),
    "conv": ("conv_forward", "conv_backward_data", "conv_backward_filters"),
    "pooling": ("pooling_forward", "pooling_backward"),
}


def twin_ops(concept):
    """A twin module's ``__all__``: its row of ``TWIN_OPS``, as a new list."""
    return list(TWIN_OPS[concept])


def join_modules(package, namespace, modules):
    """Import ``package.<m>`` for each of ``modules`` and copy every name of its ``__all__``
    into ``namespace`` (the package's globals); returns those names, in order. A name
    exported by two modules is an error (one would silently shadow the other)."""
    names = []
    for m in modules:
        module = import_module(f"{package}.{m}")
        for symbol in module.__all__:
            if symbol in namespace and namespace[symbol] is not getattr(module, symbol):
                raise ImportError(f"{package}: {m}.{symbol} would shadow another module's {symbol}")
            namespace[symbol] = getattr(module, symbol)
        names += module.__all__
    return names
