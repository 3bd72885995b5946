"""dlib's rectangles and box-overlap tests: ``rectangle`` (integer, inclusive corners),
``drectangle`` (double corners), ``mmod_rect`` (a labelled detection) and
``test_box_overlap``, with dlib's exact semantics (rectangle.h, drectangle.h,
box_overlap_testing.h, full_object_detection.h).

Points are ``(x, y)`` tuples. Where dlib converts a double point or rectangle to an integer
one it rounds half away from zero (``std::lround``, ``floor(v + 0.5)`` for points); the
helpers ``lround`` and ``round_point`` reproduce that (Python's ``round`` does not).
"""

from __future__ import annotations

import itertools
import math
import numbers

__all__ = ["rectangle", "drectangle", "mmod_rect", "ignored_mmod_rect", "test_box_overlap",
           "box_intersection_over_union", "box_percent_covered", "find_tight_overlap_tester",
           "overlaps_any_box", "centered_rect", "centered_drect", "move_rect", "translate_rect",
           "set_rect_area", "center", "dcenter", "nearest_rect", "get_rect", "lround",
           "round_point", "shrink_rect", "grow_rect", "set_aspect_ratio", "full_object_detection",
           "OBJECT_PART_NOT_PRESENT", "point", "points", "rectangles", "full_object_detections",
           "as_rectangle"]


def lround(v) -> int:
    """``std::lround``: round half away from zero."""
    v = float(v)
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def round_point(p):
    """dlib's ``dpoint -> point`` conversion: ``floor(v + 0.5)`` per coordinate."""
    return (int(math.floor(p[0] + 0.5)), int(math.floor(p[1] + 0.5)))


def _fmt(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


class rectangle_base:
    """What rectangle and drectangle share: corners ``l, t, r, b`` (inclusive)."""

    __slots__ = ("l", "t", "r", "b")
    _num = int

    def __init__(self, l=0, t=0, r=-1, b=-1):
        self.l, self.t, self.r, self.b = self._num(l), self._num(t), self._num(r), self._num(b)

    def left(self):
        return self.l

    def top(self):
        return self.t

    def right(self):
        return self.r

    def bottom(self):
        return self.b

    def tl_corner(self):
        return (self.l, self.t)

    def tr_corner(self):
        return (self.r, self.t)

    def bl_corner(self):
        return (self.l, self.b)

    def br_corner(self):
        return (self.r, self.b)

    def is_empty(self):
        return self.t > self.b or self.l > self.r

    def width(self):
        return 0 if self.is_empty() else self.r - self.l + 1

    def height(self):
        return 0 if self.is_empty() else self.b - self.t + 1

    def area(self):
        return self.width() * self.height()

    def __add__(self, other):
        """The smallest rectangle containing both (an empty operand is ignored)."""
        other = type(self)._coerce(other)
        if other.is_empty():
            return self
        if self.is_empty():
            return other
        return type(self)(min(self.l, other.l), min(self.t, other.t),
                          max(self.r, other.r), max(self.b, other.b))

    def intersect(self, other):
        other = type(self)._coerce(other)
        return type(self)(max(self.l, other.l), max(self.t, other.t),
                          min(self.r, other.r), min(self.b, other.b))

    def contains(self, p_or_rect, y=None):
        if y is not None:
            p_or_rect = (p_or_rect, y)
        if isinstance(p_or_rect, rectangle_base):
            return self._contains_rect(type(self)._coerce(p_or_rect))
        x, y = p_or_rect
        return not (x < self.l or x > self.r or y < self.t or y > self.b)

    def __eq__(self, other):
        return (isinstance(other, rectangle_base)
                and (self.l, self.t, self.r, self.b) == (other.l, other.t, other.r, other.b))

    def __hash__(self):
        return hash((self.l, self.t, self.r, self.b))

    def __iter__(self):  # (left, top, right, bottom), handy for numpy and unpacking
        return iter((self.l, self.t, self.r, self.b))

    def __str__(self):
        return f"[({_fmt(self.l)}, {_fmt(self.t)}) ({_fmt(self.r)}, {_fmt(self.b)})]"

    def __repr__(self):
        return f"{type(self).__name__}({self.l!r}, {self.t!r}, {self.r!r}, {self.b!r})"


class rectangle(rectangle_base):
    """dlib's ``rectangle``: integer corners, ``width() == right - left + 1``.

    ``rectangle(l, t, r, b)``; ``rectangle()`` is empty; ``rectangle(w, h)`` (two numbers) and
    ``rectangle.from_size(w, h)`` are dlib's ``rectangle(w, h)`` = ``(0, 0, w-1, h-1)``;
    ``rectangle.from_points(p1, p2)`` the bounding box of two points. Converting a
    ``drectangle`` rounds each corner with ``lround``.
    """

    __slots__ = ()

    def __init__(self, l=0, t=0, r=None, b=None):
        if r is None and b is None:      # rectangle(), or dlib's rectangle(width, height)
            super().__init__(0, 0, int(l) - 1, int(t) - 1)
        elif r is None or b is None:
            raise TypeError(f"rectangle: give (l, t, r, b) or (width, height), got l={l}, t={t}, "
                            f"r={r}, b={b}")
        else:
            super().__init__(l, t, r, b)
    _num = int

    @classmethod
    def from_size(cls, width, height):
        return cls(0, 0, int(width) - 1, int(height) - 1)

    @classmethod
    def from_points(cls, p1, p2):
        p1, p2 = round_point(p1), round_point(p2)
        return cls(*p1, *p1) + cls(*p2, *p2)

    @classmethod
    def _coerce(cls, r):
        if isinstance(r, rectangle):
            return r
        if isinstance(r, drectangle):
            return cls(lround(r.l), lround(r.t), lround(r.r), lround(r.b))
        if isinstance(r, mmod_rect):
            return r.rect
        raise TypeError(f"rectangle: expected a rectangle, drectangle or mmod_rect, got {type(r).__name__}")

    def _contains_rect(self, rect):
        return self + rect == self  # dlib: rect + *this == *this

    def __lt__(self, other):
        return (self.l, self.t, self.r, self.b) < (other.l, other.t, other.r, other.b)


class drectangle(rectangle_base):
    """dlib's ``drectangle``: double corners; ``width() == right - left + 1`` as well."""

    __slots__ = ()
    _num = float

    @classmethod
    def from_points(cls, p1, p2):
        return cls(*p1, *p1) + cls(*p2, *p2)

    @classmethod
    def _coerce(cls, r):
        if isinstance(r, drectangle):
            return r
        if isinstance(r, rectangle):
            return cls(r.l, r.t, r.r, r.b)
        if isinstance(r, mmod_rect):
            return cls._coerce(r.rect)
        raise TypeError(f"drectangle: expected a rectangle, drectangle or mmod_rect, got {type(r).__name__}")

    def _contains_rect(self, rect):
        if rect.is_empty():
            return True
        return self.l <= rect.l and self.r >= rect.r and self.t <= rect.t and self.b >= rect.b

    def to_rectangle(self):
        return rectangle._coerce(self)


def center(rect):
    """dlib's ``center``: integer centre of a rectangle (rounded as dlib does), double
    centre of a drectangle."""
    if isinstance(rect, drectangle):
        return dcenter(rect)
    rect = rectangle._coerce(rect)
    x, y = rect.l + rect.r + 1, rect.t + rect.b + 1
    if x < 0:
        x -= 1
    if y < 0:
        y -= 1
    return (_div_trunc(x, 2), _div_trunc(y, 2))


def _div_trunc(a, b):
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def dcenter(rect):
    return ((rect.l + rect.r) / 2.0, (rect.t + rect.b) / 2.0)


def centered_rect(p, width, height):
    """dlib's ``centered_rect(point, w, h)`` (also accepts a rectangle, centred on its
    integer midpoint as dlib's overload does)."""
    if isinstance(p, rectangle_base):
        r = rectangle._coerce(p)
        p = (_div_trunc(r.l + r.r, 2), _div_trunc(r.t + r.b, 2))
    x, y = round_point(p) if isinstance(p[0], float) or isinstance(p[1], float) else p
    width, height = int(width), int(height)
    left = x - width // 2
    top = y - height // 2
    return rectangle(left, top, left + width - 1, top + height - 1)


def centered_drect(p, width, height):
    """dlib's ``centered_drect(dpoint, w, h)``; ``p`` may be a drectangle (its dcenter)."""
    if isinstance(p, rectangle_base):
        p = dcenter(p)
    width, height = float(width) - 1, float(height) - 1
    return drectangle(p[0] - width / 2, p[1] - height / 2, p[0] + width / 2, p[1] + height / 2)


def _point_args(who, p, y):
    """dlib's two spellings, ``(rect, point)`` and ``(rect, x, y)``, as ``(x, y)``."""
    if y is None:
        try:
            x, y = p
        except (TypeError, ValueError):
            raise TypeError(f"{who}(rect, p) takes a point (x, y), or {who}(rect, x, y); got {p!r}") from None
        return x, y
    return p, y


def move_rect(rect, p, y=None):
    """dlib's ``move_rect(rect, p)`` / ``move_rect(rect, x, y)``: ``rect`` moved so that its
    top left corner is at ``p`` (same size)."""
    x, y = _point_args("move_rect", p, y)
    return rectangle(x, y, x + rect.width() - 1, y + rect.height() - 1)


def translate_rect(rect, p, y=None):
    """dlib's ``translate_rect(rect, p)`` / ``translate_rect(rect, x, y)``: ``rect`` shifted by
    ``p``."""
    x, y = _point_args("translate_rect", p, y)
    return type(rect)(rect.l + x, rect.t + y, rect.r + x, rect.b + y)


def set_rect_area(rect, area):
    """dlib's ``set_rect_area`` for integer rectangles (keeps the centre and aspect ratio)."""
    if rect.area() == 0:
        s = lround(math.sqrt(area))
        return centered_rect(rect, s, s)
    scale = math.sqrt(area / float(rect.area()))
    return centered_rect(rect, lround(rect.width() * scale), lround(rect.height() * scale))


def get_rect(t):
    """``rectangle(0, 0, nc-1, nr-1)`` of a tensor or 2-D array."""
    nr, nc = (t.nr(), t.nc()) if hasattr(t, "nr") else t.shape[:2]
    return rectangle(0, 0, nc - 1, nr - 1)


def nearest_rect(rects, p):
    """Index of the first rectangle containing point ``p`` (rounded to integers, as dlib's
    ``point`` argument is), else of the nearest one."""
    p = round_point(p)
    best, best_dist = 0, math.inf
    for i, r in enumerate(rects):
        if r.contains(p):
            return i
        nx = min(max(p[0], r.l), r.r)
        ny = min(max(p[1], r.t), r.b)
        d = math.hypot(nx - p[0], ny - p[1])
        if d < best_dist:
            best, best_dist = i, d
    return best


def box_intersection_over_union(a, b) -> float:
    a, b = drectangle._coerce(a), drectangle._coerce(b)
    inner = a.intersect(b).area()
    if inner == 0:
        return 0.0
    return inner / (a.area() + b.area() - inner)


def box_percent_covered(a, b) -> float:
    a, b = drectangle._coerce(a), drectangle._coerce(b)
    inner = a.intersect(b).area()
    if inner == 0:
        return 0.0
    return max(inner / a.area(), inner / b.area())


class test_box_overlap:
    """dlib's ``test_box_overlap(iou_thresh=0.5, percent_covered_thresh=1.0)``: ``t(a, b)`` is
    true when the boxes intersect and ``intersection / area(a + b) > iou_thresh`` (the
    bounding box of both, not the union: dlib's code) or the intersection covers more than
    ``percent_covered_thresh`` of either box. Boxes are compared as integer rectangles
    (a drectangle is rounded, as C++'s implicit conversion does)."""

    __test__ = False  # not a pytest test class
    __slots__ = ("iou_thresh", "percent_covered_thresh")

    def __init__(self, iou_thresh=0.5, percent_covered_thresh=1.0):
        iou_thresh, percent_covered_thresh = float(iou_thresh), float(percent_covered_thresh)
        if not (0 <= iou_thresh <= 1 and 0 <= percent_covered_thresh <= 1):
            raise ValueError(f"test_box_overlap: thresholds must be in [0, 1], got iou_thresh={iou_thresh}, "
                             f"percent_covered_thresh={percent_covered_thresh}")
        self.iou_thresh = iou_thresh
        self.percent_covered_thresh = percent_covered_thresh

    def get_iou_thresh(self):
        return self.iou_thresh

    def get_percent_covered_thresh(self):
        return self.percent_covered_thresh

    def __call__(self, a, b) -> bool:
        a, b = rectangle._coerce(a), rectangle._coerce(b)
        inner = a.intersect(b).area()
        if inner == 0:
            return False
        outer = (a + b).area()
        return (inner / outer > self.iou_thresh or inner / a.area() > self.percent_covered_thresh
                or inner / b.area() > self.percent_covered_thresh)

    def __eq__(self, other):
        return (isinstance(other, test_box_overlap) and self.iou_thresh == other.iou_thresh
                and self.percent_covered_thresh == other.percent_covered_thresh)

    def __repr__(self):
        return f"test_box_overlap({self.iou_thresh:g}, {self.percent_covered_thresh:g})"


def find_tight_overlap_tester(rects) -> test_box_overlap:
    """The tightest ``test_box_overlap`` under which no two boxes of one image overlap
    (``rects``: per image a list of rectangles), thresholds scaled by 1.0000001 as dlib's."""
    max_pcov = max_iou = 0.0
    for boxes in rects:
        boxes = [rectangle._coerce(b) for b in boxes]
        for j in range(len(boxes)):
            for k in range(j + 1, len(boxes)):
                a, b = boxes[j], boxes[k]
                inner = a.intersect(b).area()
                max_iou = max(max_iou, inner / (a + b).area())
                max_pcov = max(max_pcov, inner / a.area(), inner / b.area())
    return test_box_overlap(min(1.0000001 * max_iou, 1.0), min(1.0000001 * max_pcov, 1.0))


def overlaps_any_box(tester, rects, rect=None) -> bool:
    """``overlaps_any_box(tester, rects, rect)`` or ``overlaps_any_box(rects, rect)`` (default tester)."""
    if rect is None:
        tester, rects, rect = test_box_overlap(), tester, rects
    return any(tester(r, rect) for r in rects)


class mmod_rect:
    """dlib's ``mmod_rect``: a ``rectangle`` with a detection confidence, an ``ignore``
    flag (truth boxes the loss must neither reward nor penalise) and a label."""

    __slots__ = ("rect", "detection_confidence", "ignore", "label")

    def __init__(self, rect=None, detection_confidence=0.0, ignore=False, label=""):
        self.rect = rectangle() if rect is None else rectangle._coerce(rect)
        self.detection_confidence = float(detection_confidence)
        self.ignore = bool(ignore)
        self.label = str(label)

    # an mmod_rect converts to its rectangle (dlib's operator rectangle)
    def left(self):
        return self.rect.l

    def top(self):
        return self.rect.t

    def right(self):
        return self.rect.r

    def bottom(self):
        return self.rect.b

    def width(self):
        return self.rect.width()

    def height(self):
        return self.rect.height()

    def area(self):
        return self.rect.area()

    def __eq__(self, other):
        return (isinstance(other, mmod_rect) and self.rect == other.rect
                and self.detection_confidence == other.detection_confidence
                and self.ignore == other.ignore and self.label == other.label)

    def __hash__(self):
        return hash((self.rect, self.detection_confidence, self.ignore, self.label))

    def __repr__(self):
        extra = ", ignore=True" if self.ignore else ""
        label = f", label={self.label!r}" if self.label else ""
        return f"mmod_rect({self.rect!r}, detection_confidence={self.detection_confidence!r}{extra}{label})"


def ignored_mmod_rect(rect) -> mmod_rect:
    return mmod_rect(rect, ignore=True)


def shrink_rect(rect, num, num_y=None):
    """dlib's ``shrink_rect``: move every side ``num`` inwards (``num`` for left/right and
    ``num_y`` for top/bottom when given). Keeps the type: a ``rectangle`` takes integers, a
    ``drectangle`` doubles."""
    dy = num if num_y is None else num_y
    if isinstance(rect, drectangle):
        return drectangle(rect.l + num, rect.t + dy, rect.r - num, rect.b - dy)
    rect = rectangle._coerce(rect)
    if int(num) != num or int(dy) != dy:
        raise TypeError(f"shrink_rect: an integer rectangle takes integer amounts, got {num!r}, {dy!r}")
    num, dy = int(num), int(dy)
    return rectangle(rect.l + num, rect.t + dy, rect.r - num, rect.b - dy)


def grow_rect(rect, num, num_y=None):
    """dlib's ``grow_rect``: ``shrink_rect(rect, -num[, -num_y])``."""
    return shrink_rect(rect, -num, None if num_y is None else -num_y)


def set_aspect_ratio(rect, ratio):
    """dlib's ``set_aspect_ratio``: the rectangle centred on ``rect`` (dlib's integer centre)
    with about the same area and ``width / height == ratio``; the side computed first (the
    shorter one) is ``trunc(v + 0.5)`` of its exact value, the other follows from it."""
    ratio = float(ratio)
    if not ratio > 0:
        raise ValueError(f"set_aspect_ratio: ratio must be > 0, got {ratio!r}")
    rect = rectangle._coerce(rect)
    area = float(rect.area())
    if ratio >= 1:
        h = int(math.sqrt(area / ratio) + 0.5)
        w = int(h * ratio + 0.5)
    else:
        w = int(math.sqrt(area * ratio) + 0.5)
        h = int(w / ratio + 0.5)
    return centered_rect(rect, w, h)


def as_rectangle(rect, op: str = "rectangle") -> rectangle:
    """``rect`` as a ``rectangle``: a rectangle, a drectangle (rounded), an mmod_rect (its box),
    anything with dlib's ``left() top() right() bottom()`` (``dlib.rectangle``) or a
    ``(left, top, right, bottom)`` sequence; else a TypeError naming ``op``."""
    if isinstance(rect, rectangle):
        return rect
    if isinstance(rect, drectangle):
        return rect.to_rectangle()
    if isinstance(rect, mmod_rect):
        return rect.rect
    if all(hasattr(rect, k) for k in ("left", "top", "right", "bottom")):  # e.g. dlib.rectangle
        return rectangle(rect.left(), rect.top(), rect.right(), rect.bottom())
    try:
        left, top, right, bottom = (int(v) for v in rect)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected a rectangle, drectangle, mmod_rect or (left, top, right, "
                        f"bottom), got {rect!r}") from None
    return rectangle(left, top, right, bottom)


OBJECT_PART_NOT_PRESENT = (float(0x7FFFFFFFFFFFF), float(0x7FFFFFFFFFFFF))


class point(tuple):
    """dlib's ``point``: an ``(x, y)`` pair that is a tuple (``x, y = p``, ``p == (3, 4)``,
    ``np.array(points)``) with dlib's Python attributes ``p.x`` and ``p.y``."""

    __slots__ = ()

    def __new__(cls, x=0, y=None):
        if y is None:             # point((x, y)), point(dlib_point)
            if hasattr(x, "x") and not isinstance(x, tuple):
                x, y = x.x, x.y
            else:
                x, y = x
        return super().__new__(cls, (_coordinate(x), _coordinate(y)))

    @property
    def x(self):
        return self[0]

    @property
    def y(self):
        return self[1]

    def __repr__(self):
        return f"({self[0]}, {self[1]})"


def _coordinate(v):
    """An integer stays an int (dlib's ``point`` is integral); anything else is a float."""
    if type(v) is int or type(v) is float:      # the common case, without the ABC checks
        return v
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        raise TypeError(f"point: a coordinate must be a number, got {v!r}")
    return int(v) if isinstance(v, numbers.Integral) else float(v)


class points(list):
    """dlib's ``points``: a list of ``point``. Calling it returns it, so a
    ``full_object_detection``'s ``parts`` reads as dlib's C++ member and as dlib's Python
    method ``parts()``."""

    def __call__(self):
        return self


class rectangles(list):
    """dlib's ``rectangles``: a list of ``rectangle`` (what dlib's detectors return)."""


class full_object_detections(list):
    """dlib's ``full_object_detections``: a list of ``full_object_detection``
    (``get_face_chips``' argument)."""


class _part_count(int):
    """``num_parts`` as dlib's Python property (an int) and as its C++ method (``num_parts()``)."""

    def __call__(self) -> int:
        return int(self)


class full_object_detection:
    """dlib's ``full_object_detection``: an object's box (``rect``, a ``rectangle``) and the
    positions of its parts (``parts``, a ``points`` list of ``point``; a missing part is
    ``OBJECT_PART_NOT_PRESENT``), e.g. the 5 or 68 face landmarks. As in dlib's Python API,
    ``det.part(i).x``, ``det.parts()`` and ``det.num_parts`` work (``num_parts()`` and
    ``det.parts[i]`` too)."""

    __slots__ = ("rect", "parts")

    def __init__(self, rect=None, parts=()):
        self.rect = rectangle() if rect is None else rectangle._coerce(rect)
        self.parts = points()
        for i, p in enumerate(parts):
            try:
                self.parts.append(point(p))
            except (TypeError, ValueError):
                raise ValueError(f"full_object_detection: part {i} must be an (x, y) point, got {p!r}") from None

    @classmethod
    def from_xy(cls, rect, xs, ys):
        """A detection of ``rect`` (a ``rectangle``) with parts ``zip(xs, ys)``, lists of Python
        ints (what a predictor computes: no per-point checks, for many detections fast)."""
        det = cls.__new__(cls)
        det.rect = rect
        det.parts = points(map(tuple.__new__, itertools.repeat(point), zip(xs, ys)))
        return det

    def get_rect(self):
        return self.rect

    @property
    def num_parts(self):
        return _part_count(len(self.parts))

    def part(self, i):
        return self.parts[i]

    def __eq__(self, other):
        return isinstance(other, full_object_detection) and self.rect == other.rect and self.parts == other.parts

    def __repr__(self):
        return f"full_object_detection({self.rect!r}, {len(self.parts)} parts)"
