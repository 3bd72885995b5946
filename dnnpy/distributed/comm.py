"""The communicator interface the data-parallel trainer calls, and its one-process form.

Every method except the attributes is COLLECTIVE: all ranks call it, in the same order.
Transports (``dnnpy.distributed.mpi``, ``dnnpy.distributed.nccl``) implement the same
methods; nothing here moves data between processes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["communicator", "single_process_communicator"]


class communicator:
    """What the trainer needs from a transport.

    ``rank``, ``size``, ``local_rank`` (the rank among the processes of this machine, for
    picking a GPU) and ``transport`` (a name for messages) are attributes.
    ``device_arrays``: the transport reduces CuPy arrays on the device (NCCL) rather than
    through host memory."""

    rank = 0
    size = 1
    local_rank = 0
    transport = "none"
    device_arrays = False

    def allreduce_sum(self, buf):
        """Replace the contiguous array ``buf`` by the element-wise sum over the ranks."""
        raise NotImplementedError

    def allgather_rows(self, local):
        """Every rank's array concatenated along axis 0 in rank order (shapes equal beyond
        axis 0; a rank may hold 0 rows). Returns a new host (numpy) array."""
        raise NotImplementedError

    def bcast_bytes(self, data):
        """Rank 0's ``data`` (bytes or None) on every rank."""
        raise NotImplementedError

    def bcast_object(self, obj):
        """Rank 0's small picklable ``obj`` on every rank."""
        raise NotImplementedError

    def allgather_object(self, obj):
        """The list of every rank's small picklable ``obj``, in rank order."""
        raise NotImplementedError

    def abort(self, code=1):
        """End every process of the job now (a rank that raised)."""
        raise SystemExit(code)

    def __repr__(self):
        return f"<{type(self).__name__} rank {self.rank} of {self.size} ({self.transport})>"


class single_process_communicator(communicator):
    """A world of one: every collective is the identity."""

    transport = "single process"

    def allreduce_sum(self, buf):
        pass

    def allgather_rows(self, local):
        return np.array(local, copy=True)

    def bcast_bytes(self, data):
        return data

    def bcast_object(self, obj):
        return obj

    def allgather_object(self, obj):
        return [obj]
