"""dlib's dnn_yolo_train_ex: train a YOLOv3 detector with ``loss_yolo``.

    python -m dnnpy.examples.dnn_yolo_train [--steps 400] [--data DIR] [--anchors 9] [--map]

dlib's example trains YOLOv3 (Redmon and Farhadi, "YOLOv3: An Incremental Improvement") on any
imglab dataset (``DIR/training.xml``, ``DIR/testing.xml``): a DarkNet-53 backbone of
``conblock`` s (con, bn_con, leaky_relu 0.1) and residual blocks, three detection heads (strides
8, 16, 32) joined by ``upsample`` and ``concat2``, each head ``YTAG<sig<con<3*(classes+5),1,1>>>``
with its own tag id (4008, 4016, 4032; the neck, head and backbone tags are 6008..8016), and
``loss_yolo<ytag8, ytag16, ytag32>`` with ``yolo_options`` (iou_ignore_threshold 0.7,
iou_anchor_threshold 0.2, COCO's 9 anchors). Images are letterboxed to 416x416; the loaders
alternate a small rotation + letterbox + random flip with ``random_cropper`` crops, both
through ``disturb_colors``. Training is sgd(0.0005, 0.9) at 0.001 with a burn-in
(``lr * linspace(1e-12, 1, burnin)^4`` as a learning-rate schedule), then plateau shrinking;
the trained net is copied into the inference type (bn_con -> affine), ``fuse_layers`` d and
saved. ``--anchors N`` prints k-means anchor boxes and their average IoU; ``--map`` prints the
average precision per label (dlib's ``average_precision`` over greedy IoU > 0.5 matches) and
their mean.

This example does the same with no download, on generated scenes (``dnnpy.data.make_scenes``)
of three labels: smileys (square), cars (rear view, w = 2h) and trucks (h = 1.5w), 2-4 per
120x160 scene, 24..48 pixels (sqrt of the box area), half-colourful backgrounds
(``clutter=0.5``, as the mmod examples found learnable), written as imglab XML + PNG (96
training and 24 testing scenes) and read back with ``load_image_dataset``. Scaled to about a
minute on 2 cores: the images are letterboxed to 128x128 (heads of 16x16, 8x8 and 4x4 cells),
the darknet widths are divided by 16 but kept at least 8 (8..64 filters; see below) and
every ``repeat`` is 1 (13 residual blocks instead of 23); the anchors are 9 k-means anchors of
the training boxes (dlib's ``--anchors 9`` computation; COCO's anchors at 416 are far larger
than these objects), 3 per head by area; 400 steps of 8 images, 50 of burn-in, sgd at 0.005
(dlib's 0.001 learns too slowly here), constant, with the last fifth at a tenth of the rate
(dlib shrinks on plateaus, which a short noisy run rarely triggers). The data comes from
``prefetch`` (``--threads`` loaders; dlib's pipe).

After training the bn running statistics are recomputed (``recompute_bn_running_stats`` on
the letterboxed training images) before the copy into the inference type. dlib's
``setup_detector`` sets a 1000-step statistics window, so after a few hundred steps the
running statistics are the average over the whole run, dominated by the untrained net's
first steps; the inference copy would otherwise score confident boxes everywhere.

Why at least 8 filters: with dlib's widths divided by 16 the stem would be 2 and 4 filters wide
(dlib's 32 and 64), a bottleneck that made the result depend on the seed (some labels barely
found); 8 filters in the stem cost about 20 % more CPU per step.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

import dnnpy
from dnnpy import (add_prev1, bn_con, concat2, con, input_rgb_image, leaky_relu, loss_yolo, sig,
                   skip_template, tag1, tag_template, upsample, yolo_options, yolo_rect)
from dnnpy.data import (average_precision, dlib_rand, find_clusters_using_kmeans, load_image_dataset,
                        make_scenes, pick_initial_centers, prefetch, randomize_samples,
                        write_scene_dataset)
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.geometry import box_intersection_over_union, centered_drect, drectangle
from dnnpy.image import (color_mapper, disturb_colors, draw_rectangle, flip_image_left_right, inv,
                         letterbox_image, random_cropper, rectangle_transform, rotate_image,
                         save_png, tile_images)
from dnnpy.image.transforms import interpolate_bilinear
from dnnpy.layers.base import seeded_initialisation

NET_FILE = "yolov3.dnn"
KINDS = ("smiley", "car", "truck")

# -- the darknet namespace of dlib's example ---------------------------------------------------
# backbone, neck, head and yolo tags: dlib's custom ids
btag8, btag16 = tag_template("btag8", 8008), tag_template("btag16", 8016)
ntag8, ntag16, ntag32 = (tag_template("ntag8", 6008), tag_template("ntag16", 6016),
                         tag_template("ntag32", 6032))
nskip16, nskip32 = skip_template("nskip16", 6016), skip_template("nskip32", 6032)
htag8, htag16 = tag_template("htag8", 7008), tag_template("htag16", 7016)
ytag8, ytag16, ytag32 = (tag_template("ytag8", 4008), tag_template("ytag16", 4016),
                         tag_template("ytag32", 4032))

WIDTH_DIVISOR = 16   # dlib's darknet widths 32..1024 become 8..64 (with MIN_WIDTH)
# at least 8 filters: dlib's 32 and 64 divided by 16 left the stem 2 and 4 filters wide, a
# bottleneck whose random initialisation decided which labels' colours got through (seed 2
# lost the yellow smileys: objectness ~0.01 on all of them, AP 0.02); 8 costs ~20 % more CPU
MIN_WIDTH = 8


def _w(nf):
    return max(MIN_WIDTH, nf // WIDTH_DIVISOR)


def conblock(nf, ks, s, SUBNET, BN=bn_con):
    return leaky_relu[0.1, BN[con[_w(nf), ks, ks, s, s, ks // 2, ks // 2, SUBNET]]]


def residual(nf, SUBNET, BN=bn_con):
    return add_prev1[conblock(nf, 3, 1, conblock(nf // 2, 1, 1, tag1[SUBNET], BN), BN)]


def conblock5(nf, factor, SUBNET, BN=bn_con):
    x = conblock(nf, 1, 1, SUBNET, BN)
    for _ in range(2):
        x = conblock(nf, 1, 1, conblock(nf * factor, 3, 1, x, BN), BN)
    return x


def backbone53(INPUT, BN=bn_con):
    """dlib's backbone53 with every ``repeat`` count set to 1 (dlib: 1, 2, 8, 8, 4)."""
    x = residual(64, conblock(64, 3, 2, conblock(32, 3, 1, INPUT, BN), BN), BN)
    x = residual(128, conblock(128, 3, 2, x, BN), BN)
    x = btag8[residual(256, conblock(256, 3, 2, x, BN), BN)]
    x = btag16[residual(512, conblock(512, 3, 2, x, BN), BN)]
    return residual(1024, conblock(1024, 3, 2, x, BN), BN)


def yolo(num_classes, nf, YTAG, NTAG, SUBNET, BN=bn_con):
    return YTAG[sig[con[3 * (num_classes + 5), 1, 1, 1, 1,
                        conblock(nf, 3, 1, NTAG[conblock5(nf // 2, 2, SUBNET, BN)], BN)]]]


def yolov3(num_classes, BN=bn_con):
    x = yolo(num_classes, 1024, ytag32, ntag32, backbone53(input_rgb_image, BN), BN)
    x = yolo(num_classes, 512, ytag16, ntag16,
             concat2[htag16, btag16, htag16[upsample[2, conblock(256, 1, 1, nskip32[x], BN)]]], BN)
    return yolo(num_classes, 256, ytag8, ntag8,
                concat2[htag8, btag8, htag8[upsample[2, conblock(128, 1, 1, nskip16[x], BN)]]], BN)


def train_type(num_classes):
    """dlib's ``yolov3_train_type`` for ``num_classes`` labels (dlib builds it for 80 and then
    sets the heads' filter counts; here the count is part of the type)."""
    return loss_yolo[ytag8, ytag16, ytag32, yolov3(num_classes)]


def setup_detector(net, options):
    """dlib's ``darknet::setup_detector`` (the leaky_relu alpha and the heads' filter counts
    are already in the net type): no biases before bn, a 1000-step bn statistics window."""
    dnnpy.disable_duplicative_biases(net)
    dnnpy.set_all_bn_running_stats_window_sizes(net, 1000)
    net.loss_details().options = options


# -- data --------------------------------------------------------------------------------------

def scene_settings():
    """``make_scenes`` keywords of the generated data: three labels, half-colourful backgrounds."""
    return dict(rows=120, cols=160, kinds=KINDS, num_objects=(2, 4), size=(24, 48), clutter=0.5)


def write_scenes(folder, num_train, num_test, seed):
    scenes = make_scenes(num_train + num_test, seed=seed, **scene_settings())
    return (write_scene_dataset(folder, scenes[:num_train], "training.xml"),
            write_scene_dataset(folder, scenes[num_train:], "testing.xml"))


def kmeans_anchors(images, boxes, k, image_size, seed=0):
    """dlib's ``--anchors`` computation: every box's (width, height) scaled as the letterbox
    scales its image (``image_size / max(rows, cols)``), shuffled (``randomize_samples``),
    ``pick_initial_centers`` + ``find_clusters_using_kmeans``, sorted by area. Returns
    ``(anchors, average_iou)``: a (k, 2) float array and the mean over the boxes of the best
    IoU of the box and an anchor, both centred at the origin."""
    samples = np.array([(b.rect.width(), b.rect.height()) for img, bs in zip(images, boxes)
                        for b in bs], dtype=np.float64)
    scales = np.array([image_size / max(img.shape[:2]) for img, bs in zip(images, boxes) for _ in bs])
    if len(samples) < max(2, k):
        raise ValueError(f"kmeans_anchors: {len(samples)} boxes are too few for {k} anchors")
    samples = samples * scales[:, None]
    order = list(range(len(samples)))
    randomize_samples(order, rng=dlib_rand(seed))
    samples = samples[order]
    centers = find_clusters_using_kmeans(samples, pick_initial_centers(k, samples))
    centers = centers[np.argsort(centers.prod(axis=1), kind="stable")]
    total = 0.0
    for s in samples:
        sample = centered_drect((0, 0), s[0], s[1])
        total += max(box_intersection_over_union(sample, centered_drect((0, 0), a[0], a[1]))
                     for a in centers)
    return centers, total / len(samples)


def preprocess_image(image, size):
    """dlib's ``preprocess_image``: the letterboxed image and the transform back to ``image``."""
    out, tform = letterbox_image(image, size)
    return out, rectangle_transform(inv(tform))


def make_sample(rnd, cropper, image, boxes, size):
    """One training sample as dlib's loader makes it: half the time a rotation of up to 5
    degrees, a letterbox and a random flip; else a ``random_cropper`` crop; then
    ``disturb_colors``. Boxes are ``yolo_rect`` with confidence 1 (the class gradient's weight)."""
    truth = [yolo_rect(drectangle._coerce(b.rect), 1, b.label, ignore=b.ignore) for b in boxes]
    if rnd.get_random_double() > 0.5:
        rotated, tform = rotate_image(image, rnd.get_double_in_range(-5 * np.pi / 180, 5 * np.pi / 180),
                                      interpolate_bilinear())
        rt = rectangle_transform(tform)
        for b in truth:
            b.rect = rt(b.rect)
        out, tform = letterbox_image(rotated, size)
        rt = rectangle_transform(tform)
        for b in truth:
            b.rect = rt(b.rect)
        if rnd.get_random_double() > 0.5:
            out, tform = flip_image_left_right(out)
            rt = rectangle_transform(tform)
            for b in truth:
                b.rect = rt(b.rect)
    else:
        out, truth = cropper.crop(image, truth)
    out = np.array(out, copy=True)
    disturb_colors(out, rnd)
    return out, truth


def make_cropper(rnd, size):
    """dlib's loader's ``random_cropper`` settings."""
    c = random_cropper(rnd=rnd)
    c.set_chip_dims(size, size)
    c.set_max_object_size(0.9)
    c.set_min_object_size(10, 10)
    c.set_max_rotation_degrees(10)
    c.set_translate_amount(0.5)
    c.set_randomly_flip(True)
    c.set_background_crops_fraction(0)
    c.set_min_object_coverage(0.8)
    return c


# -- evaluation ----------------------------------------------------------------------------------

def detect(net, images, size, threshold):
    """Detections of ``net`` on ``images`` (letterboxed to ``size``), in image coordinates."""
    result = []
    for img in images:
        boxed, back = preprocess_image(img, size)
        dets = net([boxed], adjust_threshold=threshold)[0]
        for d in dets:
            d.rect = back(d.rect)
        result.append(dets)
    return result


def mean_average_precision(labels, truth, detections):
    """dlib's ``--map``: per image, each truth box takes the first unused detection of its label
    with ``box_intersection_over_union > 0.5`` (a hit); unmatched truths are missing,
    unmatched detections false alarms; per label ``average_precision`` of the hits sorted by
    confidence (best first). Returns ``({label: ap}, mean)``."""
    hits = {lab: [] for lab in labels}
    missing = {lab: 0 for lab in labels}
    for boxes, dets in zip(truth, detections):
        used = [False] * len(dets)
        for t in boxes:
            found = False
            for j, d in enumerate(dets):
                if not used[j] and t.label == d.label and \
                        box_intersection_over_union(drectangle._coerce(t.rect), d.rect) > 0.5:
                    used[j] = found = True
                    hits[d.label].append((d.detection_confidence, True))
                    break
            if not found:
                missing[t.label] += 1
        for j, d in enumerate(dets):
            if not used[j]:
                hits[d.label].append((d.detection_confidence, False))
    aps = {}
    for lab in labels:
        ranked = sorted(hits[lab], reverse=True)      # dlib: sort(rbegin, rend)
        aps[lab] = average_precision(ranked, missing[lab])
    return aps, float(np.mean(list(aps.values())))


def draw_detections(images, truth, dets, colors):
    """The images with truth boxes (thin white) and detections (thick, one colour per label)."""
    drawn = []
    for img, tr, ds in zip(images, truth, dets):
        img = np.array(img, copy=True)
        for b in tr:
            draw_rectangle(img, b.rect, (255, 255, 255))
        for d in ds:
            draw_rectangle(img, d.rect, colors(d.label), thickness=2)
        drawn.append(img)
    return tile_images(drawn)


def print_map(aps, m):
    for lab, ap in aps.items():
        print(f"{lab + ': ':<16}{ap * 100:.4g}%")
    print(f"{'mAP: ':<16}{m * 100:.4g}%")


# -- main ----------------------------------------------------------------------------------------

def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="an imglab dataset folder (training.xml, testing.xml) instead of "
                             "generated scenes (dlib's argument)")
    parser.add_argument("--size", type=int, default=128, help="image size for training (dlib: 416)")
    parser.add_argument("--learning-rate", type=float, default=0.005, help="learning rate (dlib: 0.001)")
    parser.add_argument("--batch-size", type=int, default=8, help="mini batch size")
    parser.add_argument("--burnin", type=int, default=50, help="learning rate burn-in steps (dlib: 1000)")
    parser.add_argument("--steps", type=int, default=400, help="training steps, the last fifth at "
                        "a tenth of the rate (dlib: until the learning rate falls below 1e-3 of its start)")
    parser.add_argument("--train", type=int, default=96, help="generated training scenes")
    parser.add_argument("--test", type=int, default=24, help="generated testing scenes")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes, net and loaders")
    parser.add_argument("--anchors", type=int, default=0, metavar="N",
                        help="only compute N anchor boxes with k-means, print them and their "
                             "average IoU, and exit")
    parser.add_argument("--map", action="store_true",
                        help="only compute the mean average precision of the saved net "
                             f"(OUT/{NET_FILE}) on the testing images")
    parser.add_argument("--visualize", action="store_true",
                        help="write a PNG of training samples with their boxes and exit")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.burnin, args.train, args.test, args.batch_size = 3, 2, 4, 2, 2
    out = out_dir(args.out)
    timer = Timer()
    if args.data:
        train_xml, test_xml = f"{args.data}/training.xml", f"{args.data}/testing.xml"
    else:
        train_xml, test_xml = write_scenes(out / "yolo_scenes", args.train, args.test, args.seed)
    images, boxes = load_image_dataset(train_xml)
    print(f"# images: {len(images)}")
    counts = Counter(b.label for bs in boxes for b in bs)
    num_objects = sum(counts.values())
    print(f"# labels: {len(counts)}")
    colors = color_mapper()
    labels = sorted(counts)                          # dlib's std::map order
    for lab in labels:
        print(f" - {lab}: {counts[lab]} ({100.0 * counts[lab] / num_objects:.4g}%)")
        colors(lab)
    result = {"train_xml": train_xml, "test_xml": test_xml, "labels": labels}

    k = args.anchors or 9
    anchors, avg_iou = kmeans_anchors(images, boxes, k, args.size, args.seed)
    if args.anchors:
        print(f"Computing anchors for {num_objects} samples")
        for a in anchors:
            print(f"{round(a[0])}x{round(a[1])}")
        print(f"Average IoU: {avg_iou:.6g}")
        return {**result, "anchors": anchors, "average_iou": avg_iou}

    options = yolo_options(labels=labels, iou_ignore_threshold=0.7, iou_anchor_threshold=0.2)
    # 3 anchors per head, smallest on the finest (stride 8) head, as COCO's in dlib's example
    ints = [(max(1, round(a[0])), max(1, round(a[1]))) for a in anchors]
    per = max(1, len(ints) // 3)
    for i, tag in enumerate((ytag8, ytag16, ytag32)):
        options.add_anchors(tag, ints[i * per:(i + 1) * per] if i < 2 else ints[2 * per:])
    print(f"anchors: {options.anchors_str()} (k-means, average IoU {avg_iou:.3f})")
    net_type = train_type(len(labels))
    infer_type = dnnpy.inference_type(net_type)
    net_path = out / NET_FILE

    test_images, test_boxes = load_image_dataset(test_xml)
    if args.map:
        inet = dnnpy.deserialize(net_path, infer_type())
        dets = detect(inet, test_images, args.size, 0.005)
        print(f"computing mean average precision for {len(test_images)} images...")
        aps, m = mean_average_precision(labels, test_boxes, dets)
        print_map(aps, m)
        return {**result, "ap": aps, "map": m}

    def make_batch(i):
        rnd = dlib_rand(f"yolo {args.seed} {i}")
        cropper = make_cropper(rnd, args.size)
        batch_images, batch_boxes = [], []
        for _ in range(args.batch_size):
            j = rnd.get_random_32bit_number() % len(images)
            img, bs = make_sample(rnd, cropper, images[j], boxes[j], args.size)
            batch_images.append(img)
            batch_boxes.append(bs)
        return batch_images, batch_boxes

    if args.visualize:
        imgs, bxs = make_batch(0)
        drawn = []
        for img, bs in zip(imgs, bxs):
            img = np.array(img, copy=True)
            for b in bs:
                draw_rectangle(img, b.rect, colors(b.label), thickness=1 if b.ignore else 2)
            drawn.append(img)
        path = save_png(tile_images(drawn), out / "yolo_training_samples.png")
        print(f"wrote {len(drawn)} training samples to {path}")
        return {**result, "visualize_png": path}

    with seeded_initialisation(args.seed):
        net = net_type()
    setup_detector(net, options)
    trainer = dnnpy.dnn_trainer(net, dnnpy.sgd(0.0005, 0.9))
    trainer.set_mini_batch_size(args.batch_size)
    if not args.quiet:
        trainer.be_verbose()
    burnin = max(1, min(args.burnin, args.steps))
    # dlib: the training can be unstable at the start, so the rate grows as the 4th power;
    # then (instead of dlib's plateau shrinking, which a short noisy run rarely triggers) the
    # rate is constant and the last fifth of the steps runs at a tenth of it
    schedule = np.full(max(args.steps, burnin), args.learning_rate)
    schedule[:burnin] = args.learning_rate * np.linspace(1e-12, 1, burnin) ** 4
    schedule[max(burnin, args.steps - args.steps // 5):] *= 0.1
    trainer.set_learning_rate_schedule(schedule)
    print(trainer)
    print(f"training started with {burnin} burn-in steps")
    train_timer = Timer()
    steps = 0
    with num_threads(args.threads), seeded_initialisation(args.seed), \
            prefetch(make_batch, depth=2, threads=max(1, args.threads), count=args.steps) as batches:
        for batch_images, batch_boxes in batches:
            if steps == burnin:
                print("burn-in finished")
            trainer.train_one_step(batch_images, batch_boxes)
            steps += 1
    net = trainer.get_net()
    # dlib keeps bn's running statistics over a 1000-step window: in a few hundred steps that
    # is the average over the whole run, mostly of the untrained net's first steps, and the
    # inference copy then scores confident boxes everywhere (mAP 0.03 instead of 0.42 here).
    # Recompute them with the final weights on the letterboxed training images instead.
    dnnpy.recompute_bn_running_stats(net, [preprocess_image(img, args.size)[0] for img in images],
                                     batch_size=max(2, args.batch_size))
    train_seconds = train_timer()
    print(f"training done: {steps} steps in {train_seconds:.1f} s, average loss "
          f"{trainer.get_average_loss():.4g}")

    # dlib: assign to the infer type (bn_con -> affine) and fuse the affines into the convolutions
    inet = dnnpy.copy_net_as(net, infer_type)
    inet([np.zeros((args.size, args.size, 3), np.uint8)])   # fuse_layers needs an allocated net
    dnnpy.fuse_layers(inet)
    dnnpy.serialize(inet, net_path, format="dlib")
    print(f"saved the fused inference net to {net_path}")

    dets = detect(inet, test_images, args.size, 0.005)
    print(f"computing mean average precision for {len(test_images)} images...")
    aps, m = mean_average_precision(labels, test_boxes, dets)
    print_map(aps, m)
    shown = [[d for d in ds if d.detection_confidence >= 0.25] for ds in dets]
    png_path = save_png(draw_detections(test_images[:12], test_boxes[:12], shown[:12], colors),
                        out / "yolo_detections.png")
    print(f"wrote testing images with detections (confidence >= 0.25, a colour per label) and "
          f"truth (white) to {png_path}")
    print(f"done in {timer():.1f} s")
    return {**result, "anchors": anchors, "average_iou": avg_iou, "steps": steps,
            "train_seconds": train_seconds, "net_path": net_path, "png_path": png_path,
            "ap": aps, "map": m, "num_detections": sum(map(len, dets))}


if __name__ == "__main__":
    main()
