"""dlib's packed integers (``dlib/serialize.h``) decoded by one compiled pass over the
bytes: the twin of ``dnnpy.serialization.packed.decode_stream`` (whose docstring gives the
encoding). Integer after integer, as dlib reads them; the values are the numpy decoder's."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# why decode stopped, result[1]: an index into dnnpy/serialization/packed.py's _STOPS
OK, CONTROL, TRUNCATED, WIDE = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def decode(b, limit, values, every, checkpoints, result):
    """Decode the packed integers of ``b`` (uint8) into ``values`` (at least ``len(b) // 2``
    long: an integer takes two bytes or more) until the end or the first byte that is not
    one; ``checkpoints[k]``: the byte offset of integer ``k * every``. ``result``: the count
    decoded, why it stopped (``OK``: at the end; ``CONTROL``: a byte that is no control
    byte; ``TRUNCATED``: the data ends inside the integer; ``WIDE``: its magnitude is
    ``limit`` or more) and the byte offset where it stopped."""
    n = len(b)
    i = 0
    k = 0
    checkpoint = 0              # the next integer whose offset is kept (no division a value)
    why = OK
    while i < n:
        c = b[i]
        size = c & 0x0F
        if (c & 0x70) != 0 or size < 1 or size > 8:
            why = CONTROL
            break
        if i + 1 + size > n:
            why = TRUNCATED
            break
        if k == checkpoint:
            checkpoints[k // every] = i
            checkpoint += every
        v = np.uint64(0)
        if i + 9 <= n:
            # all eight bytes after the control byte, masked to the integer's size (no
            # branch on the size, which varies from integer to integer)
            for j in range(8):
                v |= np.uint64(b[i + 1 + j]) << np.uint64(8 * j)
            if size < 8:
                v &= (np.uint64(1) << np.uint64(8 * size)) - np.uint64(1)
        else:
            for j in range(size):
                v |= np.uint64(b[i + 1 + j]) << np.uint64(8 * j)
        if v >= limit:
            why = WIDE
            break
        sign = np.int64(1) - np.int64((c >> 6) & 2)       # 0x80 set: -1, else 1
        values[k] = sign * np.int64(v)
        k += 1
        i += 1 + size
    result[0], result[1], result[2] = k, why, i


@njit(cache=True, nogil=True)
def starts_from(b, at, count, out):
    """The byte offsets of ``count`` integers from the one at ``at`` into ``out``."""
    for k in range(count):
        out[k] = at
        at += 1 + (b[at] & 0x0F)


@njit(cache=True, nogil=True)
def to_floats(mantissa, exponent, out):
    """``out`` (float32) from dlib's (mantissa, exponent) pairs, all three arrays of one 3-D
    shape: ``mantissa * 2**exponent`` in float64 (exact for dlib's 24-bit mantissas), rounded
    once to float32, as ``dnnpy.serialization.packed.to_floats`` computes it; exponents
    32000, 32001 and 32002 or more are +inf, -inf and NaN. (The powers of two come from a
    table of the 801 exponents that can matter, all exact in float64: a product with one is
    exact, and needs no call to ``ldexp`` per value.)"""
    scale = np.empty(801, np.float64)
    for e in range(-400, 401):
        scale[e + 400] = math.ldexp(1.0, e)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for k in range(out.shape[2]):
                e = exponent[i, j, k]
                if e >= 32000:
                    out[i, j, k] = np.inf if e == 32000 else -np.inf if e == 32001 else np.nan
                else:
                    e = min(max(e, -400), 400)
                    out[i, j, k] = np.float32(np.float64(mantissa[i, j, k]) * scale[e + 400])
