"""dlib's random number generator, ``dlib::rand`` (``dlib/rand/rand_kernel_1.h``), with dlib's
exact stream: the same seed gives the same numbers, drawn in the same order, as dlib's C++.

    rnd = dlib_rand()              # dlib::rand rnd;          (MT19937 seeded 5489)
    rnd = dlib_rand("abc")         # dlib::rand rnd("abc");
    rnd = dlib_rand(123)           # dlib::rand rnd((time_t)123);  i.e. the seed string "123"
    rnd.get_random_32bit_number(); rnd.get_random_double(); rnd.get_random_gaussian()

How dlib makes the stream: a 32-bit Mersenne twister (MT19937, the reference ``init_genrand``
seeding). ``set_seed(s)`` hashes the seed string to ``h = h*37 + c`` over its bytes (mod 2**32)
and seeds with ``h``; the empty string seeds with MT19937's default 5489. Every (re)seed then
throws the first 10000 outputs away. The numbers come from numpy's ``MT19937`` bit generator
(same recurrence and tempering), whose state is set from our own ``init_genrand``.

The scalar methods match dlib call for call. The plural helpers (``get_random_32bit_numbers``
...) draw ``count`` values at once and equal ``count`` calls of the scalar method, in order.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["dlib_rand"]

_MASK24 = 0xFFFFFF
# dlib's divisor for get_random_double: (2**48 - 1) + 0.05, summed in double as dlib does
_MAX_VAL = float(0xFFFFFF) * 0x1000000 + 0xFFFFFF + 0.05
_ONE_MINUS_EPS = 1.0 - np.finfo(np.float64).eps
_U32_MAX = 4294967295.0


def _init_genrand(s):
    """The key of MT19937 seeded with the 32-bit integer ``s`` (Matsumoto and Nishimura's
    ``init_genrand``, which dlib's ``mersenne_twister::seed`` is)."""
    key = [s & 0xFFFFFFFF]
    for i in range(1, 624):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return np.array(key, dtype=np.uint32)


def _seed_hash(seed) -> int:
    """dlib's ``set_seed`` hash: ``s = s*37 + static_cast<uint32>(c)`` over the string's chars.
    ``char`` is signed on x86-64 (where dlib's wheels are built), so a byte >= 128 enters as
    ``byte - 256`` (sign-extended); a str is taken as its UTF-8 bytes."""
    h = 0
    for b in (seed.encode("utf-8") if isinstance(seed, str) else seed):
        h = (h * 37 + (b - 256 if b >= 128 else b)) & 0xFFFFFFFF
    return h


class dlib_rand:
    """``dlib::rand``: a seeded pseudo-random generator with dlib's exact output stream.

    ``seed``: None or "" (dlib's default constructor), a str (``rand(const std::string&)``,
    taken as UTF-8 bytes), bytes (the std::string's bytes as they are) or an int
    (``rand(time_t)``, which seeds with the decimal string of the number).
    Copy one with ``copy.deepcopy`` to replay its stream."""

    def __init__(self, seed=None):
        self._mt = np.random.MT19937()
        self.set_seed(self._seed_string(seed))

    @staticmethod
    def _seed_string(seed):
        if seed is None:
            return ""
        if isinstance(seed, (str, bytes)):
            return seed
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return str(int(seed))       # dlib's rand(time_t) seeds with cast_to_string(value)
        raise TypeError(f"dlib_rand: the seed must be None, a str, bytes or an int, got "
                        f"{type(seed).__name__}")

    # -- seeding --------------------------------------------------------------------------

    def set_seed(self, value) -> None:
        """Reseed from the string ``value`` (str or bytes, as dlib's ``set_seed``); "" equals
        ``clear()``. Forgets a cached Gaussian."""
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"dlib_rand.set_seed: the seed must be a str or bytes, got "
                            f"{type(value).__name__} (dlib_rand(int) takes a number)")
        self._seed = value
        s = _seed_hash(value) if value else 5489
        self._mt.state = {"bit_generator": "MT19937",
                          "state": {"key": _init_genrand(s), "pos": 624}}
        self._mt.random_raw(10000)      # dlib "primes the generator a bit"
        self._has_gaussian = False
        self._next_gaussian = 0.0

    def get_seed(self):
        return self._seed

    def clear(self) -> None:
        """Back to the state of a default-constructed ``dlib::rand``."""
        self.set_seed("")

    def __repr__(self):
        return f"dlib_rand({self._seed!r})"

    # -- integers ---------------------------------------------------------------------------

    def get_random_32bit_number(self) -> int:
        return int(self._mt.random_raw())

    def get_random_16bit_number(self) -> int:
        return int(self._mt.random_raw()) & 0xFFFF

    def get_random_8bit_number(self) -> int:
        return int(self._mt.random_raw()) & 0xFF

    def get_random_64bit_number(self) -> int:
        """Two 32-bit draws, the first in the high half."""
        a = int(self._mt.random_raw())
        return (a << 32) | int(self._mt.random_raw())

    def get_integer_in_range(self, begin: int, end: int) -> int:
        """A uniform integer in ``[begin, end)`` (``begin`` when they are equal), by dlib's
        rejection sampling of 64-bit draws."""
        begin, end = int(begin), int(end)
        if begin > end:
            raise ValueError(f"dlib_rand.get_integer_in_range: begin ({begin}) > end ({end})")
        if begin == end:
            return begin
        span = end - begin
        if span >= 1 << 63:
            raise ValueError(f"dlib_rand.get_integer_in_range: the range [{begin}, {end}) does "
                             f"not fit dlib's long long")
        limit = (1 << 64) - 1
        r = self.get_random_64bit_number()
        while r >= (limit // span) * span:
            r = self.get_random_64bit_number()
        return begin + r % span

    def get_integer(self, end: int) -> int:
        """A uniform integer in ``[0, end)``; 0 when ``end`` is 0."""
        if int(end) < 0:
            raise ValueError(f"dlib_rand.get_integer: end must be >= 0, got {end}")
        return self.get_integer_in_range(0, end)

    # -- reals ------------------------------------------------------------------------------

    def get_random_double(self) -> float:
        """A double in [0, 1) from 48 random bits (two 32-bit draws, low 24 bits of each)."""
        val = float(int(self._mt.random_raw()) & _MASK24) * 16777216.0
        val += int(self._mt.random_raw()) & _MASK24
        val /= _MAX_VAL
        return val if val < 1.0 else _ONE_MINUS_EPS

    def get_random_float(self) -> float:
        """A float32 value in [0, 1) (returned as a Python float, exactly): 24 random bits."""
        return (int(self._mt.random_raw()) & _MASK24) / 16777216.0

    def get_double_in_range(self, begin: float, end: float) -> float:
        if not begin <= end:
            raise ValueError(f"dlib_rand.get_double_in_range: begin ({begin}) > end ({end})")
        return begin + self.get_random_double() * (end - begin)

    def get_random_complex_gaussian(self) -> complex:
        """Two independent N(0, 1) values (real, imaginary): dlib's polar Box-Muller, each
        try drawing two 32-bit numbers divided by 2**32 - 1."""
        while True:
            x1 = 2.0 * (int(self._mt.random_raw()) / _U32_MAX) - 1.0
            x2 = 2.0 * (int(self._mt.random_raw()) / _U32_MAX) - 1.0
            w = x1 * x1 + x2 * x2
            if w < 1.0:
                break
        w = math.sqrt((-2.0 * math.log(w)) / w)
        return complex(x1 * w, x2 * w)

    def get_random_gaussian(self) -> float:
        """N(0, 1). Draws a pair and returns its first value, caching the second for the
        next call (as dlib does)."""
        if self._has_gaussian:
            self._has_gaussian = False
            return self._next_gaussian
        z = self.get_random_complex_gaussian()
        self._next_gaussian = z.imag
        self._has_gaussian = True
        return z.real

    # -- vectorised draws -------------------------------------------------------------------

    @staticmethod
    def _count(count, what):
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
            raise ValueError(f"dlib_rand.{what}: count must be an integer >= 0, got {count!r}")
        return int(count)

    def get_random_32bit_numbers(self, count: int) -> np.ndarray:
        """``count`` calls of ``get_random_32bit_number`` at once, as a uint32 array."""
        n = self._count(count, "get_random_32bit_numbers")
        return self._mt.random_raw(n).astype(np.uint32)

    def get_random_64bit_numbers(self, count: int) -> np.ndarray:
        """``count`` calls of ``get_random_64bit_number`` at once, as a uint64 array."""
        n = self._count(count, "get_random_64bit_numbers")
        raw = self._mt.random_raw(2 * n)
        return (raw[0::2] << np.uint64(32)) | raw[1::2]

    def get_random_gaussians(self, count: int) -> np.ndarray:
        """``count`` calls of ``get_random_gaussian`` at once, as a float64 array: the same
        values and the same generator state afterwards (the cached second value included).
        The polar method's rejections are found on a speculative batch of raw numbers; the
        generator is then rewound and advanced by exactly what the accepted pairs used. The
        logarithm and square root are Python's (the C library's, as dlib's), not numpy's
        vectorised ones, whose last bit can differ."""
        n = self._count(count, "get_random_gaussians")
        out = np.empty(n)
        i = 0
        if n and self._has_gaussian:
            out[0], self._has_gaussian, i = self._next_gaussian, False, 1
        pairs = (n - i + 1) // 2
        firsts, seconds = [], []
        while len(firsts) < pairs:
            want = pairs - len(firsts)
            saved = self._mt.state
            guess = int(want * 1.35) + 16                  # pi/4 of the pairs are accepted
            raw = self._mt.random_raw(2 * guess).astype(np.float64)
            x1 = 2.0 * (raw[0::2] / _U32_MAX) - 1.0
            x2 = 2.0 * (raw[1::2] / _U32_MAX) - 1.0
            w = x1 * x1 + x2 * x2
            accepted = np.flatnonzero(w < 1.0)[:want]
            if len(accepted) == want:                       # rewind to just after the last
                self._mt.state = saved
                self._mt.random_raw(2 * (int(accepted[-1]) + 1))
            for j in accepted.tolist():
                f = math.sqrt((-2.0 * math.log(w[j])) / w[j])
                firsts.append(x1[j] * f)
                seconds.append(x2[j] * f)
        values = np.empty(2 * pairs)
        values[0::2], values[1::2] = firsts, seconds
        out[i:] = values[:n - i]
        if (n - i) % 2:                                     # the last pair's second is cached
            self._next_gaussian, self._has_gaussian = float(values[-1]), True
        return out

    def get_random_doubles(self, count: int) -> np.ndarray:
        """``count`` calls of ``get_random_double`` at once, as a float64 array."""
        n = self._count(count, "get_random_doubles")
        raw = self._mt.random_raw(2 * n) & np.uint64(_MASK24)
        val = raw[0::2].astype(np.float64) * 16777216.0
        val += raw[1::2]
        val /= _MAX_VAL
        return np.where(val < 1.0, val, _ONE_MINUS_EPS)
