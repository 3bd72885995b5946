"""Regression losses (dlib loss.h): the mean squared family, epsilon-insensitive and dot.

Every loss: ``compute_loss_value_and_gradient(x, labels, sub)`` returns the mini-batch mean
loss (accumulated in float64) and ASSIGNS its gradient to ``sub.get_gradient_input()``,
computed in the output's dtype in dlib's order of operations (``double * float`` products
are formed in float64, then rounded); ``to_label(x, sub)`` returns one label per sample.
All need a sample expansion factor of 1.

dlib quirk kept: the mean squared losses report ``mean((y - out)^2)`` but write
``(out - y)/N``, half of its derivative (check them with ``test_loss(..., gradient_scale=0.5)``).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..layers.base import check_int
from ..templates import loss_template
from ._logistic import assign_gradient, float_labels, gradient_buffer, prepare
from ..printing import cpp_num, xml_num
from .base import loss_layer, named_loss

__all__ = ["loss_mean_squared_", "loss_mean_squared",
           "loss_mean_squared_multioutput_", "loss_mean_squared_multioutput",
           "loss_epsilon_insensitive_", "loss_epsilon_insensitive",
           "loss_dot_", "loss_dot",
           "loss_mean_squared_per_channel_and_pixel_", "loss_mean_squared_per_channel_and_pixel"]

_F64 = np.float64



def squared_error(y, o, scale, out=None):
    """dlib's mean-squared step on arrays: ``temp1 = y - o`` (float), ``temp2 = scale*temp1``
    (double, rounded to float); returns (loss = sum of the float products temp2*temp1 in
    float64, gradient = -temp2). ``out``: where to write the gradient (the net's gradient
    buffer, of ``o``'s shape and dtype, never ``y`` or ``o``); it also holds ``temp1`` and the
    products on the way, so that one temporary is made instead of three (fresh arrays cost
    page faults, which dominated a small net's loss)."""
    g = np.empty_like(o) if out is None else out
    np.subtract(y, o, out=g)                                                  # temp1
    temp2 = np.empty_like(g)
    np.multiply(g, scale, out=temp2, dtype=_F64, casting="unsafe")   # in double, stored as float
    np.multiply(temp2, g, out=g)                                              # the float products
    loss = float(np.add.reduce(g.reshape(-1), dtype=_F64))                    # in double
    np.negative(temp2, out=g)
    return loss, g


# ----------------------------------------------------------------------------------------

class loss_mean_squared_(named_loss):
    """Scalar regression on ``(N, 1, 1, 1)`` outputs; labels are numbers. Loss
    ``mean((y - out)^2)``; gradient written ``(out - y)/N`` (half of its derivative, as dlib)."""

    _printed = "loss_mean_squared"

    def to_label(self, x, sub):
        _, _, o = prepare("loss_mean_squared_", x, sub, None, k=1, nr=1, nc=1)
        return [float(v) for v in o.reshape(-1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_mean_squared_"
        out, labels, o = prepare(name, x, sub, labels, k=1, nr=1, nc=1)
        y = float_labels(name, labels, dtype=o.dtype)
        loss, _ = squared_error(y, o.reshape(-1), 1.0 / out.num_samples(),
                                gradient_buffer(sub, (o.size,)))
        return loss


loss_mean_squared = loss_template("loss_mean_squared", loss_mean_squared_)


class loss_mean_squared_multioutput_(named_loss):
    """Vector regression on ``(N, k, 1, 1)`` outputs; labels are k-vectors (shape ``(k,)`` or
    dlib's ``(k, 1)``). Loss ``sum over samples and k of (y - out)^2 / N``; gradient written
    ``(out - y)/N`` (half of its derivative, as dlib)."""

    _printed = "loss_mean_squared_multioutput"

    def to_label(self, x, sub):
        _, _, o = prepare("loss_mean_squared_multioutput_", x, sub, None, nr=1, nc=1)
        return [row.copy() for row in o.reshape(o.shape[0], -1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_mean_squared_multioutput_"
        out, labels, o = prepare(name, x, sub, labels, nr=1, nc=1)
        k = out.k()
        labels = [np.asarray(t).reshape(-1) if np.shape(t) == (k, 1) else t for t in labels]
        y = float_labels(name, labels, (k,), dtype=o.dtype)
        loss, _ = squared_error(y, o.reshape(y.shape), 1.0 / out.num_samples(),
                                gradient_buffer(sub, y.shape))
        return loss


loss_mean_squared_multioutput = loss_template("loss_mean_squared_multioutput",
                                              loss_mean_squared_multioutput_)


class loss_epsilon_insensitive_(loss_layer):
    """Scalar regression on ``(N, 1, 1, 1)`` outputs ignoring errors up to ``eps``. With
    ``err = out - y`` (float, compared with the double ``eps``): ``err > eps`` adds
    ``(err - eps)/N`` to the loss and writes gradient ``1/N``; ``err < -eps`` adds
    ``(eps - err)/N`` and writes ``-1/N``; otherwise 0.

    dlib quirk kept: below the tube dlib's implementation adds ``eps - err = eps + |err|``
    (its documentation says ``max(0, |err| - eps)``); the gradient is the same either way."""

    # net_type(0.01): dlib's loss_epsilon_insensitive_(double eps) makes a bare number the loss's
    constructor_settings = {numbers.Real: "eps"}

    def template_args(self):
        return {"eps": self.eps}

    def __init__(self, eps=1.0):
        self.eps = self._check_eps(eps)

    @staticmethod
    def _check_eps(eps):
        if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
            raise TypeError(f"loss_epsilon_insensitive_: eps must be a number, got {eps!r}")
        if not eps >= 0:
            raise ValueError(f"loss_epsilon_insensitive_: you can't set a negative error epsilon, got {eps!r}")
        return float(eps)

    def get_epsilon(self):
        return self.eps

    def set_epsilon(self, e):
        self.eps = self._check_eps(e)

    def to_label(self, x, sub):
        _, _, o = prepare("loss_epsilon_insensitive_", x, sub, None, k=1, nr=1, nc=1)
        return [float(v) for v in o.reshape(-1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_epsilon_insensitive_"
        out, labels, o = prepare(name, x, sub, labels, k=1, nr=1, nc=1)
        o = o.reshape(-1)
        err = (o - float_labels(name, labels).astype(o.dtype)).astype(_F64)  # float err, double compares
        scale = 1.0 / out.num_samples()
        above, below = err > self.eps, err < -self.eps
        loss = float(np.sum(scale * (err[above] - self.eps)) + np.sum(scale * (self.eps - err[below])))
        assign_gradient(sub, np.where(above, scale, np.where(below, -scale, 0.0)).astype(o.dtype))
        return loss

    def serialize(self, w):
        w.string("loss_epsilon_insensitive_")
        w.float64(self.eps)  # a C++ double

    def deserialize(self, r):
        r.expect_string("loss_epsilon_insensitive_")
        start = r.pos
        eps = r.float64("loss_epsilon_insensitive_'s eps")
        if not eps >= 0:
            raise r.error(f"loss_epsilon_insensitive_: eps must be >= 0, found {eps}", start)
        self.eps = eps

    def __repr__(self):
        return f"loss_epsilon_insensitive epsilon: {cpp_num(self.eps)}"

    def to_xml(self):
        return f"<loss_epsilon_insensitive_ epsilon='{xml_num(self.eps)}'/>\n"


loss_epsilon_insensitive = loss_template("loss_epsilon_insensitive", loss_epsilon_insensitive_)


class loss_dot_(named_loss):
    """Negative dot product: each sample's output (any ``k, nr, nc``, flattened to
    ``D = k*nr*nc``) against a D-vector label. Loss ``-mean_n(dot(out_n, y_n))``, gradient
    ``-y/N``. ``to_label`` returns each sample's output as a D-vector."""

    _printed = "loss_dot"

    def to_label(self, x, sub):
        _, _, o = prepare("loss_dot_", x, sub, None)
        return [row.copy() for row in o.reshape(o.shape[0], -1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_dot_"
        out, labels, o = prepare(name, x, sub, labels)
        o = o.reshape(o.shape[0], -1)
        dims = o.shape[1]
        for i, t in enumerate(labels):
            if np.size(t) != dims:
                raise ValueError(f"{name}: the network must output a vector with the same "
                                 f"dimensionality as the training labels: label {i} has "
                                 f"{np.size(t)} values, the network outputs {dims} per sample "
                                 f"{out.shape[1:]}")
        t = float_labels(name, [np.asarray(v).reshape(-1) for v in labels], (dims,)).astype(o.dtype)
        scale = 1.0 / out.num_samples()
        loss = -float(np.sum((o * t).astype(_F64))) * scale
        assign_gradient(sub, (t.astype(_F64) * -scale).astype(o.dtype))
        return loss


loss_dot = loss_template("loss_dot", loss_dot_)


class loss_mean_squared_per_channel_and_pixel_(named_loss):
    """Mean squared error over every channel and pixel of a ``(N, C, nr, nc)`` output.

    Labels: one ``(C, nr, nc)`` float array per sample. Loss ``mean((y - out)^2)``; as in
    dlib the gradient written is ``(out - y) / (N*C*nr*nc)``, half of d(loss)/d(out).
    """

    _printed = "loss_mean_squared_per_channel_and_pixel"

    def template_args(self):
        return {"num_channels": self.num_channels}

    def __init__(self, num_channels):
        self.num_channels = check_int("loss_mean_squared_per_channel_and_pixel_", "num_channels",
                                      num_channels, 1)

    def to_label(self, x, sub):
        _, _, o = prepare("loss_mean_squared_per_channel_and_pixel_", x, sub, None, k=self.num_channels)
        return list(np.array(o))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_mean_squared_per_channel_and_pixel_"
        out, labels, o = prepare(name, x, sub, labels, k=self.num_channels)
        for i, t in enumerate(labels):
            if np.shape(t) != out.shape[1:]:
                raise ValueError(f"{name}: label {i} has shape {np.shape(t)} but the net outputs "
                                 f"{out.shape[1:]} (C, nr, nc) per sample")
        y = float_labels(name, labels, out.shape[1:], o.dtype)
        loss, _ = squared_error(y, o, 1.0 / out.size(), gradient_buffer(sub, o.shape))
        return loss


loss_mean_squared_per_channel_and_pixel = loss_template(
    "loss_mean_squared_per_channel_and_pixel", loss_mean_squared_per_channel_and_pixel_)
