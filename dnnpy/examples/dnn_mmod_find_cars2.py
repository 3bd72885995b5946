"""dlib's dnn_mmod_find_cars2_ex: one MMOD detector that finds the rear and the front ends of
cars, each detection labelled.

    python -m dnnpy.examples.dnn_mmod_find_cars2 [--net FILE | --model mmod_front_and_rear_end_vehicle_detector.dat]

dlib's example loads ``mmod_front_and_rear_end_vehicle_detector.dat`` (a net trained by
dnn_mmod_train_find_cars_ex on dlib's front-and-rear vehicle dataset, whose boxes are labelled
``rear`` or ``front``, followed by a ``shape_predictor`` that refines each box), runs it on
``mmod_cars_test_image2.jpg`` and shows each detection with its label: rear ends in red, front
ends in yellow. ``mmod_options`` makes the detector windows per label, so the last con layer
has one filter per (label, aspect ratio) and every detection carries its window's label.

dnnpy does the same with no download: generated road scenes (``dnnpy.data.make_scenes``) with cars
seen from behind (kind ``car``, labelled ``rear``) and from the front (kind ``car_front``,
labelled ``front``), both 2:1 boxes, so the two windows differ only by label and the net must
tell the two ends apart. When no saved net exists, it trains one first with
dnn_mmod_train_find_cars's recipe (its ``train``, on these scenes written as imglab XML: adam
at 0.002, ``loss_per_missed_target`` 2, bn window 10, plain backgrounds, 80x80 crops, 200
steps; see that example for why), saved as ``mmod_front_and_rear_end_vehicle_detector.dat``.
Then it reads the net with ``affine`` layers (as dlib's example), runs it on fresh scenes,
prints each label's precision, recall and average precision (a detection with the wrong label
is a false alarm of its label and leaves the object missed) and writes the scenes with the
labelled detections (red ``rear``, yellow ``front``; the label written above each box) to
``cars2_detections.png``. ``--model FILE`` reads dlib's released detector: its net and the
``shape_predictor`` after it, which refines each box to the box around its landmarks (drawn in
green); dlib's detector looks for photographed cars, so its numbers on generated drawings mean
little.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from dnnpy.data import make_scenes, test_object_detection_function, write_scene_dataset
from dnnpy.examples import dnn_mmod_find_cars as find_ex, dnn_mmod_train_find_cars as train_ex
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.image import draw_rectangle, save_png, tile_images
from dnnpy.layers import affine

MODEL_NAME = "mmod_front_and_rear_end_vehicle_detector.dat"
LABELS = {"car": "rear", "car_front": "front"}          # scene kind -> dlib's label
COLORS = {"rear": (255, 0, 0), "front": (255, 255, 0)}   # dlib's overlay colours

# a 3x5 bitmap font for the labels (dlib's image_window draws the text; a PNG has none)
_GLYPHS = {
    "a": ("...", ".##", "#.#", "#.#", ".##"), "e": (".#.", "#.#", "###", "#..", ".##"),
    "f": (".##", "#..", "###", "#..", "#.."), "n": ("...", "##.", "#.#", "#.#", "#.#"),
    "o": ("...", ".#.", "#.#", "#.#", ".#."), "r": ("...", "#.#", "##.", "#..", "#.."),
    "t": (".#.", "###", ".#.", ".#.", ".##"),
}
_FONT = {c: np.array([[ch == "#" for ch in row] for row in g]) for c, g in _GLYPHS.items()}


def draw_label(img, text, x, y, color):
    """Writes ``text`` (letters of ``_GLYPHS``) into ``img`` with its top-left corner at
    (x, y), clipped to the image; returns ``img``."""
    mask = np.concatenate([np.pad(_FONT[c], ((0, 0), (0, 1))) for c in text], axis=1)
    rows, cols = img.shape[:2]
    y0, x0 = max(y, 0), max(x, 0)
    y1, x1 = min(y + mask.shape[0], rows), min(x + mask.shape[1], cols)
    if y1 > y0 and x1 > x0:
        m = mask[y0 - y:y1 - y, x0 - x:x1 - x]
        img[y0:y1, x0:x1][m] = color
    return img


def draw_labelled(img, dets):
    """A copy of ``img`` with each detection's box and label (dlib's colours)."""
    img = np.array(img, copy=True)
    for d in dets:
        color = COLORS.get(d.label, (0, 255, 0))
        draw_rectangle(img, d.rect, color)
        top = d.rect.top() - 6 if d.rect.top() >= 6 else d.rect.bottom() + 2
        draw_label(img, d.label, d.rect.left(), top, color)
    return img


def car_scenes(n, seed, rows=120, cols=160, size=(24, 44), ignore_below=26, noise=6, clutter=0.0):
    """``n`` generated scenes of rear and front car ends, boxes labelled ``rear`` / ``front``."""
    scenes = make_scenes(n, seed=seed, rows=rows, cols=cols, kinds=tuple(LABELS), num_objects=(2, 4),
                         size=tuple(size), ignore_below=ignore_below, noise=noise, clutter=clutter)
    for sc in scenes:
        for b in sc.boxes:
            b.label = LABELS[b.label]
    return scenes


def write_dataset(folder, args):
    """The training and testing scenes as imglab XML (dlib's dataset layout)."""
    kw = dict(size=args.size, ignore_below=args.ignore_below, noise=args.noise, clutter=args.clutter)
    write_scene_dataset(folder, car_scenes(args.num_train, args.seed, **kw), "training.xml")
    write_scene_dataset(folder, car_scenes(args.num_test, args.seed + 1, **kw), "testing.xml")
    return folder


def per_label_results(net, images, truth, labels):
    """``{label: (precision, recall, AP)}``: ``test_object_detection_function`` with only that
    label's truth boxes (ignore boxes kept) and only that label's detections."""
    results = {}
    for label in labels:
        def detector(imgs, adjust_threshold=0.0, label=label):
            return [[d for d in net(imgs, adjust_threshold=adjust_threshold)[0] if d.label == label]]
        t = [[b for b in v if b.ignore or b.label == label] for v in truth]
        results[label] = tuple(float(v) for v in test_object_detection_function(detector, images, t)[0])
    return results


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--net", metavar="FILE", default=None,
                        help=f"the front + rear net (default: OUT/{MODEL_NAME}; trained first when missing)")
    parser.add_argument("--model", metavar="FILE", default=None,
                        help="dlib's released mmod_front_and_rear_end_vehicle_detector.dat (its net and "
                             "its shape predictor)")
    parser.add_argument("--scenes", type=int, default=8, help="fresh scenes to run the detector on")
    parser.add_argument("--scene-seed", type=int, default=1000, help="seed of those scenes")
    train_ex.add_training_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        train_ex.quick_settings(args)
        args.scenes = 2
    out = out_dir(args.out)
    timer = Timer()
    results = {"training": None}
    if args.model:
        net, sp, _ = find_ex.read_mmod_file(args.model, find_ex.dlib_net_type())
        print(f"read the net and the shape predictor of {args.model}: {sp!r} (it refines the "
              f"boxes, drawn in green)")
    else:
        path = Path(out / MODEL_NAME if args.net is None else args.net)
        if not path.exists():
            if args.net is not None:
                raise FileNotFoundError(f"dnn_mmod_find_cars2: no net file {path}")
            print(f"no trained net at {path}: training one first (dnn_mmod_train_find_cars's recipe "
                  f"on rear and front car scenes)")
            train_args = argparse.Namespace(**vars(args))
            train_args.xml_dir = str(write_dataset(out / "cars2_dataset", args))
            results["training"] = train_ex.train(train_args, out, verbose=not args.quiet,
                                                 model_name=MODEL_NAME)
        net_type = train_ex.make_net_type(tuple(args.filters), args.num_rcon, norm=affine,
                                          rcon_size=args.rcon_size, det_size=args.det_size)
        net, rest = find_ex.read_mmod_net(path, net_type)
        if rest:
            raise ValueError(f"{path}: {rest} bytes after the net (expected a net only)")
        print(f"loaded {path} (bn_con layers read as affine, as dlib's example does)")
        sp = None
    windows = net.loss_details().options.detector_windows
    print(f"detector windows: {[(w.width, w.height, w.label) for w in windows]}")
    results["labels"] = sorted({w.label for w in windows})

    scenes = car_scenes(args.scenes, args.scene_seed, size=args.size, ignore_below=args.ignore_below,
                        noise=args.noise, clutter=args.clutter)
    images, truth = [sc.image for sc in scenes], [sc.boxes for sc in scenes]
    drawn, results["detections"] = [], []
    for i, img in enumerate(images):
        dets = net([img])[0]
        results["detections"].append(dets)
        print(f"scene {i}: {len(dets)} detections " + ", ".join(
            f"{d.label} {d.rect} ({d.detection_confidence:.2f})" for d in dets[:6])
            + (", ..." if len(dets) > 6 else ""))
        shown = draw_labelled(img, dets)
        if sp is not None:        # dlib's example: the box around each detection's landmarks
            for rect in find_ex.refine_boxes(sp, img, dets):
                draw_rectangle(shown, rect, (0, 255, 0), 1)
        drawn.append(shown)
    results["per_label"] = per_label_results(net, images, truth, ("rear", "front"))
    for label, (p, r, ap) in results["per_label"].items():
        print(f"{label:>5} results (precision, recall, AP): {p:g} {r:g} {ap:g}")
    results["min_ap"] = min(v[2] for v in results["per_label"].values())
    results["png_path"] = Path(save_png(tile_images(drawn), out / "cars2_detections.png"))
    print(f"wrote the scenes with labelled detections (rear red, front yellow) to {results['png_path']}")
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
