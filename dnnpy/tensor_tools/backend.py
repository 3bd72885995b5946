"""Backend selection and the argument checks shared by the dispatchers."""

from __future__ import annotations

import contextlib
import os
import threading

from ..tensor import tensor
from . import cpu

_cuda_module = None      # the CUDA twin, once found usable
_decided = False
_local = threading.local()


def _env_disables_cuda() -> bool:
    # dlib's DLIB_DISABLE_CUDA_USE rule: unset, "", "0" or "false" keep CUDA on.
    value = os.environ.get("DNNPY_DISABLE_CUDA", "")
    return value.strip().lower() not in ("", "0", "false")


def _cuda_twin():
    """The CUDA twin module if it exists, CuPy imports and a device is present, else None."""
    try:
        from . import cuda  # noqa: F401  (arrives with the CUDA backend)
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cuda
    except Exception:  # any import or driver failure means: no usable GPU
        return None


def use_cuda() -> bool:
    """True iff ``DNNPY_DISABLE_CUDA`` is unset/false, the CUDA twin and CuPy import and a
    device exists (decided once per process), and no ``force_cpu()`` block is active."""
    global _cuda_module, _decided
    if getattr(_local, "forced_cpu", 0):
        return False
    if not _decided:
        _cuda_module = None if _env_disables_cuda() else _cuda_twin()
        _decided = True
    return _cuda_module is not None


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
