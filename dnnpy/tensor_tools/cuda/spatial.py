"""CUDA twin of the rearranging spatial ops: reorg, reorg_gradient, copy_tensor, transpose.

The same names and signatures as ``cpu/spatial.py`` (pooling lives in ``cuda/pooling.py``,
on cuDNN). The dispatchers (``tensor_tools/spatial.py``) have checked the shapes and that
destination and source do not share memory.

Every op here is a pure permutation or block copy, so each is written as ONE strided CuPy
assignment (``dest_view[...] = src_view``) or in-place add (``dest_view += src_view``)
between views of the two tensors' device arrays: CuPy runs either as a single element-wise
kernel over arbitrary strides, on the current stream. No temporary is made, and the results
are bit-identical to the CPU twin's (the same copies, and the same single float addition
per element when adding).

Assign versus add: assigning writes every element of the destination block without reading
it (gradient buffers may hold inf/NaN: ``test_layer`` pre-fills them). When the block is the
whole tensor, ``device_write_only()`` also skips the host-to-device copy of old contents.
"""

from __future__ import annotations
from .._twins import twin_ops

__all__ = twin_ops("spatial")


def _store(add_to, dest_view, values):
    """``dest_view (+)= values``: one CuPy kernel either way."""
    if add_to:
        dest_view += values
    else:
        dest_view[...] = values


def reorg(add_to, dest, row_stride, col_stride, src):
    # dest(n, (qy*cs + qx)*K + kk, r, c) = src(n, kk, r*rs + qy, c*cs + qx), as the CPU twin:
    # both sides viewed in 6-D, the source axes permuted to the destination's order.
    n, k, nr, nc = src.shape
    rs, cs = row_stride, col_stride
    ho, wo = nr // rs, nc // cs
    s = src.device_read().reshape(n, k, ho, rs, wo, cs).transpose(0, 3, 5, 1, 2, 4)
    d = dest.device() if add_to else dest.device_write_only()
    _store(add_to, d.reshape(n, rs, cs, k, ho, wo), s)


def reorg_gradient(add_to, grad, row_stride, col_stride, gradient_input):
    # grad(n, kk, r*rs + qy, c*cs + qx) = gradient_input(n, (qy*cs + qx)*K + kk, r, c)
    n, _, ho, wo = gradient_input.shape
    k = grad.k()
    rs, cs = row_stride, col_stride
    gi = gradient_input.device_read().reshape(n, rs, cs, k, ho, wo).transpose(0, 3, 4, 1, 5, 2)
    g = grad.device() if add_to else grad.device_write_only()
    _store(add_to, g.reshape(n, k, ho, rs, wo, cs), gi)


def copy_tensor(add_to, dest, dk, dnr, dnc, src, sk, snr, snc, k, nr, nc):
    # Only the block is written, the rest of dest must survive: dest.device() (which brings
    # the device copy up to date) even when assigning.
    if dest.size() == 0 or k * nr * nc == 0:
        return
    s = src.device_read()[:, sk:sk + k, snr:snr + nr, snc:snc + nc]
    d = dest.device()[:, dk:dk + k, dnr:dnr + nr, dnc:dnc + nc]
    _store(add_to, d, s)


def transpose(add_to, dest, src):
    s = src.device_read().transpose(0, 1, 3, 2)
    d = dest.device() if add_to else dest.device_write_only()
    _store(add_to, d, s)
