"""dlib's bilinear ``resize_image`` on numpy images (image_transforms/interpolation.h), bit
for bit. It is the resampler of ``letterbox_image``, ``pyramid_up`` and ``pyramid_down(N)`` for
N >= 4.

dlib's grayscale and RGB resizes are SIMD loops: 4 output columns at a time in float32, with
the column coordinate accumulated in float32 (``x += float(4 * x_scale)``), then a scalar loop
for the leftover columns of each row. The code below evaluates the same float32/float64
expressions in the same order on whole arrays; ``np.add.accumulate`` is a sequential sum, so it
reproduces dlib's running coordinates exactly. With the ``jit`` extra the main loop of uint8
images is a compiled loop (``dnnpy/kernels/resize.py``) of the same float32 steps.
"""

from __future__ import annotations

import numpy as np

from .. import jit
from ..geometry import lround

__all__ = ["resize_image"]

# float32 values per plane-band of the bilinear resize's main loop (1 MB): a band's
# temporaries stay in cache (the whole image at once is 1.5x slower), and its numpy calls are
# long enough that a thread making pyramid levels beside threads computing their features
# seldom waits for the GIL (256 KB bands: 10% slower HOG detection on 2 cores)
_BAND_VALUES = 1 << 18


def _check_hw(img, name):
    """``img`` as an array, HxW or HxWxC (the one shape check of dnnpy.image's functions)."""
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise ValueError(f"{name}: expected an HxW or HxWxC image, got shape {img.shape}")
    return img


def _check_image(img, name):
    img = _check_hw(img, name)
    if img.dtype == np.bool_ or not (np.issubdtype(img.dtype, np.integer) or np.issubdtype(img.dtype, np.floating)):
        raise TypeError(f"{name}: expected an integer or float image, got dtype {img.dtype}")
    return img


def _assign(v, dtype):
    """dlib's ``assign_pixel`` from a float to ``dtype``: clamp to the type's range, then
    truncate toward zero (a ``static_cast``) for integers."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.trunc(np.clip(v, info.min, info.max)).astype(dtype)
    return v.astype(dtype)


def _resize_into(img, rows, cols, parallel=None):
    """dlib's ``resize_image(in, out, interpolate_bilinear)`` for a ``rows x cols`` output.
    ``parallel``: None, or a function ``parallel(n, f)`` calling ``f(j)`` for every ``j`` in
    ``range(n)`` (on several threads: ``dnnpy.parallel.parallel_for(0, n, f)``); the bands
    of output rows of grey and uint8 RGB images are made by it (others take dlib's generic
    path, on the calling thread)."""
    nr, nc = img.shape[:2]
    out = np.zeros((rows, cols) + img.shape[2:], img.dtype)
    if out.size == 0 or img.size == 0:
        return out
    xs = (nc - 1) / max(cols - 1, 1)
    ys = (nr - 1) / max(rows - 1, 1)
    # rows: y = -y_scale, then y += y_scale per row, in double
    y = np.add.accumulate(np.concatenate([[-ys], np.full(rows, ys)]))[1:]
    top = np.floor(y).astype(np.intp)
    bottom = np.minimum(top + 1, nr - 1)
    tb = y - top
    gray = img.ndim == 2
    rgb = img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8
    if not (gray or rgb):
        return _resize_generic(img, out, xs, top, bottom, tb)

    # main loop: lanes start at float(-4s + j*s), and every block adds float(4s) in float32
    nblk_max = (cols + 3) // 4 + 1
    acc = np.empty((nblk_max + 1, 4), np.float32)
    acc[0] = np.array([-4 * xs + j * xs for j in range(4)], dtype=np.float64).astype(np.float32)
    acc[1:] = np.float32(4 * xs)
    xf = np.add.accumulate(acc, axis=0)[1:]
    left = np.trunc(xf).astype(np.int64)          # cvttps: truncation
    # the loop stops at the first block whose 4th lane's right neighbour leaves the image (and,
    # where dlib would write past the row, before that)
    stop = (left[:, 3] + 1 >= nc) | (np.arange(nblk_max) * 4 + 3 >= cols)
    nblk = int(np.argmax(stop))
    cm = 4 * nblk
    if cm:
        xm, lm = xf[:nblk].reshape(-1), left[:nblk].reshape(-1)
        lr = xm - lm.astype(np.float32)
        ilr = np.float32(1) - lr
        tbf = tb.astype(np.float32)[:, None]
        itbf = (1 - tb).astype(np.float32)[:, None]
        # a band of output rows at a time (its float32 temporaries stay in cache; bands are
        # independent, so ``parallel`` may run them on several threads): the input rows the
        # band reads as planes (channel, row, column), in their own type; their columns lm
        # and lm + 1 gathered once (a gather of single values is the slow part: done on the
        # input rows, not on each output row's top and bottom rows); then the rows top and
        # bottom of both, weighted per pixel (the multiply converts to float32 as it goes)
        # and summed in dlib's order, for every plane alike
        channels = img.shape[2] if rgb else 1
        band = max(1, _BAND_VALUES // (channels * cm))

        # uint8 images: by the compiled kernel where it runs (dnnpy/kernels/resize.py), an
        # RGB image as one of 3 x its width (each channel's values 3 apart), so that its
        # loops run on contiguous values
        compiled = img.dtype == np.uint8 and jit.active()
        if compiled:        # (reshaping a strided image copies it: only for the kernel)
            c3 = 3 if rgb else 1
            flat_in, flat_out = img.reshape(nr, nc * c3), out.reshape(rows, cols * c3)[:, :cm * c3]
            flat_cols = (lm[:, None] * c3 + np.arange(c3)).ravel()
            flat_lr, flat_ilr = np.repeat(lr, c3), np.repeat(ilr, c3)
            itb_rows, tb_rows = itbf.ravel(), tbf.ravel()

        def run_band(j):
            r0, r1 = j * band, min(rows, (j + 1) * band)
            if compiled and jit.call("resize", "bilinear_rows", flat_in, r0, r1, top, bottom,
                                     itb_rows, tb_rows, flat_cols, c3, flat_lr, flat_ilr, rgb,
                                     flat_out):
                return
            above, below = top[r0:r1], bottom[r0:r1]
            lo, hi = above[0], below[-1] + 1            # top and bottom never decrease
            if hi - lo <= 2 * (r1 - r0):               # the rows lo..hi - 1
                planes = np.moveaxis(img[lo:hi].reshape(hi - lo, nc, -1), 2, 0)
                above, below = above - lo, below - lo
            else:                                       # a large shrink: only the rows read
                read = np.unique(np.concatenate([above, below]))
                planes = np.moveaxis(img.reshape(nr, nc, -1), 2, 0)[:, read]
                above, below = np.searchsorted(read, above), np.searchsorted(read, below)
            planes = np.ascontiguousarray(planes)
            left_cols, right_cols = planes.take(lm, axis=2), planes.take(lm + 1, axis=2)
            s = np.multiply(left_cols[:, above], itbf[r0:r1] * ilr, dtype=np.float32)
            term = np.empty_like(s)
            for src, rows_, weight in ((right_cols, above, itbf[r0:r1] * lr),
                                       (left_cols, below, tbf[r0:r1] * ilr),
                                       (right_cols, below, tbf[r0:r1] * lr)):
                np.multiply(src[:, rows_], weight, out=term, dtype=np.float32)
                s += term
            if rgb:
                # the sum is in [0, 256): the cast truncates, as dlib's (cvttps, then unsigned char)
                # (plane by plane: a strided write of converted values is 3x slower)
                u = s.astype(np.uint8)
                for c in range(3):
                    out[r0:r1, :cm, c] = u[c]
            elif np.issubdtype(img.dtype, np.integer):
                out[r0:r1, :cm] = np.trunc(s[0].astype(np.float64) + 0.5).astype(img.dtype)  # static_cast(value + 0.5)
            else:
                out[r0:r1, :cm] = s[0].astype(img.dtype)

        bands = -(-rows // band)
        if parallel is None or bands == 1:
            for j in range(bands):
                run_band(j)
        else:
            parallel(bands, run_band)
    if cm < cols:
        # leftover columns: x = -s + c*s, then x += s per column, in double
        x = np.add.accumulate(np.concatenate([[-xs + cm * xs], np.full(cols - cm, xs)]))[1:]
        lo = np.floor(x).astype(np.intp)
        ro = np.minimum(lo + 1, nc - 1)
        # only the columns read: lo and ro of the rows top and bottom
        cols_read = np.concatenate([lo, ro])
        t_rows, b_rows = img[top[:, None], cols_read], img[bottom[:, None], cols_read]
        frac = x - lo
        lo, ro = np.arange(len(lo)), np.arange(len(lo), 2 * len(lo))     # into t_rows, b_rows
        tb2 = tb[:, None]
        if rgb:   # all in double, truncated
            lr = frac[None, :, None]
            tb2 = tb2[..., None]
            v = ((1 - tb2) * ((1 - lr) * t_rows[:, lo] + lr * t_rows[:, ro])
                 + tb2 * ((1 - lr) * b_rows[:, lo] + lr * b_rows[:, ro]))
            out[:, cm:] = np.trunc(v).astype(np.uint8)
        else:     # float32 inside, double outside, stored as float, then assign_pixel
            lr = frac.astype(np.float32)[None, :]
            ilr = np.float32(1) - lr
            f32 = np.float32
            inner_t = ilr * t_rows[:, lo].astype(f32) + lr * t_rows[:, ro].astype(f32)
            inner_b = ilr * b_rows[:, lo].astype(f32) + lr * b_rows[:, ro].astype(f32)
            v = ((1 - tb2) * inner_t.astype(np.float64) + tb2 * inner_b.astype(np.float64)).astype(f32)
            out[:, cm:] = _assign(v.astype(np.float64), img.dtype)
    return out


def _resize_generic(img, out, xs, top, bottom, tb):
    """dlib's generic bilinear resize (neither grayscale nor uint8 RGB pixels): double
    arithmetic, ``x`` accumulated in double, assigned with clamping and truncation."""
    cols, nc = out.shape[1], img.shape[1]
    x = np.add.accumulate(np.concatenate([[-xs], np.full(cols, xs)]))[1:]
    lo = np.floor(x).astype(np.intp)
    ro = np.minimum(lo + 1, nc - 1)
    lr = (x - lo)[None, :, None]
    tb2 = tb[:, None, None]
    t_rows, b_rows = img[top].astype(np.float64), img[bottom].astype(np.float64)
    v = ((1 - tb2) * ((1 - lr) * t_rows[:, lo] + lr * t_rows[:, ro])
         + tb2 * ((1 - lr) * b_rows[:, lo] + lr * b_rows[:, ro]))
    out[...] = _assign(v, img.dtype)
    return out


def resize_image(a, b=None, c=None):
    """dlib's ``resize_image`` with bilinear interpolation, bit for bit:

    - ``resize_image(img, rows, cols)``: a new ``rows x cols`` image;
    - ``resize_image(scale, img)``: a new image ``round(scale * rows) x round(scale * cols)``
      (half away from zero, as ``std::round``); ``scale == 1`` returns a copy.

    ``img`` is ``HxW`` (any integer or float dtype: computed in float32 as dlib does, integers
    rounded half up) or ``HxWx3`` uint8 RGB (truncated, as dlib). Other channel layouts use
    dlib's generic double path. The input is never modified."""
    if b is not None and c is None and np.ndim(a) == 0:
        scale, img = float(a), _check_image(b, "resize_image")
        if not scale > 0:
            raise ValueError(f"resize_image: scale must be > 0, got {scale}")
        if scale == 1.0:
            return img.copy()
        rows, cols = lround(scale * img.shape[0]), lround(scale * img.shape[1])
    else:
        if b is None or c is None:
            raise TypeError("resize_image: call as resize_image(img, rows, cols) or resize_image(scale, img)")
        img, rows, cols = _check_image(a, "resize_image"), int(b), int(c)
        if rows < 0 or cols < 0:
            raise ValueError(f"resize_image: the output size must be >= 0, got {rows}x{cols}")
    return _resize_into(img, rows, cols)
