"""CPU twin of the spatial ops: reorg, copy_tensor, transpose (numpy); pooling is in
``pooling.py``.

The dispatchers (``tensor_tools/spatial.py``) have checked the shapes.
"""

from .._twins import twin_ops

__all__ = twin_ops("spatial")


def reorg(add_to, dest, row_stride, col_stride, src):
    s = src.host_read()
    n, k, nr, nc = s.shape
    ho, wo = nr // row_stride, nc // col_stride
    # src(n, kk, r*rs + qy, c*cs + qx) -> dest(n, (qy*cs + qx)*K + kk, r, c)
    moved = s.reshape(n, k, ho, row_stride, wo, col_stride).transpose(0, 3, 5, 1, 2, 4)
    moved = moved.reshape(dest.shape)
    if add_to:
        dest.host()[...] += moved
    else:
        dest.host_write_only()[...] = moved


def reorg_gradient(add_to, grad, row_stride, col_stride, gradient_input):
    gi = gradient_input.host_read()
    n, _, ho, wo = gi.shape
    k = grad.k()
    # gradient_input(n, (qy*cs + qx)*K + kk, r, c) -> grad(n, kk, r*rs + qy, c*cs + qx)
    moved = gi.reshape(n, row_stride, col_stride, k, ho, wo).transpose(0, 3, 4, 1, 5, 2)
    moved = moved.reshape(grad.shape)
    if add_to:
        grad.host()[...] += moved
    else:
        grad.host_write_only()[...] = moved


def copy_tensor(add_to, dest, dk, dnr, dnc, src, sk, snr, snc, k, nr, nc):
    s = src.host_read()[:, sk:sk + k, snr:snr + nr, snc:snc + nc]
    d = dest.host()[:, dk:dk + k, dnr:dnr + nr, dnc:dnc + nc]
    if add_to:
        d += s
    else:
        d[...] = s


def transpose(add_to, dest, src):
    s = src.host_read().transpose(0, 1, 3, 2)
    if add_to:
        dest.host()[...] += s
    else:
        dest.host_write_only()[...] = s
