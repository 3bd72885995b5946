"""Naive float64 loop oracles: the definitions, written for clarity, not speed."""

import numpy as np


def conv2d(x, w, b, stride, pad):
    """Cross-correlation: ``x (N,C,H,W)``, ``w (K,C,R,S)``, ``b (K,)`` or None."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    sy, sx = stride
    py, px = pad
    ho, wo = 1 + (h + 2 * py - r) // sy, 1 + (wd + 2 * px - s) // sx
    out = np.zeros((n, k, ho, wo))
    for i in range(n):
        for o in range(k):
            for y in range(ho):
                for xx in range(wo):
                    acc = 0.0
                    for ci in range(c):
                        for a in range(r):
                            for bb in range(s):
                                row, col = y * sy - py + a, xx * sx - px + bb
                                if 0 <= row < h and 0 <= col < wd:
                                    acc += x[i, ci, row, col] * w[o, ci, a, bb]
                    out[i, o, y, xx] = acc + (0.0 if b is None else b[o])
    return out


def conv_transpose2d(x, w, b, stride, pad):
    """Transposed convolution by its scatter definition: ``x (N,Cin,H,W)``,
    ``w (Cin,K,R,S)``; every input pixel adds ``x * w`` into an ``R x S`` output window."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, cin, h, wd = x.shape
    _, k, r, s = w.shape
    sy, sx = stride
    py, px = pad
    ho, wo = sy * (h - 1) + r - 2 * py, sx * (wd - 1) + s - 2 * px
    out = np.zeros((n, k, ho, wo))
    for i in range(n):
        for ci in range(cin):
            for y in range(h):
                for xx in range(wd):
                    for o in range(k):
                        for a in range(r):
                            for bb in range(s):
                                row, col = y * sy - py + a, xx * sx - px + bb
                                if 0 <= row < ho and 0 <= col < wo:
                                    out[i, o, row, col] += x[i, ci, y, xx] * w[ci, o, a, bb]
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out


def conv2d_filter_grad(x, g, filter_shape, stride, pad):
    """``dW[k,c,a,b] = sum over n,y,x of g[n,k,y,x] * x_padded[n,c,y*sy+a,x*sx+b]``."""
    x = np.asarray(x, np.float64)
    g = np.asarray(g, np.float64)
    k, c, r, s = filter_shape
    sy, sx = stride
    py, px = pad
    n, _, h, wd = x.shape
    ho, wo = g.shape[2:]
    dw = np.zeros(filter_shape)
    for o in range(k):
        for ci in range(c):
            for a in range(r):
                for b in range(s):
                    acc = 0.0
                    for i in range(n):
                        for y in range(ho):
                            for xx in range(wo):
                                row, col = y * sy - py + a, xx * sx - px + b
                                if 0 <= row < h and 0 <= col < wd:
                                    acc += g[i, o, y, xx] * x[i, ci, row, col]
                    dw[o, ci, a, b] = acc
    return dw


def conv2d_data_grad(g, w, data_shape, stride, pad):
    """Gradient of ``dot(conv2d(x, w), g)`` with respect to ``x``: scatter ``g * w`` back."""
    g = np.asarray(g, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = data_shape
    k, _, r, s = w.shape
    sy, sx = stride
    py, px = pad
    ho, wo = g.shape[2:]
    dx = np.zeros(data_shape)
    for i in range(n):
        for o in range(k):
            for y in range(ho):
                for xx in range(wo):
                    for ci in range(c):
                        for a in range(r):
                            for b in range(s):
                                row, col = y * sy - py + a, xx * sx - px + b
                                if 0 <= row < h and 0 <= col < wd:
                                    dx[i, ci, row, col] += g[i, o, y, xx] * w[o, ci, a, b]
    return dx
