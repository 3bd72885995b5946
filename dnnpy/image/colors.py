"""dlib's colour jitter for training data (``dlib/image_transforms/random_color_transform.h``):
``color_transform`` (a gamma and per-channel scaling, as three 256-entry lookup tables),
``random_color_transform``, ``disturb_colors`` and ``apply_random_color_offset``.

Given a ``dlib_rand`` in the same state, these draw the same random numbers in the same order
as dlib and give the same pixels. Images are numpy uint8 arrays, ``HxWx3`` (RGB) or ``HxW``
(grayscale), changed in place as dlib does; a grayscale pixel goes through dlib's pixel
conversions: ``v -> (v, v, v) -> transform -> (r + g + b) // 3``.
"""

from __future__ import annotations

import math

import numpy as np

from ..rand import dlib_rand

__all__ = ["color_transform", "random_color_transform", "disturb_colors",
           "apply_random_color_offset"]

# dlib's colour covariance factor (from RGB statistics of natural images; Krizhevsky et al.'s
# "PCA colour augmentation" with the square roots of the eigenvalues)
_OFFSET_TFORM = ((-66.379, 25.094, 6.79698),
                 (-68.0492, -0.302309, -13.9539),
                 (-68.4907, -24.0199, 7.27653))


def _check_image(img, what):
    if not isinstance(img, np.ndarray):
        raise TypeError(f"{what}: the image must be a numpy array, got {type(img).__name__}")
    if img.dtype != np.uint8 or not (img.ndim == 2 or (img.ndim == 3 and img.shape[2] == 3)):
        raise TypeError(f"{what}: the image must be uint8 HxW (grayscale) or HxWx3 (RGB), got "
                        f"{img.dtype} with shape {img.shape}")
    if not img.flags.writeable:
        raise ValueError(f"{what}: the image is read-only; it is changed in place, so pass a "
                         f"writable copy (np.array(img))")


def _check_rand(rnd, what):
    if not isinstance(rnd, dlib_rand):
        raise TypeError(f"{what}: rnd must be a dnnpy.data.dlib_rand (for dlib's random "
                        f"stream), got {type(rnd).__name__}")


def _apply_tables(img, tables):
    """In place: channel c of an RGB image through ``tables[c]``; a grayscale image through
    dlib's gray -> RGB -> tables -> gray conversion, folded into one table."""
    if img.ndim == 2:
        gray = (tables.astype(np.uint16).sum(axis=0) // 3).astype(np.uint8)
        np.take(gray, img, out=img)
    else:
        for c in range(3):
            img[..., c] = tables[c][img[..., c]]


class color_transform:
    """dlib's ``color_transform``: ``out = 255 * (in * s / (255 * max(s)))**gamma`` per channel
    (rounded half up), with ``s`` the red, green and blue scales. The getters return the scales
    divided by ``255 * max(scales)``, as dlib's do. ``tform(img)`` returns a transformed copy of
    an ``(..., 3)`` uint8 RGB array; ``tform.table`` is the 3x256 uint8 lookup table."""

    def __init__(self, gamma=1.0, red_scale=1.0, green_scale=1.0, blue_scale=1.0):
        gamma, scales = float(gamma), [float(red_scale), float(green_scale), float(blue_scale)]
        if not gamma >= 0:
            raise ValueError(f"color_transform: gamma must be >= 0, got {gamma}")
        for name, s in zip(("red", "green", "blue"), scales):
            if not 0 <= s <= 1:
                raise ValueError(f"color_transform: {name}_scale must be in [0, 1], got {s}")
        m = 255 * max(scales)
        if m == 0:
            raise ValueError("color_transform: at least one channel scale must be > 0")
        self._gamma = gamma
        self._scales = [s / m for s in scales]
        # 768 pow calls through libm (as dlib's), not numpy's vector pow, whose last bit may
        # differ and move a value across the +0.5 rounding
        self.table = np.array([[int(255 * math.pow(k * s, gamma) + 0.5) for k in range(256)]
                               for s in self._scales], dtype=np.uint8)
        self.table.flags.writeable = False

    def get_gamma(self):
        return self._gamma

    def get_red_scale(self):
        return self._scales[0]

    def get_green_scale(self):
        return self._scales[1]

    def get_blue_scale(self):
        return self._scales[2]

    def __call__(self, rgb):
        rgb = np.asarray(rgb)
        if rgb.dtype != np.uint8 or rgb.ndim < 1 or rgb.shape[-1] != 3:
            raise TypeError(f"color_transform: expects uint8 RGB values of shape (..., 3), got "
                            f"{rgb.dtype} with shape {rgb.shape}")
        return np.stack([self.table[c][rgb[..., c]] for c in range(3)], axis=-1)

    def __repr__(self):
        return (f"color_transform(gamma={self._gamma!r}, scales/(255*max)="
                f"{tuple(self._scales)!r})")


def random_color_transform(rnd, gamma_magnitude=0.5, color_magnitude=0.2):
    """A random ``color_transform``, as dlib: four ``get_random_double`` draws, in order:
    ``gamma = max(0, 1 + gamma_magnitude * (d - 0.5))``, then the red, green and blue scales
    ``1 - d * color_magnitude``."""
    _check_rand(rnd, "random_color_transform")
    gamma = max(0.0, 1 + gamma_magnitude * (rnd.get_random_double() - 0.5))
    red = 1 - rnd.get_random_double() * color_magnitude
    green = 1 - rnd.get_random_double() * color_magnitude
    blue = 1 - rnd.get_random_double() * color_magnitude
    return color_transform(gamma, red, green, blue)


def disturb_colors(img, rnd, gamma_magnitude=0.5, color_magnitude=0.2):
    """Apply ``random_color_transform(rnd, gamma_magnitude, color_magnitude)`` to ``img`` in
    place and return the transform. With both magnitudes 0 nothing is drawn or changed and the
    identity ``color_transform()`` is returned (as dlib)."""
    _check_image(img, "disturb_colors")
    _check_rand(rnd, "disturb_colors")
    if gamma_magnitude == 0 and color_magnitude == 0:
        return color_transform()
    tform = random_color_transform(rnd, gamma_magnitude, color_magnitude)
    _apply_tables(img, tform.table)
    return tform


def _round_half_away(x):
    """``std::round``: halves away from zero (numpy's round goes to even)."""
    r = math.trunc(x)
    if abs(x - r) >= 0.5:
        r += 1 if x > 0 else -1
    return r


def apply_random_color_offset(img, rnd):
    """Add a random colour offset to ``img`` in place, clipping at 0 and 255 (dlib's
    "PCA colour" jitter): three ``get_random_gaussian`` draws ``v``, offsets
    ``round(0.1 * T v)`` with dlib's fixed 3x3 ``T``. Returns None, as dlib."""
    _check_image(img, "apply_random_color_offset")
    _check_rand(rnd, "apply_random_color_offset")
    v = [rnd.get_random_gaussian() for _ in range(3)]
    # dlib evaluates tform*0.1*v as (tform*v)*0.1, each dot product summed left to right
    offsets = [_round_half_away((row[0] * v[0] + row[1] * v[1] + row[2] * v[2]) * 0.1)
               for row in _OFFSET_TFORM]
    ramp = np.arange(256, dtype=np.int64)
    tables = np.stack([np.clip(ramp + o, 0, 255) for o in offsets]).astype(np.uint8)
    _apply_tables(img, tables)
