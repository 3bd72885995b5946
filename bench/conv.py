"""Benchmark dnnpy's convolution layers ``con_`` and ``cont_`` against PyTorch on the CPU.

What is measured
    One training step of a layer: forward (convolution plus bias add), the data gradient,
    the filter gradient and the bias gradient.  dnnpy is driven through
    ``tt.tensor_conv`` exactly the way ``con_`` / ``cont_`` drive it (a transposed
    convolution is a convolution run backwards: its forward is ``get_gradient_for_data``,
    its data gradient is the convolution's forward and its filter gradient is
    ``get_gradient_for_filters`` with data and output gradient swapped).  The peer is
    ``torch.nn.functional.conv2d`` / ``conv_transpose2d`` followed by ``y.backward(dy)``,
    timed in the same process with the same thread count.

    Each step is run a few times to warm up, then repeated until both a minimum count and
    a minimum time are reached; the table shows the median.  Before each library is timed
    the script pauses briefly so the other library's spinning worker threads go idle.
    GFLOP/s counts the three GEMM-shaped passes (forward, data gradient, filter gradient)
    at ``2*N*K*C*R*S*Ho*Wo`` FLOPs each, where ``Ho x Wo`` is the output of the
    *convolution* (for ``cont`` that is the input of the layer).  ratio = dnnpy ms / torch
    ms, so above 1 means dnnpy is slower.

    Columns: "dnnpy" is the default CPU path (oneDNN where dnnpy has it); "numpy-only" is
    the same step inside ``tt.force_numpy()`` (the numpy twin alone), shown only when this
    dnnpy has that switch; "numpy-only ratio" = numpy-only ms / torch ms.  Where
    ``tensor_conv`` takes ``biases`` and ``bias_gradient`` (the fused forms ``con_`` uses),
    the ``con`` rows use them, so the step is driven as ``con_`` drives it.

    Before timing, dnnpy's forward output and its three gradients (of both paths) are compared with torch
    (or, without torch, the forward with a small numpy reference) so the benchmark cannot
    silently measure a wrong computation.  After the table, the case with the worst ratio
    is broken down into its parts (forward / data grad / filter grad / bias grad).

How to run (from the repository root)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv.py [--quick] [--markdown]
        [--threads N] [--breakdown worst|all|none] [--keep-heap] [--no-torch]

    Some machines set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in the environment (for
    reproducible test results); they pin numpy's OpenBLAS to a particular kernel and cache
    size and can make it markedly slower, so unset them when benchmarking as shown above.
    The script prints a warning when they are set.

    Fresh memory is expensive on some virtual machines (the host backs a page only when it
    is first touched and takes freed pages back after a while).  dnnpy's CPU convolution
    reuses its scratch buffers per thread, but both libraries still allocate outputs and
    some temporaries, so there the default timings can vary from run to run.  ``--keep-heap`` makes glibc's
    malloc keep freed memory in the process (for numpy and torch alike), which removes that
    cost and leaves the arithmetic and memory traffic: compare both to see how much of a
    step is allocation.

    dnnpy runs on the CPU backend here even if a CUDA backend would be available, since the
    peer is PyTorch on the CPU.  The full run takes under a minute on 2 cores;
    ``--quick`` (a quarter of the batch, fewer repeats) is a smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import inspect
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import dnnpy.tensor_tools as tt  # noqa: E402
from dnnpy.tensor import resizable_tensor  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # dnnpy numbers are still printed, the ratio is "n/a"
    torch = None

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None


# ----------------------------------------------------------------------------------------
# cases

@dataclass(frozen=True)
class Case:
    """``kind`` is "con" or "cont"; the layer maps ``c_in -> c_out`` channels of an
    ``n x c_in x h x w`` input with an ``r x s`` filter, one stride and one padding."""
    kind: str
    n: int
    c_in: int
    c_out: int
    h: int
    w: int
    r: int
    s: int
    stride: int
    pad: int

    @property
    def filter_shape(self):
        # con: (K, C, R, S) = (out, in, ...); cont: (in, out, ...), as torch's conv_transpose2d
        if self.kind == "con":
            return (self.c_out, self.c_in, self.r, self.s)
        return (self.c_in, self.c_out, self.r, self.s)

    @property
    def output_shape(self):
        if self.kind == "con":
            ho = 1 + (self.h + 2 * self.pad - self.r) // self.stride
            wo = 1 + (self.w + 2 * self.pad - self.s) // self.stride
        else:
            ho = self.stride * (self.h - 1) + self.r - 2 * self.pad
            wo = self.stride * (self.w - 1) + self.s - 2 * self.pad
        return (self.n, self.c_out, ho, wo)

    def flops(self):
        """FLOPs of forward + data grad + filter grad: 3 GEMM-equivalents of
        ``2*N*K*C*R*S*Ho*Wo`` with ``Ho x Wo`` the convolution's output (the layer's input
        for cont)."""
        if self.kind == "con":
            spatial = self.output_shape[2] * self.output_shape[3]
        else:
            spatial = self.h * self.w
        return 3 * 2 * self.n * self.c_in * self.c_out * self.r * self.s * spatial

    def describe(self):
        fmt = lambda shape: "x".join(map(str, shape))  # noqa: E731
        return (f"in {fmt((self.n, self.c_in, self.h, self.w))} w {fmt(self.filter_shape)} "
                f"s{self.stride} p{self.pad} -> {fmt(self.output_shape)}")


# (N, C_in, C_out, H, W, R, S, stride, pad), from the issue; cont uses the same numbers with
# c_in -> c_out as the transposed layer's own input -> output channels.
SHAPES = [
    (32, 3, 16, 64, 64, 4, 4, 2, 0),
    (32, 16, 32, 32, 32, 3, 3, 1, 1),
    (16, 64, 64, 56, 56, 3, 3, 1, 1),
    (8, 32, 32, 150, 150, 3, 3, 1, 1),
]


def make_cases(quick):
    cases = []
    for kind in ("con", "cont"):
        for n, *rest in SHAPES:
            cases.append(Case(kind, max(1, n // 4) if quick else n, *rest))
    return cases


# ----------------------------------------------------------------------------------------
# the two implementations: each exposes forward(), data_grad(), filter_grad(), bias_grad()
# and step() (all four), plus results() for the numerical check

class DnnpyConv:
    def __init__(self, case: Case, x, w, b, dy):
        self.case = case
        self.x, self.w = resizable_tensor(x), resizable_tensor(w)
        self.b = resizable_tensor(b.reshape(1, -1, 1, 1))
        self.dy = resizable_tensor(dy)
        self.y = resizable_tensor()
        self.dx, self.dw, self.db = resizable_tensor(), resizable_tensor(), resizable_tensor()
        self.dx.copy_size(self.x)
        self.dw.copy_size(self.w)
        self.db.copy_size(self.b)
        self.conv = tt.tensor_conv()
        # con_ hands its biases to the convolution (fused forward) and takes the bias gradient
        # from the filter-gradient pass, where tensor_conv offers that; cont_ cannot (its bias
        # belongs to the data-gradient side), so it adds and sums separately, as before.
        self.fused_bias = case.kind == "con" and _has_parameter(self.conv.__call__, "biases")
        self.fused_bias_grad = case.kind == "con" and _has_parameter(
            self.conv.get_gradient_for_filters, "bias_gradient")
        st, pd = case.stride, case.pad
        if case.kind == "con":
            self.conv.setup(self.x, self.w, st, st, pd, pd)
        else:
            self.y.set_size(*case.output_shape)
            self.conv.setup(self.y, self.w, st, st, pd, pd)

    def forward(self):
        if self.fused_bias:
            self.conv(False, self.y, self.x, self.w, self.b)
            return
        if self.case.kind == "con":
            self.conv(False, self.y, self.x, self.w)
        else:
            self.conv.get_gradient_for_data(False, self.x, self.w, self.y)
        tt.add(1, self.y, 1, self.b)

    def data_grad(self):
        if self.case.kind == "con":
            self.conv.get_gradient_for_data(False, self.dy, self.w, self.dx)
        else:
            self.conv(False, self.dx, self.dy, self.w)

    def filter_grad(self):
        if self.fused_bias_grad:
            self.conv.get_gradient_for_filters(False, self.dy, self.x, self.dw, bias_gradient=self.db)
        elif self.case.kind == "con":
            self.conv.get_gradient_for_filters(False, self.dy, self.x, self.dw)
        else:
            self.conv.get_gradient_for_filters(False, self.x, self.dy, self.dw)

    def bias_grad(self):
        if not self.fused_bias_grad:  # else filter_grad() assigned it
            tt.assign_conv_bias_gradient(self.db, self.dy)

    def step(self):
        self.forward()
        self.data_grad()
        self.filter_grad()
        self.bias_grad()

    def results(self):
        return {"y": np.asarray(self.y), "dx": np.asarray(self.dx), "dw": np.asarray(self.dw),
                "db": np.asarray(self.db).reshape(-1)}


def _has_parameter(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def numpy_only():
    """``tt.force_numpy()`` (dnnpy's numpy twin alone, the oneDNN path off), or None when
    this dnnpy has no such switch (then there is no numpy-only column)."""
    force = getattr(tt, "force_numpy", None)
    return None if force is None else force()


class TorchConv:
    def __init__(self, case: Case, x, w, b, dy):
        self.case = case
        self.x = torch.tensor(x, requires_grad=True)
        self.w = torch.tensor(w, requires_grad=True)
        self.b = torch.tensor(b, requires_grad=True)
        self.dy = torch.tensor(dy)
        self.y = None

    def _conv(self, x, w, b):
        c = self.case
        if c.kind == "con":
            return F.conv2d(x, w, b, stride=c.stride, padding=c.pad)
        return F.conv_transpose2d(x, w, b, stride=c.stride, padding=c.pad)

    def step(self):
        self.x.grad = self.w.grad = self.b.grad = None  # like zero_grad(set_to_none=True)
        self.y = self._conv(self.x, self.w, self.b)
        self.y.backward(self.dy)

    # The parts: the two gradients through aten's convolution_backward with one output
    # selected; the bias gradient as the plain sum it is (asking convolution_backward for
    # the bias alone costs as much as a filter gradient on the oneDNN path).
    def forward(self):
        with torch.no_grad():
            self._conv(self.x, self.w, self.b)

    def _backward(self, mask):
        c = self.case
        torch.ops.aten.convolution_backward(
            self.dy, self.x.detach(), self.w.detach(), [c.c_out], [c.stride] * 2, [c.pad] * 2,
            [1, 1], c.kind == "cont", [0, 0], 1, mask)

    def data_grad(self):
        self._backward([True, False, False])

    def filter_grad(self):
        self._backward([False, True, False])

    def bias_grad(self):
        self.dy.sum(dim=(0, 2, 3))

    def results(self):
        return {"y": self.y.detach().numpy(), "dx": self.x.grad.numpy(),
                "dw": self.w.grad.numpy(), "db": self.b.grad.numpy()}


def numpy_forward(case: Case, x, w, b):
    """A plain reference for the forward pass (used only when torch is absent): one
    channel contraction per filter tap, gathered (con) or scattered (cont)."""
    st, pd = case.stride, case.pad
    _, _, ho, wo = case.output_shape
    if case.kind == "con":
        xp = np.pad(x, ((0, 0), (0, 0), (pd, pd), (pd, pd)))
        y = np.zeros(case.output_shape, np.float64)
        for i in range(case.r):
            for j in range(case.s):
                patch = xp[:, :, i:i + st * (ho - 1) + 1:st, j:j + st * (wo - 1) + 1:st]
                y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j], dtype=np.float64)
    else:
        n, _, h, wd = x.shape
        yp = np.zeros((n, case.c_out, ho + 2 * pd, wo + 2 * pd), np.float64)
        for i in range(case.r):
            for j in range(case.s):
                yp[:, :, i:i + st * (h - 1) + 1:st, j:j + st * (wd - 1) + 1:st] += np.einsum(
                    "nchw,ck->nkhw", x, w[:, :, i, j], dtype=np.float64)
        y = yp[:, :, pd:pd + ho, pd:pd + wo]
    return y + b.reshape(1, -1, 1, 1)


# ----------------------------------------------------------------------------------------
# timing and checking

@dataclass(frozen=True)
class Budget:
    warmup: int
    min_repeats: int
    max_repeats: int
    min_seconds: float


FULL = Budget(warmup=2, min_repeats=7, max_repeats=100, min_seconds=2.0)
QUICK = Budget(warmup=1, min_repeats=3, max_repeats=10, min_seconds=0.2)


SETTLE_SECONDS = 0.3


def settle():
    """Pause before timing the other library: after a call, OpenBLAS's and OpenMP's worker
    threads keep spinning for a while (~0.1 s), and on a machine with few cores they would
    steal the CPUs from the next library's threads."""
    time.sleep(SETTLE_SECONDS)


def median_seconds(fn, budget: Budget):
    for _ in range(budget.warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < budget.min_repeats or (
            len(times) < budget.max_repeats and time.perf_counter() - start < budget.min_seconds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def max_rel_diff(a, ref):
    """max |a - ref| relative to the largest |ref| (at least 1)."""
    return float(np.max(np.abs(a - ref)) / max(1.0, float(np.max(np.abs(ref)))))


CHECK_TOLERANCE = 1e-4  # relative; float32 sums of up to ~1e5 terms stay far below this


def make_data(case: Case, seed=0):
    rng = np.random.default_rng(seed)
    normal = lambda *shape: rng.standard_normal(shape, dtype=np.float32)  # noqa: E731
    return (normal(case.n, case.c_in, case.h, case.w), normal(*case.filter_shape),
            normal(case.c_out), normal(*case.output_shape))


@dataclass
class Row:
    case: Case
    dnnpy_s: float
    torch_s: float | None
    numpy_s: float | None    # dnnpy inside tt.force_numpy(); None when dnnpy has no such switch
    fwd_diff: float          # max abs difference of the forward output
    check_ok: bool
    check_note: str


def run_case(case: Case, budget: Budget, use_torch: bool):
    data = make_data(case)
    if use_torch:
        peer = TorchConv(case, *data)
        peer.step()
        want = peer.results()
        note = "vs torch: y, dx, dw, db"
    else:
        peer = None
        want = {"y": numpy_forward(case, data[0], data[1], data[2])}
        note = "vs numpy reference: y"

    def check(impl, label):
        """Run one step of ``impl`` and compare it with ``want``: (fwd max abs diff, problems)."""
        impl.step()
        got = impl.results()
        bad = [f"{label}{k} rel.err {v:.1e}" for k, v in
               ((k, max_rel_diff(got[k], want[k])) for k in want) if not v <= CHECK_TOLERANCE]
        return float(np.max(np.abs(got["y"] - want["y"]))), bad

    ours = DnnpyConv(case, *data)
    fwd_diff, bad = check(ours, "")
    numpy_s = None
    if numpy_only() is not None:  # the numpy twin is checked and timed as well
        with numpy_only():
            ours_np = DnnpyConv(case, *data)
            bad += check(ours_np, "numpy-only ")[1]
            settle()
            numpy_s = median_seconds(ours_np.step, budget)
    settle()
    dnnpy_s = median_seconds(ours.step, budget)
    torch_s = None
    if peer:
        settle()
        torch_s = median_seconds(peer.step, budget)
    return Row(case, dnnpy_s, torch_s, numpy_s, fwd_diff, not bad,
               "; ".join(bad) or note + (" (both dnnpy paths)" if numpy_s is not None else ""))


def breakdown(case: Case, budget: Budget, use_torch: bool):
    """Median ms of each part, for dnnpy, dnnpy's numpy twin alone (when ``tt.force_numpy``
    exists) and (if present) torch. Where con_'s bias gradient comes out of the filter-gradient
    pass (fused), "bias grad" is ~0 and "filter grad" includes it."""
    data = make_data(case)
    impls = {"dnnpy": (DnnpyConv(case, *data), contextlib.nullcontext)}
    if numpy_only() is not None:
        impls["dnnpy numpy-only"] = (DnnpyConv(case, *data), numpy_only)
    if use_torch:
        impls["torch"] = (TorchConv(case, *data), contextlib.nullcontext)
    for impl, ctx in impls.values():
        with ctx():
            impl.step()  # the backward parts read the forward's tensors
    parts = ("forward", "data_grad", "filter_grad", "bias_grad")
    result = {}
    for name, (impl, ctx) in impls.items():
        settle()
        with ctx():
            result[name] = {p: median_seconds(getattr(impl, p), budget) * 1e3 for p in parts}
    return result


# ----------------------------------------------------------------------------------------
# output

def print_table(headers, rows, markdown, text_cols=2):
    """Columns before ``text_cols`` are left-aligned text, the rest right-aligned numbers."""
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" if i < text_cols else "--:" for i in range(len(headers))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i < text_cols else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def thread_report(use_torch):
    lines = []
    blas = []
    if threadpoolctl is not None:
        blas = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    if blas:
        for p in blas:
            lines.append(f"BLAS {p.get('prefix')}: {p.get('internal_api')} {p.get('version')} "
                         f"({p.get('architecture', '?')} kernels), {p['num_threads']} threads")
    else:
        lines.append(f"numpy BLAS threads: unknown (threadpoolctl not installed); "
                     f"os.cpu_count() = {os.cpu_count()}")
    if use_torch:
        lines.append(f"torch {torch.__version__}: {torch.get_num_threads()} threads")
    else:
        lines.append("torch: not used (not installed or --no-torch); ratios are n/a")
    return lines


def keep_freed_memory():
    """Ask glibc's malloc to serve every block from the heap and never give freed memory
    back to the OS, so repeated steps reuse pages instead of faulting in fresh ones.
    Returns False where that is not possible (not glibc)."""
    try:
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_max = -1, -4
        return bool(libc.mallopt(m_mmap_max, 0)) and bool(
            libc.mallopt(m_trim_threshold, 2**31 - 1))
    except (OSError, AttributeError):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a quarter of the batch, few repeats")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--threads", type=int, help="thread count for torch (and numpy's BLAS "
                    "when threadpoolctl is installed)")
    ap.add_argument("--breakdown", choices=("worst", "all", "none"), default="worst",
                    help="time forward / data grad / filter grad / bias grad separately for "
                         "the case with the worst ratio (default), every case, or none")
    ap.add_argument("--keep-heap", action="store_true",
                    help="make glibc malloc keep freed memory (for both libraries), so "
                         "the cost of faulting in fresh pages drops out; see the docstring")
    ap.add_argument("--no-torch", action="store_true", help="skip torch as if not installed")
    args = ap.parse_args(argv)

    use_torch = torch is not None and not args.no_torch
    blas_limit = None
    if args.threads:
        if torch is not None:
            torch.set_num_threads(args.threads)
        if threadpoolctl is not None:
            blas_limit = threadpoolctl.threadpool_limits(args.threads, user_api="blas")
        else:
            print("note: threadpoolctl not installed, numpy's BLAS thread count is unchanged")

    if args.keep_heap and not keep_freed_memory():
        print("note: --keep-heap needs glibc's mallopt; ignored")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"WARNING: {var}={os.environ[var]} is set and may slow numpy's BLAS; run "
                  f"with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`")
    budget = QUICK if args.quick else FULL
    print(f"dnnpy convolution benchmark ({'quick' if args.quick else 'full'}): one training "
          f"step = forward + bias, data grad, filter grad, bias grad; median of "
          f">= {budget.min_repeats} runs")
    for line in thread_report(use_torch):
        print(line)
    print()

    if use_torch:  # torch's first convolution pays a one-time start-up cost (~0.3 s)
        TorchConv(Case("con", 1, 1, 1, 8, 8, 3, 3, 1, 1), *make_data(
            Case("con", 1, 1, 1, 8, 8, 3, 3, 1, 1))).step()

    rows = []
    with tt.force_cpu():
        for case in make_cases(args.quick):
            row = run_case(case, budget, use_torch)
            rows.append(row)
            print(f"  {case.kind:<4} {case.describe():<45} dnnpy {row.dnnpy_s * 1e3:9.2f} ms"
                  + (f"  numpy-only {row.numpy_s * 1e3:9.2f} ms" if row.numpy_s else "")
                  + (f"  torch {row.torch_s * 1e3:9.2f} ms" if row.torch_s else ""),
                  file=sys.stderr, flush=True)
    print()

    has_np = any(r.numpy_s is not None for r in rows)
    headers = ["layer", "shape", "dnnpy ms", "dnnpy GFLOP/s"]
    headers += ["numpy-only ms"] if has_np else []
    headers += ["torch ms", "torch GFLOP/s", "ratio"]
    headers += ["numpy-only ratio"] if has_np else []
    headers += ["fwd max abs diff"]
    table = []
    for r in rows:
        gflop = r.case.flops() / 1e9
        ratio = lambda t: "n/a" if t is None or r.torch_s is None else f"{t / r.torch_s:.2f}"  # noqa: E731
        line = [r.case.kind, r.case.describe(), f"{r.dnnpy_s * 1e3:.2f}", f"{gflop / r.dnnpy_s:.1f}"]
        if has_np:
            line.append("n/a" if r.numpy_s is None else f"{r.numpy_s * 1e3:.2f}")
        line += (["n/a", "n/a"] if r.torch_s is None else
                 [f"{r.torch_s * 1e3:.2f}", f"{gflop / r.torch_s:.1f}"])
        line.append(ratio(r.dnnpy_s))
        if has_np:
            line.append(ratio(r.numpy_s))
        line.append(f"{r.fwd_diff:.1e}" + ("" if r.check_ok else " MISMATCH"))
        table.append(line)
    print_table(headers, table, args.markdown)
    print()
    print("ratio = dnnpy ms / torch ms (above 1: dnnpy slower). GFLOP/s counts forward, "
          "data grad and filter grad as 2*N*K*C*R*S*Ho*Wo each.")
    if has_np:
        print("numpy-only: dnnpy inside tt.force_numpy() (the numpy twin; the oneDNN path off); "
              "numpy-only ratio = numpy-only ms / torch ms.")
    else:
        print("(this dnnpy has no tt.force_numpy: no numpy-only column)")
    failed = [r for r in rows if not r.check_ok]
    print("numerical check: " + ("all passed (" + rows[0].check_note + ", relative "
                                 f"tolerance {CHECK_TOLERANCE:g})" if not failed else
                                 "FAILED for " + ", ".join(
                                     f"{r.case.kind} {r.case.describe()}: {r.check_note}"
                                     for r in failed)))

    if args.breakdown != "none":
        if args.breakdown == "all":
            picked = [r.case for r in rows]
        else:
            key = (lambda r: r.dnnpy_s / r.torch_s) if use_torch else (lambda r: r.dnnpy_s)
            picked = [max(rows, key=key).case]
        print()
        title = "worst ratio" if args.breakdown == "worst" and use_torch else \
            "slowest" if args.breakdown == "worst" else "all cases"
        print(f"breakdown ({title}), median ms per part"
              + ("; torch gradients via aten.convolution_backward, one output each"
                 if use_torch else ""))
        part_rows = []
        with tt.force_cpu():
            for case in picked:
                for name, parts in breakdown(case, budget, use_torch).items():
                    total = sum(parts.values())
                    part_rows.append([case.kind, case.describe(), name]
                                     + [f"{v:.2f} ({100 * v / total:.0f}%)" for v in parts.values()]
                                     + [f"{total:.2f}"])
        print_table(["layer", "shape", "impl", "forward", "data grad", "filter grad",
                     "bias grad", "sum"], part_rows, args.markdown, text_cols=3)

    del blas_limit
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
