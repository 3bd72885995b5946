"""dlib's image tools around the nets (issue 13): numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept."""

__all__ = []

from .colors import (apply_random_color_offset, color_transform, disturb_colors,
                     random_color_transform)

__all__ += ["color_transform", "random_color_transform", "disturb_colors",
            "apply_random_color_offset"]
