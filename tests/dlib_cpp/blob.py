"""The blob encoding the harness and the C++ driver exchange inputs, labels and results in
(``parity.h`` has the C++ side): little-endian; integers int64, floats float32, doubles
float64, bools one byte, strings and vectors a uint64 count first, matrices int64 nr, nc then
the elements row-major (an RGB pixel is 3 bytes), tensors int64 n, k, nr, nc then float32s,
``std::array<T, K>`` K items, pairs first then second. Not dlib's serialize format: this one
is trivial to write from numpy and carries exact float32 values."""

from __future__ import annotations

import struct

import numpy as np


class BlobWriter:
    def __init__(self):
        self.parts = []

    def bytes(self) -> bytes:
        return b"".join(self.parts)

    def i64(self, v):
        self.parts.append(struct.pack("<q", int(v)))

    def f32(self, v):
        self.parts.append(struct.pack("<f", float(v)))

    def f64(self, v):
        self.parts.append(struct.pack("<d", float(v)))

    def bool(self, v):
        self.parts.append(b"\1" if v else b"\0")

    def string(self, s):
        data = s.encode()
        self.i64(len(data))
        self.parts.append(data)

    def count(self, n):
        self.i64(n)

    def matrix(self, a, dtype):
        """A 2-D matrix (``dtype`` uint8, float32, uint16), or an H x W x 3 uint8 RGB image."""
        a = np.ascontiguousarray(a, dtype=dtype)
        self.i64(a.shape[0])
        self.i64(a.shape[1])
        self.parts.append(a.astype(np.dtype(dtype).newbyteorder("<")).tobytes())

    def tensor(self, a):
        a = np.asarray(a, dtype="<f4")
        assert a.ndim == 4
        for d in a.shape:
            self.i64(d)
        self.parts.append(np.ascontiguousarray(a).tobytes())

    def rect(self, left, top, right, bottom):
        for v in (left, top, right, bottom):
            self.i64(v)


class BlobReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError(f"blob: wanted {n} bytes at {self.pos}, only {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def at_end(self):
        return self.pos == len(self.data)

    def i64(self):
        return struct.unpack("<q", self._take(8))[0]

    def f32(self):
        return struct.unpack("<f", self._take(4))[0]

    def f64(self):
        return struct.unpack("<d", self._take(8))[0]

    def bool(self):
        return self._take(1) != b"\0"

    def string(self):
        return self._take(self.i64()).decode()

    def count(self):
        return self.i64()

    def matrix(self, dtype):
        nr, nc = self.i64(), self.i64()
        dt = np.dtype(dtype).newbyteorder("<")
        return np.frombuffer(self._take(nr * nc * dt.itemsize), dt).reshape(nr, nc).astype(dtype)

    def tensor(self):
        shape = tuple(self.i64() for _ in range(4))
        n = int(np.prod(shape))
        return np.frombuffer(self._take(4 * n), "<f4").reshape(shape).astype(np.float32)

    def rect(self):
        return tuple(self.i64() for _ in range(4))
