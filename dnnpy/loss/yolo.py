"""The YOLO loss (dlib's ``loss_yolo_<TAGS...>``, ``yolo_options``, ``yolo_rect``).

A YOLO net ends in one or more detection heads, each ``sig[con[(num_classes+5)*num_anchors,
1,1,1,1, ...]]`` under a tag; the loss reads every tagged head with ``layer(sub, tagN)`` and
ASSIGNS its gradient to that head's ``get_gradient_input()`` (the top of the net, the loss's
own subnet, gets nothing unless it is itself a head). Per anchor ``a`` the head's channels
``a*(5+C) + [x, y, w, h, objectness, class_0..class_{C-1}]`` are sigmoid outputs in (0, 1).

Options are runtime data, as in dlib (``net_type net(options)``), not part of the net type::

    net_type = loss_yolo[tag1, tag2, ... SUBNET]
    net = net_type()
    net.loss_details().options = opts          # or loss_yolo_(tag1, tag2, options=opts)

dlib's implementation quirks kept here (loss.h, ``yolo_helper_impl::tensor_to_loss``):

* the gradient written is the one dlib writes: for objectness and classes it is the
  focal/binary-cross-entropy derivative with respect to the *logit* (``p - target`` for
  ``gamma = 0``), although it is applied to the sigmoid's output; for the box it is the
  derivative of a smooth-L1 on ``(2x - 0.5 - tx)`` etc. The reported loss is
  ``0.5 * ||gradient||^2`` per sample and head, averaged over samples; the gradient is NOT
  divided by the number of samples.
* the negative-objectness / negative-class focal gradient is
  ``p^g * (g*(1-p)*log(1-p) + p)``: the focal term has the opposite sign of the true
  derivative of ``-p^g log(1-p)`` (it agrees for ``gamma = 0``).
* the positive-class gradient is multiplied by the truth box's ``detection_confidence``
  (0 unless the label sets it).
* the image rectangle a truth centre must lie in is ``rectangle(nr, nc)``, i.e. x in
  ``[0, nr-1]`` and y in ``[0, nc-1]`` (dlib passes rows as the width).
* later writes overwrite earlier ones (a positive anchor overwrites its objectness; two
  truths in one cell: the later wins).
* ATSS (``iou_anchor_threshold == 0``): mean + stddev of the running *improvements* of the
  best IoU over all anchors (dlib adds an IoU to its statistics only when it beats the best).

``to_label`` drops candidates whose box is infinite (a width or height output of exactly 1,
which float32 sigmoids reach for large inputs); dlib's behaviour there is undefined.

Where dlib would write out of bounds (a truth centre whose cell lies outside the head,
possible only for non-square inputs because of the quirk above) dnnpy skips that cell.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core import layer
from ..geometry import centered_drect, drectangle, test_box_overlap
from ..templates import check_tag, loss_template
from ._serialize import (read_count, read_string_vector, read_test_box_overlap, write_string_vector,
                         write_test_box_overlap)
from .base import loss_layer

__all__ = ["anchor_box_details", "yolo_options", "yolo_rect", "loss_yolo_", "loss_yolo"]


def _lround(v):
    """``std::lround`` of an array (half away from zero), as ``rectangle(drectangle)`` rounds."""
    return np.where(v >= 0, np.floor(v + 0.5), -np.floor(-v + 0.5))


def _overlap_matrix(tester, rects):
    """``M[i, j] = tester(rects[i], rects[j])`` for a ``test_box_overlap`` ``tester``,
    vectorised: corners rounded to integers (``lround``), an empty intersection never
    overlaps, IoU is the intersection over the bounding box of both (dlib's test)."""
    lrtb = np.array([(r.left(), r.top(), r.right(), r.bottom()) for r in rects], dtype=np.float64)
    l, t, r, b = (_lround(lrtb[:, i]) for i in range(4))

    def area(l, t, r, b):
        return np.where((l > r) | (t > b), 0.0, (r - l + 1) * (b - t + 1))

    inner = area(np.maximum(l[:, None], l[None]), np.maximum(t[:, None], t[None]),
                 np.minimum(r[:, None], r[None]), np.minimum(b[:, None], b[None]))
    outer = area(np.minimum(l[:, None], l[None]), np.minimum(t[:, None], t[None]),
                 np.maximum(r[:, None], r[None]), np.maximum(b[:, None], b[None]))
    own = area(l, t, r, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = tester.get_percent_covered_thresh()
        hit = ((inner / outer > tester.get_iou_thresh()) | (inner / own[:, None] > pct)
               | (inner / own[None, :] > pct))
    return hit & (inner > 0)


class anchor_box_details:
    """dlib's ``yolo_options::anchor_box_details``: an anchor's width and height (pixels)."""

    def __init__(self, width=0, height=0):
        for name, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"anchor_box_details: {name} must be a non-negative integer, got {v!r}")
        self.width, self.height = int(width), int(height)

    def __eq__(self, other):
        return (isinstance(other, anchor_box_details)
                and (self.width, self.height) == (other.width, other.height))

    def serialize(self, w):
        w.int(0)  # dlib writes version 0 and never checks it on read
        w.uint(self.width)
        w.uint(self.height)

    @classmethod
    def read(cls, r, what="an anchor box"):
        r.int(f"the version of {what}")
        width = r.uint(f"the width of {what}")
        height = r.uint(f"the height of {what}")
        return cls(width, height)

    def __repr__(self):
        return f"anchor_box_details({self.width}, {self.height})"


def _tag_id(tag, who):
    """The id of a tag template: ``tag1..tag10`` or any ``tag_template(name, id)`` (dlib's
    yolo example tags its heads with ids 4008, 4016, 4032)."""
    return check_tag(who, tag).id


class yolo_options:
    """dlib's ``yolo_options``. dlib has only the default constructor; the keyword arguments
    here set the same public fields. ``anchors`` maps a tag id to its anchor boxes and is
    kept sorted by tag id (dlib's ``std::map``)."""

    anchor_box_details = anchor_box_details

    def __init__(self, *, anchors=None, labels=(), iou_ignore_threshold=0.7, iou_anchor_threshold=1.0,
                 overlaps_nms=None, classwise_nms=True, lambda_obj=1.0, lambda_box=1.0, lambda_cls=1.0,
                 gamma_obj=0.0, gamma_cls=0.0):
        self.anchors = {}
        for tag, boxes in (anchors or {}).items():
            self.add_anchors(tag, boxes)
        self.labels = [str(s) for s in labels]
        self.iou_ignore_threshold = float(iou_ignore_threshold)
        self.iou_anchor_threshold = float(iou_anchor_threshold)
        self.overlaps_nms = test_box_overlap(0.45, 1.0) if overlaps_nms is None else overlaps_nms
        self.classwise_nms = bool(classwise_nms)
        self.lambda_obj = float(lambda_obj)
        self.lambda_box = float(lambda_box)
        self.lambda_cls = float(lambda_cls)
        self.gamma_obj = float(gamma_obj)
        self.gamma_cls = float(gamma_cls)

    def add_anchors(self, tag, boxes):
        """dlib's ``add_anchors<TAG>(boxes)``: ``tag`` is a tag template (``tag1``); ``boxes`` a
        list of ``anchor_box_details`` or ``(width, height)`` pairs. Replaces that tag's anchors."""
        tid = _tag_id(tag, "yolo_options.add_anchors")
        boxes = [b if isinstance(b, anchor_box_details) else anchor_box_details(*b) for b in boxes]
        self.anchors[tid] = boxes
        self.anchors = dict(sorted(self.anchors.items()))

    def anchors_str(self):
        """dlib's ``operator<<`` for the anchors map: ``tag1:10x13,16x30;tag2:...``."""
        return ";".join(f"tag{t}:" + ",".join(f"{b.width}x{b.height}" for b in boxes)
                        for t, boxes in sorted(self.anchors.items()))

    # -- dlib's serialize/deserialize (free functions in dlib: no version string) ------------
    def serialize(self, w):
        """dlib writes version 2: int 2; anchors (std::map<int, vector<anchor_box_details>>:
        count, then (tag id, vector) pairs by tag id); labels (vector<string>);
        iou_ignore_threshold, iou_anchor_threshold (doubles); classwise_nms (bool);
        overlaps_nms (two doubles); lambda_obj, lambda_box, lambda_cls, gamma_obj, gamma_cls
        (doubles)."""
        w.int(2)
        w.uint(len(self.anchors))
        for tid, boxes in sorted(self.anchors.items()):
            w.int(tid)
            w.uint(len(boxes))
            for b in boxes:
                b.serialize(w)
        write_string_vector(w, self.labels)
        w.float64(self.iou_ignore_threshold)
        w.float64(self.iou_anchor_threshold)
        w.bool(self.classwise_nms)
        write_test_box_overlap(w, self.overlaps_nms)
        w.float64(self.lambda_obj)
        w.float64(self.lambda_box)
        w.float64(self.lambda_cls)
        w.float64(self.gamma_obj)
        w.float64(self.gamma_cls)

    def deserialize(self, r):
        """Reads versions 1 and 2 into ``self`` (all or nothing); v1 has no gamma_obj /
        gamma_cls (they keep their current values, as dlib's reader leaves them)."""
        start = r.pos
        version = r.int("the yolo_options version")
        if not 1 <= version <= 2:
            raise r.error(f"yolo_options: expected version 1 or 2, found version {version}", start)
        anchors = {}
        for _ in range(read_count(r, "yolo_options's anchors map", 3)):
            tid = r.int("an anchors map key (tag id)")
            boxes = [anchor_box_details.read(r, f"anchor box {i} of tag {tid}")
                     for i in range(read_count(r, f"the anchor boxes of tag {tid}", 5))]
            anchors[tid] = boxes
        labels = read_string_vector(r, "yolo_options's labels")
        iou_ignore = r.float64("yolo_options's iou_ignore_threshold")
        iou_anchor = r.float64("yolo_options's iou_anchor_threshold")
        classwise = r.bool("yolo_options's classwise_nms")
        nms = read_test_box_overlap(r, "overlaps_nms", "yolo_options")
        lambdas = [r.float64(f"yolo_options's {n}") for n in ("lambda_obj", "lambda_box", "lambda_cls")]
        gammas = [self.gamma_obj, self.gamma_cls]
        if version >= 2:
            gammas = [r.float64(f"yolo_options's {n}") for n in ("gamma_obj", "gamma_cls")]
        self.anchors = dict(sorted(anchors.items()))
        self.labels = labels
        self.iou_ignore_threshold, self.iou_anchor_threshold = iou_ignore, iou_anchor
        self.classwise_nms, self.overlaps_nms = classwise, nms
        self.lambda_obj, self.lambda_box, self.lambda_cls = lambdas
        self.gamma_obj, self.gamma_cls = gammas

    def __repr__(self):
        return (f"yolo_options(anchors=({self.anchors_str()}), labels={self.labels!r}, "
                f"iou_ignore_threshold={self.iou_ignore_threshold:g}, "
                f"iou_anchor_threshold={self.iou_anchor_threshold:g})")


class yolo_rect:
    """dlib's ``yolo_rect``: ``rect`` (a drectangle), ``detection_confidence``, ``ignore``,
    ``label`` and ``labels`` (every ``(confidence, label)`` above the threshold, best first).

    ``yolo_rect(rect, detection_confidence=0, label="")``; ``yolo_rect(an_mmod_rect)`` copies
    its rect, confidence, ignore flag and label, as dlib's converting constructor.
    Equality compares rect, confidence, ignore and label; ``<`` compares confidences."""

    def __init__(self, rect=None, detection_confidence=0.0, label="", ignore=False, labels=None):
        if rect is not None and hasattr(rect, "rect") and hasattr(rect, "detection_confidence"):
            src = rect
            rect, detection_confidence = src.rect, src.detection_confidence
            label, ignore = getattr(src, "label", ""), getattr(src, "ignore", False)
        self.rect = drectangle() if rect is None else rect
        self.detection_confidence = float(detection_confidence)
        self.ignore = bool(ignore)
        self.label = str(label)
        self.labels = list(labels) if labels is not None else []

    def __eq__(self, other):
        return (isinstance(other, yolo_rect) and self.rect == other.rect
                and self.detection_confidence == other.detection_confidence
                and self.ignore == other.ignore and self.label == other.label)

    def __lt__(self, other):
        return self.detection_confidence < other.detection_confidence

    def __repr__(self):
        return (f"yolo_rect({self.rect!r}, detection_confidence={self.detection_confidence:g}, "
                f"label={self.label!r}{', ignore=True' if self.ignore else ''})")


# ----------------------------------------------------------------------------------------

def _safe_log(v):
    """dlib's ``safe_log``: ``log(max(v, 1e-10))`` (elementwise)."""
    return np.log(np.maximum(v, 1e-10))


def _neg_grad(p, gamma):
    """dlib's gradient for a target of 0 (objectness below the ignore threshold, other classes)."""
    return np.power(p, gamma) * (gamma * (1 - p) * _safe_log(1 - p) + p)


def _pos_grad(p, gamma):
    """dlib's gradient for a target of 1 (the responsible anchor's objectness, the true class)."""
    return np.power(1 - p, gamma) * (gamma * p * _safe_log(p) + p - 1)


def _iou(l1, t1, r1, b1, l2, t2, r2, b2):
    """dlib's ``box_intersection_over_union(drectangle, drectangle)``, broadcasting."""
    def area(l, t, r, b):
        return np.where((t > b) | (l > r), 0.0, (r - l + 1) * (b - t + 1))

    inner = area(np.maximum(l1, l2), np.maximum(t1, t2), np.minimum(r1, r2), np.minimum(b1, b2))
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inner / (area(l1, t1, r1, b1) + area(l2, t2, r2, b2) - inner)
    return np.where(inner == 0, 0.0, iou)


def _corners(r):
    return r.left(), r.top(), r.right(), r.bottom()


class loss_yolo_(loss_layer):
    """YOLO loss over the heads tagged ``tags`` (dlib's ``loss_yolo_<TAG_TYPES...>``).

    ``loss_yolo_(tag1, tag2, ..., options=yolo_options())``; ``loss_yolo_(options, tag1, ...)``
    is accepted too. Labels: one list of ``yolo_rect`` per sample (``ignore`` boxes and boxes
    whose centre is outside the image are skipped). ``to_label(x, sub, adjust_threshold=0.25)``
    gives per sample the detections after non-max suppression (``options.overlaps_nms``,
    per label when ``options.classwise_nms``).
    """

    # net_to_dot: dlib's own overload draws an edge from each tagged head
    dot_edges = "tags"
    # dlib writes each sample's gradient undivided by the batch size (the value is a mean)
    distributed_reduction = "sum"

    def dot_label(self):
        return "loss_yolo"

    constructor_settings = {yolo_options: "options"}   # net_type(options), as dlib's

    def __init__(self, *tags, options=None):
        for end in (0, -1):  # options first, or last (as net_type(options) passes them)
            if tags and isinstance(tags[end], yolo_options):
                if options is not None:
                    raise TypeError("loss_yolo_: options given twice")
                options = tags[end]
                tags = tags[1:] if end == 0 else tags[:-1]
        if not tags:
            raise TypeError("loss_yolo_: at least one tag template (the detection heads) is required")
        self._tag_ids = [_tag_id(t, "loss_yolo_") for t in tags]
        self.tags = tuple(tags)
        self.options = yolo_options() if options is None else options

    # -- options ---------------------------------------------------------------------------
    @property
    def options(self):
        return self._options

    @options.setter
    def options(self, value):
        if not isinstance(value, yolo_options):
            raise TypeError(f"loss_yolo_: options must be a yolo_options, got {type(value).__name__}")
        self._options = value

    def get_options(self):
        return self._options

    def tag_count(self):
        return len(self.tags)

    def adjust_nms(self, iou_thresh, percent_covered_thresh=1.0, classwise=True):
        """dlib's ``adjust_nms``: replace the NMS overlap test and the classwise flag."""
        self._options.overlaps_nms = test_box_overlap(iou_thresh, percent_covered_thresh)
        self._options.classwise_nms = bool(classwise)

    # -- heads -----------------------------------------------------------------------------
    def _head(self, sub, tag, x):
        """The tagged head: (node, output as float64 (N, A, 5+C, nr, nc), anchors, strides)."""
        opts = self._options
        anchors = opts.anchors.get(tag.id)
        if not anchors:
            raise ValueError(f"loss_yolo_: the options have no anchors for {tag.name} "
                             f"(use options.add_anchors({tag.name}, [...]))")
        node = layer(sub, tag)
        out = node.get_output()
        feats = len(opts.labels) + 5
        if out.k() != len(anchors) * feats:
            raise ValueError(f"loss_yolo_: {tag.name} outputs {out.k()} channels but {len(anchors)} anchors "
                             f"x ({len(opts.labels)} labels + 5) = {len(anchors) * feats} are needed")
        if out.num_samples() != x.num_samples():
            raise ValueError(f"loss_yolo_: {tag.name} has {out.num_samples()} samples but the input "
                             f"tensor has {x.num_samples()}")
        n, _, nr, nc = out.shape
        data = np.asarray(out.host_read(), np.float64).reshape(n, len(anchors), feats, nr, nc)
        stride_x = x.nc() / nc
        stride_y = x.nr() / nr
        return node, data, anchors, stride_x, stride_y

    @staticmethod
    def _pred_boxes(d, anchors, stride_x, stride_y):
        """Predicted boxes of one sample's head ``d`` (A, F, nr, nc): corner arrays (A, nr, nc)."""
        _, _, nr, nc = d.shape
        cols = np.arange(nc, dtype=np.float64)[None, None, :]
        rows = np.arange(nr, dtype=np.float64)[None, :, None]
        aw = np.array([a.width for a in anchors], np.float64)[:, None, None]
        ah = np.array([a.height for a in anchors], np.float64)[:, None, None]
        cx = (d[:, 0] * 2.0 - 0.5 + cols) * stride_x
        cy = (d[:, 1] * 2.0 - 0.5 + rows) * stride_y
        with np.errstate(divide="ignore", invalid="ignore"):
            w = d[:, 2] / (1 - d[:, 2]) * aw - 1   # centered_drect subtracts 1 from the size
            h = d[:, 3] / (1 - d[:, 3]) * ah - 1
        return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2

    # -- loss ------------------------------------------------------------------------------
    def compute_loss_value_and_gradient(self, x, labels, sub):
        if x.num_samples() == 0:
            raise ValueError("loss_yolo_: the input tensor has no samples")
        if (sub.sample_expansion_factor() or 1) != 1:
            raise ValueError(f"loss_yolo_: the sample expansion factor must be 1, got "
                             f"{sub.sample_expansion_factor()}")
        labels = list(labels)
        if len(labels) != x.num_samples():
            raise ValueError(f"loss_yolo_: got {len(labels)} labels for {x.num_samples()} input samples")
        # dlib: input_rect = rectangle(nr, nc), i.e. x spans the rows' count (quirk, see module doc)
        in_r, in_b = x.nr() - 1.0, x.nc() - 1.0
        input_area = float(x.nr() * x.nc())
        truths = []
        for i, boxes in enumerate(labels):
            keep = []
            for box in boxes:
                if not isinstance(box, yolo_rect):
                    raise TypeError(f"loss_yolo_: sample {i}: labels must be yolo_rect objects, "
                                    f"got {type(box).__name__}")
                l, t, r, b = _corners(box.rect)
                cx, cy = (l + r) / 2, (t + b) / 2
                if not box.ignore and 0 <= cx <= in_r and 0 <= cy <= in_b:
                    keep.append(box)
            truths.append(keep)

        loss = 0.0
        for tag in self.tags:
            node, data, anchors, sx, sy = self._head(sub, tag, x)
            grad = node.get_gradient_input()
            if grad.shape != node.get_output().shape:
                raise ValueError(f"loss_yolo_: {tag.name}'s gradient input is {grad.shape}, "
                                 f"its output {node.get_output().shape}")
            g = grad.host().reshape(data.shape)
            for n in range(data.shape[0]):
                self._sample_gradient(data[n], g[n], truths[n], tag.id, anchors, sx, sy, input_area)
                gn = g[n].astype(np.float64).ravel()
                loss += 0.5 * float(np.dot(gn, gn))
        return loss / x.num_samples()

    def _sample_gradient(self, d, g, truths, tag_id, anchors, sx, sy, input_area):
        """Write dlib's gradient for one sample and head (``d``, ``g``: (A, 5+C, nr, nc))."""
        opts = self._options
        _, feats, nr, nc = d.shape
        # objectness: every prediction whose best IoU with a truth is below the ignore threshold
        pl, pt, pr, pb = self._pred_boxes(d, anchors, sx, sy)
        best = np.zeros(pl.shape)
        for box in truths:
            best = np.maximum(best, _iou(*_corners(box.rect), pl, pt, pr, pb))
        p = d[:, 4]
        neg = best < opts.iou_ignore_threshold
        g[:, 4][neg] = (opts.lambda_obj * _neg_grad(p, opts.gamma_obj))[neg]

        # each truth: its best anchor over all heads, and (ATSS / threshold) other anchors here
        for box in truths:
            l, t, r, b = _corners(box.rect)
            tcx, tcy = (l + r) / 2, (t + b) / 2
            tw, th = box.rect.width(), box.rect.height()
            best_iou, best_a, best_tag, improvements = 0.0, 0, 0, []
            for tid, details in sorted(opts.anchors.items()):
                for a, anc in enumerate(details):
                    iou = float(_iou(l, t, r, b, *_corners(centered_drect((tcx, tcy), anc.width, anc.height))))
                    if iou > best_iou:
                        best_iou, best_a, best_tag = iou, a, tid
                        improvements.append(iou)
            thresh = opts.iou_anchor_threshold
            if thresh == 0:
                thresh = _mean_plus_stddev(improvements)
            for a, anc in enumerate(anchors):
                if not (best_tag == tag_id and best_a == a):
                    if thresh >= 1:
                        continue
                    anchor_rect = centered_drect((tcx, tcy), anc.width, anc.height)
                    if float(_iou(l, t, r, b, *_corners(anchor_rect))) < thresh:
                        continue
                c, rr = int(tcx / sx), int(tcy / sy)   # C++ truncation (both are >= 0)
                if not (0 <= rr < nr and 0 <= c < nc):
                    continue  # dlib writes out of bounds here; see the module docstring
                tx, ty = tcx / sx - c, tcy / sy - rr
                twt = tw / (anc.width + tw)
                tht = th / (anc.height + th)
                scale_box = opts.lambda_box * (2.0 - box.rect.area() / input_area)
                o = d[a, :, rr, c]
                gg = g[a, :, rr, c]   # a view into the gradient
                gg[0] = scale_box * min(1.0, max(-1.0, o[0] * 2.0 - 0.5 - tx)) * 2.0
                gg[1] = scale_box * min(1.0, max(-1.0, o[1] * 2.0 - 0.5 - ty)) * 2.0
                gg[2] = scale_box * min(1.0, max(-1.0, o[2] - twt))
                gg[3] = scale_box * min(1.0, max(-1.0, o[3] - tht))
                gg[4] = opts.lambda_obj * _pos_grad(o[4], opts.gamma_obj)
                for i, name in enumerate(opts.labels):
                    pc = o[5 + i]
                    if box.label == name:
                        gg[5 + i] = box.detection_confidence * opts.lambda_cls * _pos_grad(pc, opts.gamma_cls)
                    else:
                        gg[5 + i] = opts.lambda_cls * _neg_grad(pc, opts.gamma_cls)

    # -- labels ----------------------------------------------------------------------------
    def to_label(self, x, sub, adjust_threshold=0.25):
        """Per sample, the detections (``yolo_rect``, best first) after non-max suppression."""
        if (sub.sample_expansion_factor() or 1) != 1:
            raise ValueError(f"loss_yolo_: the sample expansion factor must be 1, got "
                             f"{sub.sample_expansion_factor()}")
        heads = [self._head(sub, tag, x) for tag in self.tags]
        result = []
        for n in range(x.num_samples()):
            dets = []
            for _, data, anchors, sx, sy in heads:
                dets.extend(self._detections(data[n], anchors, sx, sy, adjust_threshold))
            dets.sort(key=lambda r: r.detection_confidence, reverse=True)  # stable
            result.append(self._non_max_suppression(dets))
        return result

    def _non_max_suppression(self, dets):
        """dlib's greedy NMS: keep a detection (best first) unless it overlaps
        (``overlaps_nms``; same label only if ``classwise_nms``) one already kept. The pairwise
        overlaps are one vectorised matrix (an untrained net gives ~1000 candidates)."""
        if len(dets) < 2:
            return list(dets)
        opts = self._options
        overlaps = _overlap_matrix(opts.overlaps_nms, [d.rect for d in dets])
        if opts.classwise_nms:
            names = np.array([d.label for d in dets], dtype=object)
            overlaps &= names[:, None] == names[None, :]
        keep = np.zeros(len(dets), dtype=bool)
        for i in range(len(dets)):
            keep[i] = not overlaps[i, keep].any()
        return [d for d, k in zip(dets, keep) if k]

    def _detections(self, d, anchors, sx, sy, threshold):
        labels = self._options.labels
        pl, pt, pr, pb = self._pred_boxes(d, anchors, sx, sy)
        dets = []
        # a width or height sigmoid of exactly 1 (float32 saturates) gives an infinite box;
        # dlib would convert it to integers undefinedly: such candidates are dropped
        finite = np.isfinite(pl) & np.isfinite(pt) & np.isfinite(pr) & np.isfinite(pb)
        for a, r, c in zip(*np.nonzero((d[:, 4] > threshold) & finite)):   # dlib's order: a, row, col
            obj = d[a, 4, r, c]
            confs = [(obj * d[a, 5 + i, r, c], labels[i]) for i in range(len(labels))]
            found = sorted(((float(cf), lab) for cf, lab in confs if cf > threshold), reverse=True)
            if found:
                rect = drectangle(pl[a, r, c], pt[a, r, c], pr[a, r, c], pb[a, r, c])
                dets.append(yolo_rect(rect, found[0][0], found[0][1], labels=found))
        return dets

    # -- printing --------------------------------------------------------------------------
    def __repr__(self):
        o = self._options
        n = len(self.tags)
        labels = o.labels
        return ("loss_yolo\t ("
                f"{n} output{'s' if n != 1 else ''}:(" + ",".join(f"tag{t.id}" for t in self.tags) + ")"
                f", anchor_boxes:({o.anchors_str()})"
                f", {len(labels)} label{'s' if len(labels) != 1 else ''}:(" + ",".join(labels) + ")"
                f", iou_ignore_threshold: {o.iou_ignore_threshold:g}"
                f", iou_anchor_threshold: {o.iou_anchor_threshold:g}"
                f", lambda_obj:{o.lambda_obj:g}, lambda_box:{o.lambda_box:g}, lambda_cls:{o.lambda_cls:g}"
                f", gamma_obj:{o.gamma_obj:g}, gamma_cls:{o.gamma_cls:g}"
                f", overlaps_nms:({o.overlaps_nms.get_iou_thresh():g},"
                f"{o.overlaps_nms.get_percent_covered_thresh():g})"
                f", classwise_nms:{'true' if o.classwise_nms else 'false'})")

    def serialize(self, w):
        w.string("loss_yolo_")
        w.uint(len(self.tags))  # size_t tag count; the tag ids themselves are not stored
        self._options.serialize(w)

    def deserialize(self, r):
        """The tag count must be the type's; the options are restored from the file."""
        r.expect_string("loss_yolo_")
        start = r.pos
        count = r.uint("loss_yolo_'s tag count")
        if count != len(self.tags):
            raise r.error(f"loss_yolo_: the file has {count} detection tags but the net type has "
                          f"{len(self.tags)}", start)
        opts = yolo_options()
        opts.gamma_obj, opts.gamma_cls = self._options.gamma_obj, self._options.gamma_cls
        opts.deserialize(r)
        self._options = opts

    def to_xml(self):
        return "<loss_yolo/>\n"

    def to_onnx(self, g, x, outputs):
        """One graph output per tagged head, ``scores_tag<id>`` (the loss reads the heads,
        not the net's output); decode them with ``to_label`` outside the graph."""
        if tuple(outputs) != ("scores",):
            g.refuse(f"loss_yolo_ exports its heads' scores only (got outputs={tuple(outputs)!r}); decode "
                     f"them with to_label outside the graph")
        return [(f"scores_tag{t.id}", g.tagged(t)) for t in self.tags]


def _mean_plus_stddev(values):
    """dlib's ``running_stats``: mean + stddev, where the variance is 0 for fewer than two
    values (dlib's 1/(n-1) gives inf*0 = NaN, which its ``temp >= 0`` test turns into 0)."""
    n = len(values)
    if n == 0:
        return 0.0
    mean = sum(values) / n
    if n < 2:
        return mean
    var = (sum(v * v for v in values) - sum(values) ** 2 / n) / (n - 1)
    return mean + math.sqrt(var if var >= 0 else 0.0)


loss_yolo = loss_template("loss_yolo", loss_yolo_)
