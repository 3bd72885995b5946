"""Benchmark dnnpy's CUDA backend against PyTorch's cuDNN path, in the same process.

What is measured
    conv   One training step of a ``con_`` / ``cont_`` layer (forward with bias, data
           gradient, filter gradient, bias gradient), driven through ``tt.tensor_conv`` as the
           layers drive it (``bench/conv.py``'s ``DnnpyConv``), at the shapes of
           ``bench/conv.py`` and at ResNet-50-sized layers (batch 32). The peer is
           ``F.conv2d`` / ``F.conv_transpose2d`` + ``y.backward(dy)`` on the GPU.
    train  One ``train_one_step`` of the residual example net (``dnnpy/examples/
           dnn_introduction2.py``: bn_con, adam) on 28x28 uint8 images, against the same
           architecture written in PyTorch (BatchNorm2d, zero-padded residual adds,
           Adam) including the host-to-device copy of the uint8 batch.

    Both libraries run in float32 with FMA math: TF32 is switched off in torch
    (``torch.backends.cudnn.allow_tf32 = False``, also for matmul), as dnnpy never uses it.
    torch picks its cuDNN algorithms by heuristics (``cudnn.benchmark = False``, its default,
    like dnnpy's default); ``--torch-benchmark`` lets torch autotune instead.

    Timing: warm-up calls (the first cuDNN call loads the engine libraries), then batches of
    calls closed by a device synchronisation; the median over the batches, per call. Python
    overhead is part of a step for both libraries. samples/s = batch size / step time;
    ratio = dnnpy time / torch time (above 1: dnnpy slower; the target is <= 1.2).

    Before timing, dnnpy's output and gradients are compared with torch's (max difference
    relative to the largest reference value, tolerance 5e-4: both sum in float32 but with
    different algorithms). A mismatch is flagged and the exit status is 1.

How to run (from the repository root, on a machine with a GPU)
    python bench/gpu.py [--quick] [--only conv|train] [--out report.md] [--no-torch]
        [--torch-benchmark] [--repeats N] [--batch N]

    ``--out PATH`` writes a markdown report (machine, versions, tables) to PATH and the raw
    numbers to PATH with the suffix ``.json`` (or only JSON when PATH ends in ``.json``).
    ``--allow-cpu`` runs on whatever backend is active (a smoke run of the script itself on a
    machine without a GPU; the numbers then mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

import dnnpy  # noqa: E402
import dnnpy.tensor_tools as tt  # noqa: E402
from conv import SHAPES, Case, DnnpyConv, make_data, max_rel_diff  # noqa: E402  (bench/conv.py)

CHECK_TOLERANCE = 5e-4

# ResNet-50-sized layers, batch 32: (N, C_in, C_out, H, W, R, S, stride, pad)
RESNET_SHAPES = [
    (32, 3, 64, 224, 224, 7, 7, 2, 3),
    (32, 64, 64, 56, 56, 3, 3, 1, 1),
    (32, 256, 64, 56, 56, 1, 1, 1, 0),
    (32, 128, 128, 28, 28, 3, 3, 1, 1),
    (32, 256, 256, 14, 14, 3, 3, 1, 1),
]


def make_cases(quick):
    cases = []
    for kind in ("con", "cont"):
        for group, shapes in (("bench/conv.py", SHAPES), ("ResNet-50", RESNET_SHAPES)):
            for n, *rest in shapes:
                if kind == "cont" and rest[0] == 3 and rest[2] == 224:
                    continue  # a transposed ResNet stem is no real layer (and 1.6 GB of output)
                cases.append((group, Case(kind, max(1, n // 4) if quick else n, *rest)))
    return cases


# ----------------------------------------------------------------------------------------
# devices, synchronisation, timing

class Sync:
    """Waits for the GPU work of both libraries (each on its current stream)."""

    def __init__(self, torch):
        self.torch = torch
        try:
            import cupy

            self.cupy = cupy if tt.use_cuda() else None
        except ImportError:
            self.cupy = None

    def dnnpy(self):
        if self.cupy is not None:
            self.cupy.cuda.get_current_stream().synchronize()

    def peer(self):
        if self.torch is not None and self.torch.cuda.is_available():
            self.torch.cuda.synchronize()

    def free(self):
        if self.cupy is not None:
            self.cupy.get_default_memory_pool().free_all_blocks()
        if self.torch is not None and self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()


@dataclass(frozen=True)
class Budget:
    warmup: int
    batches: int
    batch_seconds: float   # each timed batch runs about this long


FULL = Budget(warmup=3, batches=5, batch_seconds=0.05)
QUICK = Budget(warmup=2, batches=3, batch_seconds=0.02)


def seconds_per_call(fn, sync, budget: Budget):
    for _ in range(budget.warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-6)
    calls = max(1, min(200, int(budget.batch_seconds / once)))
    times = []
    for _ in range(budget.batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


# ----------------------------------------------------------------------------------------
# the convolution peer on the GPU

class TorchCudaConv:
    def __init__(self, torch, case: Case, x, w, b, dy):
        self.torch, self.case = torch, case
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        self.x = torch.tensor(x, device=dev, requires_grad=True)
        self.w = torch.tensor(w, device=dev, requires_grad=True)
        self.b = torch.tensor(b, device=dev, requires_grad=True)
        self.dy = torch.tensor(dy, device=dev)
        self.y = None

    def step(self):
        F = self.torch.nn.functional
        c = self.case
        self.x.grad = self.w.grad = self.b.grad = None
        if c.kind == "con":
            self.y = F.conv2d(self.x, self.w, self.b, stride=c.stride, padding=c.pad)
        else:
            self.y = F.conv_transpose2d(self.x, self.w, self.b, stride=c.stride, padding=c.pad)
        self.y.backward(self.dy)

    def results(self):
        return {"y": self.y.detach().cpu().numpy(), "dx": self.x.grad.cpu().numpy(),
                "dw": self.w.grad.cpu().numpy(), "db": self.b.grad.cpu().numpy()}


@dataclass
class ConvRow:
    group: str
    kind: str
    shape: str
    batch: int
    dnnpy_ms: float
    torch_ms: float | None
    max_rel_err: float | None
    check_ok: bool
    note: str


def run_conv(group, case: Case, budget, torch, sync: Sync):
    data = make_data(case)
    ours = DnnpyConv(case, *data)
    ours.step()
    got = ours.results()
    peer, err, bad = None, None, []
    if torch is not None:
        peer = TorchCudaConv(torch, case, *data)
        peer.step()
        want = peer.results()
        rel = {k: max_rel_diff(got[k], want[k]) for k in got}
        err = max(rel.values())
        bad = [f"{k} rel.err {v:.1e}" for k, v in rel.items() if not v <= CHECK_TOLERANCE]
    dnnpy_s = seconds_per_call(ours.step, sync.dnnpy, budget)
    torch_s = seconds_per_call(peer.step, sync.peer, budget) if peer else None
    del ours, peer
    sync.free()
    return ConvRow(group, case.kind, case.describe(), case.n, dnnpy_s * 1e3,
                   None if torch_s is None else torch_s * 1e3, err, not bad,
                   "; ".join(bad) or ("y, dx, dw, db agree with torch" if torch else "unchecked"))


# ----------------------------------------------------------------------------------------
# the residual example net: dnnpy and the same architecture in torch

def torch_residual_net(torch, repeats):
    """dnn_introduction2's net in torch: con 3x3 (dlib's default padding: 1 at stride 1, 0
    at stride 2), BatchNorm2d (eps 1e-5, dlib's default), residual adds that zero-pad the
    smaller operand at the end of k, nr and nc (dlib's add_prev), 2x2/2 average pooling on
    the skip path of the down blocks, global average pooling, fc 10."""
    nn, F = torch.nn, torch.nn.functional

    def padded_sum(a, b):
        shape = [max(x, y) for x, y in zip(a.shape[1:], b.shape[1:])]

        def pad(t):
            k, h, w = t.shape[1:]
            return F.pad(t, (0, shape[2] - w, 0, shape[1] - h, 0, shape[0] - k))
        return pad(a) + pad(b)

    class Block(nn.Module):
        def __init__(self, c_in, stride):
            super().__init__()
            self.c1 = nn.Conv2d(c_in, 8, 3, stride, 1 if stride == 1 else 0)
            self.b1 = nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 8, 3, 1, 1)
            self.b2 = nn.BatchNorm2d(8)

        def forward(self, x):
            return self.b2(self.c2(F.relu(self.b1(self.c1(x)))))

    class Res(nn.Module):
        def __init__(self, c_in, down):
            super().__init__()
            self.block, self.down = Block(c_in, 2 if down else 1), down

        def forward(self, x):
            skip = F.avg_pool2d(x, 2, 2) if self.down else x
            return F.relu(padded_sum(self.block(x), skip))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            # from the input up: r, rd, repeats x r, rd, r, r, r
            plan = [False, True] + [False] * repeats + [True, False, False, False]
            self.blocks = nn.Sequential(*[Res(1 if i == 0 else 8, d) for i, d in enumerate(plan)])
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = self.blocks(x)
            return self.fc(x.mean(dim=(2, 3)))

    return Net()


@dataclass
class TrainRow:
    net: str
    batch: int
    dnnpy_ms: float
    torch_ms: float | None
    dnnpy_loss: float
    torch_loss: float | None


def run_train(repeats, batch, budget, torch, sync: Sync):
    from dnnpy.examples.dnn_introduction2 import make_net_type

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (batch, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, batch)
    net = make_net_type(repeats)()
    trainer = dnnpy.dnn_trainer(net, dnnpy.adam(0.0005, 0.9, 0.999))
    trainer.set_learning_rate(1e-3)
    image_list, label_list = list(images), [int(v) for v in labels]

    def ours():
        trainer.train_one_step(image_list, label_list)

    dnnpy_s = seconds_per_call(ours, sync.dnnpy, budget)
    dnnpy_loss = float(trainer.get_average_loss())
    torch_s = torch_loss = None
    if torch is not None:
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        model = torch_residual_net(torch, repeats).to(dev).train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), weight_decay=0.0005)
        y = torch.tensor(labels, device=dev)
        last = {}

        def peer():
            # dlib's uint8 matrix input scales pixels by 1/256
            x = torch.from_numpy(images).to(dev).float().div_(256).unsqueeze(1)
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            last["loss"] = loss

        torch_s = seconds_per_call(peer, sync.peer, budget)
        torch_loss = float(last["loss"])
        del model, opt
    sync.free()
    return TrainRow(f"dnn_introduction2 residual net, repeat {repeats}, 28x28", batch,
                    dnnpy_s * 1e3, None if torch_s is None else torch_s * 1e3, dnnpy_loss, torch_loss)


# ----------------------------------------------------------------------------------------
# report

def machine_info(torch):
    info = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(), "numpy": np.__version__,
            "backend": tt.backend_name()}
    try:
        import cupy

        info["cupy"] = cupy.__version__
        if tt.use_cuda():
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["driver"] = cupy.cuda.runtime.driverGetVersion()
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception as e:  # the report still comes out
        info["cupy"] = f"unavailable ({type(e).__name__}: {e})"
    backend_info = getattr(dnnpy, "backend_info", None)
    if backend_info is not None:
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                backend_info()
        except Exception as e:
            buf.write(f"backend_info() failed: {type(e).__name__}: {e}")
        info["dnnpy.backend_info()"] = buf.getvalue().strip()
    if torch is not None:
        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["torch cuDNN"] = torch.backends.cudnn.version()
            info["torch device"] = torch.cuda.get_device_name()
    return info


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def conv_table(rows):
    headers = ["group", "layer", "shape", "dnnpy ms", "torch ms", "dnnpy samples/s",
               "torch samples/s", "ratio", "max rel err"]
    out = []
    for r in rows:
        ratio = None if r.torch_ms is None else r.dnnpy_ms / r.torch_ms
        out.append([r.group, r.kind, r.shape, fmt(r.dnnpy_ms, ".3f"), fmt(r.torch_ms, ".3f"),
                    f"{1e3 * r.batch / r.dnnpy_ms:.0f}",
                    "n/a" if r.torch_ms is None else f"{1e3 * r.batch / r.torch_ms:.0f}",
                    fmt(ratio, ".2f") + ("" if ratio is None or ratio <= 1.2 else " *"),
                    fmt(r.max_rel_err, ".1e") + ("" if r.check_ok else " MISMATCH")])
    return headers, out


def train_table(rows):
    headers = ["net", "batch", "dnnpy ms/step", "torch ms/step", "dnnpy samples/s",
               "torch samples/s", "ratio", "loss dnnpy / torch"]
    out = []
    for r in rows:
        ratio = None if r.torch_ms is None else r.dnnpy_ms / r.torch_ms
        out.append([r.net, str(r.batch), fmt(r.dnnpy_ms, ".2f"), fmt(r.torch_ms, ".2f"),
                    f"{1e3 * r.batch / r.dnnpy_ms:.0f}",
                    "n/a" if r.torch_ms is None else f"{1e3 * r.batch / r.torch_ms:.0f}",
                    fmt(ratio, ".2f") + ("" if ratio is None or ratio <= 1.2 else " *"),
                    f"{r.dnnpy_loss:.3f} / {fmt(r.torch_loss, '.3f')}"])
    return headers, out


def markdown(headers, rows, text_cols):
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if i < text_cols else "--:" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report(info, conv_rows, train_rows, argv):
    parts = ["# dnnpy GPU benchmark", "",
             f"`python bench/gpu.py {' '.join(argv)}`", ""]
    parts += [f"- {k}: {v}" if "\n" not in str(v) else f"- {k}:\n\n```\n{v}\n```\n"
              for k, v in info.items()]
    parts += ["", "float32, FMA math (TF32 off in both), one training step per row = forward + bias, "
              "data grad, filter grad, bias grad. ratio = dnnpy time / torch time (`*`: above "
              "the 1.2 target).", ""]
    if conv_rows:
        parts += ["## Convolution layers", "", markdown(*conv_table(conv_rows), text_cols=3), ""]
    if train_rows:
        parts += ["## Training step", "", markdown(*train_table(train_rows), text_cols=1), ""]
    return "\n".join(parts)


# ----------------------------------------------------------------------------------------

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a quarter of each batch, fewer repeats")
    ap.add_argument("--only", choices=("conv", "train"), help="run one part only")
    ap.add_argument("--out", help="write the markdown report here (and the numbers as .json)")
    ap.add_argument("--no-torch", action="store_true", help="time dnnpy only")
    ap.add_argument("--torch-benchmark", action="store_true",
                    help="let torch autotune its cuDNN algorithms (cudnn.benchmark = True)")
    ap.add_argument("--repeats", type=int, default=9,
                    help="the N of repeat<N, res, ...> in the residual net (dlib's example: 9)")
    ap.add_argument("--batch", type=int, default=128, help="training-step batch size")
    ap.add_argument("--allow-cpu", action="store_true",
                    help="run even without the CUDA backend (a smoke run of this script)")
    args = ap.parse_args(argv)

    if not tt.use_cuda() and not args.allow_cpu:
        print("bench/gpu.py: the CUDA backend is not active (tt.use_cuda() is False); "
              "nothing to measure. --allow-cpu runs it anyway.", file=sys.stderr)
        return 2
    torch = None
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            print("note: torch is not installed; dnnpy only", file=sys.stderr)
    if torch is not None:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = bool(args.torch_benchmark)
        if tt.use_cuda() and not torch.cuda.is_available():
            print("note: torch has no CUDA here; its numbers are on the CPU", file=sys.stderr)
    budget = QUICK if args.quick else FULL
    sync = Sync(torch)
    info = machine_info(torch)
    for k, v in info.items():
        print(f"{k}: {v}")
    print()

    conv_rows, train_rows = [], []
    if args.only in (None, "conv"):
        for group, case in make_cases(args.quick):
            try:
                row = run_conv(group, case, budget, torch, sync)
            except Exception as e:  # one failing shape must not hide the others
                row = ConvRow(group, case.kind, case.describe(), case.n, float("nan"), None, None,
                              False, f"ERROR {type(e).__name__}: {e}")
                sync.free()
            conv_rows.append(row)
            print(f"  {row.kind:<4} {row.shape:<52} dnnpy {row.dnnpy_ms:9.3f} ms"
                  + (f"  torch {row.torch_ms:9.3f} ms" if row.torch_ms is not None else "")
                  + ("" if row.check_ok else f"  {row.note}"), file=sys.stderr, flush=True)
            save(args.out, info, conv_rows, train_rows, argv)
    if args.only in (None, "train"):
        try:
            train_rows.append(run_train(args.repeats, max(1, args.batch // 4) if args.quick else args.batch,
                                        budget, torch, sync))
        except Exception as e:
            print(f"training step: ERROR {type(e).__name__}: {e}", file=sys.stderr)
            train_rows = None

    text = save(args.out, info, conv_rows, train_rows, argv)
    print(text)
    failed = [r for r in conv_rows if not r.check_ok]
    if failed:
        print("\nnumerical check FAILED for: " + "; ".join(f"{r.kind} {r.shape}: {r.note}" for r in failed))
    if args.out:
        print(f"\nreport written to {args.out}")
    return 1 if failed or train_rows is None else 0


def save(path, info, conv_rows, train_rows, argv):
    """The report as text; also written to ``path`` (markdown + .json, or .json) when given.
    Called after every row too, so a run cut short still leaves its rows."""
    text = report(info, conv_rows, train_rows or [], argv)
    if path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        numbers = {"machine": info, "conv": [asdict(r) for r in conv_rows],
                   "train": [asdict(r) for r in train_rows or []], "argv": argv,
                   "check_tolerance": CHECK_TOLERANCE}
        if out.suffix == ".json":
            out.write_text(json.dumps(numbers, indent=2, default=str))
        else:
            out.write_text(text + "\n")
            out.with_suffix(".json").write_text(json.dumps(numbers, indent=2, default=str))
    return text

if __name__ == "__main__":
    sys.exit(main())
