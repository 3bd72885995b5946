"""What loss layers share. A loss is the top of a net:
``compute_loss_value_and_gradient(x, labels, sub)`` returns the loss and ASSIGNS the gradient
of the loss to ``sub.get_gradient_input()`` (which the net zero-fills, so entries with a zero
gradient may be left alone); ``to_label(x, sub)`` turns the net's output into labels.

Labels are natural Python/numpy values, one per input sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["loss_layer", "named_loss"]


class loss_layer:
    """Base class of loss details.

    ``distributed_reduction`` says how data-parallel training combines the ranks' chunks
    (``dnnpy.training.data_parallel``): "mean" (the loss and its gradient are means over the
    samples: weight each chunk by its share), "sum" (gradients per sample, not divided by
    N), "gather" (the loss couples the samples: compute it on the gathered outputs).

    Serialization (dlib's ``serialize``/``deserialize`` friends): a loss without fields writes
    only its version string, which for those losses is the class name (``loss_mean_squared_``);
    losses with fields override both methods."""

    distributed_reduction = "mean"

    def serialize(self, w) -> None:
        w.string(type(self).__name__)

    def deserialize(self, r) -> None:
        r.expect_string(type(self).__name__)

    def _check_labels(self, name, x, sub, labels):
        n = sub.get_output().num_samples()
        labels = list(labels) if not isinstance(labels, np.ndarray) else labels
        sef = sub.sample_expansion_factor() or 1
        if len(labels) * sef != n:
            raise ValueError(f"{name}: got {len(labels)} labels for {n // sef} input samples")
        return labels

    # -- ONNX export (dnnpy.onnx.export) -------------------------------------------------
    _onnx_heads = ()   # the extra outputs the loss can compute in the graph: "labels", "probabilities"

    def to_onnx(self, g, x, outputs):
        """The graph outputs ``[(name, value)]`` for the requested ``outputs``: "scores" is
        the subnet's output, which this loss reads (a pass-through); a loss listed in
        ``_onnx_heads`` adds "labels" / "probabilities" with ``_onnx_head``. Decoding that is
        no tensor op (detections, metric thresholds) stays outside the graph."""
        result = []
        for what in outputs:
            if what == "scores":
                result.append(("scores", x))
            elif what in self._onnx_heads:
                result.append((what, self._onnx_head(g, x, what)))
            else:
                have = ", ".join(repr(h) for h in ("scores",) + tuple(self._onnx_heads))
                g.refuse(f"it has no in-graph {what!r} output (it has {have}); decode the scores with the "
                         f"loss's to_label outside the graph")
        return result

    def _onnx_head(self, g, x, what):
        raise NotImplementedError


class named_loss(loss_layer):
    """repr / to_xml of a loss without fields: dlib prints its name without the ``_``
    (``_printed``)."""

    _printed = ""

    def __repr__(self):
        return self._printed

    def to_xml(self):
        return f"<{self._printed}/>\n"
