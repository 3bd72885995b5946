"""dlib's released face models run in dnnpy (``dnnpy.models``), checked against dlib itself.

The parity tests need the test extra ``dnnpy[dlib]`` (dlib-bin for dlib's Python bindings,
face_recognition_models for the .dat files) and the photos in ``../shared/testdata/faces/``
(override with ``DNNPY_FACES_DIR``); each skips with the reason when one is missing. Chips are
cut by dlib itself (HOG detector, 5-point shape predictor, ``get_face_chip(img, shape, 150,
0.25)``), so both libraries see the same uint8 pixels.

Tolerances: descriptors within 1e-5 max abs of ``compute_face_descriptor(chip)``;
detections: the same rectangles, confidences within 1e-4 of ``cnn_face_detection_model_v1``.
The last two tests run the examples dnn_mmod_face_detection and dnn_face_recognition with
``--model`` set to the real files.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from dnnpy import models
from dnnpy.examples import dnn_face_recognition, dnn_mmod_face_detection
from dnnpy.image import save_png
from helpers import FACES_DIR, dlib_model_or_skip, face_photos, needs_dlib


# -- fixtures (module scope: the nets and dlib's objects are loaded once) ------------------

@pytest.fixture(scope="module")
def face_net():
    return models.load_face_recognition_model(dlib_model_or_skip(models.FACE_RECOGNITION_MODEL))


@pytest.fixture(scope="module")
def detector():
    return models.load_face_detector(dlib_model_or_skip(models.FACE_DETECTOR_MODEL))


@pytest.fixture(scope="module")
def images():
    dlib = needs_dlib()
    return {os.path.basename(p): dlib.load_rgb_image(p) for p in face_photos()}


@pytest.fixture(scope="module")
def chips(images):
    """Aligned 150x150 chips of every face dlib's HOG detector finds (upsampled once)."""
    dlib = needs_dlib()
    sp = dlib.shape_predictor(dlib_model_or_skip("shape_predictor_5_face_landmarks.dat"))
    hog = dlib.get_frontal_face_detector()
    out = []
    for img in images.values():
        for rect in hog(img, 1):
            out.append(dlib.get_face_chip(img, sp(img, rect), 150, 0.25))
    if len(out) < 3:
        pytest.skip(f"dlib found only {len(out)} faces in {FACES_DIR}; need several chips")
    return out


def _rects(dets, conf):
    """(left, top, right, bottom, confidence) tuples sorted by rectangle: scores equal to
    float32 rounding may order two detections differently."""
    return sorted((d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom(), float(getattr(d, conf)))
                  for d in dets)


def _assert_same_detections(ours, theirs, where):
    a, b = _rects(ours, "detection_confidence"), _rects(theirs, "confidence")
    assert [r[:4] for r in a] == [r[:4] for r in b], f"{where}: rectangles differ\n ours {a}\n dlib {b}"
    for x, y in zip(a, b):
        assert abs(x[4] - y[4]) <= 1e-4, f"{where}: confidence {x[4]} vs dlib's {y[4]} at {x[:4]}"


# -- the use API (no dlib needed) -----------------------------------------------------------

def test_wrong_chip_size_names_the_input_layer():
    net = models.face_recognition_resnet_v1()()
    with pytest.raises(ValueError, match="input_rgb_image_sized"):
        net([np.zeros((149, 150, 3), np.uint8)])
    with pytest.raises(ValueError, match="input_rgb_image_sized"):
        net([np.zeros((150, 150), np.uint8)])


def test_missing_package_says_how_to_get_the_files(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "face_recognition_models" else real(name, *a))
    with pytest.raises(FileNotFoundError, match=r"face_recognition_models.*dlib\.net/files"):
        models.load_face_detector()


def test_descriptors_are_a_list_of_128_float32(face_net):
    chip = np.random.default_rng(0).integers(0, 256, (150, 150, 3), dtype=np.uint8)
    out = face_net([chip, chip[::-1].copy()])
    assert isinstance(out, list) and len(out) == 2
    for d in out:
        assert isinstance(d, np.ndarray) and d.dtype == np.float32 and d.shape == (128,)
    assert not np.array_equal(out[0], out[1])
    assert face_net.loss_details().get_distance_threshold() == pytest.approx(0.6)


def test_adjust_threshold_keeps_lower_scores(detector):
    """``process(images, t)`` keeps detections scoring above t, best first (no face here, so
    every score is negative and the default threshold 0 finds nothing)."""
    img = np.zeros((200, 260, 3), np.uint8)
    img[60:140, 90:170] = 200
    assert detector([img]) == [[]]
    low = detector.process([img], -1.2)[0]
    assert len(low) >= 3
    scores = [d.detection_confidence for d in low]
    assert all(-1.2 < s <= 0 for s in scores) and scores == sorted(scores, reverse=True)


def _above_zero_unchanged(detector, img, where):
    """Lowering the threshold keeps the same detections above 0: a kept detection can only be
    suppressed by a better one."""
    base = detector([img])[0]
    low = detector.process([img], -0.5)[0]
    assert len(low) >= len(base)
    assert _rects([d for d in low if d.detection_confidence > 0], "detection_confidence") == \
        _rects(base, "detection_confidence"), where


# -- parity with dlib ----------------------------------------------------------------------

def test_descriptors_match_dlib(face_net, chips):
    dlib = needs_dlib()
    ref = dlib.face_recognition_model_v1(dlib_model_or_skip(models.FACE_RECOGNITION_MODEL))
    ours = face_net(chips)                   # one batch
    single = face_net([chips[0]])[0]         # and one chip alone
    assert len(ours) == len(chips)
    worst = 0.0
    for chip, d in zip(chips, ours):
        want = np.array(ref.compute_face_descriptor(chip))
        worst = max(worst, float(np.abs(d - want).max()))
    assert worst <= 1e-5, f"descriptors differ from dlib's by up to {worst:g}"
    assert np.abs(single - ours[0]).max() <= 1e-5


def test_detections_match_dlib(detector, images):
    dlib = needs_dlib()
    ref = dlib.cnn_face_detection_model_v1(dlib_model_or_skip(models.FACE_DETECTOR_MODEL))
    found = 0
    for name, img in images.items():
        theirs = ref(img, 0)
        _assert_same_detections(detector([img])[0], theirs, name)
        _above_zero_unchanged(detector, img, name)
        found += len(theirs)
    assert found >= 2, "the photos should hold faces dlib finds without upsampling"


@pytest.mark.slow
def test_detections_match_dlib_upsampled(detector, images):
    """The same on 2x (pixel-repeated) images, where the smaller faces are found too: more
    detections, larger pyramids (about 8 s of dlib on 2 cores)."""
    dlib = needs_dlib()
    ref = dlib.cnn_face_detection_model_v1(dlib_model_or_skip(models.FACE_DETECTOR_MODEL))
    found = 0
    for name in sorted(images)[1::2]:
        big = np.ascontiguousarray(images[name].repeat(2, 0).repeat(2, 1))
        theirs = ref(big, 0)
        _assert_same_detections(detector([big])[0], theirs, name + " x2")
        found += len(theirs)
    assert found >= 4


# -- the examples' --model options with the real files -------------------------------------

def test_dnn_mmod_face_detection_example_runs_dlibs_detector(tmp_path, images, capsys):
    """``dnn_mmod_face_detection --images PHOTO --model mmod_human_face_detector.dat`` (no
    upsampling: --min-pixels 1) finds what dlib's own detector finds in the photo."""
    dlib = needs_dlib()
    path = dlib_model_or_skip(models.FACE_DETECTOR_MODEL)
    detector = dlib.cnn_face_detection_model_v1(path)
    # the first photo in which dlib's detector finds a face without upsampling (in some, the
    # faces are smaller than its 80-pixel window)
    name, want = next(((n, k) for n in sorted(images) if (k := len(detector(images[n], 0)))),
                      (None, 0))
    assert want >= 1, "dlib finds no face without upsampling in any test photo"
    png = save_png(images[name], tmp_path / "photo.png")
    r = dnn_mmod_face_detection.main(["--images", str(png), "--model", path, "--min-pixels", "1",
                                      "--hog", "--out", str(tmp_path)])
    assert r["detections"] == [want]
    assert r["hog_detections"] == [len(dlib.get_frontal_face_detector()(images[name], 1))]
    assert f"detector: {path}" in capsys.readouterr().out


def test_dnn_face_recognition_example_runs_dlibs_resnet(tmp_path, chips):
    """``dnn_face_recognition --images CHIP ... --model dlib_face_recognition_resnet_model_v1.dat``
    on dlib's own 150x150 chips: the first descriptor it reports is dlib's (1e-5, as above),
    and the chips of one photo's people cluster into at least one and at most len(chips)."""
    dlib = needs_dlib()
    path = dlib_model_or_skip(models.FACE_RECOGNITION_MODEL)
    pngs = [str(save_png(c, tmp_path / f"chip{i}.png")) for i, c in enumerate(chips[:3])]
    r = dnn_face_recognition.main(["--images", *pngs, "--model", path, "--jitters", "2",
                                   "--out", str(tmp_path)])
    want = np.array(dlib.face_recognition_model_v1(path).compute_face_descriptor(chips[0]))
    assert np.abs(r["descriptor"] - want).max() <= 1e-5
    assert 1 <= r["num_clusters"] <= 3 and len(r["labels"]) == 3
    assert r["jittered"].shape == (128,) and r["png"].is_file()


def test_dnn_face_recognition_example_finds_and_aligns_faces_itself(tmp_path, images, capsys):
    """``--images PHOTO --detect``: dlib's HOG face detector (upsampled once; ``--cnn``: the CNN
    detector) finds the faces and the 5-point shape predictor aligns them; as many faces as
    dlib's detector finds."""
    dlib = needs_dlib()
    for needed in (models.FACE_RECOGNITION_MODEL, models.FACE_DETECTOR_MODEL,
                   "shape_predictor_5_face_landmarks.dat"):
        dlib_model_or_skip(needed)                     # the script finds these in the package
    name = sorted(images)[0]
    photo = save_png(images[name], tmp_path / "photo.png")
    r = dnn_face_recognition.main(["--images", str(photo), "--detect", "--jitters", "2",
                                   "--out", str(tmp_path)])
    want = len(dlib.get_frontal_face_detector()(images[name], 1))
    assert want >= 1 and len(r["labels"]) == want
    assert r["descriptor"].shape == (128,)
    r = dnn_face_recognition.main(["--images", str(photo), "--detect", "--cnn", "--jitters", "1",
                                   "--out", str(tmp_path)])
    want = len(dlib.cnn_face_detection_model_v1(dlib_model_or_skip(models.FACE_DETECTOR_MODEL))(images[name], 1))
    assert want >= 1 and len(r["labels"]) == want


# -- dlib's Python classes: import dnnpy as dlib -------------------------------------------

def test_dlibs_python_face_classes_equal_dlib(images):
    """``face_recognition_model_v1(path).compute_face_descriptor`` in its forms and
    ``cnn_face_detection_model_v1(path)(img, upsample_num_times)`` give dlib-bin's numbers:
    descriptors within 1e-5, the same boxes, confidences within 1e-4."""
    import dnnpy
    dlib = needs_dlib()
    sp_path = dlib_model_or_skip("shape_predictor_5_face_landmarks.dat")
    fr_path = dlib_model_or_skip(models.FACE_RECOGNITION_MODEL)
    det_path = dlib_model_or_skip(models.FACE_DETECTOR_MODEL)
    ours, theirs = dnnpy.face_recognition_model_v1(fr_path), dlib.face_recognition_model_v1(fr_path)
    sp, sp_d = dnnpy.shape_predictor(sp_path), dlib.shape_predictor(sp_path)
    cnn, cnn_d = dnnpy.cnn_face_detection_model_v1(det_path), dlib.cnn_face_detection_model_v1(det_path)
    hog = dlib.get_frontal_face_detector()
    name = sorted(images)[1]
    img = images[name]
    dets = list(hog(img, 1))
    shapes = sp.batch(img, dets)
    want = dlib.full_object_detections()
    for d in dets:
        want.append(sp_d(img, d))
    got = ours.compute_face_descriptor(img, shapes)
    assert len(got) == len(dets) >= 1
    for a, b in zip(got, theirs.compute_face_descriptor(img, want)):
        assert a.shape == (128,) and np.abs(a - np.array(b)).max() <= 1e-5
    one = ours.compute_face_descriptor(img, shapes[0])
    assert np.array_equal(one, got[0])
    chips = dnnpy.get_face_chips(img, shapes)
    assert np.abs(ours.compute_face_descriptor(chips[0]) - got[0]).max() <= 1e-6
    assert [len(x) for x in ours.compute_face_descriptor([img, img], [shapes[:1], shapes])] == [1, len(shapes)]
    assert ours.compute_face_descriptor(img, []) == []
    jittered = ours.compute_face_descriptor(img, shapes[0], 3)
    assert np.linalg.norm(jittered - got[0]) < 0.2            # a mean of 3 jittered copies
    for up in (0, 1):
        a, b = cnn(img, up), cnn_d(img, up)
        assert [(r.rect.left(), r.rect.top(), r.rect.right(), r.rect.bottom()) for r in a] == \
            [(r.rect.left(), r.rect.top(), r.rect.right(), r.rect.bottom()) for r in b]
        assert all(abs(x.confidence - y.confidence) <= 1e-4 for x, y in zip(a, b))
    assert [len(x) for x in cnn([img, img], 0)] == [len(cnn(img, 0))] * 2


def test_cnn_face_detector_script_prints_dlibs_detections(tmp_path, images, capsys):
    """dlib's python_examples/cnn_face_detector.py run with dnnpy: the printed boxes are dlib's."""
    from dnnpy.examples import cnn_face_detector
    dlib = needs_dlib()
    model = dlib_model_or_skip(models.FACE_DETECTOR_MODEL)        # the script finds it in the package
    name = sorted(images)[2]
    photo = save_png(images[name], tmp_path / "photo.png")
    r = cnn_face_detector.main([str(photo), "--out", str(tmp_path)])
    want = dlib.cnn_face_detection_model_v1(model)(images[name], 1)
    got = r[str(photo)]
    assert [(d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()) for d in got] == \
        [(d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()) for d in want]
    assert f"Number of faces detected: {len(want)}" in capsys.readouterr().out
    assert (tmp_path / "photo_faces.png").is_file()
