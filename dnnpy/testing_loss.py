"""``test_loss``: a numerical gradient checker for loss layers (dlib has none).

A loss's ``compute_loss_value_and_gradient(x, labels, sub)`` returns a value L and ASSIGNS a
gradient to ``sub.get_gradient_input()`` (and, for multi-head losses such as loss_yolo, to
the gradient inputs of tagged layers). This checker, in float64:

* calls the loss on a fake subnet whose output is the given array and whose gradient input
  is zero-filled (as the net zero-fills it), and records the gradient written;
* calls it a second time without re-zeroing: the gradient must not change (a loss that ADDS
  instead of assigning doubles it);
* compares every written entry with ``gradient_scale * dL/d(output)`` by central differences
  of the returned loss value, step ``h = 1e-6 * max(1, |v|)``.

``gradient_scale`` exists for dlib's mean-squared family, which reports ``mean((y-o)^2)`` but
writes half of its derivative (``gradient_scale=0.5``). An entry passes when
``|written - expected| <= atol + rtol*|expected|`` (defaults 1e-7 and 1e-5: central
differences in float64 are accurate to about 1e-9 here, so these only admit rounding).
Choose outputs away from kinks of piecewise-linear losses (hinge margins, ties in argmax).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tensor import default_dtype, resizable_tensor

__all__ = ["test_loss", "loss_test_results"]


@dataclass
class loss_test_results:
    """Truthy when the loss's gradient matches its value; ``log`` says what failed."""

    was_good: bool = True
    log: str = ""
    max_error: float = 0.0
    loss: float = 0.0

    def __bool__(self):
        return self.was_good

    def __str__(self):
        return self.log if self.log else "test_loss: the gradient agrees with the loss value"


class _loss_subnet:
    """Fake SUBNET for a loss: a fixed output, a gradient input, optional tagged levels
    (answering ``layer(sub, tagN)``), an input layer and a sample expansion factor."""

    def __init__(self, output, sample_expansion_factor=1, input_layer=None, tagged=None, template=None):
        self.output = resizable_tensor(*output.shape)
        self.output.assign(output)
        self.gradient_input = resizable_tensor(*output.shape)
        self.gradient_input.fill(0)
        self._sef = sample_expansion_factor
        self._input_layer = input_layer
        self.template = template
        self.tagged = [_loss_subnet(np.asarray(a, np.float64), sample_expansion_factor, input_layer, None, t)
                       for t, a in (tagged or {}).items()]

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.gradient_input

    def sample_expansion_factor(self):
        return self._sef

    def input_layer(self):
        return self._input_layer

    def layer_details(self):
        return None

    def subnet(self):
        raise ValueError("test_loss: the fake subnet has no deeper layers; pass tagged={tagN: array}")

    def _find(self, match):
        for level in [self, *self.tagged]:
            if match(level):
                return level
        return None

    def levels(self):
        return [self, *self.tagged]


def test_loss(loss, output, labels=None, *, x=None, tagged=None, input_layer=None,
              sample_expansion_factor=1, gradient_scale=1.0, rtol=1e-5, atol=1e-7) -> loss_test_results:
    """Check ``loss``'s gradient against central differences of its own value, in float64.

    ``output``: the subnet's output, a ``(N, k, nr, nc)`` array. ``labels``: as the loss takes
    them (``None`` for unsupervised losses). ``x``: the input tensor passed to the loss
    (default: a tensor shaped like ``output``). ``tagged``: ``{tag_template: array}`` for
    losses reading ``layer(sub, tagN)``. ``input_layer``: what ``sub.input_layer()`` returns.
    """
    with default_dtype(np.float64):
        sub = _loss_subnet(np.asarray(output, np.float64), sample_expansion_factor, input_layer, tagged)
        if x is None:
            x = resizable_tensor(*sub.output.shape)
            x.fill(0)

        def value():
            if labels is None:
                return float(loss.compute_loss_value_and_gradient(x, sub))
            return float(loss.compute_loss_value_and_gradient(x, labels, sub))

        levels = sub.levels()
        loss0 = value()
        written = [np.array(lv.gradient_input.host_read(), np.float64) for lv in levels]
        again = value()
        for lv, w in zip(levels, written):
            g2 = np.asarray(lv.gradient_input.host_read(), np.float64)
            if again != loss0 or not np.array_equal(g2, w):
                return loss_test_results(False, (
                    f"test_loss: {loss!r} is not deterministic or does not ASSIGN its gradient: a second "
                    f"call gave loss {again!r} (first {loss0!r}) and a gradient differing by up to "
                    f"{float(np.max(np.abs(g2 - w))):.6g}\n"), np.inf, loss0)

        worst = 0.0
        for level_index, (lv, w) in enumerate(zip(levels, written)):
            flat_w = w.reshape(-1)
            for i in range(lv.output.size()):
                data = lv.output.host().reshape(-1)
                old = data[i]
                h = 1e-6 * max(1.0, abs(float(old)))
                data[i] = old + h
                up = value()
                data = lv.output.host().reshape(-1)
                data[i] = old - h
                down = value()
                data = lv.output.host().reshape(-1)
                data[i] = old
                expected = gradient_scale * (up - down) / (2 * h)
                err = abs(float(flat_w[i]) - expected)
                worst = max(worst, err / (atol + rtol * abs(expected)))
                if err > atol + rtol * abs(expected):
                    where = "output" if level_index == 0 else f"tagged output {level_index - 1}"
                    idx = np.unravel_index(i, lv.output.shape)
                    return loss_test_results(False, (
                        f"test_loss: gradient error in {where} element {tuple(int(j) for j in idx)} of {loss!r}\n"
                        f"expected derivative: {expected:.12g} (gradient_scale {gradient_scale} x "
                        f"numerical d(loss)/d(output))\n"
                        f"written derivative:  {float(flat_w[i]):.12g}\n"), worst, loss0)
        return loss_test_results(True, "", worst, loss0)


test_loss.__test__ = False  # keep pytest from collecting it when imported into a test module
