"""dlib's image tools around the nets (issue 13): numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept."""

from .draw import (colormap_jet, draw_line, draw_rectangle, jet, join_cols, join_rows, overlay,
                   tile_image_grid, tile_images)
from .io import (image_file_type, load_grayscale_image, load_image, load_rgb_alpha_image,
                 load_rgb_image, pillow_available, save_jpeg, save_png)

__all__ = []
__all__ += ["load_image", "load_rgb_image", "load_grayscale_image", "load_rgb_alpha_image",
            "save_png", "save_jpeg", "image_file_type", "pillow_available"]
__all__ += ["draw_line", "draw_rectangle", "tile_images", "tile_image_grid", "join_rows",
            "join_cols", "colormap_jet", "jet", "overlay"]
