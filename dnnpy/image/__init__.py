"""dlib's image tools around the nets: numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept:
``io`` (image files), ``draw`` (drawing, tiling, colour maps), ``transforms`` (point
transforms and interpolation; ``matrix_la``, dlib's own SVD and pinv behind them),
``chips`` (chip extraction), ``fhog`` (dlib's HOG features), ``colors`` (colour jitter), ``resize`` (``resize_image``),
``pyramid`` (``pyramid_down``, tiled pyramids), ``geometry`` (flips, rotation, letterboxing,
upsampling), ``jitter`` (``jitter_image``), ``random_cropper`` (random training crops with
their boxes). dlib's ``shape_predictor`` is ``dnnpy.landmarks``."""

from . import chips as _chips, colors as _colors, draw as _draw, fhog as _fhog, geometry as _geometry, io as _io
from . import jitter as _jitter, pyramid as _pyramid, random_cropper as _random_cropper
from . import resize as _resize, transforms as _transforms
from .chips import *  # noqa: F401,F403
from .colors import *  # noqa: F401,F403
from .draw import *  # noqa: F401,F403
from .fhog import *  # noqa: F401,F403
from .geometry import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .jitter import *  # noqa: F401,F403
from .pyramid import *  # noqa: F401,F403
from .random_cropper import *  # noqa: F401,F403
from .resize import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403

__all__ = [*_io.__all__, *_draw.__all__, *_transforms.__all__, *_chips.__all__, *_colors.__all__,
           *_geometry.__all__, *_jitter.__all__, *_random_cropper.__all__, *_resize.__all__, *_pyramid.__all__,
           *_fhog.__all__]
