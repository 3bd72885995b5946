"""dlib's dnn_metric_learning_on_images_ex: a ResNet with ``loss_metric`` learns to embed
images so that pictures of the same person are close and pictures of different people far
apart; here on procedural face-like identities (``dnnpy.data.make_identities``).

    python -m dnnpy.examples.dnn_metric_learning_on_images [--steps 800] [--out dnnpy_example_output]

As dlib's example:

1. mini-batches of 5 identities x 5 images, drawn as dlib's ``load_mini_batch`` does with a
   ``dlib_rand`` (identity ``get_random_32bit_number() % n`` until unused, then 5 random
   images of it), each image, with probability 0.9, ``jitter_image``-d; loader threads
   (dlib's ``pipe``) are ``dnnpy.data.prefetch``;
2. the net is dlib's pattern (``res``/``res_down`` blocks of ``con``/``bn_con``/``relu``,
   ``avg_pool_everything``, ``fc_no_bias[128]``, ``loss_metric``) with 128-D embeddings,
   trained with ``sgd(0.0001, 0.9)`` at learning rate 0.1 by ``train_one_step``;
3. the testing net is the ``affine`` twin (``dnnpy.inference_type``), and the pair test is
   dlib's: a pair is right when same-identity images are closer than
   ``get_distance_threshold()`` (0.6) and different ones are not.

What differs, and why: dlib's net (32..256 filters in 5 levels, 150x150 photos of the
``johns`` folder) would take hours on a CPU, so this one is narrow and shallow (16, 32, 64
filters; 32x32 images): 300 identities x 6 images, the last 10 identities held out (never
trained on); many identities generalise better to new ones than many images per identity.
Two more departures, for clustering new identities (``dnnpy.examples.dnn_face_recognition``),
where one pair of look-alike identities closer than 0.6 merges two clusters: ``loss_metric``
has margin 0.2 (``--margin``; dlib's default 0.04, threshold 0.6 kept), so different
identities are pushed beyond 0.8 and same ones within 0.4; and no ``disturb_colors``
(``--disturb-colors`` turns it on): on these identities the skin and hair colours *are* the identity, and
dlib's gamma/colour disturbance made the net blind to them (the identities already vary lighting).
dlib trains until the learning rate drops below 1e-4; here a fixed ``--steps``
(the last fifth at a tenth of the rate), then ``recompute_bn_running_stats``. dlib prints
num_right / num_wrong on one fresh 5x5 batch; this example prints those for a held-out batch,
and the *pair accuracy* on all pairs of the held-out images, balanced (mean of the same-
and different-identity pair accuracies, so that an untrained net scores about 0.5-0.7), before
and after training. It trains on one thread (``--threads 1``, undone at the end): beside the
loader threads, oneDNN's second OpenMP thread spins at every small op's barrier
(docs/performance.md, "Threads"). The default run (800 steps) takes about half a minute on
2 CPU cores. It saves the net in dlib's format (``metric_network_resnet.dat``) for
``dnnpy.examples.dnn_face_recognition``.
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (avg_pool_everything, bn_con, con, fc_no_bias, input_rgb_image, loss_metric,
                   max_pool, relu)
from dnnpy.loss import loss_metric_
from dnnpy.data import dlib_rand, make_identities, prefetch
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.image import disturb_colors, jitter_image
from dnnpy.layers.base import seeded_initialisation
from dnnpy.models import residual, residual_down

NET_FILE = "metric_network_resnet.dat"
MARGIN = 0.2      # loss_metric's margin here (dlib's default 0.04): see the module docstring


# dlib's example declares block / residual / residual_down; dnnpy.models has them

def res(N, SUBNET):      return relu[residual(N, bn_con, SUBNET)]        # noqa: E704
def res_down(N, SUBNET): return relu[residual_down(N, bn_con, SUBNET)]   # noqa: E704


def make_net_type(dims=128, width=16):
    """The training net type (``bn_con``) with ``width``, 2x and 4x ``width`` filters in its
    three levels; ``dnnpy.inference_type`` of it is dlib's ``anet_type`` pattern (``affine``)."""
    w = width
    return loss_metric[fc_no_bias[dims, avg_pool_everything[
        res_down(4 * w,
        res(2 * w, res_down(2 * w,
        res(w,
        max_pool[3, 3, 2, 2, relu[bn_con[con[w, 3, 3, 1, 1,
        input_rgb_image]]]]))))]]]


def load_mini_batch(num_people, samples_per_id, rnd, objs, colors=True):
    """dlib's ``load_mini_batch``: ``(images, labels)`` of ``num_people`` identities drawn
    without repeats from ``objs`` (a list, per identity, of its images), ``samples_per_id``
    images each (with repeats), then ``disturb_colors`` on every image (unless ``colors`` is
    False: not in dlib) and ``jitter_image`` when ``rnd.get_random_double() > 0.1``."""
    if num_people > len(objs):
        raise ValueError(f"load_mini_batch: the dataset has {len(objs)} identities, fewer than "
                         f"num_people={num_people}")
    selected = set()
    images, labels = [], []
    for _ in range(num_people):
        ident = rnd.get_random_32bit_number() % len(objs)
        while ident in selected:
            ident = rnd.get_random_32bit_number() % len(objs)
        selected.add(ident)
        for _ in range(samples_per_id):
            images.append(objs[ident][rnd.get_random_32bit_number() % len(objs[ident])].copy())
            labels.append(ident)
    for k, crop in enumerate(images):
        if colors:
            disturb_colors(crop, rnd)
        if rnd.get_random_double() > 0.1:
            images[k] = jitter_image(crop, rnd)
    return images, labels


def pair_counts(embedded, labels, threshold):
    """dlib's count over the pairs ``i < j``: ``(num_right, num_wrong)``, plus the balanced
    pair accuracy (mean of the same-label and different-label pair accuracies)."""
    e = np.asarray(embedded, np.float64)
    y = np.asarray(labels)
    d = np.linalg.norm(e[:, None] - e[None], axis=-1)
    i, j = np.triu_indices(len(y), 1)
    same = y[i] == y[j]
    right = np.where(same, d[i, j] < threshold, d[i, j] >= threshold)
    balanced = 0.5 * (right[same].mean() + right[~same].mean())
    return int(right.sum()), int((~right).sum()), float(balanced)


def group_by_label(images, labels):
    objs = {}
    for im, lab in zip(images, labels):
        objs.setdefault(lab, []).append(im)
    return [objs[k] for k in sorted(objs)]


def train_metric_net(args, verbose_print=print):
    """Build the data and train on ``args.threads`` threads; returns ``(net,
    held_out_images, held_out_labels, results)`` (also used by dnn_face_recognition when it has
    no saved net)."""
    with num_threads(args.threads):
        return _train_metric_net(args, verbose_print)


def _train_metric_net(args, verbose_print):
    images, labels = make_identities(args.identities, args.images_per_identity, size=args.size,
                                     seed=args.seed)
    n_train = args.identities - args.held_out
    split = n_train * args.images_per_identity
    train_objs = group_by_label(images[:split], labels[:split])
    test_x, test_y = images[split:], labels[split:]
    verbose_print(f"objs.size(): {len(train_objs)} (generated identities of {args.images_per_identity} "
                  f"images, {args.size}x{args.size}); {args.held_out} identities held out")

    with seeded_initialisation(args.seed):
        net = make_net_type(args.dims, args.width)(loss_metric_(args.margin, 0.6))
    trainer = dnnpy.dnn_trainer(net, dnnpy.sgd(0.0001, 0.9))
    trainer.set_learning_rate(args.learning_rate)
    trainer.set_iterations_without_progress_threshold(300)
    if not args.quiet:
        trainer.be_verbose()
    results = {}
    threshold = net.loss_details().get_distance_threshold()
    tnet = dnnpy.inference_copy(net)
    _, _, results["untrained_pair_accuracy"] = pair_counts(tnet(test_x), test_y, threshold)

    def make_batch(i):   # item i depends on i alone, so threads keep the stream deterministic
        return load_mini_batch(5, 5, dlib_rand(f"{args.seed}:{i}"), train_objs,
                               colors=args.disturb_colors)

    timer = Timer()
    with prefetch(make_batch, depth=4, threads=2, count=args.steps) as batches:
        for step, (x, y) in enumerate(batches):
            if step == args.steps - args.steps // 5:
                trainer.set_learning_rate(args.learning_rate * 0.1)
            trainer.train_one_step(x, y)
    net = trainer.get_net()
    results["train_seconds"] = timer()
    verbose_print("done training")
    verbose_print(f"{args.steps} steps of 5x5 images in {results['train_seconds']:.1f} s; average "
                  f"loss {trainer.get_average_loss():.4f}")
    train_images = [im for obj in train_objs for im in obj]
    dnnpy.recompute_bn_running_stats(net, train_images, batch_size=25)
    return net, test_x, test_y, results


def add_arguments(parser):
    parser.add_argument("--steps", type=int, default=800, help="train_one_step calls (5x5 images each)")
    parser.add_argument("--learning-rate", type=float, default=0.1, help="sgd's learning rate")
    parser.add_argument("--identities", type=int, default=300, help="generated identities in all")
    parser.add_argument("--held-out", type=int, default=10, help="identities held out for testing")
    parser.add_argument("--images-per-identity", type=int, default=6, help="generated images per identity")
    parser.add_argument("--size", type=int, default=32, help="image size")
    parser.add_argument("--dims", type=int, default=128, help="embedding dimensions (dlib: 128)")
    parser.add_argument("--width", type=int, default=16, help="filters of the first level")
    parser.add_argument("--margin", type=float, default=MARGIN,
                        help="loss_metric's margin (dlib's default: 0.04); distance threshold 0.6")
    parser.add_argument("--disturb-colors", action="store_true",
                        help="disturb_colors on every training image, as dlib (off: on these identities the "
                             "colours are the identity)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the net")
    add_threads_argument(parser)


def quick_settings(args):
    args.steps, args.identities, args.held_out, args.images_per_identity = 6, 10, 5, 5


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        quick_settings(args)
    if args.held_out < 5 or args.identities - args.held_out < 5:
        parser.error("--identities and --held-out must leave 5 or more identities on each side "
                     "(a mini-batch holds 5 identities)")
    out = out_dir(args.out)
    timer = Timer()
    net, test_x, test_y, results = train_metric_net(args)
    net.clean()
    net_path = out / NET_FILE
    dnnpy.serialize(net, net_path, format="dlib")
    print(f"saved the net to {net_path} in dlib's format")

    # dlib: anet_type testing_net = net;  (read back from the file, as the next example does)
    testing_net = dnnpy.inference_type(net.net_type)()
    dnnpy.deserialize(net_path, testing_net)
    threshold = testing_net.loss_details().get_distance_threshold()
    objs = group_by_label(test_x, test_y)
    x, y = load_mini_batch(5, 5, dlib_rand(f"test{args.seed}"), objs, colors=args.disturb_colors)
    right, wrong, _ = pair_counts(testing_net(x), y, threshold)
    print("a fresh 5x5 mini-batch of held-out identities:")
    print(f"num_right: {right}")
    print(f"num_wrong: {wrong}")
    _, _, acc = pair_counts(testing_net(test_x), test_y, threshold)
    print(f"held-out pair accuracy (balanced, all {len(test_x)} held-out images): {acc:.4f} "
          f"(untrained: {results['untrained_pair_accuracy']:.4f})")
    results.update(num_right=right, num_wrong=wrong, pair_accuracy=acc, net_path=net_path)
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
