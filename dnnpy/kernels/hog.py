"""A HOG detector's window scores by separable filters, compiled (dlib's
``scan_fhog_pyramid`` with its filters' rank-one parts): the twin of the matrix-product scan
of ``dnnpy.object_detector._Scan``, whose filters are the sums of the same parts. The sums
run in another order (each part's row filter, then its column filter, as dlib's), so the
scores agree to float32 rounding."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _filter_row(out, src, weights, step):
    """``out[x] += sum_b weights[b] * src[x + b * step]`` (``src`` flat): four taps at a time,
    so that the output is read and written once for four multiply-adds (the loops are bound
    by memory operations, not by arithmetic)."""
    n = len(out)
    b = 0
    while b + 4 <= len(weights):
        w0, w1, w2, w3 = weights[b], weights[b + 1], weights[b + 2], weights[b + 3]
        # (slices, so that the loop's indices are its counter: numba then knows them
        # non-negative and the loop runs in SIMD registers)
        s0, s1 = src[b * step:b * step + n], src[(b + 1) * step:(b + 1) * step + n]
        s2, s3 = src[(b + 2) * step:(b + 2) * step + n], src[(b + 3) * step:(b + 3) * step + n]
        for x in range(n):
            out[x] += w0 * s0[x] + w1 * s1[x] + w2 * s2[x] + w3 * s3[x]
        b += 4
    while b < len(weights):
        w, s0 = weights[b], src[b * step:b * step + n]
        for x in range(n):
            out[x] += w * s0[x]
        b += 1


@njit(cache=True, nogil=True)
def separable_scores(planes, term_off, term_plane, term_col, term_row, score):
    """``score[k]`` (windows down, windows across; float32) of filter ``k`` over the feature
    ``planes`` (31, rows, cols float32): the sum over its parts ``t`` in
    ``term_off[k]..term_off[k+1]-1`` of the plane ``term_plane[t]`` filtered along its rows
    by ``term_row[t]`` (the window's columns) and then along its columns by ``term_col[t]``
    (the window's rows)."""
    count, vr, vc = score.shape
    nr = planes.shape[1]
    tmp = np.empty(nr * vc, np.float32)            # one plane filtered along its rows, flat
    for k in range(count):
        s = score[k]
        s[:, :] = 0.0
        for t in range(term_off[k], term_off[k + 1]):
            p = planes[term_plane[t]]
            for y in range(nr):
                out = tmp[y * vc:(y + 1) * vc]
                out[:] = 0.0
                _filter_row(out, p[y], term_row[t], 1)
            for y in range(vr):
                _filter_row(s[y], tmp[y * vc:], term_col[t], vc)
