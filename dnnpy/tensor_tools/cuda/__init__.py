"""The CUDA twin of ``dnnpy.tensor_tools``: CuPy (cuBLAS, element-wise kernels) and cuDNN 9.

Exactly the names and signatures of the numpy twin (``dnnpy.tensor_tools.cpu.__all__``),
with the same assign/add semantics; ``tests/test_cuda_backend.py`` checks that. Only the
dispatchers call these, after their shape checks. Everything runs on CuPy's current stream
of the current device.

Importing this package imports CuPy but launches nothing and allocates nothing, so it
imports on a machine with CuPy installed and no GPU (the completeness test relies on
that). ``dnnpy.tensor_tools.backend`` imports it only when deciding whether CUDA is usable:
``import dnnpy`` alone never imports CuPy.
"""

from importlib import import_module

NAME = "cuda"

__all__ = []

# Grouped by concept like cpu/: ops (core element-wise, GEMM, reductions), solver, resize,
# activations, norm, merge, spatial (pooling-free spatial ops), conv and pooling (cuDNN).
for _name in ("ops", "solver", "resize", "activations", "norm", "merge", "spatial", "conv",
              "pooling"):
    _module = import_module(f".{_name}", __name__)
    for _symbol in _module.__all__:
        globals()[_symbol] = getattr(_module, _symbol)
    __all__ += _module.__all__
del _name, _module

# settings of the cuDNN paths (not twins, so not in __all__)
from .conv import set_allow_tf32, set_autotune  # noqa: E402
from .handles import set_max_workspace  # noqa: E402
