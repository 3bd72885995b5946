"""Pictures instead of dlib's ``image_window``: drawing on numpy images, tiling, colour maps.

dlib's ``draw_line``, ``draw_rectangle`` and ``tile_images`` (dlib/image_transforms/draw.h),
``colormap_jet`` and ``jet`` (image_transforms/colormaps.h), ``color_mapper`` (a colour per
label, from imglab's metadata_editor.h, as dlib's yolo example draws), ``join_rows`` / ``join_cols`` (dlib's
matrix joins, applied to images), plus ``overlay`` (a mask painted with alpha, as the
instance-segmentation example does pixel by pixel) and ``tile_image_grid`` (a padded grid of
rows, for examples). Images are H x W (gray) or H x W x 3 (RGB) uint8 numpy arrays; drawing
happens in place, clipped to the image, with dlib's pixel arithmetic (``dlib/pixel.h``):

- a colour is a gray level ``v``, an ``(r, g, b)`` or an ``(r, g, b, alpha)`` tuple;
- on an RGB image gray ``v`` is ``(v, v, v)``; on a gray image ``(r, g, b)`` is ``(r+g+b)//3``;
- a partly transparent colour blends as dlib does: RGB ``d + ((c - d) * a >> 8)``, gray
  ``d + trunc((c - d) * a / 255)`` (and exactly ``c`` where ``a == 255``).
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import as_rectangle, full_object_detection

__all__ = ["draw_line", "draw_rectangle", "render_face_detections", "draw_face_detections",
           "tile_images", "tile_image_grid", "join_rows",
           "join_cols", "colormap_jet", "jet", "overlay", "color_mapper"]


def _check_image(img, op: str) -> np.ndarray:
    if not isinstance(img, np.ndarray):
        raise TypeError(f"{op}: draws in place on a numpy array, got {type(img).__name__}")
    if img.dtype != np.uint8 or not (img.ndim == 2 or (img.ndim == 3 and img.shape[2] == 3)):
        raise ValueError(f"{op}: expected an H x W or H x W x 3 uint8 image, got shape "
                         f"{img.shape} dtype {img.dtype}")
    return img


def _color(color, img: np.ndarray, op: str):
    """(pixel value for ``img`` as an int array of 1 or 3 values, alpha 0..255)."""
    c = np.asarray(color)
    if c.ndim == 0:
        c = np.repeat(c.reshape(1), 3)
    if c.ndim != 1 or c.size not in (3, 4) or not np.issubdtype(c.dtype, np.number):
        raise ValueError(f"{op}: a colour is a gray level, (r, g, b) or (r, g, b, alpha); got {color!r}")
    c = c.astype(np.int64)
    if np.any((c < 0) | (c > 255)):
        raise ValueError(f"{op}: colour values must be in [0, 255], got {color!r}")
    alpha = int(c[3]) if c.size == 4 else 255
    rgb = c[:3]
    return (rgb if img.ndim == 3 else rgb.sum(keepdims=True) // 3), alpha


def _put(img: np.ndarray, ys, xs, value: np.ndarray, alpha) -> None:
    """Assigns ``value`` (1 or 3 ints) at pixels (ys, xs) with per-pixel or scalar ``alpha``."""
    v = value if img.ndim == 3 else value[0]
    if np.ndim(alpha) == 0 and int(alpha) == 255:
        img[ys, xs] = v
        return
    d = img[ys, xs].astype(np.int64)
    a = np.broadcast_to(np.asarray(alpha, np.int64), d.shape[:1])
    if img.ndim == 3:
        a = a[:, None]
        out = d + (((v - d) * a) >> 8)            # dlib: unsigned wrap-around = floor shift
    else:
        diff = (v - d) * a
        out = d + np.sign(diff) * (np.abs(diff) // 255)  # C integer division truncates
    img[ys, xs] = np.where(a == 255, v, out).astype(np.uint8)


def draw_line(img, p1, p2, color) -> np.ndarray:
    """dlib's ``draw_line(img, p1, p2, val)``: in place; returns ``img``.

    Horizontal and vertical lines set the pixels from ``p1`` to ``p2`` inclusive. Other lines
    are anti-aliased as in dlib: along the longer axis, each step covers the two pixels
    nearest the exact line, with alpha ``(1 - frac)`` and ``frac`` times the colour's alpha.
    Points are ``(x, y)``; everything outside the image is clipped.
    """
    img = _check_image(img, "draw_line")
    value, alpha = _color(color, img, "draw_line")
    (x1, y1), (x2, y2) = (int(round(v)) for v in p1[:2]), (int(round(v)) for v in p2[:2])
    h, w = img.shape[:2]
    if x1 == x2 or y1 == y2:
        if x1 == x2:
            ya, yb = sorted((y1, y2))
            if 0 <= x1 < w and yb >= 0 and ya < h:
                ys = np.arange(max(ya, 0), min(yb, h - 1) + 1)
                _put(img, ys, np.full(ys.size, x1), value, alpha)
        else:
            xa, xb = sorted((x1, x2))
            if 0 <= y1 < h and xb >= 0 and xa < w:
                xs = np.arange(max(xa, 0), min(xb, w - 1) + 1)
                _put(img, np.full(xs.size, y1), xs, value, alpha)
        return img
    rise, run = y2 - y1, x2 - x1
    steep = abs(rise) >= abs(run)
    if steep:  # step along y, anti-alias across x: the same code with the axes swapped
        x1, y1, x2, y2, rise, run, w, h = y1, x1, y2, x2, run, rise, h, w
    slope = rise / run
    first, last = max(min(x1, x2), 0), min(max(x1, x2), w - 1)
    i = np.arange(first, last + 1, dtype=np.float64)
    d = slope * (i - x1) + y1
    y = np.trunc(d).astype(np.int64)  # dlib: static_cast<long>, toward zero
    frac = d - y
    x = i.astype(np.int64)
    for yy, a in ((y, 1.0 - frac), (y + 1, frac)):
        keep = (yy >= 0) & (yy < h)
        a = np.clip(a[keep] * alpha, 0, 255).astype(np.int64)  # unsigned char cast
        ys, xs = (x[keep], yy[keep]) if steep else (yy[keep], x[keep])
        _put(img, ys, xs, value, a)
    return img


def draw_rectangle(img, rect, color, thickness: int = 1) -> np.ndarray:
    """dlib's ``draw_rectangle(img, rect, val, thickness)``: the rectangle's four edges, in
    place, clipped to the image; returns ``img``. For ``thickness`` t, pass i draws the
    rectangle shrunk by ``(i + 1) // 2`` for even i and grown by it for odd i (dlib's order),
    so the border is centred on ``rect``."""
    _check_image(img, "draw_rectangle")
    r = as_rectangle(rect, "draw_rectangle")
    if int(thickness) < 1:
        raise ValueError(f"draw_rectangle: thickness must be >= 1, got {thickness}")
    for i in range(int(thickness)):
        n = (i + 1) // 2 if i % 2 == 0 else -((i + 1) // 2)
        left, top, right, bottom = r.l + n, r.t + n, r.r - n, r.b - n
        draw_line(img, (left, top), (right, top), color)
        draw_line(img, (left, bottom), (right, bottom), color)
        draw_line(img, (left, top), (left, bottom), color)
        draw_line(img, (right, top), (right, bottom), color)
    return img


# dlib's render_face_detections: the 68-point face's outline as (part, previous part) runs and
# closing segments, and the 5-point face's four segments
_FACE_68 = ([(i, i - 1) for r in ((1, 16), (28, 30), (18, 21), (23, 26), (31, 35))
             for i in range(r[0], r[1] + 1)] + [(30, 35)]
            + [(i, i - 1) for i in range(37, 42)] + [(36, 41)]
            + [(i, i - 1) for i in range(43, 48)] + [(42, 47)]
            + [(i, i - 1) for i in range(49, 60)] + [(48, 59)]
            + [(i, i - 1) for i in range(61, 68)] + [(60, 67)])
_FACE_5 = [(0, 1), (1, 4), (4, 3), (3, 2)]


def render_face_detections(dets) -> list:
    """dlib's ``render_face_detections``: the line segments (pairs of ``point``) that draw
    the landmarks of each face (a ``full_object_detection`` or a list of them; 5 or 68 parts):
    the outline of the jaw, brows, nose, eyes and lips, or the 5-point face's four segments."""
    dets = [dets] if isinstance(dets, full_object_detection) else list(dets)
    lines = []
    for i, d in enumerate(dets):
        n = d.num_parts()
        if n not in (5, 68):
            raise ValueError(f"render_face_detections: detection {i} has {n} parts; dlib draws 5- "
                             f"or 68-point faces")
        lines.extend((d.part(a), d.part(b)) for a, b in (_FACE_5 if n == 5 else _FACE_68))
    return lines


def draw_face_detections(img, dets, color=(0, 255, 0)) -> np.ndarray:
    """Draws ``render_face_detections(dets)`` on ``img`` in place (as dlib's ``image_window``
    shows a ``full_object_detection``); returns ``img``."""
    for p, q in render_face_detections(dets):
        draw_line(img, p, q, color)
    return img


def _images(images, op: str) -> list:
    imgs = [np.asarray(im) for im in images]
    if not imgs:
        return imgs
    ref = imgs[0]
    for i, im in enumerate(imgs):
        if im.ndim not in (2, 3) or im.ndim != ref.ndim or im.shape[2:] != ref.shape[2:] \
                or im.dtype != ref.dtype:
            raise ValueError(f"{op}: image {i} has shape {im.shape} dtype {im.dtype}; all images "
                             f"must be 2-D or H x W x C of one C and dtype, like image 0 "
                             f"({ref.shape}, {ref.dtype})")
    return imgs


def tile_images(images) -> np.ndarray:
    """dlib's ``tile_images``: ``n`` images in one roughly square picture, row-major.

    ``cols = isqrt(n)`` rounded up to cover n (dlib's ``square_root``: the smallest c with
    c*c >= n), ``rows = cols - 1`` when that is enough, else ``cols``. Every cell has the size
    of the largest height and largest width; an image fills its cell from the top-left; the
    rest is black. No padding. An empty list gives an empty 0 x 0 array."""
    imgs = _images(images, "tile_images")
    if not imgs:
        return np.zeros((0, 0), np.uint8)
    n = len(imgs)
    ncols = math.isqrt(n - 1) + 1 if n > 1 else 1
    nrows = ncols - 1 if ncols * (ncols - 1) >= n else ncols
    h = max(im.shape[0] for im in imgs)
    w = max(im.shape[1] for im in imgs)
    out = np.zeros((nrows * h, ncols * w) + imgs[0].shape[2:], imgs[0].dtype)
    for k, im in enumerate(imgs):  # one slice copy per image
        r, c = divmod(k, ncols)
        out[r * h:r * h + im.shape[0], c * w:c * w + im.shape[1]] = im
    return out


def tile_image_grid(rows, pad: int = 2, background: int = 255) -> np.ndarray:
    """A grid image from ``rows``: a list of rows, each a list of equally shaped uint8 images
    (H x W or H x W x 3), with ``pad`` pixels of ``background`` between and around them (the
    examples' layout: e.g. originals above reconstructions). See :func:`tile_images` for
    dlib's square layout."""
    rows = [list(row) for row in rows]
    if not rows or not rows[0]:
        raise ValueError("tile_image_grid: no images given")
    first = np.asarray(rows[0][0])
    for r, row in enumerate(rows):
        for i, im in enumerate(row):
            im = np.asarray(im)
            if im.shape != first.shape or im.dtype != np.uint8 or im.ndim not in (2, 3):
                raise ValueError(f"tile_image_grid: image [{r}][{i}] has shape {im.shape} dtype "
                                 f"{im.dtype}, expected uint8 {first.shape} like image [0][0]")
    h, w = first.shape[:2]
    ncols = max(len(row) for row in rows)
    grid = np.full((pad + len(rows) * (h + pad), pad + ncols * (w + pad)) + first.shape[2:],
                   background, np.uint8)
    for r, row in enumerate(rows):
        for i, im in enumerate(row):
            y, x = pad + r * (h + pad), pad + i * (w + pad)
            grid[y:y + h, x:x + w] = im
    return grid


def join_rows(a, b) -> np.ndarray:
    """dlib's ``join_rows`` on images: ``a`` and ``b`` side by side (same height, channels)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != b.ndim or a.shape[0] != b.shape[0] or a.shape[2:] != b.shape[2:]:
        raise ValueError(f"join_rows: images must have the same number of rows (and channels) to "
                         f"go side by side, got shapes {a.shape} and {b.shape}")
    return np.concatenate([a, b], axis=1)


def join_cols(a, b) -> np.ndarray:
    """dlib's ``join_cols`` on images: ``a`` above ``b`` (same width, channels)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != b.ndim or a.shape[1:] != b.shape[1:]:
        raise ValueError(f"join_cols: images must have the same number of columns (and channels) "
                         f"to stack, got shapes {a.shape} and {b.shape}")
    return np.concatenate([a, b], axis=0)


def colormap_jet(value, min_val: float, max_val: float) -> np.ndarray:
    """dlib's ``colormap_jet(value, min_val, max_val)``: dark blue -> blue -> cyan -> yellow ->
    red -> dark red as ``value`` goes from ``min_val`` to ``max_val`` (clamped). Works on scalars
    (gives an (r, g, b) uint8 array) and arrays (gives ``value.shape + (3,)``). NaN values, and
    every value when ``max_val == min_val``, give black, as dlib's compiled code does."""
    v = np.asarray(value, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = 8 * np.clip((v - min_val) / (max_val - min_val), 0, 1)
    q = lambda x: np.floor(x * 127.5 + 0.5)  # noqa: E731  (x >= 0: trunc == floor)
    zero, full = np.zeros_like(g), np.full_like(g, 255)
    conds = [g <= 1, g <= 3, g <= 5, g <= 7, g > 7]
    r = np.select(conds, [zero, zero, q(g - 3), full, q(9 - g)], 0)
    gr = np.select(conds, [zero, q(g - 1), full, q(7 - g), zero], 0)
    b = np.select(conds, [q(g + 1), full, q(5 - g), zero, zero], 0)
    return np.stack([r, gr, b], axis=-1).astype(np.uint8)


def jet(img, max_val: float | None = None, min_val: float = 0) -> np.ndarray:
    """dlib's ``jet(img, max_val, min_val = 0)``: an H x W x 3 uint8 picture of an H x W array
    through :func:`colormap_jet`; ``jet(img)`` uses the array's own min and max (dlib-bin's
    ``dlib.jet``). An RGB image is mapped by its intensity ``(r + g + b) // 3``."""
    a = np.asarray(img)
    if a.ndim == 3 and a.shape[2] == 3 and a.dtype == np.uint8:
        a = a.astype(np.int32).sum(axis=2) // 3
    if a.ndim != 2 or not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"jet: expected an H x W array of numbers (or an RGB uint8 image), got "
                         f"shape {np.asarray(img).shape} dtype {np.asarray(img).dtype}")
    if max_val is None:
        if a.size == 0:
            return np.zeros(a.shape + (3,), np.uint8)
        max_val, min_val = float(np.nanmax(a)), float(np.nanmin(a))
    return colormap_jet(a, min_val, max_val)


def overlay(img, mask, color, alpha: float = 0.5) -> np.ndarray:
    """Paints ``color`` over the pixels where ``mask`` (H x W, nonzero = painted) is set, with
    opacity ``alpha`` in [0, 1], in place; returns ``img``. The blend is dlib's
    ``assign_pixel(pixel, rgb_alpha_pixel(color, round(alpha * 255)))``."""
    img = _check_image(img, "overlay")
    m = np.asarray(mask)
    if m.shape != img.shape[:2]:
        raise ValueError(f"overlay: mask shape {m.shape} must be the image's H x W {img.shape[:2]}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"overlay: alpha must be in [0, 1], got {alpha}")
    value, _ = _color(np.asarray(color)[:3] if np.ndim(color) else color, img, "overlay")
    ys, xs = np.nonzero(m)
    _put(img, ys, xs, value, int(round(alpha * 255)))
    return img


def _bit_reverse(b):
    """The 8 bits of ``b`` in reverse order (imglab's ``reverse``)."""
    return int(f"{b & 0xFF:08b}"[::-1], 2)


def _hsl_to_rgb(h, s, l):
    """dlib's ``assign_pixel(rgb, hsi_pixel)`` on floats: ``h`` in degrees, ``s``, ``l`` in
    [0, 1] (dlib's ``HSL2RGB``); returns the rounded uint8 triple as dlib's cast does."""
    if h < 120:
        sat = ((120 - h) / 60.0, h / 60.0, 0.0)
    elif h < 240:
        sat = (0.0, (240 - h) / 60.0, (h - 120) / 60.0)
    else:
        sat = ((h - 240) / 60.0, 0.0, (360 - h) / 60.0)
    out = []
    for v in sat:
        t = 2 * s * min(v, 1.0) + (1 - s)
        c = l * t if l < 0.5 else (1 - l) * t + 2 * l - 1
        out.append(int(c * 255.0 + 0.5))
    return tuple(out)


class color_mapper:
    """imglab's ``color_mapper`` (tools/imglab/src/metadata_editor.h), which dlib's yolo example
    uses to draw each label in its own colour: ``mapper(label) -> (r, g, b)``.

    The n-th new label (n = 0, 1, ...) gets the HSI colour hue ``bit_reverse(n % 256)``,
    saturation 255, intensity 150 (converted as dlib's ``assign_pixel``), so the first colours
    are maximally different and later ones interleave. A label seen before keeps its colour.
    ``len(mapper)`` is the number of labels seen; ``mapper.labels()`` lists them in order."""

    def __init__(self):
        self._colors = {}

    def __call__(self, label):
        label = str(label)
        c = self._colors.get(label)
        if c is None:
            hue = _bit_reverse(len(self._colors) % 256)
            c = _hsl_to_rgb(hue / 255.0 * 360, 1.0, 150 / 255.0)
            self._colors[label] = c
        return c

    def __len__(self):
        return len(self._colors)

    def labels(self):
        return list(self._colors)
