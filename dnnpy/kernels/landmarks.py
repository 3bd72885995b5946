"""The shape predictor's cascade as one compiled loop per box: the twin of
``shape_predictor._run_chunk`` (``dnnpy/landmarks.py``, whose docstring says what is
computed), with the same float32 and float64 operations in the same order, so the
landmarks equal the numpy code's."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _grey(img, x, y):
    """The grey level at (x, y): ``(r + g + b) // 3`` of an RGB pixel, 0 outside."""
    if x < 0 or y < 0 or x >= img.shape[1] or y >= img.shape[0]:
        return 0
    if img.shape[2] == 3:
        return (np.int32(img[y, x, 0]) + np.int32(img[y, x, 1]) + np.int32(img[y, x, 2])) // 3
    return np.int32(img[y, x, 0])


@njit(cache=True, nogil=True, inline="always")
def _to_image(m0, m1, b, px, py):
    """One image coordinate of the shape point (px, py), float32: ``floor(m0 px + m1 py +
    b)`` in float64 (``b`` holds dlib's rounding half)."""
    return np.int64(np.floor(m0 * px + m1 * py + b))


@njit(cache=True, nogil=True)
def _left(f, splits, at):
    """1 when split ``at`` sends the walk left, else 0."""
    return np.int64(f[splits[at, 0]] - f[splits[at, 1]] > splits[at, 2])


@njit(cache=True, nogil=True)
def _similarity(shape, weights, sim):
    """The 2x2 similarity transform from the mean shape to ``shape`` (``weights``: see
    ``_mean_shape_weights``), summed in float64 and rounded to float32."""
    for j in range(4):
        acc = 0.0
        for k in range(len(shape)):
            acc += np.float64(shape[k]) * weights[k, j]
        sim[j] = np.float32(acc)


@njit(cache=True, nogil=True)
def _feature_values(img, shape, sim, m00, m01, b0, m10, m11, b1, begin, end, dx, dy, anchor,
                    f):
    """The grey levels of the feature pixels ``begin..end-1`` into ``f``: each offset moved
    by the similarity transform, added to its anchor landmark, mapped into the image (in
    float64) and rounded."""
    for j in range(end - begin):
        a = anchor[begin + j]
        px = sim[0] * dx[begin + j] + sim[1] * dy[begin + j] + shape[2 * a]
        py = sim[2] * dx[begin + j] + sim[3] * dy[begin + j] + shape[2 * a + 1]
        f[j] = _grey(img, _to_image(m00, m01, b0, px, py), _to_image(m10, m11, b1, px, py))


@njit(cache=True, nogil=True)
def _leaves_reached(f, splits, s0, ns, trees, leaf):
    """The leaf each of the ``trees`` trees (splits from row ``s0``, ``ns`` a tree) reaches
    for the feature values ``f``, into ``leaf``. Four trees are walked in step: a walk is a
    chain of dependent reads, and four chains at once keep the core busy; dlib's trees are
    complete, of 2**depth - 1 splits, so every walk takes depth steps."""
    depth = 0
    while (1 << depth) - 1 < ns:
        depth += 1
    t = 0
    while t < trees:
        a0 = s0 + t * ns
        a1 = a0 + ns if t + 1 < trees else a0
        a2 = a0 + 2 * ns if t + 2 < trees else a0
        a3 = a0 + 3 * ns if t + 3 < trees else a0
        n0 = n1 = n2 = n3 = 0
        for _ in range(depth):   # left child 2i + 1 when the difference is greater
            n0 = 2 * n0 + 2 - _left(f, splits, a0 + n0)
            n1 = 2 * n1 + 2 - _left(f, splits, a1 + n1)
            n2 = 2 * n2 + 2 - _left(f, splits, a2 + n2)
            n3 = 2 * n3 + 2 - _left(f, splits, a3 + n3)
        leaf[t] = n0 - ns
        if t + 1 < trees:
            leaf[t + 1] = n1 - ns
        if t + 2 < trees:
            leaf[t + 2] = n2 - ns
        if t + 3 < trees:
            leaf[t + 3] = n3 - ns
        t += 4


@njit(cache=True, nogil=True)
def _add_leaves(shape, leaves, start, per_tree, trees, leaf):
    """``shape += `` the leaf rows reached (tree ``t``'s: row ``start + t * per_tree +
    leaf[t]`` of ``leaves``), tree after tree, in float32. (After all walks: the additions
    wait on no branch, so the reads of the rows, random in a large table, overlap.)"""
    for t in range(trees):
        row = leaves[start + t * per_tree + leaf[t]]
        for k in range(len(shape)):
            shape[k] += row[k]


@njit(cache=True, nogil=True)
def cascade(img, boxes, unit_pinv, first, last, initial, weights, fixed, feat_off, dx, dy,
            anchor, nsplit, splits, ntrees, leaves, out):
    """Landmarks of boxes ``first..last-1`` into ``out`` (boxes, 2, parts; int64 x and y).

    ``img``: (H, W, 1 or 3) uint8; ``boxes``: (n, 4) float64 left, top, right, bottom, each
    mapped from the unit square by dlib's unnormalizing transform (``unit_pinv``: see
    ``_unnormalizing`` in dnnpy/landmarks.py, whose float64 steps are followed);
    ``initial``: the mean shape (2P float32); ``weights``: the
    (2P, 4) float64 map from a shape to its similarity transform, or ``fixed`` (4 float32)
    when ``fixed[0]`` is not NaN; level ``l``'s feature pixels are ``feat_off[l]..`` of
    ``dx``, ``dy``, ``anchor``; its ``ntrees[l]`` trees' splits are the next rows of
    ``splits`` (idx1, idx2, limit; ``nsplit[l]`` a tree; left when the grey difference of
    the feature pixels idx1 and idx2 is greater than the limit), their leaves the next rows
    of ``leaves`` (rows, 2P float32; ``nsplit[l] + 1`` a tree), level after level."""
    nlev = len(nsplit)
    width = len(initial)
    shape = np.empty(width, np.float32)
    sim = np.empty(4, np.float32)
    f = np.empty(int((feat_off[1:] - feat_off[:-1]).max()), np.int32)
    leaf = np.empty(ntrees.max(), np.int64)
    for box in range(first, last):
        shape[:] = initial
        left, top, right, bottom = boxes[box, 0], boxes[box, 1], boxes[box, 2], boxes[box, 3]
        # x and y of the box's corners tl, tr, br times pinv(P), in dlib's order; then
        # dlib's rounding half added to the offsets at once
        m00 = left * unit_pinv[0, 0] + right * unit_pinv[1, 0] + right * unit_pinv[2, 0]
        m01 = left * unit_pinv[0, 1] + right * unit_pinv[1, 1] + right * unit_pinv[2, 1]
        b0 = left * unit_pinv[0, 2] + right * unit_pinv[1, 2] + right * unit_pinv[2, 2] + 0.5
        m10 = top * unit_pinv[0, 0] + top * unit_pinv[1, 0] + bottom * unit_pinv[2, 0]
        m11 = top * unit_pinv[0, 1] + top * unit_pinv[1, 1] + bottom * unit_pinv[2, 1]
        b1 = top * unit_pinv[0, 2] + top * unit_pinv[1, 2] + bottom * unit_pinv[2, 2] + 0.5
        split_at = leaf_at = 0
        for lev in range(nlev):
            if np.isnan(fixed[0]):
                _similarity(shape, weights, sim)
            else:
                sim[:] = fixed
            _feature_values(img, shape, sim, m00, m01, b0, m10, m11, b1, feat_off[lev],
                            feat_off[lev + 1], dx, dy, anchor, f)
            _leaves_reached(f, splits, split_at, nsplit[lev], ntrees[lev], leaf)
            _add_leaves(shape, leaves, leaf_at, nsplit[lev] + 1, ntrees[lev], leaf)
            split_at += ntrees[lev] * nsplit[lev]
            leaf_at += ntrees[lev] * (nsplit[lev] + 1)
        for k in range(width // 2):
            out[box, 0, k] = _to_image(m00, m01, b0, shape[2 * k], shape[2 * k + 1])
            out[box, 1, k] = _to_image(m10, m11, b1, shape[2 * k], shape[2 * k + 1])
