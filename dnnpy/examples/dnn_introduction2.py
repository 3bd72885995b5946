"""dlib's dnn_introduction2_ex: a residual net built from template functions, ``repeat``, tags,
``skip`` and ``add_prev``; trained with ``train_one_step``; tested as its ``affine`` twin.

    python -m dnnpy.examples.dnn_introduction2 [--steps 500] [--repeats 2] [--out dnnpy_example_output]

dlib declares blocks as C++ alias templates; in dnnpy they are plain functions of the SUBNET
type (and of the other template arguments)::

    template <int N, template <typename> class BN, int stride, typename SUBNET>
    using block  = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,SUBNET>>>>>;
    template <..., typename SUBNET> using residual = add_prev1<block<N,BN,1,tag1<SUBNET>>>;
    template <..., typename SUBNET> using residual_down
                                  = add_prev2<avg_pool<2,2,2,2,skip1<tag2<block<N,BN,2,tag1<SUBNET>>>>>>;

The net is dlib's with ``repeat<9,res,...>`` shortened to ``--repeats`` (default 2) so it
trains in seconds on a CPU, on the shipped digits (upsampled to 16x16, 80/20 split). Like dlib's example:

1. it trains the ``bn_con`` net with ``adam`` by calling ``trainer.train_one_step`` on random
   mini-batches;
2. it evaluates the *testing* net, where every ``bn_con`` is an ``affine`` layer (the batch-norm
   running statistics become a fixed scale and shift). dlib writes ``test_net_type tnet =
   net;``; here ``dnnpy.inference_copy(net)`` derives that type and copies into it (the hand
   written ``make_net_type(testing=True)`` with ``copy_net_as`` gives the same net). It scores
   it as trained, then after ``dnnpy.recompute_bn_running_stats(net, train_x)``, which replaces
   the running statistics (an average over the last 100 mini-batches, mostly taken while the
   weights were still moving) by statistics of the final weights;
3. it saves the net in dlib's format and reads the file into the testing net type (dlib's
   ``affine_`` reads ``bn_`` records), which gives the same outputs.
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (add_prev1, add_prev2, affine, avg_pool, avg_pool_everything, bn_con, con, fc,
                   input, loss_multiclass_log, relu, repeat, skip1, tag1, tag2)
from dnnpy.data.datasets import load_digits
from dnnpy.examples._util import Timer, base_parser, out_dir, report_accuracy


def block(N, BN, stride, SUBNET):
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


def residual(block, N, BN, SUBNET):
    return add_prev1[block(N, BN, 1, tag1[SUBNET])]


def residual_down(block, N, BN, SUBNET):
    return add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[block(N, BN, 2, tag1[SUBNET])]]]]


def res(SUBNET):       return relu[residual(block, 8, bn_con, SUBNET)]        # noqa: E704
def ares(SUBNET):      return relu[residual(block, 8, affine, SUBNET)]        # noqa: E704
def res_down(SUBNET):  return relu[residual_down(block, 8, bn_con, SUBNET)]   # noqa: E704
def ares_down(SUBNET): return relu[residual_down(block, 8, affine, SUBNET)]   # noqa: E704


def make_net_type(repeats=2, testing=False):
    """dlib's ``net_type`` (``testing=False``: bn_con) or ``test_net_type`` (affine), with
    ``repeat<repeats, res, ...>``."""
    r, rd = (ares, ares_down) if testing else (res, res_down)
    return loss_multiclass_log[fc[10,
               avg_pool_everything[
               r(r(r(rd(
               repeat[repeats, r,   # this block `repeats` times
               rd(
               r(
               input[np.uint8]))]))))]]]


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--steps", type=int, default=500, help="train_one_step calls")
    parser.add_argument("--batch", type=int, default=64, help="mini-batch size")
    parser.add_argument("--repeats", type=int, default=2,
                        help="the N of repeat<N, res, ...> (dlib's example uses 9)")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="adam's learning rate")
    parser.add_argument("--size", type=int, default=16,
                        help="digit image size (dlib's MNIST images are 28; 16 trains 3x faster)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.batch, args.repeats = 6, 16, 1
    out = out_dir(args.out)
    timer = Timer()

    train_x, train_y, test_x, test_y = load_digits(size=args.size, test_fraction=0.2)
    if args.quick:
        test_x, test_y = test_x[:64], test_y[:64]
    print(f"data: the shipped UCI optical digits ({args.size}x{args.size}): {len(train_x)} training and "
          f"{len(test_x)} testing images")

    net_type, test_net_type = make_net_type(args.repeats), make_net_type(args.repeats, testing=True)
    print(f"net type: {net_type!r}")
    net = net_type()
    print(net)
    print(f"the net has {net.num_layers()} layers, {net.num_computational_layers()} of them "
          f"computational; layer<tag1> is {type(dnnpy.layer(net, tag1)).__name__}")

    # adam(weight_decay, momentum1, momentum2) as in dlib's example
    trainer = dnnpy.dnn_trainer(net, dnnpy.adam(0.0005, 0.9, 0.999))
    trainer.set_learning_rate(args.learning_rate)
    trainer.set_mini_batch_size(args.batch)   # only shown by print(trainer): we pick the batches
    trainer.set_iterations_without_progress_threshold(2000)
    trainer.set_learning_rate_shrink_factor(0.1)
    if not args.quiet:
        trainer.be_verbose()
    print(trainer)

    # dlib's loop: random mini-batches fed to train_one_step (here a fixed number of steps
    # instead of "until the learning rate drops below 1e-6"). The last fifth runs at a tenth
    # of the learning rate, as dlib's run ends at a shrunk rate: the bn_con running statistics
    # that become the affine layers' scale and shift then match the final weights.
    rng = np.random.default_rng(0)
    train_timer = Timer()
    for step in range(args.steps):
        if step == args.steps - args.steps // 5:
            trainer.set_learning_rate(args.learning_rate * 0.1)
        idx = rng.integers(0, len(train_x), args.batch)
        trainer.train_one_step(list(train_x[idx]), [int(y) for y in train_y[idx]])
    net = trainer.get_net()   # waits for the training to finish, as in dlib
    train_seconds = train_timer()
    print(f"{args.steps} steps of {args.batch} images in {train_seconds:.1f} s; "
          f"average loss {trainer.get_average_loss():.4f}")

    # dlib: test_net_type tnet = net;
    tnet = dnnpy.inference_copy(net)
    print(f"inference copy: bn_con -> affine in {repr(tnet.net_type).count('affine[')} layers")
    results = {"train_seconds": train_seconds}
    report_accuracy(tnet, [("testing (as trained)", test_x, test_y)], results)
    batches = dnnpy.recompute_bn_running_stats(net, train_x, batch_size=args.batch)
    tnet = dnnpy.inference_copy(net)
    print(f"recomputed the bn running statistics over {batches} mini-batches of the training data")
    report_accuracy(tnet, [("training", train_x, train_y), ("testing", test_x, test_y)], results)

    net.clean()
    net_path = out / "digits_resnet.dat"
    dnnpy.serialize(net, net_path, format="dlib")
    # the same conversion through dlib's file: affine_ reads bn_con's records
    fnet = test_net_type()
    dnnpy.deserialize(net_path, fnet)
    same = np.array_equal(fnet.subnet()(test_x[:32]), tnet.subnet()(test_x[:32]))
    print(f"saved the net to {net_path} in dlib's format; read into the testing net type it gives "
          f"{'the same' if same else 'DIFFERENT'} outputs as the inference copy")
    results["net_path"] = net_path
    results["file_matches_copy"] = same
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
