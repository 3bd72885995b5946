"""Input layers: convert a batch of Python/numpy objects into a network's input tensor.

One module per family; this package re-exports them all (the template parser registers
every input layer class it finds here)."""

from .base import *  # noqa: F401,F403
from .base import __all__ as _base_all
from .images import *  # noqa: F401,F403
from .images import __all__ as _images_all
from .pyramid import *  # noqa: F401,F403
from .pyramid import __all__ as _pyramid_all

__all__ = [*_base_all, *_images_all, *_pyramid_all]
