"""The CUDA twin of ``dnnpy.tensor_tools``: CuPy (cuBLAS, element-wise kernels) and cuDNN 9.

Exactly the names and signatures of the numpy twin (the list is
``tensor_tools._twins.TWIN_OPS``), with the same assign/add semantics; ``tests/test_twins.py``
checks that without CuPy. Only the
dispatchers call these, after their shape checks. Everything runs on CuPy's current stream
of the current device.

Importing this package imports CuPy but launches nothing and allocates nothing, so it
imports on a machine with CuPy installed and no GPU (the completeness test relies on
that). ``dnnpy.tensor_tools.backend`` imports it only when deciding whether CUDA is usable:
``import dnnpy`` alone never imports CuPy.
"""

from .._twins import TWIN_OPS, join_modules

NAME = "cuda"

# Grouped by concept like cpu/: ops (core element-wise, GEMM, reductions), solver, resize,
# activations, norm, merge, spatial (pooling-free spatial ops), conv and pooling (cuDNN).
__all__ = join_modules(__name__, globals(), TWIN_OPS)

# settings of the cuDNN paths (not twins, so not in __all__)
from .conv import set_allow_tf32, set_autotune  # noqa: E402
from .handles import set_max_workspace  # noqa: E402
