"""Compiled loops for the image code that numpy cannot vectorise well: Numba kernels (the
``jit`` extra), with the numpy code as the complete reference and the fallback.

Some stages of dlib's face pipeline are many small dependent steps (a shape predictor walks
7500 trees a box; fHOG bins every pixel into four cells): numpy spends its time there in
per-call overhead and extra passes over memory, and dlib's C++ runs them 2-3x faster. The
kernels in ``dnnpy/kernels/`` compute what the numpy code beside them computes, in one
pass: the same float operations in the same order, except where numpy sums with BLAS or
``bincount`` (then the same float64 terms in another order) and in the HOG scan (each
filter's separable parts, where numpy multiplies by their sum: scores equal to float32
rounding). The tests run both twins (the ``kernels`` fixture) against dlib and against
each other.

The kernels are used iff ``DNNPY_DISABLE_JIT`` is unset or false and Numba imports. The
decision is made when the first kernel is asked for, never at ``import dnnpy``. Numba
compiles each kernel at its first call (1-4 s) and caches the machine code beside the
module (``__pycache__``, or ``NUMBA_CACHE_DIR``), so later processes load it in
milliseconds. Installed but unusable (Numba does not import, a kernel module does not load,
a kernel does not compile): one ``RuntimeWarning`` names the reason, numpy runs from then
on, and ``info()`` keeps the reason for ``backend_info()``. Kernels release the GIL: dnnpy's
threads (``parallel_for``) run them side by side, and ``force_numpy`` reaches those tasks.

    if not jit.call("landmarks", "cascade", img, ..., out):   # False: run the numpy code
        ...
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings

from .numpy_only import NumpyOnly

__all__ = ["active", "available", "call", "disable", "force_numpy", "info", "kernels"]

_lock = threading.Lock()
_decided = False
_usable = False
_reason = None
_version = None


def _env_disables() -> bool:
    return os.environ.get("DNNPY_DISABLE_JIT", "").strip().lower() not in ("", "0", "false")


def _decide():
    global _decided, _usable, _reason, _version
    with _lock:
        if _decided:
            return
        warn = None
        if _env_disables():
            _reason = "turned off by DNNPY_DISABLE_JIT"
        else:
            try:
                import numba
            except ModuleNotFoundError as e:
                if e.name != "numba":           # (a module Numba needs is missing)
                    _reason = warn = f"Numba cannot be imported ({type(e).__name__}: {e})"
                else:
                    _reason = "Numba is not installed; pip install 'dnnpy[jit]'"
            except Exception as e:  # noqa: BLE001  (a broken install is a reason, never an error)
                # (e.g. Numba's own check that it supports this numpy, an ImportError)
                _reason = warn = f"Numba cannot be imported ({type(e).__name__}: {e})"
            else:
                _usable, _version = True, numba.__version__
        _decided = True
    if warn is not None:
        _warn(warn)


def _warn(reason):
    warnings.warn(f"dnnpy: compiled kernels are not used: {reason}. numpy runs instead; set "
                  "DNNPY_DISABLE_JIT=1 to silence this warning.", RuntimeWarning, stacklevel=4)


def available() -> bool:
    """Whether the compiled kernels run in this process (ignores ``force_numpy``)."""
    if not _decided:
        _decide()
    return _usable


# with force_numpy(): ... runs numpy only (this thread, and the tasks it hands to dnnpy's
# worker threads through parallel_for; nests): for tests and benchmarks comparing the twins
_numpy_only = NumpyOnly()
force_numpy = _numpy_only.force


def active() -> bool:
    """Whether a kernel asked for now runs: ``available()`` and no ``force_numpy`` block."""
    return not _numpy_only.on() and available()


def kernels(name):
    """The module ``dnnpy.kernels.<name>`` when the compiled kernels are to run now, else
    None (the caller runs its numpy code)."""
    if not active():
        return None
    return importlib.import_module(f"dnnpy.kernels.{name}")


def call(name, function, *args) -> bool:
    """Run the kernel ``dnnpy.kernels.<name>.<function>(*args)`` (it writes its results into
    its arguments): True when it ran, False when the caller must run its numpy code (the
    kernels are off, or this one's module does not load or it does not compile: then they
    are turned off for the process, with one warning). Any other error of the kernel is
    raised."""
    if not active():
        return False
    try:
        # (importing the module defines its kernels: Numba refuses one it cannot cache)
        module = importlib.import_module(f"dnnpy.kernels.{name}")
    except Exception as e:  # noqa: BLE001  (a kernel module that cannot load is a reason)
        disable(f"the kernels of {name} cannot be loaded ({type(e).__name__}: {_first_line(e)})")
        return False
    try:
        getattr(module, function)(*args)
    except Exception as e:
        from numba.core.errors import NumbaError
        if not isinstance(e, NumbaError):
            raise
        disable(f"the kernel {name}.{function} does not compile ({type(e).__name__}: {_first_line(e)})")
        return False
    return True


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def disable(reason):
    """Stop using the compiled kernels in this process (one ``RuntimeWarning`` naming
    ``reason``): for a kernel that does not load or compile, so that numpy runs instead."""
    global _usable, _reason
    with _lock:
        was, _usable, _reason = _usable, False, reason
    if was:
        _warn(reason)


def info() -> dict:
    """``{"used", "reason", "disabled_by_env", "numba"}`` for ``backend_info()``; decides
    first."""
    used = available()
    return {"used": used, "reason": _reason, "disabled_by_env": _env_disables(),
            "numba": _version}
