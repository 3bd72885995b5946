"""CUDA twin of ``cpu/merge.py``: zero-padded products and channel scaling (CuPy kernels, the
tensors' dtype, no FMA contraction; see ``activations.py``). The dispatchers have checked the
shapes.

Tokens, as the CPU twin: column 0 of ``prev`` truncated toward zero; a token outside
``[0, num_embeddings)`` or NaN is out of range. The embedding update and the token counts
use atomics: repeated tokens accumulate in an unspecified order, so the float update agrees
with the CPU's sequential one to rounding (the counts are exact).
"""


from ._kernels import _mul, _out, _read
from .._twins import twin_ops

__all__ = twin_ops("merge")


def _overlap(*shapes):
    """The leading region common to all shapes, as a tuple of slices."""
    return tuple(slice(0, min(dims)) for dims in zip(*shapes))


def multiply_zero_padded(add_to, dest, src1, src2):
    a, b = src1.device_read(), src2.device_read()
    region = _overlap(dest.shape, src1.shape, src2.shape)
    prod = a[region] * b[region]  # a new array, queued before any write: dest may alias a source
    if add_to:
        dest.device()[region] += prod
        return
    out = dest.device_write_only()
    out.fill(0)
    out[region] = prod


def scale_channels(add_to, dest, src, scales):
    x = _read(src, dest)
    s = _read(scales, dest)                      # (n, k, 1, 1) broadcasts over (nr, nc)
    _mul(add_to, x, s, _out(dest, add_to))
