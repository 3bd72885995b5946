"""dlib's bilinear resize of uint8 images (its SIMD loop's columns), compiled: the twin of
the band loop of ``dnnpy.image.resize._resize_into`` (whose docstrings say what is
computed), with the same float32 products and sums in the same order, so the pixels are
the numpy code's (and dlib's) bit for bit."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def bilinear_rows(img, r0, r1, top, bottom, itb, tb, lm, lr, ilr, out):
    """Output rows ``r0..r1-1``, columns ``0..len(lm)-1`` of ``out`` (rows, cols, channels
    uint8) from ``img`` (H, W, channels uint8): pixel (r, x) weighs the input pixels
    (top[r], lm[x]), (top[r], lm[x] + 1), (bottom[r], lm[x]), (bottom[r], lm[x] + 1) by
    ``itb[r] * ilr[x]``, ``itb[r] * lr[x]``, ``tb[r] * ilr[x]``, ``tb[r] * lr[x]`` (float32
    products), summed in that order in float32. RGB (3 channels): the sum truncated; grey
    (1 channel): ``trunc(sum + 0.5)`` in float64 (dlib's ``static_cast(value + 0.5)``)."""
    channels = img.shape[2]
    for r in range(r0, r1):
        t, b = top[r], bottom[r]
        wt, wb = itb[r], tb[r]
        for x in range(len(lm)):
            c0 = lm[x]
            w0, w1, w2, w3 = wt * ilr[x], wt * lr[x], wb * ilr[x], wb * lr[x]
            for c in range(channels):
                s = np.float32(img[t, c0, c]) * w0
                s += np.float32(img[t, c0 + 1, c]) * w1
                s += np.float32(img[b, c0, c]) * w2
                s += np.float32(img[b, c0 + 1, c]) * w3
                if channels == 3:
                    out[r, x, c] = np.uint8(s)
                else:
                    out[r, x, c] = np.uint8(np.trunc(np.float64(s) + 0.5))
