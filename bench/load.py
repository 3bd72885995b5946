"""Training steps on a busy machine: dnnpy's thread settings against each other and PyTorch.

What is measured
    One training step (``bench/train.py``'s workloads: the seed ``autoencoder``, batch 32, and
    the small ``resnet``, batch 64) with 0, 2 or 3 busy processes beside it. A busy process is
    a Python loop of this script's own (``while time.monotonic() < end: pass``), started
    before the load's rounds, bounded in time, and killed by its process id afterwards.

    Each configuration runs in its own process (two OpenMP pools in one process slow each
    other, and libgomp reads its settings once, when it loads), in alternating rounds:
    every round runs every configuration once, so drift hits them all alike. A run warms up,
    then times ``--steps`` steps and at least ``--seconds`` of steps; the table gives the median and the minimum of all the steps
    of all rounds, in ms.

Configurations (dnnpy; the environment each one's process starts with)
    default        nothing set: what dnnpy chooses itself (docs/performance.md, "Threads")
    spin           GOMP_SPINCOUNT=300000 -- libgomp's own default (threads spin about 300k
                   iterations at every barrier), which a user setting it keeps
    passive        OMP_WAIT_POLICY=PASSIVE -- threads sleep at once at a barrier
    spin10k        GOMP_SPINCOUNT=10000 (``spin=N`` on the command line: any other count)
    1 thread       dnnpy.set_num_threads(1)
    torch          PyTorch, the same net, its default thread count (one per core)
    torch 1        PyTorch, torch.set_num_threads(1)

    ``default / best`` divides dnnpy's default by the fastest dnnpy configuration of that load
    (target <= 1.2); ``default / torch`` by PyTorch's default (target <= 1).

``--suite`` instead times the README's test command (``python -m pytest -q -x``, in this
checkout) quiet and beside two busy processes with dnnpy's defaults, one run each;
``--example`` does the same for the README's main example (``python -m
dnnpy.examples.autoencoder``, in a temporary directory); ``--suite-spin`` adds either with
``GOMP_SPINCOUNT=300000`` (libgomp's own spinning, dnnpy's behaviour before it set a policy).

How to run (from the repository root; needs torch for the torch columns)
    python bench/load.py                    # loads 0, 2, 3; both workloads; ~10 min on 2 cores
    python bench/load.py --quick            # one round, fewer steps
    python bench/load.py --loads 3 --only resnet --configs default,passive,torch
    python bench/load.py --suite            # the README's test command, ~5 min on 2 cores
    python bench/load.py --example --suite-spin   # the main example, default and spinning
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# the variables that decide how the thread pools wait; a configuration's process starts
# with none of them but its own
POOL_ENV = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT",
            "OPENBLAS_NUM_THREADS", "DNNPY_OMP_WAIT_POLICY")

CONFIGS = {
    # name: (side, environment, threads or None)
    "default": ("dnnpy", {}, None),
    "spin": ("dnnpy", {"GOMP_SPINCOUNT": "300000"}, None),
    "passive": ("dnnpy", {"OMP_WAIT_POLICY": "PASSIVE"}, None),
    "spin10k": ("dnnpy", {"GOMP_SPINCOUNT": "10000"}, None),
    "1 thread": ("dnnpy", {}, 1),
    "torch": ("torch", {}, None),
    "torch 1": ("torch", {}, 1),
}

BUSY_SOURCE = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


# ----------------------------------------------------------------------------------------
# the child: one configuration's steps, printed as JSON on the last line

def child(workload, side, threads, warmup, steps, min_seconds):
    if side == "dnnpy":
        sys.modules["torch"] = None      # train.py imports torch when it can: not in this process
    else:
        # first, as a PyTorch user: its libgomp starts with its own defaults, not with the
        # policy dnnpy (imported by train.py) would set
        import torch
        if threads is not None:
            torch.set_num_threads(threads)
    sys.path.insert(0, str(HERE))
    import numpy as np
    import train
    w = train.WORKLOADS[workload]()
    data, labels = w.data(np.random.default_rng(0), w.batch)
    if side == "dnnpy":
        import dnnpy
        if threads is not None:
            dnnpy.set_num_threads(threads)
        net = w.make_net()
        solver, lr = w.solver()
        trainer = dnnpy.dnn_trainer(net, solver)
        trainer.set_learning_rate(lr)

        def step():
            trainer.train_one_step(data, labels)
    else:
        import dnnpy
        import dnnpy.tensor_tools as tt
        net = w.make_net()                 # the weights to start from, set up with numpy alone
        with tt.force_numpy():             # (no oneDNN thread pool in torch's process)
            net.forward(net.to_tensor(data))
        model = w.make_torch(net).train()
        opt = w.torch_opt(model.parameters())

        def step():
            opt.zero_grad(set_to_none=True)
            loss = w.torch_loss(model(w.torch_input(data)), labels)
            loss.backward()
            opt.step()
    for _ in range(warmup):
        step()
    times, start = [], time.perf_counter()
    while len(times) < steps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        step()
        times.append(1e3 * (time.perf_counter() - t0))
    print(json.dumps(times))


def config(name):
    """``(side, environment, threads)`` of a named configuration; ``spin=N`` is any
    ``GOMP_SPINCOUNT``."""
    if name.startswith("spin="):
        return "dnnpy", {"GOMP_SPINCOUNT": name[5:]}, None
    return CONFIGS[name]


def run_config(name, workload, warmup, steps, min_seconds):
    side, env_extra, threads = config(name)
    env = {k: v for k, v in os.environ.items() if k not in POOL_ENV}
    env.update(env_extra)
    env.setdefault("DNNPY_DISABLE_CUDA", "1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", workload, "--side", side,
           "--warmup", str(warmup), "--steps", str(steps), "--seconds", str(min_seconds)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{name} / {workload} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------
# busy processes

class Busy:
    """``n`` busy Python loops, each ending by itself after ``seconds``; killed on exit."""

    def __init__(self, n, seconds):
        self.n, self.seconds, self.procs = n, seconds, []

    def __enter__(self):
        src = BUSY_SOURCE.format(seconds=float(self.seconds))
        self.procs = [subprocess.Popen([sys.executable, "-c", src]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []


# ----------------------------------------------------------------------------------------
# the tables

def stats(times):
    return statistics.median(times), min(times)


def measure(loads, workloads, configs, rounds, warmup, steps, min_seconds, log):
    """``{(load, workload): {config: [step ms, ...]}}``."""
    results = {}
    for load in loads:
        # bound: rounds x configs x workloads child runs of at most ~20 s each, with margin
        bound = 60 + 30 * rounds * len(configs) * len(workloads)
        with Busy(load, bound):
            for workload in workloads:
                cell = results[(load, workload)] = {c: [] for c in configs}
                for r in range(rounds):
                    order = configs if r % 2 == 0 else configs[::-1]   # alternate the order
                    for c in order:
                        cell[c] += run_config(c, workload, warmup, steps, min_seconds)
                        log(f"  load {load} {workload} round {r + 1}: {c} "
                            f"{statistics.median(cell[c]):.1f} ms")
    return results


def table(results, configs):
    dnnpy_configs = [c for c in configs if config(c)[0] == "dnnpy"]
    lines = ["| busy processes | workload | " + " | ".join(configs)
             + " | default / best | default / torch |",
             "|--:|---|" + "--:|" * (len(configs) + 2)]
    for (load, workload), cell in results.items():
        med = {c: stats(t) for c, t in cell.items()}
        cols = [f"{m:.1f} ({lo:.1f})" for m, lo in med.values()]
        best = min(med[c][0] for c in dnnpy_configs)
        ratio_best = f"{med['default'][0] / best:.2f}" if "default" in med else "-"
        ratio_torch = (f"{med['default'][0] / med['torch'][0]:.2f}"
                       if "default" in med and "torch" in med else "-")
        lines.append(f"| {load} | {workload} | " + " | ".join(cols)
                     + f" | {ratio_best} | {ratio_torch} |")
    return lines


SUITE = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
EXAMPLE = [sys.executable, "-m", "dnnpy.examples.autoencoder"]


def suite(busy, settings, log, cmd=SUITE):
    """``cmd`` (the README's test command, or its main example): wall seconds quiet and
    beside ``busy`` busy processes, for each ``(label, environment)`` of ``settings``."""
    rows = []
    base = {k: v for k, v in os.environ.items() if k not in POOL_ENV}
    for load in (0, busy):
        for label, extra in settings:
            with Busy(load, 1800), tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                out = subprocess.run(cmd, env={**base, **extra}, cwd=ROOT if cmd is SUITE else tmp,
                                     capture_output=True, text=True, timeout=1800)
                wall = time.perf_counter() - t0
            tail = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-200:]
            tail = tail if out.returncode == 0 else f"FAILED ({out.returncode}): {tail}"
            log(f"  load {load}, {label}: {wall:.1f} s ({tail})")
            rows.append(f"| {load} | {label} | {wall:.1f} s | {tail} |")
    return ["| busy processes | environment | wall | result |", "|--:|---|--:|---|"] + rows


def header():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return [f"# bench/load.py, {datetime.date.today()}, {cpu}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--side", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    p.add_argument("--loads", default="0,2,3", help="busy process counts (default 0,2,3)")
    p.add_argument("--only", default="autoencoder,resnet", help="workloads (default both)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="configurations (default all)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5, help="at least this many timed steps per run")
    p.add_argument("--seconds", type=float, default=1.5,
                   help="and at least this long (short steps are timed many times)")
    p.add_argument("--quick", action="store_true", help="1 round of 3 steps")
    p.add_argument("--suite", action="store_true", help="time the README's test command instead")
    p.add_argument("--example", action="store_true",
                   help="time the README's main example (python -m dnnpy.examples.autoencoder) instead")
    p.add_argument("--suite-spin", action="store_true",
                   help="with --suite or --example: also with libgomp's spinning (GOMP_SPINCOUNT=300000)")
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.side, args.threads, args.warmup, args.steps, args.seconds)
        return 0

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    lines = header()
    if args.suite or args.example:
        settings = [("dnnpy's default", {})]
        if args.suite_spin:
            settings.append(("GOMP_SPINCOUNT=300000 (libgomp spinning)", {"GOMP_SPINCOUNT": "300000"}))
        lines += suite(2, settings, log, EXAMPLE if args.example else SUITE)
    else:
        if args.quick:
            args.rounds, args.steps, args.warmup, args.seconds = 1, 3, 1, 0.5
        configs = [c.strip() for c in args.configs.split(",") if c.strip()]
        unknown = [c for c in configs if c not in CONFIGS and not c.startswith("spin=")]
        if unknown:
            p.error(f"unknown configurations {unknown}; known: {list(CONFIGS)}")
        loads = [int(v) for v in args.loads.split(",")]
        workloads = [w.strip() for w in args.only.split(",") if w.strip()]
        results = measure(loads, workloads, configs, args.rounds, args.warmup, args.steps,
                          args.seconds, log)
        lines += table(results, configs)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
