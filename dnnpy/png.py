"""Moved to ``dnnpy.image.png``; this old path keeps working and warns (DeprecationWarning)."""

from ._moved import warn_moved
from .image.png import *  # noqa: F401,F403
from .image.png import __all__  # noqa: F401

warn_moved("dnnpy.png", "dnnpy.image.png")
