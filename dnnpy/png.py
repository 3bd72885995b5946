"""PNG files with numpy and zlib only: a writer (8-bit gray, gray+alpha, RGB, RGBA) and a general
reader (every colour type and bit depth, the five scanline filters, Adam7 interlacing, tRNS).

    dnnpy.png.write_png("out.png", image)     # image: H x W, H x W x 2, x 3 or x 4 uint8
    dnnpy.png.save_png(image, "out.png")      # dlib's name and argument order
    dnnpy.png.read_png("in.png")              # the file's own channels, uint8 or uint16

This is the no-dependency path of :func:`dnnpy.image.load_image` (which uses Pillow when it is
installed). The writer emits non-interlaced files, every scanline with filter 0 (none); zlib does
the compressing. The reader undoes the filters of a whole image at once along its anti-diagonals
(a pixel depends on its left, upper and upper-left neighbours only, so every pixel of one
anti-diagonal can be decoded together): about H + W numpy steps per image, not one per byte.
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

__all__ = ["write_png", "save_png", "read_png", "decode_png", "encode_png", "PNG_SIGNATURE"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type
# colour type -> samples per pixel, allowed bit depths
_CTYPE_INFO = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (1, (1, 2, 4, 8)),
               4: (2, (8, 16)), 6: (4, (8, 16))}
# Adam7 passes: (x0, y0, dx, dy)
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def _as_image(image, op: str = "write_png") -> np.ndarray:
    """Checks ``image`` and returns it as a C-contiguous H x W x C uint8 array (C = 1 to 4)."""
    a = np.asarray(image)
    if a.dtype != np.uint8:
        raise TypeError(f"{op}: the image must be uint8, got dtype {a.dtype} "
                        f"(scale and convert it first, e.g. np.clip(x, 0, 255).astype(np.uint8))")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in _COLOR_TYPES:
        raise ValueError(f"{op}: expected an H x W (gray), H x W x 2 (gray+alpha), H x W x 3 (RGB) "
                         f"or H x W x 4 (RGBA) array, got shape {np.asarray(image).shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{op}: the image is empty (shape {np.asarray(image).shape})")
    return np.ascontiguousarray(a)


def encode_png(image, compress_level: int = 6) -> bytes:
    """The bytes of a PNG file holding ``image`` (H x W, or H x W x C uint8 with C = 2, 3, 4)."""
    a = _as_image(image)
    h, w, c = a.shape
    header = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPES[c], 0, 0, 0)
    # each scanline: one filter-type byte (0 = none), then the row's bytes
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * c)], axis=1)
    return (PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), compress_level))
            + _chunk(b"IEND", b""))


def write_png(path, image, compress_level: int = 6) -> str:
    """Writes ``image`` (H x W gray, H x W x 2 gray+alpha, H x W x 3 RGB or H x W x 4 RGBA,
    uint8) to ``path`` as a PNG; returns the path. The file is written to a temporary name and
    renamed, so a reader never sees half a file."""
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


def save_png(image, path, compress_level: int = 6) -> str:
    """dlib's ``save_png(img, file_name)``: :func:`write_png` with dlib's argument order."""
    return write_png(path, image, compress_level)


def read_png(path) -> np.ndarray:
    """Reads any valid PNG file. Returns its own channels: H x W (gray), H x W x 2 (gray+alpha),
    H x W x 3 (RGB) or H x W x 4 (RGBA); see :func:`decode_png` for depths, palettes and tRNS.
    Raises ``OSError`` naming the path when it cannot be read, ``ValueError`` naming the path
    (and the chunk) for a broken file."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OSError(f"read_png: cannot read {path}: {e.strerror or e}") from e
    return decode_png(data, path)


# ----------------------------------------------------------------------------------------
# decoding

def _chunks(data: bytes, name: str):
    """Yields (kind, body) for each chunk after the signature, CRC-checked, until IEND."""
    pos = 8
    while True:
        if pos + 8 > len(data):
            raise ValueError(f"read_png: {name} is truncated (no IEND chunk)")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError(f"read_png: {name} is truncated in chunk {kind.decode('latin-1')!r}")
        if struct.unpack(">I", crc)[0] != zlib.crc32(kind + body) & 0xFFFFFFFF:
            raise ValueError(f"read_png: {name}: bad CRC in chunk {kind.decode('latin-1')!r} "
                             f"at byte {pos} (the file is corrupt)")
        yield kind, body
        if kind == b"IEND":
            return
        pos += 12 + length


def _unfilter(filt: np.ndarray, bpp: int, name: str) -> np.ndarray:
    """Undoes the scanline filters. ``filt``: (H, 1 + stride) uint8, each row a filter-type byte
    and the filtered bytes; ``bpp``: bytes per complete pixel (at least 1). Returns
    (H, stride) uint8."""
    h = filt.shape[0]
    ftype = filt[:, 0]
    bad = np.flatnonzero(ftype > 4)
    if bad.size:
        raise ValueError(f"read_png: {name}: unknown filter type {ftype[bad[0]]} in row {bad[0]}")
    raw = filt[:, 1:]
    stride = raw.shape[1]
    if h == 0 or stride == 0:
        return raw.copy()
    if not np.any(ftype >= 3):
        # none, sub and up only: each row is a cumulative sum (sub) plus the row above (up)
        out = np.empty_like(raw)
        prev = np.zeros(stride, np.uint8)
        for y in range(h):  # rows depend on the previous one; each row is one numpy step
            t = ftype[y]
            if t == 0:
                out[y] = raw[y]
            elif t == 2:
                np.add(raw[y], prev, out=out[y])  # uint8 arithmetic wraps modulo 256
            else:
                out[y] = np.cumsum(raw[y].reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
            prev = out[y]
        return out
    # Average and Paeth: a pixel needs its decoded left neighbour. Skew the image so that
    # anti-diagonal k of pixels (y + x = k) becomes column k: S[y, k] = pixel (y, k - y).
    # Then left = S[y, k-1], up = S[y-1, k-1], upper-left = S[y-1, k-2]: plain slices.
    p = stride // bpp
    raw3 = raw.reshape(h, p, bpp).astype(np.int16)
    ncol = h + p - 1
    ys = np.arange(h)[:, None]
    cols = ys + np.arange(p)[None, :]                      # (h, p): column of pixel (y, x)
    skew_raw = np.zeros((h, ncol, bpp), np.int16)
    skew_raw[ys, cols] = raw3
    # decoded values, with a zero row above (y = -1) and two zero columns left (k = -2, -1)
    s = np.zeros((h + 1, ncol + 2, bpp), np.int16)
    ft = ftype.astype(np.int16)[:, None]
    for k in range(ncol):  # H + W - 1 steps, each over one anti-diagonal
        y0, y1 = max(0, k - p + 1), min(h, k + 1)   # the rows whose pixel x = k - y exists
        a = s[1 + y0:1 + y1, k + 1]                  # left
        b = s[y0:y1, k + 1]                          # up
        c = s[y0:y1, k]                              # upper left
        t = ft[y0:y1]
        pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        pred = np.where(t == 4, paeth, np.where(t == 3, (a + b) >> 1,
                        np.where(t == 2, b, np.where(t == 1, a, 0))))
        s[1 + y0:1 + y1, k + 2] = (skew_raw[y0:y1, k] + pred) & 255
    return s[1 + ys, 2 + cols].astype(np.uint8).reshape(h, stride)


def _samples(rows: np.ndarray, width: int, nsamp: int, depth: int) -> np.ndarray:
    """Unfiltered rows (H, stride) -> (H, width, nsamp) samples (uint8, or uint16 at depth 16)."""
    h = rows.shape[0]
    if depth == 8:
        return rows[:, :width * nsamp].reshape(h, width, nsamp)
    if depth == 16:
        return rows[:, :width * nsamp * 2].copy().view(">u2").astype(np.uint16).reshape(h, width, nsamp)
    bits = np.unpackbits(rows, axis=1)                         # MSB first, as PNG packs them
    per_byte = 8 // depth
    vals = bits[:, :rows.shape[1] * per_byte * depth].reshape(h, -1, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    return (vals * weights).sum(axis=2, dtype=np.uint8)[:, :width, None]


def _exif_orientation(exif: bytes) -> int:
    """The Orientation tag (1..8) of an eXIf chunk's TIFF data, 1 when absent or unreadable."""
    if len(exif) < 8 or exif[:2] not in (b"II", b"MM"):
        return 1
    e = "<" if exif[:2] == b"II" else ">"
    try:
        (ifd,) = struct.unpack(e + "I", exif[4:8])
        (n,) = struct.unpack(e + "H", exif[ifd:ifd + 2])
        for i in range(n):
            tag, typ, _, value = struct.unpack(e + "HHI4s", exif[ifd + 2 + 12 * i:ifd + 14 + 12 * i])
            if tag == 0x0112 and typ == 3:
                o = struct.unpack(e + "H", value[:2])[0]
                return o if 1 <= o <= 8 else 1
    except struct.error:
        pass
    return 1


def decode_png(data: bytes, name: str = "<bytes>", info: dict | None = None) -> np.ndarray:
    """Decodes the bytes of a PNG file (``name`` is used in error messages).

    Returns H x W x C with C = 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA), squeezed to H x W
    for C = 1. Bit depths 1, 2, 4 are scaled to 0..255 (as libpng's expand does: 1 -> 255,
    2-bit x 85, 4-bit x 17); 16-bit files give uint16, everything else uint8. A palette is
    expanded to RGB, or RGBA when a tRNS chunk is present; a gray or RGB tRNS key colour
    becomes an alpha channel (0 at the key colour, the maximum elsewhere), like libpng's
    ``png_set_palette_to_rgb`` + tRNS expansion, which dlib's loader uses. Interlaced (Adam7)
    files are supported. Ancillary chunks other than tRNS are ignored (no gamma), except that
    an ``info`` dict, when given, receives ``"exif_orientation"`` from an eXIf chunk (1..8).
    """
    if data[:8] != PNG_SIGNATURE:
        raise ValueError(f"read_png: {name} is not a PNG file (bad signature)")
    ihdr, plte, trns, idat, orientation = None, None, None, [], 1
    for kind, body in _chunks(data, name):
        if kind == b"IHDR":
            if len(body) != 13:
                raise ValueError(f"read_png: {name}: IHDR chunk has {len(body)} bytes, expected 13")
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            plte = body
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"eXIf":
            orientation = _exif_orientation(body)
        elif kind != b"IEND" and not kind[0] & 0x20:  # an unknown critical chunk
            raise ValueError(f"read_png: {name}: unknown critical chunk {kind.decode('latin-1')!r}")
    if ihdr is None:
        raise ValueError(f"read_png: {name} has no IHDR chunk")
    if not idat:
        raise ValueError(f"read_png: {name} has no IDAT chunk (no image data)")
    w, h, depth, ctype, comp, filt_method, interlace = ihdr
    if ctype not in _CTYPE_INFO or depth not in _CTYPE_INFO[ctype][1]:
        raise ValueError(f"read_png: {name}: invalid colour type {ctype} with bit depth {depth}")
    if comp != 0 or filt_method != 0 or interlace not in (0, 1):
        raise ValueError(f"read_png: {name}: unknown compression/filter/interlace method "
                         f"({comp}, {filt_method}, {interlace})")
    if w == 0 or h == 0:
        raise ValueError(f"read_png: {name}: the image is empty ({w} x {h})")
    if ctype == 3 and plte is None:
        raise ValueError(f"read_png: {name}: palette image without a PLTE chunk")
    nsamp = _CTYPE_INFO[ctype][0]
    bits_pp = nsamp * depth
    bpp = max(1, bits_pp // 8)
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    except zlib.error as e:
        raise ValueError(f"read_png: {name}: corrupt image data in the IDAT chunks ({e})") from e

    passes = [(0, 0, 1, 1)] if interlace == 0 else _ADAM7
    sdtype = np.uint16 if depth == 16 else np.uint8
    samples = np.zeros((h, w, nsamp), sdtype) if interlace else None
    pos = 0
    for x0, y0, dx, dy in passes:
        pw, ph = (w - x0 + dx - 1) // dx, (h - y0 + dy - 1) // dy
        if pw <= 0 or ph <= 0:
            continue  # an empty pass has no bytes at all
        stride = (pw * bits_pp + 7) // 8
        need = ph * (stride + 1)
        if raw.size < pos + need:
            raise ValueError(f"read_png: {name}: image data has {raw.size} bytes, expected at "
                             f"least {pos + need} for a {w} x {h} image (truncated)")
        rows = _unfilter(raw[pos:pos + need].reshape(ph, stride + 1), bpp, name)
        pos += need
        s = _samples(rows, pw, nsamp, depth)
        if interlace:
            samples[y0::dy, x0::dx] = s
        else:
            samples = s

    if ctype == 3:
        pal = np.frombuffer(plte, np.uint8)
        if pal.size % 3 or pal.size == 0:
            raise ValueError(f"read_png: {name}: PLTE chunk of {pal.size} bytes (not a multiple of 3)")
        pal = pal.reshape(-1, 3)
        idx = samples[:, :, 0]
        if int(idx.max()) >= len(pal):
            raise ValueError(f"read_png: {name}: palette index {int(idx.max())} but the palette "
                             f"has {len(pal)} entries")
        if trns is not None:
            alpha = np.full(len(pal), 255, np.uint8)
            t = np.frombuffer(trns, np.uint8)[:len(pal)]
            alpha[:t.size] = t
            pal = np.concatenate([pal, alpha[:, None]], axis=1)
        out = pal[idx]
    else:
        out = samples
        if depth < 8:  # gray only: scale to 0..255
            out = samples * np.uint8(255 // ((1 << depth) - 1))
        if trns is not None and ctype in (0, 2):
            key = np.frombuffer(trns[:2 * nsamp], ">u2")
            if key.size == nsamp:  # the key is compared with the samples as stored
                top = 65535 if depth == 16 else 255
                alpha = np.where(np.all(samples == key.astype(samples.dtype), axis=2), 0, top)
                out = np.concatenate([out, alpha.astype(sdtype)[:, :, None]], axis=2)
    if info is not None:
        info["exif_orientation"] = orientation
        info["bit_depth"], info["color_type"], info["interlace"] = depth, ctype, interlace
    out = np.ascontiguousarray(out)
    return out[:, :, 0] if out.shape[2] == 1 else out

