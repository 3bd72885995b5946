"""``dnnpy.serialize(df, "df.dat")`` of a ``multiclass_linear_decision_function`` is dlib's file:
dlib's own ``deserialize(file) >> df`` reads what dnnpy writes and predicts the same labels and
scores, and dnnpy reads what dlib writes (dlib's example saves its linear probe so:
dnn_self_supervised_learning_ex). Opt-in with the parity suite (``-m dlib_cpp``): the oracle,
``linear_classifier.cpp``, is built against the compiled dlib 20.0.1 (``build.build_program``).

Scores: dlib's ``w.x - b`` in double against dnnpy's ``weights @ x + b`` with the negated
offsets it writes, both float64 over 4 features: equal to a few ulps (bound 1e-12)."""

import subprocess

import numpy as np
import pytest

import dnnpy

pytestmark = pytest.mark.dlib_cpp


def _dlib_predict(program, path, x):
    text = "\n".join(" ".join(repr(float(v)) for v in row) for row in x) + "\n"
    out = subprocess.run([program, "read", str(path)], input=text, capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    return np.array(out[0::2], np.int64), np.array(out[1::2], np.float64)


def test_dlib_reads_dnnpys_file(linear_classifier_program, tmp_path):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(c, 1, (30, 4)) for c in (0, 2, 4)])
    y = [3] * 30 + [11] * 30 + [7] * 30
    df = dnnpy.auto_train_multiclass_linear_classifier(x, y)
    dnnpy.serialize(df, tmp_path / "df.dat")
    labels, scores = _dlib_predict(linear_classifier_program, tmp_path / "df.dat", x)
    np.testing.assert_array_equal(labels, df(x))
    np.testing.assert_allclose(scores, df.decision_values(x).max(axis=1), rtol=0, atol=1e-12)


def test_dnnpy_reads_dlibs_file(linear_classifier_program, tmp_path):
    subprocess.run([linear_classifier_program, "write", str(tmp_path / "dlib.dat")], check=True, timeout=60)
    df = dnnpy.deserialize(tmp_path / "dlib.dat", dnnpy.multiclass_linear_decision_function())
    assert list(df.labels) == [0, 5, 9] and df.weights.shape == (3, 4)
    x = np.random.default_rng(1).normal(0, 3, (50, 4))
    labels, scores = _dlib_predict(linear_classifier_program, tmp_path / "dlib.dat", x)
    np.testing.assert_array_equal(df(x), labels)
    np.testing.assert_allclose(df.decision_values(x).max(axis=1), scores, rtol=0, atol=1e-12)
    assert dnnpy.to_bytes(df, "dlib") == (tmp_path / "dlib.dat").read_bytes()   # written back as dlib wrote it
