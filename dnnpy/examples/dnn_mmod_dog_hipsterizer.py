"""dlib's dnn_mmod_dog_hipsterizer: find faces with an MMOD detector, find their landmarks,
and paste glasses and a moustache onto each face with similarity transforms.

    python -m dnnpy.examples.dnn_mmod_dog_hipsterizer [--out DIR] [--model mmod_dog_hipsterizer.dat --images FILE ...]

dlib's example reads ``mmod_dog_hipsterizer.dat`` (``>> net >> shape_predictor >> glasses >>
mustache``: a dog-face MMOD net, a shape_predictor giving 6 landmarks (top of the head, ears,
eyes, nose), and two RGBA images), doubles the glasses and moustache with ``pyramid_up``, and
for each dog face: takes its landmarks, maps two points of the glasses onto the eyes with
``find_similarity_transform`` (rotation + scale + shift), and the moustache's top corners onto
two points beside the nose (``nose +- 1.3 (eye - eye) / 2``), alpha-blending every pixel
(``assign_pixel`` of an ``rgb_alpha_pixel``); it also draws a wireframe of the landmarks.

dnnpy ships no dog photos, so by default: the faces are generated smileys
(``dnnpy.data.make_scenes``, dnn_mmod's scene settings), found by the smiley detector that
``python -m dnnpy.examples.dnn_mmod`` saves (trained first, and said so, when its file is
missing, as dnn_mmod_face_detection does); the landmarks (the two eyes and the middle of the
mouth, ``scene.parts`` from the generator's geometry) come from a small landmark regression
net in place of the shape predictor: a chip of 32x32 pixels is cut from each box
(``extract_image_chip``), and three stride-2 convs and two fc layers regress the 6 chip
coordinates (``loss_mean_squared_multioutput``). It is trained in the example on chips of
jittered truth boxes (shifted and scaled as the detector's boxes are) of fresh scenes, then
measured on the detector's own boxes of unseen scenes (each matched to its truth smiley),
against the baseline that puts the landmarks at their average place in the box (what the box
alone tells). The glasses and moustache are drawn procedurally as RGBA images; they are pasted
with ``find_similarity_transform``, but sampled with ``transform_image`` through the inverse
map (dlib writes each glasses pixel to the image pixel it maps to, which leaves holes where
the glasses are enlarged and blends several pixels into one where they shrink), then alpha
blended as dlib does (``(a src + (255 - a) dst) / 255``). The moustache hangs from a "nose"
between the eyes and the mouth. Written: ``hipsterizer.png`` (detections with landmark wireframes
left, hipsterized smileys right) and the glasses and moustache as RGBA PNGs.

``--model FILE`` reads dlib's ``mmod_dog_hipsterizer.dat`` whole: its net (dlib's dog-face
detector), its shape predictor (``dnnpy.shape_predictor``, 6 landmarks), the glasses and the
moustache; with ``--images FILE ...`` it hipsterizes the dogs in those images as dlib's example
does (images and overlays doubled with ``pyramid_up``, landmarks, glasses on the eyes,
moustache under the nose, the landmark wireframe) and writes ``<image>_hipster.png``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy import con, fc, input_rgb_image, loss_mean_squared_multioutput, relu
from dnnpy.data import SMILEY_PARTS, make_scenes
from dnnpy.examples import dnn_mmod
from dnnpy.examples import dnn_mmod_find_cars as find_ex
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.geometry import drectangle, rectangle
from dnnpy.image import (chip_details, chip_dims, draw_line, draw_rectangle, extract_image_chips,
                         find_similarity_transform, get_mapping_to_chip, inv, join_rows, load_image,
                         pyramid_up, save_png, tile_images, transform_image)
from dnnpy.inputs import input_rgb_image_pyramid, pyramid_down
from dnnpy.layers import affine
from dnnpy.layers.base import seeded_initialisation
from dnnpy.loss import loss_mmod
from dnnpy.rand import dlib_rand

PART_NAMES = tuple(SMILEY_PARTS)       # left_eye, right_eye, mouth
CHIP = 32


def landmark_net_type():
    """The landmark regressor, in place of dlib's shape_predictor: a ``CHIP x CHIP`` RGB chip
    -> 6 numbers, the parts' chip coordinates scaled to [-1, 1]."""
    x = input_rgb_image
    x = relu[con[16, 5, 5, 2, 2, x]]
    x = relu[con[32, 3, 3, 2, 2, x]]
    x = relu[con[32, 3, 3, 2, 2, x]]
    return loss_mean_squared_multioutput[fc[2 * len(PART_NAMES), relu[fc[64, x]]]]


def dlib_dog_net_type():
    """The type of the net in dlib's ``mmod_dog_hipsterizer.dat`` (affine layers, 45-filter
    rcon5 layers)."""
    def con5d(n, s): return con[n, 5, 5, 2, 2, s]                                                # noqa: E704
    x = input_rgb_image_pyramid[pyramid_down(6)]
    x = relu[affine[con5d(32, relu[affine[con5d(32, relu[affine[con5d(16, x)]])]])]]
    for _ in range(3):
        x = relu[affine[con[45, 5, 5, 1, 1, x]]]
    return loss_mmod[con[1, 9, 9, 1, 1, x]]


# ---------------------------------------------------------------------------------------------
# chips and landmarks

def _chip(rect):
    return chip_details(drectangle(rect.left(), rect.top(), rect.right(), rect.bottom()), chip_dims(CHIP, CHIP))


def chips_and_maps(img, rects):
    """The ``CHIP x CHIP`` chips of ``rects`` and, per chip, the map image -> chip."""
    details = [_chip(r) for r in rects]
    return extract_image_chips(img, details), [get_mapping_to_chip(d) for d in details]


def encode(parts, to_chip):
    """Parts (dict name -> (x, y) in the image) -> the net's 6 targets."""
    xy = np.array([to_chip(parts[n]) for n in PART_NAMES], np.float64)
    return (xy / (CHIP - 1) * 2 - 1).ravel().astype(np.float32)


def decode(out, to_chip):
    """The net's 6 outputs -> dict name -> (x, y) in the image."""
    back = inv(to_chip)
    xy = (np.asarray(out, np.float64).reshape(-1, 2) + 1) / 2 * (CHIP - 1)
    return {n: back(p) for n, p in zip(PART_NAMES, xy)}


def box_parts(rect):
    """The baseline: the parts at their place in a smiley's box (``SMILEY_PARTS``)."""
    w, h = rect.width(), rect.height()
    return {n: (rect.left() + (u + 1) * w / 2 - 0.5, rect.top() + (v + 1) * h / 2 - 0.5)
            for n, (u, v) in SMILEY_PARTS.items()}


def jittered(rect, rnd, shift=0.12, scale=0.12):
    """A square box near ``rect``: centre moved by up to ``shift`` of its size, size scaled
    by up to ``1 +- scale`` (the detector's boxes are off by about that much)."""
    s = (rect.width() + rect.height()) / 2
    size = s * (1 + scale * (2 * rnd.get_random_double() - 1))
    cx = (rect.left() + rect.right()) / 2 + shift * s * (2 * rnd.get_random_double() - 1)
    cy = (rect.top() + rect.bottom()) / 2 + shift * s * (2 * rnd.get_random_double() - 1)
    half = (size - 1) / 2
    return rectangle(round(cx - half), round(cy - half), round(cx + half), round(cy + half))


def landmark_samples(scenes, jitters, seed):
    """Chips of jittered truth boxes of every non-ignored smiley, with their targets."""
    rnd = dlib_rand(seed)
    chips, targets = [], []
    for sc in scenes:
        pairs = [(b.rect, p) for b, p in zip(sc.boxes, sc.parts) if not b.ignore and p]
        rects = [jittered(r, rnd) for r, _ in pairs for _ in range(jitters)]
        if not rects:
            continue
        cs, maps = chips_and_maps(sc.image, rects)
        chips += cs
        targets += [encode(pairs[i // jitters][1], m) for i, m in enumerate(maps)]
    return chips, targets


def train_landmarks(args, verbose):
    scenes = make_scenes(args.train_scenes, seed=args.seed + 500, **dnn_mmod.scene_settings())
    chips, targets = landmark_samples(scenes, args.jitters, args.seed)
    print(f"landmark net: {len(chips)} training chips ({CHIP}x{CHIP}) from {len(scenes)} scenes")
    net = landmark_net_type()()
    trainer = dnnpy.dnn_trainer(net, dnnpy.adam(0.0005, 0.9, 0.999))
    trainer.set_learning_rate(args.lr)
    trainer.set_min_learning_rate(1e-5)
    trainer.set_mini_batch_size(32)
    trainer.set_max_num_epochs(args.epochs)
    if verbose:
        trainer.be_verbose()
    with seeded_initialisation(args.seed):
        trainer.train(chips, targets, shuffle=True, seed=args.seed)
    net = trainer.get_net()
    net.clean()
    return net, len(chips)


def predict_parts(net, img, rects):
    if not rects:
        return []
    chips, maps = chips_and_maps(img, rects)
    out = np.asarray(net(chips))
    return [decode(o, m) for o, m in zip(out, maps)]


def part_errors(pred, truth):
    return [float(np.hypot(pred[n][0] - truth[n][0], pred[n][1] - truth[n][1])) for n in PART_NAMES]


# ---------------------------------------------------------------------------------------------
# glasses and moustache (dlib ships them as RGBA images in its .dat file)

def make_glasses():
    """An RGBA pair of round glasses, 48x120; returns ``(image, lens centres)``."""
    rows, cols = 48, 120
    y, x = np.mgrid[0:rows, 0:cols].astype(np.float64)
    img = np.zeros((rows, cols, 4), np.uint8)
    centres = ((30.0, 24.0), (89.0, 24.0))
    for cx, cy in centres:
        d = np.hypot(x - cx, y - cy)
        img[d <= 18] = (40, 60, 90, 120)            # tinted, see-through lens
        img[(d > 18) & (d <= 23)] = (15, 15, 15, 255)
    bridge = (np.abs(y - 18) <= 2.5) & (x > 50) & (x < 70)
    img[bridge] = (15, 15, 15, 255)
    return img, centres


def make_mustache():
    """An RGBA moustache, 30x80 (two curled lobes); its top corners are the anchors."""
    rows, cols = 30, 80
    y, x = np.mgrid[0:rows, 0:cols].astype(np.float64)
    u, v = (x - (cols - 1) / 2) / ((cols - 1) / 2), y / (rows - 1)    # u in [-1, 1], v in [0, 1]
    centre_line = 0.25 + 0.35 * u ** 2 - 0.3 * np.abs(u) ** 6         # droops, curls up at the tips
    thick = 0.42 * (1 - np.abs(u) ** 1.5)
    mask = (np.abs(v - centre_line) <= thick / 2 + 0.02) & (np.abs(u) <= 0.98)
    img = np.zeros((rows, cols, 4), np.uint8)
    img[mask] = (50, 30, 15, 255)
    return img


def paste(img, rgba, tform):
    """Alpha-blends ``rgba`` into ``img`` (in place) where ``tform`` (rgba coordinates ->
    image coordinates) puts it: each image pixel samples ``rgba`` (bilinear) at
    ``inv(tform)`` of itself, then ``(a src + (255 - a) dst) / 255`` as dlib's
    ``assign_pixel`` of an ``rgb_alpha_pixel``."""
    rows, cols = img.shape[:2]
    layer = transform_image(rgba, inv(tform), rows, cols, background=0).astype(np.int32)
    a = layer[..., 3:]
    img[...] = ((layer[..., :3] * a + img.astype(np.int32) * (255 - a)) // 255).astype(np.uint8)
    return img


def hipsterize(img, parts, glasses, lens_centres, mustache):
    """dlib's loop body for one face: glasses on the eyes, moustache under the "nose"."""
    leye, reye, mouth = (np.array(parts[n]) for n in PART_NAMES)
    paste(img, glasses, find_similarity_transform(list(lens_centres), [tuple(leye), tuple(reye)]))
    nose = mouth + 0.45 * ((leye + reye) / 2 - mouth)        # smileys have none: between eyes and mouth
    lm, rm = nose + 1.1 * (leye - reye) / 2, nose + 1.1 * (reye - leye) / 2
    cols = mustache.shape[1]
    paste(img, mustache, find_similarity_transform([(0, 0), (cols - 1, 0)], [tuple(lm), tuple(rm)]))
    return img


def wireframe(img, parts, color=(0, 255, 0)):
    """dlib's overlay lines between the landmarks (here a triangle eye-eye-mouth)."""
    pts = [tuple(int(np.floor(c + 0.5)) for c in parts[n]) for n in PART_NAMES]
    for a, b in ((0, 1), (1, 2), (2, 0)):
        draw_line(img, pts[a], pts[b], color)
    return img


# ---------------------------------------------------------------------------------------------

def read_hipsterizer_file(path, net_type):
    """dlib's ``deserialize(path) >> net >> sp >> glasses >> mustache``: the dog-face net, its
    6-landmark ``shape_predictor`` and the two RGBA images (dlib's ``matrix<rgb_alpha_pixel>``:
    rows and columns negated, then 4 raw bytes per pixel)."""
    net, sp, r = find_ex.read_mmod_file(path, net_type)
    if sp is None:
        raise ValueError(f"{path}: the file ends after the net (expected a shape_predictor, glasses "
                         f"and a moustache after it)")
    images = []
    for what in ("glasses", "mustache"):
        rows, cols = -r.int(f"the rows of the {what}"), -r.int(f"the columns of the {what}")
        if rows < 0 or cols < 0:
            raise ValueError(f"{path}: the {what} image has {rows} x {cols} pixels")
        images.append(np.frombuffer(r.raw(4 * rows * cols, f"{what} pixels"), np.uint8).reshape(rows, cols, 4))
    if not r.at_end():
        raise ValueError(f"{path}: {r.remaining()} bytes after the moustache")
    return net, sp, images[0], images[1]


def hipsterize_dog(img, shape, glasses, mustache):
    """dlib's loop body for one dog face (6 landmarks: top, left ear, left eye, nose, right
    ear, right eye), with the glasses and moustache already ``pyramid_up``'d: glasses from
    their points (176, 36) and (59, 35), doubled, onto the eyes; the moustache's top corners
    onto ``nose +- 1.3 (eye - eye) / 2``; then dlib's wireframe of the landmarks."""
    top, lear, leye, nose, rear, reye = (np.array(shape.part(i), np.float64) for i in range(6))
    paste(img, glasses, find_similarity_transform([(352, 72), (118, 70)], [tuple(leye), tuple(reye)]))
    lm, rm = 1.3 * (leye - reye) / 2 + nose, 1.3 * (reye - leye) / 2 + nose
    cols = mustache.shape[1]
    paste(img, mustache, find_similarity_transform([(0, 0), (cols - 1, 0)], [tuple(rm), tuple(lm)]))
    pts = [tuple(int(v) for v in p) for p in (top, lear, leye, nose, rear, reye)]
    for a, b in ((2, 3), (3, 5), (5, 2), (5, 4), (4, 0), (0, 1), (1, 2)):
        draw_line(img, pts[a], pts[b], (0, 255, 0))
    return img


def run_dlib_model(args, out):
    net, sp, glasses, mustache = read_hipsterizer_file(args.model, dlib_dog_net_type())
    glasses, mustache = pyramid_up(glasses), pyramid_up(mustache)
    print(f"read {args.model}: dlib's dog-face detector, its {sp!r}, glasses "
          f"{glasses.shape[1]}x{glasses.shape[0]} and moustache {mustache.shape[1]}x{mustache.shape[0]} "
          f"(after pyramid_up)")
    written, detections = [], []
    for f in args.images or []:
        img = pyramid_up(np.array(load_image(f), copy=True))      # dlib's example upsamples too
        dets = net([img])[0]
        detections.append(dets)
        for shape in sp.batch(img, [d.rect for d in dets]):
            hipsterize_dog(img, shape, glasses, mustache)
        written.append(save_png(img, out / (Path(f).stem + "_hipster.png")))
        print(f"{f}: {len(dets)} dog faces; wrote {written[-1]}")
    return {"png_paths": written, "detections": detections, "shape_predictor": sp}


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--detector", metavar="FILE", default=None,
                        help=f"the smiley detector (default: OUT/{dnn_mmod.NET_FILE} from dnn_mmod; "
                             f"trained first when missing)")
    parser.add_argument("--model", metavar="FILE", default=None,
                        help="dlib's mmod_dog_hipsterizer.dat: hipsterize the dogs in --images with it")
    parser.add_argument("--images", metavar="FILE", nargs="+", default=None,
                        help="with --model: the dog photos")
    parser.add_argument("--train-scenes", type=int, default=60, help="scenes for the landmark net")
    parser.add_argument("--jitters", type=int, default=4, help="jittered boxes per training smiley")
    parser.add_argument("--epochs", type=int, default=30, help="landmark net training epochs")
    parser.add_argument("--lr", type=float, default=0.001, help="landmark net learning rate (adam)")
    parser.add_argument("--test-scenes", type=int, default=8, help="scenes to measure and hipsterize")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes, jitter and weights")
    args = parser.parse_args(argv)
    if args.quick:
        args.train_scenes, args.jitters, args.epochs, args.test_scenes = 3, 2, 1, 2
    out = out_dir(args.out)
    timer = Timer()
    if args.model:
        return run_dlib_model(args, out)

    results = {"training_run": None}
    det_path = Path(args.detector) if args.detector else out / dnn_mmod.NET_FILE
    if not det_path.exists():
        if args.detector:
            raise FileNotFoundError(f"dnn_mmod_dog_hipsterizer: no detector file {det_path}")
        print(f"no detector at {det_path}: training one first with dnn_mmod"
              f"{' --quick' if args.quick else ''}")
        results["training_run"] = dnn_mmod.main(["--out", os.fspath(out), "--quiet"]
                                                + (["--quick"] if args.quick else []))
    detector = dnnpy.deserialize(det_path, dnn_mmod.net_type())
    print(f"detector: {det_path}")

    lm_net, results["num_training_chips"] = train_landmarks(args, not args.quiet)
    lm_path = out / "smiley_landmarks.dat"
    dnnpy.serialize(lm_net, lm_path, format="dlib")
    results["landmark_net_path"] = lm_path
    print(f"saved the landmark net to {lm_path}")

    glasses, lens_centres = make_glasses()
    mustache = make_mustache()
    results["glasses_png"] = save_png(glasses, out / "glasses.png")
    results["mustache_png"] = save_png(mustache, out / "mustache.png")

    scenes = make_scenes(args.test_scenes, seed=args.seed + 900, **dnn_mmod.scene_settings())
    errors, base_errors, frames, hip = [], [], [], []
    num_faces = 0
    overlap = dnnpy.test_box_overlap()
    for sc in scenes:
        dets = [d.rect for d in detector([sc.image])[0]]
        num_faces += len(dets)
        parts = predict_parts(lm_net, sc.image, dets)
        truth = [(b.rect, p) for b, p in zip(sc.boxes, sc.parts) if not b.ignore and p]
        for r, pp in zip(dets, parts):
            match = [p for t, p in truth if overlap(r, t)]
            if match:
                errors += part_errors(pp, match[0])
                base_errors += part_errors(box_parts(r), match[0])
        frame, img = sc.image.copy(), sc.image.copy()
        for r, pp in zip(dets, parts):
            draw_rectangle(frame, r, (255, 0, 0))
            wireframe(frame, pp)
            hipsterize(img, pp, glasses, lens_centres, mustache)
        frames.append(frame)
        hip.append(img)
    results["num_faces"] = num_faces
    results["num_matched"] = len(errors) // len(PART_NAMES)
    results["mean_landmark_error"] = float(np.mean(errors)) if errors else float("nan")
    results["box_only_error"] = float(np.mean(base_errors)) if base_errors else float("nan")
    print(f"{num_faces} faces found in {len(scenes)} scenes, {results['num_matched']} matched to a "
          f"truth smiley")
    if errors:
        print(f"mean landmark error: {results['mean_landmark_error']:.3f} px (the box alone: "
              f"{results['box_only_error']:.3f} px)")
    else:   # the error is undefined (NaN in the results), not zero: say so
        print("mean landmark error: none measured (no detection matched a truth smiley)")
    results["png_path"] = save_png(join_rows(tile_images(frames), tile_images(hip)), out / "hipsterizer.png")
    print(f"wrote the wireframes and the hipsterized smileys to {results['png_path']}")
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
