"""dlib's dnn_imagenet_train_ex: train a ResNet-34 classifier with random crops, mirror images
and colour offsets, then test it with 16 random crops per image (top-1 and top-5); here on the
generated shape classes (``dnnpy.data.make_shape_classes``) instead of ImageNet.

    python -m dnnpy.examples.dnn_imagenet_train [--steps 480] [--out dnnpy_example_output]

As dlib's example:

1. the net is dlib's ResNet-34 layout: a 7x7 ``con`` stem with ``bn_con``, ``relu`` and
   ``max_pool<3,3,2,2>``, then levels of 3, 4, 6 and 3 ``res`` blocks (two 3x3 ``con`` +
   ``bn_con``; ``res_down`` halves the size through ``avg_pool<2,2,2,2>`` on the skip path,
   ``add_prev2``), ``avg_pool_everything``, ``fc`` and ``loss_multiclass_log``; the testing
   net is the ``affine`` twin (``dnnpy.inference_type``);
2. every training image is ``randomly_crop_image``: dlib's ``make_random_cropping_rect_resnet``
   (a square of ``U(0.4667, 0.875)`` times the shorter side at an offset drawn with
   ``get_random_32bit_number()``, the row first as GCC evaluates dlib's ``point(x, y)``),
   ``extract_image_chip`` to the input size, ``fliplr`` with probability 1/2 and
   ``apply_random_color_offset``; images are picked with ``get_random_32bit_number() % n``
   and made ahead in a loader thread (dlib's ``pipe`` and 4 threads: ``dnnpy.data.prefetch``);
3. ``sgd(weight_decay=0.0001, momentum=0.9)`` from learning rate 0.1, trained with
   ``train_one_step`` until the rate is 1e-3 of the initial one;
4. the net is saved (``net.clean()``; dlib's ``serialize(...) << net``, with the labels too, as
   dlib's released ``resnet34_1000_imagenet_classifier.dnn``: ``serialize_objects``), and
   tested as ``softmax<anet_type::subnet_type>`` with the trained subnet copied in
   (``copy_subnet``, ``bn_con`` folded into ``affine``): the probabilities of 16 random crops
   (``randomly_crop_images``: ``extract_image_chips``, flips, colour offsets) are averaged,
   and dlib's "val top5 accuracy" and "val top1 accuracy" lines are printed.

What differs, and why (dlib trains two weeks on a GPU; this has a minute on a CPU):
- data: the shape classes at 64x64 (10 classes, ``--per-class`` 300 training and ``--val-per-class`` 20
  validation images per class) instead of ImageNet's 1000 classes; crops of 48x48 instead
  of 227x227 (the crop rectangle is dlib's, only the chip size is scaled);
- the net is narrow: the levels have 1/8 of dlib's filters (8, 16, 32, 64; stem 8), and the
  stem convolution has stride 1 instead of 2 (a 48x48 crop is 4.7 times smaller than 227: with
  both strides the last level would get a 2x2 input and its ``res_down`` a 0x0 output; here
  the levels see 23, 11, 5 and 2 pixels, as dlib's see 55, 27, 13 and 6);
- mini-batches of 32 (dlib: 160) and a peak learning rate of 0.04 (dlib: 0.1, at which this
  narrow net stays at chance on them within the run); a fixed ``--steps`` with a ``--warmup`` of
  80 steps (linear from 0.0005) and a cosine decay to 1e-3 of the peak at the last step
  (``learning_rate_at``; dlib drops the rate by ten when ``dnn_trainer`` sees 20000 steps
  without progress, far beyond a one-minute run, down to 1e-3 of the initial rate), and the
  bn running-statistics window scaled with the run's length (``--bn-window`` 30 steps; dlib:
  1000 steps of a run of about 600,000).

The default run takes about a minute on 2 CPU cores.

``python -m dnnpy.examples.dnn_imagenet`` runs the saved net on new images, as dlib's
dnn_imagenet_ex.
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (avg_pool_everything, bn_con, con, fc, input_rgb_image_sized, loss_multiclass_log,
                   max_pool, relu, softmax)
from dnnpy.data import SHAPE_CLASS_NAMES, dlib_rand, make_shape_classes, prefetch
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.geometry import move_rect, rectangle
from dnnpy.image import (apply_random_color_offset, chip_details, chip_dims, extract_image_chip,
                         extract_image_chips)
from dnnpy.layers.base import seeded_initialisation
from dnnpy.models import residual, residual_down

NET_FILE = "resnet34_g4_classifier.dnn"
CROP = 48            # dlib: 227
LEVELS = (3, 4, 6, 3)


# dlib's example declares block / residual / residual_down; dnnpy.models has them

def res(N, SUBNET):      return relu[residual(N, bn_con, SUBNET)]        # noqa: E704
def res_down(N, SUBNET): return relu[residual_down(N, bn_con, SUBNET)]   # noqa: E704


def make_net_type(num_classes=10, width=8, crop=CROP, stem_stride=1):
    """dlib's ``net_type`` (ResNet-34, ``bn_con``): levels of ``width``, 2, 4 and 8 times
    ``width`` filters (dlib: 64..512, width 64), a stem of ``width`` 7x7 filters, ``num_classes``
    outputs. ``stem_stride=2`` pads the stem's ``con`` by 3 and its ``max_pool`` by 1 (dlib: no
    padding, fine for 227 but a 0x0 last level for 48), ``stem_stride=1``: no padding in the
    ``max_pool`` (the levels see 23, 11, 5, 2 pixels of a 48x48 crop)."""
    w = width
    if stem_stride == 2:
        x = max_pool[3, 3, 2, 2, 1, 1, relu[bn_con[con[w, 7, 7, 2, 2, 3, 3,
                                                       input_rgb_image_sized[crop]]]]]
    else:
        x = max_pool[3, 3, 2, 2, relu[bn_con[con[w, 7, 7, 1, 1, input_rgb_image_sized[crop]]]]]
    return _levels_and_top(x, width, num_classes)


def make_dlib_net_type():
    """dlib's own ``net_type`` of dnn_imagenet_train_ex, as in its released
    ``resnet34_1000_imagenet_classifier.dnn`` (``dnnpy.inference_type`` of it is its
    ``anet_type``): ``con<64,7,7,2,2>`` with dlib's default padding (none), 1000 classes,
    ``input_rgb_image_sized<227>``."""
    x = max_pool[3, 3, 2, 2, relu[bn_con[con[64, 7, 7, 2, 2, input_rgb_image_sized[227]]]]]
    return _levels_and_top(x, 64, 1000)


def _levels_and_top(x, w, num_classes):
    for level, (n, k) in enumerate(zip(LEVELS, (w, 2 * w, 4 * w, 8 * w))):
        x = x if level == 0 else res_down(k, x)
        for _ in range(n - (level > 0)):
            x = res(k, x)
    return loss_multiclass_log[fc[num_classes, avg_pool_everything[x]]]


def make_random_cropping_rect_resnet(img, rnd):
    """dlib's ``make_random_cropping_rect_resnet``: a square of ``U(0.466666666, 0.875)`` times
    the shorter side, at offset ``(r % (nc - w), r % (nr - h))`` with two
    ``get_random_32bit_number()`` draws, the row's first (GCC evaluates ``point(x, y)``'s
    arguments right to left)."""
    nr, nc = img.shape[:2]
    mins, maxs = 0.466666666, 0.875
    scale = mins + rnd.get_random_double() * (maxs - mins)
    size = int(scale * min(nr, nc))                    # rectangle(size, size): unsigned long
    rect = rectangle(size, size)
    y = rnd.get_random_32bit_number() % (nr - rect.height())
    x = rnd.get_random_32bit_number() % (nc - rect.width())
    return move_rect(rect, (x, y))


def _flip_and_offset(crop, rnd):
    if rnd.get_random_double() > 0.5:
        crop = np.ascontiguousarray(crop[:, ::-1])     # dlib's fliplr
    apply_random_color_offset(crop, rnd)
    return crop


def randomly_crop_image(img, rnd, crop=CROP):
    """dlib's ``randomly_crop_image``: one ``crop x crop`` random crop, maybe mirrored, with a
    random colour offset."""
    rect = make_random_cropping_rect_resnet(img, rnd)
    return _flip_and_offset(extract_image_chip(img, chip_details(rect, chip_dims(crop, crop))), rnd)


def randomly_crop_images(img, rnd, num_crops, crop=CROP):
    """dlib's ``randomly_crop_images``: ``num_crops`` random crops (all rectangles drawn first,
    then ``extract_image_chips``), each maybe mirrored and colour-offset."""
    dets = [chip_details(make_random_cropping_rect_resnet(img, rnd), chip_dims(crop, crop))
            for _ in range(num_crops)]
    return [_flip_and_offset(c, rnd) for c in extract_image_chips(img, dets)]


def crop_average_probabilities(snet, images, rnd, num_crops=16, crop=CROP):
    """dlib's ``sum_rows(mat(snet(crops))) / num_crops`` for every image: ``(n, classes)``."""
    out = []
    for img in images:
        p = np.asarray(snet(randomly_crop_images(img, rnd, num_crops, crop)))
        out.append(p.reshape(num_crops, -1).mean(0))
    return np.stack(out)


def top_k_accuracies(p, labels, k=5):
    """``(top1, top5)``: the share of rows whose label is the best, or among the k best, as
    dlib's loop over ``index_of_max`` (ties: the first index, as ``index_of_max``)."""
    order = np.argsort(-p, axis=1, kind="stable")
    y = np.asarray(labels)[:, None]
    return float(np.mean(order[:, 0] == y[:, 0])), float(np.mean((order[:, :k] == y).any(1)))


def softmax_net(net):
    """dlib's ``softmax<anet_type::subnet_type> snet; snet.subnet() = net.subnet();``."""
    anet_type = dnnpy.inference_type(net.net_type)
    snet = softmax[anet_type.subnet]()
    dnnpy.copy_subnet(snet.subnet(), net.subnet())
    return snet


def learning_rate_at(step, steps, initial, warmup):
    """The rate of ``step`` (0-based) in a run of ``steps``: a linear warm-up from
    ``initial / warmup`` to ``initial`` over the first ``warmup`` steps, then a cosine decay
    to 1e-3 of ``initial`` at the last step (dlib's example ends at 1e-3 of its initial rate
    too, after drops by ten when the loss stops improving)."""
    if step < warmup:
        return initial * (step + 1) / warmup
    f = (step - warmup) / max(1, steps - warmup)
    return initial * (1e-3 + (1 - 1e-3) * 0.5 * (1 + np.cos(np.pi * f)))


def add_arguments(parser):
    parser.add_argument("--steps", type=int, default=480, help="train_one_step calls")
    parser.add_argument("--batch", type=int, default=32, help="mini-batch size (dlib: 160)")
    parser.add_argument("--learning-rate", type=float, default=0.04, help="sgd's peak rate (dlib: 0.1)")
    parser.add_argument("--warmup", type=int, default=80,
                        help="steps of linear learning-rate warm-up (dlib: none)")
    parser.add_argument("--bn-window", type=int, default=30,
                        help="set_all_bn_running_stats_window_sizes (dlib: 1000)")
    parser.add_argument("--per-class", type=int, default=300, help="training images per class")
    parser.add_argument("--val-per-class", type=int, default=20,
                        help="validation images per class")
    parser.add_argument("--width", type=int, default=8, help="filters of the first level (dlib: 64)")
    parser.add_argument("--crops", type=int, default=16, help="random crops per test image")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the crops and the net")
    add_threads_argument(parser)


def quick_settings(args):
    args.steps, args.batch, args.per_class, args.val_per_class, args.crops = 4, 8, 2, 1, 2
    args.warmup = 1


def train(args, say=print):
    """Train on the shape classes; returns ``(net, labels, results)`` with the trained ``bn_con`` net."""
    images, y = make_shape_classes(args.per_class, size=64, seed=args.seed)
    labels = list(SHAPE_CLASS_NAMES)
    say(f"images in dataset: {len(images)} (shape classes, {len(labels)} classes, 64x64, crops "
        f"{CROP}x{CROP})")
    with seeded_initialisation(args.seed):
        net = make_net_type(len(labels), args.width)()
    trainer = dnnpy.dnn_trainer(net, dnnpy.sgd(0.0001, 0.9))
    trainer.set_learning_rate(args.learning_rate)
    if not args.quiet:
        trainer.be_verbose()
    dnnpy.set_all_bn_running_stats_window_sizes(net, args.bn_window)

    def make_batch(i):   # item i depends on i alone: the stream is the same with any threads
        rnd = dlib_rand(f"{args.seed}:{i}")
        picks = [rnd.get_random_32bit_number() % len(images) for _ in range(args.batch)]
        return [randomly_crop_image(images[j], rnd) for j in picks], [y[j] for j in picks]

    timer = Timer()
    with prefetch(make_batch, depth=4, threads=1, count=args.steps) as batches:
        for step, (x, t) in enumerate(batches):
            trainer.set_learning_rate(learning_rate_at(step, args.steps, args.learning_rate,
                                                       args.warmup))
            trainer.train_one_step(x, t)
    net = trainer.get_net()
    results = {"train_seconds": timer(), "final_learning_rate": trainer.get_learning_rate()}
    say(f"{args.steps} steps of {args.batch} crops in {results['train_seconds']:.1f} s; average "
        f"loss {trainer.get_average_loss():.4f}")
    return net, labels, results


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        quick_settings(args)
    out = out_dir(args.out)
    timer = Timer()
    with num_threads(args.threads):
        net, labels, results = train(args)
        net.clean()
        print("saving network")
        net_path = out / NET_FILE
        dnnpy.serialize_objects(net_path, net, labels, format="dlib")

        snet = softmax_net(net)
        print("Testing network on the shape classes' validation images...")
        val, val_y = make_shape_classes(args.val_per_class, size=64, seed=args.seed + 1)
        p = crop_average_probabilities(snet, val, dlib_rand(f"val{args.seed}"), args.crops)
        top1, top5 = top_k_accuracies(p, val_y)
    print(f"val top5 accuracy:  {top5:.4f}")
    print(f"val top1 accuracy:  {top1:.4f}")
    results.update(top1=top1, top5=top5, net_path=net_path, labels=labels)
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
