"""dlib's ``extract_fhog_features`` (``dlib/image_transforms/fhog.h``): Felzenszwalb's HOG
variant, 31 numbers per ``cell_size`` x ``cell_size`` cell, the features dlib's HOG detectors
(``get_frontal_face_detector``, ``simple_object_detector``) scan.

Per pixel (the image's border rows and columns excluded), the gradient: central differences
of the grey level, or of the RGB channel whose gradient is longest (ties broken as dlib's
SIMD and scalar code each break them). Its orientation snaps
to the nearest of 18 directions (9 unsigned x 2 signs, dlib's float32 unit vectors and its
order of comparisons), and its length votes into the 4 cells around the pixel, bilinearly.
Each cell's 18-bin histogram is then normalised by the energy of the 4 blocks of 2x2 cells
around it, truncated at 0.2, and summed over the blocks: 18 contrast-sensitive features, 9
contrast-insensitive ones (opposite directions added) and 4 texture features (one per
block). As dlib, the features of the outermost cells are not computed: a ``C`` x ``R`` cell
image gives ``(R - 2) x (C - 2)`` feature cells.

The interpolation weights are dlib's, in float32 (its 8-pixel SIMD blocks and its scalar
tail compute them with slightly different formulas; both are followed); the votes (weight
times length) are formed and summed in float64, so the features equal dlib's to float32
rounding (tests/test_fhog.py: 2e-6; measured 1.2e-7).

With the ``jit`` extra the histograms and the features are compiled loops
(``dnnpy/kernels/fhog.py``), the same steps in one pass; numpy runs the code below otherwise.
"""

from __future__ import annotations

import numpy as np

from .. import jit

__all__ = ["extract_fhog_features"]

# dlib's unit vectors of the 9 unsigned orientations, as it stores them (float32)
_DIRECTIONS = np.array([[1.0000, 0.0000], [0.9397, 0.3420], [0.7660, 0.6428], [0.500, 0.8660],
                        [0.1736, 0.9848], [-0.1736, 0.9848], [-0.5000, 0.8660], [-0.7660, 0.6428],
                        [-0.9397, 0.3420]], np.float32)
_F = np.float32
# pixels per band of the histogram pass: its temporaries (about 40 bytes a pixel) stay in
# cache instead of touching new pages (twice as fast as the whole image at once), and its
# numpy calls are long enough for threads (see resize.py's _BAND_VALUES)
_BAND_PIXELS = 1 << 16


def extract_fhog_features(img, cell_size=8, filter_rows_padding=1, filter_cols_padding=1):
    """dlib's ``extract_fhog_features(img, hog, cell_size, filter_rows_padding,
    filter_cols_padding)``: a ``(rows, cols, 31)`` float32 array, ``rows = cells_nr - 2 +
    filter_rows_padding - 1`` where ``cells_nr = round(img rows / cell_size)`` (the same for
    columns), the features placed ``(padding - 1) // 2`` cells in from the top left and zero
    around (padding for a filter of that size). ``img``: H x W uint8 grey or H x W x 3 uint8
    RGB. A too small image gives a ``(0, 0, 31)`` array, as dlib's empty one. ``cell_size``
    must be at least 2 (dlib's separate cell-size-1 variant is not implemented)."""
    a = np.asarray(img)
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)):
        raise TypeError(f"extract_fhog_features: expected an H x W or H x W x 3 uint8 image, got "
                        f"shape {a.shape} dtype {a.dtype}")
    cell = int(cell_size)
    if cell < 2 or filter_rows_padding < 1 or filter_cols_padding < 1:
        raise ValueError(f"extract_fhog_features: needs cell_size >= 2 and paddings >= 1, got "
                         f"{cell_size}, {filter_rows_padding}, {filter_cols_padding}")
    nr, nc = a.shape[:2]
    cells_nr = int(float(_F(nr) / _F(cell)) + 0.5)
    cells_nc = int(float(_F(nc) / _F(cell)) + 0.5)
    hog_nr, hog_nc = max(cells_nr - 2, 0), max(cells_nc - 2, 0)
    if hog_nr == 0 or hog_nc == 0:
        return np.zeros((0, 0, 31), np.float32)
    hist = _histograms(a, cell, cells_nr, cells_nc)
    out = np.zeros((hog_nr + filter_rows_padding - 1, hog_nc + filter_cols_padding - 1, 31), np.float32)
    top, left = (filter_rows_padding - 1) // 2, (filter_cols_padding - 1) // 2
    inner = out[top:top + hog_nr, left:left + hog_nc]
    if not jit.call("fhog", "features", hist, inner):
        inner[...] = _features(hist, cells_nr, cells_nc)
    return out


def _gradients(a, ny, nx, simd):
    """Each pixel's gradient for the pixels ``1..ny`` x ``1..nx``, as its key into
    ``_gradient_tables`` (``(gx + 255) * 511 + gy + 255``: the gradients are integers in
    -255..255): the grey level's, or the RGB channel's with the longest. On ties dlib's
    scalar code keeps the earlier channel (red, then green), its SIMD code (the columns
    where ``simd``, a prefix of the columns) the later one."""
    rgb = a.ndim == 3
    img = a[:ny + 2, :nx + 2]
    img = (img.transpose(2, 0, 1) if rgb else img).astype(np.int32)   # RGB: one plane per channel
    gx = img[..., 1:ny + 1, 2:nx + 2] - img[..., 1:ny + 1, :nx]
    gy = img[..., 2:ny + 2, 1:nx + 1] - img[..., :ny, 1:nx + 1]
    key = gx * 511
    key += gy
    key += 255 * 511 + 255
    if not rgb:
        return key
    # the channel with the longest gradient: squared lengths times 4 plus a tie-break in the
    # low 2 bits (the later channel wins in the SIMD columns, the earlier one in the tail),
    # so that one maximum finds the channel
    length = gx
    length *= gx
    gy *= gy
    length += gy
    length <<= 2
    length[1] += 1
    length[2] += 2
    n = int(np.count_nonzero(simd))
    if n < nx:
        length[0, :, n:] += 2
        length[2, :, n:] -= 2
    best = np.maximum(length[0], length[1])
    np.maximum(best, length[2], out=best)
    best &= 3
    if n < nx:
        tail = best[:, n:]
        tail *= -1
        tail += 2
    # the key of that channel (a take over the planes: faster than np.choose or np.where)
    pick = best.astype(np.int64)
    pick *= best.size
    pick += np.arange(best.size).reshape(best.shape)
    return key.take(pick)


_TABLES = []


def _gradient_tables():
    """For every integer gradient (gx, gy) in -255..255, at ``(gx + 255) * 511 + gy + 255``:
    its orientation bin (dlib's rule: direction o wins on ``dot > best``, then o + 9 on
    ``-dot > best``, in float32, 0 for no gradient) and its length ``sqrt(gx*gx + gy*gy)``
    in float32. Computed once, on first use."""
    if not _TABLES:
        g = np.arange(-255, 256, dtype=np.float32)
        gx, gy = np.repeat(g, 511), np.tile(g, 511)
        best = np.zeros(gx.shape, np.float32)
        orient = np.zeros(gx.shape, np.uint8)      # (a small table: its lookups stay in cache)
        for o in range(9):
            dot = gx * _DIRECTIONS[o, 0] + gy * _DIRECTIONS[o, 1]
            win = dot > best
            best, orient = np.where(win, dot, best), np.where(win, np.uint8(o), orient)
            win = -dot > best
            best, orient = np.where(win, -dot, best), np.where(win, np.uint8(o + 9), orient)
        _TABLES.append((orient, np.sqrt(gx * gx + gy * gy)))
    return _TABLES[0]


def _histograms(a, cell, cells_nr, cells_nc):
    """The 18-bin orientation histograms, (cells_nr + 2) x (cells_nc + 2) x 18 (a border of
    cells that receives votes but is never read), in float64.

    A pixel votes into the 4 cells around it. The votes are summed in two passes: a
    ``bincount`` per pixel row gives every row's histograms interpolated between the cells
    to the left and right (2 votes per pixel), then each cell row adds up the pixel rows
    around it, weighted (a batched matrix product over blocks of ``cell`` pixel rows)."""
    nr, nc = a.shape[:2]
    visible_nr = min(cells_nr * cell, nr) - 1
    visible_nc = min(cells_nc * cell, nc) - 1
    ny, nx = visible_nr - 1, visible_nc - 1
    width = cells_nc + 2
    hist = np.zeros((cells_nr + 2, width, 18), np.float64)
    if ny <= 0 or nx <= 0:
        return hist
    ys, xs = np.arange(1, visible_nr), np.arange(1, visible_nc)
    # dlib's 8-wide SIMD blocks cover x = 1, 9, ... while x < visible_nc - 7; the columns
    # after the last whole block go through its scalar code
    simd = xs < 1 + 8 * ((visible_nc - 8 + 7) // 8 if visible_nc > 8 else 0)
    # dlib's interpolation weights, in float32 as it computes them. Rows: yp = (y + 0.5) /
    # cell - 0.5, the cell row above is its floor (+1 for the border row)
    yp = ((ys + 0.5) / float(cell) - 0.5).astype(np.float32)
    iyp = np.floor(yp).astype(np.int64)
    vy0 = (yp - iyp.astype(np.float32)).astype(np.float32)
    vy1 = (1.0 - vy0.astype(np.float64)).astype(np.float32)
    # columns: the SIMD blocks compute xp = (x + 0.5) / cell + 0.5 in float32 and truncate
    # it (the column of the cell to the left, already +1); the scalar code
    # (x + 0.5) / cell - 0.5, floored, + 1
    xf = xs.astype(np.float32)
    xp_simd = (xf + _F(0.5)) / _F(cell) + _F(0.5)
    ix_simd = xp_simd.astype(np.int64)
    vx0_simd = xp_simd - ix_simd.astype(np.float32)
    xp_tail = ((xs + 0.5) / float(cell) - 0.5).astype(np.float32)
    ix_tail = np.floor(xp_tail).astype(np.int64)
    vx0_tail = (xp_tail - ix_tail.astype(np.float32)).astype(np.float32)
    col = np.where(simd, ix_simd, ix_tail + 1)
    vx0 = np.where(simd, vx0_simd, vx0_tail)
    vx1 = np.where(simd, _F(1) - vx0_simd, (1.0 - vx0_tail.astype(np.float64)).astype(np.float32))
    # the pixel rows voting into one pair of cell rows form runs of ``cell`` rows (the first
    # and last may be shorter): the first run is padded to a whole block of rows
    first = int(np.count_nonzero(iyp == iyp[0]))
    pad = cell - first
    blocks = -(-(pad + ny) // cell)
    if not np.array_equal((np.arange(ny) + pad) // cell, iyp - iyp[0]):
        raise AssertionError("extract_fhog_features: the pixel rows of a cell row are not contiguous")
    # the weight of each pixel row toward the cell row above and below, per block
    weight = np.zeros((blocks * cell, 2), np.float64)
    weight[pad:pad + ny, 0], weight[pad:pad + ny, 1] = vy1, vy0
    weight = weight.reshape(blocks, cell, 2).transpose(0, 2, 1)
    orient_table, length_table = _gradient_tables()
    vx0, vx1 = vx0.astype(np.float64), vx1.astype(np.float64)
    if jit.call("fhog", "histograms", a if a.ndim == 3 else a[:, :, None], ny, nx,
                int(np.count_nonzero(simd)), col, vx0, vx1, iyp, vy0.astype(np.float64),
                vy1.astype(np.float64), orient_table, hist):
        return hist
    col18 = col * 18
    top = int(iyp[0]) + 1
    # a band of blocks at a time (its temporaries stay in cache)
    band = max(1, _BAND_PIXELS // (cell * nx))
    for b0 in range(0, blocks, band):
        b1 = min(blocks, b0 + band)
        i0, i1 = max(0, b0 * cell - pad), min(ny, b1 * cell - pad)     # its pixel rows (y - 1)
        key = _gradients(a[i0:i1 + 2], i1 - i0, nx, simd)
        # the gradients are integers in -255..255: their orientations and lengths are looked up
        v = length_table.take(key)
        # pass 1: per pixel row, the votes into the cells to the left and right of each pixel
        index = (np.arange(i0 + pad - b0 * cell, i1 + pad - b0 * cell) * (width * 18))[:, None] + col18
        index += orient_table.take(key)
        index = index.ravel()
        size = (b1 - b0) * cell * width * 18
        rows = np.bincount(index, (v * vx1).ravel(), size).reshape(b1 - b0, cell, width * 18)
        rows[..., 18:] += np.bincount(index, (v * vx0).ravel(), size).reshape(b1 - b0, cell, width * 18)[..., :-18]
        # pass 2: each block of pixel rows into the cell row above and the one below its pixels
        votes = np.matmul(weight[b0:b1], rows).reshape(b1 - b0, 2, width, 18)
        hist[top + b0:top + b1] += votes[:, 0]
        hist[top + b0 + 1:top + b1 + 1] += votes[:, 1]
    return hist


def _features(hist, cells_nr, cells_nc):
    """The 31 features of every inner cell from the histograms (float64 in, float32 out).
    Computed on orientation planes (orientation, row, column), so that every operation runs
    along whole rows of cells."""
    planes = np.moveaxis(hist, 2, 0)
    h = planes[:, 1:-1, 1:-1]
    unsigned = h[:9] + h[9:]                                        # (9, cells_nr, cells_nc)
    norm = (unsigned * unsigned).sum(axis=0)
    hr, hc = cells_nr - 2, cells_nc - 2

    def n(dy, dx):
        return norm[dy:dy + hr, dx:dx + hc]

    # the energies of the 4 blocks of 2x2 cells around each cell, in dlib's lane order
    blocks = np.stack([n(1, 1) + n(1, 2) + n(2, 1) + n(2, 2), n(0, 1) + n(0, 2) + n(1, 1) + n(1, 2),
                       n(1, 0) + n(1, 1) + n(2, 0) + n(2, 1), n(0, 0) + n(0, 1) + n(1, 0) + n(1, 1)])
    nn = 0.2 * np.sqrt(blocks + float(_F(0.0001)))                 # (4, hr, hc)
    scale = 0.1 / nn
    cell_signed = np.ascontiguousarray(planes[:, 2:2 + hr, 2:2 + hc])   # (18, hr, hc)
    cell_unsigned = unsigned[:, 1:1 + hr, 1:1 + hc]                     # (9, hr, hc)
    # per block: the histograms truncated at its energy and scaled by it; the cell's features
    # sum the 4 blocks', its texture features are each block's sum over orientations
    out = np.zeros((31, hr, hc), np.float64)
    signed, unsigned_k = np.empty_like(cell_signed), np.empty(cell_unsigned.shape)
    for k in range(4):
        np.minimum(cell_signed, nn[k], out=signed)
        signed *= scale[k]
        out[:18] += signed
        np.minimum(cell_unsigned, nn[k], out=unsigned_k)
        unsigned_k *= scale[k]
        out[18:27] += unsigned_k
        np.multiply(signed.sum(axis=0), 2 * 0.2357, out=out[27 + k])
    return np.moveaxis(out, 0, 2).astype(np.float32)
