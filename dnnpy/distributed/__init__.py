"""Data-parallel training on several processes (``docs/distributed.md``).

A job is started by an MPI launcher, one process per replica::

    mpiexec -n 2 python -m mpi4py train.py          # or: python -m dnnpy.distributed.run -n 2 train.py

and ``dnn_trainer`` then trains one replica per process on its share of each mini-batch.
This package is the transport layer: where this process sits (``rank()``, ``world_size()``),
dlib's split of a mini-batch (``chunk_bounds``), and the communicators the trainer calls
(one process, MPI through mpi4py, NCCL through CuPy). It imports no MPI until a launcher
started more than one process, and nothing else of dnnpy.

Modules:

- ``comm.py``: the communicator interface the trainer calls, and its one-process form
- ``env.py``: where this process sits in a job (from the launcher's environment), ``chunk_bounds``
- ``mpi.py``: the MPI transport (mpi4py, loaded lazily) and the hook that ends the job on an error
- ``nccl.py``: the NCCL transport for CuPy arrays, one GPU per rank
- ``run.py``: ``python -m dnnpy.distributed.run -n N script.py``: start N processes under MPI
"""

from __future__ import annotations

import os

from .comm import communicator, single_process_communicator
from .env import chunk_bounds, chunk_counts, launched_rank, launched_world_size, shard
from .mpi import MPI_EXTRA_HINT, install_abort_hook, load_mpi, mpi_communicator, mpi_info
from .nccl import load_nccl, nccl_communicator

__all__ = ["communicator", "single_process_communicator", "mpi_communicator", "nccl_communicator",
           "get_communicator", "rank", "world_size", "chunk_bounds", "chunk_counts", "shard",
           "launched_world_size", "launched_rank", "install_abort_hook", "load_mpi", "load_nccl",
           "mpi_info", "MPI_EXTRA_HINT", "TRANSPORT_ENV"]

TRANSPORT_ENV = "DNNPY_DISTRIBUTED_TRANSPORT"   # "mpi" or "nccl": overrides the choice below

_world = None


def get_communicator(cuda=False, distinct_devices=False) -> communicator:
    """This process's communicator, made once: ``single_process_communicator`` unless a
    launcher started more than one process; then MPI (``mpi_communicator``, which installs
    the abort hook), or NCCL over MPI when ``cuda`` and ``distinct_devices`` (each rank on
    its own GPU; else CuPy arrays are staged through host memory). ``DNNPY_DISTRIBUTED_TRANSPORT``
    = ``mpi`` or ``nccl`` forces the choice."""
    global _world
    if _world is None:
        if launched_world_size() <= 1:
            _world = single_process_communicator()
        else:
            mpi = mpi_communicator()
            choice = os.environ.get(TRANSPORT_ENV, "").strip().lower()
            if choice not in ("", "mpi", "nccl"):
                raise ValueError(f"dnnpy.distributed: {TRANSPORT_ENV} must be 'mpi' or 'nccl', got {choice!r}")
            use_nccl = choice == "nccl" or (not choice and cuda and distinct_devices)
            _world = nccl_communicator(mpi) if use_nccl else mpi
    return _world


def rank() -> int:
    """This process's rank (0 without a launcher). Rank 0 prints and writes files."""
    return get_communicator().rank if _world is not None else launched_rank()


def world_size() -> int:
    """How many processes train together (1 without a launcher)."""
    return get_communicator().size if _world is not None else launched_world_size()
