"""dlib's bilinear resize of uint8 images (its SIMD loop's columns), compiled: the twin of
the band loop of ``dnnpy.image.resize._resize_into`` (whose docstrings say what is
computed), with the same float32 products and sums in the same order, so the pixels are
the numpy code's (and dlib's) bit for bit."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _held(held, y):
    """The slot holding row ``y``, or -1."""
    return 0 if held[0] == y else 1 if held[1] == y else -1


@njit(cache=True, nogil=True, inline="always")
def _slot(img, y, columns, step, gathered, held, avoid):
    """The slot of ``gathered`` holding row ``y``'s values at ``columns`` and ``columns +
    step`` (float32): gathered into the slot other than ``avoid`` when no slot holds them."""
    s = _held(held, y)
    if s >= 0:
        return s
    s = 1 if avoid == 0 else 0
    for x in range(len(columns)):
        gathered[s, 0, x] = img[y, columns[x]]
        gathered[s, 1, x] = img[y, columns[x] + step]
    held[s] = y
    return s


@njit(cache=True, nogil=True, inline="always")
def _weighed(g, st, sb, wt, wb, lr, ilr, x):
    """Value ``x`` of an output row: its four input values weighed in dlib's order."""
    s = g[st, 0, x] * (wt * ilr[x])
    s += g[st, 1, x] * (wt * lr[x])
    s += g[sb, 0, x] * (wb * ilr[x])
    s += g[sb, 1, x] * (wb * lr[x])
    return s


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
        # the top row into a slot the bottom row does not hold, then the bottom row
        st = _slot(img, top[r], columns, step, gathered, held, _held(held, bottom[r]))
        sb = _slot(img, bottom[r], columns, step, gathered, held, st)
        wt, wb, row = itb[r], tb[r], out[r]
        if truncate:
            for x in range(n):
                row[x] = np.uint8(_weighed(gathered, st, sb, wt, wb, lr, ilr, x))
        else:
            for x in range(n):
                value = np.float64(_weighed(gathered, st, sb, wt, wb, lr, ilr, x))
                row[x] = np.uint8(np.trunc(value + 0.5))
