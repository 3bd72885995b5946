"""Naive float64 loop oracles: the definitions, written for clarity, not speed.

All of them visit the same pairs: every output pixel of a cross-correlation with every
filter tap whose input pixel lies inside the (unpadded) image (``_taps``)."""

import itertools

import numpy as np


def _out_size(n, f, stride, pad):
    return 1 + (n + 2 * pad - f) // stride


def _taps(data_shape, filter_shape, out_hw, stride, pad):
    """Yield ``(n, k, y, x, c, a, b, row, col)``: output pixel ``[n,k,y,x]`` reads input
    ``[n,c,row,col]`` through filter tap ``[k,c,a,b]``."""
    n, c, h, w = data_shape
    k, _, r, s = filter_shape
    for i, o, y, xx, ci, a, b in itertools.product(range(n), range(k), range(out_hw[0]), range(out_hw[1]),
                                                   range(c), range(r), range(s)):
        row, col = y * stride[0] - pad[0] + a, xx * stride[1] - pad[1] + b
        if 0 <= row < h and 0 <= col < w:
            yield i, o, y, xx, ci, a, b, row, col


def conv2d(x, w, b, stride, pad):
    """Cross-correlation: ``x (N,C,H,W)``, ``w (K,C,R,S)``, ``b (K,)`` or None."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    ho = _out_size(x.shape[2], w.shape[2], stride[0], pad[0])
    wo = _out_size(x.shape[3], w.shape[3], stride[1], pad[1])
    out = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i, o, y, xx, ci, a, bb, row, col in _taps(x.shape, w.shape, (ho, wo), stride, pad):
        out[i, o, y, xx] += x[i, ci, row, col] * w[o, ci, a, bb]
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out


def conv2d_data_grad(g, w, data_shape, stride, pad):
    """Gradient of ``dot(conv2d(x, w), g)`` with respect to ``x``: scatter ``g * w`` back."""
    g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
    dx = np.zeros(data_shape)
    for i, o, y, xx, ci, a, b, row, col in _taps(data_shape, w.shape, g.shape[2:], stride, pad):
        dx[i, ci, row, col] += g[i, o, y, xx] * w[o, ci, a, b]
    return dx


def conv2d_filter_grad(x, g, filter_shape, stride, pad):
    """``dW[k,c,a,b] = sum over n,y,x of g[n,k,y,x] * x_padded[n,c,y*sy+a,x*sx+b]``."""
    x, g = np.asarray(x, np.float64), np.asarray(g, np.float64)
    dw = np.zeros(filter_shape)
    for i, o, y, xx, ci, a, b, row, col in _taps(x.shape, filter_shape, g.shape[2:], stride, pad):
        dw[o, ci, a, b] += g[i, o, y, xx] * x[i, ci, row, col]
    return dw


def conv_transpose2d(x, w, b, stride, pad):
    """Transposed convolution by its scatter definition: ``x (N,Cin,H,W)``,
    ``w (Cin,K,R,S)``; every input pixel adds ``x * w`` into an ``R x S`` output window.
    (Written independently of ``_taps`` on purpose: it is the oracle for cont_.)"""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin, h, wd = x.shape
    _, k, r, s = w.shape
    (sy, sx), (py, px) = stride, pad
    ho, wo = sy * (h - 1) + r - 2 * py, sx * (wd - 1) + s - 2 * px
    out = np.zeros((n, k, ho, wo))
    for i, ci, y, xx, o, a, bb in itertools.product(range(n), range(cin), range(h), range(wd),
                                                    range(k), range(r), range(s)):
        row, col = y * sy - py + a, xx * sx - px + bb
        if 0 <= row < ho and 0 <= col < wo:
            out[i, o, row, col] += x[i, ci, y, xx] * w[ci, o, a, bb]
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out
