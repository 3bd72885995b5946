"""dlib's dnn_introduction_ex: LeNet learns handwritten digits, then is saved and scored.

    python -m dnnpy.examples.dnn_introduction [--epochs 15] [--mnist DIR] [--out dnnpy_example_output]

By default it trains on the small digits set shipped with dnnpy (1797 UCI optical digits,
8x8, CC BY 4.0; upsampled to 28x28 so dlib's LeNet fits them unchanged; 80/20 fixed split).
With ``--mnist DIR`` it reads MNIST's four files from DIR with
``dnnpy.data.datasets.load_mnist_dataset``, as dlib's example does.

The net is dlib's, layer for layer::

    using net_type = loss_multiclass_log<
                                fc<10,
                                relu<fc<84,
                                relu<fc<120,
                                max_pool<2,2,2,2,relu<con<16,5,5,1,1,
                                max_pool<2,2,2,2,relu<con<6,5,5,1,1,
                                input<matrix<unsigned char>>
                                >>>>>>>>>>>>;

The training data is shuffled once with ``dnnpy.randomize_samples`` (dlib's name; ``train()``
keeps the order it is given), then the net is trained with ``dnn_trainer`` (adam here: it
reaches dlib's sgd accuracy in fewer epochs on this small set; ``--solver sgd`` gives dlib's
choice), cleaned and saved with ``dnnpy.serialize``, and its training and testing accuracy are
printed as dlib prints them.
``--sync FILE`` makes the trainer save its state every 20 s: kill the run, start it again,
and it resumes from the file, as dlib's example does with ``mnist_sync``.
"""

from __future__ import annotations

import os

import numpy as np

import dnnpy
from dnnpy import con, fc, input, loss_multiclass_log, max_pool, relu
from dnnpy.data.datasets import load_digits, load_mnist_dataset
from dnnpy.examples._util import Timer, base_parser, make_trainer, out_dir, report_accuracy

net_type = loss_multiclass_log[
               fc[10,
               relu[fc[84,
               relu[fc[120,
               max_pool[2, 2, 2, 2, relu[con[16, 5, 5, 1, 1,
               max_pool[2, 2, 2, 2, relu[con[6, 5, 5, 1, 1,
               input[np.uint8]]]]]]]]]]]]]


def load_data(args):
    """``(train_images, train_labels, test_images, test_labels, description)``."""
    if args.mnist:
        data = load_mnist_dataset(args.mnist)
        what = f"MNIST from {args.mnist}"
    else:
        data = load_digits(size=28, test_fraction=0.2)
        what = "the shipped UCI optical digits (8x8 upsampled to 28x28)"
    if args.quick:  # a slice, enough to see the loss move
        data = (data[0][:256], data[1][:256], data[2][:128], data[3][:128])
    return (*data, what)


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--epochs", type=int, default=15, help="maximum training epochs")
    parser.add_argument("--batch", type=int, default=64, help="mini-batch size")
    parser.add_argument("--solver", choices=("adam", "sgd"), default="adam")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="initial learning rate (default: 0.001 for adam, 0.01 for sgd)")
    parser.add_argument("--mnist", metavar="DIR", default=None,
                        help="train on MNIST's idx files in DIR instead of the shipped digits")
    parser.add_argument("--sync", metavar="FILE", default=None,
                        help="as dlib's example: the trainer saves its state to FILE every 20 s "
                             "and a rerun resumes from it (kill it and start it again)")
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs = 2
    lr = args.learning_rate or (0.001 if args.solver == "adam" else 0.01)
    out = out_dir(args.out)
    timer = Timer()

    train_x, train_y, test_x, test_y, what = load_data(args)
    print(f"data: {what}: {len(train_x)} training and {len(test_x)} testing images of "
          f"{train_x.shape[1]}x{train_x.shape[2]}, labels 0..9")
    print(f"net type: {net_type!r}")

    net = net_type()
    solver = dnnpy.adam() if args.solver == "adam" else dnnpy.sgd()
    trainer = make_trainer(net, solver, lr, args.batch, args.epochs, verbose=not args.quiet)
    resumed = bool(args.sync) and os.path.exists(args.sync)
    if args.sync:
        # as dlib: if the file exists, the trainer resumes from it right here
        trainer.set_synchronization_file(args.sync, 20)
        if resumed:
            print(f"resumed from the synchronization file {args.sync}")
    print(trainer)
    # dnn_trainer.train() feeds the data in the order given, as dlib's does: shuffle it first
    # (data sorted by class trains badly). randomize_samples applies the same permutation on
    # every run (dlib's fixed default seed), so a --sync rerun resumes on the same order.
    dnnpy.randomize_samples(train_x, train_y)
    train_timer = Timer()
    trainer.train(list(train_x), [int(y) for y in train_y])
    train_seconds = train_timer()
    net = trainer.get_net()

    # as dlib's example: clean() drops the intermediate state, then save the net
    net.clean()
    net_path = out / "digits_network.dnnpy"
    dnnpy.serialize(net, net_path)
    print(net)
    print(f"training done ({train_seconds:.1f} s in this run); saved the net to {net_path}")

    results = {"train_seconds": train_seconds, "net_path": net_path, "resumed": resumed}
    report_accuracy(net, [("training", train_x, train_y), ("testing", test_x, test_y)], results)
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
