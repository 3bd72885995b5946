"""PNG files by their names in dnnpy and dlib, through Pillow (:mod:`dnnpy.image.io`):

    dnnpy.image.png.write_png("out.png", image)     # image: H x W, H x W x 2, x 3 or x 4 uint8
    dnnpy.image.png.save_png(image, "out.png")      # dlib's name and argument order
    dnnpy.image.png.read_png("in.png")              # the file's own channels, uint8 or uint16
    dnnpy.image.png.decode_png(data)                # the same from the file's bytes
"""

from __future__ import annotations

import os

import numpy as np

from .io import PNG_SIGNATURE, encode_png, read_image, save_png

__all__ = ["write_png", "save_png", "read_png", "decode_png", "encode_png", "PNG_SIGNATURE"]


def write_png(path, image, compress_level: int = 6) -> str:
    """Write ``image`` (H x W gray, H x W x 2 gray+alpha, H x W x 3 RGB or H x W x 4 RGBA,
    uint8) to ``path`` as a PNG, atomically; returns the path."""
    return save_png(image, path, compress_level)


def read_png(path) -> np.ndarray:
    """A PNG file's own channels (``dnnpy.image.read_image``: H x W, H x W x 2, x 3 or x 4;
    uint8, or uint16 for 16-bit gray; a palette becomes RGB, or RGBA with transparency), as
    stored (no EXIF rotation). Raises ``OSError`` naming the path when it cannot be read,
    ``ValueError`` naming it for a file that is not a valid PNG."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OSError(f"read_png: cannot read {path}: {e.strerror or e}") from e
    return decode_png(data, path)


def decode_png(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """``read_png`` of a PNG file's bytes (``name`` is used in error messages)."""
    if bytes(data[:8]) != PNG_SIGNATURE:
        raise ValueError(f"read_png: {name} is not a PNG file (bad signature)")
    return read_image(bytes(data), name, respect_exif=False)
