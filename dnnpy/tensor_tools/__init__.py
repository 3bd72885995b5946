"""tensor_tools: every tensor op, one dispatcher function each (dlib's ``tt::``).

Each function's docstring is its contract (requires / ensures). The dispatcher checks
shapes once, raising ``ValueError`` that names the op and the shapes, then calls the twin of
the active backend: ``cpu`` (numpy) or ``cuda`` (CuPy + cuDNN).
Both twins expose the same names with the same signatures. Layers only ever call these
functions (``import dnnpy.tensor_tools as tt``), never a backend directly.

Conventions, as in dlib: destination first, then inputs, then an explicit
``add_to_output`` flag where dlib has one. Where an op "assigns", it never computes
``0*old + new``: gradient buffers may hold inf (``test_layer`` pre-fills them so).

Modules:

- ``_plane_wise.py``: dlib's PLANE_WISE ``tt::gemm`` operand rules, shared by both twins
- ``_twins.py``: the list of ops both twins implement, and the loader that assembles a twin
- ``activations.py``: dispatchers of the pointwise activations
- ``adaptive_computation_time.py``: dispatchers of ``adaptive_computation_time_``'s ops
- ``algorithms.py``: ``set_dnn_prefer_smallest_algorithms()`` /
  ``set_dnn_prefer_fastest_algorithms()``: may cuDNN use a workspace
- ``backend.py``: backend selection and the argument checks the dispatchers share
- ``conv.py``: ``tensor_conv``, dlib's stateful convolution object
- ``dropout.py``: dispatchers used by ``dropout_``: ``multiply``, ``threshold``, ``tensor_rand``
- ``embedding_table.py``: dispatchers of ``embeddings_``: lookup, token counts, table update
- ``info.py``: ``backend_info()``: which backend runs the ops, and on what
- ``merge.py``: dispatchers of the merge layers: zero-padded products, channel scaling
- ``norm.py``: dispatchers of the normalisation and per-channel affine ops
- ``ops.py``: the core dispatchers: ``add``, ``affine_transform``, ``gemm``, ``dot``, ``relu``, ...
- ``resize.py``: bilinear resampling of image planes and its gradient
- ``rows.py``: dispatchers of row norms and row scaling
- ``softmax_family.py``: dispatchers of the softmax family, and ``operation_mode``
- ``solver.py``: ops used by the solvers (``affine_transform_range``, ``compute_adam_update``)
- ``spatial.py``: spatial ops: pooling, ``reorg``, ``copy_tensor``, ``transpose``
- ``threads.py``: ``set_num_threads`` / ``get_num_threads``: one count for both CPU thread pools
- ``wait_policy.py``: how OpenMP threads under oneDNN wait (``OMP_WAIT_POLICY=PASSIVE`` default)
- ``malloc_policy.py``: how glibc's malloc keeps freed memory for reuse (``mallopt`` default)
- ``transient.py``: ``transient_empty``: large short-lived arrays in plain pages (no huge-page stalls)
- ``cpu/``: the numpy twin, with oneDNN under it (a sub-package)
- ``cuda/``: the CUDA twin: CuPy and cuDNN 9 (a sub-package)
"""

from __future__ import annotations

# first: the OpenMP wait policy must be in the environment before anything loads libgomp
from .wait_policy import apply_default as _apply_wait_policy

_apply_wait_policy()

# and freed memory kept for reuse (glibc's mallopt), before the first large arrays
from .malloc_policy import apply_default as _apply_malloc_policy

_apply_malloc_policy()

from ._twins import join_modules as _join_modules
from .backend import backend_name, force_cpu, use_cuda
from .cpu.onednn import force_numpy
from .conv import tensor_conv
from .info import backend_info
from .threads import get_num_threads, set_num_threads

__all__ = ["use_cuda", "force_cpu", "force_numpy", "backend_name", "backend_info", "tensor_conv", "set_num_threads",
           "get_num_threads"]

# Ops are grouped by concept, one dispatcher module each (the twins mirror the grouping in
# cpu/<concept>.py and cuda/<concept>.py; ops.py holds the core ones). Every module's __all__
# joins this package's.
__all__ += _join_modules(__name__, globals(), (
    "ops", "activations", "softmax_family", "rows", "dropout", "norm", "spatial", "resize", "merge",
    "embedding_table",
    "adaptive_computation_time", "solver"))
from .softmax_family import CHANNEL_WISE, PLANE_WISE  # noqa: E402  (dlib's operation_mode)
