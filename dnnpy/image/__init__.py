"""dlib's image tools around the nets (issue 13): numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept."""

from . import chips as _chips, transforms as _transforms
from .chips import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403

__all__ = _transforms.__all__ + _chips.__all__
