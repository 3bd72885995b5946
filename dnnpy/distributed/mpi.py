"""The MPI transport (mpi4py, loaded lazily) and the hook that ends the whole job when one
rank raises.

``mpi4py`` is imported only by ``load_mpi()``, i.e. when a launcher started more than one
process or when asked for (``backend_info()``, ``mpi_communicator()``). Buffers on the host
(numpy) go straight to MPI; CuPy arrays are staged through host memory, since the MPI wheels
on PyPI are not CUDA-aware (``docs/distributed.md``).
"""

from __future__ import annotations

import sys
import traceback

import numpy as np

from .comm import communicator

__all__ = ["load_mpi", "mpi_communicator", "mpi_info", "install_abort_hook", "MPI_EXTRA_HINT"]

MPI_EXTRA_HINT = ("install the extra: pip install 'dnnpy[mpi]' (mpi4py and the MPICH wheel; "
                  "on a cluster, pip install mpi4py against the system MPI instead)")


def load_mpi(why="data-parallel training"):
    """``mpi4py.MPI`` (importing it initialises MPI: a one-process 'singleton' world when no
    launcher started this process). Raises ImportError naming the extra when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"dnnpy.distributed: {why} needs MPI through mpi4py, which cannot be "
                          f"imported ({type(e).__name__}: {e}); {MPI_EXTRA_HINT}") from e
    except RuntimeError as e:   # mpi4py found no MPI library to load
        raise ImportError(f"dnnpy.distributed: {why} needs an MPI library for mpi4py, which "
                          f"failed to load it ({e}); {MPI_EXTRA_HINT}") from e
    return MPI


def mpi_info() -> dict:
    """``{"available": bool, "mpi4py": version, "library": first line of the MPI library's
    version, "world_size": ...}`` or ``{"available": False, "reason": ...}``. Loads MPI."""
    try:
        MPI = load_mpi("reporting MPI")
    except ImportError as e:
        return {"available": False, "reason": str(e)}
    import mpi4py

    return {"available": True, "mpi4py": mpi4py.__version__,
            "library": " ".join(MPI.Get_library_version().strip().splitlines()[0].split()),
            "world_size": MPI.COMM_WORLD.Get_size()}


_hook_installed = False


def install_abort_hook(comm=None):
    """Make an uncaught exception on any rank end the whole job (``MPI_Abort``) after printing
    its traceback, as ``python -m mpi4py`` and ChainerMN's ``global_except_hook`` do: without
    it the other ranks wait forever in their next collective call."""
    global _hook_installed
    if _hook_installed:
        return
    MPI = load_mpi()
    world = comm if comm is not None else MPI.COMM_WORLD
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            sys.stderr.write(f"dnnpy.distributed: rank {world.Get_rank()} of {world.Get_size()} "
                             f"raised; aborting the job\n")
            traceback.print_exception(kind, value, tb)
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            if world.Get_size() > 1:
                world.Abort(1)
            previous(kind, value, tb)

    sys.excepthook = hook
    _hook_installed = True


def _is_device_array(a):
    return hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray)


class mpi_communicator(communicator):
    """MPI over ``comm`` (default ``COMM_WORLD``). Host arrays go to MPI directly; CuPy arrays
    are copied to the host, reduced there, and copied back ("host-staged")."""

    transport = "mpi"

    def __init__(self, comm=None, abort_hook=True):
        MPI = load_mpi()
        self._MPI = MPI
        self._comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        self.local_rank = self._comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        if abort_hook and self.size > 1:
            install_abort_hook(self._comm)

    @property
    def mpi_comm(self):
        """The mpi4py communicator underneath."""
        return self._comm

    def allreduce_sum(self, buf):
        if _is_device_array(buf):
            import cupy

            host = cupy.asnumpy(buf)
            self._comm.Allreduce(self._MPI.IN_PLACE, host, op=self._MPI.SUM)
            buf.set(host)
            return
        if not (isinstance(buf, np.ndarray) and buf.flags.c_contiguous):
            raise TypeError(f"mpi_communicator.allreduce_sum: needs a C-contiguous numpy array, "
                            f"got {type(buf).__name__}")
        self._comm.Allreduce(self._MPI.IN_PLACE, buf, op=self._MPI.SUM)

    def allgather_rows(self, local):
        if _is_device_array(local):
            import cupy

            local = cupy.asnumpy(local)
        local = np.ascontiguousarray(local)
        # a rank with no rows (an idle rank on a short last batch) cannot know the row shape
        # or dtype: it takes those of the ranks that have rows, so every rank's MPI datatype
        # and counts agree (a mismatch truncates the message and aborts the job)
        meta = self._comm.allgather((local.shape[0], tuple(local.shape[1:]), local.dtype.str))
        counts = [m[0] for m in meta]
        full = [(r, m) for r, m in enumerate(meta) if m[0] > 0]
        if full:
            r0, (_, tail, dt) = full[0]
            bad = [(r, m) for r, m in full if m[1:] != (tail, dt)]
            if bad:
                r, m = bad[0]
                raise ValueError(f"mpi_communicator.allgather_rows: the ranks' rows differ: rank {r0} has "
                                 f"rows of shape {tail} ({np.dtype(dt)}), rank {r} of shape {m[1]} "
                                 f"({np.dtype(m[2])})")
            if local.shape[0] == 0:
                local = np.empty((0,) + tail, np.dtype(dt))
        row = int(np.prod(local.shape[1:], dtype=np.int64))
        out = np.empty((sum(counts),) + local.shape[1:], local.dtype)
        self._comm.Allgatherv(local, [out, [c * row for c in counts]])
        return out

    def bcast_bytes(self, data):
        n = self._comm.bcast(None if data is None else len(data), root=0)
        if n is None:
            return None
        buf = np.frombuffer(data, np.uint8).copy() if self.rank == 0 else np.empty(n, np.uint8)
        self._comm.Bcast(buf, root=0)
        return data if self.rank == 0 else buf.tobytes()

    def bcast_object(self, obj):
        return self._comm.bcast(obj, root=0)

    def allgather_object(self, obj):
        return self._comm.allgather(obj)

    def abort(self, code=1):
        self._comm.Abort(code)
