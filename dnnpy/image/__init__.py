"""dlib's image tools around the nets: numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``), one module per concept.
dlib's ``shape_predictor`` is ``dnnpy.landmarks``.

Modules:

- ``checks.py``: the image checks shared by dlib's Python API readers: 8-bit grey or RGB
- ``chips.py``: image chips: ``extract_image_chip(s)``, ``get_face_chip_details``, ...
- ``colors.py``: colour jitter for training data (``random_color_transform``,
  ``disturb_colors``)
- ``draw.py``: drawing on numpy images, tiling, colour maps (instead of ``image_window``)
- ``fhog.py``: ``extract_fhog_features``, dlib's HOG features
- ``geometry.py``: old path of ``interpolation.py`` (still works, with a DeprecationWarning)
- ``interpolation.py``: whole-image geometry: flips, rotation, letterboxing, ``pyramid_up``,
  upsampling
- ``io.py``: image files: ``load_image``, ``save_png``, ``save_jpeg`` (through Pillow)
- ``jitter.py``: ``jitter_image``, a slightly moved, scaled, turned, maybe mirrored copy
- ``matrix_la.py``: dlib's own SVD and ``pinv``, behind the transforms
- ``png.py``: PNG files by their dnnpy and dlib names, through Pillow
- ``pyramid.py``: image pyramids: ``pyramid_down<N>``, tiled pyramids and their maps
- ``random_cropper.py``: ``random_cropper``, random training crops with their boxes
- ``resize.py``: dlib's bilinear ``resize_image``, bit for bit
- ``transforms.py``: point transforms and the image sampling (interpolation) built on them
"""

from . import chips as _chips, colors as _colors, draw as _draw, fhog as _fhog, interpolation as _interpolation, io as _io
from . import jitter as _jitter, pyramid as _pyramid, random_cropper as _random_cropper
from . import resize as _resize, transforms as _transforms
from .chips import *  # noqa: F401,F403
from .colors import *  # noqa: F401,F403
from .draw import *  # noqa: F401,F403
from .fhog import *  # noqa: F401,F403
from .interpolation import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .jitter import *  # noqa: F401,F403
from .pyramid import *  # noqa: F401,F403
from .random_cropper import *  # noqa: F401,F403
from .resize import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403

__all__ = [*_io.__all__, *_draw.__all__, *_transforms.__all__, *_chips.__all__, *_colors.__all__,
           *_interpolation.__all__, *_jitter.__all__, *_random_cropper.__all__, *_resize.__all__, *_pyramid.__all__,
           *_fhog.__all__]
