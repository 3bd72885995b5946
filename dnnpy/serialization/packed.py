"""dlib's packed integers and floats (``dlib/serialize.h``) a whole stream at a time, with numpy.

A shape predictor file is tens of millions of packed values and nothing else: integers
(a control byte, ``size | 0x80 if negative``, then ``size`` magnitude bytes, little-endian)
and floats (two integers: mantissa, exponent). ``primitives.Reader`` reads one value per
Python call, which takes minutes for such a file; here the whole stream is decoded in a few
numpy passes:

1. ``token_starts``: where each integer starts. An integer's length depends on its first
   byte, so the starts form a chain that cannot be cut anywhere; the stream is cut into
   segments, and in each one the chains from its first nine bytes (one of which is a real
   start, as no integer is longer than nine bytes) are walked until they meet (a chain that
   reads a magnitude byte as a control byte soon lands on a real start or on an invalid
   byte). From those meeting points all segments are walked in lockstep.
2. ``decode_ints``: the values, a gather per magnitude byte.
3. ``to_floats`` / ``from_floats``: floats from and to their (mantissa, exponent) pairs,
   as dlib's ``float_details`` does; ``encode_ints`` writes integers back byte for byte.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import SerializationError
from ..tensor_tools.threads import get_num_threads

__all__ = ["token_starts", "decode_ints", "encode_ints", "to_floats", "from_floats"]

_SEGMENT = 32768       # bytes per segment of the lockstep walk (measured on a 100 MB file:
                       # 8 KB segments, one page of each per step, ran 2x slower; 16 to 64 KB
                       # alike)
_BLOCK = 256           # lockstep steps between marking the starts they reached
_SYNC_STEPS = 256      # most steps to make a segment's candidate chains meet
_MAX_STEPS = 2 * _SEGMENT  # most lockstep steps: a segment holds at most _SEGMENT / 2 integers,
                           # and up to 3 segments whose chains did not meet may follow it
_CHUNK = 1 << 20       # integers per pass of the checks and the decoding (their temporaries
                       # stay small: fresh large arrays cost a page fault per 4 KB)
_LOW_MASKS = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], np.uint32)   # by magnitude bytes, up to 3
_INF_EXP, _NINF_EXP, _NAN_EXP = 32000, 32001, 32002


def _control_ok(b):
    n = b & 0x0F
    return ((b & 0x70) == 0) & (n >= 1) & (n <= 8)


def token_starts(b: np.ndarray, what: str, offset: int = 0, partial: bool = False) -> np.ndarray:
    """The start of every packed integer in ``b`` (a uint8 array), as int64 offsets into
    ``b``. By default ``b`` must hold packed integers and nothing else, the last ending at its
    end. ``partial``: the data may go on with something else (a record followed by other
    records): the starts are returned up to the first byte that cannot be one, and the
    caller reads only as many as its record has. ``what`` and ``offset`` (of ``b`` in the
    file) name the place in errors."""
    n = len(b)
    if n == 0:
        return np.zeros(0, np.int64)
    step = np.zeros(n + 16, np.uint8)         # an integer's length, read from its control byte
    np.add(b & 0x0F, 1, out=step[:n], dtype=np.uint8)
    step[n:] = 0                              # a chain that reaches the end stays there
    sync = _sync_points(b, step, n)
    is_start = np.zeros(n + 16, np.uint8)
    index = np.int32 if n < 2**31 - 16 else np.int64
    target = sync[1:].astype(index)
    # walk every segment's chain in lockstep, _BLOCK steps at a time, two numpy calls a step;
    # a chain that passes its segment's end goes on along the next segment's chain (the
    # true one, as its end is a start), which only marks starts twice. Whether the chains
    # really line up is checked once, below (control bytes: by decode_ints).
    hist = np.empty((_BLOCK, len(target)), index)
    hist[0] = sync[:-1]
    lengths = np.empty(len(target), np.uint8)
    for _ in range(0, _MAX_STEPS, _BLOCK):
        for k in range(1, _BLOCK):
            np.take(step, hist[k - 1], out=lengths)
            np.add(hist[k - 1], lengths, out=hist[k])
        is_start[hist] = 1
        if not (hist[-1] < target).any():
            break
        hist[0] = hist[-1]
    else:
        # a walk this long means segments whose chains never met: data that is not packed
        # integers (or a record followed by other data, where partial reading stops anyway)
        behind = hist[-1] < target
        if not partial and behind.any():
            at = int(hist[-1][behind].min())
            raise SerializationError(f"{what}: no packed integers line up near byte offset "
                                     f"{offset + at}: not dlib's encoding there")
    out = np.flatnonzero(is_start[:n].view(bool))       # 4x faster than on uint8
    del is_start
    # the chain must be unbroken: each start is the previous one plus its length

    def first_break(lo):
        at = out[lo:lo + _CHUNK + 1]
        bad = at[1:] != at[:-1] + step[at[:-1]]
        return lo + int(np.argmax(bad)) if bad.any() else None

    breaks = _map_chunks(first_break, range(0, len(out) - 1, _CHUNK))
    first_bad = next((i for i in breaks if i is not None), None)
    if partial:     # up to the first break in the chain or the first byte that is no control byte
        out = out if first_bad is None else out[:first_bad + 1]
        valid = _control_ok(b[out])
        return out if valid.all() else out[:int(np.argmax(~valid))]
    if first_bad is not None:
        at = int(out[first_bad] + step[out[first_bad]])
        raise SerializationError(f"{what}: the packed integers (a shape predictor's data) do not line "
                                 f"up at byte offset {offset + at}")
    if int(out[-1] + step[out[-1]]) != n:
        raise SerializationError(f"{what}: the data ends inside a packed integer at byte offset "
                                 f"{offset + int(out[-1])} (truncated?)")
    return out


def _sync_points(b, step, n):
    """Offsets known to be integer starts: 0, one near the start of every segment whose
    candidate chains meet, and ``n`` (the end); increasing."""
    firsts = np.arange(_SEGMENT, n, _SEGMENT, dtype=np.int64)
    if len(firsts) == 0:
        return np.array([0, n], np.int64)
    cand = firsts[:, None] + np.arange(9, dtype=np.int64)[None, :]
    live = cand < n
    live[live] = _control_ok(b[cand[live]])
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


def decode_ints(b: np.ndarray, starts: np.ndarray, what: str = "the data", offset: int = 0) -> np.ndarray:
    """The values of the packed integers at ``starts`` (int64). A start that is not a
    control byte, or a magnitude of 2**63 or more, raises ``SerializationError``."""
    out = np.empty(len(starts), np.int64)
    # the integers in the last 9 bytes are decoded from a zero-padded copy of those bytes, so
    # that every integer's magnitude bytes j = 0..7 can be read through views of the data
    # shifted by 1 + j (bytes beyond an integer's size are masked out)
    tail = int(np.searchsorted(starts, len(b) - 9))
    if tail < len(starts):
        first = int(starts[tail])
        padded = np.zeros(len(b) - first + 9, np.uint8)
        padded[:len(b) - first] = b[first:]
        out[tail:] = decode_ints(padded, starts[tail:] - first, what, offset + first)
    shifted = [b[1 + j:] for j in range(8)]

    def decode_chunk(lo):
        at = starts[lo:min(lo + _CHUNK, tail)]
        control = b[at]
        valid = _control_ok(control)
        if not valid.all():
            bad = int(at[np.argmax(~valid)])
            raise SerializationError(f"{what}: expected a packed integer at byte offset "
                                     f"{offset + bad}, found the byte 0x{b[bad]:02x}")
        size = control & 0x0F
        # most integers have 1 to 3 magnitude bytes: those are read for all (masked by size),
        # the rare longer ones apart
        mag = shifted[0][at].astype(np.uint32)
        mag |= shifted[1][at].astype(np.uint32) << 8
        mag |= shifted[2][at].astype(np.uint32) << 16
        mag &= _LOW_MASKS[np.minimum(size, 3)]
        chunk = out[lo:lo + len(at)]
        chunk[:] = mag
        wide = np.flatnonzero(size > 3)
        if len(wide):
            big = chunk[wide].astype(np.uint64)
            for j in range(3, 8):
                big |= (shifted[j][at[wide]] * (size[wide] > j)).astype(np.uint64) << np.uint64(8 * j)
            if int(big.max()) >= 1 << 63:
                bad = int(at[wide[np.argmax(big >= np.uint64(1 << 63))]])
                raise SerializationError(f"{what}: the packed integer at byte offset {offset + bad} "
                                         f"does not fit in 64 bits")
            chunk[wide] = big.astype(np.int64)
        np.negative(chunk, out=chunk, where=(control & 0x80) != 0)

    _map_chunks(decode_chunk, range(0, tail, _CHUNK))     # each writes its own part of out
    return out


def _map_chunks(function, chunks):
    """``[function(lo) for lo in chunks]``, on ``dnnpy.get_num_threads()`` threads (numpy
    releases the GIL in its loops; a chunk's temporaries stay in cache); the first exception
    in chunk order is raised."""
    workers = min(get_num_threads(), len(chunks))
    if workers <= 1:
        return [function(lo) for lo in chunks]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dnnpy-packed") as pool:
        return list(pool.map(function, chunks))


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
    e = np.asarray(exponent, np.int64)
    # beyond +-400 a float32 has over- or underflowed anyway; int32 for ldexp
    e32 = np.clip(e, -400, 400).astype(np.int32)
    m = np.asarray(mantissa).astype(np.float32)
    with np.errstate(over="ignore"):
        if len(m) == 0 or np.abs(m).max() < 2.0 ** 24:
            out = np.ldexp(m, e32)       # exact mantissas (dlib's floats have 24 bits): one rounding
        else:                            # wider ones round once, from float64
            out = np.ldexp(np.asarray(mantissa, np.int64).astype(np.float64), e32).astype(np.float32)
    special = e >= _INF_EXP
    if special.any():
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
