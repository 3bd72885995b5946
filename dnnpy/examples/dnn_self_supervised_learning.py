"""dlib's dnn_self_supervised_learning_ex: Barlow Twins trains a ResNet feature extractor
without labels, then a linear classifier on the frozen features uses 10% of the labels.

    python -m dnnpy.examples.dnn_self_supervised_learning [--steps N] [--cifar DIR] [--out DIR]

As dlib's example:

1. the training net is ``loss_barlow_twins[projector[backbone[bn_con, input_rgb_image_pair]]]``
   with dlib's projector ``fc[dims, relu[bn_fc[fc[hidden, ...]]]]``, lambda = 1/dims,
   ``adam(1e-6, 0.9, 0.999)`` at learning rate 1e-3; every mini-batch holds two augmented views
   of randomly drawn images (``get_random_32bit_number() % n``), dlib's ``augment``: a random
   resized crop (scale ``U(0.5, 1)``, ``--crop-scale``, ratio ``exp(U(log 3/4, log 4/3))`` through
   ``set_aspect_ratio``, at a ``get_integer`` offset; ``extract_image_chip`` to 32x32), a
   left-right flip (p 0.5), ``disturb_colors(1.0, 0.5)`` (p 0.8) and grey (p 0.2, dlib's
   ``(r+g+b)/3``), from a ``dlib_rand``;
2. the backbone (dlib: ``layer<5>(net)``) goes under ``loss_metric[backbone[affine,
   input_rgb_image]]`` (``copy_subnet``: bn becomes affine, the pair input an image input) and
   gives the features; a fraction (``--fraction``, 0.1) of the labelled training images,
   ``randomize_samples``-d, trains the linear classifier; train and test accuracy are printed
   as dlib does (num right, num wrong, accuracy, error rate).

What differs, and why: dlib trains a ResNet-50 (no input downsampling) on CIFAR-10 for hours
on a GPU; here the data are generated shape classes at 32x32 (``dnnpy.data.make_shape_classes``:
shape x texture, random colours; ``--cifar DIR`` reads CIFAR-10's binary files with
``load_cifar_10_dataset``) and the backbone is a narrow ResNet of basic blocks (``--width``
filters then 2x, 4x, downsampling by 4), trained a fixed ``--steps`` (dlib: until the learning
rate falls below 1e-5). dlib's linear SVM (``auto_train_multiclass_svm_linear_classifier``)
is ``dnnpy.auto_train_multiclass_linear_classifier`` (a ridge classifier, lambda by exact
leave-one-out; docs/data.md). The cross-correlation matrix dlib shows in a window every 100
steps is saved as a PNG (``barlow_twins_eccm.png``) at the end. The success measure is the
linear-probe test accuracy with the SSL features against the same probe on the features of
the same architecture, randomly initialised (its bn running statistics recomputed on the
training images, so that it is a fair baseline); both are printed.

Not in dlib: on the shape classes each view also goes through ``shuffle_colors`` (a random channel
permutation and per-channel inversion; ``--dlib-augment`` turns it off, ``--cifar`` never uses
it). Their colours are random and carry no class information, but ``disturb_colors`` keeps the
hue, so Barlow Twins matched views by colour (the SimCLR "colour shortcut"); the shuffle
removes that shortcut.

The default run (width 12, 300 steps of 32 pairs) takes about a minute on 2 CPU cores.
"""

from __future__ import annotations

import math

import numpy as np

import dnnpy
from dnnpy import (add_prev1, add_prev2, adam, affine, avg_pool, avg_pool_everything, bn_con,
                   bn_fc, con, copy_subnet, fc, input_rgb_image, input_rgb_image_pair,
                   loss_barlow_twins, loss_metric, relu, skip1, tag1, tag2)
from dnnpy.data import dlib_rand, make_shape_classes, prefetch, randomize_samples
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.geometry import move_rect, rectangle, set_aspect_ratio
from dnnpy.image import (chip_details, chip_dims, disturb_colors, extract_image_chip, save_png)
from dnnpy.layers.base import seeded_initialisation
from dnnpy.loss import loss_barlow_twins_

BACKBONE_FILE = "resnet_self_supervised.dnn"
CLASSIFIER_FILE = "linear_classifier.npz"


def block(N, BN, stride, SUBNET):
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


def res(N, BN, SUBNET):
    return relu[add_prev1[block(N, BN, 1, tag1[SUBNET])]]


def res_down(N, BN, SUBNET):
    return relu[add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[block(N, BN, 2, tag1[SUBNET])]]]]]


def backbone(BN, INPUT, width=16):
    """A narrow ResNet of basic blocks: ``width`` filters at full resolution (no input
    downsampling, as dlib's CIFAR variant), then 2x and 4x ``width`` at 1/2 and 1/4;
    ``avg_pool_everything`` gives a ``4 * width`` feature vector."""
    w = width
    return avg_pool_everything[
        res(4 * w, BN, res_down(4 * w, BN,
        res_down(2 * w, BN,
        res(w, BN, relu[BN[con[w, 3, 3, 1, 1, INPUT]]]))))]


def train_net_type(width=16, dims=128, hidden=512):
    """dlib's ``model::train``: Barlow Twins over the projector over the backbone."""
    return loss_barlow_twins[fc[dims, relu[bn_fc[fc[hidden, backbone(bn_con, input_rgb_image_pair,
                                                                     width)]]]]]


def feats_net_type(width=16):
    """dlib's ``model::feats``: the backbone (affine) under loss_metric, images in."""
    return loss_metric[backbone(affine, input_rgb_image, width)]


def make_random_cropping_rect(image, rnd, min_scale=0.5):
    """dlib's ``make_random_cropping_rect`` (report 3.15, "SSL crop"); the side is
    ``U(min_scale, 1)`` of the image's shorter side (dlib: 0.5)."""
    nr, nc = image.shape[:2]
    scale = rnd.get_double_in_range(min_scale, 1.0)
    ratio = math.exp(rnd.get_double_in_range(math.log(3.0 / 4.0), math.log(4.0 / 3.0)))
    size = int(scale * min(nr, nc))            # dlib: rectangle(size, size) takes unsigned longs
    rect = move_rect(set_aspect_ratio(rectangle(size, size), ratio), (0, 0))
    x = rnd.get_integer(max(0, nc - rect.width()))
    y = rnd.get_integer(max(0, nr - rect.height()))
    return move_rect(rect, (x, y))


def augment(image, rnd, size=32, min_scale=0.5):
    """dlib's ``augment``: random resized crop, flip, colour disturbance, grey."""
    rect = make_random_cropping_rect(image, rnd, min_scale)
    crop = extract_image_chip(image, chip_details(rect, chip_dims(size, size)))
    if rnd.get_random_double() < 0.5:      # dlib's flip_image_left_right, without its tform
        crop = np.ascontiguousarray(crop[:, ::-1])
    if rnd.get_random_double() < 0.8:
        disturb_colors(crop, rnd, 1.0, 0.5)
    if rnd.get_random_double() < 0.2:
        gray = (crop.astype(np.uint16).sum(axis=2) // 3).astype(np.uint8)   # dlib's assign_image
        crop = np.repeat(gray[:, :, None], 3, axis=2)
    return crop


def shuffle_colors(crop, rnd):
    """A random permutation of the colour channels, then each channel inverted (``255 - v``)
    with p 0.5 (not in dlib). On the shape classes the colours are random and carry no class information, but
    ``disturb_colors`` keeps the hue, so two views of an image match by colour alone and
    Barlow Twins learns that shortcut; this makes colour useless for matching views."""
    perm = [0, 1, 2]
    for i in (2, 1):                                       # Fisher-Yates
        j = rnd.get_random_32bit_number() % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    invert = np.array([rnd.get_random_double() < 0.5 for _ in range(3)])
    crop = crop[:, :, perm]
    return np.where(invert, 255 - crop, crop).astype(np.uint8)


def make_pairs(images, batch_size, rnd, shuffle=False, min_scale=0.5):
    """One mini-batch of ``(augment(img), augment(img))`` pairs of random images (crop side
    ``U(min_scale, 1)``); with ``shuffle`` each view also goes through :func:`shuffle_colors`."""
    def view(image):
        crop = augment(image, rnd, min_scale=min_scale)
        return shuffle_colors(crop, rnd) if shuffle else crop

    batch = []
    for _ in range(batch_size):
        image = images[rnd.get_random_32bit_number() % len(images)]
        batch.append((view(image), view(image)))
    return batch


def features(net, images, batch_size=256):
    """``(N, D)`` float64 feature vectors of ``images`` (dlib: ``fnet(images, batch_size)``)."""
    out = np.asarray(net(images, batch_size=batch_size), np.float64)
    return out.reshape(len(images), -1)


def compute_accuracy(df, samples, labels, name, quiet=False):
    predicted = df(samples)
    right = int(np.sum(predicted == np.asarray(labels)))
    wrong = len(labels) - right
    if not quiet:
        print(f"\n{name} accuracy")
        print(f"  num right:  {right}")
        print(f"  num wrong:  {wrong}")
        print(f"  accuracy:   {right / len(labels):.4f}")
        print(f"  error rate: {wrong / len(labels):.4f}")
    return right / len(labels)


def linear_probe(fnet, train_x, train_y, test_x, test_y, quiet=False, title=""):
    if title and not quiet:
        print(f"\n--- {title}")
        print(f"Extracting features for linear classifier from {len(train_x)} samples...")
    f_train = features(fnet, train_x)
    df = dnnpy.auto_train_multiclass_linear_classifier(f_train, train_y)
    if not quiet:
        print(f"ridge lambda {df.lambda_:.3g} (leave-one-out accuracy {df.loo_accuracy:.4f})")
    train_acc = compute_accuracy(df, f_train, train_y, "training", quiet)
    test_acc = compute_accuracy(df, features(fnet, test_x), test_y, "testing", quiet)
    return df, train_acc, test_acc


def load_data(args):
    if args.cifar:
        train_x, train_y, test_x, test_y = dnnpy.load_cifar_10_dataset(args.cifar)
        return list(train_x), train_y, list(test_x), test_y, "CIFAR-10"
    x, y = make_shape_classes(args.images_per_class, size=32, seed=args.seed)
    tx, ty = make_shape_classes(args.test_per_class, size=32, seed=args.seed + 1000)
    return (x, np.asarray(y), tx, np.asarray(ty),
            f"generated shape classes ({args.images_per_class} per class, 32x32)")


def eccm_png(net, path):
    eccm = np.asarray(net.loss_details().get_eccm(), np.float64)
    eccm = eccm.reshape(eccm.shape[0], -1)                       # (dims, dims)
    img = np.clip(np.rint(np.abs(eccm) * 255), 0, 255).astype(np.uint8)
    img = np.kron(img, np.ones((2, 2), np.uint8)) if img.shape[0] < 256 else img
    save_png(img, path)
    return img


def add_arguments(parser):
    parser.add_argument("--cifar", default=None,
                        help="folder with CIFAR-10's binary files (data_batch_1.bin ... "
                             "test_batch.bin) instead of the generated shape classes")
    parser.add_argument("--steps", type=int, default=300, help="train_one_step calls")
    parser.add_argument("--batch", type=int, default=32, help="image pairs per mini-batch (dlib: 64)")
    parser.add_argument("--dims", type=int, default=128, help="projector dimensions (dlib: 128)")
    parser.add_argument("--hidden", type=int, default=512, help="projector hidden units (dlib: 512)")
    parser.add_argument("--lambda", dest="lambda_", type=float, default=None,
                        help="off-diagonal penalty (default: 1/dims)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="adam's learning rate")
    parser.add_argument("--crop-scale", type=float, default=0.5,
                        help="smallest random crop side, relative to the image's (dlib: 0.5)")
    parser.add_argument("--fraction", type=float, default=0.1,
                        help="fraction of the training labels the linear classifier uses")
    parser.add_argument("--width", type=int, default=12, help="filters of the first level")
    parser.add_argument("--images-per-class", type=int, default=200,
                        help="training images per class (labels used only by the probe)")
    parser.add_argument("--test-per-class", type=int, default=100, help="test images per class")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the nets")
    parser.add_argument("--dlib-augment", action="store_true",
                        help="dlib's augment only (default on the shape classes: also shuffle_colors, a channel "
                             "permutation and inversion; --cifar: always dlib's only)")
    add_threads_argument(parser)


def quick_settings(args):
    args.steps, args.batch, args.images_per_class, args.test_per_class = 3, 8, 10, 5
    args.hidden, args.dims, args.width, args.fraction = 32, 16, 4, 0.5


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_arguments(parser)
    args = parser.parse_args(argv)
    if not 0 < args.fraction <= 1:
        parser.error(f"--fraction must be in (0, 1], got {args.fraction}")
    if not 0 < args.crop_scale <= 1:
        parser.error(f"--crop-scale must be in (0, 1], got {args.crop_scale}")
    if args.quick:
        quick_settings(args)
    out = out_dir(args.out)
    timer = Timer()
    with num_threads(args.threads):
        results = _run(args, out)
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


def _run(args, out):
    say = (lambda *a: None) if args.quiet else print
    train_x, train_y, test_x, test_y, what = load_data(args)
    print(f"data: {what}: {len(train_x)} training, {len(test_x)} testing images")
    lam = 1.0 / args.dims if args.lambda_ is None else args.lambda_
    with seeded_initialisation(args.seed):
        net = train_net_type(args.width, args.dims, args.hidden)(loss_barlow_twins_(lam))
        random_net = loss_metric[backbone(bn_con, input_rgb_image, args.width)]()
    dnnpy.disable_duplicative_biases(net)
    trainer = dnnpy.dnn_trainer(net, adam(1e-6, 0.9, 0.999))
    trainer.set_mini_batch_size(args.batch)
    trainer.set_learning_rate(args.learning_rate)
    trainer.set_min_learning_rate(1e-5)
    if not args.quiet:
        trainer.be_verbose()
        print(trainer)

    shuffle = not args.cifar and not args.dlib_augment

    def make_batch(i):      # item i depends on i alone: threads keep the stream deterministic
        return make_pairs(train_x, args.batch, dlib_rand(f"{args.seed}:{i}"), shuffle,
                          args.crop_scale)

    timer = Timer()
    with prefetch(make_batch, depth=4, threads=2, count=args.steps) as batches:
        for step, batch in enumerate(batches):
            trainer.train_one_step(batch)
            if not args.quiet and (step + 1) % 50 == 0:
                print(f"step {step + 1}: average loss {trainer.get_average_loss():.4f}")
    net = trainer.get_net()
    results = {"train_seconds": timer(), "loss": trainer.get_average_loss()}
    say(f"{args.steps} steps of {args.batch} pairs in {results['train_seconds']:.1f} s")
    results["eccm_png"] = out / "barlow_twins_eccm.png"
    results["eccm"] = eccm_png(net, results["eccm_png"])
    net.clean()

    # dlib: model::feats fnet(layer<5>(net)); here the backbone's bn running statistics are
    # first recomputed on the (unaugmented) training images, as the baseline's are below:
    # training accumulated them over augmented views (colour-shuffled, cropped), whose
    # statistics differ from the images the probe sees. No labels are used.
    bnet = loss_metric[backbone(bn_con, input_rgb_image, args.width)]()
    copy_subnet(bnet.subnet(), dnnpy.layer(net, 5))
    dnnpy.recompute_bn_running_stats(bnet, train_x[:2048], batch_size=64)
    fnet = feats_net_type(args.width)()
    copy_subnet(fnet.subnet(), bnet.subnet())             # bn_con -> affine, as dlib's copy
    results["backbone_path"] = out / BACKBONE_FILE
    dnnpy.serialize(fnet, results["backbone_path"])
    fnet = dnnpy.load(results["backbone_path"])

    # the labelled fraction
    labelled_x, labelled_y = list(train_x), list(train_y)
    randomize_samples(labelled_x, labelled_y, rng=args.seed)
    n = int(round(len(labelled_x) * args.fraction))
    labelled_x, labelled_y = labelled_x[:n], np.asarray(labelled_y[:n])

    df, results["train_accuracy"], results["test_accuracy"] = linear_probe(
        fnet, labelled_x, labelled_y, test_x, test_y, args.quiet,
        f"self-supervised features, {n} labelled images")
    results["classifier_path"] = out / CLASSIFIER_FILE
    df.save(results["classifier_path"])

    # the baseline: the same probe on a randomly initialised backbone, its bn statistics
    # recomputed on the training images (else its activations would be unnormalised)
    dnnpy.recompute_bn_running_stats(random_net, train_x[:2048], batch_size=64)
    random_fnet = dnnpy.inference_copy(random_net)
    _, _, results["random_test_accuracy"] = linear_probe(
        random_fnet, labelled_x, labelled_y, test_x, test_y, args.quiet,
        "randomly initialised features (baseline)")
    print(f"\nlinear probe test accuracy: self-supervised {results['test_accuracy']:.4f}, "
          f"random init {results['random_test_accuracy']:.4f} "
          f"(gain {results['test_accuracy'] - results['random_test_accuracy']:+.4f})")
    return results


if __name__ == "__main__":
    main()
