"""Where this process sits in a data-parallel job, read from the launcher's environment
(no MPI import), and dlib's split of a mini-batch into contiguous chunks.

Reading the environment first keeps single-process users free of MPI: ``mpi4py`` is imported
only when a launcher says the world has more than one process.
"""

from __future__ import annotations

import math
import os

__all__ = ["launched_world_size", "launched_rank", "chunk_bounds", "chunk_counts", "shard"]

# (size variable, rank variable) of the launchers we know: MPICH/Intel MPI (hydra), Open MPI,
# MVAPICH, Slurm's srun
_LAUNCHERS = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
              ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"), ("SLURM_NTASKS", "SLURM_PROCID"))


def _env_int(name):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def launched_world_size() -> int:
    """The number of processes the launcher (``mpiexec``, ``srun``) started, 1 when none did."""
    for size, _ in _LAUNCHERS:
        n = _env_int(size)
        if n is not None and n > 0:
            return n
    return 1


def launched_rank() -> int:
    """This process's rank as the launcher set it (0 when not launched)."""
    for size, rank in _LAUNCHERS:
        if _env_int(size) is not None:
            return _env_int(rank) or 0
    return 0


def _round_half_away(x: float) -> int:
    """C++ ``std::round`` for x >= 0 (Python's round() rounds halves to even)."""
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def chunk_bounds(n: int, world: int, rank: int) -> tuple[int, int]:
    """``[lo, hi)`` of the ``n`` samples of a mini-batch that ``rank`` of ``world`` trains on:
    dlib's ``send_job`` split (``block = n/world``; chunk i is ``[round(i*block),
    round(i*block + block))``, ``i*block`` accumulated by repeated addition as dlib does), so
    a 1-process run is the single-process trainer exactly. A chunk may be empty when
    ``n < world``."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"chunk_bounds: rank {rank} is not in a world of {world}")
    block = n / float(world)
    j = 0.0
    for _ in range(rank):
        j += block
    return _round_half_away(j), _round_half_away(j + block)


def chunk_counts(n: int, world: int) -> list[int]:
    """The size of every rank's chunk of ``n`` samples (``chunk_bounds``)."""
    return [hi - lo for lo, hi in (chunk_bounds(n, world, r) for r in range(world))]


def shard(seq, world: int, rank: int):
    """``rank``'s contiguous slice of ``seq`` (``chunk_bounds`` over ``len(seq)``)."""
    lo, hi = chunk_bounds(len(seq), world, rank)
    return seq[lo:hi]
