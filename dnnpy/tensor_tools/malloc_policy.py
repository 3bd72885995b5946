"""How glibc's malloc gives freed memory back to the system: dnnpy's default keeps it for
reuse (``mallopt(M_MMAP_THRESHOLD, 32 MiB)`` and ``mallopt(M_TRIM_THRESHOLD, 256 MiB)``,
set at ``import dnnpy``).

Why. numpy allocates every array with malloc. glibc serves a block above its mmap threshold
(128 KiB at first, raised as such blocks are freed) with a fresh mapping, and gives the free
top of its heaps back to the system above its trim threshold (twice the mmap threshold). An
array of a few hundred KiB made and freed again and again (a band of an image, a layer's
temporary) therefore comes back as fresh pages, each a page fault the kernel zero-fills:
on this project's 2-core VM a fault costs 2-15 us, more than the arithmetic done in the page.
Measured (HOG face detection on dlib's photos, 2 cores): 8,500 faults and 30 ms of system
time a photo, 120 ms a photo; with these two settings 146 faults, 12 ms, 98 ms. Setting only
one of them is worse than glibc's default (``MALLOC_TRIM_THRESHOLD_`` alone: 116,000 faults a
photo), so they go together.

The cost: a process keeps up to 256 MiB of freed memory (per allocator arena) for reuse
instead of returning it at once, as jemalloc and tcmalloc do by design.

The rule. At ``import dnnpy``, on glibc, unless the environment sets one of glibc's malloc
variables (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``,
``MALLOC_MMAP_MAX_``, or ``glibc.malloc`` tunables in ``GLIBC_TUNABLES``), another allocator
is preloaded (``LD_PRELOAD`` naming jemalloc, tcmalloc or mimalloc), or ``DNNPY_MALLOC=glibc``
asks for glibc's own behaviour (``DNNPY_MALLOC=dnnpy``, or unset: dnnpy's). ``malloc_policy_info()`` (in ``backend_info()``) says what is
in force and who chose it.
"""

from __future__ import annotations

import ctypes
import os
import warnings

__all__ = ["apply_default", "malloc_policy_info", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD, TRIM_THRESHOLD = 32 << 20, 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3              # mallopt's parameters (malloc.h)
_USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
_OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")
OPT_OUT = "DNNPY_MALLOC"
_SETTING = f"M_MMAP_THRESHOLD={MMAP_THRESHOLD >> 20} MiB, M_TRIM_THRESHOLD={TRIM_THRESHOLD >> 20} MiB"

_state = {}     # filled by apply_default(): what is in force and who chose it


def _glibc():
    """glibc's version string ("glibc 2.36"), or None on another C library."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    return version if version and version.startswith("glibc") else None


def _mallopt(libc=None):
    """glibc's ``mallopt`` as a ctypes function."""
    libc = ctypes.CDLL(None) if libc is None else libc
    f = libc.mallopt
    f.argtypes, f.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return f


def apply_default(environ=None, glibc=None, mallopt=None):
    """Apply dnnpy's malloc settings to this process unless the rule in the module's
    docstring says not to (``environ``: ``os.environ``; ``glibc``: the C library's version,
    found when None; ``mallopt``: glibc's, for tests). Records what is in force for
    ``malloc_policy_info()`` and returns it. Idempotent."""
    real = environ is None
    environ = os.environ if environ is None else environ
    user = {v: environ[v] for v in _USER_VARIABLES if v in environ}
    if "glibc.malloc" in environ.get("GLIBC_TUNABLES", ""):
        user["GLIBC_TUNABLES"] = environ["GLIBC_TUNABLES"]
    preloaded = [a for a in _OTHER_ALLOCATORS if a in environ.get("LD_PRELOAD", "")]
    glibc = _glibc() if glibc is None else glibc
    choice = environ.get(OPT_OUT, "").strip().lower()
    if choice not in ("", "dnnpy", "glibc"):
        warnings.warn(f"{OPT_OUT}={environ[OPT_OUT]!r} is not a malloc policy: 'glibc' keeps glibc's "
                      f"default, 'dnnpy' (or unset) dnnpy's; using dnnpy's", RuntimeWarning, stacklevel=2)
    if choice == "glibc":
        state = {"setting": "glibc's default", "chosen_by": f"the environment ({OPT_OUT}=glibc)",
                 "applied": False, "reason": None}
    elif user:
        state = {"setting": ", ".join(f"{k}={v}" for k, v in user.items()),
                 "chosen_by": "the environment", "applied": False, "reason": None}
    elif preloaded:
        state = {"setting": f"{preloaded[0]}'s", "chosen_by": "the environment (LD_PRELOAD)",
                 "applied": False, "reason": None}
    elif not glibc:
        state = {"setting": "the C library's default", "chosen_by": "the platform", "applied": False,
                 "reason": "not glibc: dnnpy's settings are glibc's mallopt parameters"}
    else:
        mmap = trim = False
        try:
            f = _mallopt() if mallopt is None else mallopt
            mmap = f(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            trim = mmap and f(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
            reason = None if trim else "glibc's mallopt refused them"
        except (OSError, AttributeError) as e:
            reason = f"mallopt could not be called ({e})"
        setting = (_SETTING if trim else f"M_MMAP_THRESHOLD={MMAP_THRESHOLD >> 20} MiB only" if mmap
                   else "glibc's default")
        state = {"setting": setting, "chosen_by": "dnnpy's default", "applied": trim, "reason": reason}
    if real:
        _state.clear()
        _state.update(state)
    return state


def malloc_policy_info() -> dict:
    """``{"setting", "chosen_by", "applied", "reason"}``: the malloc settings in force, who
    chose them, whether dnnpy applied its own, and why not where it tried and failed."""
    if not _state:
        apply_default()
    return dict(_state)
