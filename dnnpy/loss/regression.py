"""Regression losses (mean squared family, epsilon-insensitive, dot)."""

from __future__ import annotations

import numpy as np

from ..layers.base import check_int
from ..templates import loss_template
from .base import loss_layer

__all__ = ["loss_mean_squared_per_channel_and_pixel_", "loss_mean_squared_per_channel_and_pixel"]


class loss_mean_squared_per_channel_and_pixel_(loss_layer):
    """Mean squared error over every channel and pixel of a ``(N, C, nr, nc)`` output.

    Labels: one ``(C, nr, nc)`` float array per sample. Loss ``mean((y - out)^2)``; as in
    dlib the gradient written is ``(out - y) / (N*C*nr*nc)``, half of d(loss)/d(out).
    """

    def __init__(self, num_channels):
        self.num_channels = check_int("loss_mean_squared_per_channel_and_pixel_", "num_channels",
                                      num_channels, 1)

    def _check_output(self, out):
        if out.k() != self.num_channels:
            raise ValueError(f"loss_mean_squared_per_channel_and_pixel_: the net outputs {out.k()} "
                             f"channels but the loss expects {self.num_channels}")

    def to_label(self, x, sub):
        out = sub.get_output()
        self._check_output(out)
        return list(np.array(out.host_read()))

    def compute_loss_value_and_gradient(self, x, labels, sub):
        out = sub.get_output()
        self._check_output(out)
        labels = self._check_labels("loss_mean_squared_per_channel_and_pixel_", x, sub, labels)
        truth = np.asarray(labels, dtype=np.float32)
        if truth.shape != out.shape:
            raise ValueError(f"loss_mean_squared_per_channel_and_pixel_: labels have shape "
                             f"{truth.shape[1:]} per sample but the net outputs {out.shape[1:]}")
        diff = truth - out.host_read()
        scale = np.float32(1.0 / out.size())
        sub.get_gradient_input().assign(-scale * diff)
        return float(np.dot(diff.ravel().astype(np.float64), diff.ravel().astype(np.float64)) * (1.0 / out.size()))

    def __repr__(self):
        return "loss_mean_squared_per_channel_and_pixel"


loss_mean_squared_per_channel_and_pixel = loss_template(
    "loss_mean_squared_per_channel_and_pixel", loss_mean_squared_per_channel_and_pixel_)
