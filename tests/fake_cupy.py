"""A numpy-backed stand-in for the part of CuPy that ``dnnpy/tensor.py`` uses, so the
host/device mirror runs on every CPU machine.

``install(monkeypatch)`` puts it in ``sys.modules["cupy"]`` and returns it. Device arrays
are numpy arrays in their own memory (never views of the host array), and the stand-in
counts what the mirror asks of it: host->device copies (``set``), device->host copies
(``get``), allocations (``empty``) and device waits (``synchronize``). ``fail_allocs`` makes
the next allocations raise CuPy's out-of-memory error.
"""

import sys
import types

import numpy as np


class OutOfMemoryError(MemoryError):
    pass


class _device:
    def __init__(self, fake):
        self._fake = fake

    def synchronize(self):
        self._fake.counts["synchronize"] += 1


class ndarray(np.ndarray):
    """A device array: numpy memory plus CuPy's ``set``/``get``/``device``. Views of it
    (slices, reshapes: what the mirror's windows are) are device arrays too."""

    _fake = None

    def __array_finalize__(self, obj):
        self._fake = getattr(obj, "_fake", None)

    def set(self, host):
        self._fake.counts["set"] += 1
        np.copyto(self.view(np.ndarray), host)

    def get(self, out=None):
        self._fake.counts["get"] += 1
        if out is None:
            return np.array(self.view(np.ndarray))
        np.copyto(out, self.view(np.ndarray))
        return out

    @property
    def device(self):
        return _device(self._fake)


class _pool:
    def __init__(self, fake):
        self._fake = fake

    def free_all_blocks(self):
        self._fake.counts["free_all_blocks"] += 1


def make():
    fake = types.ModuleType("cupy")
    fake.__version__ = "0.0-fake"
    fake.counts = dict.fromkeys(("set", "get", "empty", "synchronize", "free_all_blocks"), 0)
    fake.fail_allocs = 0
    fake.cuda = types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
                                      is_available=lambda: False)
    pool = _pool(fake)
    fake.get_default_memory_pool = lambda: pool

    def empty(size, dtype):
        if fake.fail_allocs:
            fake.fail_allocs -= 1
            raise OutOfMemoryError(f"fake: out of memory allocating {size}")
        fake.counts["empty"] += 1
        a = np.full(size, np.nan, dtype=dtype).view(ndarray)  # garbage, as cupy.empty
        a._fake = fake
        return a

    fake.empty = empty
    fake.reset_counts = lambda: fake.counts.update(dict.fromkeys(fake.counts, 0))
    return fake


def install(monkeypatch):
    fake = make()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake
