"""The pyramid input layers ``input_rgb_image_pyramid[pyramid_down(6)]`` /
``input_grayscale_image_pyramid[...]`` (dnn/input.h). The pyramid itself (``pyramid_down``,
the tiled layout and its maps) is ``dnnpy.image.pyramid``, re-exported here.

A tiled pyramid puts an image and its successively downsampled copies side by side in one
tensor plane: the full image at the top left, the smaller levels below it and then up the
right side (padding 10 between levels, 11 around the edge). ``data.annotation`` holds the
list of level ``rectangle``s; the coordinate maps (``tensor_space_to_image_space`` ...) use it
to map a box found anywhere in the tiled plane back to the original image.
"""

from __future__ import annotations

import numpy as np

from .. import tensor_tools as tt
from ..geometry import drectangle, rectangle, round_point
from ..image.pyramid import (pyramid_down_n, compute_tiled_image_pyramid_details, image_to_tiled_pyramid,
                             pyramid_down, tiled_pyramid_to_image)
from ..tensor import alias_tensor
from .base import input_layer, refuse_one_input, rgb_averages, safe_cast

__all__ = ["pyramid_down", "input_rgb_image_pyramid", "input_grayscale_image_pyramid",
           "compute_tiled_image_pyramid_details", "image_to_tiled_pyramid", "tiled_pyramid_to_image"]


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
    @property
    def sample_ndim(self):
        return 3 if self._channels == 3 else 2

    def _looks_like_one(self, a):
        return self._channels != 3 or a.shape[-1] == 3

    def _images(self, batch):
        what = "an H x W x 3 uint8 RGB image" if self._channels == 3 else "a 2-D uint8 image"
        refuse_one_input(self, batch, self.sample_ndim, what)
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

    def to_onnx(self, g, shape, batch):
        """Refused: the pyramid's tiled layout depends on the image size, and the level
        rectangles are needed to decode detections; export with ``input_mode="tensor"`` and
        feed the tensor ``to_tensor`` makes."""
        g.refuse("an image pyramid is built on the host (its layout depends on the image size, and "
                 "detections need its level rectangles): export with input_mode='tensor' and feed the "
                 "tensor to_tensor makes")


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
        if not isinstance(pyr, pyramid_down_n):
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
