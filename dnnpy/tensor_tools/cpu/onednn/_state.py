"""Whether oneDNN runs: the once-per-process decision (with its one warning), the per-thread
``force_numpy()`` switch, the fallback log, ``info()`` and the OpenMP thread count. See the
package docstring."""

from __future__ import annotations

import logging
import os
import threading
import warnings

import numpy as np

from ....errors import ThreadSettingWarning
from ....numpy_only import NumpyOnly
from ...wait_policy import warning_for_onednn
from . import _api
from . import _primitive as P
from ._loader import OnednnNotFoundError

__all__ = ["active", "available", "force_numpy", "info", "note_fallback", "set_num_threads",
           "get_num_threads", "isa_name"]

_log = logging.getLogger("dnnpy.onednn")
_decided = False
_usable = False
_reason = None
_decide_lock = threading.Lock()
_fallbacks = {}            # (op, detail) -> count, for info()
_fallback_lock = threading.Lock()

_ISA_NAMES = {1: "sse41", 3: "avx", 7: "avx2", 15: "avx2_vnni", 31: "avx2_vnni_2",
              39: "avx512_core", 103: "avx512_core_vnni", 231: "avx512_core_bf16",
              495: "avx512_core_fp16", 4079: "avx512_core_amx", 8175: "avx512_core_amx_fp16"}


def _env_disables() -> bool:
    value = os.environ.get("DNNPY_DISABLE_ONEDNN", "")
    return value.strip().lower() not in ("", "0", "false")


def _probe():
    """Load the library and run a first tiny primitive: ``None`` or the reason it fails."""
    try:
        api = _api.api()
    except OnednnNotFoundError as e:
        return str(e), e.installed
    except Exception as e:  # noqa: BLE001  (a broken library is a reason, never an error)
        return f"oneDNN cannot be loaded ({type(e).__name__}: {e})", True
    try:
        x = np.array([-1.0, 2.0, -3.0, 4.0], dtype=np.float32)
        if _relu_probe(x).tolist() != [0.0, 2.0, 0.0, 4.0]:
            return f"oneDNN {'.'.join(map(str, api.version))} computes a wrong ReLU", True
    except Exception as e:  # noqa: BLE001
        return f"oneDNN's first primitive fails ({type(e).__name__}: {e})", True
    return None, True


def _relu_probe(x):
    """ReLU of a small float32 vector through a fresh eltwise primitive."""
    md = P.plain(x.shape)
    pd = _api.api().new("dnnl_eltwise_forward_primitive_desc_create", P.engine(),
                        _api.ENUMS["dnnl_forward_inference"], _api.ENUMS["dnnl_eltwise_relu"],
                        md.handle, md.handle, 0.0, 0.0, None)
    prim = P.Primitive(pd, {_api.ARGS["DNNL_ARG_SRC"]: md, _api.ARGS["DNNL_ARG_DST"]: md},
                       owned=[md])
    try:
        y = np.empty_like(x)
        prim({_api.ARGS["DNNL_ARG_SRC"]: x, _api.ARGS["DNNL_ARG_DST"]: y})
        return y
    finally:
        prim.destroy()


def _decide():
    global _decided, _usable, _reason
    with _decide_lock:
        if _decided:
            return
        warn = None
        if _env_disables():
            usable, reason = False, "turned off by DNNPY_DISABLE_ONEDNN"
        else:
            reason, installed = _probe()
            usable = reason is None
            if not usable and installed:
                warn = reason
        _usable, _reason, _decided = usable, reason, True
    if warn is not None:
        warnings.warn(f"dnnpy: oneDNN is not used: {warn}. The CPU twin runs numpy only; set "
                      "DNNPY_DISABLE_ONEDNN=1 to silence this warning.", RuntimeWarning,
                      stacklevel=5)
    spinning = warning_for_onednn() if usable else None
    if spinning is not None:
        warnings.warn(spinning, ThreadSettingWarning, stacklevel=5)


def available() -> bool:
    """Whether oneDNN is loaded and usable in this process (ignores ``force_numpy``)."""
    if not _decided:
        _decide()
    return _usable


def active() -> bool:
    """Whether the ops should try oneDNN now: ``available()`` and no ``force_numpy()``
    block is open in this thread."""
    if _numpy_only.on():
        return False
    return _usable if _decided else available()


# with force_numpy(): ... runs the numpy twin only (this thread, and the tasks it hands to
# dnnpy's worker threads through parallel_for; nests)
_numpy_only = NumpyOnly()
force_numpy = _numpy_only.force


def note_fallback(op, detail, why):
    """Record that oneDNN refused ``op`` for ``detail`` (a shape) and numpy ran instead;
    logged once per (op, detail)."""
    key = (op, detail)
    with _fallback_lock:
        first = key not in _fallbacks
        _fallbacks[key] = _fallbacks.get(key, 0) + 1
    if first:
        _log.info("oneDNN refused %s for %s (%s); numpy runs it", op, detail, why)


def isa_name(isa) -> str:
    return _ISA_NAMES.get(isa, f"{isa:#x}")


def info() -> dict:
    """``{"used", "reason", "disabled_by_env", "path", "version", "isa", "threads",
    "fallbacks"}`` for ``backend_info()``; decides first."""
    used = available()
    out = {"used": used, "reason": _reason, "disabled_by_env": _env_disables()}
    if used:
        api = _api.api()
        out.update(path=api.path, version=".".join(map(str, api.version)), isa=isa_name(api.isa),
                   threads=get_num_threads())
    with _fallback_lock:
        out["fallbacks"] = [f"{op} {detail}" for op, detail in _fallbacks]
    return out


# ----------------------------------------------------------------------------------------
# threads: the gomp build of oneDNN runs on libgomp's OpenMP pool

def set_num_threads(n: int):
    """Set the OpenMP pool oneDNN runs on to ``n`` threads (``omp_set_num_threads``)."""
    if not available():
        return
    P.gomp().omp_set_num_threads(int(n))


def set_num_threads_if_running(n: int):
    """``omp_set_num_threads(n)`` for the calling thread, only where oneDNN is already in use
    (never loads it): for the threads dnnpy starts itself, whose OpenMP count is otherwise
    libgomp's default, one per CPU."""
    if _decided and _usable:
        P.gomp().omp_set_num_threads(int(n))


def get_num_threads():
    """The OpenMP pool's size (``omp_get_max_threads``), or None when oneDNN is unused."""
    if not available():
        return None
    return int(P.gomp().omp_get_max_threads())
