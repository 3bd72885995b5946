"""dlib's dnn_metric_learning_ex: ``loss_metric`` learns to map 8-D vectors to 2-D points so
that vectors with the same label lie close together.

    python -m dnnpy.examples.dnn_metric_learning [--out dnnpy_example_output]

The net and the data are dlib's: ``loss_metric[fc[2, input[np.float64]]]`` (dlib's
``loss_metric<fc<2,input<matrix<double,0,1>>>>``; in dnnpy a column vector is an ``8 x 1``
float64 matrix) trained on the 8 unit vectors, two per label (labels 1..4), with
``dnn_trainer`` (sgd, learning rate 0.1) calling ``train_one_step`` on all 8 samples until the
learning rate drops below 1e-4, exactly as dlib's loop. Then it prints dlib's lines: the
2-D embedding of every sample and ``num_right`` / ``num_wrong`` over the 28 pairs, a pair
being right when same-label samples are closer than ``get_distance_threshold()`` (0.6) and
different-label ones are not. The default run takes a few seconds of CPU. ``--quick``
stops after 30 steps (num_wrong is then usually not 0). The net is saved in dlib's format.
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import fc, input, loss_metric
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.layers.base import seeded_initialisation

net_type = loss_metric[fc[2, input[np.float64]]]


def pair_counts(embedded, labels, threshold):
    """dlib's count over pairs i < j: ``(num_right, num_wrong)``."""
    e = np.asarray(embedded, np.float64)
    y = np.asarray(labels)
    d = np.linalg.norm(e[:, None] - e[None], axis=-1)
    i, j = np.triu_indices(len(y), 1)
    right = np.where(y[i] == y[j], d[i, j] < threshold, d[i, j] >= threshold)
    return int(right.sum()), int((~right).sum())


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--seed", type=int, default=0, help="seed of the net's initialisation")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    timer = Timer()

    samples = [np.eye(8)[i].reshape(8, 1) for i in range(8)]
    labels = [1, 1, 2, 2, 3, 3, 4, 4]
    with seeded_initialisation(args.seed):
        net = net_type()
    trainer = dnnpy.dnn_trainer(net)          # sgd, as dlib's default solver
    trainer.set_learning_rate(0.1)
    steps = 0
    while trainer.get_learning_rate() >= 1e-4 and not (args.quick and steps >= 30):
        trainer.train_one_step(samples, labels)
        steps += 1
    net = trainer.get_net()
    print("done training")
    embedded = net(samples)
    for lab, e in zip(labels, embedded):
        print(f"label: {lab}\t{' '.join(f'{v:g}' for v in e)}")
    threshold = net.loss_details().get_distance_threshold()
    right, wrong = pair_counts(embedded, labels, threshold)
    print(f"num_right: {right}")
    print(f"num_wrong: {wrong}")
    net.clean()
    path = out / "metric_network.dat"
    dnnpy.serialize(net, path, format="dlib")
    print(f"{steps} steps; saved the net to {path}; done in {timer():.1f} s")
    return {"num_right": right, "num_wrong": wrong, "steps": steps, "net_path": path,
            "embedded": np.asarray(embedded)}


if __name__ == "__main__":
    main()
