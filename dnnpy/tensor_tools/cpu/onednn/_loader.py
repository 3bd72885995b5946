"""Locate and load oneDNN 3.x (``libdnnl.so.3``) for the ctypes bindings in ``_api.py``.

The ``onednn-cpu-gomp`` wheel (dnnpy's ``onednn`` extra) installs the library into
``<prefix>/lib``, which is not on the loader's path, so the search is ours. Candidates, in
order (the first that loads and passes the checks wins):

1. ``$DNNPY_ONEDNN_LIBRARY``: an explicit path.
2. ``<prefix>/lib/libdnnl.so.3`` for ``sys.prefix`` (a venv), ``site.USER_BASE``
   (``pip install --user``), ``$CONDA_PREFIX`` and ``sys.base_prefix``.
3. The bare soname (LD_LIBRARY_PATH, ld.so.cache).

The caller (``_api``) checks a loaded candidate: oneDNN 3.x, every function of its
``SIGNATURES`` present, a CPU ISA of AVX2 or better. The wheel links the system
``libgomp.so.1``; when it is missing the load fails with that name, reported as such.

Only Linux x86-64 has the wheel; elsewhere the search is skipped with that reason.
"""

from __future__ import annotations

import ctypes
import os
import platform
import site
import sys
import threading

__all__ = ["SONAME", "OnednnNotFoundError", "candidate_paths", "load_onednn", "platform_reason"]

SONAME = "libdnnl.so.3"

_lock = threading.Lock()
_loaded = None
_failure = None


class OnednnNotFoundError(OSError):
    """No usable oneDNN 3.x was found; the message says why for each candidate.
    ``installed`` is False when no candidate file exists at all (the extra is simply not
    installed: nothing to warn about)."""

    def __init__(self, message, installed):
        super().__init__(message)
        self.installed = installed


def platform_reason():
    """Why this platform cannot have the oneDNN wheel, or None on Linux x86-64."""
    system, machine = platform.system(), platform.machine().lower()
    if system != "Linux" or machine not in ("x86_64", "amd64"):
        return (f"the onednn-cpu-gomp wheel exists only for Linux x86-64, not {system} "
                f"{platform.machine()}")
    return None


def candidate_paths():
    """``[(path, explicit)]`` in search order; ``explicit`` marks ``$DNNPY_ONEDNN_LIBRARY``."""
    out = []
    env = os.environ.get("DNNPY_ONEDNN_LIBRARY")
    if env:
        out.append((env, True))
    prefixes = [sys.prefix, getattr(site, "USER_BASE", None), os.environ.get("CONDA_PREFIX"),
                sys.base_prefix]
    seen = set()
    for p in prefixes:
        if p and p not in seen:
            seen.add(p)
            out.append((os.path.join(p, "lib", SONAME), False))
    out.append((SONAME, False))
    return out


def _try(path):
    """``(CDLL, None)`` or ``(None, reason)``."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        text = str(e)
        if "libgomp" in text:
            return None, (f"{path} needs the GNU OpenMP runtime libgomp.so.1, which is missing "
                          "(Debian/Ubuntu: apt install libgomp1)")
        return None, f"{path}: {text}"
    return lib, None


def load_onednn(check):
    """``(CDLL, path)`` of the first candidate that loads and that ``check(lib, path)``
    accepts (it raises ``OSError`` saying why not), found once per process; raises
    ``OnednnNotFoundError`` naming every candidate tried and why it failed."""
    global _loaded, _failure
    with _lock:
        if _loaded is not None:
            return _loaded
        if _failure is not None:
            raise _failure
        reason = platform_reason()
        if reason is not None and not os.environ.get("DNNPY_ONEDNN_LIBRARY"):
            _failure = OnednnNotFoundError(reason, installed=False)
            raise _failure
        tried, installed = [], False
        for path, explicit in candidate_paths():
            if os.path.sep in path and not os.path.exists(path):
                if explicit:
                    tried.append(f"{path}: DNNPY_ONEDNN_LIBRARY names a file that does not exist")
                    installed = True
                continue
            lib, why = _try(path)
            if lib is None:
                if os.path.sep in path or "No such file" not in why and "cannot open" not in why:
                    installed = True
                    tried.append(why)
                continue
            installed = True
            try:
                check(lib, path)
            except OSError as e:
                tried.append(str(e))
                continue
            _loaded = (lib, path)
            return _loaded
        if not installed:
            msg = "onednn-cpu-gomp is not installed (pip install 'dnnpy[onednn]')"
        else:
            msg = "no usable oneDNN 3.x: " + "; ".join(tried)
        _failure = OnednnNotFoundError(msg, installed)
        raise _failure
