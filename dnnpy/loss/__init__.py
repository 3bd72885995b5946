"""Loss layers, one module per family; this package re-exports them all.

Contract (dlib's EXAMPLE_LOSS_LAYER_): ``compute_loss_value_and_gradient(x, [labels,] sub)``
returns the loss and ASSIGNS its gradient to ``sub.get_gradient_input()``; ``to_label(x, sub)``
turns the net's output into labels. See ``dnnpy/loss/base.py``.
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
