"""CPU twin of pooling (numpy): max and average pooling forward and backward.

The dispatcher (``tensor_tools.spatial.pooling``) has checked the shapes. Pooling works on
windows of the padded image: a loop over the window's taps (each a strided slice covering
every output pixel at once) when the window is small, otherwise a sliding-window view
reduced in one call; never a loop over pixels or samples.

The small-window backward writes the gradient straight into ``grad``: each tap is one
strided block of the image (restricted to the outputs whose tap lies inside it, so no
padded copy), a max window's gradient goes to its first tap equal to the forward's output
``dest``, and with ``add_to=False`` a tiling of the image is assigned tap by tap (other
geometries are zero-filled first, then added to).
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._twins import twin_ops
from . import onednn

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
    if onednn.pooling_forward(dest, src, do_max, wh, ww, sy, sx, py, px, state=state):
        return
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


def _tap_range(n_out, stride, pad, tap, size):
    """``(first, stop, start)``: the output positions ``[first, stop)`` whose window tap
    ``tap`` lies inside the image (``0 <= r*stride - pad + tap < size``), and the image
    position of the first one."""
    first = max(0, -(-(pad - tap) // stride))
    stop = min(n_out, (size - 1 + pad - tap) // stride + 1)
    return first, max(first, stop), first * stride - pad + tap


def _tap_views(shape, out_hw, wh, ww, sy, sx, py, px):
    """Per window tap ``(i, j)`` in row-major order: ``(out_slice, in_slice)``, the output
    block whose tap (i, j) lies inside the image and the strided image block it reads."""
    h, w = shape
    ho, wo = out_hw
    for i in range(wh):
        r0, r1, y0 = _tap_range(ho, sy, py, i, h)
        for j in range(ww):
            c0, c1, x0 = _tap_range(wo, sx, px, j, w)
            if r0 < r1 and c0 < c1:
                yield ((Ellipsis, slice(r0, r1), slice(c0, c1)),
                       (Ellipsis, slice(y0, y0 + (r1 - r0 - 1) * sy + 1, sy),
                        slice(x0, x0 + (c1 - c0 - 1) * sx + 1, sx)))


def _tiles(shape, out_hw, wh, ww, sy, sx, py, px):
    """Whether the windows partition the image exactly (each pixel in one window)."""
    return (sy == wh and sx == ww and py == 0 and px == 0
            and shape[0] == out_hw[0] * wh and shape[1] == out_hw[1] * ww)


def _max_backward_taps(x, y, gi, g, add_to, wh, ww, sy, sx, py, px):
    """Small windows: one pass per tap, in row-major order, over every window at once; a
    window's gradient goes to the first tap equal to its max ``y`` (dlib's ``max_point``).
    Writes ``g`` directly: assigned when the windows tile the image, else zero-filled first
    (``add_to`` False) and added to. A finite gradient is scattered as ``gi * hit`` (exact:
    ``gi*1`` is gi and ``gi*0`` a zero, far faster than a masked ``where=`` op); a non-finite
    one with masked ops, so a NaN never leaks to pixels that are not the maximum."""
    h, w = x.shape[2:]
    tiles = _tiles((h, w), gi.shape[2:], wh, ww, sy, sx, py, px)
    assign = not add_to and tiles
    if not add_to and not tiles:
        g.fill(0)
    finite = bool(np.isfinite(gi).all())
    done = np.zeros(gi.shape, dtype=bool)
    scratch = None if assign or not finite else np.empty(gi.shape, dtype=g.dtype)
    for out_idx, in_idx in _tap_views((h, w), gi.shape[2:], wh, ww, sy, sx, py, px):
        d = done[out_idx]
        hit = np.equal(x[in_idx], y[out_idx])
        np.greater(hit, d, out=hit)       # a hit not already taken by an earlier tap
        np.logical_or(d, hit, out=d)
        view, gv = g[in_idx], gi[out_idx]
        if finite and assign:
            np.multiply(gv, hit, out=view)
        elif finite:
            tmp = scratch[out_idx]
            np.multiply(gv, hit, out=tmp)
            view += tmp
        elif assign:
            view.fill(0)
            np.copyto(view, gv, where=hit)
        else:
            np.add(view, gv, out=view, where=hit)
    if not done.all():
        # a window whose max matches nothing (a NaN): its first pixel inside the image
        ho, wo = gi.shape[2:]
        nn, kk, rr, cc = np.nonzero(~done)
        i0, j0 = _first_inside(ho, wo, sy, sx, py, px)
        rows, cols = rr * sy - py + i0[rr, cc], cc * sx - px + j0[rr, cc]
        if assign:   # the pixel got gi*0 (or 0) from its own tap: it is this window's only
            g[nn, kk, rows, cols] = gi[nn, kk, rr, cc]
        else:
            np.add.at(g, (nn, kk, rows, cols), gi[nn, kk, rr, cc])


def _avg_backward_taps(gi, g, add_to, h, w, wh, ww, sy, sx, py, px):
    """Small windows: each tap adds (or, when the windows tile the image, assigns) its
    window's share to the strided block of pixels it covers."""
    ho, wo = gi.shape[2:]
    count = np.outer(_valid_counts(h, ho, wh, sy, py), _valid_counts(w, wo, ww, sx, px))
    delta = gi / count.astype(gi.dtype)
    tiles = _tiles((h, w), (ho, wo), wh, ww, sy, sx, py, px)
    if tiles:
        # one broadcast pass over grad seen as (N, K, Ho, wh, Wo, ww): each pixel once
        g6 = g.reshape(g.shape[0], g.shape[1], ho, wh, wo, ww, copy=False)   # a view, never a copy
        share = delta[:, :, :, None, :, None]
        if add_to:
            g6 += share
        else:
            g6[...] = share
        return
    if not add_to:
        g.fill(0)
    for out_idx, in_idx in _tap_views((h, w), (ho, wo), wh, ww, sy, sx, py, px):
        g[in_idx] += delta[out_idx]


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
    if onednn.pooling_backward(gradient_input, dest, src, grad, do_max, wh, ww, sy, sx, py, px,
                               add_to=add_to, state=state):
        return
    x = src.host_read()
    gi = gradient_input.host_read()
    n, k, h, w = x.shape
    ho, wo = gi.shape[2:]
    g = grad.host() if add_to else grad.host_write_only()
    if wh * ww <= ho * wo:
        if do_max:
            _max_backward_taps(x, dest.host_read(), gi, g, add_to, wh, ww, sy, sx, py, px)
        else:
            _avg_backward_taps(gi, g, add_to, h, w, wh, ww, sy, sx, py, px)
        return
    # few, large windows: the gradients land in a zero-padded buffer; what falls on the
    # padding is dropped
    gp = np.zeros((n, k, h + 2 * py, w + 2 * px), dtype=g.dtype)
    if do_max:
        _max_backward_windows(x, gi, gp, wh, ww, sy, sx, py, px)
    else:
        count = np.outer(_valid_counts(h, ho, wh, sy, py), _valid_counts(w, wo, ww, sx, px))
        delta = gi / count.astype(gi.dtype)
        # few windows: spread each window's share over its whole padded extent at once
        for r in range(ho):
            for c in range(wo):
                gp[:, :, r * sy:r * sy + wh, c * sx:c * sx + ww] += delta[:, :, r:r + 1, c:c + 1]
    if add_to:
        g += gp[:, :, py:py + h, px:px + w]
    else:
        g[...] = gp[:, :, py:py + h, px:px + w]
