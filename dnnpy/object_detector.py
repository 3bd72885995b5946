"""dlib's HOG object detectors: ``object_detector<scan_fhog_pyramid<pyramid_down<6>>>``
(``dlib/image_processing/scan_fhog_pyramid.h``, ``object_detector.h``), the detector behind
dlib's ``get_frontal_face_detector()`` and the ``.svm`` files ``train_simple_object_detector``
writes.

    detector = dnnpy.get_frontal_face_detector()
    faces = detector(img, 1)                         # rectangles, the image upsampled once
    rects, scores, which = detector.run(img, 1, -0.5)

How a detector scans an image, as dlib does (so the boxes are dlib's):

* the image pyramid: the image, then ``pyramid_down<6>`` of it again and again while a level
  is at least ``min_pyramid_layer_width x min_pyramid_layer_height`` (64 x 64);
* every level's fHOG features (``extract_fhog_features``, 8-pixel cells, zero padding for a
  filter of the window's size);
* each of the detector's filters (one per detector: a window of cells x 31 features) scores
  every window position of every level; dlib runs a filter as the sum of its separable
  parts (rank-one filters from its SVD, dropping singular values under 0.1% of the largest)
  when that is cheaper, which changes the scores: the same parts are summed here;
* windows scoring at least the detector's threshold (plus ``adjust_threshold``) become boxes
  in the image (the window's cells mapped back through the pyramid);
* non-maximum suppression: the boxes of all filters, best score first, each kept unless it
  overlaps a kept one (the detector's ``test_box_overlap``).

With the ``jit`` extra the window scores are computed as dlib computes them, each filter
by its separable parts, a row filter then a column filter (``dnnpy/kernels/hog.py``; a
detector dlib runs whole takes the matrix products below). With numpy they are matrix
products (per group of window rows, all filters' cells times the level's features, on
oneDNN's matmul when it is present), then one strided sum over the group's cells. In float32
as dlib's, a score is dlib's to float32 rounding. Each level's features and
scores are computed as soon as the level is made, on the caller and dnnpy's worker threads
(``dnnpy.parallel.parallel_for``).
"""

from __future__ import annotations

import os
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import jit
from .atomic import atomic_write
from .geometry import rectangle, rectangles, test_box_overlap
from .image.checks import uint8_grey_or_rgb
from .image.fhog import extract_fhog_features
from .image.interpolation import pyramid_up
from .image.pyramid import pyramid_down
from .parallel import parallel_for
from .serialization.files import read_source, refuse_other_files
from .serialization.primitives import Reader, Writer
from .tensor_tools.cpu import onednn
from .tensor_tools.cpu._common import scratch

__all__ = ["fhog_object_detector", "simple_object_detector", "get_frontal_face_detector"]

_PLANES = 31                        # fHOG features per cell
# float32 values of a scan's products buffer (16 MB a thread): a level whose window rows
# need more is scanned in bands of window rows
_SCAN_VALUES = 1 << 22


class fhog_object_detector:
    """dlib's ``fhog_object_detector`` (its Python name for ``object_detector<
    scan_fhog_pyramid<pyramid_down<6>>>``): ``fhog_object_detector(path)`` reads a dlib
    ``.svm`` file (a path, a binary file object or the bytes). ``det(img,
    upsample_num_times=0)`` gives the boxes (``rectangles``); ``det.run(img,
    upsample_num_times=0, adjust_threshold=0.0)`` the boxes, their scores (above the
    detector's threshold) and which of the detector's filters found each;
    ``det.save(path)`` writes dlib's bytes back.

    ``img``: H x W (grey) or H x W x 3 (RGB) uint8, as dlib's Python API takes.
    """

    def __init__(self, path=None):
        self.cell_size, self.padding = 8, 1
        self.window_width = self.window_height = 64
        self.max_pyramid_levels = 1000
        self.min_pyramid_layer_width = self.min_pyramid_layer_height = 64
        self.nuclear_norm_regularization_strength = 0.0
        self.overlap = test_box_overlap()
        self.weights: list[np.ndarray] = []
        self._version = 2
        self._filters = self._separable = None
        if path is not None:
            r = _open(path)
            self.deserialize(r)
            _read_upsampling(r)         # dlib reads the detector only; .svm files may add this
            if not r.at_end():
                raise r.error(f"expected the end of the file after the detector, but "
                              f"{r.remaining()} more bytes follow")

    # -- dlib's accessors -----------------------------------------------------------------
    @property
    def num_detectors(self) -> int:
        return len(self.weights)

    @property
    def detection_window_width(self) -> int:
        return self.window_width

    @property
    def detection_window_height(self) -> int:
        return self.window_height

    def fhog_window_size(self):
        """``(rows, cols)``: the cells a filter covers (dlib's ``get_fhog_window_height`` and
        ``_width``): the detection window's cells, grown by ``padding`` on every side."""
        half_w, half_h = self.window_width // 2, self.window_height // 2
        left, top = -half_w, -half_h
        right, bottom = left + self.window_width - 1, top + self.window_height - 1
        x0, y0 = _image_to_fhog(left, self.cell_size), _image_to_fhog(top, self.cell_size)
        x1, y1 = _image_to_fhog(right, self.cell_size), _image_to_fhog(bottom, self.cell_size)
        return y1 - y0 + 1 + 2 * self.padding, x1 - x0 + 1 + 2 * self.padding

    def num_dimensions(self) -> int:
        rows, cols = self.fhog_window_size()
        return rows * cols * _PLANES

    def __repr__(self):
        return (f"fhog_object_detector({self.num_detectors} filters, window "
                f"{self.window_width}x{self.window_height})")

    # -- running ----------------------------------------------------------------------------
    def __call__(self, img, upsample_num_times=0) -> rectangles:
        """The boxes of the objects in ``img`` (dlib's ``detector(img, upsample_num_times)``)."""
        return self.run(img, upsample_num_times)[0]

    def run(self, img, upsample_num_times=0, adjust_threshold=0.0):
        """``(rectangles, scores, filter_indices)``: every box whose score is at least the
        detector's threshold plus ``adjust_threshold`` (a negative one finds more), best
        first after non-maximum suppression; scores are above the threshold."""
        return run_multiple([self], img, upsample_num_times, adjust_threshold, _single=True)

    @staticmethod
    def run_multiple(detectors, img, upsample_num_times=0, adjust_threshold=0.0):
        """dlib's ``fhog_object_detector.run_multiple``: several detectors over one image (one
        feature pyramid); each box's filter index counts the filters of all detectors in order.
        Boxes of different filters do not suppress each other."""
        return run_multiple(detectors, img, upsample_num_times, adjust_threshold)

    def filter_bank(self):
        """The filters dlib runs, one per detector: (rows, cols, 31) float64 arrays, each the
        sum of its planes' kept separable parts, or the weights themselves when dlib runs them
        whole (see the module's docstring)."""
        if self._filters is None:
            size = self.fhog_window_size()
            self._filters = [_effective_filter(w, size, parts)
                             for w, parts in zip(self.weights, self._parts())]
        return self._filters

    def _parts(self):
        """Each filter's separable parts (``_separable_parts``; None for a filter dlib runs
        whole)."""
        if self._separable is None:
            self._separable = [_separable_parts(w, self.fhog_window_size()) for w in self.weights]
        return self._separable

    def thresholds(self):
        dims = self.num_dimensions()
        return [float(w[dims]) for w in self.weights]

    # -- files ------------------------------------------------------------------------------
    def save(self, path):
        """Write dlib's bytes for this detector to ``path`` (atomically)."""
        atomic_write(path, self.to_bytes())

    def to_bytes(self) -> bytes:
        w = Writer()
        self.serialize(w)
        return w.bytes()

    def serialize(self, w):
        """dlib's ``serialize(object_detector)``, version 2 (what dlib writes)."""
        w.int(2)
        w.int(1)                                  # scan_fhog_pyramid, version 1
        w.int(0), w.int(0)                        # its (empty) feature pyramid: max size, size
        w.int(self.cell_size)
        for v in (self.padding, self.window_width, self.window_height, self.max_pyramid_levels,
                  self.min_pyramid_layer_width, self.min_pyramid_layer_height):
            w.int(v)
        w.float64(self.nuclear_norm_regularization_strength)
        w.int(self.num_dimensions())
        w.float64(self.overlap.iou_thresh)
        w.float64(self.overlap.percent_covered_thresh)
        w.int(len(self.weights))
        for weights in self.weights:
            w.int(-len(weights)), w.int(-1)
            for v in weights.tolist():
                w.float64(v)

    def deserialize(self, r):
        """Read dlib's record at ``r``'s position; on any error ``self`` is unchanged."""
        other = fhog_object_detector()
        other._read(r)
        self.__dict__.update(other.__dict__)

    def _read(self, r):
        version = r.int("the object_detector version")
        if version not in (1, 2):
            raise r.error(f"expected a dlib object_detector (version 1 or 2), found version {version}")
        scanner = r.int("the scan_fhog_pyramid version")
        if scanner != 1:
            raise r.error(f"expected a scan_fhog_pyramid (version 1), found version {scanner}: not an "
                          f"fHOG detector")
        if r.uint("the feature pyramid's max size") != 0 or r.uint("the feature pyramid's size") != 0:
            raise r.error("expected an empty feature pyramid (dlib saves the scanner's configuration only)")
        self.cell_size = r.int("the cell size")
        self.padding = r.uint("the padding")
        self.window_width = r.uint("the window width")
        self.window_height = r.uint("the window height")
        self.max_pyramid_levels = r.uint("the most pyramid levels")
        self.min_pyramid_layer_width = r.uint("the smallest pyramid level's width")
        self.min_pyramid_layer_height = r.uint("the smallest pyramid level's height")
        self.nuclear_norm_regularization_strength = r.float64("the nuclear norm regularization strength")
        if not (2 <= self.cell_size <= 1024 and 0 < self.window_width <= 1 << 16
                and 0 < self.window_height <= 1 << 16 and self.padding <= 1024):
            raise r.error(f"implausible scanner settings: cell size {self.cell_size}, window "
                          f"{self.window_width}x{self.window_height}, padding {self.padding}")
        dims = r.int("the number of dimensions")
        if dims != self.num_dimensions():
            raise r.error(f"the detector has {dims} dimensions but its settings give "
                          f"{self.num_dimensions()} (31 fHOG features x "
                          f"{' x '.join(map(str, self.fhog_window_size()))} cells)")
        if version == 1:
            self.weights = [self._read_weights(r, 0)]
            self.overlap = _read_overlap(r)
        else:
            self.overlap = _read_overlap(r)
            count = r.uint("the number of detectors")
            if count > r.remaining():
                raise r.error(f"the file claims {count} detectors but only {r.remaining()} bytes remain")
            self.weights = [self._read_weights(r, i) for i in range(count)]
        self._version, self._filters, self._separable = version, None, None

    def _read_weights(self, r, i):
        what = f"detector {i}'s weights"
        start = r.pos
        nr, nc = -r.int(f"the rows of {what}"), -r.int(f"the columns of {what}")
        if nc != 1 or nr < self.num_dimensions() + 1:
            raise r.error(f"{what}: expected a column of at least {self.num_dimensions() + 1} "
                          f"doubles (the filters and the threshold), found {nr} x {nc}", start)
        if 2 * nr > r.remaining():
            raise r.error(f"{what}: {nr} doubles claimed but only {r.remaining()} bytes remain", start)
        return np.array([r.float64(what) for _ in range(nr)], np.float64)


class simple_object_detector(fhog_object_detector):
    """dlib's Python ``simple_object_detector``: an fHOG detector with the number of times
    its training upsampled the images (``upsampling_amount``), as
    ``train_simple_object_detector`` saves it in ``.svm`` files. ``det(img)`` upsamples that
    many times, ``det(img, upsample_num_times)`` as asked. ``simple_object_detector(path)``
    reads such a file (or a plain detector file: upsampling 0);
    ``simple_object_detector([d1, d2, ...])`` packs detectors into one, whose boxes all
    compete in one non-maximum suppression (the first detector's settings and upsampling)."""

    def __init__(self, path_or_detectors=None):
        if isinstance(path_or_detectors, (list, tuple)):
            super().__init__()
            self._merge(list(path_or_detectors))
            return
        super().__init__()
        self.upsampling_amount = 0
        if path_or_detectors is not None:
            r = _open(path_or_detectors)
            self.deserialize(r)
            up = _read_upsampling(r)
            self.upsampling_amount = 0 if up is None else up
            if not r.at_end():
                raise r.error(f"expected the end of the file after the detector, but "
                              f"{r.remaining()} more bytes follow")

    def _merge(self, detectors):
        if not detectors or any(not isinstance(d, fhog_object_detector) for d in detectors):
            raise TypeError("simple_object_detector: expected a path or a non-empty list of detectors")
        first = detectors[0]
        settings = ("cell_size", "padding", "window_width", "window_height", "max_pyramid_levels",
                    "min_pyramid_layer_width", "min_pyramid_layer_height")
        for i, d in enumerate(detectors[1:], 1):
            differ = [k for k in settings if getattr(d, k) != getattr(first, k)]
            if differ:
                raise ValueError(f"simple_object_detector: detector {i} differs from detector 0 in "
                                 f"{', '.join(differ)}: only detectors of one configuration merge")
        for k in settings + ("nuclear_norm_regularization_strength", "overlap"):
            setattr(self, k, getattr(first, k))
        self.weights = [w.copy() for d in detectors for w in d.weights]
        self.upsampling_amount = getattr(first, "upsampling_amount", 0)

    def __call__(self, img, upsample_num_times=None) -> rectangles:
        up = self.upsampling_amount if upsample_num_times is None else upsample_num_times
        return self.run(img, up)[0]

    def serialize(self, w):
        """The detector, then ``train_simple_object_detector``'s version 1 and upsampling."""
        super().serialize(w)
        w.int(1)
        w.int(self.upsampling_amount)

    def __repr__(self):
        return super().__repr__().replace("fhog_object_detector(", "simple_object_detector(", 1)[:-1] + \
            f", upsampling {self.upsampling_amount})"


def _open(path):
    data, name = read_source(path)
    refuse_other_files(data, name, "an fHOG detector")
    return Reader(data, name)


def _read_upsampling(r):
    """The upsampling ``train_simple_object_detector`` appends after the detector (version 1,
    then the count), or None when the data ends."""
    if r.at_end():
        return None
    start = r.pos
    version = r.int("the simple_object_detector version")
    if version != 1:
        raise r.error(f"after the detector: expected the end of the file or a simple_object_detector's "
                      f"version 1, found {version}", start)
    return r.uint("the upsampling amount")


def _read_overlap(r):
    start = r.pos
    iou = r.float64("the overlap tester's IoU threshold")
    covered = r.float64("the overlap tester's covered threshold")
    try:
        return test_box_overlap(iou, covered)
    except ValueError as e:
        raise r.error(f"the detector's non-max suppression: {e}", start) from None


def _image_to_fhog(v, cell):
    """One coordinate of dlib's ``image_to_fhog(point, cell_size, 1, 1)``: C++'s integer
    division truncates toward zero."""
    v -= 1
    q = abs(v) // cell
    return (q if v >= 0 else -q) - 1


def _fhog_to_image(v, cell, pad):
    """One coordinate (array) of dlib's ``fhog_to_image(point, cell_size, pad, pad)``."""
    v = (v + 1 - (pad - 1) // 2) * cell + 1
    return v + np.where(v >= 0, cell // 2, -(cell // 2))


def _separable_parts(weights, size):
    """The parts dlib runs one detector's filter as (see the module's docstring): per plane,
    ``svd(f) = u w v'``; singular values under ``max(1e-4, 0.001 max(w))`` are dropped and
    the rest kept as float32 column and row filters ``u_j sqrt(w_j)``, ``v_j sqrt(w_j)``: a
    list of ``(cols (rows, r), rows (cols, r))`` per plane; None when there are more than
    ``31 * min(rows, cols) / 3`` of them (dlib then runs the float32 filter whole)."""
    rows, cols = size
    planes = weights[:rows * cols * _PLANES].reshape(_PLANES, rows, cols)
    parts, count = [], 0
    for f in planes:
        u, w, vt = np.linalg.svd(f)
        keep = w >= max(1e-4, w.max() * 0.001)
        parts.append(((u[:, keep] * np.sqrt(w[keep])).astype(np.float32),
                      (vt[keep].T * np.sqrt(w[keep])).astype(np.float32)))
        count += int(keep.sum())
    return None if count > _PLANES * min(rows, cols) / 3.0 else parts


def _effective_filter(weights, size, parts):
    """The filter dlib runs for one detector's weights, whole: (rows, cols, 31) float64, the
    sum of its planes' separable ``parts`` (``_separable_parts``), or the float32 weights
    when dlib runs them whole (``parts`` None)."""
    rows, cols = size
    if parts is None:
        planes = weights[:rows * cols * _PLANES].reshape(_PLANES, rows, cols)
        return planes.astype(np.float32).astype(np.float64).transpose(1, 2, 0)
    return np.stack([c.astype(np.float64) @ r.astype(np.float64).T for c, r in parts], axis=2)


# -- the scan ---------------------------------------------------------------------------------

def _parallel(n, f):
    parallel_for(0, n, f)


def run_multiple(detectors, img, upsample_num_times=0, adjust_threshold=0.0, _single=False):
    """See ``fhog_object_detector.run`` and ``run_multiple``."""
    detectors = list(detectors)
    img = uint8_grey_or_rgb(img, "fhog_object_detector")
    up = int(upsample_num_times)
    if up < 0:
        raise ValueError(f"fhog_object_detector: upsample_num_times must be >= 0, got {upsample_num_times}")
    if not detectors or any(not isinstance(d, fhog_object_detector) for d in detectors):
        raise TypeError("fhog_object_detector.run_multiple: expected a list of fhog_object_detector")
    for _ in range(up):      # (its bands of rows on dnnpy's threads: nothing else runs yet)
        img = pyramid_up(img, parallel=_parallel)
    first = detectors[0]
    cell = first.cell_size
    if any(d.cell_size != cell for d in detectors):
        raise ValueError("fhog_object_detector.run_multiple: the detectors have different cell sizes "
                         f"{[d.cell_size for d in detectors]}")
    sizes = [d.fhog_window_size() for d in detectors]
    pad_rows, pad_cols = max(s[0] for s in sizes), max(s[1] for s in sizes)
    if _single:
        pad_rows, pad_cols = sizes[0]
    # each level's windows are scored by every detector as soon as its features are made
    # (by the thread that made them); then each filter's windows, best first. A box's index
    # is its filter (one detector: dlib's object_detector) or its detector (several: dlib's
    # evaluate_detectors)
    scans = [_Scan(d.filter_bank(), d.thresholds(), adjust_threshold,
                   (rows - 2 * d.padding, cols - 2 * d.padding), cell, pad_rows, pad_cols,
                   d._parts())
             for d, (rows, cols) in zip(detectors, sizes)]
    per_level = _feature_pyramid(img, cell, pad_rows, pad_cols,
                                 min(d.min_pyramid_layer_width for d in detectors),
                                 min(d.min_pyramid_layer_height for d in detectors),
                                 max(d.max_pyramid_levels for d in detectors),
                                 lambda level, f: [scan(level, f) for scan in scans])
    found = []
    for i, scan in enumerate(scans):
        for k, (s, b) in enumerate(scan.best_first([found_at[i] for found_at in per_level])):
            found.append((s, b, np.full(len(s), k if _single else i, np.int64)))
    scores = np.concatenate([f[0] for f in found])
    boxes = np.concatenate([f[1] for f in found])
    which = np.concatenate([f[2] for f in found])
    # dlib sorts all boxes by score when there are several filters (one detector) or several
    # detectors; a stable sort keeps ties in scan order
    if (first.num_detectors if _single else len(detectors)) > 1:
        order = np.argsort(-scores, kind="stable")
        scores, boxes, which = scores[order], boxes[order], which[order]
    testers = ([first.overlap] * first.num_detectors) if _single else [d.overlap for d in detectors]
    kept = _suppress(boxes, which, testers, same_index_only=not _single)
    rects = rectangles(rectangle(*b) for b in boxes[kept].tolist())
    if up:
        pyr2 = pyramid_down(2)
        rects = rectangles(rectangle._coerce(pyr2.rect_down(r, up)) for r in rects)
    return rects, scores[kept].tolist(), which[kept].tolist()


def _feature_pyramid(img, cell, pad_rows, pad_cols, min_width, min_height, max_levels, then):
    """dlib's ``create_fhog_pyramid``: the fHOG features of the image and its
    ``pyramid_down<6>`` levels, each passed to ``then(level, features)`` as soon as it is
    made; returns the results of ``then`` in level order. The level count follows the image's
    rectangle down the pyramid while it is at least ``min_width x min_height``."""
    pyr = pyramid_down(6)
    levels, rect = 0, rectangle(0, 0, img.shape[1] - 1, img.shape[0] - 1)
    while True:
        rect = rectangle._coerce(pyr.rect_down(rect))
        levels += 1
        if not (rect.width() >= min_width and rect.height() >= min_height and levels < max_levels):
            break

    # task 0 makes the levels, each from the one above; task 1 + i computes level i's
    # features and scans them as soon as the level is made (the caller and dnnpy's worker
    # threads take the tasks in order; numpy releases the GIL in its loops)
    images, made, out = [img] + [None] * (levels - 1), [threading.Event() for _ in range(levels)], [None] * levels
    made[0].set()

    def task(t):
        if t == 0:
            try:
                for i in range(1, levels):
                    images[i] = pyr(images[i - 1])
                    made[i].set()
            finally:
                for event in made:       # on an error, the waiting tasks end (it is raised)
                    event.set()
            return
        made[t - 1].wait()
        if images[t - 1] is not None:
            out[t - 1] = then(t - 1, extract_fhog_features(images[t - 1], cell, pad_rows, pad_cols))

    parallel_for(0, levels + 1, task)
    return out


class _Scan:
    """A detector's filters (all of one size) scanning feature levels: ``scan(level, f)``
    gives, per filter, ``(scores - thresh, boxes)`` of the level's windows scoring at least
    the filter's threshold plus ``adjust`` (boxes (n, 4): left, top, right, bottom, in the
    image), in scan order (row, column); ``best_first`` joins the levels' lists."""

    def __init__(self, filters, thresholds, adjust, box, cell, pad_rows, pad_cols, parts=None):
        self.rows, self.cols = filters[0].shape[:2]
        self.count = len(filters)
        # the compiled scan's filters (dnnpy/kernels/hog.py), when dlib runs every filter by
        # its separable parts: each part's plane, column and row filters, filter after filter
        self.terms = None
        if parts is not None and all(p is not None for p in parts):
            planes = [(plane, col, row) for one in parts for plane, (col, row) in enumerate(one)]
            sizes = [sum(col.shape[1] for col, _ in one) for one in parts]
            self.terms = (np.cumsum([0] + sizes).astype(np.int64),
                          np.repeat([p for p, _, _ in planes], [c.shape[1] for _, c, _ in planes]),
                          np.concatenate([c.T for _, c, _ in planes]),       # (parts, rows)
                          np.concatenate([r.T for _, _, r in planes]))       # (parts, cols)
        # every filter's weights for every window cell stacked, a window row at a time:
        # bank[i] (cols*filters, 31) @ the features (31, R*C) gives the products of the
        # cells of row i with every position; a window's score adds its cells' products
        self.bank = np.ascontiguousarray(np.stack(filters, axis=2).reshape(
            self.rows, self.cols * self.count, _PLANES).astype(np.float32))
        self.thresholds = np.array(thresholds, np.float64)
        self.cutoffs = self.thresholds + adjust
        self.box, self.cell, self.pad_rows, self.pad_cols = box, cell, pad_rows, pad_cols

    def __call__(self, level, f):
        rows, cols, count = self.rows, self.cols, self.count
        nr, nc = f.shape[:2]
        none = (np.zeros(0), np.zeros((0, 4), np.int64))
        if nr < rows or nc < cols:
            return [none] * count
        vr, vc = nr - rows + 1, nc - cols + 1
        score = np.empty((count, vr, vc), np.float32)
        if self.terms is None or not jit.call("hog", "separable_scores",
                                              np.ascontiguousarray(np.moveaxis(f, 2, 0)),
                                              *self.terms, score):
            # bands of window rows, so that the buffers below stay bounded on huge images
            band = max(1, _SCAN_VALUES // (cols * count * nc) - rows + 1)
            for y0 in range(0, vr, band):
                y1 = min(vr, y0 + band)
                self._rows_of_windows(f[y0:y1 + rows - 1], score[:, y0:y1])
        out = []
        for k in range(count):
            y0, x0 = np.nonzero(score[k] >= self.cutoffs[k])
            if len(y0) == 0:
                out.append(none)
                continue
            out.append((score[k, y0, x0].astype(np.float64) - self.thresholds[k],
                        self._boxes(y0, x0, level)))
        return out

    def _rows_of_windows(self, f, score):
        """The scores (``score``, (count, windows down, windows across)) of the windows of
        the feature rows ``f``, a group of window rows at a time (all of them where the
        buffer holds their products): the group's cells' products with every position (a
        reused buffer), then the window at (y, x) adds products[i, j, :, y + i, x + j] over
        the group's cells (i, j): one strided view holds them all (moving one cell right or
        down is a fixed step in memory); float32 sums."""
        rows, cols, count = self.rows, self.cols, self.count
        nr, nc = f.shape[:2]
        vr, vc = score.shape[1:]
        features = f.reshape(-1, _PLANES)
        group = min(rows, max(1, _SCAN_VALUES // (cols * count * nr * nc)))
        products = scratch("hog.products", (group * cols * count, nr * nc), np.float32)
        group_sum = scratch("hog.group_sum", score.shape, np.float32)
        e = products.itemsize
        for i0 in range(0, rows, group):
            g = min(group, rows - i0)
            bank, into = self.bank[i0:i0 + g].reshape(-1, _PLANES), products[:g * cols * count]
            if not onednn.matmul_arrays(bank, features, into, trans_rhs=True):
                np.matmul(bank, features.T, out=into)
            windows = as_strided(into[:, i0 * nc:], (g, cols, count, vr, vc),
                                 ((cols * count * nr * nc + nc) * e, (count * nr * nc + 1) * e,
                                  nr * nc * e, nc * e, e), writeable=False)
            np.add.reduce(windows, axis=(0, 1), out=score if i0 == 0 else group_sum)
            if i0:
                score += group_sum

    def _boxes(self, y0, x0, level):
        """The image boxes of the windows at (y0, x0) of a level: the window's centre cell,
        then dlib's box: centered_rect(centre, box) in cells, fhog_to_image, and up the
        pyramid (rounded as dlib's drectangle -> rectangle)."""
        box, cell = self.box, self.cell
        r, c = y0 + self.rows // 2, x0 + self.cols // 2
        top, left = r - box[0] // 2, c - box[1] // 2
        bottom, right = top + box[0] - 1, left + box[1] - 1
        l, t = _fhog_to_image(left, cell, self.pad_cols), _fhog_to_image(top, cell, self.pad_rows)
        rr, bb = _fhog_to_image(right, cell, self.pad_cols), _fhog_to_image(bottom, cell, self.pad_rows)
        if level:
            pyr = pyramid_down(6)
            l, t = pyr.point_up((l, t), level)
            rr, bb = pyr.point_up((rr, bb), level)
        return np.stack([_lround(l), _lround(t), _lround(rr), _lround(bb)], axis=1)

    def best_first(self, per_level):
        """Per filter, the windows of all levels (``per_level``: each level's result of
        ``scan``), best first; ties in dlib's scan order: level, row, column."""
        out = []
        for k in range(self.count):
            s = np.concatenate([level[k][0] for level in per_level])
            b = np.concatenate([level[k][1] for level in per_level])
            order = np.argsort(-s, kind="stable")
            out.append((s[order], b[order]))
        return out


def _lround(v):
    """C's ``lround``: halves away from zero."""
    v = np.asarray(v, np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def _suppress(boxes, which, testers, same_index_only):
    """Greedy non-maximum suppression over ``boxes`` in order: the indices kept. A box is
    dropped when it overlaps a kept one (of its own index only, with ``same_index_only``)
    by the test of its index, ``testers[which]``."""
    kept, rects = [], [rectangle(*b) for b in boxes.tolist()]
    for i, r in enumerate(rects):
        tester = testers[which[i]]
        if not any((not same_index_only or which[k] == which[i]) and tester(rects[k], r) for k in kept):
            kept.append(i)
    return np.array(kept, np.int64)


def get_frontal_face_detector() -> fhog_object_detector:
    """dlib's frontal face detector: five HOG filters (front, left, right, and front rotated
    left and right), trained by Davis King on faces from the LFW data set; its weights ship
    with dnnpy (``dnnpy/data/frontal_face_detector.svm``, dlib's Boost licence beside them,
    ``FRONTAL_FACE_DETECTOR_LICENSE.txt``)."""
    return fhog_object_detector(FRONTAL_FACE_DETECTOR_PATH)


FRONTAL_FACE_DETECTOR_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                          "frontal_face_detector.svm")
