"""Data-parallel training under ``mpiexec`` on localhost (opt-in: ``python -m pytest -m mpi
tests/test_distributed_mpi.py``; needs ``dnnpy[mpi]``). Each job trains through the real
``dnn_trainer`` (tests/dist_worker.py) in float64; the test process trains the same
scenario in one process and compares. Every mpiexec runs under a hard timeout."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dist_worker
from dnnpy.distributed.run import find_mpiexec

pytestmark = pytest.mark.mpi

pytest.importorskip("mpi4py")
MPIEXEC = find_mpiexec()
if MPIEXEC is None:
    pytest.skip("no mpiexec beside this Python or on PATH", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIMEOUT = 60     # a hang fails the test instead of the whole CI job
# float64 nets, summed in float64: the distributed parameters equal single-process training
# up to the rounding of a different summation order (measured ~1e-16); 1e-6 is the claim
TOL = 1e-6


def mpiexec(n, *args, timeout=TIMEOUT):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "mpi4py",
                           os.path.join(HERE, "dist_worker.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def results(out, n):
    return [np.load(os.path.join(out, f"rank{r}.npz")) for r in range(n)]


def check_against_single(ranks, want):
    p, losses, lr = want
    for r in ranks:                         # replicas bit-identical
        assert np.array_equal(r["params"], ranks[0]["params"])
    assert int(ranks[0]["size"]) == len(ranks)
    assert np.max(np.abs(ranks[0]["params"] - p)) <= TOL
    assert ranks[0]["losses"].shape == losses.shape
    assert np.max(np.abs(ranks[0]["losses"] - losses)) <= TOL
    assert float(ranks[0]["lr"]) == lr


@pytest.mark.parametrize("scenario, n", [
    ("classifier", 2),     # 8 -> 4/4, last batch 5 -> 3/2 (uneven), train() over 2 epochs
    ("classifier", 3),     # 8 -> 3/2/3, 5 -> 2/2/1
    ("metric", 3),         # coupled loss: 10 -> 3/4/3, pairs across ranks
    ("metric_tail", 4),    # coupled, last batch 3 -> 1/1/1/0: an idle rank in the gather
    ("barlow", 2),         # coupled, unsupervised, two views per sample: 9 -> 5/4
    ("adam_steps", 2),     # train_one_step, 7 -> 4/3, adam
])
def test_equals_single_process(tmp_path, scenario, n):
    job = mpiexec(n, scenario, tmp_path)
    assert job.returncode == 0, job.stderr[-3000:]
    check_against_single(results(tmp_path, n), dist_worker.run(scenario))


def test_resume_across_world_sizes(tmp_path):
    """2 ranks for 3 steps, then 1 process to 5, then 3 ranks to 8: the same trajectory as
    8 steps in one process (the sync file does not depend on the number of ranks)."""
    sync = tmp_path / "state.sync"
    job = mpiexec(2, "adam_steps", tmp_path, sync, 3)
    assert job.returncode == 0, job.stderr[-3000:]
    assert int(results(tmp_path, 2)[0]["losses"].size) == 3
    one = dist_worker.run("adam_steps", str(sync), 5)
    assert one[1].size == 5
    job = mpiexec(3, "adam_steps", tmp_path, sync, 8)
    assert job.returncode == 0, job.stderr[-3000:]
    check_against_single(results(tmp_path, 3), dist_worker.run("adam_steps", None, 8))


@pytest.mark.parametrize("scenario, expect", [
    ("raise", "rank 1 fails on purpose"),
    ("kill", None),
    ("mismatch", "the replicas differ in their solver"),
    ("data_sizes", "every rank must pass the same data"),
])
def test_a_failing_rank_ends_the_job(tmp_path, scenario, expect):
    job = mpiexec(2, scenario, tmp_path, timeout=30)     # TimeoutExpired = a hang = failure
    assert job.returncode != 0
    if expect is not None:
        assert expect in job.stderr
