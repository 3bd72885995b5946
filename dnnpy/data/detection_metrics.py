"""dlib's detection metrics: ``average_precision`` (dlib/statistics/average_precision.h) and
``test_object_detection_function`` for ``loss_mmod`` nets (dlib/dnn/validation.h, with the
truth matching of dlib/svm/cross_validate_object_detection_trainer.h)."""

from __future__ import annotations

import numpy as np

from ..geometry import overlaps_any_box, test_box_overlap

__all__ = ["average_precision", "number_of_truth_hits", "test_object_detection_function"]


def average_precision(items, missing=0) -> float:
    """dlib's ``average_precision(items, missing_relevant_items=0)``: ``items`` is a ranked
    list, best first, of bools (relevant or not) or of ``(score, bool)`` pairs. At each relevant
    item at rank ``i`` the precision ``relevant_so_far / (i+1)`` is recorded; these are summed
    from the last to the first, each replaced by the running maximum (interpolated precision),
    and divided by the number of relevant items plus ``missing`` (relevant items that never
    appear in the list). Returns 1 when that count is 0."""
    flags = np.array([bool(it[1]) if isinstance(it, (tuple, list)) else bool(it) for it in items],
                     dtype=bool)
    missing = int(missing)
    if missing < 0:
        raise ValueError(f"average_precision: missing must be >= 0, got {missing}")
    ranks = np.flatnonzero(flags)
    precision = np.arange(1, ranks.size + 1) / (ranks + 1.0)
    # running maximum from the end: dlib's interpolated precision
    interpolated = np.maximum.accumulate(precision[::-1])
    total = ranks.size + missing
    if total == 0:
        return 1.0
    # dlib sums from the last to the first; the same order keeps the float sum identical
    return float(sum(interpolated.tolist())) / total


def number_of_truth_hits(truth_boxes, ignore, boxes, overlap_tester, all_dets,
                         overlaps_ignore_tester=None):
    """dlib's ``impl::number_of_truth_hits``: ``truth_boxes`` and ``ignore`` are rectangles,
    ``boxes`` the detections as ``(score, rectangle)`` in the detector's order. Each truth box,
    in order, takes the first unused detection that ``overlap_tester(truth, det)`` accepts.
    Appends ``(score, used)`` to ``all_dets`` for every detection that hit a truth box or
    overlaps no ignore box (by ``overlaps_ignore_tester``, default ``overlap_tester``).
    Returns ``(hits, missing)``: matched truth boxes and unmatched ones."""
    if overlaps_ignore_tester is None:
        overlaps_ignore_tester = overlap_tester
    if not boxes:
        return 0, len(truth_boxes)
    used = [False] * len(boxes)
    count = missing = 0
    for t in truth_boxes:
        for j, (_, r) in enumerate(boxes):
            if not used[j] and overlap_tester(t, r):
                used[j] = True
                count += 1
                break
        else:
            missing += 1
    for (score, r), u in zip(boxes, used):
        if u or not overlaps_any_box(overlaps_ignore_tester, ignore, r):
            all_dets.append((float(score), u))
    return count, missing


def test_object_detection_function(detector, images, truth_dets, overlap_tester=None,
                                   adjust_threshold=0.0, overlaps_ignore_tester=None):
    """dlib's ``test_object_detection_function`` for ``loss_mmod`` nets: returns a (1, 3)
    float64 array ``[[precision, recall, average_precision]]``.

    ``detector`` is a ``loss_mmod`` net (run as ``net.process_batch([img], 1,
    adjust_threshold)``), or a function such that ``detector([img], adjust_threshold)``
    returns, for the one image, a list of ``mmod_rect`` with ``detection_confidence`` and
    ``label``, best first. Images are run one at a time, as dlib does. ``truth_dets[i]`` is the list of truth ``mmod_rect`` of image ``i``.

    Per image and per label in the union of truth and detection labels: the truth boxes with
    ``ignore`` set (of any label) are the ignore boxes; the other truth boxes of that label are
    matched greedily (see ``number_of_truth_hits``) by the detections of that label, in the
    detector's order, under ``overlap_tester`` (default ``test_box_overlap()``); detections
    that match nothing but overlap an ignore box (under ``overlaps_ignore_tester``, default
    ``test_box_overlap()``) are not counted. Then ``precision = hits / counted detections``
    (1 if none), ``recall = hits / truth boxes`` (1 if none), and the average precision of the
    counted detections sorted by (score, hit) descending, with the missed truth boxes as
    missing."""
    overlap_tester = test_box_overlap() if overlap_tester is None else overlap_tester
    overlaps_ignore_tester = (test_box_overlap() if overlaps_ignore_tester is None
                              else overlaps_ignore_tester)
    if len(images) != len(truth_dets):
        raise ValueError(f"test_object_detection_function: {len(images)} images but "
                         f"{len(truth_dets)} truth lists (one per image is needed)")
    correct_hits = total_truth = missing = 0
    all_dets = []
    for i, (img, truth) in enumerate(zip(images, truth_dets)):
        out = (detector.process_batch([img], 1, adjust_threshold) if hasattr(detector, "process_batch")
               else detector([img], adjust_threshold))
        if len(out) != 1:
            raise ValueError(f"test_object_detection_function: the detector returned "
                             f"{len(out)} label lists for one image (image {i})")
        hits = list(out[0])
        ignore = [b.rect for b in truth if b.ignore]
        for label in sorted({b.label for b in truth} | {d.label for d in hits}):
            truth_boxes = [b.rect for b in truth if not b.ignore and b.label == label]
            total_truth += len(truth_boxes)
            boxes = [(d.detection_confidence, d.rect) for d in hits if d.label == label]
            c, m = number_of_truth_hits(truth_boxes, ignore, boxes, overlap_tester, all_dets,
                                        overlaps_ignore_tester)
            correct_hits += c
            missing += m
    all_dets.sort(reverse=True)
    precision = correct_hits / len(all_dets) if all_dets else 1.0
    recall = correct_hits / total_truth if total_truth else 1.0
    return np.array([[precision, recall, average_precision(all_dets, missing)]])


test_object_detection_function.__test__ = False   # a dlib name, not a pytest test
