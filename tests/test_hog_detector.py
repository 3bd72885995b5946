"""dnnpy's HOG detectors (``get_frontal_face_detector``, ``fhog_object_detector``,
``simple_object_detector``) against dlib-bin's on dlib's photos: the same boxes and filter
indices, scores within 1e-4 (float32 window sums in another order: measured 4e-6), and
dlib's bytes written back. Tests that need dlib-bin skip without it (CI installs it); the
photos are ``../shared/testdata/faces`` (``DNNPY_FACES_DIR``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dnnpy
from dnnpy import SerializationError, fhog_object_detector, get_frontal_face_detector, simple_object_detector
from dnnpy.object_detector import FRONTAL_FACE_DETECTOR_PATH
from helpers import FACES_DIR, box_tuples, face_photos, needs_compiled_kernels, needs_dlib


def _same_run(ours, theirs):
    """Two ``run`` results: equal boxes and indices, scores within 1e-4."""
    assert box_tuples(ours[0]) == box_tuples(theirs[0])
    assert list(ours[2]) == list(theirs[2])
    assert len(ours[1]) == len(theirs[1])
    assert all(abs(a - b) <= 1e-4 for a, b in zip(ours[1], theirs[1]))


@pytest.fixture(scope="module")
def frontal():
    return get_frontal_face_detector()


def test_frontal_face_detector_is_dlibs(frontal):
    """The shipped file reads as dlib's five-filter detector and writes back byte for byte."""
    with open(FRONTAL_FACE_DETECTOR_PATH, "rb") as f:
        data = f.read()
    assert frontal.to_bytes() == data
    assert frontal.num_detectors == 5 and frontal.fhog_window_size() == (10, 10)
    assert (frontal.detection_window_width, frontal.detection_window_height) == (80, 80)
    assert frontal.num_dimensions() == 3100 and len(frontal.weights[0]) == 3101
    assert [f.shape for f in frontal.filter_bank()] == [(10, 10, 31)] * 5


def test_frontal_face_detector_finds_the_faces(frontal):
    """Regression values (dlib-bin gives these boxes: test below) for three photos."""
    want = {
        "2007_007763.jpg": [(93, 194, 129, 230), (193, 90, 229, 126), (293, 86, 329, 122),
                            (157, 114, 193, 150), (177, 214, 213, 250), (381, 89, 424, 132),
                            (309, 233, 352, 276)],
        "2008_001009.jpg": [(126, 206, 215, 295), (149, 87, 211, 149)],
        "2008_001322.jpg": [(232, 218, 294, 281), (104, 163, 179, 237), (344, 156, 434, 245)],
    }
    by_name = {os.path.basename(p): p for p in face_photos()}
    for name, boxes in want.items():
        img = dnnpy.load_rgb_image(by_name[name])
        assert box_tuples(frontal(img, 1)) == boxes
    grey = np.asarray(dnnpy.load_rgb_image(by_name["2008_001009.jpg"])).mean(axis=2).astype(np.uint8)
    assert len(frontal(grey, 1)) >= 1                       # 8-bit grey images too
    assert frontal(np.zeros((20, 30, 3), np.uint8)) == []   # smaller than the window: none


def test_threads_and_scan_bands_change_nothing(frontal, monkeypatch):
    """The same boxes, scores and filters on one thread, on two, and with the scan cut into
    bands of one window row (what a huge image gets)."""
    import dnnpy.object_detector as od
    by_name = {os.path.basename(p): p for p in face_photos()}
    img = dnnpy.load_rgb_image(by_name["2008_001322.jpg"])
    before = dnnpy.get_num_threads()
    try:
        dnnpy.set_num_threads(1)
        one = frontal.run(img, 1, -0.5)
        dnnpy.set_num_threads(2)
        two = frontal.run(img, 1, -0.5)
        monkeypatch.setattr(od, "_SCAN_VALUES", 1)
        with dnnpy.jit.force_numpy():           # (the bands are the numpy scan's)
            banded = frontal.run(img, 1, -0.5)
    finally:
        dnnpy.set_num_threads(before)
    assert len(one[0]) >= 3
    assert box_tuples(one[0]) == box_tuples(two[0]) == box_tuples(banded[0])
    assert list(one[2]) == list(two[2]) == list(banded[2])
    np.testing.assert_allclose(one[1], two[1], rtol=0, atol=1e-5)   # float32 sums in either order
    np.testing.assert_allclose(one[1], banded[1], rtol=0, atol=1e-5)


def test_detections_from_several_threads_at_once(frontal):
    """Callers on three threads at once share dnnpy's workers: each gets the boxes it gets
    alone (no hang, no mixed-up buffers)."""
    import threading
    images = [dnnpy.load_rgb_image(p) for p in face_photos()[:3]]
    alone = [box_tuples(frontal(img, 1)) for img in images]
    got, errors = [None] * 3, []

    def detect(k):
        try:
            for _ in range(2):
                got[k] = box_tuples(frontal(images[k], 1))
        except BaseException as e:      # noqa: B036 (reported below)
            errors.append(e)

    callers = [threading.Thread(target=detect, args=(k,), daemon=True) for k in range(3)]
    for c in callers:
        c.start()
    for c in callers:
        c.join(120)
    assert not any(c.is_alive() for c in callers), "a detection did not return"
    assert not errors and got == alone


def test_frontal_face_detector_equals_dlib(frontal, kernels):
    dlib = needs_dlib()
    theirs = dlib.get_frontal_face_detector()
    photos = face_photos()
    for i, path in enumerate(photos):
        img = dlib.load_rgb_image(path)
        _same_run(frontal.run(img, 0, -0.5), theirs.run(img, 0, -0.5))
        if i < 2:
            _same_run(frontal.run(img, 1, -0.5), theirs.run(img, 1, -0.5))
            assert box_tuples(frontal(img, 1)) == box_tuples(theirs(img, 1))
    img = dlib.load_rgb_image(photos[0])[:, ::-1]            # a non-contiguous view
    _same_run(frontal.run(img, 0, -0.3), theirs.run(np.ascontiguousarray(img), 0, -0.3))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A detector dlib-bin trains on dlib's training.xml (about 5 s on 2 cores)."""
    dlib = needs_dlib()
    xml = os.path.join(FACES_DIR, "training.xml")
    if not os.path.isfile(xml):
        pytest.skip(f"no {xml}")
    options = dlib.simple_object_detector_training_options()
    options.add_left_right_image_flips = True
    options.C = 5
    options.num_threads = 2
    path = str(tmp_path_factory.mktemp("svm") / "detector.svm")
    dlib.train_simple_object_detector(xml, path, options)
    return path


def test_trained_detector_equals_dlib(trained, frontal):
    dlib = needs_dlib()
    ours, theirs = simple_object_detector(trained), dlib.simple_object_detector(trained)
    with open(trained, "rb") as f:
        assert ours.to_bytes() == f.read()                  # the upsampling trailer included
    assert ours.upsampling_amount == theirs.upsampling_amount
    plain, plain_d = fhog_object_detector(trained), dlib.fhog_object_detector(trained)
    frontal_d = dlib.get_frontal_face_detector()
    for path in face_photos()[:3]:
        img = dlib.load_rgb_image(path)
        assert box_tuples(ours(img)) == box_tuples(theirs(img))     # upsampled as trained
        _same_run(plain.run(img, 1, -1.0), plain_d.run(img, 1, -1.0))
        _same_run(fhog_object_detector.run_multiple([frontal, plain], img, 1, -0.5),
                  dlib.fhog_object_detector.run_multiple([frontal_d, plain_d], img, 1, -0.5))
    merged = simple_object_detector([ours, ours])
    merged_d = dlib.simple_object_detector([theirs, theirs])
    img = dlib.load_rgb_image(face_photos()[0])
    assert merged.num_detectors == 2 and box_tuples(merged(img)) == box_tuples(merged_d(img))


def test_bad_files_and_images_say_what_is_wrong(tmp_path, frontal):
    data = frontal.to_bytes()
    for cut in (1, 5, 40, 100, len(data) // 2, len(data) - 3):
        path = tmp_path / f"cut{cut}.svm"
        path.write_bytes(data[:cut])
        with pytest.raises(SerializationError, match=rf"cut{cut}\.svm.*byte offset"):
            fhog_object_detector(path)
    (tmp_path / "extra.svm").write_bytes(data + b"\x01\x07")
    with pytest.raises(SerializationError, match="version 1, found 7"):
        fhog_object_detector(tmp_path / "extra.svm")
    (tmp_path / "sp.dat").write_bytes(b"\x01\x01\x81\x0a\x81\x01" + data[6:200])  # a shape predictor
    with pytest.raises(SerializationError, match="sp.dat.*not an fHOG detector"):
        fhog_object_detector(tmp_path / "sp.dat")
    (tmp_path / "empty.svm").write_bytes(b"")
    with pytest.raises(SerializationError, match="empty"):
        fhog_object_detector(tmp_path / "empty.svm")
    img = np.zeros((100, 100, 3), np.uint8)
    with pytest.raises(ValueError, match="RGBA"):
        frontal(np.zeros((100, 100, 4), np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        frontal(img.astype(np.float32))
    with pytest.raises(ValueError, match="upsample_num_times"):
        frontal(img, -1)
    with pytest.raises(ValueError, match="differs from detector 0"):
        other = fhog_object_detector(data)
        other.window_width = 64
        simple_object_detector([frontal, other])


def test_compiled_separable_scan_equals_the_matrix_products(frontal):
    """The compiled scan (dnnpy/kernels/hog.py: each filter's separable parts, a row filter
    then a column filter) against the numpy one (the same parts summed into whole filters,
    as matrix products), on random features with every window kept: the same windows and
    boxes, scores within 1e-4 (float32 sums of 3100 products in other orders; scores are
    of order 1; measured about 2e-6)."""
    from dnnpy.object_detector import _Scan
    jit = needs_compiled_kernels()
    rows, cols = frontal.fhog_window_size()
    scan = _Scan(frontal.filter_bank(), frontal.thresholds(), -1e9, (rows, cols), 8, rows, cols,
                 frontal._parts())
    assert scan.terms is not None                  # dlib runs the frontal filters separably
    f = np.random.default_rng(2).uniform(0, 0.4, (27, 33, 31)).astype(np.float32)
    got = scan(3, f)
    with jit.force_numpy():
        want = scan(3, f)
    assert len(got) == 5
    for (s1, b1), (s2, b2) in zip(got, want):
        assert len(s1) == 18 * 24 and np.array_equal(b1, b2)
        np.testing.assert_allclose(s1, s2, rtol=0, atol=1e-4)
