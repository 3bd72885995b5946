"""dlib's Chinese whispers graph clustering (``dlib/clustering/chinese_whispers.h``) and the
Python binding's ``chinese_whispers_clustering(descriptors, threshold)`` (face clustering).

    num_clusters, labels = chinese_whispers([(0, 1), (1, 2), (3, 4, 0.5)])
    labels = chinese_whispers_clustering(face_descriptors, 0.5)

With the same ``dlib_rand`` (default: a fresh one, as dlib) the nodes are visited in dlib's
order, so the labels equal dlib's, numbering included.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..rand import dlib_rand

__all__ = ["chinese_whispers", "chinese_whispers_clustering"]

_CHUNK = 1 << 16    # random node picks drawn per batch (bounds memory for big graphs)


def _edge_arrays(edges):
    """(index1, index2, weight) arrays from a list of (i, j) / (i, j, weight) tuples or an
    (E, 2) / (E, 3) array."""
    if isinstance(edges, np.ndarray):
        if edges.ndim != 2 or edges.shape[1] not in (2, 3):
            raise ValueError(f"chinese_whispers: an edge array must have shape (E, 2) or (E, 3), "
                             f"got {edges.shape}")
        ij = edges[:, :2]
        w = (edges[:, 2].astype(np.float64) if edges.shape[1] == 3
             else np.ones(len(edges)))
        ok = (np.issubdtype(ij.dtype, np.integer)
              or (np.issubdtype(ij.dtype, np.floating) and bool(np.all(ij == np.floor(ij)))))
        if not ok or (ij.size and ij.min() < 0):
            raise ValueError("chinese_whispers: the node indices (first two columns) must be "
                             "integers >= 0")
        ij = ij.astype(np.int64)
        return ij[:, 0], ij[:, 1], w
    rows = list(edges)
    ij = np.zeros((len(rows), 2), dtype=np.int64)
    w = np.ones(len(rows))
    for k, e in enumerate(rows):
        if not isinstance(e, (tuple, list)) or len(e) not in (2, 3):
            raise ValueError(f"chinese_whispers: edge {k} must be (i, j) or (i, j, weight), "
                             f"got {e!r}")
        for c in (0, 1):
            v = e[c]
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"chinese_whispers: edge {k} is {e!r}; node indices must be "
                                 f"integers >= 0")
            ij[k, c] = v
        if len(e) == 3:
            w[k] = float(e[2])
    return ij[:, 0], ij[:, 1], w


def chinese_whispers(edges, num_iterations=100, rnd=None, ordered=False):
    """Cluster the graph given by ``edges`` and return ``(num_clusters, labels)``: ``labels``
    (int64 array, one per node ``0 .. max index``) numbered 0, 1, ... in order of first
    appearance. No edges: ``(0, empty array)``.

    ``edges``: (i, j) or (i, j, weight) tuples (weight 1 if absent), or an (E, 2) / (E, 3)
    array. By default they are dlib's ``sample_pair``: undirected, each one a neighbour link
    both ways (a self-edge once). ``ordered=True`` takes them as ``ordered_sample_pair``:
    directed, ``j`` is a neighbour of ``i`` only.

    The algorithm (dlib's): every node starts in its own cluster; ``num_nodes *
    num_iterations`` times, a node picked at random (``rnd.get_random_64bit_number() %
    num_nodes``) takes the label whose neighbour weights sum highest (ties: the smallest
    label; no neighbours: it keeps its own). ``rnd``: a ``dlib_rand`` (default: a fresh one).
    The iterations are sequential by nature; they run as a Python loop over node picks."""
    if isinstance(num_iterations, bool) or not isinstance(num_iterations, numbers.Integral) \
            or num_iterations < 0:
        raise ValueError(f"chinese_whispers: num_iterations must be an integer >= 0, got "
                         f"{num_iterations!r}")
    if rnd is None:
        rnd = dlib_rand()
    elif not isinstance(rnd, dlib_rand):
        raise TypeError(f"chinese_whispers: rnd must be a dnnpy.data.dlib_rand, got "
                        f"{type(rnd).__name__}")
    a, b, w = _edge_arrays(edges)
    if len(a) == 0:
        return 0, np.zeros(0, dtype=np.int64)
    if not ordered:
        # sample_pair stores (min, max); convert_unordered_to_ordered adds the reverse link
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        rev = lo != hi
        a = np.concatenate([lo, hi[rev]])
        b = np.concatenate([hi, lo[rev]])
        w = np.concatenate([w, w[rev]])
    order = np.lexsort((b, a))          # dlib sorts by (index1, index2)
    a, b, w = a[order], b[order], w[order]
    num_nodes = int(max(a.max(), b.max())) + 1

    starts = np.searchsorted(a, np.arange(num_nodes + 1)).tolist()
    b_list, w_list = b.tolist(), w.tolist()
    nbrs = [(b_list[starts[i]:starts[i + 1]], w_list[starts[i]:starts[i + 1]])
            for i in range(num_nodes)]

    labels = list(range(num_nodes))
    remaining = num_nodes * int(num_iterations)
    n64 = np.uint64(num_nodes)
    while remaining:
        count = min(remaining, _CHUNK)
        remaining -= count
        for idx in (rnd.get_random_64bit_numbers(count) % n64).tolist():
            js, ws = nbrs[idx]
            if not js:
                continue
            scores = {}
            for j, wt in zip(js, ws):
                lab = labels[j]
                scores[lab] = scores.get(lab, 0.0) + wt
            best_label, best = labels[idx], -np.inf
            for lab in sorted(scores):
                if scores[lab] > best:
                    best, best_label = scores[lab], lab
            labels[idx] = best_label

    remap = {}
    out = np.array([remap.setdefault(lab, len(remap)) for lab in labels], dtype=np.int64)
    return len(remap), out


def chinese_whispers_clustering(descriptors, threshold):
    """dlib's Python ``chinese_whispers_clustering``: link every pair of descriptors (each
    with itself too) whose Euclidean distance is below ``threshold`` (compared at float32
    precision, as the binding's ``float`` parameter), run ``chinese_whispers`` with dlib's
    defaults and return the labels as a list of ints (one per descriptor).

    ``descriptors``: an (N, D) array or a sequence of N length-D vectors."""
    x = np.asarray([np.asarray(d, dtype=np.float64).ravel() for d in descriptors]
                   if not isinstance(descriptors, np.ndarray) else descriptors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"chinese_whispers_clustering: descriptors must form an (N, D) array, "
                         f"got shape {x.shape}")
    t = float(np.float32(threshold))
    if not t > 0:
        raise ValueError(f"chinese_whispers_clustering: threshold must be > 0, got {threshold}")
    xt = np.ascontiguousarray(x.T)      # (D, N): the sum over D runs in order, as dlib's
    pairs = []
    for i in range(len(x)):
        d2 = np.add.reduce((xt[:, i:] - xt[:, i:i + 1]) ** 2, axis=0)
        js = np.flatnonzero(np.sqrt(d2) < t) + i
        pairs.append(np.stack([np.full(len(js), i), js], axis=1))
    edges = np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)
    return chinese_whispers(edges)[1].tolist()
