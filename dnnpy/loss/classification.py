"""Classification losses on ``(N, k, 1, 1)`` outputs (dlib loss.h): binary hinge and log,
multiclass log (plain and weighted), several softmax classifiers packed along k
(``loss_multimulticlass_log_``) and independent per-channel sigmoids with a focal factor
(``loss_multibinary_log_``).

Every loss: ``compute_loss_value_and_gradient(x, labels, sub)`` returns the mini-batch mean
loss (accumulated in float64) and ASSIGNS its gradient to ``sub.get_gradient_input()``,
computed in the output's dtype with dlib's formulas; ``to_label(x, sub)`` returns one label
per sample. Requires a sample expansion factor of 1.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping

import numpy as np

from ..templates import loss_template
from ._logistic import (assign_gradient, binary_log_terms, check_label_count, check_output_dims,
                        check_subnet, float_labels, int_labels, log1pexp, safe_log, sigmoid,
                        softmax_channels)
from ._serialize import read_count, read_string_vector, write_string_vector
from .base import loss_layer, named_loss
from ..printing import cpp_num

__all__ = ["weighted_label", "loss_binary_hinge_", "loss_binary_hinge", "loss_binary_log_",
           "loss_binary_log", "loss_multiclass_log_", "loss_multiclass_log",
           "loss_multiclass_log_weighted_", "loss_multiclass_log_weighted",
           "classifier_output", "loss_multimulticlass_log_", "loss_multimulticlass_log",
           "loss_multibinary_log_", "loss_multibinary_log"]

_F64 = np.float64


class weighted_label:
    """dlib's ``weighted_label<T>``: a label and the weight of its sample (default 1)."""

    __slots__ = ("label", "weight")

    def __init__(self, label=0, weight=1.0):
        if isinstance(label, bool) or not isinstance(label, numbers.Integral):
            raise TypeError(f"weighted_label: label must be an integer, got {label!r}")
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise TypeError(f"weighted_label: weight must be a number, got {weight!r}")
        self.label = int(label)
        self.weight = float(weight)

    def __eq__(self, other):
        return (isinstance(other, weighted_label) and self.label == other.label
                and self.weight == other.weight)

    def __hash__(self):
        return hash((self.label, self.weight))

    def __repr__(self):
        return f"weighted_label({self.label}, {self.weight!r})"


def _scalar_output(name, x, sub):
    """Output of a loss over ``(N, 1, 1, 1)`` scores, checked."""
    out = check_subnet(name, x, sub)
    check_output_dims(name, out, k=1, nr=1, nc=1)
    return out


def _row_output(name, x, sub):
    """Output of a loss over ``(N, k, 1, 1)`` rows, checked."""
    out = check_subnet(name, x, sub)
    check_output_dims(name, out, nr=1, nc=1)
    return out


# ----------------------------------------------------------------------------------------

class loss_binary_hinge_(named_loss):
    """Hinge loss on one score per sample; labels are +1 or -1.

    Loss ``mean(max(0, 1 - y*out))``; gradient ``-y/N`` where ``1 - y*out > 0``, else 0.
    ``to_label``: the raw score.
    """

    _printed = "loss_binary_hinge"

    def to_label(self, x, sub):
        out = _scalar_output("loss_binary_hinge_", x, sub)
        return [float(v) for v in out.host_read().reshape(-1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_binary_hinge_"
        out = _scalar_output(name, x, sub)
        y = float_labels(name, check_label_count(name, out, labels))
        bad = y[(y != 1) & (y != -1)]
        if bad.size:
            raise ValueError(f"{name}: labels must be +1 or -1, got {bad[0]:g}")
        o = out.host_read().reshape(-1)
        dt = o.dtype.type
        scale = 1.0 / o.size
        temp = dt(1) - y.astype(dt) * o          # float arithmetic, as dlib
        active = temp > 0
        grad = np.where(active, -scale * y, 0.0).astype(dt)
        assign_gradient(sub, grad.reshape(out.shape))
        return float(np.sum(scale * temp[active].astype(_F64)))


loss_binary_hinge = loss_template("loss_binary_hinge", loss_binary_hinge_)


class loss_binary_log_(named_loss):
    """Sigmoid + cross-entropy on one score per sample. A label's sign is the class, its
    magnitude the sample's weight (0 is an error).

    ``y > 0``: loss ``y*log1pexp(-o)``, gradient ``y*(sigmoid(o)-1)/N``;
    ``y < 0``: loss ``-y*(o + log1pexp(-o))``, gradient ``-y*sigmoid(o)/N``.
    ``to_label``: the raw score (> 0 means the +1 class).
    """

    _printed = "loss_binary_log"

    def to_label(self, x, sub):
        out = _scalar_output("loss_binary_log_", x, sub)
        return [float(v) for v in out.host_read().reshape(-1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_binary_log_"
        out = _scalar_output(name, x, sub)
        y = float_labels(name, check_label_count(name, out, labels))
        if (y == 0).any():
            raise ValueError(f"{name}: a label is 0; labels must be nonzero (sign = class, "
                             f"magnitude = weight)")
        o = out.host_read().reshape(-1)
        # dlib's labels are floats: round them to the output's precision
        loss, grad = binary_log_terms(o, y.astype(o.dtype).astype(_F64), 1.0 / o.size)
        assign_gradient(sub, grad.reshape(out.shape))
        return loss

    _onnx_heads = ("probabilities",)

    def _onnx_head(self, g, x, what):
        """probabilities: ``Sigmoid`` of the score (P(label = +1))."""
        return g.node("Sigmoid", [x])


loss_binary_log = loss_template("loss_binary_log", loss_binary_log_)


# ----------------------------------------------------------------------------------------

def _check_class_indices(name, y, k):
    bad = y[(y < 0) | (y >= k)]
    if bad.size:
        raise ValueError(f"{name}: label {int(bad[0])} is out of range for a net with k={k} "
                         f"outputs (labels must be 0..{k - 1})")


def _multiclass_terms(o, y, weight, scale):
    """Softmax over k of ``(N, k)`` rows ``o``, NLL of class ``y`` (dlib's safe_log) times
    ``weight`` per row. Returns (float64 loss, gradient ``weight*scale*(p - onehot)``)."""
    dt = o.dtype.type
    p = softmax_channels(o)
    rows = np.arange(o.shape[0])
    loss = float(np.sum(weight * scale * -safe_log(p[rows, y]).astype(_F64)))
    p[rows, y] -= dt(1)
    grad = (weight[:, None] * scale) * p.astype(_F64)
    return loss, grad.astype(dt)


class loss_multiclass_log_(named_loss):
    """Softmax over the k outputs + negative log-likelihood; labels are class indices
    ``0..k-1``. Loss ``mean(-safe_log(p[y]))``, gradient ``(p - onehot(y))/N``.
    ``to_label``: the index of the largest output (first on ties)."""

    _printed = "loss_multiclass_log"
    _name = "loss_multiclass_log_"

    def to_label(self, x, sub):
        out = _row_output(self._name, x, sub)
        return [int(i) for i in np.argmax(out.host_read().reshape(out.num_samples(), -1), axis=1)]

    def _labels_and_weights(self, out, labels):
        y = int_labels(self._name, check_label_count(self._name, out, labels))
        return y, np.ones(len(y))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        out = _row_output(self._name, x, sub)
        y, w = self._labels_and_weights(out, labels)
        _check_class_indices(self._name, y, out.k())
        o = out.host_read().reshape(out.num_samples(), out.k())
        loss, grad = _multiclass_terms(o, y, w, 1.0 / out.num_samples())
        assign_gradient(sub, grad.reshape(out.shape))
        return loss

    _onnx_heads = ("labels", "probabilities")

    def _onnx_head(self, g, x, what):
        """labels: ``ArgMax(axis=1)`` (the first maximum wins ties, as ``to_label``), int64
        ``(N,)``; probabilities: ``Softmax(axis=1)``."""
        if what == "probabilities":
            return g.node("Softmax", [x], axis=1)
        n = g.shape(x)[0]
        am = g.node("ArgMax", [g.node("Flatten", [x], shape=(n, g.shape(x)[1]), axis=1)], shape=(n,),
                    dtype=np.int64, axis=1, keepdims=0, select_last_index=0)
        return am


loss_multiclass_log = loss_template("loss_multiclass_log", loss_multiclass_log_)


class loss_multiclass_log_weighted_(loss_multiclass_log_):
    """``loss_multiclass_log_`` with a weight per sample: labels are
    ``weighted_label(label, weight)``; each sample's loss and gradient are multiplied by
    its weight."""

    _printed = "loss_multiclass_log_weighted"
    _name = "loss_multiclass_log_weighted_"

    def _labels_and_weights(self, out, labels):
        labels = check_label_count(self._name, out, labels)
        for i, wl in enumerate(labels):
            if not isinstance(wl, weighted_label):
                raise TypeError(f"{self._name}: label {i} must be a weighted_label(label, weight), "
                                f"got {type(wl).__name__}")
        # dlib's weight is a float: round it as dlib stores it
        w = np.array([wl.weight for wl in labels], dtype=np.float32).astype(_F64)
        return np.array([wl.label for wl in labels], dtype=np.int64), w


loss_multiclass_log_weighted = loss_template("loss_multiclass_log_weighted",
                                             loss_multiclass_log_weighted_)


# ----------------------------------------------------------------------------------------

class classifier_output:
    """One classifier's answer from ``loss_multimulticlass_log_.to_label``: the softmax
    probabilities of its labels. ``str(out)`` (and ``out == "label"``) is the most probable
    label (first on ties), as dlib's ``operator std::string``."""

    __slots__ = ("class_probs", "_labels")

    def __init__(self, class_probs, labels):
        self.class_probs = np.asarray(class_probs)
        self._labels = labels

    def num_classes(self) -> int:
        return len(self.class_probs)

    def _index(self, i):
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < self.num_classes():
            raise IndexError(f"classifier_output: class index {i!r} is out of range "
                             f"0..{self.num_classes() - 1}")
        return int(i)

    def probability_of_class(self, i) -> float:
        return float(self.class_probs[self._index(i)])

    def label(self, i) -> str:
        return self._labels[self._index(i)]

    def __str__(self):
        if self.num_classes() == 0:
            raise ValueError("classifier_output: empty output has no label")
        return self._labels[int(np.argmax(self.class_probs))]

    def __eq__(self, other):
        if isinstance(other, str):
            return str(self) == other
        if isinstance(other, classifier_output):
            return self._labels == other._labels and np.array_equal(self.class_probs, other.class_probs)
        return NotImplemented

    def __hash__(self):
        return hash(str(self))

    def __repr__(self):
        return f"classifier_output({str(self)!r}, p={float(np.max(self.class_probs)):g})"


class _frozen_labels(tuple):
    """A labels map as a hashable sorted tuple of ``(name, (label, ...))``: the form a
    ``loss_multimulticlass_log[labels, SUBNET]`` argument takes inside a net type. Its repr
    is a quoted JSON string, so ``net_type_from_string(repr(net_type))`` parses it back
    (a ``'`` inside a label is written as the JSON escape ``\\u0027``)."""

    __slots__ = ()

    def __repr__(self):
        text = json.dumps({k: list(v) for k, v in self}, separators=(",", ":"))
        return "'" + text.replace("'", "\\u0027") + "'"


def _freeze_labels(labels):
    """dict / pairs / the JSON text of a dict -> ``_frozen_labels``."""
    if isinstance(labels, str):
        try:
            labels = json.loads(labels)
        except ValueError:
            raise ValueError(f"loss_multimulticlass_log_: a labels string must be the JSON text of a "
                             f"dict name -> list of labels, got {labels!r}") from None
    obj = loss_multimulticlass_log_(labels)      # validates
    return _frozen_labels((k, tuple(v)) for k, v in obj.possible_labels.items())


class loss_multimulticlass_log_(loss_layer):
    """Several softmax classifiers packed along k: ``labels`` maps each classifier's name to
    its list of (at least two) label strings. Classifiers take consecutive channel ranges
    in sorted name order (dlib's ``std::map``), each label its index in its list; k must be
    the total number of labels.

    Training labels: per sample a dict ``classifier name -> label string`` (other keys are
    ignored, as in dlib). Loss: for each classifier, ``mean(-log(softmax[y]))`` (dlib uses
    plain ``log`` here, not safe_log), summed over classifiers. ``to_label``: per sample a
    dict ``name -> classifier_output``.
    """

    # net_type(labels): dlib's loss_multimulticlass_log_(const std::map<...>& labels)
    constructor_settings = {Mapping: "labels"}

    def template_args(self):
        return {"labels": self.possible_labels}

    def __init__(self, labels=None):
        name = "loss_multimulticlass_log_"
        if labels is None:
            labels = {}
        if not isinstance(labels, Mapping):
            try:
                labels = dict(labels)
            except (TypeError, ValueError):
                raise TypeError(f"{name}: labels must be a dict mapping classifier names to lists "
                                f"of label strings, got {labels!r}") from None
        self.possible_labels = {}
        self.label_idx_lookup = {}
        self.total_num_labels = 0
        for cname in sorted(labels, key=lambda c: (not isinstance(c, str), str(c))):
            vals = labels[cname]
            if not isinstance(cname, str):
                raise TypeError(f"{name}: classifier names must be strings, got {cname!r}")
            if isinstance(vals, str) or not all(isinstance(v, str) for v in vals):
                raise TypeError(f"{name}: the labels of classifier {cname!r} must be a list of "
                                f"strings, got {vals!r}")
            vals = list(vals)
            if len(vals) < 2:
                raise ValueError(f"{name}: each classifier must have at least two possible labels; "
                                 f"{cname!r} has {len(vals)}")
            self.possible_labels[cname] = vals
            # later duplicates win, as dlib's label_idx_lookup[name][label] = i
            self.label_idx_lookup[cname] = {v: i for i, v in enumerate(vals)}
            self.total_num_labels += len(vals)

    def number_of_labels(self) -> int:
        return self.total_num_labels

    def number_of_classifiers(self) -> int:
        return len(self.possible_labels)

    def get_labels(self) -> dict:
        return {c: list(v) for c, v in self.possible_labels.items()}

    def _output(self, x, sub):
        name = "loss_multimulticlass_log_"
        out = _row_output(name, x, sub)
        if self.total_num_labels == 0:
            raise ValueError(f"{name}: give the constructor label data before using the loss")
        if out.k() != self.total_num_labels:
            raise ValueError(f"{name}: the net output {out.shape} must have k == "
                             f"{self.total_num_labels} (the total number of labels)")
        return out.host_read().reshape(out.num_samples(), out.k())

    def _blocks(self):
        off = 0
        for cname, vals in self.possible_labels.items():
            yield cname, vals, slice(off, off + len(vals))
            off += len(vals)

    def to_label(self, x, sub):
        o = self._output(x, sub)
        result = [{} for _ in range(o.shape[0])]
        for cname, vals, cols in self._blocks():
            p = softmax_channels(o[:, cols])
            for i, r in enumerate(result):
                r[cname] = classifier_output(p[i].copy(), vals)
        return result

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_multimulticlass_log_"
        o = self._output(x, sub)
        labels = check_label_count(name, sub.get_output(), labels)
        for i, t in enumerate(labels):
            if not isinstance(t, Mapping):
                raise TypeError(f"{name}: label {i} must be a dict classifier name -> label, "
                                f"got {type(t).__name__}")
        dt = o.dtype.type
        scale = 1.0 / o.shape[0]
        rows = np.arange(o.shape[0])
        grad = np.empty(o.shape, dtype=dt)
        loss = 0.0
        for cname, vals, cols in self._blocks():
            lookup = self.label_idx_lookup[cname]
            y = np.empty(o.shape[0], dtype=np.int64)
            for i, t in enumerate(labels):
                if cname not in t:
                    raise ValueError(f"{name}: label {i} has no entry for classifier {cname!r}")
                if t[cname] not in lookup:
                    raise ValueError(f"{name}: label {i} gives classifier {cname!r} the unknown label "
                                     f"{t[cname]!r}; known: {vals}")
                y[i] = lookup[t[cname]]
            p = softmax_channels(o[:, cols])
            with np.errstate(divide="ignore"):
                loss += float(np.sum(scale * -np.log(p[rows, y]).astype(np.float64)))
            p[rows, y] -= dt(1)
            grad[:, cols] = (scale * p.astype(np.float64)).astype(dt)
        assign_gradient(sub, grad.reshape(sub.get_output().shape))
        return loss

    def serialize(self, w):
        # std::map<std::string, std::vector<std::string>>: count, then (name, labels) pairs in
        # the map's (byte-wise sorted) order
        w.string("loss_multimulticlass_log_")
        w.uint(len(self.possible_labels))
        for cname in sorted(self.possible_labels, key=lambda c: c.encode("utf-8")):
            w.string(cname)
            write_string_vector(w, self.possible_labels[cname])

    def deserialize(self, r):
        """The labels are restored from the file (dlib: ``item = loss_multimulticlass_log_(info)``)."""
        r.expect_string("loss_multimulticlass_log_")
        start = r.pos
        info = {}
        for i in range(read_count(r, "loss_multimulticlass_log_'s labels map", 2)):
            cname = r.string(f"loss_multimulticlass_log_'s classifier name {i}")
            info[cname] = read_string_vector(r, f"the labels of classifier {cname!r}")
        try:
            fresh = loss_multimulticlass_log_(info)
        except (TypeError, ValueError) as e:
            raise r.error(f"loss_multimulticlass_log_: the file's labels map is invalid: {e}", start) from None
        self.possible_labels = fresh.possible_labels
        self.label_idx_lookup = fresh.label_idx_lookup
        self.total_num_labels = fresh.total_num_labels

    def __repr__(self):
        inner = ", ".join(f"{c}:({','.join(v)})" for c, v in self.possible_labels.items())
        return f"loss_multimulticlass_log, labels={{{inner}}}"

    def to_xml(self):
        return f"<loss_multimulticlass_log>\n{self!r}\n</loss_multimulticlass_log>\n"


class _labels_loss_template(loss_template):
    """``loss_multimulticlass_log[labels_dict, SUBNET]``: the dict becomes a hashable
    ``_frozen_labels`` so the net type can be cached and printed parseably;
    ``loss_multimulticlass_log[SUBNET]`` has no labels (dlib's default constructor)."""

    def _normalize(self, args):
        return [_freeze_labels(a) if isinstance(a, (Mapping, str)) else a for a in args]


loss_multimulticlass_log = _labels_loss_template("loss_multimulticlass_log", loss_multimulticlass_log_)


# ----------------------------------------------------------------------------------------

class loss_multibinary_log_(loss_layer):
    """Independent sigmoid cross-entropies, one per output channel, with a focal factor.

    Labels: per sample k nonzero numbers (sign = class, magnitude = weight). With
    ``p = sigmoid(o)``: ``y > 0``: loss ``y*(1-p)^gamma*log1pexp(-o)``, gradient
    ``y*(1-p)^gamma*(p*(gamma*t + 1) - 1)/N``; ``y < 0``: loss ``-y*p^gamma*t``, gradient
    ``-y*p^gamma*p*(gamma*t + 1)/N`` (t = that branch's log term). For gamma > 0 this
    gradient is dlib's, which is not the exact derivative of its loss (the focal terms'
    sign and factor differ); dnnpy keeps dlib's. ``to_label``: the k raw scores.
    """

    def template_args(self):
        return {"gamma": self.gamma}

    def __init__(self, gamma=0.0):
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
            raise TypeError(f"loss_multibinary_log_: gamma must be a number, got {gamma!r}")
        if not gamma >= 0:
            raise ValueError(f"loss_multibinary_log_: gamma must be >= 0, got {gamma!r}")
        self.gamma = float(gamma)

    def get_gamma(self) -> float:
        return self.gamma

    def to_label(self, x, sub):
        out = _row_output("loss_multibinary_log_", x, sub)
        return list(np.array(out.host_read().reshape(out.num_samples(), out.k())))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_multibinary_log_"
        out = _row_output(name, x, sub)
        labels = check_label_count(name, out, labels)
        for i, t in enumerate(labels):
            if not hasattr(t, "__len__") or isinstance(t, str) or len(t) != out.k():
                got = len(t) if hasattr(t, "__len__") else type(t).__name__
                raise ValueError(f"{name}: label {i} must hold one number per output channel "
                                 f"(k={out.k()}), got {got}")
        y = float_labels(name, labels, (out.k(),))
        if (y == 0).any():
            raise ValueError(f"{name}: a label is 0; labels must be nonzero (sign = class, "
                             f"magnitude = weight)")
        o = out.host_read().reshape(out.num_samples(), out.k())
        dt = o.dtype.type
        y = y.astype(dt).astype(_F64)  # dlib's labels are floats
        scale = 1.0 / out.num_samples()
        gam = self.gamma
        p = sigmoid(o)
        lpe = log1pexp(-o)
        pos = y > 0
        temp = np.where(pos, lpe, o + lpe).astype(_F64)
        p64 = p.astype(_F64)
        # dlib: focus = (float) pow(1 - p, gamma) (y > 0) or pow(p, gamma) (y < 0)
        focus = np.where(pos, np.power((dt(1) - p).astype(_F64), gam), np.power(p64, gam)).astype(dt)
        f64 = focus.astype(_F64)
        loss = float(np.sum(np.abs(y) * scale * temp * f64))
        grad = np.where(pos, y * scale * f64 * (p64 * (gam * temp + 1) - 1),
                        -y * scale * f64 * p64 * (gam * temp + 1))
        assign_gradient(sub, grad.astype(dt).reshape(out.shape))
        return loss

    def serialize(self, w):
        w.string("loss_multibinary_log_2")
        w.float64(self.gamma)  # a C++ double

    def deserialize(self, r):
        """gamma is restored from the file; the old ``loss_multibinary_log_`` record means 0."""
        found = r.expect_string("loss_multibinary_log_", "loss_multibinary_log_2")
        gamma = 0.0
        if found == "loss_multibinary_log_2":
            start = r.pos
            gamma = r.float64("loss_multibinary_log_'s gamma")
            if not gamma >= 0:
                raise r.error(f"loss_multibinary_log_: gamma must be >= 0, found {gamma}", start)
        self.gamma = gamma

    def __repr__(self):
        return f"loss_multibinary_log (gamma={cpp_num(self.gamma)})"

    def to_xml(self):
        # dlib's net_to_xml prints with stream precision 9
        return f"<loss_multibinary_log gamma='{self.gamma:.9g}'/>\n"

    _onnx_heads = ("probabilities",)

    def _onnx_head(self, g, x, what):
        """probabilities: ``Sigmoid`` of each score."""
        return g.node("Sigmoid", [x])


loss_multibinary_log = loss_template("loss_multibinary_log", loss_multibinary_log_)
