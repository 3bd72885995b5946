"""dlib's two released models exported to ONNX from their .dat files by the CLI
(``dnnpy export FILE.dat --type ... -o x.onnx``) and run by onnxruntime: the face
recognition ResNet (uint8 150x150 chips, preprocessing in the graph) gives dnnpy's
descriptors; the MMOD face detector (on the pyramid tensor dnnpy builds on the host) gives
dnnpy's score map and, decoded by ``dnnpy.onnx.decode``, dnnpy's detections.

Tolerance as tests/test_onnx.py: 1e-5 of the output's scale (float32 rounding in a different
order); detections: equal rectangles, confidences within 1e-5. The images are generated scenes
(textured: no exactly tied scores). Skipped without onnx, onnxruntime or
face_recognition_models."""

import numpy as np
import pytest

from dnnpy import models
from dnnpy.cli import main
from dnnpy.data import make_scene
from dnnpy.onnx import decode
from helpers import ort_session

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _path(filename):
    try:
        return models.dlib_model_path(filename)
    except FileNotFoundError as e:
        pytest.skip(f"dlib model file missing ({e})")


def _export(tmp_path, dat, net_type, *args):
    """``dnnpy export`` of a dlib file; the model passes onnx's full check. Returns a session."""
    out = tmp_path / "model.onnx"
    assert main(["export", dat, "--type", repr(net_type), "-o", str(out), *args]) == 0
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    return ort_session(out)


def _close(got, want):
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1, np.abs(want).max()))


def test_face_recognition_resnet_descriptors(tmp_path, capsys):
    dat = _path(models.FACE_RECOGNITION_MODEL)
    net = models.load_face_recognition_model(dat)
    chips = np.stack([make_scene(seed, rows=150, cols=150).image for seed in (1, 2)])
    want = np.stack(net(chips))
    # the sized input gives the shape: no --input-shape
    sess = _export(tmp_path, dat, models.face_recognition_resnet_v1(), "--input-mode", "input_layer")
    assert "wrote" in capsys.readouterr().out
    got = sess.run(None, {"input": chips})[0]
    assert got.shape == (2, 128, 1, 1)
    _close(got.reshape(2, 128), want)


def test_mmod_face_detector_detections(tmp_path):
    dat = _path(models.FACE_DETECTOR_MODEL)
    det = models.load_face_detector(dat)
    img = make_scene(7, rows=120, cols=160).image
    x = det.to_tensor([img])                     # the tiled pyramid, built on the host
    k, nr, nc = x.shape[1:]
    threshold = -1.5                             # no faces here: keep the best windows anyway
    want = det(x, adjust_threshold=threshold)
    scores = det.subnet().get_output().numpy()
    sess = _export(tmp_path, dat, models.mmod_face_detector(), "--input-shape", f"{k},{nr},{nc}")
    outputs = sess.run(None, {"input": x.numpy()})
    _close(outputs[0], scores)
    got = decode(det, outputs, x, adjust_threshold=threshold)
    assert len(want[0]) >= 5 and [len(g) for g in got] == [len(w) for w in want]
    for g, w in zip(got[0], want[0]):
        assert g.rect == w.rect
        assert g.detection_confidence == pytest.approx(w.detection_confidence, abs=1e-5)
