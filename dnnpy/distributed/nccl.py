"""The NCCL transport for CuPy arrays (``cupy.cuda.nccl``), one GPU per rank.

Bootstrapped through MPI as NCCL's documentation describes: rank 0 draws the unique id
(``nccl.get_unique_id()``), MPI broadcasts it, and every rank builds its
``nccl.NcclCommunicator(world, uid, rank)`` on its own device. Device arrays are summed with
``allReduce`` on the current CuPy stream; host arrays, bytes and objects go through MPI.

NOT RUN HERE: the machine this was written on has no GPU, and NCCL refuses two ranks on one
GPU, so only the pure logic (dtype table, bootstrap order, dispatch) is tested, with a fake
module (``tests/test_distributed_rules.py``). ``docs/distributed.md`` says so.
"""

from __future__ import annotations

import numpy as np

from .comm import communicator
from .mpi import _is_device_array

__all__ = ["nccl_communicator", "load_nccl", "nccl_dtype"]

_DTYPES = {np.dtype(np.float16): "NCCL_FLOAT16", np.dtype(np.float32): "NCCL_FLOAT32",
           np.dtype(np.float64): "NCCL_FLOAT64", np.dtype(np.int32): "NCCL_INT32",
           np.dtype(np.int64): "NCCL_INT64", np.dtype(np.uint8): "NCCL_UINT8"}


def load_nccl():
    """``cupy.cuda.nccl`` if NCCL can be used (CuPy installed, NCCL found), else ImportError
    with the reason and the package to install."""
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        raise ImportError(f"dnnpy.distributed: the NCCL transport needs CuPy with NCCL "
                          f"({type(e).__name__}: {e}); pip install nvidia-nccl-cu12 (or -cu13)") from e
    if not getattr(nccl, "available", True):
        raise ImportError("dnnpy.distributed: CuPy found no NCCL library; pip install "
                          "nvidia-nccl-cu12 (or -cu13, matching CuPy)")
    return nccl


def nccl_dtype(nccl, dtype):
    """NCCL's datatype constant for a numpy dtype; TypeError naming it when NCCL has none."""
    name = _DTYPES.get(np.dtype(dtype))
    if name is None:
        raise TypeError(f"nccl_communicator: NCCL cannot reduce {np.dtype(dtype).name} arrays")
    return getattr(nccl, name)


class nccl_communicator(communicator):
    """NCCL for device arrays, over an ``mpi_communicator`` (``mpi``) for everything else.
    Each rank must already use its own GPU (``cupy.cuda.Device(i).use()``) when this is built.
    ``nccl`` and ``cupy`` may be given (tests pass fakes); by default they are imported."""

    transport = "nccl"
    device_arrays = True

    def __init__(self, mpi, nccl=None, cupy=None):
        if nccl is None:
            nccl = load_nccl()
        if cupy is None:
            import cupy
        self._nccl, self._cupy, self._mpi = nccl, cupy, mpi
        self.rank, self.size, self.local_rank = mpi.rank, mpi.size, mpi.local_rank
        uid = mpi.bcast_object(nccl.get_unique_id() if mpi.rank == 0 else None)
        self._comm = nccl.NcclCommunicator(mpi.size, uid, mpi.rank)

    def allreduce_sum(self, buf):
        if not _is_device_array(buf):
            self._mpi.allreduce_sum(buf)
            return
        if not buf.flags.c_contiguous:
            raise TypeError("nccl_communicator.allreduce_sum: needs a C-contiguous device array")
        stream = self._cupy.cuda.get_current_stream()
        self._comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, nccl_dtype(self._nccl, buf.dtype),
                             self._nccl.NCCL_SUM, stream.ptr)
        stream.synchronize()

    def allgather_rows(self, local):
        return self._mpi.allgather_rows(local)

    def bcast_bytes(self, data):
        return self._mpi.bcast_bytes(data)

    def bcast_object(self, obj):
        return self._mpi.bcast_object(obj)

    def allgather_object(self, obj):
        return self._mpi.allgather_object(obj)

    def abort(self, code=1):
        self._mpi.abort(code)
