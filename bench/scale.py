"""Data-parallel throughput of dnnpy on 1 and 2 ranks (MPI, CPU), the communication share of
a step, and PyTorch DDP (gloo) on the same net when torch is importable.

    python bench/scale.py [--quick] [--steps N] [--batch B]

Net (both sides): input 16x16 float32, con 8 3x3 pad 1, relu, max_pool 2x2, fc 32, relu,
fc 10, loss_multiclass_log / CrossEntropyLoss; sgd lr 0.01; global batch B (default 64),
split across the ranks (dnnpy: dlib's contiguous chunks; torch: B/R per rank). Each
configuration runs as ``mpiexec -n R python bench/scale.py --worker ...`` with
``--threads`` threads per rank (default 1: one core per rank, so 2 ranks use twice the
cores of 1; a shared machine's busy cores make multi-threaded ranks erratic); torch ranks rendezvous over TCP on localhost with the rank
taken from the MPI launcher's environment.

Columns: samples/s of the global batch (median of the timed steps, after warm-up), the
speed-up of 2 ranks over 1, and for dnnpy the shares of a step spent in the gradient
all-reduce itself ("all-reduce") and waiting for the slower rank before it ("wait": a
barrier timed apart, so the all-reduce column is the transfer alone). The
ratios dnnpy/torch compare like with like (same ranks, same batch). On a shared 2-core
machine the numbers are noisy: re-measure on a quiet machine before quoting them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _data(batch, seed=0):
    r = np.random.default_rng(seed)
    x = r.normal(size=(batch, 16, 16)).astype(np.float32)
    y = r.integers(0, 10, batch)
    return x, y


def dnnpy_worker(steps, batch):
    sys.path.insert(0, ROOT)
    import dnnpy
    from dnnpy import con, dnn_trainer, fc, input, loss_multiclass_log, max_pool, relu, sgd

    net = loss_multiclass_log[fc[10, relu[fc[32, max_pool[2, 2, 2, 2, relu[con[8, 3, 3, 1, 1,
                                                                              input[np.float32]]]]]]]]()
    t = dnn_trainer(net, sgd())
    comm = dnnpy.distributed.get_communicator()
    spent = [0.0, 0.0]
    reduce = comm.allreduce_sum
    barrier = getattr(comm, "mpi_comm", None)

    def timed(buf):
        t0 = time.perf_counter()
        if barrier is not None:
            barrier.Barrier()            # waiting for the slower rank, timed apart
        t1 = time.perf_counter()
        reduce(buf)
        spent[0] += t1 - t0
        spent[1] += time.perf_counter() - t1

    comm.allreduce_sum = timed
    x, y = _data(batch)
    xs, ys = list(x), [int(v) for v in y]
    times, waits, comms = [], [], []
    for i in range(steps + 3):
        spent[0] = spent[1] = 0.0
        t0 = time.perf_counter()
        t.train_one_step(xs, ys)
        if i >= 3:
            times.append(time.perf_counter() - t0)
            waits.append(spent[0])
            comms.append(spent[1])
    return {"step": float(np.median(times)), "wait": float(np.median(waits)),
            "comm": float(np.median(comms)), "rank": comm.rank, "size": comm.size}


def torch_worker(steps, batch):
    import torch
    import torch.distributed as tdist

    rank, size = int(os.environ.get("PMI_RANK", 0)), int(os.environ.get("PMI_SIZE", 1))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 32),
                                torch.nn.ReLU(), torch.nn.Linear(32, 10))
    if size > 1:
        tdist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=rank, world_size=size)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = _data(batch)
    lo, hi = rank * batch // size, (rank + 1) * batch // size
    xs, ys = list(x[lo:hi]), [int(v) for v in y[lo:hi]]
    lossf = torch.nn.CrossEntropyLoss()
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        xb = torch.from_numpy(np.stack(xs))[:, None]
        yb = torch.tensor(ys)
        opt.zero_grad()
        lossf(model(xb), yb).backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    if size > 1:
        tdist.destroy_process_group()
    return {"step": float(np.median(times)), "comm": None, "rank": rank, "size": size}


def launch(side, ranks, steps, batch, threads=1):
    from dnnpy.distributed.run import find_mpiexec

    threads = str(threads)
    env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as results:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", side, "--steps", str(steps),
               "--batch", str(batch), "--results", results]
        if ranks > 1:
            cmd = [find_mpiexec() or "mpiexec", "-n", str(ranks), sys.executable, "-m", "mpi4py"] + cmd[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"{side} on {ranks} ranks failed:\n{out.stderr[-2000:]}")
        rows = []
        for name in sorted(os.listdir(results)):
            with open(os.path.join(results, name)) as f:
                rows.append(json.load(f))
    if len(rows) != ranks:
        raise RuntimeError(f"{side} on {ranks} ranks: {len(rows)} result files")
    step = max(r["step"] for r in rows)            # the job goes at its slowest rank
    comm = max((r["comm"] or 0.0) for r in rows) if side == "dnnpy" else None
    wait = max(r.get("wait", 0.0) for r in rows) if side == "dnnpy" else None
    return {"samples_per_s": batch / step, "step_ms": 1e3 * step,
            "comm_share": None if comm is None else comm / step,
            "wait_share": None if wait is None else wait / step}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 timed steps")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="threads per rank (default 1)")
    ap.add_argument("--worker", choices=("dnnpy", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    steps = 5 if args.quick else args.steps
    if args.worker:
        fn = dnnpy_worker if args.worker == "dnnpy" else torch_worker
        row = fn(steps, args.batch)
        # one file per rank: the ranks' stdout lines would interleave
        with open(os.path.join(args.results, f"rank{row['rank']}.json"), "w") as f:
            json.dump(row, f)
        return None
    sides = ("dnnpy", "torch") if importlib.util.find_spec("torch") else ("dnnpy",)
    res = {(s, r): launch(s, r, steps, args.batch, args.threads) for s in sides for r in (1, 2)}
    print(f"global batch {args.batch}, {steps} timed steps, {args.threads} thread(s) per rank, "
          f"{os.cpu_count()} cores "
          f"(noisy on a shared machine)")
    print(f"{'':8}{'ranks':>6}{'samples/s':>12}{'step ms':>10}{'all-reduce':>12}{'wait':>8}")
    for (s, r), v in res.items():
        share = "" if v["comm_share"] is None else f"{100 * v['comm_share']:.1f}%"
        wait = "" if v["wait_share"] is None else f"{100 * v['wait_share']:.1f}%"
        print(f"{s:8}{r:>6}{v['samples_per_s']:>12.0f}{v['step_ms']:>10.2f}{share:>12}{wait:>8}")
    for s in sides:
        print(f"{s}: 2 ranks / 1 rank = {res[(s, 2)]['samples_per_s'] / res[(s, 1)]['samples_per_s']:.2f}x")
    if "torch" in sides:
        for r in (1, 2):
            print(f"dnnpy / torch DDP, {r} rank{'s' * (r > 1)}: "
                  f"{res[('dnnpy', r)]['samples_per_s'] / res[('torch', r)]['samples_per_s']:.2f}x")
    return res


if __name__ == "__main__":
    main()
