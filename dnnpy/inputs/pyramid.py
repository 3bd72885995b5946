"""Image pyramids: dlib's ``pyramid_down<N>``, the tiled pyramid layout
(``compute_tiled_image_pyramid_details``, image_transforms/image_pyramid.h) and the input
layers ``input_rgb_image_pyramid[pyramid_down(6)]`` / ``input_grayscale_image_pyramid[...]``
(dnn/input.h).

A tiled pyramid puts an image and its successively downsampled copies side by side in one
tensor plane: the full image at the top left, the smaller levels below it and then up the
right side (padding 10 between levels, 11 around the edge). ``data.annotation`` holds the
list of level ``rectangle``s; the coordinate maps (``tensor_space_to_image_space`` ...) use it
to map a box found anywhere in the tiled plane back to the original image.
"""

from __future__ import annotations

import math

import numpy as np

from .. import tensor_tools as tt
from ..geometry import drectangle, dcenter, lround, nearest_rect, rectangle, round_point
from ..tensor import alias_tensor
from .base import input_layer, rgb_averages, safe_cast

__all__ = ["pyramid_down", "input_rgb_image_pyramid", "input_grayscale_image_pyramid",
           "compute_tiled_image_pyramid_details", "image_to_tiled_pyramid", "tiled_pyramid_to_image"]

_U64 = 1 << 64


class _pyramid_down_n:
    """dlib's ``pyramid_down<N>``: each level is ``(N-1)/N`` the size of the one above it.
    N == 1 disables the pyramid, N == 2 and N == 3 are dlib's specialised 2:1 and 3:2
    pyramids (their own point maps and level sizes). Only the geometry lives here: the input
    layers resample the levels with ``tt.resize_bilinear``, as dlib's do."""

    __slots__ = ("N",)

    def __init__(self, n):
        self.N = n

    def rate(self) -> float:
        """dlib's ``pyramid_rate``: ``(N-1)/N``."""
        return (self.N - 1.0) / self.N

    def _down1(self, p):
        x, y = p
        if self.N == 1:
            return (x * 0.0, y * 0.0)
        if self.N == 2:
            return (x / 2.0 - 1.25, y / 2.0 - 0.75)
        if self.N == 3:
            ratio = 2.0 / 3.0
            return (x * ratio - 1, y * ratio - 1)
        ratio = (self.N - 1.0) / self.N
        return ((x - 0.3) * ratio, (y - 0.3) * ratio)

    def _up1(self, p):
        x, y = p
        if self.N == 1:
            return (x * 0.0, y * 0.0)
        if self.N == 2:
            return ((x + 1.25) * 2, (y + 0.75) * 2)
        if self.N == 3:
            ratio = 3.0 / 2.0
            return (x * ratio + ratio, y * ratio + ratio)
        ratio = self.N / (self.N - 1.0)
        return (x * ratio + 0.3, y * ratio + 0.3)

    def point_down(self, p, levels=1):
        """Where point ``p`` of a level lands ``levels`` levels further down. ``p``'s ``x``
        and ``y`` may be arrays (many points at once, float64)."""
        p = _coords(p)
        for _ in range(int(levels)):
            p = self._down1(p)
        return p

    def point_up(self, p, levels=1):
        """Inverse of ``point_down`` (arrays too)."""
        p = _coords(p)
        for _ in range(int(levels)):
            p = self._up1(p)
        return p

    def rect_down(self, r, levels=1):
        r = drectangle._coerce(r)
        return drectangle.from_points(self.point_down(r.tl_corner(), levels), self.point_down(r.br_corner(), levels))

    def rect_up(self, r, levels=1):
        r = drectangle._coerce(r)
        return drectangle.from_points(self.point_up(r.tl_corner(), levels), self.point_up(r.br_corner(), levels))

    def output_size(self, nr, nc):
        """dlib's ``find_pyramid_down_output_image_size``: ``(nr, nc)`` of the next level."""
        if self.N == 1:
            return 0, 0
        if self.N == 2:
            return _cdiv(nr - 3, 2), _cdiv(nc - 3, 2)
        if self.N == 3:
            return _cdiv(2 * (nr - 2), 3), _cdiv(2 * (nc - 2), 3)
        rate = self.rate()
        return int(math.floor(rate * nr)), int(math.floor(rate * nc))

    def __call__(self, img):
        """Downsample an image (``HxW`` or ``HxWxC``, any integer or float dtype) one level, as
        dlib's ``pyramid_down<2>`` does; only N == 2 is implemented for images.

        The level has ``output_size(nr, nc)`` pixels (empty when a side is <= 8). Each output
        pixel ``(r, c)`` is the separable ``[1 4 6 4 1]`` filter over input rows ``2r..2r+4``
        and columns ``2c..2c+4`` (centred on ``(2r+2, 2c+2)``), summed exactly and divided by
        256 (truncated toward zero for integer images, as dlib's integer arithmetic)."""
        if self.N != 2:
            raise ValueError(f"pyramid_down({self.N})(img): only pyramid_down(2) downsamples images here")
        img = np.asarray(img)
        if img.ndim not in (2, 3):
            raise ValueError(f"pyramid_down(2)(img): expected an HxW or HxWxC image, got shape {img.shape}")
        nr, nc = img.shape[:2]
        if nr <= 8 or nc <= 8:
            return np.zeros((0, 0) + img.shape[2:], img.dtype)
        onr, onc = (nr - 3) // 2, (nc - 3) // 2
        integer = np.issubdtype(img.dtype, np.integer)
        a = img.astype(np.int64 if integer else np.float64)
        w = (1, 4, 6, 4, 1)
        h = sum(k * a[:, i:i + 2 * onc:2] for i, k in enumerate(w))
        v = sum(k * h[i:i + 2 * onr:2] for i, k in enumerate(w))
        if integer:
            v = np.sign(v) * (np.abs(v) // 256)
            return v.astype(img.dtype)
        return (v / 256).astype(img.dtype)

    def __eq__(self, other):
        return isinstance(other, _pyramid_down_n) and other.N == self.N

    def __hash__(self):
        return hash(("pyramid_down", self.N))

    def __repr__(self):
        return f"pyramid_down[{self.N}]"


def _coords(p):
    """``(x, y)`` as floats, or as float64 arrays when either is an array."""
    if np.ndim(p[0]) or np.ndim(p[1]):
        return (np.asarray(p[0], np.float64), np.asarray(p[1], np.float64))
    return (float(p[0]), float(p[1]))


def _cdiv(a, b):
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class _pyramid_down_template:
    """``pyramid_down(N)`` or ``pyramid_down[N]``: the (cached) pyramid object for N >= 1.
    Its bracket form is how it prints inside a net type expression."""

    is_input_template = True  # the bracket-expression parser finds it by this flag and name
    name = "pyramid_down"
    _cache = {}

    def __getitem__(self, n):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"pyramid_down: N must be an integer >= 1, got {n!r}")
        n = int(n)
        pyr = self._cache.get(n)
        if pyr is None:
            pyr = self._cache[n] = _pyramid_down_n(n)
        return pyr

    __call__ = __getitem__

    def __repr__(self):
        return "pyramid_down"


pyramid_down = _pyramid_down_template()


# ----------------------------------------------------------------------------------------
# the tiled layout and its coordinate maps

def compute_tiled_image_pyramid_details(pyr, nr, nc, padding=10, outer_padding=0):
    """dlib's ``impl::compute_tiled_image_pyramid_details``: the level rectangles of a tiled
    pyramid of an ``nr x nc`` image and the tiled image's ``(rects, NR, NC)``.

    Levels shrink with ``pyr.output_size`` until one is empty or under 5 rows. The first
    column holds levels top to bottom until the next one fits beside the first column and
    the column is at least half the total height; the rest climb the right side from the
    bottom and stop before touching level 0. Ports dlib's unsigned arithmetic in the column
    test (it matters only for images narrower than the padding).
    """
    nr, nc, padding, outer_padding = int(nr), int(nc), int(padding), int(outer_padding)
    if nr * nc == 0:
        return [], 0, 0
    min_height = 5
    rects = [rectangle.from_size(nc, nr)]
    while True:
        nr, nc = pyr.output_size(nr, nc)
        if nr * nc == 0 or nr < min_height:
            break
        rects.append(rectangle.from_size(nc, nr))

    w0, h0 = rects[0].width(), rects[0].height()
    total_height = sum(r.height() + padding for r in rects) - padding * 2
    height = prev_width = 0
    for r in rects:
        # dlib compares unsigned long values here: differences wrap modulo 2^64
        fits_beside = r.width() <= (w0 - prev_width - padding) % _U64
        tall_enough = ((height - h0) % _U64 * 2) % _U64 >= (total_height - h0) % _U64
        if fits_beside and tall_enough:
            break
        height += r.height() + padding
        prev_width = r.width()
    height -= padding
    width = w0
    pyramid_nr = height + outer_padding * 2
    pyramid_nc = width + outer_padding * 2

    y, i = outer_padding, 0
    while y < height + outer_padding and i < len(rects):
        r = rects[i]
        rects[i] = rectangle(r.l + outer_padding, r.t + y, r.r + outer_padding, r.b + y)
        y += rects[i].height() + padding
        i += 1
    y -= padding
    while i < len(rects):
        p1 = (outer_padding + width - 1, y - 1)
        br = rects[i].br_corner()
        rect = rectangle.from_points(p1, (p1[0] - br[0], p1[1] - br[1]))
        if not rects[0].intersect(rect).is_empty():
            break  # would overlap the original image
        rects[i] = rect
        y -= rect.height() + padding
        i += 1
    return rects[:i], pyramid_nr, pyramid_nc


def image_to_tiled_pyramid(pyr, rects, scale, p):
    """dlib's ``image_to_tiled_pyramid``: a point (or rectangle) of the original image seen at
    ``scale`` (0 < scale <= 1) -> tiled-pyramid coordinates, on the level nearest that scale."""
    if not rects:
        raise ValueError("image_to_tiled_pyramid: the tensor has no pyramid levels")
    if not 0 < scale <= 1:
        raise ValueError(f"image_to_tiled_pyramid: scale must be in (0, 1], got {scale}")
    if isinstance(p, (rectangle, drectangle)):
        p = drectangle._coerce(p)
        return drectangle.from_points(image_to_tiled_pyramid(pyr, rects, scale, p.tl_corner()),
                                      image_to_tiled_pyramid(pyr, rects, scale, p.br_corner()))
    rate = pyr.rate()
    # log(scale)/log(rate): with rate 0 (pyramid_down<1>) dlib divides by -inf and gets 0
    level = 0 if rate <= 0 else lround(math.log(scale) / math.log(rate))
    level = min(max(level, 0), len(rects) - 1)
    q = pyr.point_down(p, level)
    return (rects[level].l + q[0], rects[level].t + q[1])


def tiled_pyramid_to_image(pyr, rects, p):
    """dlib's ``tiled_pyramid_to_image``: a point (or rectangle) of the tiled pyramid -> the
    original image, through the level containing (or nearest to) it (its centre for a
    rectangle)."""
    if not rects:
        raise ValueError("tiled_pyramid_to_image: the tensor has no pyramid levels")
    if isinstance(p, (rectangle, drectangle)):
        r = drectangle._coerce(p)
        level = nearest_rect(rects, dcenter(r))
        ox, oy = rects[level].l, rects[level].t
        return pyr.rect_up(drectangle(r.l - ox, r.t - oy, r.r - ox, r.b - oy), level)
    level = nearest_rect(rects, p)
    return pyr.point_up((p[0] - rects[level].l, p[1] - rects[level].t), level)


# ----------------------------------------------------------------------------------------
# input layers

class _input_image_pyramid(input_layer):
    """Shared by the pyramid input layers (dlib's ``detail::input_image_pyramid``)."""

    pyramid_type = None   # set by the template: a pyramid_down(N)
    _template_name = ""
    _channels = 1

    def __init__(self):
        self.pyramid_padding = 10
        self.pyramid_outer_padding = 11

    @classmethod
    def type_expr(cls) -> str:
        return f"{cls._template_name}[{cls.pyramid_type!r}]"

    def get_pyramid_padding(self):
        return self.pyramid_padding

    def set_pyramid_padding(self, value):
        self.pyramid_padding = self._check_padding("pyramid_padding", value)

    def get_pyramid_outer_padding(self):
        return self.pyramid_outer_padding

    def set_pyramid_outer_padding(self, value):
        self.pyramid_outer_padding = self._check_padding("pyramid_outer_padding", value)

    def _check_padding(self, name, value):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{self._template_name}: {name} must be an integer >= 0, got {value!r}")
        return int(value)

    # -- coordinate maps (they read the level rectangles stored on the tensor) --------------
    def _rects(self, data):
        rects = getattr(data, "annotation", None)
        if not rects:
            raise ValueError(f"{self._template_name}: the tensor carries no pyramid level rectangles "
                             f"(make it with this layer's to_tensor)")
        return rects

    def image_contained_point(self, data, p) -> bool:
        """True iff the image point ``p`` (rounded to integers) lies inside the original image."""
        r0 = self._rects(data)[0]
        x, y = round_point(p)
        return r0.contains((x + r0.l, y + r0.t))

    def tensor_space_to_image_space(self, data, r) -> drectangle:
        return tiled_pyramid_to_image(self.pyramid_type, self._rects(data), drectangle._coerce(r))

    def tensor_space_to_image_space_many(self, data, l, t, r, b):
        """``tensor_space_to_image_space`` of many rectangles given as arrays of corners;
        returns ``(l, t, r, b)`` arrays (the same arithmetic, vectorised)."""
        rects = self._rects(data)
        l, t, r, b = (np.asarray(v, dtype=np.float64) for v in (l, t, r, b))
        # nearest_rect of the rounded centre: the first level containing it, else the nearest
        cx = np.floor((l + r) / 2.0 + 0.5)
        cy = np.floor((t + b) / 2.0 + 0.5)
        level = np.full(l.shape, -1, dtype=np.int64)
        best = np.full(l.shape, np.inf)
        nearest = np.zeros(l.shape, dtype=np.int64)
        for i, rr in enumerate(rects):
            inside = (cx >= rr.l) & (cx <= rr.r) & (cy >= rr.t) & (cy <= rr.b)
            level = np.where((level < 0) & inside, i, level)
            d = np.hypot(np.clip(cx, rr.l, rr.r) - cx, np.clip(cy, rr.t, rr.b) - cy)
            closer = d < best
            nearest = np.where(closer, i, nearest)
            best = np.where(closer, d, best)
        level = np.where(level < 0, nearest, level)
        ox = np.array([rr.l for rr in rects], dtype=np.float64)[level]
        oy = np.array([rr.t for rr in rects], dtype=np.float64)[level]
        corners = [l - ox, t - oy, r - ox, b - oy]
        pyr = self.pyramid_type
        for step in range(1, int(level.max(initial=0)) + 1):
            sel = level >= step
            x1, y1 = pyr._up1((corners[0][sel], corners[1][sel]))
            x2, y2 = pyr._up1((corners[2][sel], corners[3][sel]))
            corners[0][sel], corners[1][sel], corners[2][sel], corners[3][sel] = x1, y1, x2, y2
        # drectangle(p1, p2) is the bounding box of the two mapped corners
        return (np.minimum(corners[0], corners[2]), np.minimum(corners[1], corners[3]),
                np.maximum(corners[0], corners[2]), np.maximum(corners[1], corners[3]))

    def image_space_to_tensor_space(self, data, scale, r) -> drectangle:
        if not 0 < scale <= 1:
            raise ValueError(f"{self._template_name}.image_space_to_tensor_space: scale must be in "
                             f"(0, 1], got {scale}")
        return image_to_tiled_pyramid(self.pyramid_type, self._rects(data), scale, drectangle._coerce(r))

    # -- to_tensor --------------------------------------------------------------------------
    def _images(self, batch):
        items = self._batch(batch)
        first = np.asarray(items[0])
        shape = (first.shape[:2] + ((3,) if self._channels == 3 else ())) if first.ndim >= 2 else first.shape
        what = "H x W x 3 uint8 RGB images" if self._channels == 3 else "2-D uint8 images"
        imgs = []
        for i, item in enumerate(items):
            a = np.asarray(item)
            if a.ndim != (3 if self._channels == 3 else 2) or a.shape != shape:
                raise ValueError(f"{self._template_name}.to_tensor: expected {what} all of one size; "
                                 f"input 0 has shape {first.shape}, input {i} has shape {a.shape}")
            imgs.append(safe_cast(self, a, np.uint8, f"input {i}"))
        return np.stack(imgs)

    def to_tensor(self, batch, data):
        """Tile each image's pyramid into one plane per channel: ``data`` is
        ``(N, k, NR, NC)``, zero outside the levels, and ``data.annotation`` is the list of
        level rectangles (level 0 = the image itself)."""
        imgs = self._images(batch)
        n, nr, nc = imgs.shape[:3]
        rects, NR, NC = compute_tiled_image_pyramid_details(
            self.pyramid_type, nr, nc, self.pyramid_padding, self.pyramid_outer_padding)
        plane_rect = rectangle.from_size(NC, NR)
        if any(not plane_rect.contains(r) for r in rects):
            # dlib (release build) would write outside the tensor here
            raise ValueError(f"{self._template_name}.to_tensor: a {nr}x{nc} image is too small for a "
                             f"tiled pyramid with pyramid_padding={self.pyramid_padding}: its levels "
                             f"do not fit in the {NR}x{NC} tiled image")
        data.set_size(n, self._channels, NR, NC)
        data.annotation = rects
        out = data.host_write_only()
        out[...] = 0  # the levels do not cover the whole plane
        if not rects:
            return
        r0 = rects[0]
        self._write_level0(out[:, :, r0.t:r0.b + 1, r0.l:r0.r + 1], imgs)
        # each level is the bilinear resize of the one above it (dlib's create_tiled_pyramid
        # runs tt::resize_bilinear on strided windows of the same tensor)
        plane = NR * NC
        for prev, cur in zip(rects, rects[1:]):
            src = alias_tensor(n, self._channels, prev.height(), prev.width())(data, NC * prev.t + prev.l)
            dest = alias_tensor(n, self._channels, cur.height(), cur.width())(data, NC * cur.t + cur.l)
            tt.resize_bilinear(dest, src, NC, plane, NC, plane)

    def _write_level0(self, window, imgs):
        raise NotImplementedError

    def _write_paddings(self, w):
        w.uint(self.pyramid_padding)
        w.uint(self.pyramid_outer_padding)

    def _paddings_str(self):
        return f" pyramid_padding={self.pyramid_padding} pyramid_outer_padding={self.pyramid_outer_padding}"


class _input_grayscale_image_pyramid(_input_image_pyramid):
    """Batch of 2-D uint8 images -> ``(N, 1, NR, NC)`` tiled pyramids of ``pixel/256``."""

    _template_name = "input_grayscale_image_pyramid"
    _channels = 1

    def _write_level0(self, window, imgs):
        window[:, 0] = imgs
        window /= window.dtype.type(256)

    def serialize(self, w):
        w.string("input_grayscale_image_pyramid")
        self._write_paddings(w)

    def deserialize(self, r):
        r.expect_string("input_grayscale_image_pyramid")
        padding = r.uint("pyramid_padding")
        outer = r.uint("pyramid_outer_padding")
        self.pyramid_padding, self.pyramid_outer_padding = padding, outer

    def __repr__(self):
        return "input_grayscale_image_pyramid()" + self._paddings_str()

    def to_xml(self):
        # dlib's text, stray quote included
        return (f"<input_grayscale_image_pyramid' pyramid_padding='{self.pyramid_padding}"
                f"' pyramid_outer_padding='{self.pyramid_outer_padding}'/>\n")


class _input_rgb_image_pyramid(_input_image_pyramid, rgb_averages):
    """Batch of ``H x W x 3`` uint8 RGB images -> ``(N, 3, NR, NC)`` tiled pyramids of
    ``(channel - avg)/256``."""

    _template_name = "input_rgb_image_pyramid"
    _channels = 3

    def __init__(self, avg_red=122.782, avg_green=117.001, avg_blue=104.298):
        _input_image_pyramid.__init__(self)
        rgb_averages.__init__(self, avg_red, avg_green, avg_blue)

    def _write_level0(self, window, imgs):
        dt = window.dtype.type
        for c, avg in enumerate((self.avg_red, self.avg_green, self.avg_blue)):
            # dlib: (pixel - avg) in float, then / 256 (exact)
            np.subtract(imgs[..., c], dt(avg), out=window[:, c], dtype=window.dtype)
        window /= dt(256)

    def serialize(self, w):
        # one read from a v1 record writes v1 back (no paddings: refused unless 10 and 11)
        version = w.version_string(self, "input_rgb_image_pyramid2", lambda v: (
            None if (self.pyramid_padding, self.pyramid_outer_padding) == (10, 11) else
            f"{v} has no paddings (it means 10 and 11) and the layer has "
            f"{self.pyramid_padding} and {self.pyramid_outer_padding}"))
        self._write_avgs(w)
        if version == "input_rgb_image_pyramid2":
            self._write_paddings(w)

    def deserialize(self, r):
        # v1 ("input_rgb_image_pyramid") had no paddings: dlib then uses 10 and 11
        found = r.version_string(self, "input_rgb_image_pyramid", "input_rgb_image_pyramid2")
        red = r.float32("avg_red")
        green = r.float32("avg_green")
        blue = r.float32("avg_blue")
        padding, outer = 10, 11
        if found == "input_rgb_image_pyramid2":
            padding = r.uint("pyramid_padding")
            outer = r.uint("pyramid_outer_padding")
        self.avg_red, self.avg_green, self.avg_blue = red, green, blue
        self.pyramid_padding, self.pyramid_outer_padding = padding, outer

    def __repr__(self):
        return (f"input_rgb_image_pyramid({self.avg_red:g},{self.avg_green:g},{self.avg_blue:g})"
                + self._paddings_str())

    def to_xml(self):
        return (f"<input_rgb_image_pyramid r='{self.avg_red:.9g}' g='{self.avg_green:.9g}' "
                f"b='{self.avg_blue:.9g}' pyramid_padding='{self.pyramid_padding}' "
                f"pyramid_outer_padding='{self.pyramid_outer_padding}'/>\n")


class _pyramid_input_template:
    """``input_rgb_image_pyramid[pyramid_down(6)]``: the (cached) input layer class for a
    pyramid type (dlib's ``input_rgb_image_pyramid<pyramid_down<6>>``)."""

    is_input_template = True  # the bracket-expression parser finds it by this flag and name

    def __init__(self, name, base):
        self.name, self._base, self._cache = name, base, {}

    def __getitem__(self, pyr):
        if not isinstance(pyr, _pyramid_down_n):
            raise TypeError(f"{self.name}[...] takes a pyramid type such as pyramid_down(6), got {pyr!r}")
        cls = self._cache.get(pyr)
        if cls is None:
            cls = type(f"{self.name}_{pyr.N}", (self._base,),
                       {"pyramid_type": pyr, "__module__": __name__, "__doc__": self._base.__doc__})
            self._cache[pyr] = cls
        return cls

    def __repr__(self):
        return self.name


input_rgb_image_pyramid = _pyramid_input_template("input_rgb_image_pyramid", _input_rgb_image_pyramid)
input_grayscale_image_pyramid = _pyramid_input_template("input_grayscale_image_pyramid",
                                                        _input_grayscale_image_pyramid)
