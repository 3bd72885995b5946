"""Image files: dlib's ``load_image`` (``load_rgb_image``, ``load_grayscale_image``,
``load_rgb_alpha_image`` of dlib's Python bindings), ``save_png`` and ``save_jpeg``, through
Pillow (a dependency of dnnpy, as numpy is).

The format is found from the file's first bytes, not its name. Pillow decodes every format
(PNG, JPEG, BMP, GIF, WebP, TIFF, ...); the conversion to the requested mode is dnnpy's own,
following dlib's pixel assignment rules (``dlib/pixel.h``):

- ``"RGB"`` (H x W x 3): gray is replicated; gray+alpha drops the alpha; RGBA is composited
  over black as dlib does (``c * a >> 8``, and ``c`` itself where ``a == 255``).
- ``"L"`` (H x W): RGB becomes ``(r + g + b) // 3``; gray+alpha drops the alpha; RGBA gives
  ``((r + g + b) // 3) * a // 255`` (over black).
- ``"RGBA"`` (H x W x 4): images without alpha get alpha 255; gray+alpha is replicated.

16-bit samples become 8-bit by ``v >> 8`` (dlib saturates 16-bit gray at 255 and keeps the low
byte of 16-bit colour, which darkens or scrambles such files; dnnpy keeps their meaning).
EXIF orientation is applied by default (``respect_exif=True``; dlib ignores it: pass False for
dlib's pixels).

A file is refused before it is decoded when its header declares more pixels than
``get_max_image_pixels()`` (Pillow's decompression-bomb limit, 89.5 M, by default;
``set_max_image_pixels`` changes it): a few hundred bytes can declare gigabytes of pixels.
"""

from __future__ import annotations

import io
import os
import warnings

import numpy as np

from ..atomic import atomic_write

__all__ = ["load_image", "load_rgb_image", "load_grayscale_image", "load_rgb_alpha_image",
           "save_png", "save_jpeg", "image_file_type", "pillow_available", "read_image",
           "get_max_image_pixels", "set_max_image_pixels", "encode_png", "save_image", "PNG_SIGNATURE"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MODES = ("RGB", "L", "RGBA")
_DEFAULT_MAX_PIXELS = 89_478_485      # Pillow's Image.MAX_IMAGE_PIXELS: 1024 * 1024 * 1024 // 4 // 3
_max_pixels = _DEFAULT_MAX_PIXELS


def _pillow():
    """Pillow's ``Image`` module (imported on first use: it is a dependency of dnnpy)."""
    try:
        from PIL import Image
    except ImportError as e:     # a broken install: Pillow is in dnnpy's requirements
        raise ImportError(f"dnnpy reads and writes images with Pillow, which is missing "
                          f"(pip install pillow): {e}") from e
    return Image


def pillow_available() -> bool:
    """Whether Pillow can be imported (it is a dependency of dnnpy, so True unless the
    install is broken)."""
    try:
        _pillow()
    except ImportError:
        return False
    return True


def get_max_image_pixels():
    """The most pixels (width x height) a file may declare for ``load_image`` to decode it,
    or None for no limit."""
    return _max_pixels


def set_max_image_pixels(limit):
    """Set the most pixels (width x height) an image file may declare (default 89,478,485,
    Pillow's decompression-bomb limit; about 9459 x 9459); None removes the limit. A file over
    it is refused from its header, before any decoding. The setting is process-wide and also
    raises Pillow's own ``PIL.Image.MAX_IMAGE_PIXELS`` to the limit when it is lower (Pillow
    refuses images over twice its limit by itself)."""
    global _max_pixels
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer))
                              or limit < 1):
        raise ValueError(f"set_max_image_pixels: the limit must be an integer >= 1 or None, got {limit!r}")
    _max_pixels = None if limit is None else int(limit)
    Image = _pillow()
    if _max_pixels is None or (Image.MAX_IMAGE_PIXELS is not None and Image.MAX_IMAGE_PIXELS < _max_pixels):
        Image.MAX_IMAGE_PIXELS = _max_pixels


def image_file_type(header: bytes) -> str:
    """The image format from a file's first bytes (16 are enough): ``"png"``, ``"jpeg"``,
    ``"bmp"``, ``"gif"``, ``"webp"``, ``"tiff"`` or ``"unknown"`` (dlib's ``image_file_type``)."""
    if header.startswith(PNG_SIGNATURE):
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


def read_image(source, name=None, respect_exif=True) -> np.ndarray:
    """An image file's own channels: H x W (gray), H x W x 2 (gray+alpha), H x W x 3 (RGB) or
    H x W x 4 (RGBA, also for a palette or key colour with transparency); uint8, or uint16
    for 16-bit gray. ``source``: a path, the file's bytes or a binary file object; ``name``
    (default: the path) names it in errors. Raises ``FileNotFoundError``/``OSError`` naming
    the path when it cannot be read, and ``ValueError`` naming the file for anything else: an
    unknown format (with its first bytes), a broken or truncated file, or more pixels than
    ``get_max_image_pixels()``."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _decode(io.BytesIO(source), name or "<bytes>", respect_exif)
    if hasattr(source, "read"):
        return _decode(source, name or getattr(source, "name", "<stream>"), respect_exif)
    path = os.fspath(source)
    try:
        f = open(path, "rb")
    except FileNotFoundError as e:
        raise FileNotFoundError(f"load_image: no such file: {path}") from e
    except OSError as e:
        raise OSError(f"load_image: cannot read {path}: {e.strerror or e}") from e
    with f:
        return _decode(f, name or path, respect_exif)


def _decode(f, name, respect_exif):
    Image = _pillow()
    header = f.read(16)
    f.seek(0)
    kind = image_file_type(header)
    try:
        with warnings.catch_warnings():      # over the limit is refused below, not warned of
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(f)
    except Image.DecompressionBombError as e:
        raise ValueError(f"load_image: {name} is over the pixel limit: {e} (a decompression "
                         f"bomb, or a very large image: dnnpy.image.set_max_image_pixels(n) "
                         f"raises the limit)") from None
    except Exception as e:  # noqa: BLE001 - Pillow's errors for an unknown or broken file
        if kind == "unknown":
            raise ValueError(f"load_image: {name} is not an image file dnnpy can read "
                             f"(unrecognised format; first bytes {header[:8]!r})") from e
        raise ValueError(f"load_image: cannot decode {name} ({kind}): {e}") from e
    with im:
        width, height = im.size
        if _max_pixels is not None and width * height > _max_pixels:
            raise ValueError(f"load_image: {name} is {width} x {height} = {width * height} pixels, "
                             f"over the limit of {_max_pixels} (a decompression bomb, or a very "
                             f"large image: dnnpy.image.set_max_image_pixels(n) raises the limit)")
        rawmode = im.tile[0][3] if im.tile and isinstance(im.tile[0][3], str) else ""
        try:
            im.load()
            return _channels(im, rawmode, respect_exif)
        except Exception as e:  # noqa: BLE001 - truncated data, a bad CRC, zlib errors ...
            raise ValueError(f"load_image: cannot decode {name} ({kind}): {type(e).__name__}: {e}") from e


def _channels(im, rawmode, respect_exif):
    """A loaded Pillow image as gray, gray+alpha, RGB or RGBA (8-bit; 16-bit gray as uint16),
    with a tRNS key colour as an alpha channel (as libpng's tRNS expansion, which dlib uses).
    ``rawmode``: how the file stores its samples (``"L;2"``, ``"LA;16B"`` ...)."""
    if respect_exif:
        from PIL import ImageOps
        im = ImageOps.exif_transpose(im)
    mode, key = im.mode, im.info.get("transparency")
    if mode == "1":
        im, mode = im.convert("L"), "L"
    if mode in ("L", "I;16", "I;16B", "I"):
        a = np.asarray(im)
        if mode != "L":
            a = a.astype(np.uint32).clip(0, 65535).astype(np.uint16)
        if isinstance(key, int):     # Pillow keeps a 2- or 4-bit key in the file's units
            top = np.iinfo(a.dtype).max
            key *= {"L;2": 85, "L;4": 17}.get(rawmode, 1)
            return np.stack([a, np.where(a == key, 0, top).astype(a.dtype)], axis=2)
        return a
    if mode == "RGBA" and rawmode == "LA;16B":   # Pillow widens 16-bit gray+alpha to RGBA
        return np.ascontiguousarray(np.asarray(im)[:, :, [0, 3]])
    if mode in ("LA", "RGBA") or (mode == "RGB" and key is None):
        return np.asarray(im)
    if mode == "RGB" and rawmode.endswith(";16B"):   # 16-bit key, 8-bit samples (high bytes)
        a = np.asarray(im)
        return np.concatenate([a, np.where((a == np.array(key) >> 8).all(axis=2, keepdims=True),
                                           0, 255).astype(np.uint8)], axis=2)
    has_alpha = key is not None or mode in ("PA", "La") or mode.endswith("A")
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
    (H x W gray) or ``"RGBA"`` (H x W x 4). The format is found from the file's contents
    (PNG, JPEG, BMP, GIF: its first frame, WebP, TIFF ...). See the module docstring for the
    conversion rules. Raises ``FileNotFoundError`` / ``OSError`` naming the path when it
    cannot be read, ``ValueError`` naming the path for a broken, unknown or over-large file
    (``read_image``).
    """
    if mode not in _MODES:
        raise ValueError(f"load_image: mode must be one of {_MODES}, got {mode!r}")
    return _to_mode(read_image(path, respect_exif=respect_exif), mode)


def load_rgb_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_rgb_image``: ``load_image(path, "RGB")``, H x W x 3 uint8."""
    return load_image(path, "RGB")


def load_grayscale_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_grayscale_image``: ``load_image(path, "L")``, H x W uint8."""
    return load_image(path, "L")


def load_rgb_alpha_image(path) -> np.ndarray:
    """dlib-bin's ``dlib.load_rgb_alpha_image``: ``load_image(path, "RGBA")``, H x W x 4."""
    return load_image(path, "RGBA")


_PNG_CHANNELS = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _checked_png_image(image, op):
    """``image`` as a C-contiguous H x W x C uint8 array (C = 1 to 4), or a clear error."""
    a = np.asarray(image)
    if a.dtype != np.uint8:
        raise TypeError(f"{op}: the image must be uint8, got dtype {a.dtype} "
                        f"(scale and convert it first, e.g. np.clip(x, 0, 255).astype(np.uint8))")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in _PNG_CHANNELS:
        raise ValueError(f"{op}: expected an H x W (gray), H x W x 2 (gray+alpha), H x W x 3 (RGB) "
                         f"or H x W x 4 (RGBA) array, got shape {np.asarray(image).shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{op}: the image is empty (shape {np.asarray(image).shape})")
    return np.ascontiguousarray(a)


def encode_png(image, compress_level: int = 6) -> bytes:
    """The bytes of a PNG file holding ``image`` (H x W, or H x W x C uint8 with C = 2, 3, 4)."""
    a = _checked_png_image(image, "encode_png")
    im = _pillow().fromarray(a[:, :, 0] if a.shape[2] == 1 else a, _PNG_CHANNELS[a.shape[2]])
    out = io.BytesIO()
    im.save(out, format="PNG", compress_level=int(compress_level))
    return out.getvalue()


def save_png(img, path, compress_level: int = 6) -> str:
    """dlib's ``save_png(img, file_name)``: H x W, H x W x 2, x 3 (RGB) or x 4 (RGBA) uint8.
    Written atomically (a temporary file renamed over ``path``: a reader never sees half a
    file). Returns the path."""
    data = encode_png(img, compress_level)
    path = os.fspath(path)
    atomic_write(path, data)
    return path


def save_jpeg(img, path, quality: int = 75) -> str:
    """dlib's ``save_jpeg(img, file_name, quality=75)``: H x W or H x W x 3 uint8, written
    atomically. Returns the path."""
    a = np.asarray(img)
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)) or a.size == 0:
        raise ValueError(f"save_jpeg: expected a non-empty H x W or H x W x 3 uint8 image, got "
                         f"shape {a.shape} dtype {a.dtype}")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"save_jpeg: quality must be in [0, 100], got {quality}")
    out = io.BytesIO()
    _pillow().fromarray(np.ascontiguousarray(a)).save(out, format="JPEG", quality=int(quality))
    path = os.fspath(path)
    atomic_write(path, out.getvalue())
    return path


_SAVE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".webp": "WEBP"}


def save_image(img, path) -> str:
    """dlib's Python ``save_image(img, filename)``: the format from the file name's extension
    (``.png``, ``.jpg``/``.jpeg``, ``.bmp``, ``.webp``); H x W or H x W x 3 uint8 (x 4 for PNG
    and WebP too). Written atomically; returns the path."""
    path = os.fspath(path)
    fmt = _SAVE_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise ValueError(f"save_image: {path}: the extension must be one of {sorted(_SAVE_FORMATS)}")
    if fmt == "PNG":
        return save_png(img, path)
    if fmt == "JPEG":
        return save_jpeg(img, path)
    a = _checked_png_image(img, "save_image")
    out = io.BytesIO()
    _pillow().fromarray(a[:, :, 0] if a.shape[2] == 1 else a, _PNG_CHANNELS[a.shape[2]]).save(out, format=fmt)
    atomic_write(path, out.getvalue())
    return path
