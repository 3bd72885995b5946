"""dlib's ``shape_predictor`` (``dlib/image_processing/shape_predictor.h``): face (or any
object's) landmarks from an image and a box, by a cascade of regression-tree forests
(Kazemi & Sullivan 2014), read from dlib's files and run as a compiled loop (the ``jit``
extra: ``dnnpy/kernels/landmarks.py``) or with numpy, to the same landmarks.

    sp = dnnpy.shape_predictor("shape_predictor_68_face_landmarks.dat")
    shape = sp(img, box)                  # a full_object_detection: shape.part(30), ...
    shapes = sp.batch(img, boxes)         # many boxes (of one image or of several) at once

What it computes, as dlib does (so the landmarks equal dlib's):

* the shape starts as the mean shape, in box coordinates (the unit square is the box: its
  left/top map to 0, right/bottom to 1; dlib's right and bottom are inclusive);
* at each cascade level, the level's feature pixels (each an offset from one landmark of
  the mean shape) move with the current shape by the least-squares similarity transform
  from the mean shape (its 2x2 part, in float32), are mapped into the image and rounded
  (``floor(v + 0.5)``), and read as grey levels: ``(r + g + b) // 3`` of an RGB image, 0
  outside the image;
* every tree of the level walks its splits (left when ``f[idx1] - f[idx2] > thresh``) to a
  leaf, and the leaves are added to the shape in tree order, in float32;
* the final shape is mapped into the image and rounded to integer points.

The float32 sums run in dlib's order (a cumulative sum over the trees), so the results are
dlib's bit for bit wherever the 2x2 similarity, computed here in closed form, rounds to the
same float32 as dlib's SVD-based one (tests/test_shape_predictor.py measures it).
"""

from __future__ import annotations

import functools
import re
import threading

import numpy as np

from . import jit
from .atomic import atomic_write
from .errors import SerializationError
from .geometry import as_rectangle, full_object_detection
from .image.checks import uint8_grey_or_rgb
from .image.matrix_la import pinv
from .parallel import parallel_for
from .serialization.files import read_source, refuse_other_files
from .serialization.packed import decode_stream, encode_ints, from_floats, to_floats

__all__ = ["shape_predictor"]

# dlib's unnormalizing_tform maps (0,0), (1,0), (1,1) to a box's tl, tr, br corners with
# find_affine_transform: Q @ pinv(P), P's columns (x, y, 1) of those three points. pinv(P) is
# a constant, computed once with dlib's own pinv, so the map equals dlib's to the bit.
_UNIT_PINV = np.array(pinv([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]), np.float64)
_MODEL_LOCK = threading.Lock()      # (shape_predictor._compiled_model)


# A tree of up to this many splits finds its leaf by one table lookup of its packed split
# outcomes (2**15 entries for dlib's depth-4 trees); deeper trees walk the outcomes.
_TABLE_SPLITS = 15


@functools.lru_cache(maxsize=None)
def _leaf_table(nsplit):
    """For every pattern of a tree's split outcomes (bit i: split i goes left), the leaf the
    walk from the root reaches (dlib: left child ``2i + 1`` when ``f[idx1] - f[idx2] >
    thresh``, else right child ``2i + 2``), for trees of up to ``_TABLE_SPLITS`` splits:
    uint8 (the 32 KB table of dlib's depth-4 trees stays in the L1 cache). Made once per
    depth (0.6 ms) and shared, read-only."""
    codes = np.arange(2 ** nsplit, dtype=np.int64)
    node = np.zeros_like(codes)
    while True:
        inner = node < nsplit
        if not inner.any():
            table = (node - nsplit).astype(np.uint8)
            table.flags.writeable = False
            return table
        left = (codes >> np.minimum(node, nsplit - 1)) & 1
        node = np.where(inner, 2 * node + 2 - left, node)


class _Level:
    """One cascade level: its feature pixels (anchor landmark, offset) and its forest, all
    trees of one depth: splits ``idx1``, ``idx2``, ``thresh`` (trees x splits) and leaves
    (trees x leaves x 2*parts), with what the vectorised run needs precomputed."""

    __slots__ = ("anchor", "deltas", "idx1", "idx2", "thresh", "leaves", "ntrees", "nsplit",
                 "depth", "width", "anchor_cols", "dx", "dy", "leaf_rows", "leaf_base", "table",
                 "pairs", "limit")

    def __init__(self, anchor, deltas, idx1, idx2, thresh, leaves):
        self.anchor, self.deltas = anchor, deltas
        self.ntrees, self.nsplit = idx1.shape
        self.depth = int(self.nsplit).bit_length()
        self.table = _leaf_table(self.nsplit) if 0 < self.nsplit <= _TABLE_SPLITS else None
        # a table's trees get 8 or 16 outcome bits (padded with splits that never go left:
        # f[0] - f[0] > inf), so the outcomes of all trees pack into one uint8/uint16 each
        self.width = self.nsplit if self.table is None else 8 if self.nsplit <= 8 else 16
        pad = ((0, 0), (0, self.width - self.nsplit))
        # every split of every tree in one row, so one take() reads all of a level's splits
        self.idx1 = np.pad(idx1, pad).ravel()
        self.idx2 = np.pad(idx2, pad).ravel()
        self.thresh = np.pad(thresh, pad, constant_values=np.inf).ravel()
        # what the run reads: both pixels of every split in one take(), and the thresholds
        # as int16 limits, as the differences of grey levels are integers: d > t exactly
        # when d > floor(t) (a NaN threshold never goes left, as in dlib; +-inf as ever)
        self.pairs = np.concatenate([self.idx1, self.idx2]).astype(np.intp)
        with np.errstate(invalid="ignore"):
            limit = np.floor(np.nan_to_num(self.thresh.astype(np.float64), nan=np.inf))
        self.limit = np.clip(limit, -256, 255).astype(np.int16)
        self.leaves = leaves
        # the shape's columns of the anchors' x, then of their y: (2, F) after a reshape
        self.anchor_cols = np.concatenate([2 * anchor, 2 * anchor + 1]).astype(np.intp)
        self.dx, self.dy = deltas[:, 0].copy(), deltas[:, 1].copy()
        self.leaf_rows = leaves.reshape(-1, leaves.shape[2])
        self.leaf_base = (np.arange(self.ntrees) * leaves.shape[1])[:, None]

    def splits(self):
        """``(idx1, idx2, thresh)``, each trees x splits."""
        shape = (self.ntrees, self.width)
        return tuple(a.reshape(shape)[:, :self.nsplit] for a in (self.idx1, self.idx2, self.thresh))

    def leaves_reached(self, f):
        """The leaf each tree reaches, (trees, n), for the feature pixel values ``f`` (n, F):
        every split of every tree is decided at once, then each tree's leaf is looked up
        from its outcomes (or walked through them, for trees too deep for a table)."""
        n = len(f)
        both = f.take(self.pairs, axis=1)
        half = len(self.idx1)
        left = np.subtract(both[:, :half], both[:, half:]) > self.limit
        if self.table is not None:
            code = np.packbits(left.reshape(-1), bitorder="little")
            code = code.view("<u2") if self.width == 16 else code
            return self.table.take(code.reshape(n, self.ntrees).T)
        bits = left.reshape(n, self.ntrees, self.nsplit).transpose(1, 0, 2).reshape(-1)
        base = np.arange(self.ntrees * n).reshape(self.ntrees, n) * self.nsplit
        node = np.zeros((self.ntrees, n), np.intp)
        for _ in range(self.depth):
            node = 2 * node + 2 - bits.take(base + node)
        return node - self.nsplit


class shape_predictor:
    """dlib's ``shape_predictor``: ``shape_predictor(path)`` reads a dlib file (the 5- and
    68-point face models; a path, a binary file object or the bytes); ``sp(img, box)`` gives
    a ``full_object_detection``; ``sp.batch`` runs many boxes at once; ``sp.save(path)`` and
    ``dnnpy.serialize(sp, path)`` write dlib's bytes (the same bytes as the file read), and
    ``sp.deserialize(r)`` reads one from a file holding more (dlib's detector files: a net,
    then a shape predictor).

    ``img``: H x W (grey) or H x W x 3 (RGB) uint8, as dlib's Python API takes; ``box``: a
    ``rectangle`` (dlib's or dnnpy's), an ``mmod_rect`` or ``(left, top, right, bottom)``.
    """

    def __init__(self, path=None):
        self.initial_shape = np.zeros(0, np.float32)
        self.levels: list[_Level] = []
        self._kernel_model = None
        if path is not None:       # a path, a binary file object or the file's bytes
            data, path = read_source(path)
            refuse_other_files(data, path, "a shape predictor")
            try:
                self._read(np.frombuffer(data, np.uint8), path, 0, strict=True)
            except SerializationError as e:
                raise _what_it_is(data, path) or e from None

    # -- dlib's accessors -----------------------------------------------------------------
    def num_parts(self) -> int:
        return len(self.initial_shape) // 2

    def num_features(self) -> int:
        """The leaves of all trees (dlib's ``num_features``)."""
        return sum(lv.leaves.shape[0] * lv.leaves.shape[1] for lv in self.levels)

    def __repr__(self):
        return (f"shape_predictor({self.num_parts()} parts, {len(self.levels)} cascade levels, "
                f"{sum(lv.leaves.shape[0] for lv in self.levels)} trees)")

    # -- running ----------------------------------------------------------------------------
    def __call__(self, img, box) -> full_object_detection:
        """The landmarks of the object in ``box`` of ``img`` (dlib's ``sp(img, rect)``)."""
        return self.batch(img, [box])[0]

    def batch(self, images, boxes) -> list:
        """Landmarks for many boxes at once: ``batch(img, boxes)`` (one image), or
        ``batch(images, boxes_per_image)`` (a list of images and a list of box lists; the
        result is a list of lists). Vectorised over boxes and trees."""
        if isinstance(images, np.ndarray):
            rects = [as_rectangle(b, "shape_predictor") for b in boxes]
            return self._run([uint8_grey_or_rgb(images, "shape_predictor")], np.zeros(len(rects), np.int64), rects)
        images = list(images)
        boxes = list(boxes)
        if len(images) != len(boxes):
            raise ValueError(f"shape_predictor.batch: {len(images)} images but {len(boxes)} box lists")
        checked = [uint8_grey_or_rgb(im, "shape_predictor") for im in images]
        rects = [[as_rectangle(b, "shape_predictor") for b in bs] for bs in boxes]
        owner = np.repeat(np.arange(len(checked)), [len(r) for r in rects])
        flat = self._run(checked, owner, [r for rs in rects for r in rs])
        out, at = [], 0
        for rs in rects:
            out.append(flat[at:at + len(rs)])
            at += len(rs)
        return out

    def _run(self, images, owner, rects, chunk=32):
        if rects and self.levels:
            done = self._run_compiled(images, owner, rects)
            if done is not None:
                return done
        # boxes per pass: the leaf rows of a pass's boxes are read from the same trees, so
        # larger passes read memory better until their (trees, boxes, 2P) rows outgrow the
        # cache (68 points on dlib's photos: 8 boxes 1.11 ms a box, 32: 0.88, 48: 0.96)
        out = []
        for s in range(0, len(rects), chunk):
            out.extend(self._run_chunk(images, owner[s:s + chunk], rects[s:s + chunk]))
        return out

    def _run_chunk(self, images, owner, rects):
        if not rects:
            return []
        if not self.levels:
            raise ValueError("shape_predictor: it holds no model (read one: shape_predictor(path))")
        m, b = _unnormalizing(_ltrb(rects))
        b = b[:, :, None] + 0.5             # (with dlib's rounding half: added at once)
        n = len(rects)
        groups = [_Pixels(images[0], None)] if len(images) == 1 else [
            _Pixels(images[k], np.nonzero(owner == k)[0]) for k in np.unique(owner)]
        shape = np.tile(self.initial_shape, (n, 1))
        # one buffer for every level's leaf rows (fresh large arrays would be fresh pages)
        rows_buffer = np.empty((max(lv.ntrees for lv in self.levels) + 1,) + shape.shape, np.float32)
        weights, fixed = self._mean_shape
        for lv in self.levels:
            sim = (_similarity(weights, shape) if fixed is None else        # (n, 2, 2) float32
                   np.broadcast_to(fixed.reshape(2, 2), (n, 2, 2)))
            # dlib: tform * delta + shape[anchor], in float32: (n, 2, F) x and y
            pts = sim[:, :, 0, None] * lv.dx + sim[:, :, 1, None] * lv.dy
            pts += shape.take(lv.anchor_cols, axis=1).reshape(n, 2, -1)
            f = _pixels(groups, m, b, pts)                                       # (n, F) int16
            leaf = lv.leaves_reached(f)                                          # (trees, n)
            # shape += leaf, tree after tree, in float32: numpy reduces over an outer axis one
            # row after the other (no pairwise summation), which is dlib's order
            # (tests/test_shape_predictor.py checks that this numpy still does)
            rows = rows_buffer[:lv.ntrees + 1]
            rows[0] = shape
            # (mode "clip": the indices are in range, and "raise" would buffer the output)
            lv.leaf_rows.take(lv.leaf_base + leaf, axis=0, out=rows[1:], mode="clip")
            np.add.reduce(rows, axis=0, out=shape)
        px, py = _to_image(m, b, shape.reshape(n, -1, 2).transpose(0, 2, 1)).transpose(1, 0, 2)
        return [full_object_detection.from_xy(r, x, y) for r, x, y in zip(rects, px.tolist(), py.tolist())]

    def _run_compiled(self, images, owner, rects, boxes_per_task=8):
        """``_run`` by the compiled cascade (``dnnpy/kernels/landmarks.py``), box by box, the
        boxes of a batch on dnnpy's threads; None when the kernels do not run."""
        box = _ltrb(rects)
        out = np.empty((len(rects), 2, self.num_parts()), np.int64)
        model = self._compiled_model()
        # a batch's boxes come image after image (owner is sorted)
        ends = np.searchsorted(owner, np.arange(len(images)), side="right")
        tasks = []
        for k, img in enumerate(images):
            img = img if img.ndim == 3 else img[:, :, None]
            begin = 0 if k == 0 else ends[k - 1]
            tasks += [(img, s, min(s + boxes_per_task, ends[k]))
                      for s in range(begin, ends[k], boxes_per_task)]

        ran = [False] * len(tasks)

        def run(i):
            img, first, last = tasks[i]
            ran[i] = jit.call("landmarks", "cascade", img, box, _UNIT_PINV, first, last, *model, out)

        run(0)
        if not ran[0]:
            return None
        parallel_for(1, len(tasks), run)
        if not all(ran):        # the kernels were turned off meanwhile (one failed to compile)
            return None
        return [full_object_detection.from_xy(r, x, y)
                for r, x, y in zip(rects, out[:, 0].tolist(), out[:, 1].tolist())]

    def _compiled_model(self):
        """The cascade as the compiled kernel takes it (its arguments after ``last``, up to
        ``out``): made at the first compiled run and kept (under a lock: calls from
        several threads make it once)."""
        with _MODEL_LOCK:
            if self._kernel_model is None:
                self._kernel_model = self._make_compiled_model()
            return self._kernel_model

    def _make_compiled_model(self):
        """See ``_compiled_model``."""
        lvs = self.levels
        weights, fixed = self._mean_shape
        fixed = np.full(4, np.nan, np.float32) if fixed is None else fixed
        feat_off = np.cumsum([0] + [len(lv.anchor) for lv in lvs]).astype(np.int64)
        nsplit = np.array([lv.nsplit for lv in lvs], np.int64)
        # each tree's splits without the table's padding, one row (idx1, idx2, limit)
        # each: int16 where the feature indices fit (a tree's 15 splits then fill 90
        # bytes, where the walk reads them)
        splits = np.stack([np.concatenate([
            getattr(lv, name).reshape(lv.ntrees, lv.width)[:, :lv.nsplit].ravel() for lv in lvs])
            for name in ("idx1", "idx2", "limit")], axis=1)
        fits = max(len(lv.anchor) for lv in lvs) <= np.iinfo(np.int16).max
        splits = splits.astype(np.int16 if fits else np.int32)
        return (self.initial_shape, weights, fixed, feat_off,
                np.concatenate([lv.dx for lv in lvs]), np.concatenate([lv.dy for lv in lvs]),
                np.concatenate([lv.anchor for lv in lvs]).astype(np.int64),
                nsplit, splits, np.array([lv.ntrees for lv in lvs], np.int64),
                self._joined_leaves())

    def _joined_leaves(self):
        """Every level's leaves in one (rows, 2P) array, the levels' ``leaves`` becoming
        views of it (a copy of the leaves, once; their memory is not doubled)."""
        lvs = self.levels
        joined = np.concatenate([lv.leaf_rows for lv in lvs])
        at = 0
        for lv in lvs:
            rows = lv.leaf_rows.shape[0]
            lv.leaf_rows = joined[at:at + rows]
            lv.leaves = lv.leaf_rows.reshape(lv.leaves.shape)
            at += rows
        return joined

    # -- files ------------------------------------------------------------------------------
    def save(self, path):
        """Write dlib's bytes for this predictor to ``path`` (atomically)."""
        atomic_write(path, self.to_bytes())

    def to_bytes(self) -> bytes:
        """dlib's serialization of the predictor (``serialize(sp, out)``)."""
        return encode_ints(self._ints())

    def serialize(self, w):
        """dlib's record, for ``dnnpy.serialize`` and files holding several objects."""
        w.raw(self.to_bytes())

    def deserialize(self, r):
        """Read dlib's record at ``r``'s position (the rest of the data may hold more)."""
        b = np.frombuffer(r.data, np.uint8)
        r.pos = self._read(b[r.pos:], r.what, r.pos, strict=False) + r.pos

    def _ints(self):
        """Every packed integer of dlib's record, in order (floats as mantissa, exponent)."""
        parts = [np.array([1], np.int64), _matrix_ints(self.initial_shape),
                 np.array([len(self.levels)], np.int64)]
        for lv in self.levels:
            idx1, idx2, thresh = lv.splits()
            trees, nsplit = idx1.shape
            nleaf, width = lv.leaves.shape[1], lv.leaves.shape[2]
            tm, te = from_floats(thresh)
            splits = np.stack([idx1, idx2, tm, te], axis=2).reshape(trees, -1)
            lm, le = from_floats(lv.leaves)
            leaf_floats = np.stack([lm, le], axis=3).reshape(trees, nleaf, -1)
            leaf_head = np.broadcast_to(np.array([-width, -1], np.int64), (trees, nleaf, 2))
            leaves = np.concatenate([leaf_head, leaf_floats], axis=2).reshape(trees, -1)
            tree = np.concatenate([np.full((trees, 1), nsplit), splits, np.full((trees, 1), nleaf),
                                   leaves], axis=1)
            parts += [np.array([trees], np.int64), tree.ravel()]
        parts.append(np.array([len(self.levels)], np.int64))
        for lv in self.levels:
            parts += [np.array([len(lv.anchor)], np.int64), lv.anchor.astype(np.int64)]
        parts.append(np.array([len(self.levels)], np.int64))
        for lv in self.levels:
            dm, de = from_floats(lv.deltas)
            parts += [np.array([len(lv.deltas)], np.int64), np.stack([dm, de], axis=2).ravel()]
        return np.concatenate(parts)

    def _read(self, b, what, offset, strict):
        """Parse dlib's record from the uint8 array ``b`` (at byte ``offset`` of ``what``);
        returns the bytes it took. On any error ``self`` is unchanged."""
        # int32: a shape predictor's integers are sizes, indices and 24-bit mantissas
        stream = decode_stream(b, what, offset, partial=not strict, dtype=np.int32)
        p = _Parser(stream, what, offset)
        version = p.int("the shape_predictor version")
        if version != 1:
            raise p.error(f"expected dlib::shape_predictor version 1, found {version}")
        initial = p.matrix("the initial shape")
        if len(initial) == 0 or len(initial) % 2:
            raise p.error(f"the initial shape has {len(initial)} values; expected 2 per landmark")
        nparts = len(initial) // 2
        nlevels = p.size("the number of cascade levels")
        forests = [p.forest(i, 2 * nparts) for i in range(nlevels)]
        if p.size("the number of anchor lists") != nlevels:
            raise p.error(f"expected {nlevels} anchor lists (one per cascade level)")
        anchors = []
        for i in range(nlevels):
            a = p.ints(p.size(f"level {i}'s number of feature pixels"), f"level {i}'s anchors")
            if len(a) and (a.min() < 0 or a.max() >= nparts):
                raise p.error(f"level {i}: an anchor landmark index is outside 0..{nparts - 1}")
            anchors.append(a)
        if p.size("the number of delta lists") != nlevels:
            raise p.error(f"expected {nlevels} delta lists (one per cascade level)")
        levels = []
        for i, (a, (idx1, idx2, thresh, leaves)) in enumerate(zip(anchors, forests)):
            nd = p.size(f"level {i}'s number of deltas")
            if nd != len(a):
                raise p.error(f"level {i} has {len(a)} anchors but {nd} deltas")
            deltas = p.floats(2 * nd, f"level {i}'s deltas").reshape(nd, 2)
            if idx1.size and max(idx1.max(), idx2.max()) >= nd:
                raise p.error(f"level {i}: a split reads feature pixel "
                              f"{max(idx1.max(), idx2.max())} of {nd}")
            levels.append(_Level(a, deltas, idx1, idx2, thresh, leaves))
        if strict and p.at < len(stream):
            raise p.error(f"expected the end of the file after the shape predictor, but "
                          f"{len(b) - stream.start(p.at)} more bytes follow")
        self.initial_shape, self.levels = initial, levels
        self._mean_shape = _mean_shape_weights(initial)
        self._kernel_model = None
        return stream.start(p.at) if p.at < len(stream) else len(b)


class _Parser:
    """Reads the structure of dlib's shape_predictor record from its decoded integers,
    checking every size against what remains; errors name the byte offset."""

    def __init__(self, stream, what, offset):
        self.v, self.stream, self.what, self.offset, self.at = stream.values, stream, what, offset, 0

    def error(self, message, at=None):
        i = self.at if at is None else at
        n = len(self.stream)
        byte = self.offset + (self.stream.start(i) if i < n else self.stream.start(n - 1) + 1 if n else 0)
        return SerializationError(f"{self.what}: shape_predictor: {message} (at byte offset {byte})")

    def need(self, count, what):
        if count > len(self.v) - self.at:
            raise self.error(f"expected {what} but the data ended (truncated?)")

    def int(self, what):
        self.need(1, what)
        self.at += 1
        return int(self.v[self.at - 1])

    def size(self, what):
        n = self.int(what)
        if n < 0 or n > len(self.v) - self.at:
            raise self.error(f"{what} is {n}, but only {len(self.v) - self.at} values remain", self.at - 1)
        return n

    def ints(self, n, what):
        """The next ``n`` integers, a copy (a view would keep the whole decoded stream,
        133 MB for the 68-point model, alive as long as the predictor)."""
        self.need(n, what)
        out = self.v[self.at:self.at + n].copy()
        self.at += n
        return out

    def floats(self, n, what):
        pairs = self.ints(2 * n, what)
        return to_floats(pairs[0::2], pairs[1::2])

    def matrix(self, what):
        nr, nc = -self.int(f"the rows of {what}"), -self.int(f"the columns of {what}")
        if nr < 0 or nc != 1:
            raise self.error(f"{what}: expected a column vector (dlib's matrix<float,0,1>), found "
                             f"{nr} x {nc}", self.at - 2)
        return self.floats(nr, what)

    def forest(self, level, width):
        """A level's trees, all of one depth: (idx1, idx2, thresh, leaves)."""
        ntrees = self.size(f"level {level}'s number of trees")
        if ntrees == 0:
            z = np.zeros((0, 0), np.int64)
            return z, z, np.zeros((0, 0), np.float32), np.zeros((0, 1, width), np.float32)
        nsplit = int(self.v[self.at]) if self.at < len(self.v) else -1
        nleaf = nsplit + 1
        if nsplit < 0 or nleaf & (nleaf - 1):
            raise self.error(f"level {level}: a tree has {nsplit} splits; dlib's trees are complete "
                             f"(2**depth - 1 splits)")
        tree_len = 1 + 4 * nsplit + 1 + nleaf * (2 + 2 * width)
        self.need(ntrees * tree_len, f"level {level}'s {ntrees} trees")
        t = self.v[self.at:self.at + ntrees * tree_len].reshape(ntrees, tree_len)
        heads = 1 + 4 * nsplit
        leaves = t[:, heads + 1:].reshape(ntrees, nleaf, 2 + 2 * width)
        bad = ((t[:, 0] != nsplit) | (t[:, heads] != nleaf)
               | (leaves[:, :, 0] != -width).any(axis=1) | (leaves[:, :, 1] != -1).any(axis=1))
        if bad.any():
            first = int(np.nonzero(bad)[0][0])
            raise self.error(f"level {level}, tree {first}: expected {nsplit} splits and {nleaf} leaves "
                             f"of {width} values like the level's first tree (trees of one level "
                             f"have one depth)", self.at + first * tree_len)
        splits = t[:, 1:heads].reshape(ntrees, nsplit, 4)
        idx1, idx2 = splits[:, :, 0].copy(), splits[:, :, 1].copy()
        if nsplit and min(idx1.min(), idx2.min()) < 0:
            raise self.error(f"level {level}: a split has a negative feature index")
        thresh = to_floats(splits[:, :, 2], splits[:, :, 3])
        values = leaves[:, :, 2:]
        leaf = to_floats(values[:, :, 0::2], values[:, :, 1::2])
        self.at += ntrees * tree_len
        return idx1, idx2, thresh, leaf


def _matrix_ints(values):
    m, e = from_floats(values)
    return np.concatenate([[-len(values), -1], np.stack([m, e], axis=1).ravel()]).astype(np.int64)


def _what_it_is(data, path):
    """For a file that did not read as a shape predictor: an error saying what it is when
    it starts like a dlib net (a version string such as ``loss_mmod_`` within its first
    bytes: a length, then that many name characters), else None."""
    for m in re.finditer(rb"\x01(?=([\x04-\x40]))", data[:64]):     # a packed length 4..64
        n = m.group(1)[0]
        name = data[m.start() + 2:m.start() + 2 + n]
        if len(name) == n and re.fullmatch(rb"[A-Za-z0-9_<>]+", name) and b"_" in name:
            return SerializationError(f"{path}: not a shape predictor: it holds {name.decode()!r} "
                                      f"records (a dlib net is read with dnnpy.deserialize(path, "
                                      f"net_type()))")
    return None


def _ltrb(rects):
    """The boxes' left, top, right, bottom: (n, 4) float64."""
    return np.array([(r.left(), r.top(), r.right(), r.bottom()) for r in rects], np.float64)


def _unnormalizing(box):
    """dlib's ``unnormalizing_tform`` of each box (left, top, right, bottom): ``(m, b)``,
    (n, 2, 2) and (n, 2) float64, summed in dlib's order (``Q @ pinv(P)``)."""
    q = box[:, [[0, 2, 2], [1, 1, 3]]]                  # x and y of the tl, tr, br corners
    pi = _UNIT_PINV
    r = q[:, :, 0, None] * pi[0] + q[:, :, 1, None] * pi[1] + q[:, :, 2, None] * pi[2]
    return r[:, :, :2], r[:, :, 2]


def _similarity(weights, shape):
    """The 2x2 part of dlib's ``find_similarity_transform(mean shape, shape[i])`` for each
    shape (n, 2P, float32), in float64, cast to float32 as dlib does: ``shape @ weights``
    (``_mean_shape_weights``)."""
    # (the float32 shape is multiplied as float64, the weights' type, without a cast copy)
    return np.matmul(shape, weights).astype(np.float32).reshape(-1, 2, 2)


def _mean_shape_weights(initial):
    """For the mean shape (2P float32), the weights (2P x 4) whose product with a shape is the
    similarity transform from the mean shape to it, ``[[a, -b], [b, a]]`` flattened. For 2-D
    points Umeyama's SVD solution (dlib's) is ``a = (cov00 + cov11) / sigma`` and ``b = (cov10
    - cov01) / sigma``, with the covariance of the centred points (the shape's mean drops out,
    as the mean shape's centred points sum to 0) and sigma the centred mean shape's mean
    squared norm. When sigma is 0 (one point, or all points equal), dlib's transform is the
    identity."""
    parts = len(initial) // 2
    frm = initial.reshape(-1, 2).astype(np.float64)
    c = frm - frm.mean(axis=0)
    sigma = (c * c).sum() / parts
    w = np.zeros((len(initial), 4))
    if sigma == 0:
        return w, np.array([1, 0, 0, 1], np.float32)
    w[0::2, 0], w[1::2, 0] = c[:, 0], c[:, 1]          # a: tx fx + ty fy
    w[0::2, 2], w[1::2, 2] = -c[:, 1], c[:, 0]         # b: ty fx - tx fy
    w[:, 0] /= parts * sigma
    w[:, 2] /= parts * sigma
    w[:, 3], w[:, 1] = w[:, 0], -w[:, 2]
    return w, None


def _to_image(m, b, pts):
    """Shape coordinates ``pts`` (n, 2, k: x and y, float32) mapped into each box's image
    (``m``, ``b``: the unnormalizing transforms, ``b`` as ``(n, 2, 1)`` with 0.5 added) in
    float64 as dlib's ``m * p + b``, and rounded as dlib's ``point`` conversion, ``floor(v +
    0.5)``: int64 (n, 2, k). (One matmul, of the float32 points as float64, and ``b + 0.5``
    added at once: the float64 sums may differ from dlib's in the last bit, which moves a
    point only within 1e-13 of a half pixel.)"""
    out = np.matmul(m, pts)
    out += b
    return np.floor(out, out=out).astype(np.int64)


_RGB_SUM = np.ones(3, np.int16)


class _Pixels:
    """One image's pixels as a shape predictor reads them (``rows``: its boxes' rows in the
    run, None when it is the only image): the flat pixels and the bounds, made once a run."""

    __slots__ = ("flat", "width", "limits", "rows", "rgb")

    def __init__(self, img, rows):
        h, w = img.shape[:2]
        self.rgb = img.ndim == 3
        self.flat = img.reshape(-1, 3) if self.rgb else img.reshape(-1)
        self.width, self.rows = w, rows
        self.limits = np.array([[w], [h]], np.uint64)


def _pixels(groups, m, b, pts):
    """Grey levels (int16, n x F) at the feature pixels ``pts`` (n, 2, F, shape coordinates),
    0 outside the image; an RGB pixel's grey level is ``(r + g + b) // 3`` (dlib's
    ``get_pixel_intensity``). ``groups``: ``_Pixels``, one per image."""
    xy = _to_image(m, b, pts)
    out = None if len(groups) == 1 else np.empty(xy.shape[::2], np.int16)
    for g in groups:
        at = xy if out is None else xy[g.rows]
        # negative coordinates wrap to huge unsigned ones: one compare for x and y
        inside = at.view(np.uint64) < g.limits
        inside = inside[:, 0] & inside[:, 1]
        index = at[:, 1] * g.width
        index += at[:, 0]
        # (mode "clip": a point outside reads some pixel, zeroed below)
        if len(g.flat) == 0:                    # an empty image: every point is outside
            v = np.zeros(index.shape, np.int16)
        elif g.rgb:
            v = g.flat.take(index, axis=0, mode="clip").astype(np.int16) @ _RGB_SUM
            v //= 3
        else:
            v = g.flat.take(index, mode="clip").astype(np.int16)
        v *= inside
        if out is None:
            return v
        out[g.rows] = v
    return out
