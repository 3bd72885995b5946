"""dlib's k-means (``dlib/svm/kkmeans.h``): ``pick_initial_centers`` (a deterministic
kmeans++-like seeding) and ``find_clusters_using_kmeans`` (Lloyd's iterations), with the linear
kernel, on the rows of a float array. dlib's yolo example clusters box sizes with them to find
anchor boxes (``--anchors``).

    centers = pick_initial_centers(9, samples)          # samples: (n, d), e.g. (w, h) rows
    centers = find_clusters_using_kmeans(samples, centers)
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["pick_initial_centers", "find_clusters_using_kmeans"]


def _samples(samples, who):
    a = np.asarray(samples, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{who}: samples must be a non-empty (n, d) array of numbers, got shape "
                         f"{np.shape(samples)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{who}: the samples contain NaN or infinite values")
    return a


def pick_initial_centers(num_centers, samples, percentile=0.01):
    """dlib's ``pick_initial_centers(num_centers, centers, samples, linear_kernel, percentile)``:
    the first sample is the first centre; each next centre is the sample at rank
    ``max(0, n - n*percentile - 1)`` (truncated) when the samples are sorted by their squared
    distance to the nearest centre so far, i.e. a far sample that is not one of the farthest
    ``percentile`` (outliers). Returns a ``(num_centers, d)`` float64 array.

    Requires ``num_centers > 1``, ``0 <= percentile < 1`` and at least two samples, as dlib.
    Ties in the sort are broken by sample index (dlib's ``std::sort`` leaves them unspecified)."""
    x = _samples(samples, "pick_initial_centers")
    if isinstance(num_centers, bool) or not isinstance(num_centers, numbers.Integral) or num_centers < 2:
        raise ValueError(f"pick_initial_centers: num_centers must be an integer > 1, got {num_centers!r}")
    if not 0 <= percentile < 1:
        raise ValueError(f"pick_initial_centers: percentile must be in [0, 1), got {percentile!r}")
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"pick_initial_centers: needs at least 2 samples, got {n}")
    best = int(max(0.0, n - n * percentile - 1))
    centers = [x[0]]
    dist = np.full(n, np.inf)
    sq = np.einsum("ij,ij->i", x, x)
    for _ in range(int(num_centers) - 1):
        c = centers[-1]
        # dlib's kernel form k(c,c) + k(s,s) - 2 k(s,c), not ||s - c||^2, for the same rounding
        d = float(c @ c) + sq - 2 * (x @ c)
        dist = np.minimum(dist, d)
        centers.append(x[np.argsort(dist, kind="stable")[best]])
    return np.array(centers)


def find_clusters_using_kmeans(samples, centers, max_iter=1000):
    """dlib's ``find_clusters_using_kmeans(samples, centers, max_iter)``: Lloyd's k-means from
    the given ``centers`` ((k, d)) until no sample changes its centre or ``max_iter``
    iterations. Each sample goes to the nearest centre by Euclidean distance (the first of
    equal ones). Returns the new ``(k, d)`` float64 centres; ``centers`` is not changed.

    dlib's quirk kept: a centre that gets no sample becomes the zero vector."""
    x = _samples(samples, "find_clusters_using_kmeans")
    c = np.array(centers, dtype=np.float64)
    if c.ndim == 1:
        c = c[:, None]
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] != x.shape[1]:
        raise ValueError(f"find_clusters_using_kmeans: centers must be a non-empty (k, {x.shape[1]}) "
                         f"array (the samples are {x.shape}), got shape {c.shape}")
    k = c.shape[0]
    assign = np.full(x.shape[0], -1)
    for _ in range(int(max_iter)):
        d = np.linalg.norm(x[:, None, :] - c[None, :, :], axis=2)
        new = np.argmin(d, axis=1)
        changed = bool(np.any(new != assign))
        assign = new
        counts = np.bincount(assign, minlength=k)
        sums = np.zeros_like(c)
        np.add.at(sums, assign, x)
        c = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], 0.0)
        if not changed:
            break
    return c
