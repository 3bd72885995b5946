"""A linear classifier on fixed feature vectors, in place of dlib's
``auto_train_multiclass_svm_linear_classifier`` (dlib/svm/auto.h), e.g. a linear probe on the
frozen features of a self-supervised net.

dlib's function trains a one-vs-all linear SVM and picks its ``C`` by cross-validation within
a time budget. This one trains a ridge (regularised least-squares) classifier: one-vs-all
targets +1/-1, an unpenalised bias, and the regularisation ``lambda`` picked from a grid by
**exact** leave-one-out accuracy, all from one SVD of the (centred, optionally standardised)
feature matrix. Why ridge and not an SVM or a logistic model trained by SGD:

- closed form, in float64: no learning rate, no iteration count, no time budget, the same
  answer on every run and machine, and the whole ``lambda`` search costs one SVD;
- the leave-one-out residuals of ridge regression are exact in closed form (the residual
  divided by ``1 - h_ii``, ``h_ii`` the hat matrix's diagonal), so the choice of ``lambda`` is
  a real cross-validation, as dlib's auto trainer does for ``C``;
- on good features a linear SVM, a logistic model and a ridge classifier reach about the same
  accuracy (all three are linear; they differ in how they weigh points far from the boundary).

The result is a :class:`multiclass_linear_decision_function` (dlib's name): ``df(x)`` gives the
label of one feature vector, or of each row of a matrix.
"""

from __future__ import annotations

import numpy as np

__all__ = ["multiclass_linear_decision_function", "auto_train_multiclass_linear_classifier"]

#: the default lambda grid, relative to the mean squared singular value of the features
DEFAULT_LAMBDAS = tuple(10.0 ** k for k in range(-6, 3))


class multiclass_linear_decision_function:
    """dlib's ``multiclass_linear_decision_function``: ``labels[argmax(weights @ x + b)]``.

    ``weights`` is ``(K, D)`` float64, ``b`` ``(K,)``, ``labels`` the ``K`` class labels (in the
    order of the rows). Calling it on one vector ``(D,)`` gives one label; on a matrix ``(N, D)``
    an array of ``N`` labels. ``multiclass_linear_decision_function()`` is an empty one to
    read a file into (``dnnpy.deserialize("df.dat", df)``; ``label_type=str`` for string
    labels, as dlib's ``result_type``).

    ``dnnpy.serialize(df, "df.dat")`` writes dlib's bytes for
    ``multiclass_linear_decision_function<linear_kernel<...>, label_type>``: the weights
    matrix, the offsets and the labels (dlib's offsets are subtracted, ``w.x - b``, so the file
    holds ``-b``)."""

    def __init__(self, weights=None, b=None, labels=None, label_type=int):
        if weights is None and b is None and labels is None:
            weights, b, labels = np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=_label_dtype(label_type))
        self.weights = np.asarray(weights, np.float64)
        self.b = np.asarray(b, np.float64)
        self.labels = np.asarray(labels)
        if (self.weights.ndim != 2 or self.b.shape != (self.weights.shape[0],)
                or self.labels.shape != (self.weights.shape[0],)):
            raise ValueError(f"multiclass_linear_decision_function: weights (K, D), b (K,) and "
                             f"labels (K,) expected, got {self.weights.shape}, {self.b.shape}, "
                             f"{self.labels.shape}")

    def number_of_classes(self) -> int:
        return len(self.labels)

    def _features(self, x, op):
        x = np.asarray(x, np.float64)
        if x.ndim not in (1, 2) or x.shape[-1] != self.weights.shape[1]:
            raise ValueError(f"multiclass_linear_decision_function.{op}: expected a feature "
                             f"vector ({self.weights.shape[1]},) or a matrix (N, "
                             f"{self.weights.shape[1]}), got shape {x.shape}")
        return x

    def decision_values(self, x) -> np.ndarray:
        """The K scores ``weights @ x + b`` (``(K,)`` for one vector, ``(N, K)`` for a matrix)."""
        return self._features(x, "decision_values") @ self.weights.T + self.b

    def __call__(self, x):
        scores = self.decision_values(x)
        return self.labels[np.argmax(scores, axis=-1)]

    def serialize(self, w):
        """dlib's encoding: weights (``-nr, -nc``, then the values row by row), the offsets
        ``-b`` as a ``(K, 1)`` matrix, then the labels as a ``std::vector``."""
        for m in (self.weights, -self.b.reshape(-1, 1)):
            w.int(-m.shape[0])
            w.int(-m.shape[1])
            for v in m.reshape(-1):
                w.float64(float(v))
        w.uint(len(self.labels))
        for label in self.labels.tolist():
            if isinstance(label, str):
                w.string(label)
            else:
                w.int(int(label))

    def deserialize(self, r):
        """Read dlib's encoding (see ``serialize``); the labels are read as this object's
        label kind (integers unless its labels are strings)."""
        weights = _read_matrix(r, "multiclass_linear_decision_function weights")
        b = _read_matrix(r, "multiclass_linear_decision_function b")
        as_text = self.labels.dtype.kind in "US"
        count = r.uint("the number of labels")
        labels = [r.string("a label") if as_text else r.int("a label") for _ in range(count)]
        if b.shape != (weights.shape[0], 1) or count != weights.shape[0]:
            raise r.error(f"multiclass_linear_decision_function: weights {weights.shape}, b {b.shape} "
                          f"and {count} labels do not agree")
        self.__init__(weights, -b.reshape(-1), np.asarray(labels, dtype=self.labels.dtype if not as_text else str))

    def save(self, path):
        """Write ``weights``, ``b`` and ``labels`` to an ``.npz`` file (numpy's format; for
        dlib's, ``dnnpy.serialize(df, "df.dat")``)."""
        np.savez(path, weights=self.weights, b=self.b, labels=self.labels)

    @classmethod
    def load(cls, path):
        with np.load(path) as f:
            return cls(f["weights"], f["b"], f["labels"])

    def __repr__(self):
        return (f"multiclass_linear_decision_function({self.weights.shape[0]} classes, "
                f"{self.weights.shape[1]} features)")


def _label_dtype(label_type):
    return np.dtype(str) if label_type is str else np.dtype(np.int64)


def _read_matrix(r, what):
    nr, nc = r.int(f"{what}'s rows"), r.int(f"{what}'s columns")
    nr, nc = (-nr, -nc) if nr < 0 or nc < 0 else (nr, nc)
    if nr < 0 or nc < 0 or nr * nc > r.remaining():      # each value takes at least a byte
        raise r.error(f"{what}: a {nr} x {nc} matrix does not fit in the {r.remaining()} bytes left")
    return np.array([r.float64(f"{what}'s values") for _ in range(nr * nc)], np.float64).reshape(nr, nc)


def auto_train_multiclass_linear_classifier(samples, labels, lambdas=None, normalize=True,
                                            verbose=False):
    """Train a linear classifier on ``samples`` (``(N, D)`` or a list of ``D``-vectors) with
    ``labels`` (``N`` hashable, sortable labels, at least two distinct), choosing the ridge
    ``lambda`` by exact leave-one-out accuracy (ties: the larger lambda). Stands in for dlib's
    ``auto_train_multiclass_svm_linear_classifier`` (see the module docstring for why).

    ``lambdas``: the candidates, relative to the mean squared singular value of the centred
    features (default ``1e-6 .. 1e2``); ``normalize``: standardise each feature to unit
    variance first (folded into the returned weights, so ``df`` takes raw features).
    Returns a :class:`multiclass_linear_decision_function` with ``.lambda_`` (the absolute
    lambda chosen) and ``.loo_accuracy`` (its leave-one-out accuracy) set.
    """
    x = np.asarray(samples, np.float64)
    if x.ndim == 4 and x.shape[2:] == (1, 1):        # a net's (N, D, 1, 1) output
        x = x.reshape(x.shape[:2])
    y = np.asarray(labels)
    if x.ndim != 2 or len(x) != len(y) or y.ndim != 1:
        raise ValueError(f"auto_train_multiclass_linear_classifier: samples (N, D) and labels (N,) "
                         f"expected, got shapes {x.shape} and {y.shape}")
    if not np.all(np.isfinite(x)):
        bad = int(np.argmax(~np.all(np.isfinite(x), axis=1)))
        raise ValueError(f"auto_train_multiclass_linear_classifier: sample {bad} holds a "
                         f"non-finite value")
    classes, y_index = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"auto_train_multiclass_linear_classifier: need at least two classes, "
                         f"the labels hold {len(classes)}")
    n = len(x)
    mean = x.mean(axis=0)
    scale = x.std(axis=0) if normalize else np.ones(x.shape[1])
    scale[scale == 0] = 1.0                      # a constant feature: weight 0 whatever its scale
    xs = (x - mean) / scale
    targets = -np.ones((n, len(classes)))
    targets[np.arange(n), y_index] = 1.0
    t_mean = targets.mean(axis=0)
    tc = targets - t_mean                        # the bias absorbs the means (unpenalised)

    u, s, vt = np.linalg.svd(xs, full_matrices=False)
    s2 = s * s
    ut_t = u.T @ tc
    ref = float(s2.mean()) if s2.size and s2.mean() > 0 else 1.0
    best = None
    for rel in sorted(DEFAULT_LAMBDAS if lambdas is None else lambdas):
        lam = float(rel) * ref
        if not lam > 0:
            raise ValueError(f"auto_train_multiclass_linear_classifier: lambdas must be > 0, "
                             f"got {rel!r}")
        shrink = s2 / (s2 + lam)
        fitted = u @ (shrink[:, None] * ut_t) + t_mean
        hat = (u * u) @ shrink + 1.0 / n          # diagonal of the hat matrix (with the bias)
        loo = targets - (targets - fitted) / (1.0 - hat)[:, None]
        acc = float(np.mean(np.argmax(loo, axis=1) == y_index))
        if verbose:
            print(f"lambda {lam:.4g}: leave-one-out accuracy {acc:.4f}")
        if best is None or acc >= best[0]:
            best = (acc, lam)
    acc, lam = best
    w = vt.T @ ((s / (s2 + lam))[:, None] * ut_t)   # (D, K) on the standardised features
    weights = (w / scale[:, None]).T
    b = t_mean - weights @ mean
    df = multiclass_linear_decision_function(weights, b, classes)
    df.lambda_, df.loo_accuracy = lam, acc
    return df
