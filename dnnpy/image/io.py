"""Image files: dlib's ``load_image`` (``load_rgb_image``, ``load_grayscale_image``,
``load_rgb_alpha_image`` of dlib's Python bindings), ``save_png`` and ``save_jpeg``.

The format is found from the file's first bytes, not its name. Pillow (the optional extra
``pip install "dnnpy[images]"``) reads every format when it is installed; without it dnnpy's own
PNG reader (:mod:`dnnpy.png`) reads PNG files and any other format raises an ``ImportError``
that says what to install. Both paths give the same arrays: the conversion to the requested
mode is dnnpy's own, following dlib's pixel assignment rules (``dlib/pixel.h``):

- ``"RGB"`` (H x W x 3): gray is replicated; gray+alpha drops the alpha; RGBA is composited
  over black as dlib does (``c * a >> 8``, and ``c`` itself where ``a == 255``).
- ``"L"`` (H x W): RGB becomes ``(r + g + b) // 3``; gray+alpha drops the alpha; RGBA gives
  ``((r + g + b) // 3) * a // 255`` (over black).
- ``"RGBA"`` (H x W x 4): images without alpha get alpha 255; gray+alpha is replicated.

16-bit samples become 8-bit by ``v >> 8`` (dlib saturates 16-bit gray at 255 and keeps the low
byte of 16-bit colour, which darkens or scrambles such files; dnnpy keeps their meaning).
EXIF orientation is applied by default (``respect_exif=True``; dlib ignores it: pass False for
dlib's pixels). Pillow reads it from JPEG, PNG, WebP ...; dnnpy's PNG reader from PNG's eXIf chunk.
"""

from __future__ import annotations

import importlib
import os

import numpy as np

from .. import png

__all__ = ["load_image", "load_rgb_image", "load_grayscale_image", "load_rgb_alpha_image",
           "save_png", "save_jpeg", "image_file_type", "pillow_available"]

_INSTALL = 'pip install "dnnpy[images]"'
_MODES = ("RGB", "L", "RGBA")


def _pillow():
    """Pillow's ``Image`` module, or None when Pillow is not installed (looked up once)."""
    if "image" not in _pillow_cache:
        try:
            _pillow_cache["image"] = importlib.import_module("PIL.Image")
        except ImportError:
            _pillow_cache["image"] = None
    return _pillow_cache["image"]


_pillow_cache: dict = {}


def pillow_available() -> bool:
    """Whether Pillow (the ``images`` extra) is installed, so that :func:`load_image` reads
    JPEG, BMP, GIF, WebP ... and :func:`save_jpeg` works."""
    return _pillow() is not None


def image_file_type(header: bytes) -> str:
    """The image format from a file's first bytes (16 are enough): ``"png"``, ``"jpeg"``,
    ``"bmp"``, ``"gif"``, ``"webp"``, ``"tiff"`` or ``"unknown"`` (dlib's ``image_file_type``)."""
    if header.startswith(png.PNG_SIGNATURE):
        return "png"
    if header.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if header.startswith(b"BM"):
        return "bmp"
    if header.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if header[:4] == b"RIFF" and header[8:12] == b"WEBP":
        return "webp"
    if header.startswith((b"II*\x00", b"MM\x00*")):
        return "tiff"
    return "unknown"


def _orient(a: np.ndarray, orientation: int) -> np.ndarray:
    """Applies an EXIF orientation (1..8) to an H x W [x C] array, as a viewer would."""
    ops = {2: lambda x: x[:, ::-1], 3: lambda x: x[::-1, ::-1], 4: lambda x: x[::-1],
           5: lambda x: x.swapaxes(0, 1), 6: lambda x: x.swapaxes(0, 1)[:, ::-1],
           7: lambda x: x.swapaxes(0, 1)[::-1, ::-1], 8: lambda x: x.swapaxes(0, 1)[::-1]}
    return np.ascontiguousarray(ops[orientation](a)) if orientation in ops else a


def _read_pillow(Image, path: str, respect_exif: bool) -> np.ndarray:
    """The file through Pillow, as gray, gray+alpha, RGB or RGBA; 8-bit or uint16."""
    with Image.open(path) as im:
        im.load()
        if respect_exif:
            ImageOps = importlib.import_module("PIL.ImageOps")
            im = ImageOps.exif_transpose(im)
        mode = im.mode
        if mode in ("L", "LA", "RGB", "RGBA"):
            return np.asarray(im)
        if mode.startswith("I;16") or mode == "I":
            return np.asarray(im).astype(np.uint32).clip(0, 65535).astype(np.uint16)
        if mode == "1":
            return np.asarray(im.convert("L"))
        has_alpha = mode in ("PA", "La") or "transparency" in im.info or mode.endswith("A")
        return np.asarray(im.convert("RGBA" if has_alpha else "RGB"))


def _to_mode(a: np.ndarray, mode: str) -> np.ndarray:
    """Gray / gray+alpha / RGB / RGBA (uint8 or uint16) -> the requested mode, dlib's rules."""
    if a.dtype == np.uint16:
        a = (a >> 8).astype(np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    c = a.shape[2]
    if mode == "RGBA":
        if c == 4:
            return np.ascontiguousarray(a)
        rgb = np.repeat(a[:, :, :1], 3, axis=2) if c in (1, 2) else a
        alpha = a[:, :, 1:2] if c == 2 else np.full(a.shape[:2] + (1,), 255, np.uint8)
        return np.concatenate([rgb, alpha], axis=2)
    if c == 4:
        alpha = a[:, :, 3:4].astype(np.int32)
        if mode == "RGB":  # dlib: dest(=0) += (src - dest) * alpha >> 8, exact where alpha = 255
            blended = (a[:, :, :3].astype(np.int32) * alpha) >> 8
            return np.where(alpha == 255, a[:, :, :3], blended).astype(np.uint8)
        avg = a[:, :, :3].astype(np.int32).sum(axis=2) // 3   # dlib: avg * alpha / 255
        return np.where(alpha[:, :, 0] == 255, avg, avg * alpha[:, :, 0] // 255).astype(np.uint8)
    if mode == "RGB":
        return np.ascontiguousarray(a) if c == 3 else np.repeat(a[:, :, :1], 3, axis=2)
    if c == 3:
        return (a.astype(np.int32).sum(axis=2) // 3).astype(np.uint8)
    return np.ascontiguousarray(a[:, :, 0])


def load_image(path, mode: str = "RGB", respect_exif: bool = True) -> np.ndarray:
    """dlib's ``load_image``: reads an image file into a uint8 numpy array.

    ``mode``: ``"RGB"`` (H x W x 3, the default; dlib's ``matrix<rgb_pixel>``), ``"L"``
    (H x W gray) or ``"RGBA"`` (H x W x 4). The format is found from the file's contents. PNG
    needs nothing beyond numpy; JPEG, BMP, GIF (first frame), WebP, TIFF need Pillow
    (``pip install "dnnpy[images]"``), which is used for every format when installed. See the
    module docstring for the conversion rules. Raises ``FileNotFoundError`` / ``OSError`` naming
    the path when it cannot be read, ``ValueError`` naming the path for a broken or unknown
    file, ``ImportError`` when the format needs Pillow and it is missing.
    """
    if mode not in _MODES:
        raise ValueError(f"load_image: mode must be one of {_MODES}, got {mode!r}")
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            header = f.read(16)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"load_image: no such file: {path}") from e
    except OSError as e:
        raise OSError(f"load_image: cannot read {path}: {e.strerror or e}") from e
    kind = image_file_type(header)
    Image = _pillow()
    if Image is not None:
        try:
            a = _read_pillow(Image, path, respect_exif)
        except (OSError, ValueError, SyntaxError) as e:  # Pillow's errors for broken files
            if kind == "unknown":
                raise ValueError(f"load_image: {path} is not an image file dnnpy can read "
                                 f"(unrecognised format; first bytes {header[:8]!r})") from e
            raise ValueError(f"load_image: cannot decode {path} ({kind}): {e}") from e
        return _to_mode(a, mode)
    if kind == "png":
        info: dict = {}
        with open(path, "rb") as f:
            a = png.decode_png(f.read(), path, info)
        if respect_exif:
            a = _orient(a, info["exif_orientation"])
        return _to_mode(a, mode)
    if kind == "unknown":
        raise ValueError(f"load_image: {path} is not an image file dnnpy can read "
                         f"(unrecognised format; first bytes {header[:8]!r})")
    raise ImportError(f"load_image: {path} is a {kind.upper()} file; reading it needs Pillow: "
                      f"{_INSTALL} (without it dnnpy reads PNG only)")


def load_rgb_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_rgb_image``: ``load_image(path, "RGB")``, H x W x 3 uint8."""
    return load_image(path, "RGB")


def load_grayscale_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_grayscale_image``: ``load_image(path, "L")``, H x W uint8."""
    return load_image(path, "L")


def load_rgb_alpha_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_rgb_alpha_image``: ``load_image(path, "RGBA")``, H x W x 4."""
    return load_image(path, "RGBA")


def save_png(img, path) -> str:
    """dlib's ``save_png(img, file_name)``: H x W, H x W x 2, x 3 (RGB) or x 4 (RGBA) uint8;
    no dependency beyond numpy. Returns the path."""
    return png.save_png(img, path)


def save_jpeg(img, path, quality: int = 75) -> str:
    """dlib's ``save_jpeg(img, file_name, quality=75)``: H x W or H x W x 3 uint8, through
    Pillow (``pip install "dnnpy[images]"``). Returns the path."""
    Image = _pillow()
    if Image is None:
        raise ImportError(f"save_jpeg: writing JPEG files needs Pillow: {_INSTALL} "
                          f"(save_png needs nothing)")
    a = np.asarray(img)
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)) or a.size == 0:
        raise ValueError(f"save_jpeg: expected a non-empty H x W or H x W x 3 uint8 image, got "
                         f"shape {a.shape} dtype {a.dtype}")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"save_jpeg: quality must be in [0, 100], got {quality}")
    path = os.fspath(path)
    Image.fromarray(np.ascontiguousarray(a)).save(path, format="JPEG", quality=int(quality))
    return path
