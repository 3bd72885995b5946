"""Measure the hand-off between numpy's BLAS pool and dnnpy's convolution pool.

What is measured
    A numpy 512x512 float32 ``matmul`` (OpenBLAS in numpy's wheels, its own pthreads pool)
    and a convolution forward (32x16x32x32 data, 32 3x3 filters, padding 1): through oneDNN
    (``dnnpy.tensor_tools.cpu.onednn.conv_forward``, gomp's OpenMP pool) when that path is
    present and usable, otherwise dnnpy's numpy twin (``tt.tensor_conv``, im2col + the same
    BLAS). Each op is timed alone (back to back), then the two alternating (conv then matmul,
    timed as a pair). ``penalty = alternating pair / (conv alone + matmul alone)``: 1.0 means
    the pools hand over for free; above 1 is time lost at the hand-off (after a
    multi-threaded OpenBLAS call its worker busy-waits about 0.1 s, ``OPENBLAS_THREAD_TIMEOUT``,
    and starves the other pool's threads on a small machine). Rows: the pools as they are (or
    as ``--threads`` set them with ``dnnpy.set_num_threads``), then numpy's BLAS limited to
    one thread (needs threadpoolctl).

How to run (from the repository root)
    python bench/threads.py [--quick] [--threads N] [--reps R]
    OPENBLAS_THREAD_TIMEOUT=4 python bench/threads.py     # OpenBLAS workers stop spinning fast

Times are per call (or per pair) in ms, median (minimum in brackets), after a short pause
before each measurement so that the previous one's spinning workers have gone idle.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # run from a checkout

import dnnpy                                          # noqa: E402
import dnnpy.tensor_tools as tt                       # noqa: E402
from dnnpy import resizable_tensor                    # noqa: E402

try:
    from dnnpy.tensor_tools.cpu import onednn         # the oneDNN path, where this tree has it
except ImportError:
    onednn = None

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None

ENV = ("OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
       "GOMP_SPINCOUNT", "OPENBLAS_CORETYPE")


def _conv_op(n):
    """``(name, op)``: a convolution forward through oneDNN when it does the work, else
    through the numpy twin."""
    rng = np.random.default_rng(0)
    x = resizable_tensor(rng.standard_normal((n, 16, 32, 32), dtype=np.float32))
    w = resizable_tensor(rng.standard_normal((32, 16, 3, 3), dtype=np.float32) * 0.1)
    out = resizable_tensor(n, 32, 32, 32)
    conv_forward = getattr(onednn, "conv_forward", None)
    if conv_forward is not None and conv_forward(False, out, x, w, 1, 1, 1, 1):
        return "oneDNN conv", lambda: conv_forward(False, out, x, w, 1, 1, 1, 1)
    conv = tt.tensor_conv()
    conv.setup(x, w, 1, 1, 1, 1)
    force_numpy = getattr(tt, "force_numpy", None)    # the oneDNN path declined: keep it out

    def numpy_conv():
        if force_numpy is None:
            conv(False, out, x, w)
        else:
            with force_numpy():
                conv(False, out, x, w)
    return "numpy conv (tt.tensor_conv)", numpy_conv


def _matmul_op():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((512, 512), dtype=np.float32)
    b = rng.standard_normal((512, 512), dtype=np.float32)
    c = np.empty((512, 512), np.float32)
    return lambda: np.matmul(a, b, out=c)


def _time(fns, reps, pause):
    """Per-repetition wall times (ms) of calling ``fns`` in order, after warm-up and a pause."""
    for _ in range(3):
        for f in fns:
            f()
    time.sleep(pause)
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for f in fns:
            f()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def _row(label, conv, matmul, reps, pause):
    alone_c = _time([conv], reps, pause)
    alone_m = _time([matmul], reps, pause)
    pair = _time([conv, matmul], reps, pause)
    med = statistics.median
    penalty = med(pair) / (med(alone_c) + med(alone_m))
    penalty_min = min(pair) / (min(alone_c) + min(alone_m))
    cells = [f"{med(v):.2f} ({min(v):.2f})" for v in (alone_c, alone_m, pair)]
    print(f"| {label} | {' | '.join(cells)} | **{penalty:.2f}x** ({penalty_min:.2f}x) |")
    return penalty


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: small batch, few repetitions")
    p.add_argument("--threads", type=int, default=None, help="dnnpy.set_num_threads(N) first")
    p.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 30)")
    args = p.parse_args(argv)
    reps = args.reps or (5 if args.quick else 30)
    pause = 0.05 if args.quick else 0.3
    if args.threads is not None:
        dnnpy.set_num_threads(args.threads)
    name, conv = _conv_op(8 if args.quick else 32)
    matmul = _matmul_op()
    env = ", ".join(f"{k}={os.environ[k]}" for k in ENV if k in os.environ) or "none of " + ", ".join(ENV[:3])
    info = dnnpy.backend_info(print_report=False)["threads"]
    blas = ", ".join(f"{b['library']} {b['version']} ({b['num_threads']} threads)" for b in info["blas"] or []) \
        or f"unknown ({info['reason']})"
    print(f"conv: {name}; matmul: numpy 512x512 float32; BLAS: {blas}; oneDNN threads: "
          f"{info['onednn'] if info['onednn'] is not None else 'n/a'}; dnnpy.get_num_threads() = "
          f"{dnnpy.get_num_threads()}; environment: {env}")
    print("\nms per call (pair), median (min); penalty = alternating / (conv alone + matmul alone)\n")
    print("| setting | conv alone | matmul alone | conv then matmul, alternating | penalty |")
    print("|---|--:|--:|--:|--:|")
    _row("pools as set" if args.threads is None else f"set_num_threads({args.threads})",
         conv, matmul, reps, pause)
    if threadpoolctl is not None:
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            _row("numpy's BLAS limited to 1 thread", conv, matmul, reps, pause)
    else:
        print("| numpy's BLAS limited to 1 thread | n/a: threadpoolctl is not installed | | | |")


if __name__ == "__main__":
    main()
