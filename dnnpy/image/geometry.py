"""dlib's whole-image geometry (image_transforms/interpolation.h): ``resize_image``, flips,
``rotate_image``, ``letterbox_image``, ``pyramid_up`` and the dataset helpers
``flip_image_dataset_left_right``, ``add_image_left_right_flips`` and
``upsample_image_dataset``.

``resize_image`` reproduces dlib's optimised bilinear resize bit for bit, and that resize is
what ``letterbox_image`` and ``pyramid_up`` use. dlib's grayscale and RGB resizes are SIMD
loops: 4 output columns at a time in float32, with the column coordinate accumulated in float32
(``x += float(4 * x_scale)``), then a scalar loop for the leftover columns of each row. The
code below evaluates the same float32/float64 expressions in the same order on whole arrays;
``np.add.accumulate`` is a sequential sum, so it reproduces dlib's running coordinates exactly.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import _rect_base, center, dcenter, lround, mmod_rect, rectangle
from ..inputs.pyramid import pyramid_down
from .transforms import (find_affine_transform, interpolate_quadratic, inv, point_transform_affine,
                         rectangle_transform, rotation_matrix, transform_image)

__all__ = ["resize_image", "flip_image_left_right", "flip_image_up_down", "flip_rect_left_right",
           "flip_image_dataset_left_right", "add_image_left_right_flips", "rotate_image",
           "letterbox_image", "pyramid_up", "upsample_image_dataset"]


def _check_image(img, name):
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise ValueError(f"{name}: expected an HxW or HxWxC image, got shape {img.shape}")
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


def _resize_into(img, rows, cols):
    """dlib's ``resize_image(in, out, interpolate_bilinear)`` for a ``rows x cols`` output."""
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
        wtl, wtr, wbl, wbr = itbf * ilr, itbf * lr, tbf * ilr, tbf * lr
        if rgb:
            wtl, wtr, wbl, wbr = wtl[..., None], wtr[..., None], wbl[..., None], wbr[..., None]
        rm = lm + 1
        t_rows, b_rows = img[top], img[bottom]
        s = (wtl * t_rows[:, lm].astype(np.float32) + wtr * t_rows[:, rm].astype(np.float32)
             + wbl * b_rows[:, lm].astype(np.float32) + wbr * b_rows[:, rm].astype(np.float32))
        if rgb:
            out[:, :cm] = np.trunc(s).astype(np.int32).astype(np.uint8)
        elif np.issubdtype(img.dtype, np.integer):
            out[:, :cm] = np.trunc(s.astype(np.float64) + 0.5).astype(img.dtype)  # static_cast(value + 0.5)
        else:
            out[:, :cm] = s.astype(img.dtype)
    if cm < cols:
        # leftover columns: x = -s + c*s, then x += s per column, in double
        x = np.add.accumulate(np.concatenate([[-xs + cm * xs], np.full(cols - cm, xs)]))[1:]
        lo = np.floor(x).astype(np.intp)
        ro = np.minimum(lo + 1, nc - 1)
        t_rows, b_rows = img[top], img[bottom]
        tb2 = tb[:, None]
        if rgb:   # all in double, truncated
            lr = (x - lo)[None, :, None]
            tb2 = tb2[..., None]
            v = ((1 - tb2) * ((1 - lr) * t_rows[:, lo] + lr * t_rows[:, ro])
                 + tb2 * ((1 - lr) * b_rows[:, lo] + lr * b_rows[:, ro]))
            out[:, cm:] = np.trunc(v).astype(np.uint8)
        else:     # float32 inside, double outside, stored as float, then assign_pixel
            lr = (x - lo).astype(np.float32)[None, :]
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


# ----------------------------------------------------------------------------------------
# flips

def _corners(nr, nc):  # tl, tr, bl, br of the image's rectangle
    r = rectangle(0, 0, nc - 1, nr - 1)
    return r.tl_corner(), r.tr_corner(), r.bl_corner(), r.br_corner()


def flip_image_left_right(img):
    """dlib's ``flip_image_left_right``: ``(flipped, tform)``, a new image mirrored left to
    right and the ``point_transform_affine`` from the input's coordinates to the flipped
    image's, ``x -> (cols - 1) - x`` as dlib computes it: fitted by ``find_affine_transform``
    over the 4 corners, so it carries dlib's last-bit noise (e.g. ``m[0][0]`` is
    ``-0.99999999999999956`` for a 7-wide image) and equals dlib's map bit for bit."""
    img = _check_image(img, "flip_image_left_right")
    tl, tr, bl, br = _corners(*img.shape[:2])
    return img[:, ::-1].copy(), find_affine_transform([tl, bl, tr, br], [tr, br, tl, bl])


def flip_image_up_down(img):
    """dlib's ``flip_image_up_down``: a new image mirrored top to bottom."""
    return _check_image(img, "flip_image_up_down")[::-1].copy()


def flip_rect_left_right(rect, window):
    """dlib's ``impl::flip_rect_left_right``: ``rect`` mirrored left to right inside the
    ``window`` rectangle (the image's ``get_rect``); same rows and width."""
    rect, window = rectangle._coerce(rect), rectangle._coerce(window)
    right = window.r - (rect.l - window.l)
    return rectangle(right - rect.width() + 1, rect.t, right, rect.b)


def _check_dataset(images, objects, name):
    if len(images) != len(objects):
        raise ValueError(f"{name}: images and objects must have equal lengths, got {len(images)} and {len(objects)}")


def _box(o, name):
    if isinstance(o, mmod_rect):
        return o.rect
    if isinstance(o, _rect_base):
        return rectangle._coerce(o)
    raise TypeError(f"{name}: objects must be lists of rectangle or mmod_rect, got {type(o).__name__}")


def _with_rect(o, r):
    if isinstance(o, mmod_rect):
        return mmod_rect(r, o.detection_confidence, o.ignore, o.label)
    return r


def flip_image_dataset_left_right(images, objects):
    """dlib's ``flip_image_dataset_left_right``: flips every image (in the list, in place)
    and mirrors its boxes with ``flip_rect_left_right`` (exact integer arithmetic)."""
    _check_dataset(images, objects, "flip_image_dataset_left_right")
    for i, img in enumerate(images):
        images[i] = _check_image(img, "flip_image_dataset_left_right")[:, ::-1].copy()
        window = rectangle(0, 0, images[i].shape[1] - 1, images[i].shape[0] - 1)
        objects[i] = [_with_rect(o, flip_rect_left_right(_box(o, "flip_image_dataset_left_right"), window))
                      for o in objects[i]]


def add_image_left_right_flips(images, objects):
    """dlib's ``add_image_left_right_flips``: appends the mirrored copy of every image to
    ``images`` and its boxes to ``objects`` (lists, extended in place). Boxes go through
    ``rectangle_transform`` of the flip's transform, as dlib's (labels, ignore flags and
    confidences kept)."""
    _check_dataset(images, objects, "add_image_left_right_flips")
    for j in range(len(images)):
        flipped, tform = flip_image_left_right(images[j])
        rt = rectangle_transform(tform)
        objects.append([_with_rect(o, rt(_box(o, "add_image_left_right_flips"))) for o in objects[j]])
        images.append(flipped)


# ----------------------------------------------------------------------------------------
# rotation, letterboxing, upsampling

def rotate_image(img, angle, interp=None):
    """dlib's ``rotate_image``: ``(rotated, tform)``. The output is sized to the bounding box
    of the input's corners turned by ``angle`` radians about its integer centre (each corner
    rounded to a pixel, as dlib's integer points); sampled with ``interp`` (default
    ``interpolate_quadratic()``), 0 outside. ``tform`` maps input points to output points."""
    img = _check_image(img, "rotate_image")
    angle = float(angle)
    nr, nc = img.shape[:2]
    cx, cy = center(rectangle(0, 0, nc - 1, nr - 1))
    sa, ca = math.sin(-angle), math.cos(-angle)
    xs, ys = [], []
    for px, py in _corners(nr, nc):
        x, y = px - cx, py - cy
        xs.append(math.floor(ca * x - sa * y + 0.5) + cx)
        ys.append(math.floor(sa * x + ca * y + 0.5) + cy)
    rows, cols = max(ys) - min(ys) + 1, max(xs) - min(xs) + 1
    R = rotation_matrix(angle)
    oc = dcenter(rectangle(0, 0, cols - 1, rows - 1))
    ic = dcenter(rectangle(0, 0, nc - 1, nr - 1))
    b = ((-R[0, 0]) * oc[0] + (-R[0, 1]) * oc[1] + ic[0], (-R[1, 0]) * oc[0] + (-R[1, 1]) * oc[1] + ic[1])
    trans = point_transform_affine(R, b)
    out = transform_image(img, trans, rows, cols, interpolate_quadratic() if interp is None else interp)
    return out, inv(trans)


def letterbox_image(img, size):
    """dlib's ``letterbox_image``: ``(out, tform)``. ``img`` is scaled (bilinear,
    ``resize_image``) to fit ``size`` (an int for a square, or ``(rows, cols)``) keeping its
    aspect ratio, centred, with zero borders; ``tform`` maps input points to ``out``'s (scale,
    then the offset). Same size: a copy and the identity.

    dlib picks the scale with ``rows_scale * nc > rows`` (compares the scaled width with the
    output's rows); for non-square outputs that can choose a scale whose image does not fit
    (dlib then writes outside its buffer). Here the test is ``rows_scale * nc > cols``: the same
    choice wherever dlib's is well defined."""
    img = _check_image(img, "letterbox_image")
    rows, cols = (int(size), int(size)) if np.ndim(size) == 0 else (int(size[0]), int(size[1]))
    if rows <= 0 or cols <= 0:
        raise ValueError(f"letterbox_image: the output size must be > 0, got {rows}x{cols}")
    nr, nc = img.shape[:2]
    if (nr, nc) == (rows, cols):
        return img.copy(), point_transform_affine()
    if nr == 0 or nc == 0:
        raise ValueError(f"letterbox_image: empty input image {img.shape}")
    rows_scale, cols_scale = rows / nr, cols / nc
    scale = cols_scale if rows_scale * nc > cols else rows_scale
    snr, snc = lround(scale * nr), lround(scale * nc)
    ox, oy = (cols - snc) / 2.0, (rows - snr) / 2.0
    left, top = int(ox), int(oy)                                 # dlib's rectangle(double...) truncates
    right, bottom = int(ox + snc - 1), int(oy + snr - 1)
    out = np.zeros((rows, cols) + img.shape[2:], img.dtype)
    out[top:bottom + 1, left:right + 1] = _resize_into(img, bottom - top + 1, right - left + 1)
    return out, point_transform_affine(np.eye(2) * scale, (ox, oy))


def pyramid_up(img, pyr=None):
    """dlib's ``pyramid_up``: a new image upsampled by the inverse of ``pyr`` (default
    ``pyramid_down(2)``): the output is sized to ``pyr.rect_up`` of the image's rectangle
    (rounded with ``lround``) and filled by ``resize_image``."""
    img = _check_image(img, "pyramid_up")
    pyr = pyramid_down(2) if pyr is None else pyr
    if img.size == 0:
        return np.zeros((0, 0) + img.shape[2:], img.dtype)
    up = rectangle._coerce(pyr.rect_up(rectangle(0, 0, img.shape[1] - 1, img.shape[0] - 1)))
    if up.is_empty():
        return np.zeros((0, 0) + img.shape[2:], img.dtype)
    return _resize_into(img, up.b + 1, up.r + 1)


def upsample_image_dataset(images, objects, pyramid=None, max_image_size=None):
    """dlib's ``upsample_image_dataset<pyramid>``: every image (with at most
    ``max_image_size`` pixels, default all) is replaced by ``pyramid_up(img, pyramid)`` and its
    boxes (rectangles or mmod_rects) by ``pyramid.rect_up(box)`` rounded with ``lround``. Both
    lists are changed in place."""
    _check_dataset(images, objects, "upsample_image_dataset")
    pyr = pyramid_down(2) if pyramid is None else pyramid
    for i, img in enumerate(images):
        img = _check_image(img, "upsample_image_dataset")
        if max_image_size is not None and img.shape[0] * img.shape[1] > max_image_size:
            continue
        images[i] = pyramid_up(img, pyr)
        objects[i] = [_with_rect(o, rectangle._coerce(pyr.rect_up(_box(o, "upsample_image_dataset"))))
                      for o in objects[i]]
