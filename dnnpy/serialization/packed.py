"""dlib's packed integers and floats (``dlib/serialize.h``) a whole stream at a time, with numpy.

A shape predictor file is tens of millions of packed values and nothing else: integers
(a control byte, ``size | 0x80 if negative``, then ``size`` magnitude bytes, little-endian)
and floats (two integers: mantissa, exponent). ``primitives.Reader`` reads one value per
Python call, which takes minutes for such a file. With the ``jit`` extra ``decode_stream``
and ``to_floats`` are compiled loops (``dnnpy/kernels/packed.py``: one pass, integer after
integer, as dlib reads them); with numpy ``decode_stream`` decodes the whole stream in a few
passes:

1. where each integer starts. An integer's length depends on its first byte, so the starts
   form a chain that cannot be cut anywhere; the stream is cut into segments, and in each
   one the chains from its first nine bytes (one of which is a real start, as no integer
   is longer than nine bytes) are walked until they meet (a chain that reads a magnitude
   byte as a control byte soon lands on a real start or on an invalid byte). From those
   meeting points all segments are walked in lockstep (``_walk``), two numpy calls a step,
   each block of steps transposed on a second thread meanwhile.
2. the values, group of segments by group on several threads: a group's starts from the
   walk (its rows clamped at each segment's end, one of each run of equal values), the
   chain checked (each start is the one before plus its length), the control bytes and
   the magnitude bytes gathered, lengths, masks and signs looked up by control byte.
   Nothing as large as the stream is allocated but the lengths, the walk and the values
   (fresh memory costs a page fault per 4 KB, which dominated the first version).
3. ``to_floats`` / ``from_floats``: floats from and to their (mantissa, exponent) pairs,
   as dlib's ``float_details`` does; ``encode_ints`` writes integers back byte for byte.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import jit
from ..errors import SerializationError
from ..parallel import parallel_for
from ..tensor_tools.transient import transient_empty

__all__ = ["decode_stream", "PackedStream", "encode_ints", "to_floats", "from_floats"]

_SEGMENT = 32768       # bytes per segment of the lockstep walk (measured on a 100 MB file:
                       # 8 KB segments, one page of each per step, ran 2x slower; 16 to 64 KB
                       # alike); smaller streams get smaller ones, down to _MIN_SEGMENT, so
                       # that some _LANES segments walk side by side (a 100 KB file: 30 ms -> 2;
                       # the 9 MB 5-point predictor: 0.12 s with 256 lanes, 0.084 s with 2048,
                       # fewer steps of numpy calls; files from 65 MB on keep 32 KB segments)
_MIN_SEGMENT = 512
_LANES = 2048
_BLOCK = 256           # lockstep steps between marking the starts they reached
_SYNC_STEPS = 256      # most steps to make a segment's candidate chains meet
_MAX_STEP_SEGMENTS = 4     # most lockstep steps, in segments (partial data: a segment holds at
                           # most segment / 2 integers, and up to 3 segments whose chains did not
                           # meet may follow it)
_CHUNK = 1 << 20       # bytes per chunk of the decoding (its temporaries stay in cache)
_BRIDGE_BYTES = 1 << 23    # most bytes walked one integer at a time (_bridge): about 1 s
_INF_EXP, _NINF_EXP, _NAN_EXP = 32000, 32001, 32002


def _control_ok(b):
    n = b & 0x0F
    return ((b & 0x70) == 0) & (n >= 1) & (n <= 8)


# by control byte (one gather each instead of a few passes of arithmetic): whether it is
# one, its integer's length, the mask of its first three magnitude bytes, its sign
_CONTROLS = np.arange(256, dtype=np.uint8)
_VALID = _control_ok(_CONTROLS)
_LENGTH = (_CONTROLS & 0x0F) + np.uint8(1)
_LOW_MASK = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], np.uint32)[np.minimum(_CONTROLS & 0x0F, 3)]
_SIGN = np.where(_CONTROLS & 0x80, -1, 1).astype(np.int8)
class PackedStream:
    """The packed integers of a byte stream: ``values`` (in order) and, for error messages
    and for what a record took, ``start(i)``, the byte offset of integer ``i`` (``len(b)``
    for ``i == len(values)``), recomputed from the walk for the one group of segments that
    holds it, so that no array of every offset is kept."""

    def __init__(self, values, group_starts, counts, size):
        self.values = values
        self._group_starts, self._size = group_starts, size
        self._before = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def __len__(self):
        return len(self.values)

    def start(self, i: int) -> int:
        if i >= len(self.values):
            return self._size
        g = int(np.searchsorted(self._before, i, side="right")) - 1
        return int(self._group_starts(g)[i - self._before[g]])

    def starts(self) -> np.ndarray:
        """Every integer's byte offset (int64), for tests and tools."""
        if len(self.values) == 0:
            return np.zeros(0, np.int64)
        groups = [self._group_starts(g) for g in range(len(self._before) - 1)]
        return np.concatenate(groups)[:len(self.values)].astype(np.int64)


def decode_stream(b: np.ndarray, what: str, offset: int = 0, partial: bool = False,
                  dtype=np.int64) -> PackedStream:
    """The packed integers in ``b`` (a uint8 array) as a ``PackedStream`` whose values have
    ``dtype`` (int64, or int32 for records whose integers all fit: a wider one raises). By
    default ``b`` must hold packed integers and nothing else, the last ending at its end.
    ``partial``: the data may go on with something else (a record followed by other
    records): the integers are decoded up to the first byte that cannot be one, and the
    caller reads only as many as its record has. ``what`` and ``offset`` (of ``b`` in the
    file) name the place in errors, as ``SerializationError``."""
    n = len(b)
    dtype = np.dtype(dtype)
    if n == 0:
        return PackedStream(np.zeros(0, dtype), None, [], 0)
    compiled = _decode_compiled(b, what, offset, partial, dtype)
    if compiled is not None:
        return compiled
    # (the large temporaries in plain pages: tensor_tools/transient.py says why)
    step = transient_empty(n + 16, np.uint8)  # an integer's length, read from its control byte
    _map_chunks(lambda lo: _lengths(b[lo:lo + _CHUNK], step[lo:min(n, lo + _CHUNK)]), range(0, n, _CHUNK))
    step[n:] = 0                              # a chain that reaches the end stays there
    segment = int(np.clip(n // _LANES, _MIN_SEGMENT, _SEGMENT))
    sync = _sync_points(b, step, n, segment)
    if not partial:
        sync = _bridge(b, sync, segment, what, offset)
    gaps = np.diff(sync)
    blocks, stuck = _walk(step, sync, min(_MAX_STEP_SEGMENTS * segment // 2, int(gaps.max()) // 2 + 2))
    step = None              # freed: the decoding reads the control bytes themselves
    if stuck is not None and not partial:
        # a walk this long means segments whose chains never met: data that is not packed
        # integers (a record followed by other data reads with partial=True, and stops)
        raise SerializationError(f"{what}: no packed integers line up near byte offset "
                                 f"{offset + stuck}: not dlib's encoding there")
    per_group = max(1, _CHUNK // segment)
    bounds = list(range(0, len(sync) - 1, per_group)) + [len(sync) - 1]
    target = sync[1:].astype(blocks[0].dtype)

    def group_starts(g):
        """The starts in segments ``bounds[g]`` to ``bounds[g + 1]``: their chains in
        order (each row of the walk clamped at its segment's end, which is the next
        segment's first start), one of each run of equal values, less the last segment's
        end (the next group's first start, or the data's end)."""
        s0, s1 = bounds[g], bounds[g + 1]
        rows = np.empty((s1 - s0, len(blocks), _BLOCK), blocks[0].dtype)
        for i, block in enumerate(blocks):
            rows[:, i, :] = block[s0:s1]
        rows = rows.reshape(s1 - s0, -1)
        np.minimum(rows, target[s0:s1, None], out=rows)
        flat = rows.ravel()
        keep = np.empty(len(flat), bool)
        keep[0] = True
        np.not_equal(flat[1:], flat[:-1], out=keep[1:])
        keep &= flat != target[s1 - 1]
        return flat[keep]

    limit = np.uint64(1 << (8 * dtype.itemsize - 1))

    def decode_group(g):
        """Group ``g``'s values: ``(values, first start, end of its last good integer,
        (index in the group, byte offset, what) of its first bad one or None)``."""
        at = group_starts(g).astype(np.intp)
        if len(at) == 0:
            return np.zeros(0, dtype), None, None, None
        lo = int(at[0])
        at -= lo
        if lo + int(at[-1]) + 9 < n:
            src = b[lo:]
        else:           # the last integers: their magnitude bytes read from a zero-padded copy
            src = np.zeros(n - lo + 9, np.uint8)
            src[:n - lo] = b[lo:]
        control = src.take(at)
        valid = _VALID.take(control)
        ends = _LENGTH.take(control) + at
        broken = ends[:-1] != at[1:]            # the chain: each start is the one before's end
        problem = None
        if not valid.all() or broken.any():
            first_invalid = int(np.argmax(~valid)) if not valid.all() else len(at)
            first_break = int(np.argmax(broken)) + 1 if broken.any() else len(at)
            if first_invalid <= first_break:
                problem = first_invalid, lo + int(at[first_invalid]), "control"
            else:
                problem = first_break, lo + int(ends[first_break - 1]), "break"
        if problem is None and lo + int(ends[-1]) > n:     # the last one runs past the data
            problem = len(at) - 1, lo + int(at[-1]), "truncated"
        if problem is not None:
            at, control, ends = (x[:problem[0]] for x in (at, control, ends))
        # most integers have 1 to 3 magnitude bytes: those are read for all (masked by
        # size), the rare longer ones apart
        mag = src[1:].take(at).astype(np.uint32)
        mag |= src[2:].take(at).astype(np.uint32) << 8
        mag |= src[3:].take(at).astype(np.uint32) << 16
        mag &= _LOW_MASK.take(control)
        out = mag.view(np.int32) if dtype == np.int32 else mag.astype(dtype)
        wide = np.flatnonzero(control & 0x0C)   # 4 to 8 magnitude bytes
        if len(wide):
            size = control[wide] & 0x0F
            big = mag[wide].astype(np.uint64)
            for j in range(3, 8):
                big |= (src[at[wide] + 1 + j] * (size > j)).astype(np.uint64) << np.uint64(8 * j)
            over = big >= limit
            if over.any():
                k = int(wide[np.argmax(over)])
                problem = k, lo + int(at[k]), "wide"
                big[over] = 0
            out[wide] = big.astype(dtype)
        out *= _SIGN.take(control)
        end = lo + int(ends[-1]) if len(ends) else lo
        return out, lo, end, problem

    results = _map_chunks(decode_group, range(len(bounds) - 1))
    counts = [len(r[0]) for r in results]
    # the first problem in byte order: inside a group, or between two (a group's first
    # start must be where the group before ended)
    good, expect, problem = [], 0, None
    for out, first, end, inside in results:
        if first is None:
            continue
        if first != expect:
            problem = expect, "break"
            break
        if inside is not None:
            good.append(out[:inside[0]])
            problem = inside[1:]
            break
        good.append(out)
        expect = end
    if len(good) == 1:
        values = good[0]
    else:
        values = transient_empty(sum(map(len, good)), dtype)
        np.concatenate(good, out=values)
    del results, good
    stream = PackedStream(values, group_starts, counts, n)
    if partial:
        return stream
    if problem is None and expect != n:
        problem = (stream.start(len(values) - 1) if len(values) else 0), "truncated"
    if problem is not None:
        at, why = problem
        raise _refusal(why, at, b, what, offset, dtype)
    return stream


def _refusal(why, at, b, what, offset, dtype):
    """The error for the stream ``b`` at byte ``at``, both decoders': ``why`` is "control"
    (no control byte there), "wide" (the integer does not fit ``dtype``), "truncated" (the
    data ends inside it) or "break" (the integers do not line up there; ``dtype`` is read
    for "wide" only)."""
    if why == "control":
        return SerializationError(f"{what}: expected a packed integer at byte offset "
                                  f"{offset + at}, found the byte 0x{b[at]:02x}")
    if why == "wide":
        return SerializationError(f"{what}: the packed integer at byte offset {offset + at} "
                                  f"does not fit in {8 * dtype.itemsize} bits")
    if why == "truncated":
        return SerializationError(f"{what}: the data ends inside a packed integer at byte "
                                  f"offset {offset + at} (truncated?)")
    return SerializationError(f"{what}: the packed integers do not line up at byte offset "
                              f"{offset + at}")


# integers between two offsets the compiled decoder keeps (for PackedStream.start)
_CHECKPOINT = 1024
# why the compiled decoder stopped, by its code (dnnpy/kernels/packed.py: OK, CONTROL,
# TRUNCATED, WIDE), as _refusal names it
_STOPS = (None, "control", "truncated", "wide")


def _decode_compiled(b, what, offset, partial, dtype):
    """``decode_stream`` by the compiled decoder (``dnnpy/kernels/packed.py``): one pass,
    integer after integer, keeping the offset of every ``_CHECKPOINT``-th; None when the
    kernels do not run."""
    n = len(b)
    # (an integer takes 2 bytes or more; the pages of the values past the count are never
    # touched, so never allocated: transient_empty maps them without numpy's huge pages)
    values = transient_empty(n // 2 + 1, dtype)
    checkpoints = np.empty(n // (2 * _CHECKPOINT) + 2, np.int64)
    result = np.zeros(3, np.int64)
    limit = np.uint64(1 << (8 * dtype.itemsize - 1))
    if not jit.call("packed", "decode", b, limit, values, _CHECKPOINT, checkpoints, result):
        return None
    count, why, at = (int(v) for v in result)

    def group_starts(g):
        size = min(_CHECKPOINT, count - g * _CHECKPOINT)
        out = np.empty(size, np.int64)
        if not jit.call("packed", "starts_from", b, checkpoints[g], size, out):
            at = int(checkpoints[g])          # (the kernels were turned off meanwhile)
            for k in range(size):
                out[k] = at
                at += 1 + (int(b[at]) & 0x0F)
        return out

    groups = -(-count // _CHECKPOINT)
    counts = [_CHECKPOINT] * (groups - 1) + [count - (groups - 1) * _CHECKPOINT] if groups else []
    stream = PackedStream(values[:count], group_starts, counts, n)
    if partial or _STOPS[why] is None:
        return stream
    raise _refusal(_STOPS[why], at, b, what, offset, dtype)


def _bridge(b, sync, segment, what, offset):
    """``sync`` with a start in every segment whose candidate chains did not meet, found by
    walking the integers one by one from the start before it (Python: about 0.1 us a
    byte): valid data can be ambiguous for the candidate chains (a run of integers 1 to 8,
    ``01 03 01 03 ...``, holds two chains that never meet). At most ``_BRIDGE_BYTES`` are
    walked so (checked first: a hostile file is refused at once); data that is not packed
    integers there is refused, naming the byte offset."""
    unmet = np.flatnonzero(np.diff(sync) > segment + segment // 2)
    if len(unmet) == 0:
        return sync
    total = int((sync[unmet + 1] - sync[unmet]).sum())
    if total > _BRIDGE_BYTES:
        at = int(sync[unmet[0]]) + segment
        raise SerializationError(
            f"{what}: no packed integers line up near byte offset {offset + at}: not dlib's "
            f"encoding there, or {total} bytes of integers whose boundaries the numpy decoder "
            f"cannot find (more than {_BRIDGE_BYTES}; the compiled decoder reads them: "
            f"pip install 'dnnpy[jit]')")
    points = [sync]
    for j in unmet.tolist():
        lo, hi = int(sync[j]), int(sync[j + 1])
        data = b[lo:hi].tobytes()
        at, found, next_segment = 0, [], (lo // segment + 1) * segment - lo
        while at < hi - lo:
            c = data[at]
            if c & 0x70 or not 1 <= c & 0x0F <= 8:
                raise _refusal("control", lo + at, b, what, offset, None)
            at += 1 + (c & 0x0F)
            if next_segment <= at < hi - lo:          # the first start in a new segment
                found.append(lo + at)
                next_segment = ((lo + at) // segment + 1) * segment - lo
        if at != hi - lo:
            raise _refusal("break", lo + at - (1 + (c & 0x0F)), b, what, offset, None)
        points.append(np.array(found, np.int64))
    return np.unique(np.concatenate(points))


def _walk(step, sync, steps):
    """Every segment's chain walked from its meeting point in ``sync``, in lockstep, two
    numpy calls a step (``step``: each byte's length as a control byte, 0 from the data's
    end on): ``(blocks, stuck)``, the blocks of ``_BLOCK`` steps, segment-major (row s:
    segment s's positions; a chain that overshoots its segment's end goes on along the
    next segment's chain, which the caller clamps away) and, when some chain did not reach
    its segment's end within ``steps`` (valid integers are two bytes or more: half the
    longest segment is enough), where the first such one stopped (else None).
    The walk is bound by Python's per-call time; each block is transposed on another
    thread meanwhile."""
    index = np.int32 if len(step) < 2**31 else np.int64
    target = sync[1:].astype(index)
    lengths = np.empty(len(target), np.uint8)
    # two buffers in turn: the walk fills one while the other is transposed
    buffers = [np.empty((_BLOCK, len(target)), index) for _ in range(2)]
    hist = buffers[0]
    hist[0] = sync[:-1]
    stuck = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dnnpy-packed") as pool:
        blocks = []
        for i in range(0, -(-steps // _BLOCK)):
            for k in range(1, _BLOCK):
                np.take(step, hist[k - 1], out=lengths)
                np.add(hist[k - 1], lengths, out=hist[k])
            blocks.append(pool.submit(np.transpose(hist).copy))
            behind = hist[-1] < target
            if not behind.any():
                break
            following = buffers[(i + 1) % 2]
            if i >= 1:
                blocks[-2].result()     # done with the buffer it transposed
            following[0] = hist[-1]
            hist = following
        else:
            stuck = int(hist[-1][behind].min())
        blocks = [f.result() for f in blocks]
    return blocks, stuck


def _lengths(b, out):
    """Each byte's length as a control byte (``1 + size``), into ``out``, without temporaries."""
    np.bitwise_and(b, 0x0F, out=out)
    np.add(out, 1, out=out)


def _sync_points(b, step, n, segment):
    """Offsets known to be integer starts: 0, one near the start of every segment whose
    candidate chains meet, and ``n`` (the end); increasing."""
    firsts = np.arange(segment, n, segment, dtype=np.int64)
    if len(firsts) == 0:
        return np.array([0, n], np.int64)
    # a segment's first nine bytes hold an integer start, or the data's end: the candidates
    # past the end are the end, a valid stop (a segment in the last integer holds no start,
    # and a magnitude byte there that reads as a control byte must not pass for one)
    cand = np.minimum(firsts[:, None] + np.arange(9, dtype=np.int64)[None, :], n)
    live = np.ones(cand.shape, bool)
    inside = cand < n
    live[inside] = _control_ok(b[cand[inside]])
    pos = np.where(live, cand, -1)
    for _ in range(_SYNC_STEPS):
        top = pos.max(axis=1, keepdims=True)
        behind = live & (pos < top)
        if not behind.any():
            break
        moved = pos[behind] + step[pos[behind]]
        inside = moved < n
        keep = np.zeros_like(moved, dtype=bool)
        keep[inside] = _control_ok(b[moved[inside]])
        keep |= moved == n          # the end of the data is a start of nothing, but a valid stop
        pos[behind] = np.where(keep, moved, -1)
        live[behind] = keep
    top = pos.max(axis=1)
    met = live.any(axis=1) & np.all(~live | (pos == top[:, None]), axis=1) & (top < n)
    points = top[met]
    if len(points):     # strictly increasing (a segment whose chains met far ahead is dropped)
        points = points[points > np.maximum.accumulate(np.concatenate([[0], points[:-1]]))]
    return np.concatenate([[0], points, [n]]).astype(np.int64)


def _map_chunks(function, chunks):
    """``[function(lo) for lo in chunks]``, on ``dnnpy.get_num_threads()`` threads
    (``parallel_for``: numpy releases the GIL in its loops; a chunk's temporaries stay in
    cache); the first exception in chunk order is raised."""
    out, errors = [None] * len(chunks), {}

    def run(i):
        try:
            out[i] = function(chunks[i])
        except Exception as e:          # noqa: BLE001 (the first in chunk order is raised)
            errors[i] = e

    parallel_for(0, len(chunks), run)
    if errors:
        raise errors[min(errors)]
    return out


def encode_ints(values: np.ndarray) -> bytes:
    """dlib's packed encoding of each integer in ``values`` (int64), concatenated: the bytes
    ``primitives.Writer.int`` writes one at a time."""
    v = np.asarray(values, np.int64)
    mag = np.abs(v).astype(np.uint64)
    size = np.ones(len(v), np.int64)
    for j in range(1, 8):
        size[mag >= np.uint64(1) << np.uint64(8 * j)] = j + 1
    width = 1 + size
    ends = np.cumsum(width)
    out = np.zeros(int(ends[-1]) if len(v) else 0, np.uint8)
    starts = ends - width
    out[starts] = (size | np.where(v < 0, 0x80, 0)).astype(np.uint8)
    for j in range(8):
        has = np.nonzero(size > j)[0]
        if len(has) == 0:
            break
        out[starts[has] + 1 + j] = ((mag[has] >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(np.uint8)
    return out.tobytes()


def to_floats(mantissa: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """float32 values of dlib's (mantissa, exponent) pairs, as ``Reader.float32``: the value
    ``mantissa * 2**exponent`` rounded to float32; exponents 32000/32001/32002 (and above)
    are +inf, -inf and NaN."""
    m, e = np.asarray(mantissa), np.asarray(exponent)
    if m.shape == e.shape and m.ndim <= 3 and m.dtype.kind == e.dtype.kind == "i":
        out = np.empty(m.shape, np.float32)
        axes = (None,) * (3 - m.ndim)      # (the kernel takes 3-D arrays: views, no copies)
        if jit.call("packed", "to_floats", m[axes], e[axes], out[axes]):
            return out
    # beyond +-400 a float32 has over- or underflowed anyway; int32 for ldexp
    e32 = np.clip(e, -400, 400).astype(np.int32, copy=False)
    m = np.asarray(mantissa).astype(np.float32)
    with np.errstate(over="ignore"):
        if m.size == 0 or np.abs(m).max() < 2.0 ** 24:
            out = np.ldexp(m, e32)       # exact mantissas (dlib's floats have 24 bits): one rounding
        else:                            # wider ones round once, from float64
            out = np.ldexp(np.asarray(mantissa, np.int64).astype(np.float64), e32).astype(np.float32)
    if e.size and e.max() >= _INF_EXP:
        out[e == _INF_EXP] = np.inf
        out[e == _NINF_EXP] = -np.inf
        out[e >= _NAN_EXP] = np.nan
    return out


def from_floats(values: np.ndarray):
    """``(mantissa, exponent)`` int64 arrays of float32 ``values`` as dlib's ``float_details``
    (24 mantissa bits, trailing zero bytes shifted out): ``Writer.float32`` for many."""
    x = np.asarray(values, np.float32).astype(np.float64)
    finite = np.isfinite(x)
    frac, exp = np.frexp(np.where(finite, x, 0.0))
    mantissa = np.trunc(frac * (1 << 24)).astype(np.int64)
    exponent = exp.astype(np.int64) - 24
    for _ in range(8):                       # two's complement shifts, as dlib's int64
        zero_byte = (mantissa & 0xFF) == 0
        if not zero_byte.any():
            break
        mantissa = np.where(zero_byte, mantissa >> 8, mantissa)
        exponent = np.where(zero_byte, exponent + 8, exponent)
    exponent[np.isnan(x)] = _NAN_EXP
    exponent[x == np.inf] = _INF_EXP
    exponent[x == -np.inf] = _NINF_EXP
    mantissa[~finite] = 0
    return mantissa, exponent
