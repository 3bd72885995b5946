"""Large short-lived arrays in plain pages: ``transient_empty(n, dtype)``.

Why. numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array
of 4 MiB or more. Where the kernel's THP ``defrag`` setting is ``madvise`` (a common default)
the first touch of such memory, when no free huge page is at hand, stalls while the kernel
compacts memory synchronously (a known numpy behaviour, reported upstream as
https://github.com/numpy/numpy/issues/31590). Measured on this project's 2-core VM:
touching a fresh 100 MB numpy array took 0.012-0.55 s, the same memory in 4 KiB pages a
steady 0.05 s; decoding the 68-point shape predictor (99.7 MB, whose decoder's temporaries
are the file's size and more) took 1.07-1.27 s, and 0.82-0.90 s with those temporaries in
plain pages. Huge pages pay off for arrays that live and are read at random (a model's
weights: fewer TLB misses), not for a buffer written once and dropped; so only the
decoders' large temporaries come from here.

A private anonymous ``mmap`` (which numpy never advises) holds the array; it is unmapped
when the last array viewing it goes. (Private: Python's default anonymous map is shared
memory, which forked children would share and which faults in 30% slower.) Small arrays
(under numpy's 4 MiB) are ordinary ``np.empty``.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["transient_empty"]

_HUGEPAGE_HINT_BYTES = 4 << 20       # numpy's threshold for madvise(MADV_HUGEPAGE)


def transient_empty(n: int, dtype) -> np.ndarray:
    """An uninitialised 1-D array of ``n`` items of ``dtype``, writable, in memory numpy does
    not advise for huge pages when it is 4 MiB or more (see the module's docstring)."""
    dtype = np.dtype(dtype)
    nbytes = int(n) * dtype.itemsize
    if nbytes < _HUGEPAGE_HINT_BYTES:
        return np.empty(n, dtype)
    private = getattr(mmap, "MAP_PRIVATE", None)
    try:
        if private is None:                             # Windows: its anonymous maps are private
            return np.frombuffer(mmap.mmap(-1, nbytes), dtype)
        return np.frombuffer(mmap.mmap(-1, nbytes, flags=private | mmap.MAP_ANONYMOUS), dtype)
    except OSError as e:        # out of memory, as numpy says it (not an I/O error)
        raise MemoryError(f"transient_empty: cannot map {nbytes} bytes for {n} {dtype} ({e})") from e
