"""A tiny PNG writer (and reader for the files it writes): uint8 gray or RGB arrays, zlib only.

    dnnpy.png.write_png("out.png", image)     # image: H x W (gray) or H x W x 3 (RGB) uint8
    dnnpy.png.tile_images(rows)               # a grid of equally sized images, for examples

No dependency beyond numpy and the standard library. Files are 8-bit, non-interlaced,
every scanline with filter type 0 (none): simple and valid; zlib does the compressing.
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

__all__ = ["write_png", "read_png", "encode_png", "tile_images"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 3: 2}  # channels -> PNG colour type (0: gray, 2: RGB)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def _as_image(image) -> np.ndarray:
    """Checks ``image`` and returns it as a C-contiguous H x W x C uint8 array (C = 1 or 3)."""
    a = np.asarray(image)
    if a.dtype != np.uint8:
        raise TypeError(f"write_png: the image must be uint8, got dtype {a.dtype} "
                        f"(scale and convert it first, e.g. np.clip(x, 0, 255).astype(np.uint8))")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in _COLOR_TYPES:
        raise ValueError(f"write_png: expected an H x W (gray) or H x W x 3 (RGB) array, "
                         f"got shape {np.asarray(image).shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"write_png: the image is empty (shape {np.asarray(image).shape})")
    return np.ascontiguousarray(a)


def encode_png(image, compress_level: int = 6) -> bytes:
    """The bytes of a PNG file holding ``image`` (H x W or H x W x 3 uint8)."""
    a = _as_image(image)
    h, w, c = a.shape
    header = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPES[c], 0, 0, 0)
    # each scanline: one filter-type byte (0 = none), then the row's bytes
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * c)], axis=1)
    return (PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), compress_level))
            + _chunk(b"IEND", b""))


def write_png(path, image, compress_level: int = 6) -> str:
    """Writes ``image`` (H x W gray or H x W x 3 RGB, uint8) to ``path`` as a PNG; returns the
    path. The file is written to a temporary name and renamed, so a reader never sees half a
    file."""
    data = encode_png(image, compress_level)
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def read_png(path) -> np.ndarray:
    """Reads back a PNG written by :func:`write_png` (8-bit gray or RGB, non-interlaced, any
    of the five scanline filters). Returns H x W or H x W x 3 uint8. Raises ``ValueError``
    for anything else."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != PNG_SIGNATURE:
        raise ValueError(f"read_png: {path!s} is not a PNG file (bad signature)")
    pos, ihdr, idat = 8, None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError(f"read_png: {path!s} is truncated in chunk {kind!r}")
        if struct.unpack(">I", crc)[0] != zlib.crc32(kind + body) & 0xFFFFFFFF:
            raise ValueError(f"read_png: {path!s}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise ValueError(f"read_png: {path!s} has no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError(f"read_png: only 8-bit gray/RGB non-interlaced PNGs are supported "
                         f"(bit depth {depth}, colour type {ctype}, interlace {interlace})")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    stride = w * channels
    if raw.size != h * (stride + 1):
        raise ValueError(f"read_png: {path!s}: image data has {raw.size} bytes, "
                         f"expected {h * (stride + 1)}")
    rows = raw.reshape(h, stride + 1)
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):  # undo the per-scanline filters (rows depend on the previous one)
        ftype, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) & 255
        elif ftype in (1, 3, 4):
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                left = cur[x - channels] if x >= channels else 0
                up = prev[x]
                if ftype == 1:
                    pred = left
                elif ftype == 3:
                    pred = (left + up) // 2
                else:
                    ul = prev[x - channels] if x >= channels else 0
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                cur[x] = (line[x] + pred) & 255
        else:
            raise ValueError(f"read_png: {path!s}: unknown filter type {ftype} in row {y}")
        out[y] = cur
        prev = cur
    img = out.astype(np.uint8).reshape(h, w, channels)
    return img[:, :, 0] if channels == 1 else img


def tile_images(rows, pad: int = 2, background: int = 255) -> np.ndarray:
    """A grid image from ``rows``: a list of rows, each a list of equally shaped uint8 images
    (H x W or H x W x 3), with ``pad`` pixels of ``background`` between and around them."""
    rows = [[_as_image(im) for im in row] for row in rows]
    if not rows or not rows[0]:
        raise ValueError("tile_images: no images given")
    h, w, c = rows[0][0].shape
    for r, row in enumerate(rows):
        for i, im in enumerate(row):
            if im.shape != (h, w, c):
                raise ValueError(f"tile_images: image [{r}][{i}] has shape {im.shape}, "
                                 f"expected {(h, w, c)} like image [0][0]")
    ncols = max(len(row) for row in rows)
    grid = np.full((pad + len(rows) * (h + pad), pad + ncols * (w + pad), c), background, np.uint8)
    for r, row in enumerate(rows):
        for i, im in enumerate(row):
            y, x = pad + r * (h + pad), pad + i * (w + pad)
            grid[y:y + h, x:x + w] = im
    return grid[:, :, 0] if c == 1 else grid
