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

import numpy as np

from ..errors import SerializationError

__all__ = ["token_starts", "decode_ints", "encode_ints", "to_floats", "from_floats"]

_SEGMENT = 16384       # bytes per segment of the lockstep walk (measured: 4 KB segments
                       # spread each step over more pages and ran 3x slower)
_SYNC_STEPS = 256      # most steps to make a segment's candidate chains meet
_MAX_STEPS = 4 * _SEGMENT   # most lockstep steps (a segment holds at most _SEGMENT / 2 integers)
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
    step = np.zeros(n + 9, np.uint8)          # an integer's length, read from its control byte
    np.add(b & 0x0F, 1, out=step[:n], dtype=np.uint8)
    sync = _sync_points(b, step, n)
    is_start = np.zeros(n + 9, np.uint8)
    is_start[sync[:-1]] = 1
    index = np.int32 if n < 2**31 - 16 else np.int64
    pos, target = sync[:-1].astype(index), sync[1:].astype(index)
    # walk every segment's chain in lockstep, each held at its segment's end; whether the
    # chains really line up is checked once, below (control bytes: by decode_ints)
    for k in range(_MAX_STEPS):
        pos = np.minimum(pos + step[pos], target)
        is_start[pos] = 1
        if k % 64 == 63 and not (pos < target).any():
            break
    else:
        # a walk this long means segments whose chains never met: data that is not packed
        # integers (or a record followed by other data, where partial reading stops anyway)
        if not partial and (pos < target).any():
            at = int(pos[pos < target].min())
            raise SerializationError(f"{what}: no packed integers line up near byte offset "
                                     f"{offset + at}: not dlib's encoding there")
    out = np.flatnonzero(is_start[:n].view(bool))       # 4x faster than on uint8
    nxt = out + step[out]
    bad = out[1:] != nxt[:-1]
    first_bad = int(np.argmax(bad)) if bad.any() else None
    if partial:     # up to the first break in the chain or the first byte that is no control byte
        out = out if first_bad is None else out[:first_bad + 1]
        valid = _control_ok(b[out])
        return out if valid.all() else out[:int(np.argmax(~valid))]
    if first_bad is not None:
        at = int(nxt[first_bad])
        raise SerializationError(f"{what}: the packed integers (a shape predictor's data) do not line "
                                 f"up at byte offset {offset + at}")
    if int(nxt[-1]) != n:
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
    if len(starts) == 0:
        return np.zeros(0, np.int64)
    control = b[starts]
    valid = _control_ok(control)
    if not valid.all():
        at = int(starts[np.argmax(~valid)])
        raise SerializationError(f"{what}: expected a packed integer at byte offset {offset + at}, "
                                 f"found the byte 0x{b[at]:02x}")
    size = control & 0x0F
    last = len(b) - 1

    def byte(j, at=slice(None)):
        """Magnitude byte ``j`` of the integers ``at`` (an index clipped to the data: only
        the last integers can reach past it, and their bytes there are masked out)."""
        return b[np.minimum(starts[at] + 1 + j, last)]

    # most integers have 1 to 3 magnitude bytes: those are gathered for all (zeroed beyond
    # the size), the rare longer ones apart
    mag = byte(0).astype(np.uint32)
    mag |= (byte(1).astype(np.uint32) << 8) * (size > 1)
    mag |= (byte(2).astype(np.uint32) << 16) * (size > 2)
    out = mag.astype(np.int64)
    wide = np.nonzero(size > 3)[0]
    if len(wide):
        big = out[wide].astype(np.uint64)
        for j in range(3, 8):
            big |= np.where(size[wide] > j, byte(j, wide), 0).astype(np.uint64) << np.uint64(8 * j)
        if int(big.max()) >= 1 << 63:
            at = int(starts[wide[np.argmax(big >= np.uint64(1 << 63))]])
            raise SerializationError(f"{what}: the packed integer at byte offset {offset + at} does "
                                     f"not fit in 64 bits")
        out[wide] = big.astype(np.int64)
    np.negative(out, out=out, where=(control & 0x80) != 0)
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
    e = np.asarray(exponent, np.int64)
    with np.errstate(over="ignore"):
        out = np.ldexp(np.asarray(mantissa, np.int64).astype(np.float64),
                       np.clip(e, -2000, 2000).astype(np.int32)).astype(np.float32)
    out[e == _INF_EXP] = np.inf
    out[e == _NINF_EXP] = -np.inf
    out[(e >= _NAN_EXP) | ((e > _NINF_EXP) & (e < _NAN_EXP))] = np.nan
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
