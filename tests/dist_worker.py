"""The program the MPI tests start on every rank (``mpiexec -n R python -m mpi4py
tests/dist_worker.py SCENARIO OUT [args]``), and that the tests also run in one process as
the single-process reference (``run(scenario, ...)``).

Each scenario trains a small float64 net through the real ``dnn_trainer`` and returns the
parameters and the loss history; under mpiexec every rank writes them to
``OUT/rank<r>.npz``.
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np

import dnnpy
from dnnpy import (adam, con, dnn_trainer, fc, input, input_rgb_image_pair, loss_barlow_twins,
                   loss_mean_squared, loss_metric, loss_multiclass_log, relu, sgd)
from dnnpy.layers.base import seeded_initialisation
from dnnpy.visitors import visit_layer_parameters

CLASSIFIER = loss_multiclass_log[fc[3, relu[fc[6, relu[con[3, 3, 3, 1, 1, input[np.float64]]]]]]]
METRIC = loss_metric[fc[4, relu[fc[8, input[np.float64]]]]]
BARLOW = loss_barlow_twins[fc[4, relu[fc[6, input_rgb_image_pair]]]]
REGRESSION = loss_mean_squared[fc[1, relu[fc[8, input[np.float64]]]]]


def _data(kind, n, seed=0):
    r = np.random.default_rng(seed)
    if kind == "classifier":
        return [r.normal(size=(6, 6)) for _ in range(n)], [int(v) for v in r.integers(0, 3, n)]
    if kind == "metric":
        return [r.normal(size=(3, 2)) for _ in range(n)], [int(v) for v in np.arange(n) % 3]
    if kind == "barlow":
        imgs = [r.integers(0, 255, size=(4, 4, 3), dtype=np.uint8) for _ in range(n)]
        return [(a, np.ascontiguousarray(a[::-1])) for a in imgs], None
    return [r.normal(size=(2, 2)) for _ in range(n)], [float(v) for v in r.normal(size=n)]


def params(net):
    out = []
    visit_layer_parameters(net, lambda p: out.append(p.host_read().astype(np.float64).ravel()))
    return np.concatenate(out)


def run(scenario, sync=None, steps=None):
    """-> (parameters, loss history, learning rate) after the scenario's training. The nets
    are initialised from a fixed seed (parameters are drawn at the first forward, from a
    generator shared by every net of the process, so the reference needs its own)."""
    with dnnpy.default_dtype(np.float64), seeded_initialisation(1):
        if scenario == "classifier":          # uneven chunks, sgd, train() with a partial last batch
            net, (x, y) = CLASSIFIER(), _data("classifier", 37)
            t = dnn_trainer(net, sgd(), devices=[0, 1])
            t.set_mini_batch_size(8)            # 37 = 4 batches of 8 + 5
            t.set_max_num_epochs(2)
            t.set_learning_rate(0.05)
            t.record_loss_history()
            t.train(x, y)
        elif scenario == "adam_steps":        # train_one_step on a global batch of 7, adam
            net, (x, y) = REGRESSION(), _data("regression", 35)
            t = dnn_trainer(net, adam(0.0005, 0.9, 0.999))
            t.set_learning_rate(0.01)
            t.record_loss_history()
            if sync:
                t.set_synchronization_file(sync, 0)
            done = t.get_train_one_step_calls()
            for i in range(done, steps or 5):
                lo = (7 * i) % 35
                t.train_one_step(x[lo:lo + 7], y[lo:lo + 7])
                if sync and i == done:           # a save after the first step of every run
                    t.get_net()
            t.get_net()
        elif scenario == "metric":            # a coupled loss: pairs across the whole batch
            net, (x, y) = METRIC(), _data("metric", 30)
            t = dnn_trainer(net, sgd())
            t.set_mini_batch_size(10)
            t.set_max_num_epochs(2)
            t.set_learning_rate(0.1)
            t.record_loss_history()
            t.train(x, y)
        elif scenario == "metric_tail":       # coupled loss, a last batch of 3 on 4 ranks: one idle
            net, (x, _) = METRIC(), _data("metric", 15)
            y = [0, 1, 2] * 4 + [0, 0, 1]       # the tail needs positive and negative pairs
            t = dnn_trainer(net, sgd())
            t.set_mini_batch_size(6)            # 15 = 6 + 6 + 3
            t.set_max_num_epochs(1)
            t.set_learning_rate(0.1)
            t.record_loss_history()
            t.train(x, y)
            t.test_one_step(x[:6], y[:6])       # a loss-only step of a coupled loss
            t.get_net()
        elif scenario == "barlow":            # coupled, unsupervised, 2 views per sample
            net, (x, _) = BARLOW(), _data("barlow", 18)
            t = dnn_trainer(net, sgd())
            t.set_mini_batch_size(9)
            t.set_max_num_epochs(1)
            t.set_learning_rate(0.01)
            t.record_loss_history()
            t.train(x)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
        return params(t.get_net()), np.array(t.get_loss_history()), t.get_learning_rate()


def faulty(scenario):
    """Scenarios where a rank misbehaves: the job must end (or refuse) on every rank."""
    rank = dnnpy.distributed.world_size() and dnnpy.distributed.rank()
    with dnnpy.default_dtype(np.float64):
        net, (x, y) = REGRESSION(), _data("regression", 12)
        solver = sgd()
        if scenario == "mismatch" and rank == 1:
            solver = adam()
        t = dnn_trainer(net, solver)
        if scenario == "data_sizes" and rank == 1:
            x, y = x[:10], y[:10]
        t.set_mini_batch_size(4)
        if scenario == "raise" and rank == 1:
            raise RuntimeError("rank 1 fails on purpose")
        if scenario == "kill" and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        t.train_one_step(x[:4], y[:4])      # the others wait here for rank 1
        t.train(x, y)


def main(argv):
    scenario, out = argv[0], argv[1]
    if scenario in ("mismatch", "data_sizes", "raise", "kill"):
        faulty(scenario)
        return
    sync = argv[2] if len(argv) > 2 and argv[2] != "-" else None
    steps = int(argv[3]) if len(argv) > 3 else None
    p, losses, lr = run(scenario, sync, steps)
    np.savez(os.path.join(out, f"rank{dnnpy.distributed.rank()}.npz"), params=p, losses=losses,
             lr=lr, size=dnnpy.distributed.world_size())


if __name__ == "__main__":
    main(sys.argv[1:])
