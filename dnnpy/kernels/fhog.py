"""fHOG's orientation histograms as one compiled pass over the pixels: the twin of
``dnnpy.image.fhog._histograms`` (whose docstrings say what is computed). The gradients,
the channel choice, the orientation bins and the interpolation weights are the numpy code's
exactly; the votes are summed in float64 in another order (pixel after pixel, where numpy
sums with ``bincount`` and a matrix product), so the histograms agree to float64 rounding."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _gradients(up, mid, down, j0, j1, later_wins, channels, key, v):
    """The gradients of the row ``mid`` at columns ``1 + j`` for ``j0 <= j < j1`` (``up``,
    ``mid``, ``down``: the rows above, at and below, each (channels, W) int32): ``key[j]``
    (gx + 255) * 511 + gy + 255 of the grey level's gradient, or the RGB channel's with the
    longest (ties: the later channel when ``later_wins``), ``v[j]`` its float32 length.
    (``channels`` is passed as a constant, so that the loop over them unrolls and the loop
    over the columns runs in SIMD registers.)"""
    for j in range(j0, j1):
        x = j + 1
        gx = mid[0, x + 1] - mid[0, x - 1]
        gy = down[0, x] - up[0, x]
        best = gx * gx + gy * gy
        for c in range(1, channels):
            cx = mid[c, x + 1] - mid[c, x - 1]
            cy = down[c, x] - up[c, x]
            length = cx * cx + cy * cy
            win = length >= best if later_wins else length > best
            gx = cx if win else gx
            gy = cy if win else gy
            best = length if win else best
        key[j] = (gx + 255) * 511 + gy + 255
        v[j] = np.sqrt(np.float32(best))


@njit(cache=True, nogil=True, inline="always")
def _planes(a, y, out):
    """Row ``y`` of ``a`` (H, W, channels) into ``out`` (channels, W)."""
    if a.shape[2] == 3:
        for x in range(a.shape[1]):
            out[0, x], out[1, x], out[2, x] = a[y, x, 0], a[y, x, 1], a[y, x, 2]
    else:
        for x in range(a.shape[1]):
            out[0, x] = a[y, x, 0]


@njit(cache=True, nogil=True)
def histograms(a, ny, nx, nsimd, col, vx0, vx1, iyp, vy0, vy1, orient_table, hist):
    """Add the votes of the pixels ``1..ny`` x ``1..nx`` of ``a`` (H, W, 1 or 3 uint8) into
    ``hist`` ((cells_nr + 2), width, 18 float64, zeroed). Pixel column ``1 + j`` votes into
    cell columns ``col[j]`` (weight ``vx1[j]``) and ``col[j] + 1`` (``vx0[j]``); pixel row
    ``1 + i`` into cell rows ``iyp[i] + 1`` (``vy1[i]``) and ``iyp[i] + 2`` (``vy0[i]``).
    RGB: the channel with the longest gradient; ties go to the later channel in the columns
    ``j < nsimd`` (dlib's SIMD code), to the earlier one after them (its scalar code). A
    vote's length is the float32 square root of the squared length (the numpy code's table
    holds the same values)."""
    width = hist.shape[1]
    channels = a.shape[2]
    row = np.zeros(width * 18, np.float64)
    key = np.empty(nx, np.int32)
    v = np.empty(nx, np.float32)
    # the three image rows around the current one, one plane per channel (so that the
    # gradient loop runs on contiguous rows: 6x faster than on interleaved RGB)
    planes = np.empty((3, channels, a.shape[1]), np.int32)
    for y in range(2):
        _planes(a, y, planes[y])
    for i in range(ny):
        y = i + 1
        down = planes[(y + 1) % 3]
        _planes(a, y + 1, down)
        up, mid = planes[(y - 1) % 3], planes[y % 3]
        if channels == 3:
            _gradients(up, mid, down, 0, nsimd, True, 3, key, v)
            _gradients(up, mid, down, nsimd, nx, False, 3, key, v)
        else:
            _gradients(up, mid, down, 0, nx, True, 1, key, v)
        # the row's votes into the cells left and right of each pixel, then into the cell
        # rows above and below
        row[:] = 0.0
        for j in range(nx):
            at = col[j] * 18 + orient_table[key[j]]
            row[at] += np.float64(v[j]) * vx1[j]
            row[at + 18] += np.float64(v[j]) * vx0[j]
        above, below = iyp[i] + 1, iyp[i] + 2
        w1, w0 = vy1[i], vy0[i]
        for c in range(width):
            for o in range(18):
                hist[above, c, o] += w1 * row[c * 18 + o]
                hist[below, c, o] += w0 * row[c * 18 + o]


@njit(cache=True, nogil=True)
def features(hist, out):
    """The 31 features of every inner cell into ``out`` (cells_nr - 2, cells_nc - 2, 31
    float32) from the histograms ``hist`` (cells_nr + 2, cells_nc + 2, 18 float64): the
    twin of ``dnnpy.image.fhog._features``, its float64 operations in its order (numpy
    sums over an outer axis one row after another), so the features are its own bit for
    bit."""
    rows, cols = out.shape[0], out.shape[1]
    # the energy of each cell's unsigned histogram (the cells around the inner ones too)
    norm = np.zeros((rows + 2, cols + 2), np.float64)
    for r in range(rows + 2):
        for c in range(cols + 2):
            acc = 0.0
            for o in range(9):
                u = hist[r + 1, c + 1, o] + hist[r + 1, c + 1, o + 9]
                acc += u * u
            norm[r, c] = acc
    eps = np.float64(np.float32(0.0001))
    nn = np.empty(4, np.float64)
    scale = np.empty(4, np.float64)
    f = np.empty(31, np.float64)
    for r in range(rows):
        for c in range(cols):
            # the 4 blocks of 2x2 cells around the cell, in dlib's lane order
            nn[0] = norm[r + 1, c + 1] + norm[r + 1, c + 2] + norm[r + 2, c + 1] + norm[r + 2, c + 2]
            nn[1] = norm[r, c + 1] + norm[r, c + 2] + norm[r + 1, c + 1] + norm[r + 1, c + 2]
            nn[2] = norm[r + 1, c] + norm[r + 1, c + 1] + norm[r + 2, c] + norm[r + 2, c + 1]
            nn[3] = norm[r, c] + norm[r, c + 1] + norm[r + 1, c] + norm[r + 1, c + 1]
            for k in range(4):
                nn[k] = 0.2 * np.sqrt(nn[k] + eps)
                scale[k] = 0.1 / nn[k]
            f[:] = 0.0
            for k in range(4):
                texture = 0.0
                for o in range(18):
                    s = min(hist[r + 2, c + 2, o], nn[k]) * scale[k]
                    f[o] += s
                    texture += s
                for o in range(9):
                    u = hist[r + 2, c + 2, o] + hist[r + 2, c + 2, o + 9]
                    f[18 + o] += min(u, nn[k]) * scale[k]
                f[27 + k] = texture * (2 * 0.2357)
            for o in range(31):
                out[r, c, o] = np.float32(f[o])
