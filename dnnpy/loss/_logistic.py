"""Shared pieces of the classification and per-pixel losses: dlib's numerics
(``safe_log``, ``log1pexp``, the CPU softmax and sigmoid) vectorised over numpy arrays,
and the checks every one of those losses makes on its subnet and output.

Arrays are computed in the output tensor's dtype (float32 normally, float64 under
``test_loss``); ``log1pexp`` is evaluated in float64 as dlib's ``double log1pexp(double)``
is, then rounded to that dtype.
"""

from __future__ import annotations

import numpy as np

from ..layers.base import gradient_input_target

_F64 = np.float64
SAFE_LOG_EPSILON = 1e-10  # dlib's safe_log default epsilon


def safe_log(p):
    """dlib's ``safe_log``: ``log(max(p, 1e-10))``, in ``p``'s dtype."""
    p = np.asarray(p)
    return np.log(np.maximum(p, p.dtype.type(SAFE_LOG_EPSILON)))


def log1pexp(x):
    """dlib's ``log1pexp(x) = log(1 + exp(x))`` with its four branches, computed in float64
    and returned in ``x``'s dtype."""
    x = np.asarray(x)
    d = x.astype(np.float64)
    with np.errstate(over="ignore"):
        out = np.where(d <= -37, np.exp(d),
                       np.where(d <= 18, np.log1p(np.exp(np.minimum(d, 18))),
                                np.where(d <= 33.3, d + np.exp(-d), d)))
    return out.astype(x.dtype)


def sigmoid(x):
    """dlib's CPU ``tt::sigmoid``: ``1/(1+exp(-x))`` elementwise, in ``x``'s dtype."""
    x = np.asarray(x)
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        return one / (one + np.exp(-x))


def softmax_channels(x):
    """dlib's CPU ``tt::softmax`` on an ``(N, k, nr, nc)`` array: for each sample and pixel,
    ``exp(x - max_k x) / sum_k exp(x - max_k x)`` over the k channels."""
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_subnet(name, x, sub):
    """The checks dlib's losses make before reading the output: sample expansion factor 1,
    a non-empty batch, and as many output samples as input samples. Returns the output
    tensor. (A net whose input was never converted by ``to_tensor`` reports 0.)"""
    sef = sub.sample_expansion_factor()
    if sef not in (0, 1):
        raise ValueError(f"{name}: needs one sample per input object (a sample expansion factor "
                         f"of 1), but the input layer made {sef} samples per object (for "
                         f"input_tensor: each item of a list is one sample; pass an (N, k, nr, nc) "
                         f"array itself rather than a list holding it)")
    out = sub.get_output()
    if x is not None and x.num_samples() != out.num_samples():
        raise ValueError(f"{name}: the input tensor has {x.num_samples()} samples but the net "
                         f"output {out.shape} has {out.num_samples()}")
    return out


def check_label_count(name, out, labels):
    """Labels as a list (or array), one per output sample; errors name the loss."""
    if isinstance(labels, (str, bytes, dict)) or not hasattr(labels, "__len__"):
        raise TypeError(f"{name}: labels must be a sequence with one label per sample, "
                        f"got {type(labels).__name__}")
    labels = labels if isinstance(labels, np.ndarray) else list(labels)
    n = out.num_samples()
    if n == 0:
        raise ValueError(f"{name}: the batch is empty")
    if len(labels) != n:
        raise ValueError(f"{name}: got {len(labels)} labels for {n} samples")
    return labels


def check_output_dims(name, out, *, k=None, nr=None, nc=None):
    """Require the given output dims (None = any); the error names the loss and the shape."""
    want = {"k": k, "nr": nr, "nc": nc}
    have = {"k": out.k(), "nr": out.nr(), "nc": out.nc()}
    bad = [f"{d} == {v}" for d, v in want.items() if v is not None and have[d] != v]
    if bad:
        raise ValueError(f"{name}: the net output {out.shape} (N, k, nr, nc) must have "
                         f"{' and '.join(bad)}")


def _per_sample(shape, what):
    if shape is None:
        return f"one {what} per sample"
    if len(shape) == 2:
        return f"one {shape[0]}x{shape[1]} array of {what}s per sample (the output's nr x nc)"
    return f"one array of {shape[0]} {what}s per sample"


def _holds_strings(labels):
    try:
        a = np.asarray(labels)
    except ValueError:                    # ragged
        a = np.asarray(labels, dtype=object)
    if a.dtype.kind in "US":
        return True
    return a.dtype.kind == "O" and any(isinstance(v, (str, bytes)) for v in a.reshape(-1))


def float_labels(name, labels, shape=None, dtype=np.float64):
    """Convert numeric labels to a ``dtype`` array (one per sample, or one array of ``shape``
    per sample; each value rounded once, from what the user gave); TypeError for non-numbers
    (strings included: numpy would parse "1"), ValueError for a wrong shape or NaN."""
    if _holds_strings(labels):
        raise TypeError(f"{name}: labels must be numbers, got strings; convert them first, e.g. "
                        f"[float(v) for v in labels]")
    try:
        arr = np.array(labels, dtype=dtype)
    except TypeError:
        raise TypeError(f"{name}: labels must be numbers ({_per_sample(shape, 'number')})") from None
    except ValueError:
        raise ValueError(f"{name}: labels must be {_per_sample(shape, 'number')}; got ragged or "
                         f"non-numeric labels") from None
    want = (len(labels),) + (() if shape is None else tuple(shape))
    if arr.shape != want:
        raise ValueError(f"{name}: labels must be {_per_sample(shape, 'number')}; got labels of "
                         f"shape {arr.shape[1:]} per sample")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: labels contain NaN")
    return arr


def int_labels(name, labels, shape=None):
    """Convert integer labels to an int64 array; floats, bools and objects are a TypeError."""
    try:
        arr = np.asarray(labels)
    except ValueError:
        raise ValueError(f"{name}: labels must be {_per_sample(shape, 'integer')}; got ragged "
                         f"labels") from None
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: labels must be integers, got an array of dtype {arr.dtype}")
    want = (len(labels),) + (() if shape is None else tuple(shape))
    if arr.shape != want:
        raise ValueError(f"{name}: labels must be {_per_sample(shape, 'integer')}; got labels of "
                         f"shape {arr.shape[1:]} per sample")
    return arr.astype(np.int64)


def gradient_buffer(sub, shape):
    """The host array of ``sub``'s gradient input, shaped ``shape`` (its number of elements),
    for a loss to ASSIGN in full (dlib's losses overwrite): taken as it is, without the
    zero-fill a stale buffer would get (``gradient_input_target``)."""
    grad, _ = gradient_input_target(sub)
    if grad.size() != int(np.prod(shape)):
        raise ValueError(f"loss: the gradient input {grad.shape} does not match the output "
                         f"{tuple(shape)}")
    return grad.host_write_only().reshape(shape)


def assign_gradient(sub, values):
    """ASSIGN ``values`` (all of them, zeros included) to ``sub``'s gradient input;
    ``values`` has its shape or its number of elements."""
    values = np.asarray(values)
    gradient_buffer(sub, values.shape)[...] = values


def prepare(name, x, sub, labels, **dims):
    """dlib's checks (sample expansion factor 1, one label per sample, output dims) ->
    ``(output tensor, labels as a list/array, output as a host array)``."""
    out = check_subnet(name, x, sub)
    check_output_dims(name, out, **dims)
    labels = check_label_count(name, out, labels) if labels is not None else None
    return out, labels, out.host_read()


def binary_log_terms(o, y, scale):
    """dlib's per-element binary log loss (labels y != 0; y == 0 elements get gradient 0 and
    no loss, as in the per-pixel version). Returns (float64 loss, gradient in o's dtype)."""
    dt = o.dtype.type
    g = sigmoid(o)
    lpe = log1pexp(-o)
    pos, neg = y > 0, y < 0
    temp = np.where(pos, lpe, o + lpe)          # -(-o - log1pexp(-o)) = o + log1pexp(-o)
    loss = float(np.sum(np.abs(y) * scale * temp.astype(_F64) * (pos | neg)))
    grad = np.where(pos, y * scale * (g - dt(1)).astype(_F64),
                    np.where(neg, -y * scale * g.astype(_F64), 0.0))
    return loss, grad.astype(dt)

