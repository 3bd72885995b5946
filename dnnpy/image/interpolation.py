"""dlib's whole-image geometry (image_transforms/interpolation.h): flips, ``rotate_image``,
``letterbox_image``, ``pyramid_up`` and the dataset helpers ``flip_image_dataset_left_right``,
``add_image_left_right_flips`` and ``upsample_image_dataset``. ``resize_image`` (bit for bit
with dlib's) lives in ``resize.py``; ``letterbox_image`` and ``pyramid_up`` use it.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import rectangle_base, center, dcenter, get_rect, lround, mmod_rect, rectangle
from .pyramid import pyramid_down
from .resize import _check_image, _resize_into
from .transforms import (find_affine_transform, interpolate_quadratic, inv, point_transform_affine,
                         rectangle_transform, rotation_matrix, transform_image)

__all__ = ["flip_image_left_right", "flip_image_up_down", "flip_rect_left_right",
           "flip_image_dataset_left_right", "add_image_left_right_flips", "rotate_image",
           "letterbox_image", "pyramid_up", "upsample_image_dataset"]


# ----------------------------------------------------------------------------------------
# flips

def _corners(nr, nc):  # tl, tr, bl, br of the image's rectangle
    r = rectangle.from_size(nc, nr)
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
    if isinstance(o, (mmod_rect, rectangle_base)):
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
    cx, cy = center(get_rect(img))
    sa, ca = math.sin(-angle), math.cos(-angle)
    xs, ys = [], []
    for px, py in _corners(nr, nc):
        x, y = px - cx, py - cy
        xs.append(math.floor(ca * x - sa * y + 0.5) + cx)
        ys.append(math.floor(sa * x + ca * y + 0.5) + cy)
    rows, cols = max(ys) - min(ys) + 1, max(xs) - min(xs) + 1
    R = rotation_matrix(angle)
    oc = dcenter(rectangle.from_size(cols, rows))
    ic = dcenter(get_rect(img))
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


def pyramid_up(img, pyr=None, *, parallel=None):
    """dlib's ``pyramid_up``: a new image upsampled by the inverse of ``pyr`` (default
    ``pyramid_down(2)``): the output is sized to ``pyr.rect_up`` of the image's rectangle
    (rounded with ``lround``) and filled by ``resize_image``. ``parallel``: None, or a
    function ``parallel(n, f)`` that calls ``f(j)`` for every ``j`` in ``range(n)``, on
    several threads (``lambda n, f: dnnpy.parallel.parallel_for(0, n, f)``): the bands of
    output rows of grey and uint8 RGB images are made by it (the same bits either way)."""
    img = _check_image(img, "pyramid_up")
    pyr = pyramid_down(2) if pyr is None else pyr
    if img.size == 0:
        return np.zeros((0, 0) + img.shape[2:], img.dtype)
    up = rectangle._coerce(pyr.rect_up(get_rect(img)))
    if up.is_empty():
        return np.zeros((0, 0) + img.shape[2:], img.dtype)
    return _resize_into(img, up.b + 1, up.r + 1, parallel)


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
