"""dlib's image tools around the nets (issue 13): numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept."""

from .io import (image_file_type, load_grayscale_image, load_image, load_rgb_alpha_image,
                 load_rgb_image, pillow_available, save_jpeg, save_png)

__all__ = []
__all__ += ["load_image", "load_rgb_image", "load_grayscale_image", "load_rgb_alpha_image",
            "save_png", "save_jpeg", "image_file_type", "pillow_available"]
