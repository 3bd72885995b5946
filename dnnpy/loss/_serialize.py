"""Helpers the losses' ``serialize``/``deserialize`` methods share: dlib's encodings of
``std::vector``, ``std::map`` and ``test_box_overlap`` on top of the primitive
``Writer``/``Reader`` (``dnnpy/serialization/primitives.py``).

Every read error is a ``SerializationError`` (from ``r.error``) naming the object, the
field, what was expected and what was found.
"""

from __future__ import annotations

import math

from ..geometry import test_box_overlap

__all__ = ["read_count", "write_test_box_overlap", "read_test_box_overlap", "write_string_vector",
           "read_string_vector", "read_double_in"]


def read_count(r, what, min_bytes_each=1):
    """An element count (``unsigned long``) that the remaining bytes can hold: each element
    needs at least ``min_bytes_each`` bytes, so a corrupted count fails here, at once."""
    start = r.pos
    n = r.uint(f"the element count of {what}")
    if n * min_bytes_each > r.remaining():
        raise r.error(f"{what} claims {n} elements but only {r.remaining()} bytes remain", start)
    return n


def write_string_vector(w, strings):
    """``std::vector<std::string>``: count, then each string."""
    w.uint(len(strings))
    for s in strings:
        w.string(s)


def read_string_vector(r, what):
    n = read_count(r, what, 1)
    return [r.string(f"element {i} of {what}") for i in range(n)]


def read_double_in(r, what, lo, hi, who):
    """A ``double`` that must lie in ``[lo, hi]`` (NaN is refused)."""
    start = r.pos
    v = r.float64(what)
    if math.isnan(v) or not lo <= v <= hi:
        raise r.error(f"{who}: {what} must be in [{lo}, {hi}], found {v}", start)
    return v


def write_test_box_overlap(w, t):
    """dlib's ``serialize(test_box_overlap)``: iou_thresh then percent_covered_thresh, doubles."""
    w.float64(t.get_iou_thresh())
    w.float64(t.get_percent_covered_thresh())


def read_test_box_overlap(r, what, who):
    """dlib's ``deserialize(test_box_overlap)``; thresholds outside [0, 1] (which dlib's
    constructor asserts against) are refused."""
    iou = read_double_in(r, f"{what}'s iou_thresh", 0.0, 1.0, who)
    covered = read_double_in(r, f"{what}'s percent_covered_thresh", 0.0, 1.0, who)
    return test_box_overlap(iou, covered)
