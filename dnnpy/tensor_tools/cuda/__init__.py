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

Modules:

- ``_cudnn.py``: ctypes bindings for the cuDNN 9 legacy API
- ``_kernels.py``: what the modules share: kernel factories (no FMA contraction) and helpers
- ``_loader.py``: locating and loading cuDNN 9 (``libcudnn.so.9``)
- ``activations.py``: the pointwise activations, one fused kernel each
- ``adaptive_computation_time.py``: the ops of ``adaptive_computation_time_``
- ``conv.py``: convolution through cuDNN's forward, backward-data and backward-filter calls
- ``dropout.py``: multiply, threshold, random numbers
- ``embedding_table.py``: the embedding lookup, token counts and table update
- ``handles.py``: cuDNN handles, workspaces and descriptor caches
- ``merge.py``: zero-padded products and channel scaling
- ``norm.py``: the normalisation and tensor-coefficient affine ops
- ``ops.py``: the element-wise, reduction and GEMM ops (cuBLAS and fused kernels)
- ``pooling.py``: max and average pooling through cuDNN
- ``resize.py``: bilinear resampling, with dlib's CUDA kernels
- ``rows.py``: row norms and row scaling
- ``softmax_family.py``: the softmax family
- ``solver.py``: the solver ops, one fused kernel each
- ``spatial.py``: reorg, reorg_gradient, copy_tensor, transpose
"""

from .._twins import TWIN_OPS, join_modules

NAME = "cuda"

# Grouped by concept like cpu/: ops (core element-wise, GEMM, reductions), solver, resize,
# activations, norm, merge, spatial (pooling-free spatial ops), conv and pooling (cuDNN).
__all__ = join_modules(__name__, globals(), TWIN_OPS)

# settings of the cuDNN paths (not twins, so not in __all__)
from .conv import set_allow_tf32, set_autotune  # noqa: E402
from .handles import set_max_workspace  # noqa: E402
