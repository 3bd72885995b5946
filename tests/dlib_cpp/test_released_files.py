"""The examples' ``--model FILE`` options on files in the layout of dlib's released models,
written by dlib itself (opt-in with the parity suite: ``python -m pytest -q -m dlib_cpp``).

dlib's model files cannot be downloaded here, so ``released_files.cpp`` (built by
``build.build_program``, linked with the same compiled dlib 20.0.1 as the parity driver)
declares exactly the net types of dlib's examples, gives them non-trivial parameters (dlib's
own initialisation, then random bn_/affine_ scales and shifts; the classifier's logits spread
and the detector's threshold placed so a dozen boxes or so are found), and writes:

- ``resnet34_1000_imagenet_classifier.dnn``: ``serialize << net << labels`` with
  dnn_imagenet_ex's ``anet_type`` (affine layers in CONV_MODE, as in dlib's converted nets;
  1000 labels);
- ``mmod_rear_end_vehicle_detector.dat``: dnn_mmod_train_find_cars_ex's bn_con net (bn_con
  records with running statistics: what that program saves), then a ``shape_predictor``;
- ``mmod_front_and_rear_end_vehicle_detector.dat``: dnn_mmod_find_cars2_ex's affine net
  (affine records; windows ``rear`` and ``front``), then a ``shape_predictor``;
- ``mmod_dog_hipsterizer.dat``: the 45-filter bn_con net, a ``shape_predictor``, then glasses
  and mustache (``matrix<rgb_alpha_pixel>``).

Then it reads each file back exactly as dlib's example does (``deserialize(file) >> net >> ...``
with the example's own affine net type) and writes the example's outputs on the test images:
dnn_imagenet_ex's averaged softmax over ``randomly_crop_images`` (a default-seeded
``dlib::rand``), and ``net(img)``'s detections. Each test runs the dnnpy example's ``main``
end to end with ``--model FILE`` on the same images and compares.

Tolerances (float32 in both; dlib sums in its own loops and im2col products, dnnpy in its
BLAS/oneDNN, so the two agree to rounding, not bit for bit; see test_dlib_parity.py):

- crops: bytes equal (the same ``dlib_rand`` draws, the same bilinear chips, flips and colour
  offsets);
- probabilities: ``|p - p_dlib| <= 2**-14 * max(p_dlib)`` elementwise (the parity suite's
  per-tensor budget). Measured: 2.4e-7 at max(p) 0.15, about 2**-19 of it, for the
  36-layer ResNet on two crops; the top-5 labels must be the same, in the same order;
- detections: the same rectangles and labels in the same order, confidences within
  ``2**-14 * max(1, max|confidence|)`` (measured: at most 9.5e-6, about 2**-17 of the
  largest confidences, 1.6 to 5). A detection whose confidence is within that budget of
  the threshold (0) could be found by one and not the other: the test fails saying so if one
  occurs (none does with these files: choose other data then). The lists are compared as sets
  of (rect, label): their order is the scores' order, which rounding could swap for two scores
  within the budget of each other.

The crops being equal also confirms, for this GCC, the argument order
``dnn_imagenet_train.make_random_cropping_rect_resnet`` assumes for dlib's ``point(draw, draw)``.

Times (2 shared cores, -O1 build, noisy): compiling released_files.cpp 49 s CPU, 97 s wall
(once, then cached); the four tests 34 s CPU, 80 s wall, nearly all of it dlib's side: its
ResNet-34 runs four crop-forwards, ~23 s CPU (the net must be sized, filled, scaled, then read
back and run on two crops), the three detectors ~11 s; dnnpy's side ~2 s.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from dnnpy.data import dlib_rand, make_scene
from dnnpy.examples import dnn_imagenet, dnn_mmod_dog_hipsterizer, dnn_mmod_find_cars, dnn_mmod_find_cars2
from dnnpy.examples.dnn_imagenet_train import randomly_crop_images
from dnnpy.image import load_image, pyramid_up, save_png

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET = 2.0 ** -14
pytestmark = [pytest.mark.dlib_cpp]


@pytest.fixture(scope="module")
def program(released_files_program):
    return released_files_program


def write_raw(img, path):
    """released_files.cpp's image format: int32 rows, int32 cols, then the RGB bytes."""
    with open(path, "wb") as f:
        f.write(np.array(img.shape[:2], "<i4").tobytes())
        f.write(np.ascontiguousarray(img, np.uint8).tobytes())
    return str(path)


def run_program(program, *args):
    p = subprocess.run([program, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert p.returncode == 0, f"released_files {' '.join(map(str, args))} failed:\n{p.stdout}"


def read_detections(path):
    """released_files.cpp's ``VARIANT_dets.txt``: per image, ``[(rect, confidence, label)]``."""
    out = []
    with open(path) as f:
        for line in f:
            w = line.rstrip("\n").split(" ")
            if w[0] == "image":
                out.append([])
            else:
                out[-1].append((tuple(int(v) for v in w[:4]), float(w[4]), " ".join(w[5:])))
    return out


def assert_same_detections(ours, theirs, where):
    """See the module docstring: the same (rect, label) pairs, confidences within the budget."""
    assert len(ours) == len(theirs), f"{where}: {len(ours)} images, dlib {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a = [((d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()),
              d.detection_confidence, d.label) for d in a]
        tol = BUDGET * max([1.0] + [abs(d[1]) for d in b])
        near = [d for d in a + b if abs(d[1]) <= tol]
        assert not near, f"{where} image {i}: detections within the budget of the threshold: {near}"
        key = lambda d: (d[0], d[2])                                         # noqa: E731
        assert sorted(map(key, a)) == sorted(map(key, b)), f"{where} image {i}: boxes differ:\n{a}\n{b}"
        mine = dict((key(d), d[1]) for d in a)
        worst = max([abs(mine[key(d)] - d[1]) for d in b], default=0.0)
        print(f"{where} image {i}: {len(b)} detections, confidences within {worst:.3g} (budget {tol:.3g})")
        assert worst <= tol, f"{where} image {i}: confidences differ by up to {worst:g} (budget {tol:g})"


def bytes_after_net(folder, variant):
    with open(os.path.join(folder, f"{variant}_sizes.txt")) as f:
        total, net = (int(v) for v in f.read().split())
    return total - net


# ----------------------------------------------------------------------------------------

def test_dnn_imagenet_reads_dlibs_resnet34_file(program, tmp_path, capsys):
    """dnn_imagenet --model resnet34_1000_imagenet_classifier.dnn --crops 2 IMAGE: the file
    (net, then 1000 labels) loads, the crops are dlib's, the averaged probabilities and the
    printed top five are dlib's."""
    img = make_scene(7, rows=240, cols=320, kinds=("car", "smiley", "disc")).image
    png = save_png(img, tmp_path / "photo.png")
    run_program(program, "imagenet", tmp_path, write_raw(img, tmp_path / "photo.raw"), 2)
    model = tmp_path / dnn_imagenet.DLIB_MODEL

    crops = randomly_crop_images(load_image(png), dlib_rand(), 2, 227)
    theirs = np.fromfile(tmp_path / "imagenet_crops.raw", np.uint8).reshape(2, 227, 227, 3)
    for k in range(2):
        assert np.array_equal(crops[k], theirs[k]), f"crop {k} differs from dlib's"

    capsys.readouterr()
    r = dnn_imagenet.main(["--model", str(model), "--crops", "2", "--out", str(tmp_path / "out"), str(png)])
    printed = capsys.readouterr().out
    assert r["labels"] == [f"n{1000 + i} class {i}, a thing" for i in range(1000)]
    p = np.asarray(r["probabilities"][0], np.float64)
    want = np.loadtxt(tmp_path / "imagenet_p.txt")
    assert p.shape == want.shape == (1000,)
    assert want.max() < 0.5 and want.min() < 1e-5, "dlib's probabilities should be far from uniform"
    err = np.abs(p - want).max()
    print(f"imagenet: probabilities within {err:.3g} of dlib's (max p {want.max():.3g})")
    assert err <= BUDGET * want.max(), f"probabilities differ from dlib's by up to {err:g}"
    top5 = np.argsort(-want, kind="stable")[:5]
    assert np.all(np.diff(want[top5]) < -2 * BUDGET * want.max()), "dlib's top five nearly tie"
    for k in top5:
        assert f": n{1000 + k} class {k}, a thing\n" in printed
    lines = [ln for ln in printed.splitlines() if ": n1" in ln]
    assert [int(ln.split(" class ")[1].split(",")[0]) for ln in lines] == top5.tolist()


def test_dnn_mmod_find_cars_reads_dlibs_rear_detector(program, tmp_path):
    """dnn_mmod_find_cars --model mmod_rear_end_vehicle_detector.dat: bn_con records read into
    the example's affine net (running statistics folded in), the shape_predictor after it
    skipped to the byte, dlib's detections on the example's scene."""
    img, _ = dnn_mmod_find_cars.road_scene(1000, 150, 200)      # main's default scene
    run_program(program, "mmod", tmp_path, "rear", write_raw(img, tmp_path / "scene.raw"))
    out = tmp_path / "out"
    r = dnn_mmod_find_cars.main(["--model", str(tmp_path / "mmod_rear_end_vehicle_detector.dat"),
                                 "--quiet", "--out", str(out)])
    assert np.array_equal(load_image(out / "cars_scene.png"), img), "the example ran on another scene"
    theirs = read_detections(tmp_path / "rear_dets.txt")
    assert len(theirs[0]) >= 5
    assert_same_detections([r["detections"]], theirs, "find_cars")
    net, rest = dnn_mmod_find_cars.read_mmod_net(tmp_path / "mmod_rear_end_vehicle_detector.dat",
                                                 dnn_mmod_find_cars.dlib_net_type())
    assert rest == bytes_after_net(tmp_path, "rear") > 0


def test_dnn_mmod_find_cars2_reads_dlibs_front_and_rear_detector(program, tmp_path):
    """dnn_mmod_find_cars2 --model mmod_front_and_rear_end_vehicle_detector.dat: affine
    records, two labelled windows, dlib's labelled detections on the example's two scenes."""
    scenes = dnn_mmod_find_cars2.car_scenes(2, 1000)              # main's scenes for --scenes 2
    raws = [write_raw(sc.image, tmp_path / f"scene{i}.raw") for i, sc in enumerate(scenes)]
    run_program(program, "mmod", tmp_path, "front_rear", *raws)
    r = dnn_mmod_find_cars2.main(["--model", str(tmp_path / "mmod_front_and_rear_end_vehicle_detector.dat"),
                                  "--scenes", "2", "--quiet", "--out", str(tmp_path / "out")])
    assert r["labels"] == ["front", "rear"]
    theirs = read_detections(tmp_path / "front_rear_dets.txt")
    assert {d[2] for dets in theirs for d in dets} == {"front", "rear"}
    assert_same_detections(r["detections"], theirs, "find_cars2")


def test_dnn_mmod_dog_hipsterizer_reads_dlibs_file(program, tmp_path):
    """dnn_mmod_dog_hipsterizer --model mmod_dog_hipsterizer.dat --images ...: the whole file
    read (the 45-filter net, its 6-part shape_predictor, glasses and mustache), dlib's
    detections on each image after ``pyramid_up`` (as dlib's example upsamples; dlib's program
    is given the upsampled images)."""
    imgs = [make_scene(50 + i, rows=160, cols=200, kinds=("smiley",)).image for i in range(2)]
    pngs = [str(save_png(im, tmp_path / f"dog{i}.png")) for i, im in enumerate(imgs)]
    run_program(program, "mmod", tmp_path, "dog", *[write_raw(pyramid_up(im), tmp_path / f"dog{i}.raw")
                                                     for i, im in enumerate(imgs)])
    r = dnn_mmod_dog_hipsterizer.main(["--model", str(tmp_path / "mmod_dog_hipsterizer.dat"),
                                       "--images", *pngs, "--quiet", "--out", str(tmp_path / "out")])
    assert bytes_after_net(tmp_path, "dog") > 0 and r["shape_predictor"].num_parts() == 6
    assert len(r["png_paths"]) == 2
    theirs = read_detections(tmp_path / "dog_dets.txt")
    assert sum(map(len, theirs)) >= 10
    assert_same_detections(r["detections"], theirs, "dog_hipsterizer")
