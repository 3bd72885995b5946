"""Visitors and whole-net utilities (dlib's ``visit_*``, ``count_parameters``,
``fuse_layers``, ``net_to_xml``, ...), one module per concept, re-exported here.

Modules:

- ``export.py``: a net's structure as ``net_to_xml`` and ``net_to_dot``
- ``fuse.py``: normalisation and inference fusion: ``fuse_layers``,
  ``disable_duplicative_biases``, ...
- ``inference.py``: ``inference_copy`` and ``recompute_bn_running_stats``
- ``maps.py``: mapping points between a net's input and output tensors
- ``multipliers.py``: per-layer learning-rate and weight-decay multiplier functions
- ``walk.py``: walking a net: ``visit_layers*``, ``count_parameters``, multiplier setters
"""

from .walk import *  # noqa: F401,F403
from .walk import __all__ as _walk_all
from .export import *  # noqa: F401,F403
from .export import __all__ as _export_all
from .fuse import *  # noqa: F401,F403
from .fuse import __all__ as _fuse_all
from ..core.transfer import copy_net_as, copy_subnet
from .maps import *  # noqa: F401,F403
from .maps import __all__ as _maps_all
from .inference import *  # noqa: F401,F403
from .inference import __all__ as _inference_all
from .multipliers import *  # noqa: F401,F403
from .multipliers import __all__ as _multipliers_all

__all__ = [*_walk_all, *_export_all, *_fuse_all, "copy_subnet", "copy_net_as", *_maps_all, *_inference_all,
           *_multipliers_all]
