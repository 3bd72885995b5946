"""tensor_tools: every tensor op, one dispatcher function each (dlib's ``tt::``).

Each function's docstring is its contract (requires / ensures). The dispatcher checks
shapes once, raising ``ValueError`` that names the op and the shapes, then calls the twin of
the active backend: ``cpu`` (numpy) or ``cuda`` (CuPy + cuDNN).
Both twins expose the same names with the same signatures. Layers only ever call these
functions (``import dnnpy.tensor_tools as tt``), never a backend directly.

Conventions, as in dlib: destination first, then inputs, then an explicit
``add_to_output`` flag where dlib has one. Where an op "assigns", it never computes
``0*old + new``: gradient buffers may hold inf (``test_layer`` pre-fills them so).
"""

from __future__ import annotations

# first: the OpenMP wait policy must be in the environment before anything loads libgomp
from .wait_policy import apply_default as _apply_wait_policy

_apply_wait_policy()

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
