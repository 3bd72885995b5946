"""Visitors and whole-net utilities (dlib's ``visit_*``, ``count_parameters``,
``fuse_layers``, ``net_to_xml``, ...), one module per concept, re-exported here."""

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
