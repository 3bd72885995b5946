"""dlib's image pyramids (image_transforms/image_pyramid.h): ``pyramid_down<N>`` (its point
and rectangle maps, level sizes and image downsampling), the tiled pyramid layout
(``compute_tiled_image_pyramid_details``), ``create_tiled_pyramid`` and the maps between an
image and its tiled pyramid (``image_to_tiled_pyramid``, ``tiled_pyramid_to_image``).

A tiled pyramid puts an image and its successively downsampled copies side by side in one
image: the full image at the top left, the smaller levels below it and then up the right side.
The pyramid input layers (``dnnpy.inputs.pyramid``) build the same layout in a tensor.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import drectangle, dcenter, lround, nearest_rect, rectangle
from .resize import _check_image, _resize_into

__all__ = ["pyramid_down", "compute_tiled_image_pyramid_details", "create_tiled_pyramid",
           "image_to_tiled_pyramid", "tiled_pyramid_to_image"]

_U64 = 1 << 64


class pyramid_down_n:
    """dlib's ``pyramid_down<N>``: each level is ``(N-1)/N`` the size of the one above it.
    N == 1 disables the pyramid, N == 2 and N == 3 are dlib's specialised 2:1 and 3:2
    pyramids (their own point maps and level sizes). Calling it on an image downsamples the
    image by one level with dlib's filters; the input layers resample their levels with
    ``tt.resize_bilinear`` instead, as dlib's do."""

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
        """Downsample an image one level, as dlib's ``pyramid_down<N>`` does (equal to
        dlib-bin's ``pyramid_down(N)(img)``): ``img`` is ``HxW`` or ``HxWxC``, any integer or
        float dtype; returns a new image of the same dtype.

        - N == 1 (dlib's ``pyramid_disable``): an empty ``0 x 0`` image.
        - N == 2: ``((nr-3)//2, (nc-3)//2)`` pixels, each the separable ``[1 4 6 4 1]`` filter
          over input rows ``2r..2r+4`` and columns ``2c..2c+4``, divided by 256.
        - N == 3: ``(2(nr-2)//3, 2(nc-2)//3)`` pixels: the ``[2 12 2]`` 3x3 filter, then each
          3x3 block of input pixels starting at ``(1+3i, 1+3j)`` gives a 2x2 output block by
          bilinear weights ``9 3 3 1``, divided by ``16 * 256``.
        - N >= 4: ``((N-1)nr//N, (N-1)nc//N)`` pixels filled by ``resize_image`` (bilinear).

        N == 2 and 3 return an empty image when a side is <= 8. Integer images are summed
        exactly and divided with truncation toward zero (dlib's integer arithmetic); float
        images in float64 in dlib's order of operations."""
        img = _check_image(img, f"pyramid_down({self.N})(img)")
        nr, nc = img.shape[:2]
        return self._down_into(img, ((self.N - 1) * nr) // self.N, ((self.N - 1) * nc) // self.N)

    def _down_into(self, img, rows, cols):
        """One level of ``img`` as a ``rows x cols`` image: for N <= 3 the size is fixed by the
        filter (``rows, cols`` are ignored); for N >= 4, dlib's ``pyramid_down<N>`` writing
        into a pre-sized image (how ``create_tiled_pyramid`` uses it) resizes to that size."""
        nr, nc = img.shape[:2]
        empty = np.zeros((0, 0) + img.shape[2:], img.dtype)
        if self.N == 1:
            return empty
        if self.N >= 4:
            return _resize_into(img, rows, cols)
        if nr <= 8 or nc <= 8:
            return empty
        integer = np.issubdtype(img.dtype, np.integer)
        a = img.astype(np.int64 if integer else np.float64)
        if self.N == 2:
            onr, onc = (nr - 3) // 2, (nc - 3) // 2
            w = (1, 4, 6, 4, 1)
            h = sum(k * a[:, i:i + 2 * onc:2] for i, k in enumerate(w))
            v = sum(k * h[i:i + 2 * onr:2] for i, k in enumerate(w))
            den = 256
        else:
            # the [2 12 2] filter at every interior pixel, rows first, in dlib's order; dlib
            # filters the rows in the pixel type (float32 stays float32), the rest in double
            r = a if integer else img
            h = (r[:, :-2] * 2 + r[:, 1:-1] * 12 + r[:, 2:] * 2).astype(a.dtype)  # columns 1..nc-2
            f = h[:-2] * 2 + h[1:-1] * 12 + h[2:] * 2                     # rows 1..nr-2
            ya, yb = _three_two_taps((2 * (nr - 2)) // 3)
            xa, xb = _three_two_taps((2 * (nc - 2)) // 3)
            # f is offset by one pixel: image pixel (y, x) is f[y-1, x-1]
            ya, yb, xa, xb = ya - 1, yb - 1, xa - 1, xb - 1
            faa = f[ya][:, xa]
            fba = f[yb][:, xa]
            fab = f[ya][:, xb]
            fbb = f[yb][:, xb]
            v = faa * 9 + fba * 3 + fab * 3 + fbb
            den = 16 * 256
        if integer:
            v = np.sign(v) * (np.abs(v) // den)   # C++ division truncates toward zero
            return v.astype(img.dtype)
        return (v / den).astype(img.dtype)

    def __eq__(self, other):
        return isinstance(other, pyramid_down_n) and other.N == self.N

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


def _three_two_taps(n):
    """pyramid_down<3>'s taps for ``n`` outputs along one axis: output ``o`` of block
    ``k = o // 2`` mixes pixels ``a`` (weight 3) and ``b`` (weight 1): ``a = 1 + 3k`` and
    ``b = 2 + 3k`` for even ``o``, ``a = 3 + 3k`` for odd ``o`` (the block's far corner)."""
    o = np.arange(n)
    k = o // 2
    return 1 + 3 * k + 2 * (o % 2), 2 + 3 * k


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
            pyr = self._cache[n] = pyramid_down_n(n)
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


def create_tiled_pyramid(img, pyr, padding=10, outer_padding=0):
    """dlib's ``create_tiled_pyramid<pyramid_type>(img, out_img, rects, padding,
    outer_padding)``: returns ``(tiled, rects)``. ``tiled`` is a new image (``img``'s dtype and
    channels) holding ``img`` and its ``pyr`` levels at the ``rectangle``s ``rects`` (level 0
    first, laid out by ``compute_tiled_image_pyramid_details``), 0 elsewhere. Each level is
    ``pyr`` applied to the level above it, resized to its rectangle (dlib's defaults:
    ``padding=10``, ``outer_padding=0``; the pyramid input layers use 10 and 11).

    The pyramid input layers build this layout in a tensor with a float bilinear resize per
    level (dlib's ``tt::resize_bilinear``), so their levels differ from these by rounding for
    N >= 4, and are a different filter for N == 2 and 3 (as in dlib)."""
    img = _check_image(img, "create_tiled_pyramid")
    if not isinstance(pyr, pyramid_down_n):
        raise TypeError(f"create_tiled_pyramid: pyr must be a pyramid such as pyramid_down(6), got {pyr!r}")
    padding, outer_padding = _padding(padding, "padding"), _padding(outer_padding, "outer_padding")
    nr, nc = img.shape[:2]
    rects, NR, NC = compute_tiled_image_pyramid_details(pyr, nr, nc, padding, outer_padding)
    plane = rectangle.from_size(max(NC, 0), max(NR, 0))
    if any(not plane.contains(r) for r in rects):
        # dlib (release build) would write outside the image here
        raise ValueError(f"create_tiled_pyramid: a {nr}x{nc} image is too small for a tiled "
                         f"pyramid with padding={padding}: its levels do not fit in the {NR}x{NC} image")
    out = np.zeros((NR, NC) + img.shape[2:], img.dtype)
    if not rects:
        return out, rects
    level = img
    out[rects[0].t:rects[0].b + 1, rects[0].l:rects[0].r + 1] = img
    for r in rects[1:]:
        level = pyr._down_into(level, r.height(), r.width())
        if level.shape[:2] != (r.height(), r.width()):  # cannot happen: the sizes are dlib's
            raise AssertionError(f"create_tiled_pyramid: level {level.shape} does not fit {r}")
        out[r.t:r.b + 1, r.l:r.r + 1] = level
    return out, rects


def _padding(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"create_tiled_pyramid: {name} must be an integer >= 0, got {v!r}")
    return int(v)
