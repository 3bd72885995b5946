"""dlib's ``jitter_image`` (``dlib/image_transforms/interpolation.h``): a slightly moved,
scaled, turned and maybe mirrored copy of a square image, the augmentation dlib's face
recognition example averages descriptors over.

Given a ``dlib_rand`` in the same state it draws the same numbers in the same order as dlib's
C++ (built with GCC, as dlib-bin is) and gives the same pixels. dlib-bin's
``dlib.jitter_image(img, num_jitters, disturb_colors)`` draws from one process-wide,
default-seeded ``dlib::rand``; ``jitter_images(img, dlib_rand(), n, disturb)`` in a fresh process
is the same sequence of crops.
"""

from __future__ import annotations

import math

import numpy as np

from ..rand import dlib_rand
from ..geometry import center, centered_rect, get_rect, round_point, shrink_rect
from .chips import chip_details, chip_dims, extract_image_chip
from .colors import disturb_colors as _disturb_colors
from .resize import _check_hw

__all__ = ["jitter_image", "jitter_images"]

# dlib's constants in jitter_image
_MAX_ROTATION_DEGREES = 3.0
_MIN_OBJECT_HEIGHT = 0.97
_MAX_OBJECT_HEIGHT = 0.99999
_TRANSLATE_AMOUNT = 0.02


def _check(img, rnd, what):
    if not isinstance(rnd, dlib_rand):
        raise TypeError(f"{what}: rnd must be a dnnpy.data.dlib_rand, got {type(rnd).__name__}")
    img = _check_hw(img, what)
    if img.shape[0] * img.shape[1] == 0 or img.shape[0] != img.shape[1]:
        raise ValueError(f"{what}: the image must be square and not empty (dlib's requirement), "
                         f"got shape {img.shape}")
    return img


def jitter_image(img, rnd):
    """dlib's ``jitter_image(img, rnd)``: a copy of the square image ``img`` (HxW or HxWxC,
    uint8 or float) cut from ``shrink_rect(get_rect(img), 3)`` moved by up to 2% of its size,
    enlarged by 1/U(0.97, 0.99999), turned by U(-3, 3) degrees (bilinear, 0 outside the image),
    and mirrored left-right with probability 1/2. Same shape and dtype as ``img``.

    Draws 5 numbers from ``rnd`` (a ``dnnpy.data.dlib_rand``) in dlib's order: the vertical
    shift first, then the horizontal one (GCC evaluates the two arguments of dlib's
    ``dpoint(x, y)`` right to left), the scale, the angle and the flip."""
    img = _check(img, rnd, "jitter_image")
    rect = shrink_rect(get_rect(img), 3)
    t = _TRANSLATE_AMOUNT
    ty = rnd.get_double_in_range(-t, t) * rect.height()
    tx = rnd.get_double_in_range(-t, t) * rect.width()
    shift = round_point((tx, ty))                      # dpoint -> point
    scale = rnd.get_double_in_range(_MIN_OBJECT_HEIGHT, _MAX_OBJECT_HEIGHT)
    box = int(rect.height() / scale)                   # long box_size: truncated
    c = center(rect)
    crop_rect = centered_rect((c[0] + shift[0], c[1] + shift[1]), box, box)
    angle = rnd.get_double_in_range(-_MAX_ROTATION_DEGREES, _MAX_ROTATION_DEGREES) * math.pi / 180
    crop = extract_image_chip(img, chip_details(crop_rect, chip_dims(img.shape[0], img.shape[1]), angle))
    if rnd.get_random_double() > 0.5:
        crop = np.ascontiguousarray(crop[:, ::-1])
    return crop


def jitter_images(img, rnd, num_jitters=1, disturb_colors=False):
    """dlib-bin's ``dlib.jitter_image(img, num_jitters, disturb_colors)`` with the generator
    made explicit: a list of ``num_jitters`` ``jitter_image(img, rnd)`` crops, each followed,
    when ``disturb_colors``, by ``disturb_colors(crop, rnd)`` (uint8 RGB or gray images only).
    With a fresh ``dlib_rand()`` it equals the binding's first call in a process."""
    num_jitters = int(num_jitters)
    if num_jitters < 0:
        raise ValueError(f"jitter_images: num_jitters must be >= 0, got {num_jitters}")
    img = _check(img, rnd, "jitter_images")
    out = []
    for _ in range(num_jitters):
        crop = jitter_image(img, rnd)
        if disturb_colors:
            _disturb_colors(crop, rnd)
        out.append(crop)
    return out
