"""CPU twin of convolution: im2col over strided views plus batched BLAS GEMMs.

Layouts: data ``(N, C, H, W)``, filters ``(K, C, R, S)`` (OIHW), output ``(N, K, Ho, Wo)``,
cross-correlation as in dlib and cuDNN. The im2col matrix of a sample is the
``(C*R*S, Ho*Wo)`` read of a strided window view, so the forward pass is
``out[n] = W @ cols[n]`` for every sample in one ``np.matmul`` call, written straight into
the NCHW output. Samples are processed in chunks whose im2col buffer stays under
``IM2COL_BYTES``: the copy then lands in cache right before the GEMM reads it, and memory
stays bounded for large images (the loop is over chunks, not samples).

The data gradient is a convolution too: for stride 1 it is the correlation of the
zero-padded output gradient with the flipped, transposed filters (one more im2col + GEMM,
no scatter); for larger strides it is ``W.T @ dy`` followed by a col2im scatter-add, one
vectorised add per filter tap.
"""

import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["conv_forward", "conv_backward_data", "conv_backward_filters", "IM2COL_BYTES"]

IM2COL_BYTES = 16 << 20


def _padded(x, py, px):
    if py == 0 and px == 0:
        return x
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * py, w + 2 * px), dtype=x.dtype)
    xp[:, :, py:py + h, px:px + w] = x
    return xp


def _windows(xp, r, s, sy, sx, ho, wo):
    """Read-only ``(N, C, R, S, Ho, Wo)`` view: element ``[n,c,i,j,y,x]`` is
    ``xp[n, c, y*sy + i, x*sx + j]``."""
    n, c = xp.shape[:2]
    s_n, s_c, s_h, s_w = xp.strides
    return as_strided(xp, shape=(n, c, r, s, ho, wo),
                      strides=(s_n, s_c, s_h, s_w, s_h * sy, s_w * sx), writeable=False)


def _chunk(n, bytes_per_sample):
    return max(1, min(n, IM2COL_BYTES // max(1, bytes_per_sample)))


_workspace = threading.local()


def _cols_buffer(shape, dtype):
    """A reused per-thread im2col buffer: fresh pages are expensive to fault in on every
    call, and the buffer is bounded by IM2COL_BYTES (or one sample's columns)."""
    size = int(np.prod(shape))
    buf = getattr(_workspace, "buf", None)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = _workspace.buf = np.empty(size, dtype=dtype)
    return buf[:size].reshape(shape)


def _im2col(win, i, step, crs, p):
    """Copy the windows of samples ``i:i+step`` into the reused ``(step, C*R*S, P)`` buffer."""
    chunk = win[i:i + step]
    cols = _cols_buffer((chunk.shape[0], crs, p), win.dtype)
    np.copyto(cols.reshape(chunk.shape), chunk)
    return cols


def _correlate(out, add_to_output, x, w, sy, sx, py, px):
    """``out (N,K,Ho,Wo) (+)= correlate(x (N,C,H,W), w (K,C,R,S))`` on numpy arrays."""
    n = x.shape[0]
    k, c, r, s = w.shape
    ho, wo = out.shape[2], out.shape[3]
    wm = w.reshape(k, c * r * s)
    win = _windows(_padded(x, py, px), r, s, sy, sx, ho, wo)
    out3 = out.reshape(n, k, ho * wo)
    step = _chunk(n, c * r * s * ho * wo * 4)
    for i in range(0, n, step):
        cols = _im2col(win, i, step, c * r * s, ho * wo)
        if add_to_output:
            out3[i:i + step] += np.matmul(wm, cols)
        else:
            np.matmul(wm, cols, out=out3[i:i + step])


def conv_forward(add_to_output, output, data, filters, stride_y, stride_x, padding_y, padding_x):
    out = output.host()
    _correlate(out, add_to_output, data.host_read(), filters.host_read(),
               stride_y, stride_x, padding_y, padding_x)


def conv_backward_data(add_to_output, gradient_input, filters, data_gradient,
                       stride_y, stride_x, padding_y, padding_x):
    gi = gradient_input.host_read()
    w = filters.host_read()
    k, c, r, s = w.shape
    dx = data_gradient.host()
    if stride_y == 1 and stride_x == 1:
        # dx = correlate(pad(dy, R-1-py, S-1-px), flip(W) with in/out channels swapped)
        wf = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
        _correlate(dx, add_to_output, gi, wf, 1, 1, r - 1 - padding_y, s - 1 - padding_x)
        return
    n, _, h, wd = dx.shape
    ho, wo = gi.shape[2], gi.shape[3]
    wm_t = w.reshape(k, c * r * s).T
    gi3 = gi.reshape(n, k, ho * wo)
    dxp = np.zeros((n, c, h + 2 * padding_y, wd + 2 * padding_x), dtype=dx.dtype)
    step = _chunk(n, c * r * s * ho * wo * 4)
    for i in range(0, n, step):
        dcols = np.matmul(wm_t, gi3[i:i + step]).reshape(-1, c, r, s, ho, wo)
        part = dxp[i:i + step]
        for a in range(r):
            for b in range(s):
                part[:, :, a:a + stride_y * (ho - 1) + 1:stride_y,
                     b:b + stride_x * (wo - 1) + 1:stride_x] += dcols[:, :, a, b]
    inner = dxp[:, :, padding_y:padding_y + h, padding_x:padding_x + wd]
    if add_to_output:
        dx += inner
    else:
        dx[...] = inner


def conv_backward_filters(add_to_output, gradient_input, data, filters_gradient,
                          stride_y, stride_x, padding_y, padding_x):
    gi = gradient_input.host_read()
    x = data.host_read()
    dw = filters_gradient.host()
    k, c, r, s = dw.shape
    n = x.shape[0]
    ho, wo = gi.shape[2], gi.shape[3]
    win = _windows(_padded(x, padding_y, padding_x), r, s, stride_y, stride_x, ho, wo)
    gi3 = gi.reshape(n, k, ho * wo)
    acc = np.zeros((k, c * r * s), dtype=dw.dtype)
    step = _chunk(n, c * r * s * ho * wo * 4)
    for i in range(0, n, step):
        cols = _im2col(win, i, step, c * r * s, ho * wo)
        acc += np.matmul(gi3[i:i + step], cols.transpose(0, 2, 1)).sum(axis=0)
    acc = acc.reshape(dw.shape)
    if add_to_output:
        dw += acc
    else:
        dw[...] = acc
