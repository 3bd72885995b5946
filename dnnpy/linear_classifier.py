"""Moved to ``dnnpy.data.linear_classifier``; this old path keeps working and warns (DeprecationWarning)."""

from ._moved import warn_moved
from .data.linear_classifier import *  # noqa: F401,F403
from .data.linear_classifier import __all__  # noqa: F401

warn_moved("dnnpy.linear_classifier", "dnnpy.data.linear_classifier")
