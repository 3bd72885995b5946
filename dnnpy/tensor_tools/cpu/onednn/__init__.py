"""oneDNN under the numpy twin: the CPU twin's accelerator for float32 convolutions,
pooling, the ReLU gradient, batch norm, the per-channel affine transform and matrix products
(docs/performance.md).

The numpy twin stays the complete reference: float64, other platforms, and every case
oneDNN refuses run there. Each op entry point here has the twin's signature and returns
True when oneDNN did the work, False when the caller must run numpy (oneDNN unusable or
turned off, a dtype other than float32, a case it does not support). The CPU twin calls
them first: ``if onednn.conv_forward(...): return``.

oneDNN is used iff ``DNNPY_DISABLE_ONEDNN`` is unset or false and ``_loader`` finds a usable
oneDNN 3.x (the ``onednn`` extra, Linux x86-64). The decision is made at the first op, never
at ``import dnnpy``. When the library is installed but unusable (wrong version, libgomp
missing, no AVX2), one ``RuntimeWarning`` names the reason and numpy runs; ``info()`` keeps
it for ``backend_info()``. A case oneDNN refuses for one shape is logged once (logger
``dnnpy.onednn``, level INFO) and listed in ``info()["fallbacks"]``.

Modules:

- ``_api.py``: ctypes bindings for oneDNN 3.x's C API
- ``_common.py``: what the non-conv ops share: scratch buffers, primitive descriptors, fallbacks
- ``_loader.py``: locating and loading oneDNN 3.x (``libdnnl.so.3``)
- ``_primitive.py``: engine, streams, memory descriptors, primitives and their per-thread cache
- ``_state.py``: whether oneDNN runs: the decision, ``force_numpy()``, the fallback log,
  ``info()``
- ``binary.py``: the per-channel affine transform (a product with a sum post-op)
- ``bnorm.py``: batch normalization backward
- ``conv.py``: convolution: forward (fused bias and ReLU), data gradient and filter gradient
- ``eltwise.py``: ReLU backward, for ``relu_gradient``
- ``layout.py``: tensors whose values stay in a blocked layout between two oneDNN ops
- ``matmul.py``: matmul, for the CPU twin's channel-wise ``gemm`` and numpy matrices
- ``pooling.py``: max and average pooling, forward and backward
"""

from __future__ import annotations

from .conv import conv_backward_data, conv_backward_filters, conv_forward
from ._state import (active, available, force_numpy, get_num_threads, info, isa_name,
                     note_fallback, set_num_threads, set_num_threads_if_running)

__all__ = ["conv_forward", "conv_backward_data", "conv_backward_filters", "active", "available", "force_numpy", "info", "note_fallback", "set_num_threads", "set_num_threads_if_running",
           "get_num_threads", "isa_name"]

# the non-conv ops (eltwise, pooling, bnorm, matmul)
from .binary import affine_transform_conv, scale_shift_blocked
from .bnorm import batch_normalize_conv_gradient, batch_normalize_gradient
from .eltwise import relu_gradient
from .layout import channel_view, mirrored, mirrored_blocks
from .matmul import gemm, matmul_arrays
from .pooling import pooling_backward, pooling_forward

__all__ += ["mirrored", "mirrored_blocks", "channel_view", "affine_transform_conv", "scale_shift_blocked", "relu_gradient", "pooling_forward", "pooling_backward", "batch_normalize_gradient",
            "batch_normalize_conv_gradient", "gemm", "matmul_arrays"]
