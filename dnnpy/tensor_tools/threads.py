"""``dnnpy.set_num_threads(n)`` / ``dnnpy.get_num_threads()``: one thread count for the two
CPU thread pools a training step uses.

* numpy's BLAS (OpenBLAS in numpy's wheels; MKL or others in some builds), which runs the
  numpy twin's GEMMs. It is limited through ``threadpoolctl`` (the field's standard way, used
  by scikit-learn and others), imported on the first call only. Without threadpoolctl the BLAS
  pool cannot be limited from a running process: ``set_num_threads`` then warns, naming why,
  and ``backend_info()["threads"]["reason"]`` says so; ``OPENBLAS_NUM_THREADS`` set before
  numpy is imported is the other way.
* oneDNN's OpenMP pool (libgomp), through ``onednn.set_num_threads`` when the oneDNN path
  (``dnnpy.tensor_tools.cpu.onednn``) is present; libgomp's ``omp_set_num_threads`` is what it
  calls, so the count holds for the OpenMP regions the calling thread starts.

Why one knob: the two pools are separate, and on a small machine the hand-off between them
is where time is lost. After a multi-threaded OpenBLAS call its worker busy-waits about 0.1 s
(``OPENBLAS_THREAD_TIMEOUT``, 2^28 cycles by default) and starves oneDNN's threads
(``bench/threads.py`` measures it; ``OPENBLAS_THREAD_TIMEOUT=4`` in the environment before
numpy loads cuts the spin).

How the OpenMP threads wait between ops is ``wait_policy.py``'s: dnnpy's default is
``OMP_WAIT_POLICY=PASSIVE`` (set at import when the user set no policy), because libgomp's
spinning threads collapse the speed of a machine whose cores other programs also use.
"""

from __future__ import annotations

import numbers
import os
import warnings

# importing the oneDNN path never loads the library (it decides at the first op)
from .cpu import onednn as _onednn
from .wait_policy import wait_policy_info

__all__ = ["set_num_threads", "get_num_threads", "threads_info"]

_state = {"requested": None}   # the count given to set_num_threads (None: never called)

_NO_THREADPOOLCTL = ("threadpoolctl is not installed, so numpy's BLAS pool (OpenBLAS) cannot be "
                     "limited from a running process (pip install threadpoolctl, or set "
                     "OPENBLAS_NUM_THREADS before numpy is imported)")


def _threadpoolctl():
    """The threadpoolctl module, or None when it is not installed."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def _check_count(n):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"set_num_threads: n must be an int >= 1, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    return int(n)


def set_num_threads(n):
    """Use ``n`` threads (an int >= 1) in numpy's BLAS pool and oneDNN's OpenMP pool.

    The BLAS limit needs ``threadpoolctl``; without it a ``RuntimeWarning`` says that only
    oneDNN's pool was set. Takes effect for later calls, process-wide for the BLAS and for the
    OpenMP regions started from the calling thread. Raises ``TypeError`` for a non-integer
    and ``ValueError`` for ``n < 1``.
    """
    n = _check_count(n)
    tpc = _threadpoolctl()
    if tpc is not None:
        tpc.threadpool_limits(limits=n, user_api="blas")   # stays in force (not a `with`)
    else:
        warnings.warn(f"set_num_threads({n}): {_NO_THREADPOOLCTL}; only oneDNN's pool was set",
                      RuntimeWarning, stacklevel=2)
    _onednn.set_num_threads(n)
    _state["requested"] = n


def _blas_pools(tpc):
    return [p for p in tpc.threadpool_info() if p.get("user_api") == "blas"]


def get_num_threads():
    """The thread count the CPU pools use: the ``n`` of the last ``set_num_threads(n)``;
    before any, the largest count among numpy's BLAS pools (via threadpoolctl) and oneDNN's
    pool, or ``os.cpu_count()`` when neither can be asked."""
    if _state["requested"] is not None:
        return _state["requested"]
    counts = []
    tpc = _threadpoolctl()
    if tpc is not None:
        counts += [p["num_threads"] for p in _blas_pools(tpc)]
    onednn_threads = _onednn.get_num_threads()
    if onednn_threads is not None:
        counts.append(int(onednn_threads))
    return max(counts) if counts else (os.cpu_count() or 1)


def _counts_chosen_by():
    if _state["requested"] is not None:
        return f"set_num_threads({_state['requested']})"
    env = [f"{v}={os.environ[v]}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
           if v in os.environ]
    if env:
        return "the environment (" + ", ".join(env) + ")"
    return "the libraries' default (one thread per CPU this process may use)"


def threads_info() -> dict:
    """What ``backend_info()["threads"]`` holds: ``requested`` (the last ``set_num_threads``
    count or None), ``chosen_by`` (who set the thread counts: ``set_num_threads``, the
    environment's ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS``, or the libraries' default),
    ``wait_policy`` (``wait_policy_info()``: the OpenMP wait setting in force, who chose it,
    whether dnnpy's default took effect and why not), ``blas`` (one dict per BLAS library loaded: ``library``, ``version``,
    ``num_threads``, ``threading_layer``, ``filepath``; None without threadpoolctl), ``openmp``
    (the OpenMP runtimes threadpoolctl sees, same fields), ``onednn`` (oneDNN's OpenMP thread
    count, None when the oneDNN path is absent) and ``reason`` (why the BLAS pool cannot be
    limited, or None)."""
    info = {"requested": _state["requested"], "chosen_by": _counts_chosen_by(),
            "wait_policy": wait_policy_info(), "blas": None, "openmp": None,
            "onednn": _onednn.get_num_threads(), "reason": None}
    tpc = _threadpoolctl()
    if tpc is None:
        info["reason"] = _NO_THREADPOOLCTL
        return info
    pools = {"blas": [], "openmp": []}
    for p in tpc.threadpool_info():
        if p.get("user_api") in pools:
            pools[p["user_api"]].append({"library": p.get("internal_api"), "version": p.get("version"),
                                         "num_threads": p.get("num_threads"),
                                         "threading_layer": p.get("threading_layer"),
                                         "filepath": p.get("filepath")})
    info.update(pools)
    return info


def threads_report(info) -> list:
    """The lines ``backend_info()`` prints for ``threads_info()``'s dict."""
    lines = []
    if info["blas"] is None:
        lines.append(f"  BLAS threads: unknown ({info['reason']})")
    else:
        for p in info["blas"] or [{"library": "none loaded", "version": None, "num_threads": None,
                                   "threading_layer": None}]:
            layer = f", {p['threading_layer']}" if p.get("threading_layer") else ""
            version = f" {p['version']}" if p.get("version") else ""
            count = f": {p['num_threads']} thread{'' if p['num_threads'] == 1 else 's'}" if p.get("num_threads") is not None else ""
            lines.append(f"  BLAS: {p['library']}{version}{layer}{count}")
    if info["onednn"] is not None:
        lines.append(f"  oneDNN (OpenMP): {info['onednn']} thread{'' if info['onednn'] == 1 else 's'}")
    if info.get("chosen_by"):
        lines.append(f"  thread counts chosen by {info['chosen_by']}")
    wait = info.get("wait_policy")
    if wait:
        why = f" (not applied: {wait['reason']})" if not wait["applied"] else ""
        lines.append(f"  OpenMP wait: {wait['setting']}, chosen by {wait['chosen_by']}{why}")
    return lines
