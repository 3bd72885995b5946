"""CPU twin of pooling (numpy): max and average pooling forward and backward.

The dispatcher (``tensor_tools.spatial.pooling``) has checked the shapes. Pooling works on
windows of the padded image: a loop over the window's taps (each a strided slice covering
every output pixel at once) when the window is small, otherwise a sliding-window view
reduced in one call; never a loop over pixels or samples.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._twins import twin_ops

__all__ = twin_ops("pooling")


def _padded(x, py, px, fill):
    """``x`` padded by ``(py, px)`` on each side with ``fill`` (x itself when no padding)."""
    if py == 0 and px == 0:
        return x
    n, k, h, w = x.shape
    out = np.full((n, k, h + 2 * py, w + 2 * px), fill, dtype=x.dtype)
    out[:, :, py:py + h, px:px + w] = x
    return out


def _windows(xp, wh, ww, sy, sx, ho, wo):
    """``(N, K, Ho, Wo, wh, ww)`` view: the window of every output pixel."""
    return sliding_window_view(xp, (wh, ww), axis=(2, 3))[:, :, :(ho - 1) * sy + 1:sy, :(wo - 1) * sx + 1:sx]


def _tap(xp, i, j, sy, sx, ho, wo):
    """Tap ``(i, j)`` of every window: an ``(N, K, Ho, Wo)`` strided slice."""
    return xp[:, :, i:i + (ho - 1) * sy + 1:sy, j:j + (wo - 1) * sx + 1:sx]


def _valid_counts(size, n_out, window, stride, pad):
    """Per output position, how many of the window's rows (or columns) lie in the image."""
    start = np.arange(n_out) * stride - pad
    return np.minimum(start + window, size) - np.maximum(start, 0)


def pooling_forward(dest, src, do_max, wh, ww, sy, sx, py, px, state=None):
    x = src.host_read()
    _, _, h, w = x.shape
    ho, wo = dest.nr(), dest.nc()
    out = dest.host_write_only()
    if do_max:
        # -inf padding never wins (the window always holds at least one image pixel)
        xp = _padded(x, py, px, -np.inf)
        if wh * ww <= ho * wo:
            out[...] = _tap(xp, 0, 0, sy, sx, ho, wo)
            for i in range(wh):
                for j in range(ww):
                    if i or j:
                        np.maximum(out, _tap(xp, i, j, sy, sx, ho, wo), out=out)
        else:
            out[...] = _windows(xp, wh, ww, sy, sx, ho, wo).max(axis=(-2, -1))
        return
    xp = _padded(x, py, px, 0)
    if wh * ww <= ho * wo:
        out[...] = _tap(xp, 0, 0, sy, sx, ho, wo)
        for i in range(wh):
            for j in range(ww):
                if i or j:
                    out += _tap(xp, i, j, sy, sx, ho, wo)
    else:
        out[...] = _windows(xp, wh, ww, sy, sx, ho, wo).sum(axis=(-2, -1))
    # the mean is over the window clipped to the image (padding excluded from the count)
    count = np.outer(_valid_counts(h, ho, wh, sy, py), _valid_counts(w, wo, ww, sx, px))
    out /= count.astype(out.dtype)


def _first_inside(ho, wo, sy, sx, py, px):
    """Per window, the (row, col) offset of its first pixel inside the image: where a NaN
    window (whose max matches nothing) sends its gradient."""
    return (np.maximum(py - np.arange(ho) * sy, 0)[:, None] + np.zeros((1, wo), dtype=np.int64),
            np.maximum(px - np.arange(wo) * sx, 0)[None, :] + np.zeros((ho, 1), dtype=np.int64))


def _inside(n_out, window, stride, pad, size):
    """``(n_out, window)``: whether tap i of output position r lies inside the image."""
    pos = np.arange(n_out)[:, None] * stride - pad + np.arange(window)[None, :]
    return (pos >= 0) & (pos < size)


def _max_backward_taps(x, gi, gp, wh, ww, sy, sx, py, px):
    """Small windows: one pass per tap, in row-major order; a window's gradient goes to the
    first tap that equals its max (dlib's ``max_point``)."""
    _, _, h, w = x.shape
    ho, wo = gi.shape[2:]
    xp = _padded(x, py, px, -np.inf)
    best = np.empty(gi.shape, dtype=x.dtype)
    best[...] = _tap(xp, 0, 0, sy, sx, ho, wo)
    for i in range(wh):
        for j in range(ww):
            np.maximum(best, _tap(xp, i, j, sy, sx, ho, wo), out=best)
    row_ok, col_ok = _inside(ho, wh, sy, py, h), _inside(wo, ww, sx, px, w)
    done = np.zeros(gi.shape, dtype=bool)
    for i in range(wh):
        for j in range(ww):
            hit = _tap(xp, i, j, sy, sx, ho, wo) == best
            hit &= row_ok[:, i][:, None] & col_ok[:, j][None, :]
            hit &= ~done
            view = _tap(gp, i, j, sy, sx, ho, wo)
            np.add(view, gi, out=view, where=hit)
            done |= hit
    if not done.all():
        nn, kk, rr, cc = np.nonzero(~done)
        i0, j0 = _first_inside(ho, wo, sy, sx, py, px)
        np.add.at(gp, (nn, kk, rr * sy + i0[rr, cc], cc * sx + j0[rr, cc]), gi[nn, kk, rr, cc])


def _max_backward_windows(x, gi, gp, wh, ww, sy, sx, py, px):
    """Large windows (few of them): the first row-major maximum of each window by argmax
    over a window view, scattered with one bincount."""
    n, k, h, w = x.shape
    ho, wo = gi.shape[2:]
    win = _windows(_padded(x, py, px, -np.inf), wh, ww, sy, sx, ho, wo)
    row_ok, col_ok = _inside(ho, wh, sy, py, h), _inside(wo, ww, sx, px, w)
    valid = row_ok[:, None, :, None] & col_ok[None, :, None, :]          # (Ho, Wo, wh, ww)
    hit = ((win == win.max(axis=(-2, -1), keepdims=True)) & valid).reshape(n, k, ho, wo, wh * ww)
    i0, j0 = _first_inside(ho, wo, sy, sx, py, px)
    tap = np.where(hit.any(axis=-1), hit.argmax(axis=-1), i0 * ww + j0)
    r = np.arange(ho)[:, None] * sy + tap // ww          # padded coordinates
    c = np.arange(wo)[None, :] * sx + tap % ww
    hp, wp = gp.shape[2:]
    idx = np.arange(n * k).reshape(n, k, 1, 1) * (hp * wp) + r * wp + c
    total = np.bincount(idx.reshape(-1), weights=gi.reshape(-1), minlength=gp.size)
    gp += total.reshape(gp.shape).astype(gp.dtype, copy=False)


def pooling_backward(gradient_input, dest, src, grad, do_max, wh, ww, sy, sx, py, px,
                     add_to=True, state=None):
    x = src.host_read()
    gi = gradient_input.host_read()
    n, k, h, w = x.shape
    ho, wo = gi.shape[2:]
    g = grad.host() if add_to else grad.host_write_only()
    # gradients land in a zero-padded buffer; what falls on the padding is dropped
    gp = np.zeros((n, k, h + 2 * py, w + 2 * px), dtype=g.dtype)
    small = wh * ww <= ho * wo
    if do_max:
        (_max_backward_taps if small else _max_backward_windows)(x, gi, gp, wh, ww, sy, sx, py, px)
    else:
        count = np.outer(_valid_counts(h, ho, wh, sy, py), _valid_counts(w, wo, ww, sx, px))
        delta = gi / count.astype(gi.dtype)
        if small:
            for i in range(wh):
                for j in range(ww):
                    _tap(gp, i, j, sy, sx, ho, wo)[...] += delta
        else:
            # few windows: spread each window's share over its whole padded extent at once
            for r in range(ho):
                for c in range(wo):
                    gp[:, :, r * sy:r * sy + wh, c * sx:c * sx + ww] += delta[:, :, r:r + 1, c:c + 1]
    if add_to:
        g += gp[:, :, py:py + h, px:px + w]
    else:
        g[...] = gp[:, :, py:py + h, px:px + w]
