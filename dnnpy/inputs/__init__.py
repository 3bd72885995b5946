"""Input layers: convert a batch of Python/numpy objects into a network's input tensor.

One module per family; this package re-exports them all (the template parser registers
every input layer class it finds here).

Modules:

- ``base.py``: the input layer base and dlib's basic input layers (``input_rgb_image``,
  ``input_tensor``, matrix inputs)
- ``images.py``: more of dlib's image input layers (sized images, image pairs, arrays)
- ``pyramid.py``: the pyramid input layers (``input_rgb_image_pyramid``,
  ``input_grayscale_image_pyramid``)
"""

from .base import *  # noqa: F401,F403
from .base import __all__ as _base_all
from .images import *  # noqa: F401,F403
from .images import __all__ as _images_all
from .pyramid import *  # noqa: F401,F403
from .pyramid import __all__ as _pyramid_all

__all__ = [*_base_all, *_images_all, *_pyramid_all]
