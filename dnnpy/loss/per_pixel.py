"""Per-pixel losses on ``(N, k, nr, nc)`` outputs (dlib loss.h, cpu_dlib.h's
``compute_loss_*_per_pixel``): binary log (k = 1), multiclass log with an ignore label,
weighted multiclass log, and mean squared (k = 1).

Labels: one ``nr x nc`` array per sample. The loss is averaged with
``scale = 1/(N*nr*nc)``: ignored pixels still count in the denominator, as in dlib. The
gradient is ASSIGNED to ``sub.get_gradient_input()``, computed in the output's dtype.
"""

from __future__ import annotations

import numpy as np

from ..templates import loss_template
from ._logistic import (assign_gradient, binary_log_terms, check_label_count, check_output_dims,
                        check_subnet, safe_log, softmax_channels)
from .base import named_loss
from .classification import weighted_label

__all__ = ["label_to_ignore", "loss_binary_log_per_pixel_", "loss_binary_log_per_pixel",
           "loss_multiclass_log_per_pixel_", "loss_multiclass_log_per_pixel",
           "loss_multiclass_log_per_pixel_weighted_", "loss_multiclass_log_per_pixel_weighted",
           "loss_mean_squared_per_pixel_", "loss_mean_squared_per_pixel"]

_F64 = np.float64
label_to_ignore = 65535  # dlib: std::numeric_limits<uint16_t>::max()
_UINT16_MAX = 65535


def _matrices(name, labels, out, kinds, what):
    """Stack per-sample label matrices into an ``(N, nr, nc)`` array, checking each one's
    size against the output (dlib's "truth size = ..., output size = ..." check) and its
    dtype kind (``kinds``, numpy kind letters)."""
    labels = check_label_count(name, out, labels)
    nr, nc = out.nr(), out.nc()
    mats = []
    for i, lab in enumerate(labels):
        try:
            a = np.asarray(lab)
        except ValueError:
            raise ValueError(f"{name}: label {i} is ragged; each label must be an {nr}x{nc} array") from None
        if a.dtype.kind not in kinds:
            raise TypeError(f"{name}: label {i} must be an array of {what}, got dtype {a.dtype}")
        if a.shape != (nr, nc):
            raise ValueError(f"{name}: label {i} has shape {a.shape} but the net output is "
                             f"{nr}x{nc} per sample (truth size must equal output size)")
        mats.append(a)
    return np.stack(mats)


def _check_uint16(name, y):
    bad = y[(y < 0) | (y > _UINT16_MAX)]
    if bad.size:
        raise ValueError(f"{name}: label value {int(bad[0])} is not a uint16 (0..65535)")


def _per_pixel_output(name, x, sub, k=None):
    out = check_subnet(name, x, sub)
    check_output_dims(name, out, k=k)
    if out.k() >= _UINT16_MAX:
        raise ValueError(f"{name}: the net output {out.shape} has k >= 65535 channels")
    return out


# ----------------------------------------------------------------------------------------

class loss_binary_log_per_pixel_(named_loss):
    """Per-pixel sigmoid cross-entropy on a k = 1 output. Labels: ``nr x nc`` float arrays,
    sign = class, magnitude = weight, 0 = ignore (gradient 0, no loss). Loss and gradient
    as ``loss_binary_log_`` per pixel, scaled by ``1/(N*nr*nc)``. ``to_label``: the raw
    score maps."""

    _printed = "loss_binary_log_per_pixel"

    def to_label(self, x, sub):
        out = _per_pixel_output("loss_binary_log_per_pixel_", x, sub, k=1)
        return list(np.array(out.host_read()[:, 0]))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_binary_log_per_pixel_"
        out = _per_pixel_output(name, x, sub, k=1)
        y = _matrices(name, labels, out, "iuf", "numbers").astype(_F64)
        if np.isnan(y).any():
            raise ValueError(f"{name}: labels contain NaN")
        o = out.host_read()[:, 0]
        y = y.astype(o.dtype).astype(_F64)  # dlib's labels are floats
        loss, grad = binary_log_terms(o, y, 1.0 / o.size)
        assign_gradient(sub, grad.reshape(out.shape))
        return loss

    _onnx_heads = ("probabilities",)

    def _onnx_head(self, g, x, what):
        """probabilities: ``Sigmoid`` of each pixel's score."""
        return g.node("Sigmoid", [x])


loss_binary_log_per_pixel = loss_template("loss_binary_log_per_pixel", loss_binary_log_per_pixel_)


def _per_pixel_softmax_terms(o, y, w, scale):
    """Softmax over k per pixel of ``o`` (N, k, nr, nc); NLL of class ``y`` (N, nr, nc)
    (dlib's safe_log), times weight ``w`` per pixel. Pixels with ``w == 0`` may have any
    ``y``. Returns (float64 loss, gradient ``w*scale*(p - onehot(y))`` in o's dtype)."""
    dt = o.dtype.type
    k = o.shape[1]
    yc = np.where(y < k, y, 0)[:, None]         # any class will do where w == 0
    p = softmax_channels(o)
    p_true = np.take_along_axis(p, yc, axis=1)
    loss = float(np.sum(w * scale * -safe_log(p_true[:, 0]).astype(_F64)))
    np.put_along_axis(p, yc, p_true - dt(1), axis=1)
    grad = (w[:, None] * scale) * p.astype(_F64)
    return loss, grad.astype(dt)


class loss_multiclass_log_per_pixel_(named_loss):
    """Per-pixel softmax over k + negative log-likelihood. Labels: ``nr x nc`` integer
    arrays of class indices ``0..k-1``, or ``label_to_ignore`` (65535) for pixels that get
    gradient 0 and no loss (but still count in ``scale = 1/(N*nr*nc)``). ``to_label``:
    per pixel the index of the largest output (first on ties), as uint16 arrays."""

    _printed = "loss_multiclass_log_per_pixel"
    label_to_ignore = label_to_ignore

    @staticmethod
    def _labels_of(out):
        return list(np.argmax(out.host_read(), axis=1).astype(np.uint16))

    def to_label(self, x, sub):
        return self._labels_of(_per_pixel_output(type(self).__name__, x, sub))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_multiclass_log_per_pixel_"
        out = _per_pixel_output(name, x, sub)
        y = _matrices(name, labels, out, "iu", "integers").astype(np.int64)
        _check_uint16(name, y)
        k = out.k()
        bad = y[(y >= k) & (y != label_to_ignore)]
        if bad.size:
            raise ValueError(f"{name}: label {int(bad[0])} is out of range for a net with k={k} "
                             f"outputs (labels must be 0..{k - 1} or label_to_ignore=65535)")
        w = (y != label_to_ignore).astype(_F64)
        loss, grad = _per_pixel_softmax_terms(out.host_read(), y, w, 1.0 / (y.size))
        assign_gradient(sub, grad)
        return loss

    _onnx_heads = ("labels", "probabilities")

    def _onnx_head(self, g, x, what):
        """labels: ``ArgMax(axis=1)``, int64 ``(N, nr, nc)`` (dlib's are uint16; first maximum
        wins ties); probabilities: ``Softmax(axis=1)``."""
        if what == "probabilities":
            return g.node("Softmax", [x], axis=1)
        n, _, nr, nc = g.shape(x)
        return g.node("ArgMax", [x], shape=(n, nr, nc), dtype=np.int64, axis=1, keepdims=0,
                      select_last_index=0)


loss_multiclass_log_per_pixel = loss_template("loss_multiclass_log_per_pixel",
                                              loss_multiclass_log_per_pixel_)


def _weighted_matrix(name, i, lab, nr, nc):
    """One sample's weighted labels as (labels, weights) arrays. Accepts a tuple
    ``(label_array, weight_array)``, a structured array with fields ``label`` and
    ``weight``, or an ``nr x nc`` array/nested list of ``weighted_label``."""
    if isinstance(lab, tuple) and len(lab) == 2:
        ys, ws = (np.asarray(a) for a in lab)
    elif isinstance(lab, np.ndarray) and lab.dtype.names and {"label", "weight"} <= set(lab.dtype.names):
        ys, ws = lab["label"], lab["weight"]
    else:
        obj = np.empty((nr, nc), dtype=object)
        try:
            obj[...] = lab
        except (ValueError, TypeError):
            raise ValueError(f"{name}: label {i} must be an {nr}x{nc} matrix of weighted_label "
                             f"(or a (labels, weights) tuple of {nr}x{nc} arrays)") from None
        flat = obj.reshape(-1)
        for v in flat:
            if not isinstance(v, weighted_label):
                raise TypeError(f"{name}: label {i} must hold weighted_label items, got "
                                f"{type(v).__name__}")
        ys = np.array([v.label for v in flat], dtype=np.int64).reshape(nr, nc)
        ws = np.array([v.weight for v in flat], dtype=_F64).reshape(nr, nc)
    if ys.dtype.kind not in "iu" or ws.dtype.kind not in "iuf":
        raise TypeError(f"{name}: label {i}: labels must be integers and weights numbers, got "
                        f"dtypes {ys.dtype} and {ws.dtype}")
    if ys.shape != (nr, nc) or ws.shape != (nr, nc):
        raise ValueError(f"{name}: label {i} has shapes {ys.shape} (labels) and {ws.shape} "
                         f"(weights) but the net output is {nr}x{nc} per sample")
    return ys.astype(np.int64), ws.astype(np.float32).astype(_F64)  # dlib's weight is a float


class loss_multiclass_log_per_pixel_weighted_(loss_multiclass_log_per_pixel_):
    """``loss_multiclass_log_per_pixel_`` with a weight per pixel: each sample's label is an
    ``nr x nc`` matrix of ``weighted_label`` (or a ``(labels, weights)`` tuple of arrays, or
    a structured array with fields ``label``, ``weight``). Loss and gradient per pixel are
    multiplied by the weight; a pixel of weight 0 may have any label (no ignore value
    otherwise: 65535 with a nonzero weight is out of range)."""

    _printed = "loss_multiclass_log_per_pixel_weighted"

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_multiclass_log_per_pixel_weighted_"
        out = _per_pixel_output(name, x, sub)
        labels = check_label_count(name, out, labels)
        pairs = [_weighted_matrix(name, i, lab, out.nr(), out.nc()) for i, lab in enumerate(labels)]
        y = np.stack([p[0] for p in pairs])
        w = np.stack([p[1] for p in pairs])
        _check_uint16(name, y)
        bad = y[(y >= out.k()) & (w != 0)]
        if bad.size:
            raise ValueError(f"{name}: label {int(bad[0])} with a nonzero weight is out of range "
                             f"for a net with k={out.k()} outputs")
        loss, grad = _per_pixel_softmax_terms(out.host_read(), y, w, 1.0 / y.size)
        assign_gradient(sub, grad)
        return loss


loss_multiclass_log_per_pixel_weighted = loss_template("loss_multiclass_log_per_pixel_weighted",
                                                       loss_multiclass_log_per_pixel_weighted_)


# ----------------------------------------------------------------------------------------

class loss_mean_squared_per_pixel_(named_loss):
    """Mean squared error per pixel. Labels: ``nr x nc`` float arrays. Loss
    ``sum((y - out)^2)/(N*nr*nc)``; as in dlib the gradient written is ``(out - y)/(N*nr*nc)``,
    half of d(loss)/d(out). dlib's ``compute_loss_value_and_gradient`` accepts any k >= 1
    and uses channel 0 only (the other channels get gradient 0 here); ``to_label`` needs
    k == 1 and returns the output maps."""

    _printed = "loss_mean_squared_per_pixel"

    def to_label(self, x, sub):
        out = _per_pixel_output("loss_mean_squared_per_pixel_", x, sub, k=1)
        return list(np.array(out.host_read()[:, 0]))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_mean_squared_per_pixel_"
        out = _per_pixel_output(name, x, sub)
        y = _matrices(name, labels, out, "iuf", "numbers")
        o = out.host_read()
        dt = o.dtype.type
        scale = 1.0 / (out.num_samples() * out.nr() * out.nc())
        t1 = y.astype(dt) - o[:, 0]                        # float, as dlib
        t2 = (scale * t1.astype(_F64)).astype(dt)
        grad = np.zeros(out.shape, dtype=dt)
        grad[:, 0] = -t2
        assign_gradient(sub, grad)
        return float(np.sum((t2 * t1).astype(_F64)))


loss_mean_squared_per_pixel = loss_template("loss_mean_squared_per_pixel", loss_mean_squared_per_pixel_)
