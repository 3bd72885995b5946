"""Backend selection and the argument checks shared by the dispatchers.

The CUDA twin is used iff ``DNNPY_DISABLE_CUDA`` is unset or false, CuPy imports, a CUDA
device is usable, the twin package ``tensor_tools.cuda`` imports and cuDNN 9 loads. The
decision is made once per process, at the first ``use_cuda()`` (i.e. the first op), never
at ``import dnnpy``: a CPU-only install never imports CuPy. When CuPy is installed but CUDA
cannot be used, one ``RuntimeWarning`` names the reason (no driver, no device, cuDNN
missing, ...) and the CPU twin runs; ``unusable_reason()`` keeps that reason for
``backend_info()``.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import threading
import warnings

from ..tensor import tensor
from . import cpu

_cuda_module = None      # the CUDA twin, once found usable
_decided = False
_reason = None           # why CUDA is not used (None when it is, or before deciding)
_decide_lock = threading.Lock()
_local = threading.local()


def _env_disables_cuda() -> bool:
    # dlib's DLIB_DISABLE_CUDA_USE rule: unset, "", "0" or "false" keep CUDA on.
    value = os.environ.get("DNNPY_DISABLE_CUDA", "")
    return value.strip().lower() not in ("", "0", "false")


def _no_device_reason(cupy) -> str:
    """Why ``cupy.cuda.is_available()`` is False, in words."""
    try:
        driver = cupy.cuda.runtime.driverGetVersion()
    except Exception as e:  # noqa: BLE001  (any driver failure is the reason itself)
        return f"the CUDA driver cannot be queried ({e})"
    if driver == 0:
        return "no CUDA driver is installed (libcuda.so.1 not found)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        return f"the CUDA runtime reports {e} (driver {driver // 1000}.{driver % 1000 // 10})"
    if count < 1:
        return "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)"
    return "CuPy reports CUDA as unavailable"


def _cuda_twin():
    """``(module, None)`` when the CUDA twin is usable, else ``(None, reason)``; reason is
    None when no CUDA package is installed at all (then nothing warns)."""
    try:
        import cupy
    except ImportError:
        return None, None
    except Exception as e:  # noqa: BLE001  (a broken CuPy install: say so)
        return None, f"CuPy is installed but fails to import ({type(e).__name__}: {e})"
    try:
        available = cupy.cuda.is_available()
    except Exception as e:  # noqa: BLE001
        return None, f"CuPy {cupy.__version__} cannot query CUDA ({type(e).__name__}: {e})"
    if not available:
        return None, f"CuPy {cupy.__version__} is installed but {_no_device_reason(cupy)}"
    try:
        from . import cuda
    except Exception as e:  # noqa: BLE001
        return None, f"the CUDA twin dnnpy.tensor_tools.cuda fails to import ({type(e).__name__}: {e})"
    try:
        from .cuda._loader import cudnn_info
        info = cudnn_info()
    except Exception as e:  # noqa: BLE001
        return None, f"cuDNN 9 cannot be checked ({type(e).__name__}: {e})"
    if info.get("error"):
        return None, ("cuDNN 9 is missing or unusable (install nvidia-cudnn-cu12 or -cu13, e.g. "
                      f"pip install 'dnnpy[cuda12]'): {info['error']}")
    try:
        # bind every cuDNN function the twin calls now, not at the first convolution: a
        # library without one of them is a reason to use the CPU, not an error mid-training
        from .cuda._cudnn import api
        api()
    except Exception as e:  # noqa: BLE001
        return None, f"cuDNN {info.get('version_string', '9')} lacks a function dnnpy calls ({type(e).__name__}: {e})"
    return cuda, None


def _decide():
    global _cuda_module, _decided, _reason
    with _decide_lock:
        if _decided:
            return
        if _env_disables_cuda():
            module, reason = None, None
        else:
            module, reason = _cuda_twin()
        _cuda_module, _reason, _decided = module, reason, True
    if reason is not None:
        warnings.warn(f"dnnpy: CUDA is not used: {reason}. Running on the CPU (numpy) backend; "
                      "set DNNPY_DISABLE_CUDA=1 to silence this warning.", RuntimeWarning,
                      stacklevel=4)


def use_cuda() -> bool:
    """True iff ``DNNPY_DISABLE_CUDA`` is unset/false, CuPy imports, a CUDA device is usable,
    the CUDA twin imports and cuDNN 9 loads (decided once per process, warning once when
    CUDA packages are installed but unusable), and no ``force_cpu()`` block is active."""
    if getattr(_local, "forced_cpu", 0):
        return False
    if not _decided:
        _decide()
    return _cuda_module is not None


def unusable_reason():
    """Why the CUDA twin is not used (a sentence), or None when it is used, when no CUDA
    package is installed, or when ``DNNPY_DISABLE_CUDA`` turned it off."""
    if not _decided:
        _decide()
    return _reason


@contextlib.contextmanager
def force_cpu():
    """Run the enclosed block on the CPU twin (per thread; nests)."""
    _local.forced_cpu = getattr(_local, "forced_cpu", 0) + 1
    try:
        yield
    finally:
        _local.forced_cpu -= 1


def _backend():
    return _cuda_module if use_cuda() else cpu


def backend_name() -> str:
    return _backend().NAME


# ----------------------------------------------------------------------------------------
# checks shared by the dispatchers

def _check_tensors(op, **named):
    for name, t in named.items():
        if not isinstance(t, tensor):
            raise TypeError(f"{op}: {name} must be a dnnpy tensor, got {type(t).__name__}")


def _same_dims(op, **named):
    _check_tensors(op, **named)
    shapes = {name: t.shape for name, t in named.items()}
    if len(set(shapes.values())) > 1:
        detail = ", ".join(f"{n}{s}" for n, s in shapes.items())
        raise ValueError(f"{op}: tensors must have the same dimensions, got {detail}")


def _broadcastable(op, dest, src):
    if any(s not in (1, d) for s, d in zip(src.shape, dest.shape)):
        raise ValueError(
            f"{op}: src{src.shape} cannot be broadcast to dest{dest.shape} "
            "(each src dimension must be 1 or equal to dest's)")


def _check_real(op, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}")
    return float(value)
