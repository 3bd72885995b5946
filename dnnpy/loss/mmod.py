"""The max-margin object detection loss (dlib loss.h ``loss_mmod_``).

The net outputs one score map per detector window (``k == len(options.detector_windows)``,
or 5x that with bounding-box regression: the scores, then dx, dy, dw, dh per window). A
detection is an output position whose score beats a threshold; its box is the window
centred on the position mapped back to the input tensor (``output_tensor_to_input_tensor``)
and then to the image (the input layer's ``tensor_space_to_image_space``: for a pyramid
input, through the level it falls on).

Options are runtime data, as in dlib (``net_type net(options)``)::

    net = loss_mmod[con[1, 9, 9, 1, 1, input_rgb_image_pyramid[pyramid_down(6)]]]()
    net.loss_details().options = mmod_options(boxes, 40, 40)   # or loss_mmod_(options)

Labels are, per image, a list of ``mmod_rect`` (truth boxes; ``ignore=True`` boxes are
neither rewarded nor penalised). ``net(images)`` / ``net.process(images, adjust_threshold)``
give per image the detections after non-max suppression, best first.

The loss value is dlib's: per image, the number of mistakes weighted by
``loss_per_false_alarm`` / ``loss_per_missed_target`` plus the score margin, averaged over
the batch. The gradient written is that of the value divided by ``nr*nc*len(windows)``
(dlib scales them differently on purpose: the value is for display).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from ..geometry import (box_intersection_over_union, box_percent_covered, center,
                        centered_rect, dcenter, drectangle, get_rect, mmod_rect, move_rect,
                        rectangle, round_point, set_rect_area)
from ..templates import loss_template
from ..visitors.maps import input_tensor_to_output_tensor, output_tensor_to_input_tensor
from .base import loss_layer
from .mmod_options import _overlaps_many
from .mmod_options import (detector_window_details, detector_windows_str, impossible_labeling_error,
                           mmod_options, use_image_pyramid)

__all__ = ["loss_mmod_", "loss_mmod", "mmod_options", "detector_window_details", "use_image_pyramid",
           "impossible_labeling_error"]

_NAME = "loss_mmod_"
_log = logging.getLogger("dnnpy.loss_mmod")
_slow_map_logged = False


class _detection:
    """dlib's ``intermediate_detection``: ``rect`` is the sliding-window box (rounded to
    integers), ``rect_bbr`` the box after bounding-box regression (used for NMS)."""

    __slots__ = ("rect", "rect_bbr", "confidence", "offset", "channel", "bbr_offsets")

    def __init__(self, rect, confidence=0.0, offset=0, channel=0):
        self.rect = rectangle._coerce(rect)
        self.rect_bbr = drectangle._coerce(self.rect)
        self.confidence, self.offset, self.channel = confidence, offset, channel
        self.bbr_offsets = None


def _lround(v):
    """std::lround on an array (half away from zero)."""
    return np.where(v >= 0, np.floor(v + 0.5), -np.floor(-v + 0.5)).astype(np.int64)


class _det_list:
    """The detections of ``_tensor_to_dets`` in score order, built as they are read."""

    def __init__(self, order, conf, offsets, ks, rs, cs, rect, bbr, nw, nr, nc):
        self._order, self._conf, self._offsets, self._ks = order, conf, offsets, ks
        self._rs, self._cs, self._rect, self._bbr = rs, cs, rect, bbr
        self._nw, self._nr, self._nc = nw, nr, nc
        self._cache = {}
        self._overlap_cache = {}
        # the integer boxes NMS compares (rect_bbr rounded), in score order
        boxes = rect if bbr is None else np.stack([_lround(bbr[:, m]) for m in range(4)], axis=1)
        self._nms_boxes = np.asfortranarray(boxes[order])  # columns contiguous for _overlaps_many
        self._nms_areas = ((self._nms_boxes[:, 2] - self._nms_boxes[:, 0] + 1)
                           * (self._nms_boxes[:, 3] - self._nms_boxes[:, 1] + 1))

    def overlapping(self, rect, tester):
        """Mask (in score order) of the detections whose NMS box ``tester`` says overlaps
        ``rect``. Remembered: the loss's two NMS passes keep mostly the same detections."""
        rect = rectangle._coerce(rect)
        key = (tuple(rect), tester.iou_thresh, tester.percent_covered_thresh)
        mask = self._overlap_cache.get(key)
        if mask is None:
            mask = _overlaps_many(self._nms_boxes, self._nms_areas, rect, tester)
            self._overlap_cache[key] = mask
        return mask

    def __len__(self):
        return len(self._order)

    def __getitem__(self, i):
        det = self._cache.get(i)
        if det is None:
            j = int(self._order[i])
            det = _detection(rectangle(*self._rect[j].tolist()), float(self._conf[j]),
                             int(self._offsets[j]), int(self._ks[j]))
            if self._bbr is not None:
                det.rect_bbr = drectangle(*self._bbr[j].tolist())
                base = self._nw + 4 * det.channel
                r, c = int(self._rs[j]), int(self._cs[j])
                det.bbr_offsets = [((base + m) * self._nr + r) * self._nc + c for m in range(4)]
            self._cache[i] = det
        return det

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _warn(msg):
    warnings.warn(msg, stacklevel=3)


def _greedy_nms(dets, max_dets, overlaps_nms, keep, rect_of=lambda det: det.rect):
    """dlib's greedy non-max suppression over ``dets`` (best first): each detection not
    suppressed by an earlier kept one is offered to ``keep(det)``; a kept one (True) counts
    toward ``max_dets`` and suppresses the later detections that overlap its ``rect_of(det)``
    (the box itself; to_label's boxes after bounding-box regression)."""
    kept = 0
    suppressed = np.zeros(len(dets), dtype=bool)
    for d in range(len(dets)):
        if kept >= max_dets:
            break
        if suppressed[d]:
            continue
        det = dets[d]
        if keep(det):
            kept += 1
            suppressed |= dets.overlapping(rect_of(det), overlaps_nms)


class loss_mmod_(loss_layer):
    """dlib's ``loss_mmod_(options)``; ``options`` defaults to ``mmod_options()``."""

    constructor_settings = {mmod_options: "options"}   # net_type(options), as dlib's net_type net(options)

    def template_args(self):
        return {"options": self.options}

    def __init__(self, options=None):
        self.options = mmod_options() if options is None else options

    @property
    def options(self):
        return self._options

    @options.setter
    def options(self, value):
        if not isinstance(value, mmod_options):
            raise TypeError(f"{_NAME}: options must be an mmod_options, got {type(value).__name__}")
        self._options = value

    def get_options(self):
        return self._options

    # -- checks ------------------------------------------------------------------------------
    def _check(self, x, sub):
        out = sub.get_output()
        nw = len(self._options.detector_windows)
        if nw == 0:
            raise ValueError(f"{_NAME}: the options have no detector windows (set net.loss_details().options)")
        want = nw * 5 if self._options.use_bounding_box_regression else nw
        if out.k() != want:
            raise ValueError(f"{_NAME}: the net outputs {out.k()} channels but {nw} detector windows "
                             f"{'with bounding box regression ' if want != nw else ''}need {want}")
        if x.num_samples() != out.num_samples():
            raise ValueError(f"{_NAME}: the input tensor has {x.num_samples()} samples but the output "
                             f"has {out.num_samples()}")
        if (sub.sample_expansion_factor() or 1) != 1:
            raise ValueError(f"{_NAME}: the sample expansion factor must be 1, got {sub.sample_expansion_factor()}")
        return out

    # -- detections --------------------------------------------------------------------------
    def _tensor_to_dets(self, x, out_data, sub, adjust_threshold):
        """The detections of one sample's output ``(k, nr, nc)`` scoring above the threshold,
        best first (ties keep scan order; dlib's std::sort leaves them unspecified).
        Vectorised over positions; the result is a lazy sequence of ``_detection``."""
        opts = self._options
        nw = len(opts.detector_windows)
        _, nr, nc = out_data.shape
        ks, rs, cs = np.nonzero(out_data[:nw] > adjust_threshold)
        conf = out_data[ks, rs, cs].astype(np.float64)
        px, py = self._map_to_input(sub, cs.astype(np.float64), rs.astype(np.float64))
        ww = np.array([w.width for w in opts.detector_windows], dtype=np.float64)[ks] - 1
        hh = np.array([w.height for w in opts.detector_windows], dtype=np.float64)[ks] - 1
        # centered_drect(p, w, h), then the input layer's tensor -> image map
        l, t, r, b = self._to_image(x, sub, px - ww / 2, py - hh / 2, px + ww / 2, py + hh / 2)
        rect = np.stack([_lround(l), _lround(t), _lround(r), _lround(b)], axis=1)
        bbr = None
        if opts.use_bounding_box_regression:
            base = nw + 4 * ks
            dx, dy, dw, dh = (out_data[base + j, rs, cs].astype(np.float64) for j in range(4))
            w, h = r - l, b - t  # drectangle width()-1 (the box is never empty here)
            ml, mt, mr, mb = l + dx * w, t + dy * h, r + dx * w, b + dy * h
            cx, cy = (ml + mr) / 2.0, (mt + mb) / 2.0
            nw_, nh_ = w * np.exp(dw), h * np.exp(dh)  # centered_drect(rect, w*dw+1, h*dh+1)
            bbr = np.stack([cx - nw_ / 2, cy - nh_ / 2, cx + nw_ / 2, cy + nh_ / 2], axis=1)
        order = np.argsort(-conf, kind="stable")
        offsets = (ks * nr + rs) * nc + cs
        return _det_list(order, conf, offsets, ks, rs, cs, rect, bbr, nw, nr, nc)

    @staticmethod
    def _map_to_input(sub, xs, ys):
        """output_tensor_to_input_tensor for many points (one at a time if some layer's map
        does not take arrays)."""
        try:
            px, py = output_tensor_to_input_tensor(sub, (xs, ys))
            px, py = np.broadcast_to(px, xs.shape), np.broadcast_to(py, ys.shape)
            return np.asarray(px, np.float64), np.asarray(py, np.float64)
        except (TypeError, ValueError) as e:
            global _slow_map_logged
            if not _slow_map_logged:  # same values, one point at a time: slow for many candidates
                _slow_map_logged = True
                _log.warning("%s: a layer's coordinate map does not take arrays (%s); mapping the "
                             "candidate detections one at a time", _NAME, e)
            pts = [output_tensor_to_input_tensor(sub, (float(a), float(c))) for a, c in zip(xs, ys)]
            return (np.array([q[0] for q in pts], np.float64).reshape(xs.shape),
                    np.array([q[1] for q in pts], np.float64).reshape(ys.shape))

    @staticmethod
    def _to_image(x, sub, l, t, r, b):
        inp = sub.input_layer()
        many = getattr(inp, "tensor_space_to_image_space_many", None)
        if many is not None:
            return many(x, l, t, r, b)
        out = [inp.tensor_space_to_image_space(x, drectangle(*v)) for v in zip(l, t, r, b)]
        return tuple(np.array([float(getattr(o, a)) for o in out], np.float64).reshape(l.shape)
                     for a in ("l", "t", "r", "b"))

    def to_label(self, x, sub, adjust_threshold=0.0):
        """Per sample, the detections scoring above ``adjust_threshold`` after non-max
        suppression (``options.overlaps_nms``), as ``mmod_rect``s, best first."""
        out = self._check(x, sub)
        data = np.asarray(out.host_read())
        labels = []
        windows = self._options.detector_windows
        for i in range(out.num_samples()):
            final = []

            def keep(det):
                final.append(mmod_rect(det.rect_bbr, det.confidence, label=windows[det.channel].label))
                return True

            dets = self._tensor_to_dets(x, data[i], sub, adjust_threshold)
            _greedy_nms(dets, len(dets), self._options.overlaps_nms, keep, rect_of=lambda det: det.rect_bbr)
            labels.append(final)
        return labels

    # -- truth boxes -------------------------------------------------------------------------
    def _find_best_detection_window(self, rect, label, assume_image_pyramid):
        opts = self._options
        if assume_image_pyramid == use_image_pyramid.yes:
            rect = move_rect(set_rect_area(rect, 400 * 400), (0, 0))
        else:
            rect = rectangle.from_size(rect.width(), rect.height())
        best_i, best = 0, -np.inf
        for i, w in enumerate(opts.detector_windows):
            if w.label != label:
                continue
            if opts.assume_image_pyramid == use_image_pyramid.yes:
                window = move_rect(set_rect_area(centered_rect((0, 0), w.width, w.height), 400 * 400), (0, 0))
            else:
                window = rectangle.from_size(w.width, w.height)
            iou = box_intersection_over_union(rect, window)
            if iou > best:
                best, best_i = iou, i
        return best_i

    def _image_rect_to_feat_coord(self, x, rect, label, sub):
        """dlib's ``image_rect_to_feat_coord``: ``(output point, window index)`` of a truth
        box, or None when the net cannot represent it (a warning says why)."""
        opts = self._options
        inp = sub.input_layer()
        if not inp.image_contained_point(x, center(rect)):
            raise impossible_labeling_error(
                f"Encountered a truth rectangle located at {rect} that is outside the image.\n"
                f"The center of each truth rectangle must be within the image.")
        k = self._find_best_detection_window(rect, label, opts.assume_image_pyramid)
        window = opts.detector_windows[k]
        scale = 1.0
        if opts.assume_image_pyramid == use_image_pyramid.yes:
            scale = max(window.width / float(rect.width()), window.height / float(rect.height()))
        mapped = rectangle._coerce(inp.image_space_to_tensor_space(x, min(1.0, scale), rect))
        p = center(mapped)
        det_window = rectangle._coerce(
            inp.tensor_space_to_image_space(x, centered_rect(p, window.width, window.height)))
        if box_intersection_over_union(rect, det_window) <= opts.truth_match_iou_threshold:
            detector_area = window.width * window.height
            why = ("the rectangle is smaller than the best matching detection window"
                   if mapped.area() / detector_area <= opts.truth_match_iou_threshold else
                   "the final layer's features have too large a stride, or the aspect ratio is too "
                   "different from the best matching detection window")
            _warn(f"Warning, ignoring object.  We encountered a truth rectangle with a width and height of "
                  f"{rect.width()} and {rect.height()}.  The image pyramid and sliding windows can't "
                  f"output a rectangle of this shape ({why}, {window.width}x{window.height}).")
            return None
        p = round_point(input_tensor_to_output_tensor(sub, p))
        if not get_rect(sub.get_output()).contains(p):
            _warn(f"Warning, ignoring object.  We encountered a truth rectangle located at {rect} that is "
                  f"too close to the edge of the image to be captured by the CNN features.")
            return None
        return p, k

    @staticmethod
    def _find_best_match(boxes, hit, rect, label):
        match, best = 0.0, 0
        for allow_duplicate in (False, True):
            if match != 0:
                break
            for i, b in enumerate(boxes):
                if b.ignore or b.label != label or (not allow_duplicate and hit[i]):
                    continue
                m = box_intersection_over_union(rect, b.rect)
                if m > match:
                    match, best = m, i
        return match, best

    @staticmethod
    def _find_best_match_excluding(boxes, rect, excluded):
        match, best = 0.0, 0
        for i, b in enumerate(boxes):
            if b.ignore or i == excluded:
                continue
            m = box_intersection_over_union(rect, b.rect)
            if m > match:
                match, best = m, i
        return match, best

    def _overlaps_ignore_box(self, boxes, rect):
        return any(b.ignore and self._options.overlaps_ignore(b.rect, rect) for b in boxes)

    # -- the loss ----------------------------------------------------------------------------
    def compute_loss_value_and_gradient(self, x, labels, sub):
        opts = self._options
        out = self._check(x, sub)
        labels = self._check_labels(_NAME, x, sub, labels)
        n, _, nr, nc = out.shape
        nw = len(opts.detector_windows)
        grad = sub.get_gradient_input()
        if grad.shape != out.shape:
            raise ValueError(f"{_NAME}: gradient input{grad.shape} does not match the output{out.shape}")
        g_all = grad.host_write_only()
        g_all[...] = 0
        data = np.asarray(out.host_read())
        scale = 1.0 / (nr * nc * n * nw)
        loss = 0.0
        thresh_adjust = 0.0
        for i in range(n):
            truth = list(labels[i])
            for b in truth:
                if not isinstance(b, mmod_rect):
                    raise TypeError(f"{_NAME}: labels must be lists of mmod_rect, got {type(b).__name__}")
            out_i = data[i].reshape(-1)
            g = g_all[i].reshape(-1)
            dets = self._tensor_to_dets(x, data[i], sub, -opts.loss_per_false_alarm + thresh_adjust)
            max_dets = 50 + len(truth) * 5
            max_initial = max_dets * 100
            if len(dets) > max_initial:  # later samples skip the hopeless low scores
                thresh_adjust = max(thresh_adjust, dets[max_initial].confidence + opts.loss_per_false_alarm)

            # the loss is one running sum, updated in dlib's order (so rounds as dlib's does)
            loss, truth_idxs = self._score_truths(loss, x, sub, truth, (nr, nc), out_i, g, scale)
            score_hits, hit = self._truth_hit_scores(dets, truth, max_dets)
            loss = self._ignore_unhittable_truths(loss, truth, hit, truth_idxs, out_i, g)
            loss = self._pick_detections(loss, dets, truth, score_hits, max_dets, out_i, g, scale)
        return loss / n

    # the four steps of one sample's loss (dlib's loop body, in its order); each takes the
    # running loss and returns it updated
    def _score_truths(self, loss, x, sub, truth, plane, out_i, g, scale):
        """Every usable truth box starts as a miss, minus its score (gradient -scale at its
        feature coordinate). Returns the loss and each box's flat index (-1: not usable)."""
        opts = self._options
        nr, nc = plane
        gtype = g.dtype.type
        loss += len(truth) * opts.loss_per_missed_target
        truth_idxs = []
        idx_to_rect = {}
        for b in truth:
            if b.ignore:
                loss -= opts.loss_per_missed_target
                truth_idxs.append(-1)
                continue
            found = self._image_rect_to_feat_coord(x, b.rect, b.label, sub)
            if found is None:
                loss -= opts.loss_per_missed_target
                truth_idxs.append(-1)
                continue
            (px, py), k = found
            idx = (k * nr + py) * nc + px
            if idx in idx_to_rect:
                if not opts.be_quiet:
                    _warn(f"Warning, ignoring object.  We encountered a truth rectangle located at "
                          f"{b.rect}, and we are ignoring it because it maps to the exact same feature "
                          f"coordinates as another truth rectangle located at {idx_to_rect[idx]}.")
                loss -= opts.loss_per_missed_target
                truth_idxs.append(-1)
                continue
            loss -= float(out_i[idx])
            g[idx] = gtype(-scale)
            truth_idxs.append(idx)
            idx_to_rect[idx] = b.rect
        return loss, truth_idxs

    def _truth_hit_scores(self, dets, truth, max_dets):
        """The first NMS pass: the loss-augmented score of the detections hitting each truth
        box (a repeated hit also counts a false alarm), and which boxes were hit."""
        opts = self._options
        score_hits = [0.0] * len(truth)
        hit = [False] * len(truth)

        def keep(det):
            label = opts.detector_windows[det.channel].label
            match, j = self._find_best_match(truth, hit, det.rect, label)
            if match > opts.truth_match_iou_threshold:
                if not hit[j]:
                    hit[j] = True
                    score_hits[j] += det.confidence
                else:
                    score_hits[j] += det.confidence + opts.loss_per_false_alarm
            return True  # every detection NMS lets through counts

        _greedy_nms(dets, max_dets, opts.overlaps_nms, keep)
        return score_hits, hit

    def _ignore_unhittable_truths(self, loss, truth, hit, truth_idxs, out_i, g):
        """Truth boxes NMS would always suppress (another truth box overlaps them) are
        ignored: their miss and score are taken back."""
        opts = self._options
        for j, b in enumerate(truth):
            if hit[j] or b.ignore:
                continue
            _, best = self._find_best_match_excluding(truth, b.rect, j)
            if best == j or truth[best].ignore:
                continue
            other = truth[best].rect
            if opts.overlaps_nms(other, b.rect) and truth_idxs[j] != -1:
                idx = truth_idxs[j]
                loss -= opts.loss_per_missed_target - float(out_i[idx])
                g[idx] = 0
                if not opts.be_quiet:
                    _warn(f"Warning, ignoring object.  We encountered a truth rectangle located at {b.rect} "
                          f"that is suppressed by non-max-suppression because it is overlapped by another "
                          f"truth rectangle located at {other} (IoU:{box_intersection_over_union(other, b.rect):g}, "
                          f"Percent covered:{box_percent_covered(other, b.rect):g}).")
        return loss

    def _pick_detections(self, loss, dets, truth, score_hits, max_dets, out_i, g, scale):
        """The second NMS pass: the detections that jointly maximise loss + score (a hit on
        a box worth hitting, or a false alarm away from ignore boxes), with their loss, their
        scores and +scale gradients."""
        opts = self._options
        gtype = g.dtype.type
        hit = [False] * len(truth)
        final = []

        def keep(det):
            nonlocal loss
            label = opts.detector_windows[det.channel].label
            match, j = self._find_best_match(truth, hit, det.rect, label)
            if match > opts.truth_match_iou_threshold:
                if score_hits[j] <= opts.loss_per_missed_target:
                    return False
                final.append(det)
                if not hit[j]:
                    hit[j] = True
                    loss -= opts.loss_per_missed_target
                    if opts.use_bounding_box_regression:
                        loss += self._bbr_loss(det, truth[j].rect, out_i, g, scale)
                else:
                    loss += opts.loss_per_false_alarm
                return True
            if self._overlaps_ignore_box(truth, det.rect):
                return False
            final.append(det)  # hit nothing
            loss += opts.loss_per_false_alarm
            return True

        _greedy_nms(dets, max_dets, opts.overlaps_nms, keep)
        for det in final:
            loss += float(out_i[det.offset])
            g[det.offset] += gtype(scale)
        return loss

    def _bbr_loss(self, det, truth_rect, out_i, g, scale):
        """Smoothed-L1 loss of the regression outputs toward the truth box; ADDS its gradient."""
        lam = self._options.bbr_lambda
        px, py = dcenter(det.rect)
        w, h = det.rect.width() - 1, det.rect.height() - 1
        if w <= 0 or h <= 0:
            raise ValueError(f"{_NAME}: bounding box regression needs detector windows wider and taller than 1 pixel")
        tb = drectangle._coerce(truth_rect)
        tx, ty = dcenter(tb)
        targets = ((tx - px) / w, (ty - py) / h, np.log((tb.width() - 1) / w), np.log((tb.height() - 1) / h))
        loss = 0.0
        gtype = g.dtype.type
        for off, target in zip(det.bbr_offsets, targets):
            d = float(out_i[off]) - target
            loss += 0.5 * d * d if abs(d) < 1 else abs(d) - 0.5
            g[off] += gtype(scale * lam * min(max(d, -1.0), 1.0))
        return lam * loss

    # -- printing ----------------------------------------------------------------------------
    def __repr__(self):
        o = self._options
        s = (f"loss_mmod\t (detector_windows:({detector_windows_str(o.detector_windows)})"
             f", loss per FA:{o.loss_per_false_alarm:g}, loss per miss:{o.loss_per_missed_target:g}"
             f", truth match IOU thresh:{o.truth_match_iou_threshold:g}"
             f", use_bounding_box_regression:{int(bool(o.use_bounding_box_regression))}")
        if o.use_bounding_box_regression:
            s += f", bbr_lambda:{o.bbr_lambda:g}"
        s += (f", overlaps_nms:({o.overlaps_nms.iou_thresh:g},{o.overlaps_nms.percent_covered_thresh:g})"
              f", overlaps_ignore:({o.overlaps_ignore.iou_thresh:g},{o.overlaps_ignore.percent_covered_thresh:g}))")
        return s

    def serialize(self, w):
        w.string("loss_mmod_")
        self._options.serialize(w)

    def deserialize(self, r):
        """The options are restored from the file (mmod_options versions 1 to 4)."""
        r.expect_string("loss_mmod_")
        opts = mmod_options()
        opts.deserialize(r)
        opts.be_quiet = self._options.be_quiet  # not serialized: dlib keeps the current value
        self._options = opts

    def to_xml(self):
        return "<loss_mmod/>\n"


loss_mmod = loss_template("loss_mmod", loss_mmod_)
