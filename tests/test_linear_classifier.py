"""dnnpy.auto_train_multiclass_linear_classifier (T16): ridge one-vs-all, lambda by exact LOO."""

import numpy as np
import pytest

from dnnpy.data.linear_classifier import (auto_train_multiclass_linear_classifier,
                                     multiclass_linear_decision_function)


def _blobs(n_per_class=20, dims=5, classes=3, spread=1.0, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (classes, dims))
    x = np.concatenate([c + spread * rng.normal(size=(n_per_class, dims)) for c in centres])
    return x, np.repeat(np.arange(classes), n_per_class)


def _ridge_scores(x, t, lam, x_eval):
    """Plain ridge with an unpenalised bias (centre, solve, predict), float64."""
    m, tm = x.mean(0), t.mean(0)
    xc = x - m
    w = np.linalg.solve(xc.T @ xc + lam * np.eye(x.shape[1]), xc.T @ (t - tm))
    return (x_eval - m) @ w + tm


def test_leave_one_out_accuracy_is_exact():
    # the closed-form LOO accuracy equals refitting N times without each sample (float64;
    # noisy overlapping classes, so LOO errors exist and a wrong formula would show)
    x, y = _blobs(n_per_class=8, dims=4, spread=4.0, seed=1)
    rel = 1e-1
    df = auto_train_multiclass_linear_classifier(x, y, lambdas=[rel], normalize=False)
    t = -np.ones((len(y), 3))
    t[np.arange(len(y)), y] = 1
    right = 0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        right += int(np.argmax(_ridge_scores(x[keep], t[keep], df.lambda_, x[i:i + 1])) == y[i])
    assert 0.3 < df.loo_accuracy < 1.0
    assert df.loo_accuracy == pytest.approx(right / len(y), abs=1e-12)
    # the lambda is relative to the mean squared singular value of the centred features
    s = np.linalg.svd(x - x.mean(0), compute_uv=False)
    assert df.lambda_ == pytest.approx(rel * np.mean(s ** 2))
    # and the weights are plain ridge's
    np.testing.assert_allclose(df.decision_values(x), _ridge_scores(x, t, df.lambda_, x),
                               rtol=1e-9, atol=1e-9)


def test_separable_classes_string_labels_and_normalisation(tmp_path):
    x, y = _blobs(spread=0.3)
    x[:, 1] *= 1e4                       # a feature on another scale: normalize copes
    names = np.array(["cat", "dog", "emu"])[y]
    df = auto_train_multiclass_linear_classifier(x, names)
    assert df.loo_accuracy == 1.0 and df.number_of_classes() == 3
    assert list(df(x)) == list(names)
    assert df(x[5]) == names[5]          # one vector -> one label
    df.save(tmp_path / "df.npz")
    back = multiclass_linear_decision_function.load(tmp_path / "df.npz")
    assert list(back(x)) == list(names)
    # a net's (N, D, 1, 1) output is accepted as (N, D)
    df4 = auto_train_multiclass_linear_classifier(x[:, :, None, None], y)
    np.testing.assert_allclose(df4.weights, df.weights)


def test_bad_input_is_named():
    x, y = _blobs()
    with pytest.raises(ValueError, match=r"samples \(N, D\) and labels \(N,\)"):
        auto_train_multiclass_linear_classifier(x, y[:-1])
    with pytest.raises(ValueError, match="at least two classes"):
        auto_train_multiclass_linear_classifier(x, np.zeros(len(x)))
    x[3, 2] = np.nan
    with pytest.raises(ValueError, match="sample 3 holds a non-finite"):
        auto_train_multiclass_linear_classifier(x, y)
    df = auto_train_multiclass_linear_classifier(*_blobs())
    with pytest.raises(ValueError, match=r"matrix \(N, 5\), got shape \(2, 4\)"):
        df(np.zeros((2, 4)))
