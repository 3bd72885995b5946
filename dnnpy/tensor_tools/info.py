"""``dnnpy.backend_info()``: which backend runs the ops, and on what.

Imports CuPy only when it is asked for (and only if it is installed); never raises for a
missing or broken CUDA install: it reports it.
"""

from __future__ import annotations

import sys

from .. import jit as _jit
from ..distributed.mpi import mpi_info
from . import backend as _backend_module
from .cpu import onednn as _onednn
from .malloc_policy import malloc_policy_info
from .threads import threads_info, threads_report

__all__ = ["backend_info"]


def _cuda_details(info):
    """Fill ``info`` with what CuPy and the cuDNN loader can tell, field by field, so that
    one failing query (no driver, no device) does not hide the others."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001
        info["cupy"] = None
        info["cupy_error"] = f"{type(e).__name__}: {e}"
        return
    info["cupy"] = cupy.__version__
    rt = cupy.cuda.runtime

    def query(key, fn):
        try:
            info[key] = fn()
        except Exception as e:  # noqa: BLE001
            info[key] = None
            info.setdefault("errors", []).append(f"{key}: {type(e).__name__}: {e}")

    query("cuda_runtime_version", rt.runtimeGetVersion)
    query("cuda_driver_version", rt.driverGetVersion)
    if info["backend"] == "cuda":
        device = cupy.cuda.Device()
        query("device_id", lambda: device.id)
        props = {}
        query("device_name", lambda: props.setdefault("p", rt.getDeviceProperties(device.id))["name"]
              .decode(errors="replace"))
        query("compute_capability", lambda: f"{device.compute_capability[:-1]}.{device.compute_capability[-1]}")
        query("memory_free_bytes", lambda: device.mem_info[0])
        query("memory_total_bytes", lambda: device.mem_info[1])
    try:
        from .cuda._loader import cudnn_info
    except Exception as e:  # noqa: BLE001  (the loader itself missing or broken)
        info["cudnn_path"] = info["cudnn_version"] = None
        info["cudnn_error"] = f"{type(e).__name__}: {e}"
        return
    try:
        c = cudnn_info()
    except Exception as e:  # noqa: BLE001
        c = {"error": f"{type(e).__name__}: {e}"}
    info["cudnn_path"] = c.get("path")
    info["cudnn_version"] = c.get("version_string")
    if c.get("error"):
        info["cudnn_error"] = c["error"]


def _version(v):
    """CUDA's 12090 -> '12.9'."""
    return None if v is None else f"{v // 1000}.{v % 1000 // 10}"


def _report(info):
    lines = [f"dnnpy backend: {info['backend']}"]
    if info.get("reason"):
        lines.append(f"  CUDA not used: {info['reason']}")
    if info.get("disabled_by_env"):
        lines.append("  CUDA disabled by DNNPY_DISABLE_CUDA")
    if "cupy" in info:
        lines.append(f"  CuPy: {info['cupy'] or 'not importable: ' + info.get('cupy_error', '')}")
    if info.get("cupy"):
        lines.append(f"  CUDA runtime: {_version(info.get('cuda_runtime_version'))}, driver: "
                     f"{_version(info.get('cuda_driver_version')) if info.get('cuda_driver_version') else 'none'}")
    if info["backend"] == "cuda":
        total = info.get("memory_total_bytes")
        free = info.get("memory_free_bytes")
        mem = (f"{free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB"
               if total is not None and free is not None else "unknown")
        lines.append(f"  device {info.get('device_id')}: {info.get('device_name')}, compute capability "
                     f"{info.get('compute_capability')}, memory {mem}")
    if "cudnn_path" in info:
        if info.get("cudnn_path"):
            lines.append(f"  cuDNN {info['cudnn_version']}: {info['cudnn_path']}")
        else:
            lines.append(f"  cuDNN: not found ({info.get('cudnn_error', 'unknown reason')})")
    one = info.get("onednn")
    if one is not None:
        if one["used"]:
            lines.append(f"  CPU twin: numpy + oneDNN {one['version']} ({one['isa']}): "
                         f"{one['path']}")
        else:
            lines.append(f"  CPU twin: numpy only; oneDNN not used: {one['reason']}")
        if one.get("fallbacks"):
            lines.append(f"  oneDNN refused (numpy ran): {', '.join(one['fallbacks'][:5])}"
                         f"{' ...' if len(one['fallbacks']) > 5 else ''}")
    jit = info.get("jit")
    if jit is not None:
        lines.append(f"  compiled kernels (image code): Numba {jit['numba']}" if jit["used"]
                     else f"  compiled kernels not used (image code runs numpy): {jit['reason']}")
    for e in info.get("errors", []):
        lines.append(f"  ({e})")
    lines += threads_report(info["threads"])
    malloc = info.get("malloc")
    if malloc is not None:
        why = f" (not applied: {malloc['reason']})" if malloc["reason"] else ""
        lines.append(f"  malloc: {malloc['setting']}, chosen by {malloc['chosen_by']}{why}")
    mpi = info.get("mpi")
    if mpi is not None:
        lines.append(f"  MPI (data-parallel training): {mpi['library']}, mpi4py {mpi['mpi4py']}"
                     if mpi["available"] else f"  MPI: not available: {mpi['reason']}")
    return "\n".join(lines)


def backend_info(print_report: bool = True) -> dict:
    """Describe the active backend; print it unless ``print_report`` is False.

    Returns a dict: ``backend`` ("cpu" or "cuda"), ``reason`` (why CUDA is not used, or
    None), ``disabled_by_env``, ``numpy``; when CuPy is installed (and CUDA not disabled by
    ``DNNPY_DISABLE_CUDA``) also ``cupy``, ``cuda_runtime_version``, ``cuda_driver_version``
    (CUDA's integer form, 0 when there is no driver), ``cudnn_path``, ``cudnn_version``
    (``cudnn_error`` when it cannot be loaded); on the CUDA backend also ``device_id``,
    ``device_name``, ``compute_capability``, ``memory_free_bytes``, ``memory_total_bytes``.
    ``onednn`` describes the CPU twin's oneDNN path: ``used``, ``reason`` (why not),
    ``disabled_by_env`` (``DNNPY_DISABLE_ONEDNN``), and when used ``path``, ``version``,
    ``isa`` (the instruction set its kernels run), ``threads``; ``fallbacks`` lists the
    cases oneDNN refused and numpy ran.
    ``jit`` (``dnnpy.jit``): whether the image code's compiled kernels run:
    ``used``, ``reason`` (why not), ``disabled_by_env`` (``DNNPY_DISABLE_JIT``), ``numba``
    (its version).
    ``threads``: the CPU thread pools (``dnnpy.tensor_tools.threads.threads_info``: numpy's
    BLAS libraries and their thread counts via threadpoolctl, or the reason they are unknown;
    oneDNN's OpenMP thread count; the count of the last ``set_num_threads``).
    ``malloc`` (``dnnpy.tensor_tools.malloc_policy.malloc_policy_info``): glibc's malloc
    settings in force (``setting``, ``chosen_by``, ``applied``: whether dnnpy's own are,
    ``reason``: why not where it tried).
    ``mpi`` (``dnnpy.distributed.mpi_info``): ``available``, then ``library`` (the MPI
    library's version line), ``mpi4py``, ``world_size``, or ``reason`` (why not, naming the
    ``dnnpy[mpi]`` extra). When mpi4py is installed this loads and initialises MPI (a
    one-process world unless a launcher started this process).
    The backend reported is the process-wide choice (a ``force_cpu()`` block is ignored).
    """
    import numpy

    _backend_module.use_cuda()   # decide (and warn) first, ignoring force_cpu
    disabled = _backend_module._env_disables_cuda()
    info = {"backend": "cuda" if _backend_module._cuda_module is not None else "cpu",
            "reason": _backend_module.unusable_reason(), "disabled_by_env": disabled,
            "numpy": numpy.__version__}
    if not disabled:
        _cuda_details(info)
    info["onednn"] = _onednn.info()
    info["jit"] = _jit.info()
    info["threads"] = threads_info()
    info["malloc"] = malloc_policy_info()
    info["mpi"] = mpi_info()
    if print_report:
        print(_report(info), file=sys.stdout)
    return info
