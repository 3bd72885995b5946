"""``python -m dnnpy.distributed.run -n N [mpiexec options] script.py [args]``: start ``N``
processes of ``script.py`` under MPI, as ``mpiexec -n N python -m mpi4py script.py args``
(``-m package.module [args]`` in place of the script runs a module, as ``python -m`` does).

Finds the ``mpiexec`` next to this Python (the MPICH wheel puts it there) or on ``PATH``.
``-m mpi4py`` makes a rank that raises abort the whole job instead of leaving the others
waiting. ``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` are set to cores / N when unset, so
N ranks do not oversubscribe the machine. Other options before the script (``-hosts a,b``,
``-f hostfile``) pass through to ``mpiexec``. Open MPI wants ``--allow-run-as-root`` as root
and ``--oversubscribe`` for more ranks than cores: add them yourself; they are not added
silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .mpi import MPI_EXTRA_HINT

__all__ = ["find_mpiexec", "build_command", "main"]

USAGE = ("usage: python -m dnnpy.distributed.run -n N [mpiexec options] "
         "(script.py | -m module) [args]")


def find_mpiexec():
    """The ``mpiexec`` beside ``sys.executable``, else the one on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


def build_command(argv, mpiexec="mpiexec", python=None):
    """``(command list, N)`` for the launcher's arguments ``argv`` (``-n N``/``-np N``,
    mpiexec options, then the script and its arguments). ValueError with the usage when
    ``-n`` or the script is missing."""
    python = python or sys.executable
    n, passthrough, i = None, [], 0
    while i < len(argv):
        a = argv[i]
        if a == "-m":                     # a module instead of a script: mpi4py takes -m
            break
        if a in ("-n", "-np"):
            if i + 1 >= len(argv):
                raise ValueError(f"{a} needs a number; {USAGE}")
            n = argv[i + 1]
            i += 2
        elif a.startswith("-"):
            passthrough.append(a)
            if i + 1 < len(argv) and not argv[i + 1].startswith("-") and not argv[i + 1].endswith(".py"):
                passthrough.append(argv[i + 1])   # an option's value (-hosts a,b)
                i += 1
            i += 1
        else:
            break
    script = argv[i:]
    if n is None or not script or script == ["-m"]:
        raise ValueError(USAGE)
    try:
        n = int(n)
    except ValueError:
        raise ValueError(f"-n must be an integer, got {n!r}; {USAGE}") from None
    if n < 1:
        raise ValueError(f"-n must be >= 1, got {n}")
    return [mpiexec, "-n", str(n), *passthrough, python, "-m", "mpi4py", *script], n


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    try:
        cmd, n = build_command(argv, mpiexec=find_mpiexec() or "mpiexec")
    except ValueError as e:
        print(f"dnnpy.distributed.run: {e}", file=sys.stderr)
        return 2
    if find_mpiexec() is None:
        print(f"dnnpy.distributed.run: no mpiexec found beside {sys.executable} or on PATH; "
              f"{MPI_EXTRA_HINT}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    threads = str(max(1, (os.cpu_count() or 1) // n))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(var, threads)
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
