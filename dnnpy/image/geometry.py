"""Moved to ``dnnpy.image.interpolation`` (dlib's image_transforms/interpolation.h); this old
path keeps working and warns (DeprecationWarning)."""

from .._moved import warn_moved
from .interpolation import *  # noqa: F401,F403
from .interpolation import __all__  # noqa: F401

warn_moved("dnnpy.image.geometry", "dnnpy.image.interpolation")
