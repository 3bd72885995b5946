"""dlib's primitive encodings (``dlib/serialize.h``), written and read byte for byte.

``Writer`` appends to a bytearray; ``Reader`` walks a bytes object and raises
``SerializationError`` naming what it expected, what it found and the byte offset, for every
malformed or truncated input. No size read from a file is trusted: a length or tensor shape
larger than the bytes that remain fails at once, so a corrupted size never causes a giant
allocation or a long loop.

Encodings (see ``/docs`` and dlib's serialize.h):

* integers: a control byte (low 4 bits = number of magnitude bytes 1..8, bit 0x80 = negative,
  bits 0x70 zero), then the magnitude little-endian (sign and magnitude, fewest bytes, >= 1);
* ``char``/``uint8``: one raw byte; ``bool``: ASCII ``'1'``/``'0'``;
* float/double: ``float_details``: int64 mantissa then int16 exponent (integer encoding),
  value = mantissa * 2**exponent; exponent 32000/32001/32002 = +inf/-inf/NaN; mantissa bits
  D = 24 for C++ float fields, 53 for double fields, trailing zero bytes shifted out;
* string: length (unsigned) then the raw bytes;
* tensor: int 2, then n, k, nr, nc (integers), then n*k*nr*nc raw little-endian float32;
* alias_tensor: int 1, then n, k, nr, nc.

Record versions: ``Reader.version_string(obj, ...)`` remembers in ``obj._dlib_version`` the
version a record was read from and ``Writer.version_string(obj, newest, problem)`` writes that
version back (``newest`` for an object built in code), so a dlib file read and written again is
byte for byte the same; an old version that cannot hold the object's current state is refused.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SerializationError
from ..tensor import resizable_tensor

__all__ = ["Writer", "Reader"]

_INF_EXP, _NINF_EXP, _NAN_EXP = 32000, 32001, 32002


class Writer:
    """Appends dlib encodings to ``self.buffer`` (a bytearray)."""

    def __init__(self):
        self.buffer = bytearray()

    def bytes(self) -> bytes:
        return bytes(self.buffer)

    def raw(self, data):
        self.buffer += data

    @staticmethod
    def version_of(obj, newest, problem=None):
        """The record version ``obj`` writes: the one it was read from (``obj._dlib_version``),
        else ``newest``. ``problem(version)`` says why an older version cannot represent
        ``obj``'s current state (or returns None); then a ``SerializationError`` is raised
        rather than silently writing a record that would read back differently."""
        version = getattr(obj, "_dlib_version", None)
        if version is None:
            return newest
        why = problem(version) if problem is not None and version != newest else None
        if why:
            raise SerializationError(
                f"{type(obj).__name__}: cannot write the {version!r} record it was read from: "
                f"{why} (set its _dlib_version to None to write {newest!r})")
        return version

    def version_string(self, obj, newest, problem=None):
        """Write and return ``version_of(obj, newest, problem)``."""
        version = self.version_of(obj, newest, problem)
        self.string(version)
        return version

    def int(self, value):
        """Any C++ integer type (the width is not encoded)."""
        value = int(value)
        mag = -value if value < 0 else value
        body = mag.to_bytes(max(1, (mag.bit_length() + 7) // 8), "little")
        if len(body) > 8:
            raise SerializationError(f"integer {value} does not fit in 8 bytes")
        self.buffer.append(len(body) | (0x80 if value < 0 else 0))
        self.buffer += body

    uint = int

    def byte(self, value):
        self.buffer.append(int(value) & 0xFF)

    def bool(self, value):
        self.buffer.append(0x31 if value else 0x30)

    def _float(self, value, digits):
        value = float(value)
        if math.isnan(value):
            mantissa, exponent = 0, _NAN_EXP
        elif math.isinf(value):
            mantissa, exponent = 0, (_INF_EXP if value > 0 else _NINF_EXP)
        else:
            m, e = math.frexp(value)
            mantissa = int(m * (1 << digits))   # truncates toward zero, as dlib's cast
            exponent = e - digits
            # shift out trailing zero bytes; Python's & and >> on negative ints behave like
            # dlib's int64 two's complement, so negative mantissas come out the same
            for _ in range(8):
                if mantissa & 0xFF:
                    break
                mantissa >>= 8
                exponent += 8
        self.int(mantissa)
        self.int(exponent)

    def float32(self, value):
        """A C++ ``float`` field (24 mantissa bits; the value is rounded to float32 first)."""
        self._float(float(np.float32(value)), 24)

    def float64(self, value):
        """A C++ ``double`` field."""
        self._float(value, 53)

    def string(self, s):
        data = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        self.uint(len(data))
        self.buffer += data

    def tensor(self, t):
        """A dlib tensor: version 2, four dims, raw float32 little-endian data."""
        self.int(2)
        for d in t.shape:
            self.int(d)
        if t.size():
            self.buffer += np.ascontiguousarray(t.host_read(), dtype="<f4").tobytes()

    def alias(self, a):
        """An alias_tensor's shape (no data)."""
        self.int(1)
        for d in a.shape:
            self.int(d)


class Reader:
    """Reads dlib encodings from ``data`` starting at ``pos``; ``what`` names the source (a
    file name) in error messages."""

    def __init__(self, data, what="stream", pos=0):
        self.data = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        self.what = what
        self.pos = pos
        self.context = ""  # the net reader names the layer being read ("layer<3>: ")

    # -- errors -------------------------------------------------------------------------
    def error(self, message, at=None):
        at = self.pos if at is None else at
        return SerializationError(f"{self.what}: {self.context}{message} (at byte offset {at})")

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def raw(self, n, what="bytes"):
        if n < 0 or n > self.remaining():
            raise self.error(f"expected {n} {what} but only {self.remaining()} bytes remain")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    # -- primitives ---------------------------------------------------------------------
    def int(self, what="an integer"):
        start = self.pos
        if self.at_end():
            raise self.error(f"expected {what} but the data ended")
        control = self.data[self.pos]
        n = control & 0x0F
        if control & 0x70 or not 1 <= n <= 8:
            raise self.error(f"expected {what}, found the byte 0x{control:02x}, which is not an "
                             f"integer control byte", start)
        self.pos += 1
        body = self.raw(n, f"bytes of {what}")
        value = int.from_bytes(body, "little")
        return -value if control & 0x80 else value

    def uint(self, what="an unsigned integer"):
        start = self.pos
        value = self.int(what)
        if value < 0:
            raise self.error(f"expected {what}, found the negative value {value}", start)
        return value

    def byte(self, what="a byte"):
        return self.raw(1, what)[0]

    def bool(self, what="a bool"):
        start = self.pos
        b = self.byte(what)
        if b not in (0x30, 0x31):
            raise self.error(f"expected {what} ('0' or '1'), found the byte 0x{b:02x}", start)
        return b == 0x31

    def _float(self, what):
        start = self.pos
        if not self.at_end() and self.data[self.pos] & 0x70:
            raise self.error(f"expected {what}, found dlib's old text float format, which dnnpy "
                             f"does not read", start)
        mantissa = self.int(f"the mantissa of {what}")
        exponent = self.int(f"the exponent of {what}")
        if exponent == _INF_EXP:
            return math.inf
        if exponent == _NINF_EXP:
            return -math.inf
        if exponent == _NAN_EXP:
            return math.nan
        if not -32768 <= exponent <= 32767 or not -(1 << 63) <= mantissa < (1 << 63):
            raise self.error(f"{what} has an exponent or mantissa out of range", start)
        if exponent > _NAN_EXP:
            return math.nan          # dlib's convert_to_T: every exponent above is_ninf is NaN
        try:
            return math.ldexp(mantissa, exponent)
        except OverflowError:
            return math.copysign(math.inf, mantissa)

    def float32(self, what="a float"):
        return float(np.float32(self._float(what)))

    def float64(self, what="a double"):
        return self._float(what)

    def string(self, what="a string"):
        start = self.pos
        n = self.uint(f"the length of {what}")
        if n > self.remaining():
            raise self.error(f"{what} claims {n} bytes but only {self.remaining()} remain", start)
        return self.raw(n).decode("utf-8", errors="replace")

    def expect_string(self, *expected, what=None):
        """Read a version string; it must be one of ``expected``. Returns the one found."""
        start = self.pos
        label = what or " or ".join(repr(e) for e in expected)
        try:
            found = self.string(f"the version string {label}")
        except SerializationError:
            raise
        if found not in expected:
            shown = repr(found) if len(found) <= 100 else f"{found[:100]!r}... ({len(found)} characters)"
            raise self.error(f"expected {label}, found {shown}", start)
        return found

    def version_string(self, obj, *expected):
        """``expect_string(*expected)``, remembered in ``obj._dlib_version`` so that
        ``obj.serialize`` writes the same version back (``Writer.version_string``)."""
        found = self.expect_string(*expected)
        obj._dlib_version = found
        return found

    def dims(self, what):
        dims = tuple(self.int(f"a dimension of {what}") for _ in range(4))
        if any(d < 0 for d in dims):
            raise self.error(f"{what} has a negative dimension {dims}")
        return dims

    def tensor(self, what="a tensor", into=None):
        """A dlib tensor; returns a new ``resizable_tensor`` (float32), or fills ``into``."""
        start = self.pos
        version = self.int(f"the version of {what}")
        if version != 2:
            raise self.error(f"expected {what} (tensor version 2), found version {version}", start)
        dims = self.dims(what)
        size = dims[0] * dims[1] * dims[2] * dims[3]
        if size * 4 > self.remaining():
            raise self.error(f"{what} of shape {dims} needs {size * 4} bytes but only "
                             f"{self.remaining()} remain", start)
        data = np.frombuffer(self.raw(size * 4), dtype="<f4").reshape(dims)
        t = into if into is not None else resizable_tensor()
        t.set_size(*dims)
        if size:
            t.host_write_only()[...] = data
        return t

    def alias(self, what="an alias_tensor"):
        """An alias_tensor shape: returns the 4 dims."""
        start = self.pos
        version = self.int(f"the version of {what}")
        if version != 1:
            raise self.error(f"expected {what} (alias_tensor version 1), found version {version}", start)
        return self.dims(what)
