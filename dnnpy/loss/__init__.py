"""Loss layers, one module per family; this package re-exports them all.

Contract (dlib's EXAMPLE_LOSS_LAYER_): ``compute_loss_value_and_gradient(x, [labels,] sub)``
returns the loss and ASSIGNS its gradient to ``sub.get_gradient_input()``; ``to_label(x, sub)``
turns the net's output into labels. See ``dnnpy/loss/base.py``.

Modules:

- ``_logistic.py``: numerics and checks shared by the classification and per-pixel losses
- ``_serialize.py``: helpers for the losses' ``serialize`` / ``deserialize`` methods
- ``base.py``: what loss layers share (the contract above)
- ``classification.py``: classification losses on ``(N, k, 1, 1)`` outputs (hinge, log,
  multiclass, ...)
- ``metric.py``: ``loss_metric_``, ``loss_ranking_`` and ``loss_barlow_twins_``
- ``mmod.py``: ``loss_mmod_``, the max-margin object detection loss
- ``mmod_options.py``: ``mmod_options``, the detector windows and settings of ``loss_mmod_``
- ``per_pixel.py``: per-pixel losses on ``(N, k, nr, nc)`` outputs
- ``regression.py``: regression losses: the mean squared family, epsilon-insensitive, dot
- ``yolo.py``: ``loss_yolo_``, with ``yolo_options`` and ``yolo_rect``
"""

from .base import loss_layer
from .classification import *  # noqa: F401,F403
from .classification import __all__ as _classification_all
from .per_pixel import *  # noqa: F401,F403
from .per_pixel import __all__ as _per_pixel_all
from .regression import *  # noqa: F401,F403
from .regression import __all__ as _regression_all
from .metric import *  # noqa: F401,F403
from .metric import __all__ as _metric_all
from .mmod import *  # noqa: F401,F403
from .mmod import __all__ as _mmod_all
from .yolo import *  # noqa: F401,F403
from .yolo import __all__ as _yolo_all

__all__ = ["loss_layer", *_classification_all, *_per_pixel_all, *_regression_all, *_metric_all,
           *_mmod_all, *_yolo_all]
