"""Moved to ``dnnpy.training.statistics``; this old path keeps working and warns (DeprecationWarning)."""

from ._moved import warn_moved
from .training.statistics import *  # noqa: F401,F403
from .training.statistics import __all__  # noqa: F401

warn_moved("dnnpy.statistics", "dnnpy.training.statistics")
