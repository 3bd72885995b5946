"""dlib's image chips (image_transforms/interpolation.h): ``chip_dims``, ``chip_details``,
``get_mapping_to_chip``, ``extract_image_chip(s)``, ``insert_image_chip``, ``map_det_to_chip``
and ``get_face_chip_details``.

A chip is a ``rows x cols`` image cut from the rectangle ``rect`` of a source image after
turning the image by ``angle`` radians about the rectangle's centre. Big reductions go through
dlib's ``pyramid_down<2>`` levels first (so that bilinear sampling does not degrade into
nearest neighbour), exactly as dlib chooses them, so chips match dlib's pixel for pixel.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import (OBJECT_PART_NOT_PRESENT, rectangle_base, centered_drect, dcenter, drectangle,
                        full_object_detection, get_rect, grow_rect, lround, rectangle, translate_rect)
from .pyramid import pyramid_down
from .resize import _check_hw
from .transforms import (find_affine_transform, find_similarity_transform, interpolate_bilinear,
                         interpolate_nearest_neighbor, rotate_point, transform_image)

__all__ = ["chip_dims", "chip_details", "get_mapping_to_chip", "extract_image_chip", "extract_image_chips",
           "insert_image_chip", "map_det_to_chip", "get_face_chip_details", "get_face_chip",
           "get_face_chips"]


class chip_dims:
    """dlib's ``chip_dims(rows, cols)``."""

    __slots__ = ("rows", "cols")

    def __init__(self, rows, cols):
        self.rows, self.cols = int(rows), int(cols)
        if self.rows < 0 or self.cols < 0:
            raise ValueError(f"chip_dims: rows and cols must be >= 0, got {rows}, {cols}")

    def __repr__(self):
        return f"chip_dims({self.rows}, {self.cols})"


class chip_details:
    """dlib's ``chip_details``: ``rect`` (a ``drectangle``), ``angle`` (radians), ``rows`` and
    ``cols`` of the chip. Constructors, as dlib's:

    - ``chip_details()``: empty;
    - ``chip_details(rect)``: rows/cols are the rect's height/width (``lround`` of a drectangle's);
    - ``chip_details(rect, size[, angle])``: a chip of about ``size`` pixels with the rect's
      aspect ratio (``rows = trunc(h * sqrt(size / area) + 0.5)``, ``cols = trunc(size / rows
      + 0.5)``, both >= 1; a side of ``round(sqrt(size))`` for an empty rect);
    - ``chip_details(rect, chip_dims(rows, cols)[, angle])``;
    - ``chip_details(chip_points, img_points, chip_dims)``: the similarity transform from chip
      points to image points gives the angle, the scale and the rect.
    """

    __slots__ = ("rect", "angle", "rows", "cols")

    def __init__(self, rect=None, size_or_dims=None, angle=0.0):
        if isinstance(angle, chip_dims):  # chip_details(chip_points, img_points, dims)
            self._from_points(rect, size_or_dims, angle)
            return
        self.angle = float(angle)
        if rect is None:
            self.rect, self.rows, self.cols = drectangle(), 0, 0
            return
        if not isinstance(rect, rectangle_base):
            raise TypeError(f"chip_details: rect must be a rectangle or drectangle, got {type(rect).__name__}")
        self.rect = drectangle._coerce(rect)
        if size_or_dims is None:
            if self.angle != 0:
                raise ValueError("chip_details(rect): an angle needs a size or chip_dims as well")
            if isinstance(rect, rectangle):
                self.rows, self.cols = rect.height(), rect.width()
            else:
                self.rows, self.cols = lround(self.rect.height()), lround(self.rect.width())
        elif isinstance(size_or_dims, chip_dims):
            self.rows, self.cols = size_or_dims.rows, size_or_dims.cols
        else:
            size = int(size_or_dims)
            if size < 0:
                raise ValueError(f"chip_details: size must be >= 0, got {size}")
            if self.rect.is_empty():
                self.rows = self.cols = lround(math.sqrt(size))
            else:
                rel = math.sqrt(size / self.rect.area())
                rows = int(self.rect.height() * rel + 0.5)
                if rows == 0:  # dlib divides by this 0 (undefined): say so instead
                    raise ValueError(f"chip_details: {self.rect} is too flat for a chip of {size} pixels")
                self.rows, self.cols = rows, max(1, int(size / rows + 0.5))

    def _from_points(self, chip_points, img_points, dims):
        if not isinstance(dims, chip_dims):
            raise TypeError("chip_details(chip_points, img_points, dims): dims must be a chip_dims")
        cp, ip = np.asarray(chip_points, dtype=np.float64), np.asarray(img_points, dtype=np.float64)
        if cp.shape != ip.shape or cp.ndim != 2 or cp.shape[1] != 2 or len(cp) < 2:
            raise ValueError(f"chip_details: needs equally many (>= 2) chip and image points, got shapes "
                             f"{cp.shape} and {ip.shape}")
        self.rows, self.cols = dims.rows, dims.cols
        tform = find_similarity_transform(cp, ip)
        (m00, m01), (m10, m11) = tform.m.tolist()
        px, py = m00 * 1.0 + m01 * 0.0, m10 * 1.0 + m11 * 0.0  # the image of (1, 0), as dlib
        self.angle = math.atan2(py, px)
        scale = math.sqrt(px * px + py * py)  # dlib's length(), not hypot: same last bit
        self.rect = centered_drect(tform((dims.cols / 2.0, dims.rows / 2.0)), dims.cols * scale,
                                   dims.rows * scale)

    def size(self):
        return self.rows * self.cols

    def __eq__(self, other):
        return (isinstance(other, chip_details) and self.rect == other.rect and self.angle == other.angle
                and self.rows == other.rows and self.cols == other.cols)

    def __repr__(self):
        return f"chip_details({self.rect!r}, chip_dims({self.rows}, {self.cols}), angle={self.angle!r})"


def get_mapping_to_chip(details):
    """dlib's ``get_mapping_to_chip``: the affine map from image coordinates to chip
    coordinates (the rect's tl, tr and br corners, turned by ``angle`` about its centre, go to
    the chip's corners)."""
    c = dcenter(details.rect)
    r = details.rect
    frm = [rotate_point(c, r.tl_corner(), details.angle), rotate_point(c, r.tr_corner(), details.angle),
           rotate_point(c, r.br_corner(), details.angle)]
    to = [(0, 0), (details.cols - 1, 0), (details.cols - 1, details.rows - 1)]
    return find_affine_transform(frm, to)


def map_det_to_chip(det, details):
    """dlib's ``map_det_to_chip``: a ``full_object_detection`` in chip coordinates (missing
    parts stay missing; the box is the integer bounding box of its mapped corners)."""
    tform = get_mapping_to_chip(details)
    parts = [p if p == OBJECT_PART_NOT_PRESENT else tform(p) for p in det.parts]
    box = rectangle()
    r = det.rect
    for p in (r.tl_corner(), r.tr_corner(), r.bl_corner(), r.br_corner()):
        x, y = tform(p)
        x, y = int(math.floor(x + 0.5)), int(math.floor(y + 0.5))
        box = box + rectangle(x, y, x, y)
    return full_object_detection(box, parts)


def _basic_chip(img, drect):
    """A plain copy of the integer rect (dlib's ``basic_extract_image_chip``): no scaling or
    rotation; pixels outside the image are 0."""
    loc = rectangle._coerce(drect)
    chip = np.zeros((loc.height(), loc.width()) + img.shape[2:], img.dtype)
    area = loc.intersect(get_rect(img))
    if not area.is_empty():
        chip[area.t - loc.t:area.b - loc.t + 1, area.l - loc.l:area.r - loc.l + 1] = \
            img[area.t:area.b + 1, area.l:area.r + 1]
    return chip


def _is_plain_copy(d):
    return d.angle == 0 and d.rows == d.rect.height() and d.cols == d.rect.width()


def _check(img, details, name):
    img = _check_hw(img, name)
    for i, d in enumerate(details):
        if not isinstance(d, chip_details):
            raise TypeError(f"{name}: chip {i} must be a chip_details, got {type(d).__name__}")
        if d.size() == 0 or d.rect.is_empty():
            raise ValueError(f"{name}: chip {i} ({d!r}) has an empty size or rect")
    return img


def extract_image_chips(img, chip_locations, interp=None):
    """dlib's ``extract_image_chips``: the list of chips (arrays of ``img``'s dtype and
    channels) described by ``chip_locations``, with bilinear interpolation by default
    (``interpolate_nearest_neighbor()`` or ``interpolate_quadratic()`` may be given).

    As dlib: a chip with angle 0 whose size equals its rect's is a plain copy (0 outside the
    image). Otherwise, unless interpolation is nearest neighbour, every chip much smaller than
    its rect is sampled from a ``pyramid_down<2>`` level of the sub-image that bounds all the
    chips (grown by a margin of 2, then ``2g + 2`` per level), the deepest level whose rect
    area is still above the chip's size; then ``transform_image`` maps the chip corners onto
    the rect's corners turned by ``angle``."""
    img = _check(img, chip_locations, "extract_image_chips")
    interp = interpolate_bilinear() if interp is None else interp
    use_pyramid = not isinstance(interp, interpolate_nearest_neighbor)
    pyr = pyramid_down(2)
    max_depth = 0
    bbox = rectangle()
    img_rect = drectangle._coerce(get_rect(img))
    for d in chip_locations:
        depth, grow = 0, 2.0
        r = pyr.rect_down(d.rect)
        while use_pyramid and r.area() > d.size():
            r = pyr.rect_down(r)
            depth += 1
            grow = grow * 2 + 2
        c = dcenter(d.rect)
        rot = drectangle()
        for p in (d.rect.tl_corner(), d.rect.tr_corner(), d.rect.bl_corner(), d.rect.br_corner()):
            q = rotate_point(c, p, d.angle)
            rot = rot + drectangle(*q, *q)
        bbox = bbox + rectangle._coerce(grow_rect(rot, grow).intersect(img_rect))
        max_depth = max(depth, max_depth)

    sub = img[bbox.t:bbox.b + 1, bbox.l:bbox.r + 1] if not bbox.is_empty() else img[:0, :0]
    levels = []
    for _ in range(max_depth):
        levels.append(pyr(levels[-1] if levels else sub))

    chips = []
    for d in chip_locations:
        if _is_plain_copy(d):
            chips.append(_basic_chip(img, d.rect))
            continue
        level = -1
        r = translate_rect(d.rect, (-bbox.l, -bbox.t))
        while use_pyramid and pyr.rect_down(r).area() > d.size():
            level += 1
            r = pyr.rect_down(r)
        c = dcenter(r)
        frm = [(0, 0), (d.cols - 1, 0), (0, d.rows - 1)]
        to = [rotate_point(c, r.tl_corner(), d.angle), rotate_point(c, r.tr_corner(), d.angle),
              rotate_point(c, r.bl_corner(), d.angle)]
        src = sub if level == -1 else levels[level]
        chips.append(transform_image(src, find_affine_transform(frm, to), d.rows, d.cols, interp))
    return chips


def extract_image_chip(img, chip_location, interp=None):
    """dlib's ``extract_image_chip``: one chip (see ``extract_image_chips``)."""
    _check(img, [chip_location], "extract_image_chip")      # errors name this function
    return extract_image_chips(img, [chip_location], interp)[0]


def insert_image_chip(img, chip, chip_location, interp=None):
    """dlib's ``insert_image_chip``: paste ``chip`` back into ``img`` (in place) where
    ``chip_location`` says it came from. Every image pixel samples the chip at
    ``get_mapping_to_chip(chip_location)``; pixels whose sample fails are left unchanged."""
    if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
        raise ValueError("insert_image_chip: img must be an HxW or HxWxC numpy array (changed in place)")
    chip = np.asarray(chip)
    if chip.shape[:2] != (chip_location.rows, chip_location.cols) or chip.shape[2:] != img.shape[2:]:
        raise ValueError(f"insert_image_chip: the chip's shape {chip.shape} does not match the location "
                         f"({chip_location.rows}x{chip_location.cols}) and the image's channels {img.shape}")
    interp = interpolate_bilinear() if interp is None else interp
    tf = get_mapping_to_chip(chip_location)
    c, r = np.meshgrid(np.arange(img.shape[1], dtype=np.float64), np.arange(img.shape[0], dtype=np.float64))
    v, ok = interp.sample(chip, *tf.map_arrays(c, r))
    img[ok] = v[ok].astype(img.dtype)
    return img


# dlib's canonical face points (interpolation.h): 5-point shapes, and the mean 68-point shape
# for parts 17..67 (x then y), in a unit box.
_FACE5 = ((0.8595674595992, 0.2134981538014), (0.6460604764104, 0.2289674387677),
          (0.1205750620789, 0.2137274526848), (0.3340850613712, 0.2290642403242),
          (0.4901123135679, 0.6277975316475))
_FACE68_X = (
    0.000213256, 0.0752622, 0.18113, 0.29077, 0.393397, 0.586856, 0.689483, 0.799124,
    0.904991, 0.98004, 0.490127, 0.490127, 0.490127, 0.490127, 0.36688, 0.426036,
    0.490127, 0.554217, 0.613373, 0.121737, 0.187122, 0.265825, 0.334606, 0.260918,
    0.182743, 0.645647, 0.714428, 0.793132, 0.858516, 0.79751, 0.719335, 0.254149,
    0.340985, 0.428858, 0.490127, 0.551395, 0.639268, 0.726104, 0.642159, 0.556721,
    0.490127, 0.423532, 0.338094, 0.290379, 0.428096, 0.490127, 0.552157, 0.689874,
    0.553364, 0.490127, 0.42689)
_FACE68_Y = (
    0.106454, 0.038915, 0.0187482, 0.0344891, 0.0773906, 0.0773906, 0.0344891,
    0.0187482, 0.038915, 0.106454, 0.203352, 0.307009, 0.409805, 0.515625, 0.587326,
    0.609345, 0.628106, 0.609345, 0.587326, 0.216423, 0.178758, 0.179852, 0.231733,
    0.245099, 0.244077, 0.231733, 0.179852, 0.178758, 0.216423, 0.244077, 0.245099,
    0.780233, 0.745405, 0.727388, 0.742578, 0.727388, 0.745405, 0.780233, 0.864805,
    0.902192, 0.909281, 0.902192, 0.864805, 0.784792, 0.778746, 0.785343, 0.778746,
    0.784792, 0.824182, 0.831803, 0.824182)


def get_face_chip_details(det, size=200, padding=0.2):
    """dlib's ``get_face_chip_details``: the chip that aligns a face given its 5- or 68-point
    landmarks (``full_object_detection``; a list of them gives a list). The canonical points,
    padded by ``padding`` (a fraction of the face on each side) and scaled to ``size``, are
    matched to the landmarks by a similarity transform (68 points: parts 27-67 without the
    lower lip 55-59 and 65-67)."""
    if isinstance(det, (list, tuple)):
        return [get_face_chip_details(d, size, padding) for d in det]
    if not isinstance(det, full_object_detection):
        raise TypeError(f"get_face_chip_details: expected a full_object_detection, got {type(det).__name__}")
    n = det.num_parts()
    if n not in (5, 68):
        raise ValueError(f"get_face_chip_details: needs a 5- or 68-point face shape, got {n} parts")
    size, padding = int(size), float(padding)
    if not (padding >= 0 and size > 0):
        raise ValueError(f"get_face_chip_details: needs padding >= 0 and size > 0, got {padding}, {size}")
    den = 2 * padding + 1
    if n == 5:
        idx = list(range(5))
        canon = _FACE5
    else:
        idx = [i for i in range(27, 68) if not (55 <= i <= 59 or 65 <= i <= 67)]
        canon = [(_FACE68_X[i - 17], _FACE68_Y[i - 17]) for i in idx]
    if n == 5:  # dlib divides a point expression, which it does by multiplying by 1/den ...
        rden = 1.0 / den
        frm = [((padding + x) * rden * size, (padding + y) * rden * size) for x, y in canon]
    else:       # ... and divides the 68 points' coordinates one by one
        frm = [((padding + x) / den * size, (padding + y) / den * size) for x, y in canon]
    to = [det.part(i) for i in idx]
    return chip_details(frm, to, chip_dims(size, size))


def get_face_chip(img, det, size=150, padding=0.25):
    """dlib-bin's ``get_face_chip``: ``extract_image_chip(img, get_face_chip_details(det, size,
    padding))`` (the alignment used for face recognition). As in the binding, ``padding`` is
    first rounded to float32 (its C++ parameter is a ``float``; exact for 0.25)."""
    return extract_image_chip(img, get_face_chip_details(det, size, float(np.float32(padding))))


def get_face_chips(img, dets, size=150, padding=0.25):
    """dlib-bin's ``get_face_chips``: ``get_face_chip`` of every face shape in ``dets`` (a
    list of ``full_object_detection``), as a list of chips; ``[]`` for no faces."""
    if not dets:
        return []
    details = get_face_chip_details(list(dets), size, float(np.float32(padding)))
    return extract_image_chips(img, details)
