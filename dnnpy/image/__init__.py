"""dlib's image tools around the nets (issue 13): numpy images (``HxW`` or ``HxWx3`` uint8,
RGB), dlib's names and dlib's geometry types (``dnnpy.geometry``). One module per concept."""

__all__ = []
