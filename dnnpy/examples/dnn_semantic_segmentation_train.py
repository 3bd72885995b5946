"""dlib's dnn_semantic_segmentation_train_ex: trains a residual U-Net to label every pixel.

    python -m dnnpy.examples.dnn_semantic_segmentation_train [--steps 850] [--out dnnpy_example_output]

dlib's example trains the U-Net of ``dnn_semantic_segmentation_ex.h`` (here
``dnnpy/examples/semantic_segmentation_net.py``: a ``con`` stem, residual levels going down,
``cont`` levels coming up, U-Net skip connections through custom tags ``utag1..`` (ids
2101..), ``resize_prev_to_tagged`` and ``concat_``) with ``loss_multiclass_log_per_pixel`` on
PASCAL VOC 2012 (21 classes). Four loader threads feed it random crops: a square of
``U(0.467, 0.875) * min(nr, nc)`` pixels at a random offset (``make_random_cropping_rect``),
cut out as a 227x227 chip, bilinear for the image and nearest-neighbour for the label image,
flipped left-right half the time, with a random colour offset. It trains with ``sgd`` until the
learning rate falls below 1e-4, saves the net (after ``clean()``), copies it into ``anet_type``
(``bn_con`` -> ``affine``) and prints the per-pixel accuracy on the training and validation
sets; pixels labelled ``label_to_ignore`` (VOC's "void" border) are not counted.

Here, with no download: the data are generated scenes (``dnnpy.data.make_scenes``: smiley, car (rear),
car_front, truck and van objects, each in a random vivid colour, on colour gradients
(``clutter=0.5``, half make_scene's default) with pixel noise (``noise=8``), with the 1-pixel
``label_to_ignore`` ring of VOC's border), 6 classes with the background. The kinds are told
apart by their parts (eyes, wheels, lights, windows, grille), as VOC's classes are; make_scene's
plain disc / square / triangle are left out: this narrow net does not learn to tell those three
apart by outline alone within a CPU minute. The net is dlib's with widths /8
and two levels instead of four (``--levels``); crops are 65x65 (odd, as dlib's 227, so the
net's output is the crop's size); batches come from a ``dnnpy.data.prefetch`` thread, with
dlib's crop, flip and colour offset, from a ``dlib_rand`` seeded per batch so runs repeat; it
trains ``--steps`` mini-batches with ``adam`` under a cosine learning-rate schedule (dlib's sgd
at 0.1 needs far more steps than a CPU minute allows). It trains on ONE thread
(``--threads 1``, undone at the end): the net's ops are tiny, and with oneDNN's 2-thread
OpenMP pool beside the loader thread every op waits at libgomp's spinning barrier
(docs/performance.md, "Threads"). Besides dlib's accuracy lines it prints the
mean IoU over the classes (pixels of ``label_to_ignore`` excluded, IoU averaged over the
classes present in truth or prediction). The default run is seeded, so it repeats.
"""

from __future__ import annotations

import time

import numpy as np

import dnnpy
from dnnpy.data import dlib_rand, make_scenes, prefetch
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, make_trainer, num_threads, out_dir
from dnnpy.examples.semantic_segmentation_net import NET_FILENAME, make_net_type, segment
from dnnpy.geometry import move_rect, rectangle
from dnnpy.image import (apply_random_color_offset, chip_details, chip_dims, extract_image_chip,
                         flip_image_left_right, interpolate_bilinear, interpolate_nearest_neighbor)
from dnnpy.layers.base import seeded_initialisation

KINDS = ("smiley", "car", "car_front", "truck", "van")
CROP = 65          # dlib: 227; odd, so the 7x7 stride-2 con / cont pair gives it back


CLUTTER, NOISE = 0.5, 8    # make_scene's background colour waves (its default: 1) and pixel noise (12)


def make_data(n, seed, rows=120, cols=160, clutter=CLUTTER, noise=NOISE):
    """``n`` generated scenes (``dnnpy.data.make_scenes``) with this example's kinds."""
    return make_scenes(n, seed=seed, rows=rows, cols=cols, kinds=KINDS, num_objects=(2, 4),
                       size=(24, 48), noise=noise, clutter=clutter)


def make_random_cropping_rect(img, rnd):
    """dlib's example's crop: a square of ``U(0.467, 0.875) * min(nr, nc)`` pixels at an offset
    ``(r32 % (nc - w), r32 % (nr - h))`` (the x draw first, as written; dlib's argument order
    is unspecified in C++)."""
    mins, maxs = 0.466666666, 0.875
    scale = mins + rnd.get_random_double() * (maxs - mins)
    size = int(scale * min(img.shape[0], img.shape[1]))
    rect = rectangle.from_size(size, size)              # dlib: rectangle(size, size)
    x = rnd.get_random_32bit_number() % (img.shape[1] - rect.width())
    y = rnd.get_random_32bit_number() % (img.shape[0] - rect.height())
    return move_rect(rect, (x, y))


def randomly_crop_image(input_image, label_image, rnd, size=CROP):
    """dlib's ``randomly_crop_image``: ``(image crop, label crop)`` of ``size x size``."""
    rect = make_random_cropping_rect(input_image, rnd)
    details = chip_details(rect, chip_dims(size, size))
    image = extract_image_chip(input_image, details, interpolate_bilinear())
    # bilinear interpolation of labels would make no sense: a pixel is a car or a disc,
    # never half way between them
    labels = extract_image_chip(label_image, details, interpolate_nearest_neighbor())
    if rnd.get_random_double() > 0.5:
        image = flip_image_left_right(image)[0]
        labels = flip_image_left_right(labels)[0]
    image = np.ascontiguousarray(image)
    apply_random_color_offset(image, rnd)
    return image, np.ascontiguousarray(labels)


def calculate_accuracy(net, scenes, num_classes):
    """dlib's ``calculate_accuracy`` (pixels of ``label_to_ignore`` not counted), plus the mean
    IoU: ``(accuracy, mean_iou, per-class IoU)``; a class absent from both truth and
    prediction is left out of the mean (its IoU is nan)."""
    return pixel_metrics(scenes, segment(net, [s.image for s in scenes]), num_classes)


def pixel_metrics(scenes, predicted, num_classes):
    """``calculate_accuracy``'s numbers for label images already predicted."""
    confusion = np.zeros((num_classes, num_classes), np.int64)   # [truth, prediction]
    for s, p in zip(scenes, predicted):
        keep = s.class_labels != dnnpy.label_to_ignore
        confusion += np.bincount(s.class_labels[keep].astype(np.int64) * num_classes + p[keep],
                                 minlength=num_classes * num_classes
                                 ).reshape(num_classes, num_classes)
    right = np.trace(confusion)
    union = confusion.sum(0) + confusion.sum(1) - np.diag(confusion)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union > 0, np.diag(confusion) / union, np.nan)
    return right / confusion.sum(), float(np.nanmean(iou)), iou


def train(args, log=print):
    """Train the net as the example does; returns ``(bnet, class_names, results)``."""
    timer = Timer()
    train_scenes = make_data(args.train_images, seed=args.seed, clutter=args.clutter,
                             noise=args.noise)
    class_names = train_scenes[0].class_names
    log(f"images in dataset: {len(train_scenes)} generated scenes of 120x160, classes: "
        f"{', '.join(class_names)}")
    log(f"mini-batch size: {args.batch}")

    bnet = make_net_type(len(class_names), levels=args.levels, repeats=args.repeats)()
    trainer = make_trainer(bnet, dnnpy.adam(0.0001, 0.9, 0.999), args.learning_rate, args.batch,
                           max_epochs=1, verbose=not args.quiet)
    trainer.set_iterations_without_progress_threshold(args.steps)   # a fixed-length run
    if args.schedule == "cosine":
        # cosine decay from the learning rate to 1/100 of it over the run
        t = np.arange(args.steps) / max(1, args.steps - 1)
        trainer.set_learning_rate_schedule(args.learning_rate * (0.01 + 0.99 * 0.5 * (1 + np.cos(np.pi * t))))
    dnnpy.set_all_bn_running_stats_window_sizes(bnet, 50)
    if not args.quiet:
        log(trainer)

    def make_batch(i):
        # one dlib_rand per mini-batch: the batches do not depend on the threads' timing
        rnd = dlib_rand(f"{args.seed} {i}")
        samples, labels = [], []
        for _ in range(args.batch):
            s = train_scenes[rnd.get_random_32bit_number() % len(train_scenes)]
            image, label = randomly_crop_image(s.image, s.class_labels, rnd, args.crop)
            samples.append(image)
            labels.append(label)
        return samples, labels

    train_timer = Timer()
    with seeded_initialisation(args.seed), \
            prefetch(make_batch, depth=4, threads=1, count=args.steps) as batches:
        for samples, labels in batches:
            trainer.train_one_step(samples, labels)
    trainer.get_net()
    results = {"train_seconds": train_timer(), "steps": args.steps,
               "final_loss": trainer.get_average_loss()}
    log(f"trained {args.steps} steps in {results['train_seconds']:.1f} s "
        f"(average loss {results['final_loss']:.4f})")
    results["data_seconds"] = timer() - results["train_seconds"]
    return bnet, class_names, results


def add_arguments(parser):
    parser.add_argument("--steps", type=int, default=850, help="train_one_step calls")
    parser.add_argument("--batch", type=int, default=8, help="mini-batch size (dlib's: 23)")
    parser.add_argument("--learning-rate", type=float, default=1e-2,
                        help="adam's (peak) learning rate")
    parser.add_argument("--levels", type=int, default=2, help="U-Net levels (dlib's: 4)")
    parser.add_argument("--repeats", type=int, default=0,
                        help="extra residual blocks per level (dlib's: 2)")
    parser.add_argument("--train-images", type=int, default=200, help="generated training scenes")
    parser.add_argument("--val-images", type=int, default=40, help="generated validation scenes")
    parser.add_argument("--seed", type=int, default=0, help="data and initialisation seed")
    parser.add_argument("--clutter", type=float, default=CLUTTER, help="make_scene's clutter")
    parser.add_argument("--noise", type=float, default=NOISE, help="make_scene's pixel noise")
    parser.add_argument("--crop", type=int, default=CROP, help="training crop size (odd)")
    parser.add_argument("--schedule", default="cosine", choices=("cosine", "constant"),
                        help="learning-rate schedule")
    add_threads_argument(parser)


def quick(args):
    args.steps, args.batch, args.train_images, args.val_images = 3, 4, 8, 4


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        quick(args)
    with num_threads(args.threads):
        return run(args)


def run(args) -> dict:
    """``main``'s work, with its parsed arguments (the thread count already set)."""
    out = out_dir(args.out)
    timer, cpu0 = Timer(), time.process_time()

    print("\nMAKING GENERATED SCENES\n")
    bnet, class_names, results = train(args)

    bnet.clean()
    net_path = out / NET_FILENAME
    print("saving network")
    dnnpy.serialize(bnet, net_path, format="dlib")
    results["net_path"] = net_path
    results["class_names"] = class_names

    # dlib: anet_type anet = bnet; (bn_con -> affine)
    anet = dnnpy.copy_net_as(bnet, make_net_type(len(class_names), testing=True,
                                                 levels=args.levels, repeats=args.repeats))
    print("Testing the network...")
    kw = dict(clutter=args.clutter, noise=args.noise)
    val_scenes = make_data(args.val_images, seed=args.seed + 1000, **kw)
    train_scenes = make_data(min(args.val_images, args.train_images), seed=args.seed, **kw)
    for name, scenes in (("train", train_scenes), ("val", val_scenes)):
        acc, miou, iou = calculate_accuracy(anet, scenes, len(class_names))
        print(f"{name} accuracy  :  {acc:.4f}")
        print(f"{name} mean IoU  :  {miou:.4f}  (" + ", ".join(
            f"{c} {v:.2f}" for c, v in zip(class_names, iou)) + ")")
        results[f"{name}_accuracy"], results[f"{name}_mean_iou"] = acc, miou
    results["val_iou"] = iou
    results["seconds"] = timer()
    results["cpu_seconds"] = time.process_time() - cpu0
    print(f"done in {results['seconds']:.1f} s ({results['cpu_seconds']:.1f} s CPU)")
    return results


if __name__ == "__main__":
    main()
