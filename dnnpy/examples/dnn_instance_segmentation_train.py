"""dlib's dnn_instance_segmentation_train_ex: an MMOD detector plus one per-pixel mask net per
class, saved together.

    python -m dnnpy.examples.dnn_instance_segmentation_train [--out dnnpy_example_output]

dlib's example reads PASCAL VOC 2012's instance and class label PNGs, turns every instance into
an ``mmod_rect`` (its bounding box, labelled with its class), keeps the images with objects of
the chosen classes (bicycle, car, cat), ignores boxes that overlap another
(``ignore_overlapped_boxes``, ``test_box_overlap(0.90, 0.95)``), are smaller than 35x35 or too
elongated, and trains two kinds of net (see ``instance_segmentation_net``, its header):

1. an MMOD detector on ``random_cropper`` crops (350x350, ``disturb_colors``), sgd at 0.1 until
   the learning rate falls below 1e-4;
2. per class, a U-Net with ``loss_binary_log_per_pixel`` on chips around single instances: the
   ``get_cropping_rect`` square (1.5x the box) moved by a random translation of up to a tenth
   of the box, cut out as a 227x227 chip (bilinear for the image, nearest neighbour for the
   instance label image), ``disturb_colors``; the label is +1 on the instance, 0 (ignored) on
   VOC's void border and -1 elsewhere (other instances too);

then ``serialize(file) << det_net << seg_nets_by_class`` (a ``std::map<string, seg_net>``).

Here, with no download: generated scenes (``dnnpy.data.make_scenes``, 160x120) of smileys (square
boxes) and cars (rear view, wide boxes, w = 2h), 2-4 objects of 26..44 pixels per scene on a
plain background (``clutter=0``, noise 6), whose ``instance_labels`` play VOC's instance PNG
(with its 1-pixel ``label_to_ignore`` ring as VOC's void border). The boxes come from the
generator (they are the instances' bounding boxes, as dlib computes them) and go through
dlib's ignore rules, scaled (min size 16 instead of 35). The detector is dnn_mmod_train_find_cars'
recipe (adam 0.002, ``loss_per_missed_target`` 2, bn window 10, 80x80 crops of 16, target window
32, 200 steps: dlib's sgd schedule needs hours); its 2 detector windows (square, wide) carry the
labels. Each mask net trains ``--seg-steps`` (150) mini-batches of 16 chips of 49x49 (dlib: 100
of 227x227) with adam under a cosine schedule, as dnn_semantic_segmentation_train. Both are
saved in dlib's format: ``serialize_objects(file, det_net, {"car": net, "smiley": net},
format="dlib")``.

Then (dlib's example stops at saving) it measures on fresh testing scenes: the detector's
``test_object_detection_function`` (precision, recall, average precision; a hit needs the right
label), and the mean mask IoU over the testing instances: each truth instance is matched to the
detection of its label with the highest box IoU (>= 0.5, each detection used once), its mask
is ``predict_mask`` (the runner's: chip, net, bilinear resize, > 0), and its IoU is taken
against the instance's pixels (the ignore ring left out); a missed instance counts 0.

It trains on one thread (``--threads 1``, undone at the end), as dnn_semantic_segmentation_train:
the nets' ops are tiny, and oneDNN's second OpenMP thread only spins at each op's barrier.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import dnnpy
from dnnpy import serialize_objects, test_box_overlap
from dnnpy.data import dlib_rand, make_scenes, test_object_detection_function
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.examples.dnn_mmod_train_find_cars import ignore_overlapped_boxes
from dnnpy.examples.instance_segmentation_net import (NET_FILENAME, SEG_DIM, det_net_type,
                                                      get_cropping_rect, predict_mask, seg_net_type)
from dnnpy.geometry import box_intersection_over_union, rectangle
from dnnpy.image import (chip_details, chip_dims, disturb_colors, extract_image_chip,
                         interpolate_bilinear, interpolate_nearest_neighbor, random_cropper)
from dnnpy.layers.base import seeded_initialisation
from dnnpy.loss import mmod_options, loss_mmod_

KINDS = ("smiley", "car")


def make_data(n, seed, kinds=KINDS):
    """``n`` generated scenes with this example's settings; each box's ``ignore`` set by
    ``ignore_some_truth_boxes``."""
    scenes = make_scenes(n, seed=seed, rows=120, cols=160, kinds=kinds, num_objects=(2, 4),
                         size=(26, 44), noise=6, clutter=0.0)
    for s in scenes:
        ignore_some_truth_boxes(s.boxes)
    return scenes


def ignore_some_truth_boxes(boxes, min_size=16):
    """dlib's helper: ignore boxes overlapping another (the smaller one), smaller than
    ``min_size`` both ways (dlib: 35) or more elongated than 3:1 wide / 1.5:1 tall."""
    ignore_overlapped_boxes(boxes, test_box_overlap(0.90, 0.95))
    for b in boxes:
        if b.ignore:
            continue
        w, h = b.rect.width(), b.rect.height()
        if w < min_size and h < min_size or w / h > 3.0 or h / w > 1.5:
            b.ignore = True


def instance_sample(scene, j, rnd):
    """dlib's segmentation sample for instance ``j`` (``scene.boxes[j]``, instance label
    ``j + 1``): the cropping rect moved by a random translation of up to a tenth of the box,
    a ``SEG_DIM`` chip of the image (bilinear, ``disturb_colors``) and of the instance labels
    (nearest neighbour) -> float labels +1 (this instance), 0 (ignore ring), -1 (the rest)."""
    rect = scene.boxes[j].rect
    crop = get_cropping_rect(rect)
    mx, my = int(rect.width() / 10.0), int(rect.height() / 10.0)
    dx = rnd.get_integer_in_range(-mx, mx + 1)
    dy = rnd.get_integer_in_range(-my, my + 1)
    details = chip_details(rectangle(crop.l + dx, crop.t + dy, crop.r + dx, crop.b + dy),
                           chip_dims(SEG_DIM, SEG_DIM))
    image = np.ascontiguousarray(extract_image_chip(scene.image, details, interpolate_bilinear()))
    disturb_colors(image, rnd)
    # nearest neighbour: a pixel belongs to one instance, never half way between two
    lab = extract_image_chip(scene.instance_labels, details, interpolate_nearest_neighbor())
    label = np.where(lab == j + 1, 1.0, np.where(lab == dnnpy.label_to_ignore, 0.0, -1.0))
    return image, label.astype(np.float32)


def train_detection_network(scenes, args, verbose):
    """dlib's ``train_detection_network`` with dnn_mmod_train_find_cars' scaled recipe."""
    images, boxes = [s.image for s in scenes], [s.boxes for s in scenes]
    options = mmod_options(boxes, 32, 16)
    options.overlaps_ignore = test_box_overlap(0.5, 0.9)
    options.loss_per_missed_target = 2.0          # dlib: 1 (see dnn_mmod_train_find_cars)
    print(f"detector windows: {[(w.width, w.height, w.label) for w in options.detector_windows]}")
    net = det_net_type()(loss_mmod_(options))
    net.subnet().layer_details().set_num_filters(len(options.detector_windows))
    dnnpy.set_all_bn_running_stats_window_sizes(net, 10)
    trainer = dnnpy.dnn_trainer(net, dnnpy.adam(0.0001, 0.9, 0.999))   # dlib: sgd(0.0001, 0.9)
    trainer.set_learning_rate(0.002)                                   # dlib: 0.1
    trainer.set_iterations_without_progress_threshold(args.det_steps)  # a fixed-length run
    if verbose:
        trainer.be_verbose()
        print(trainer)
    cropper = random_cropper(seed=args.seed)
    cropper.set_chip_dims(80, 80)                  # dlib: 350
    cropper.set_min_object_size(30, 14)            # dlib: target - 2, min target - 2
    cropper.set_max_rotation_degrees(2)
    rnd = dlib_rand(f"det {args.seed}")
    # early in training loss_mmod warns about truth boxes the untrained net cannot hit
    with seeded_initialisation(args.seed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(args.det_steps):
            crops, crop_boxes = cropper(args.batch, images, boxes)
            for img in crops:
                disturb_colors(img, rnd)
            trainer.train_one_step(crops, crop_boxes)
    trainer.get_net()
    net.clean()
    return net, options


def train_segmentation_network(scenes, classlabel, args, verbose):
    """dlib's ``train_segmentation_network`` for one class: chips around random instances
    of ``classlabel`` (``instance_sample``), adam under a cosine schedule."""
    pool = [(s, j) for s in scenes for j, b in enumerate(s.boxes)
            if b.label == classlabel and not b.ignore]
    if not pool:
        raise ValueError(f"train_segmentation_network: no training instance of class {classlabel!r}")
    net = seg_net_type()()
    trainer = dnnpy.dnn_trainer(net, dnnpy.adam(0.0001, 0.9, 0.999))   # dlib: sgd(0.0001, 0.9)
    t = np.arange(args.seg_steps) / max(1, args.seg_steps - 1)
    trainer.set_learning_rate_schedule(args.seg_lr * (0.01 + 0.99 * 0.5 * (1 + np.cos(np.pi * t))))
    dnnpy.set_all_bn_running_stats_window_sizes(net, 20)              # dlib: 1000, long runs
    if verbose:
        trainer.be_verbose()
        print(trainer)
    rnd = dlib_rand(f"seg {classlabel} {args.seed}")
    with seeded_initialisation(args.seed):
        for _ in range(args.seg_steps):
            samples, labels = [], []
            for _ in range(args.batch):
                s, j = pool[rnd.get_random_32bit_number() % len(pool)]
                image, label = instance_sample(s, j, rnd)
                samples.append(image)
                labels.append(label)
            trainer.train_one_step(samples, labels)
    trainer.get_net()
    net.clean()
    return net, len(pool)


def match_instances(truth, dets):
    """Per non-ignored truth box, the index of its detection (same label, box IoU >= 0.5, the
    best first, each detection used once) or None."""
    pairs = sorted(((box_intersection_over_union(t.rect, d.rect), i, k)
                    for i, t in enumerate(truth) if not t.ignore
                    for k, d in enumerate(dets) if d.label == t.label), reverse=True)
    match, used = {i: None for i, t in enumerate(truth) if not t.ignore}, set()
    for iou, i, k in pairs:
        if iou >= 0.5 and match[i] is None and k not in used:
            match[i], used = k, used | {k}
    return match


def mask_ious(det_net, seg_nets, scenes):
    """Per non-ignored truth instance of ``scenes``, the IoU of its predicted mask (0 when the
    detector missed it); pixels on the ignore ring are left out."""
    ious = []
    for s in scenes:
        dets = det_net([s.image])[0]
        keep = s.instance_labels != dnnpy.label_to_ignore
        for i, k in match_instances(s.boxes, dets).items():
            if k is None:
                ious.append(0.0)
                continue
            pred = (predict_mask(seg_nets[dets[k].label], s.image, dets[k].rect) > 0) & keep
            truth = s.instance_labels == i + 1
            ious.append(float(np.sum(pred & truth) / max(1, np.sum(pred | truth))))
    return np.array(ious)


def evaluate(det_net, seg_nets, scenes, name="testing"):
    """Prints and returns ``{"<name>": (precision, recall, ap), "<name>_mask_iou": mean}``."""
    res = test_object_detection_function(det_net, [s.image for s in scenes],
                                         [s.boxes for s in scenes], test_box_overlap(), 0,
                                         test_box_overlap(0.5, 0.9))
    p, r, ap = (float(v) for v in res[0])
    ious = mask_ious(det_net, seg_nets, scenes)
    miou = float(ious.mean()) if ious.size else 0.0
    print(f"{name} results: precision {p:.4g}, recall {r:.4g}, average precision {ap:.4g}; "
          f"mean mask IoU {miou:.4f} over {ious.size} instances")
    return {name: (p, r, ap), f"{name}_mask_iou": miou, f"{name}_instances": int(ious.size)}


def add_arguments(parser):
    parser.add_argument("--train", type=int, default=24, help="generated training scenes")
    parser.add_argument("--test", type=int, default=12, help="generated testing scenes")
    parser.add_argument("--det-steps", type=int, default=200, help="detector training steps")
    parser.add_argument("--seg-steps", type=int, default=150, help="training steps per mask net")
    parser.add_argument("--seg-lr", type=float, default=0.005, help="adam's peak learning rate of the mask nets")
    parser.add_argument("--batch", type=int, default=16,
                        help="mini-batch size (dlib: 35 detector crops, 100 mask chips)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes, crops and weights")
    add_threads_argument(parser)


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.train, args.test, args.det_steps, args.seg_steps, args.batch = 3, 2, 2, 2, 4
    with num_threads(args.threads):
        return run(args)


def run(args) -> dict:
    """``main``'s work, with its parsed arguments (the thread count already set)."""
    out = out_dir(args.out)
    timer, cpu0 = Timer(), time.process_time()
    verbose = not args.quiet

    print("\nMAKING GENERATED SCENES\n")
    train_scenes = make_data(args.train, args.seed)
    print(f"images in dataset: {len(train_scenes)}")
    print(f"desired classlabels: {' '.join(KINDS)}")
    n_ignored = sum(b.ignore for s in train_scenes for b in s.boxes)
    print(f"truth boxes: {sum(len(s.boxes) for s in train_scenes)} ({n_ignored} ignored)")

    print("\nTraining detector network:")
    det_timer = Timer()
    det_net, options = train_detection_network(train_scenes, args, verbose)
    results = {"det_seconds": det_timer()}

    seg_nets = {}
    seg_timer = Timer()
    for classlabel in KINDS:
        print(f"\nTraining segmentation network for class {classlabel}:")
        seg_nets[classlabel], n = train_segmentation_network(train_scenes, classlabel, args, verbose)
        print(f"  trained on chips around {n} instances")
    results["seg_seconds"] = seg_timer()

    print("Saving networks")
    net_path = out / NET_FILENAME
    serialize_objects(net_path, det_net, seg_nets, format="dlib")   # << det_net << seg_nets_by_class

    test_scenes = make_data(args.test, args.seed + 1000)
    results.update(evaluate(det_net, seg_nets, train_scenes, "training"))
    results.update(evaluate(det_net, seg_nets, test_scenes, "testing"))
    results.update(net_path=net_path, seconds=timer(), cpu_seconds=time.process_time() - cpu0,
                   num_windows=len(options.detector_windows), class_names=KINDS,
                   testing_ap=results["testing"][2])
    print(f"done in {results['seconds']:.1f} s ({results['cpu_seconds']:.1f} s CPU; detector "
          f"{results['det_seconds']:.1f} s, mask nets {results['seg_seconds']:.1f} s)")
    return results


if __name__ == "__main__":
    main()
