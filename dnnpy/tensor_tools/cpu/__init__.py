"""The numpy twin of ``dnnpy.tensor_tools``: the same op names and signatures as the CUDA
twin (the list is ``tensor_tools._twins.TWIN_OPS``), grouped in the same concept modules.
Only the dispatchers call these; they have already checked the shapes.

Modules:

- ``_common.py``: dlib's assign/add rule for storing results, and per-thread scratch buffers
- ``activations.py``: the pointwise activations
- ``adaptive_computation_time.py``: the ops of ``adaptive_computation_time_``
- ``conv.py``: convolution: im2col over strided views plus BLAS GEMMs
- ``dropout.py``: multiply, threshold, random numbers
- ``embedding_table.py``: the embedding lookup, token counts and table update
- ``merge.py``: zero-padded products and channel scaling
- ``norm.py``: the normalisation and tensor-coefficient affine ops
- ``ops.py``: the element-wise, reduction and GEMM ops
- ``pooling.py``: max and average pooling, forward and backward
- ``resize.py``: bilinear resampling, with dlib's ``resize_image`` arithmetic
- ``rows.py``: row norms and row scaling
- ``softmax_family.py``: the softmax family
- ``solver.py``: the solver ops, in dlib's float arithmetic order
- ``spatial.py``: reorg, copy_tensor, transpose
- ``onednn/``: oneDNN under the numpy twin, its float32 accelerator (a sub-package)
"""

from .._twins import TWIN_OPS, join_modules

NAME = "cpu"

__all__ = join_modules(__name__, globals(), TWIN_OPS)
