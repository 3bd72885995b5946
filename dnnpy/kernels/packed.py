"""dlib's packed integers (``dlib/serialize.h``) decoded by one compiled pass over the
bytes: the twin of ``dnnpy.serialization.packed.decode_stream`` (whose docstring gives the
encoding). Integer after integer, as dlib reads them; the values are the numpy decoder's."""

from __future__ import annotations

import numpy as np
from numba import njit

# what decode reports in result[2]
OK, CONTROL, TRUNCATED, WIDE = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def decode(b, limit, values, every, checkpoints, result):
    """Decode the packed integers of ``b`` (uint8) into ``values`` (at least ``len(b) // 2``
    long: an integer takes two bytes or more) until the end or the first byte that is not
    one; ``checkpoints[k]``: the byte offset of integer ``k * every``. ``result``: the count
    decoded, the offset where decoding stopped, why (``OK``: at the end; ``CONTROL``: a
    byte that is no control byte; ``TRUNCATED``: the data ends inside the integer;
    ``WIDE``: its magnitude is ``limit`` or more), and that integer's offset."""
    n = len(b)
    i = 0
    k = 0
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
        if k % every == 0:
            checkpoints[k // every] = i
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
        values[k] = -np.int64(v) if c & 0x80 else np.int64(v)
        k += 1
        i += 1 + size
    result[0], result[1], result[2], result[3] = k, i, why, i


@njit(cache=True, nogil=True)
def starts_from(b, at, count, out):
    """The byte offsets of ``count`` integers from the one at ``at`` into ``out``."""
    for k in range(count):
        out[k] = at
        at += 1 + (b[at] & 0x0F)
