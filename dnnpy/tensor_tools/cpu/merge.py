"""CPU twin of ``dnnpy/tensor_tools/merge.py``: zero-padded products and channel scaling
(numpy, vectorised). The dispatchers have checked the shapes. Arithmetic stays in the
tensors' dtype (float32, or float64 in test_layer's float64 mode)."""

from .._twins import twin_ops

__all__ = twin_ops("merge")


def _overlap(*shapes):
    """The leading region common to all shapes, as a tuple of slices."""
    return tuple(slice(0, min(dims)) for dims in zip(*shapes))


def multiply_zero_padded(add_to, dest, src1, src2):
    a, b = src1.host_read(), src2.host_read()
    region = _overlap(dest.shape, src1.shape, src2.shape)
    prod = a[region] * b[region]  # computed before dest is written: dest may alias a source
    if add_to:
        dest.host()[region] += prod
        return
    out = dest.host_write_only()
    out[...] = 0
    out[region] = prod


def scale_channels(add_to, dest, src, scales):
    prod = src.host_read() * scales.host_read()  # (n,k,1,1) broadcasts over (nr, nc)
    if add_to:
        dest.host()[...] += prod
    else:
        dest.host_write_only()[...] = prod
