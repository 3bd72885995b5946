"""``dnnpy.face_recognition`` (the face_recognition package's API) and its command lines.

The package itself cannot be the oracle here (it needs dlib compiled, and its model package
imports ``pkg_resources``); its functions are a few lines over dlib's Python API, so the
oracle is those lines run on dlib-bin (skipped without it). Both sides read the photos with
dnnpy (JPEG decoders differ by a grey level here and there)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import dnnpy
from dnnpy import cli, face_recognition as fr, models
from helpers import face_photos, needs_dlib


def _models():
    try:
        for name in ("shape_predictor_68_face_landmarks.dat", "shape_predictor_5_face_landmarks.dat",
                     models.FACE_RECOGNITION_MODEL, models.FACE_DETECTOR_MODEL):
            models.dlib_model_path(name)
    except FileNotFoundError as e:
        pytest.skip(f"dlib model file missing ({e})")


def _css(r, shape):
    return max(r.top(), 0), min(r.right(), shape[1]), min(r.bottom(), shape[0]), max(r.left(), 0)


def test_load_image_file_and_distances(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    path = dnnpy.save_image(rgb, tmp_path / "a.png")
    assert np.array_equal(fr.load_image_file(path), rgb)
    with open(path, "rb") as f:
        grey = fr.load_image_file(f, "L")
    assert grey.shape == (20, 30) and grey.dtype == np.uint8
    with pytest.raises(ValueError, match="mode"):
        fr.load_image_file(path, "RGBA")
    known = np.array([[0.0, 0.0], [0.3, 0.4], [3.0, 4.0]])
    assert np.allclose(fr.face_distance(known, [0.0, 0.0]), [0, 0.5, 5])
    assert fr.compare_faces(known, np.zeros(2)) == [True, True, False]
    assert fr.compare_faces(known, np.zeros(2), tolerance=0.4) == [True, False, False]
    assert fr.face_distance([], [0.0]).shape == (0,)


def test_no_faces_and_bad_models():
    blank = np.zeros((100, 100, 3), np.uint8)
    assert fr.face_locations(blank) == []
    assert fr.face_landmarks(blank) == [] and fr.face_encodings(blank) == []
    with pytest.raises(ValueError, match="model must be one of"):
        fr.face_locations(blank, model="dnn")
    with pytest.raises(ValueError, match="model must be one of"):
        fr.face_landmarks(blank, model="medium")


def test_face_recognition_api_equalsneeds_dlib():
    _models()
    dlib = needs_dlib()
    detector = dlib.get_frontal_face_detector()
    sp68 = dlib.shape_predictor(models.dlib_model_path("shape_predictor_68_face_landmarks.dat"))
    sp5 = dlib.shape_predictor(models.dlib_model_path("shape_predictor_5_face_landmarks.dat"))
    cnn = dlib.cnn_face_detection_model_v1(models.dlib_model_path(models.FACE_DETECTOR_MODEL))
    encoder = dlib.face_recognition_model_v1(models.dlib_model_path(models.FACE_RECOGNITION_MODEL))
    for path in face_photos()[1:3]:
        img = fr.load_image_file(path)
        rects = list(detector(img, 1))
        locations = fr.face_locations(img)
        assert locations == [_css(r, img.shape) for r in rects]
        marks = fr.face_landmarks(img, locations)
        want = [[(p.x, p.y) for p in sp68(img, r).parts()] for r in rects]
        assert [m["chin"] + m["left_eyebrow"] + m["right_eyebrow"] + m["nose_bridge"] + m["nose_tip"]
                + m["left_eye"] + m["right_eye"] + m["top_lip"][:7] for m in marks] == [w[:55] for w in want]
        assert [m["bottom_lip"][6:] for m in marks] == [[w[48], w[60], w[67], w[66], w[65], w[64]] for w in want]
        small = fr.face_landmarks(img, model="small")
        assert [m["right_eye"] + m["left_eye"] + m["nose_tip"] for m in small] == \
            [[(p.x, p.y) for p in sp5(img, r).parts()] for r in rects]
        got = fr.face_encodings(img, locations)
        assert len(got) == len(rects) >= 1
        for g, r in zip(got, rects):
            assert np.abs(g - np.array(encoder.compute_face_descriptor(img, sp5(img, r), 1))).max() <= 1e-5
        large = fr.face_encodings(img, model="large")
        for g, r in zip(large, rects):
            assert np.abs(g - np.array(encoder.compute_face_descriptor(img, sp68(img, r), 1))).max() <= 1e-5
    img = fr.load_image_file(face_photos()[2])
    want = [_css(d.rect, img.shape) for d in cnn(img, 0)]
    assert fr.face_locations(img, 0, model="cnn") == want
    assert fr.batch_face_locations([img, img], 0) == [want, want]


def _known_and_unknown(tmp_path):
    """Two known people cut from one photo (its first two faces), and a folder with that
    photo, another one and an unreadable file."""
    photos = face_photos()
    img = fr.load_image_file(photos[2])
    known, unknown = tmp_path / "known", tmp_path / "unknown"
    known.mkdir(), unknown.mkdir()
    for i, (t, r, b, l) in enumerate(fr.face_locations(img)[:2]):
        dnnpy.save_image(img[max(t - 40, 0):b + 40, max(l - 40, 0):r + 40], known / f"person{i}.png")
    shutil.copy(photos[2], unknown / "group.jpg")
    shutil.copy(photos[1], unknown / "other.jpg")
    (unknown / "broken.jpg").write_bytes(b"not an image")
    return known, unknown


def test_face_recognition_command(tmp_path, capsys):
    _models()
    known, unknown = _known_and_unknown(tmp_path)
    assert cli.main(["face-recognition", str(known), str(unknown)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    group = str(unknown / "group.jpg")
    assert f"{group},person0" in lines and f"{group},person1" in lines
    assert all(line.startswith(str(unknown)) for line in lines)
    assert "broken.jpg" in err and "Skipping" in err
    assert cli.main(["face-recognition", str(known), group, "--show-distance", "true",
                     "--tolerance", "0.3"]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()]
    assert {r[1] for r in rows} >= {"person0", "person1"}
    assert all(float(r[2]) <= 0.3 for r in rows if r[1].startswith("person"))
    blank = dnnpy.save_image(np.zeros((50, 50, 3), np.uint8), tmp_path / "blank.png")
    assert cli.main(["face-recognition", str(known), blank]) == 0
    assert capsys.readouterr().out.strip() == f"{blank},no_persons_found"


def test_face_detection_command(tmp_path, capfd):
    """(``capfd``: the whole file descriptor is read.)"""
    photos = face_photos()
    folder = tmp_path / "photos"
    folder.mkdir()
    for p in photos[1:3]:
        shutil.copy(p, folder)
    (folder / "notes.txt").write_text("skipped: not an image name")
    assert cli.main(["face-detection", str(folder)]) == 0
    lines = capfd.readouterr().out.splitlines()
    want = []
    for p in sorted(folder.glob("*.jpg")):
        want += [f"{p}," + ",".join(map(str, loc)) for loc in fr.face_locations(fr.load_image_file(p), 0)]
    assert lines == want and len(lines) >= 2
    assert cli.main(["face-detection", str(folder), "--cpus", "2"]) == 0     # two processes
    assert capfd.readouterr().out.splitlines() == want                # printed here, in order
    assert cli.main(["face-detection", str(tmp_path / "missing")]) == 0
    assert "missing" in capfd.readouterr().err
