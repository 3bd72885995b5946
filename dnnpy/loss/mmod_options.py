"""``mmod_options`` (dlib loss.h): the detector windows and settings of ``loss_mmod_``.

dlib's constructors are all here:

* ``mmod_options()`` and then set fields (keyword arguments may set them at construction);
* ``mmod_options(boxes, target_size, min_target_size, min_detector_window_overlap_iou=0.75)``:
  clusters the training boxes (per label) by aspect ratio into detector windows whose long
  side is ``target_size`` (short side at least ``min_target_size``), for image pyramids;
* ``mmod_options(use_image_pyramid.no, boxes, min_detector_window_overlap_iou=0.75)``:
  clusters by absolute width and height, for nets without a pyramid.

Both clustering constructors then set ``overlaps_nms`` to the tightest overlap test under which
no two training boxes of one image overlap, relaxed 10% toward 1. The clustering draws boxes
at random exactly as dlib does (a fresh ``dlib::rand``: MT19937 seeded 5489, 10000 outputs
discarded, ``(a << 32 | b) % n``), so the windows come out identical to dlib's.
"""

from __future__ import annotations

import enum

import numpy as np

from ..rand import dlib_rand
from ._serialize import read_count, read_test_box_overlap, write_test_box_overlap
from ..geometry import (find_tight_overlap_tester, mmod_rect, move_rect,
                        rectangle, set_rect_area, test_box_overlap)

__all__ = ["use_image_pyramid", "detector_window_details", "mmod_options", "impossible_labeling_error"]


class impossible_labeling_error(ValueError):
    """dlib's ``impossible_labeling_error``: a truth box the loss cannot use (e.g. its centre
    is outside the image)."""


class use_image_pyramid(enum.IntEnum):
    no = 0
    yes = 1


class detector_window_details:
    """One sliding window of the detector: ``width x height`` pixels and a label."""

    __slots__ = ("width", "height", "label", "_dlib_version")

    def __init__(self, width=0, height=0, label=""):
        for name, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"detector_window_details: {name} must be an integer >= 0, got {v!r}")
        self.width, self.height, self.label = int(width), int(height), str(label)
        self._dlib_version = None  # the record version it was read from (written back)

    def __eq__(self, other):
        return (isinstance(other, detector_window_details)
                and (self.width, self.height, self.label) == (other.width, other.height, other.label))

    def serialize(self, w):
        """dlib writes version 2: int 2, width, height (unsigned long), label; a window read
        from a version 1 record (no label) writes version 1 back while it has no label."""
        version = w.version_of(self, 2, lambda v: self._label_problem(v))
        w.int(version)
        w.uint(self.width)
        w.uint(self.height)
        if version == 2:
            w.string(self.label)

    def _label_problem(self, version):
        return f"version {version} has no label and the window has {self.label!r}" if self.label else None

    @classmethod
    def read(cls, r, what="a detector window"):
        """dlib's reader: version 1 (width, height) or 2 (width, height, label)."""
        start = r.pos
        version = r.int(f"the version of {what}")
        if version not in (1, 2):
            raise r.error(f"mmod_options: expected {what} of version 1 or 2, found version {version}", start)
        width = r.uint(f"the width of {what}")
        height = r.uint(f"the height of {what}")
        label = r.string(f"the label of {what}") if version == 2 else ""
        out = cls(width, height, label)
        out._dlib_version = version
        return out

    def __repr__(self):
        label = f", {self.label!r}" if self.label else ""
        return f"detector_window_details({self.width}, {self.height}{label})"


def detector_windows_str(windows) -> str:
    """dlib's ``operator<<`` for the windows: grouped by label (sorted), e.g.
    ``car:70x36,70x60;person:30x70``."""
    by_label = {}
    for w in windows:
        by_label.setdefault(w.label, []).append(w)
    return ";".join(f"{label}:" + ",".join(f"{w.width}x{w.height}" for w in ws)
                    for label, ws in sorted(by_label.items(), key=lambda kv: kv[0].encode()))


def _find_rectangles_overlapping_all_others(rects, overlaps):
    """dlib's greedy cover: repeatedly pick (of 500 random boxes) the one overlapping the
    most remaining boxes, keep it as an exemplar and drop every box it overlaps."""
    rects = list(rects)
    if any(r.area() == 0 for r in rects):
        raise ValueError("mmod_options: a training box is empty (dlib would loop forever on it)")
    rnd = dlib_rand()             # a fresh dlib::rand, as dlib's
    exemplars = []
    while rects:
        arr = np.array([tuple(r) for r in rects], dtype=np.int64)  # l, t, r, b
        areas = (arr[:, 2] - arr[:, 0] + 1) * (arr[:, 3] - arr[:, 1] + 1)
        best, best_cnt = rectangle(), 0
        for pick in rnd.get_random_64bit_numbers(500) % np.uint64(len(rects)):
            ref = rects[int(pick)]
            cnt = int(np.count_nonzero(_overlaps_many(arr, areas, ref, overlaps)))
            if cnt >= best_cnt:
                best, best_cnt = ref, cnt
        # drop every box the exemplar hits, in dlib's order (swap with the back, pop)
        i = 0
        while i < len(rects):
            if overlaps(rects[i], best):
                rects[i], rects[-1] = rects[-1], rects[i]
                rects.pop()
            else:
                i += 1
        exemplars.append(best)
    return exemplars


def _overlaps_many(arr, areas, ref, overlaps):
    """``overlaps(box, ref)`` for every row of ``arr`` (test_box_overlap, vectorised)."""
    il = np.maximum(arr[:, 0], ref.l)
    it = np.maximum(arr[:, 1], ref.t)
    ir = np.minimum(arr[:, 2], ref.r)
    ib = np.minimum(arr[:, 3], ref.b)
    inner = np.where((ir >= il) & (ib >= it), (ir - il + 1) * (ib - it + 1), 0).astype(np.float64)
    ol = np.minimum(arr[:, 0], ref.l)
    ot = np.minimum(arr[:, 1], ref.t)
    orr = np.maximum(arr[:, 2], ref.r)
    ob = np.maximum(arr[:, 3], ref.b)
    outer = ((orr - ol + 1) * (ob - ot + 1)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        hit = ((inner / outer > overlaps.iou_thresh) | (inner / areas > overlaps.percent_covered_thresh)
               | (inner / ref.area() > overlaps.percent_covered_thresh))
    return (inner != 0) & hit


def _labels(boxes):
    return sorted({b.label for image in boxes for b in image}, key=str.encode)


def _check_boxes(boxes):
    out = []
    for image in boxes:
        row = []
        for b in image:
            if not isinstance(b, mmod_rect):
                raise TypeError(f"mmod_options: boxes must be lists (one per image) of mmod_rect, got "
                                f"{type(b).__name__}")
            row.append(b)
        out.append(row)
    return out


class mmod_options:
    """Settings of ``loss_mmod_`` (fields and defaults as dlib's; see the module docstring
    for the constructors)."""

    _FIELDS = ("detector_windows", "loss_per_false_alarm", "loss_per_missed_target",
               "truth_match_iou_threshold", "overlaps_nms", "overlaps_ignore",
               "use_bounding_box_regression", "bbr_lambda", "be_quiet", "assume_image_pyramid")

    def __init__(self, *args, **fields):
        self.detector_windows = []
        self.loss_per_false_alarm = 1.0
        self.loss_per_missed_target = 1.0
        self.truth_match_iou_threshold = 0.5
        self.overlaps_nms = test_box_overlap(0.4)
        self.overlaps_ignore = test_box_overlap()
        self.use_bounding_box_regression = False
        self.bbr_lambda = 100.0
        self.be_quiet = False  # not serialized, as in dlib
        self.assume_image_pyramid = use_image_pyramid.yes
        if args:
            if isinstance(args[0], use_image_pyramid):
                self._from_sizes(*args)
            else:
                self._from_aspect_ratios(*args)
        for name, value in fields.items():
            if name not in self._FIELDS:
                raise TypeError(f"mmod_options: unknown field {name!r}")
            setattr(self, name, value)

    def _from_aspect_ratios(self, boxes, target_size, min_target_size, min_detector_window_overlap_iou=0.75):
        boxes = _check_boxes(boxes)
        if not (0 < min_target_size <= target_size):
            raise ValueError(f"mmod_options: need 0 < min_target_size <= target_size, got "
                             f"min_target_size={min_target_size}, target_size={target_size}")
        if not (0.5 < min_detector_window_overlap_iou < 1):
            raise ValueError(f"mmod_options: min_detector_window_overlap_iou must be in (0.5, 1), got "
                             f"{min_detector_window_overlap_iou}")
        overlaps = test_box_overlap(min_detector_window_overlap_iou)
        for label in _labels(boxes):
            # same area and position for every box, so only the aspect ratio matters
            normalized = [move_rect(set_rect_area(b.rect, 400 * 400), (0, 0))
                          for image in boxes for b in image if not b.ignore and b.label == label]
            for r in _find_rectangles_overlapping_all_others(normalized, overlaps):
                ratio = r.width() / float(r.height())
                if ratio < 1:
                    height, width = float(target_size), ratio * target_size
                    if width < min_target_size:
                        height, width = min_target_size / ratio, float(min_target_size)
                else:
                    width, height = float(target_size), target_size / ratio
                    if height < min_target_size:
                        width, height = min_target_size * ratio, float(min_target_size)
                self.detector_windows.append(
                    detector_window_details(_round_half_away(width), _round_half_away(height), label))
        self._finish(boxes)

    def _from_sizes(self, assume_image_pyramid, boxes, min_detector_window_overlap_iou=0.75):
        if assume_image_pyramid != use_image_pyramid.no:
            raise ValueError("mmod_options(use_image_pyramid, boxes, ...): this constructor is for "
                             "use_image_pyramid.no")
        if not (0.5 < min_detector_window_overlap_iou < 1):
            raise ValueError(f"mmod_options: min_detector_window_overlap_iou must be in (0.5, 1), got "
                             f"{min_detector_window_overlap_iou}")
        boxes = _check_boxes(boxes)
        self.assume_image_pyramid = use_image_pyramid.no
        overlaps = test_box_overlap(min_detector_window_overlap_iou)
        for label in _labels(boxes):
            sized = [rectangle.from_size(b.rect.width(), b.rect.height())
                     for image in boxes for b in image if not b.ignore and b.label == label]
            for r in _find_rectangles_overlapping_all_others(sized, overlaps):
                self.detector_windows.append(detector_window_details(r.width(), r.height(), label))
        self._finish(boxes)

    def _finish(self, boxes):
        if not self.detector_windows:
            raise ValueError("mmod_options: you can't call mmod_options's constructor with a set of boxes "
                             "that is empty (or only contains ignored boxes).")
        tight = find_tight_overlap_tester([[b.rect for b in image if not b.ignore] for image in boxes])
        # relaxed a little: the detector positions boxes slightly differently than the labels
        self.overlaps_nms = test_box_overlap(_advance_toward_1(tight.iou_thresh),
                                             _advance_toward_1(tight.percent_covered_thresh))

    # -- dlib's serialize/deserialize (a free function pair in dlib: no version string) --
    def serialize(self, w):
        """dlib writes version 4: int 4, the windows (vector: count + each), the three
        doubles, overlaps_nms and overlaps_ignore (two doubles each), assume_image_pyramid as
        a raw byte, use_bounding_box_regression (bool), bbr_lambda (double). Options read
        from an older record write that version back (v1: one unlabeled window; v3 has no
        bounding box regression fields, v1 and v2 no assume_image_pyramid either), refused
        when it cannot hold the current values."""
        version = w.version_of(self, 4, self._old_version_problem)
        w.int(version)
        if version == 1:
            w.uint(self.detector_windows[0].width)
            w.uint(self.detector_windows[0].height)
        else:
            w.uint(len(self.detector_windows))
            for d in self.detector_windows:
                d.serialize(w)
        w.float64(self.loss_per_false_alarm)
        w.float64(self.loss_per_missed_target)
        w.float64(self.truth_match_iou_threshold)
        write_test_box_overlap(w, self.overlaps_nms)
        write_test_box_overlap(w, self.overlaps_ignore)
        if version >= 3:
            w.byte(int(self.assume_image_pyramid))
        if version >= 4:
            w.bool(self.use_bounding_box_regression)
            w.float64(self.bbr_lambda)

    def _old_version_problem(self, version):
        d = mmod_options()
        if version == 1 and (len(self.detector_windows) != 1 or self.detector_windows[0].label):
            return (f"version 1 holds one unlabeled detector window and the options have "
                    f"({detector_windows_str(self.detector_windows)})")
        if version < 3 and self.assume_image_pyramid != d.assume_image_pyramid:
            return f"version {version} has no assume_image_pyramid (it means yes) and the options say no"
        if version < 4 and (self.use_bounding_box_regression, self.bbr_lambda) != (
                d.use_bounding_box_regression, d.bbr_lambda):
            return (f"version {version} has no bounding box regression fields (they mean off, "
                    f"lambda 100) and the options have {self.use_bounding_box_regression}, "
                    f"{self.bbr_lambda:g}")
        return None

    def deserialize(self, r):
        """Reads versions 1 to 4 into ``self`` (all or nothing): v1 has one unlabeled window
        (width, height); v3 adds assume_image_pyramid (older: yes); v4 adds the bounding box
        regression fields (older: the defaults). ``be_quiet`` is not in the file."""
        who = "mmod_options"
        start = r.pos
        version = r.int("the mmod_options version")
        if not 1 <= version <= 4:
            raise r.error(f"{who}: expected version 1 to 4, found version {version}", start)
        if version == 1:
            width = r.uint("mmod_options v1's detector width")
            height = r.uint("mmod_options v1's detector height")
            windows = [detector_window_details(width, height)]
        else:
            n = read_count(r, "mmod_options's detector_windows", 3)
            windows = [detector_window_details.read(r, f"detector window {i}") for i in range(n)]
        fa = r.float64("mmod_options's loss_per_false_alarm")
        miss = r.float64("mmod_options's loss_per_missed_target")
        match = r.float64("mmod_options's truth_match_iou_threshold")
        nms = read_test_box_overlap(r, "overlaps_nms", who)
        ignore = read_test_box_overlap(r, "overlaps_ignore", who)
        pyramid = use_image_pyramid.yes
        defaults = mmod_options()
        bbr, bbr_lambda = defaults.use_bounding_box_regression, defaults.bbr_lambda
        if version >= 3:
            at = r.pos
            b = r.byte("mmod_options's assume_image_pyramid")
            if b not in (0, 1):
                raise r.error(f"{who}: assume_image_pyramid must be 0 (no) or 1 (yes), found {b}", at)
            pyramid = use_image_pyramid(b)
        if version >= 4:
            bbr = r.bool("mmod_options's use_bounding_box_regression")
            bbr_lambda = r.float64("mmod_options's bbr_lambda")
        self.detector_windows = windows
        self.loss_per_false_alarm, self.loss_per_missed_target = fa, miss
        self.truth_match_iou_threshold = match
        self.overlaps_nms, self.overlaps_ignore = nms, ignore
        self.assume_image_pyramid = pyramid
        self.use_bounding_box_regression, self.bbr_lambda = bbr, bbr_lambda
        self._dlib_version = version  # written back by serialize

    def __eq__(self, other):
        return isinstance(other, mmod_options) and all(
            getattr(self, f) == getattr(other, f) for f in self._FIELDS if f != "be_quiet")

    def __repr__(self):
        return (f"mmod_options(detector_windows:({detector_windows_str(self.detector_windows)}), "
                f"loss_per_false_alarm={self.loss_per_false_alarm:g}, "
                f"loss_per_missed_target={self.loss_per_missed_target:g}, "
                f"truth_match_iou_threshold={self.truth_match_iou_threshold:g}, "
                f"overlaps_nms={self.overlaps_nms!r}, overlaps_ignore={self.overlaps_ignore!r}, "
                f"use_bounding_box_regression={self.use_bounding_box_regression}, "
                f"bbr_lambda={self.bbr_lambda:g}, assume_image_pyramid={self.assume_image_pyramid.name})")


def _advance_toward_1(v):
    return v + (1 - v) * 0.1 if v < 1 else v


def _round_half_away(v):
    """``std::round``."""
    return int(np.floor(v + 0.5)) if v >= 0 else -int(np.floor(-v + 0.5))

