"""Moved to ``dnnpy.data.datasets``; this old path keeps working and warns (DeprecationWarning)."""

from ._moved import warn_moved
from .data.datasets import *  # noqa: F401,F403
from .data.datasets import __all__  # noqa: F401

warn_moved("dnnpy.datasets", "dnnpy.data.datasets")
