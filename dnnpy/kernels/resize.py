"""dlib's bilinear resize of uint8 images (its SIMD loop's columns), compiled: the twin of
the band loop of ``dnnpy.image.resize._resize_into`` (whose docstrings say what is
computed), with the same float32 products and sums in the same order, so the pixels are
the numpy code's (and dlib's) bit for bit."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _gather(img, y, columns, step, left, right):
    """The values at ``columns`` and ``columns + step`` of row ``y`` as float32: what the
    output rows reading row ``y`` weigh."""
    for x in range(len(columns)):
        left[x] = img[y, columns[x]]
        right[x] = img[y, columns[x] + step]


@njit(cache=True, nogil=True)
def bilinear_rows(img, r0, r1, top, bottom, itb, tb, columns, step, lr, ilr, truncate, out):
    """Output rows ``r0..r1-1`` of ``out`` (rows, n uint8) from ``img`` (H, W uint8; an RGB
    image as H x 3W, its channels' values side by side): value (r, x) weighs the input
    values (top[r], columns[x]), (top[r], columns[x] + step), (bottom[r], columns[x]),
    (bottom[r], columns[x] + step) by ``itb[r] * ilr[x]``, ``itb[r] * lr[x]``, ``tb[r] *
    ilr[x]``, ``tb[r] * lr[x]`` (float32 products), summed in that order in float32; then
    truncated (``truncate``: dlib's RGB pixels) or ``trunc(sum + 0.5)`` in float64 (grey:
    dlib's ``static_cast(value + 0.5)``). ``top`` and ``bottom`` never decrease: each input
    row is gathered once, while the output rows that read it are made."""
    n = len(columns)
    # two slots of gathered rows (values at columns, at columns + step), the row each holds
    gathered = np.empty((2, 2, n), np.float32)
    held = np.array([-1, -1])
    for r in range(r0, r1):
        t, b = top[r], bottom[r]
        st = 0 if held[0] == t else 1 if held[1] == t else -1
        if st < 0:
            st = 1 if held[0] == b else 0          # (not the slot holding the bottom row)
            _gather(img, t, columns, step, gathered[st, 0], gathered[st, 1])
            held[st] = t
        sb = st if b == t else 0 if held[0] == b else 1 if held[1] == b else -1
        if sb < 0:
            sb = 1 - st
            _gather(img, b, columns, step, gathered[sb, 0], gathered[sb, 1])
            held[sb] = b
        tl, tr, bl, br = gathered[st, 0], gathered[st, 1], gathered[sb, 0], gathered[sb, 1]
        wt, wb = itb[r], tb[r]
        row = out[r]
        if truncate:
            for x in range(n):
                s = tl[x] * (wt * ilr[x])
                s += tr[x] * (wt * lr[x])
                s += bl[x] * (wb * ilr[x])
                s += br[x] * (wb * lr[x])
                row[x] = np.uint8(s)
        else:
            for x in range(n):
                s = tl[x] * (wt * ilr[x])
                s += tr[x] * (wt * lr[x])
                s += bl[x] * (wb * ilr[x])
                s += br[x] * (wb * lr[x])
                row[x] = np.uint8(np.trunc(np.float64(s) + 0.5))
