"""Time an untrained MMOD training step (dlib's dnn_mmod_ex net) and say where the time goes.

What is measured
    One ``dnn_trainer.train_one_step(images, boxes)`` of dlib's dnn_mmod_ex detector:
    ``loss_mmod[con<1,9,9,1,1>, rcon5 x3, downsampler, input_rgb_image_pyramid<pyramid_down<6>>]``
    (downsampler = three con5d/bn_con/relu at stride 2, rcon5 = con5/bn_con/relu), with the
    filter counts divided by ``--width-div`` (default 2: 8,16,16 and 22; 1 is dlib's 16,32,32,45),
    sgd, on a batch of ``--batch`` random 200x200 RGB crops with 1-3 boxes each (40-90 px,
    aspect 0.8-1.25; ``--windows 3`` makes the boxes tall, square or wide so mmod_options
    finds three detector windows). The net is fresh, so almost every output position scores
    above -loss_per_false_alarm and becomes a candidate detection: the loss then maps, sorts
    and suppresses tens of thousands of candidates per image (dlib#840), which is what this
    bench is about.

    Printed: the step time (min and median over ``--steps`` steps, after one warm-up step),
    the time inside ``loss_mmod_.compute_loss_value_and_gradient`` and its share of the step,
    the candidate count of the first image, and with ``--profile`` the top of a cProfile of
    the timed steps (by cumulative and by own time).

How to run (repository root)
    PYTHONPATH=$PWD python bench/mmod.py [--quick] [--steps N] [--batch N] [--windows 1|3]
        [--width-div N] [--profile]

    ``--quick``: batch 2, 2 steps (a few seconds). Timings on a shared machine are noisy:
    compare minima of several runs.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dnnpy  # noqa: E402
from dnnpy import (bn_con, con, dnn_trainer, input_rgb_image_pyramid, loss_mmod, mmod_options,  # noqa: E402
                   mmod_rect, pyramid_down, rectangle, relu, sgd)
from dnnpy.loss.mmod import loss_mmod_  # noqa: E402


def make_net_type(div):
    f = [max(1, n // div) for n in (16, 32, 32, 45)]

    def con5d(k, sub):
        return con[k, 5, 5, 2, 2, sub]

    def rcon5(sub):
        return relu[bn_con[con[f[3], 5, 5, 1, 1, sub]]]

    down = relu[bn_con[con5d(f[2], relu[bn_con[con5d(f[1], relu[bn_con[con5d(
        f[0], input_rgb_image_pyramid[pyramid_down(6)])]])]])]]
    return loss_mmod[con[1, 9, 9, 1, 1, rcon5(rcon5(rcon5(down)))]]


def make_net(div, opts):
    """The net with options ``opts``; as dlib's dnn_mmod_train_find_cars_ex, the last con gets
    one filter per detector window (5 per window with bounding-box regression)."""
    net = make_net_type(div)(loss_mmod_(opts))
    k = len(opts.detector_windows) * (5 if opts.use_bounding_box_regression else 1)
    net.subnet().layer_details().set_num_filters(k)
    return net


def make_batch(rng, n, windows, size=200):
    images, labels = [], []
    aspects = (1.0,) if windows == 1 else (0.5, 1.0, 2.0)
    for _ in range(n):
        img = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
        boxes = []
        for _ in range(int(rng.integers(1, 4))):
            a = aspects[int(rng.integers(len(aspects)))] * float(rng.uniform(0.8, 1.25))
            side = float(rng.uniform(40, 90))
            w, h = int(side * np.sqrt(a)), int(side / np.sqrt(a))
            w, h = min(w, size - 2), min(h, size - 2)
            x0, y0 = int(rng.integers(0, size - w)), int(rng.integers(0, size - h))
            boxes.append(mmod_rect(rectangle(x0, y0, x0 + w - 1, y0 + h - 1)))
        images.append(img)
        labels.append(boxes)
    return images, labels


class _loss_timer:
    """Wraps loss_mmod_.compute_loss_value_and_gradient to add up its time."""

    def __init__(self):
        self.total = 0.0
        self._orig = loss_mmod_.compute_loss_value_and_gradient
        timer = self

        def timed(self_, *a, **k):
            t = time.perf_counter()
            try:
                return timer._orig(self_, *a, **k)
            finally:
                timer.total += time.perf_counter() - t

        loss_mmod_.compute_loss_value_and_gradient = timed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--windows", type=int, choices=(1, 3), default=1)
    ap.add_argument("--width-div", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="dnnpy.set_num_threads (0: leave)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.batch = 2, 2
    if args.threads and hasattr(dnnpy, "set_num_threads"):
        dnnpy.set_num_threads(args.threads)

    rng = np.random.default_rng(args.seed)
    images, labels = make_batch(rng, args.batch, args.windows)
    opts = mmod_options(labels, 40, 40)
    opts.be_quiet = True
    if len(opts.detector_windows) != args.windows:
        print(f"note: mmod_options found {len(opts.detector_windows)} windows "
              f"({[(w.width, w.height) for w in opts.detector_windows]})")
    net = make_net(args.width_div, opts)
    trainer = dnn_trainer(net, sgd())
    trainer.be_quiet()
    timer = _loss_timer()

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss0 = trainer.train_one_step(images, labels)  # warm-up (allocations, oneDNN primitives)
        out = net.subnet().get_output()
        nw = len(opts.detector_windows)
        cand = int((np.asarray(out.host_read())[0, :nw] > -opts.loss_per_false_alarm).sum())
        print(f"net: {out.shape[2]}x{out.shape[3]} output plane, {nw} window(s), "
              f"batch {args.batch}, first image {cand} candidates of {nw * out.shape[2] * out.shape[3]}; "
              f"first loss {loss0:.4f}")
        prof = cProfile.Profile() if args.profile else None
        steps, losses = [], []
        for _ in range(args.steps):
            timer.total = 0.0
            if prof:
                prof.enable()
            t = time.perf_counter()
            trainer.train_one_step(images, labels)
            dt = time.perf_counter() - t
            if prof:
                prof.disable()
            steps.append(dt)
            losses.append(timer.total)
    steps, losses = np.array(steps), np.array(losses)
    i = int(np.argmin(steps))
    print(f"step ms: min {1e3 * steps.min():.1f}  median {1e3 * np.median(steps):.1f}")
    print(f"loss ms: min {1e3 * losses.min():.1f}  median {1e3 * np.median(losses):.1f}  "
          f"(share in the fastest step {100 * losses[i] / steps[i]:.0f}%)")
    if prof:
        for key in ("cumulative", "tottime"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(key).print_stats(25)
            print(s.getvalue())


if __name__ == "__main__":
    main()
