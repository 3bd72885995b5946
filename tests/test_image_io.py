"""dnnpy.image.io (load_image, read_image, save_png, save_jpeg, the pixel limit) and its PNG
names in dnnpy.image.png, all through Pillow.

Test files are written here by a small independent encoder (every colour type, bit depth,
filter type, Adam7) and compared with the arrays they were made from; dlib-bin's
``load_rgb_image`` / ``load_grayscale_image`` / ``load_rgb_alpha_image`` are the oracle for
dlib's conversions (skipped without dlib-bin). Hostile files (huge declared sizes, Paeth
rows by the ten thousand, a decompression bomb) are refused or decoded in bounded time."""

import struct
import zlib

import numpy as np
import pytest

from dnnpy.image import png
from dnnpy.image import io as imio
from dnnpy.image import load_image, save_jpeg, save_png

ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2))
NSAMP = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _pack(sub, depth):
    """(h, w, n) sample values -> (h, stride) bytes of packed scanlines."""
    h, w, n = sub.shape
    if depth == 16:
        return sub.astype(">u2").reshape(h, w * n).view(np.uint8)
    if depth == 8:
        return sub.astype(np.uint8).reshape(h, w * n)
    bits = np.unpackbits(sub.astype(np.uint8).reshape(h, w * n, 1), axis=2)[:, :, 8 - depth:]
    return np.packbits(bits.reshape(h, -1), axis=1)


def _filter(rows, bpp, filters):
    """Forward PNG filtering, filter type ``filters[y % len]`` for row y."""
    out, prev = [], np.zeros(rows.shape[1], np.int32)
    for y, r in enumerate(rows.astype(np.int32)):
        t = filters[y % len(filters)]
        left = np.concatenate([np.zeros(bpp, np.int32), r[:-bpp]])
        ul = np.concatenate([np.zeros(bpp, np.int32), prev[:-bpp]])
        if t == 0:
            f = r
        elif t == 1:
            f = r - left
        elif t == 2:
            f = r - prev
        elif t == 3:
            f = r - (left + prev) // 2
        else:
            pa, pb, pc = abs(prev - ul), abs(left - ul), abs(left + prev - 2 * ul)
            f = r - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, ul))
        out.append(np.concatenate([[t], f & 255]).astype(np.uint8))
        prev = r
    return np.concatenate(out).tobytes()


def make_png(samples, ctype, depth=8, filters=(0,), interlace=False, plte=None, trns=None,
             extra=b""):
    """An independent PNG encoder for tests: ``samples`` (H, W[, n]) raw sample values."""
    s = np.asarray(samples)
    s = s[:, :, None] if s.ndim == 2 else s
    h, w, n = s.shape
    assert n == NSAMP[ctype]
    bpp = max(1, n * depth // 8)
    passes = ADAM7 if interlace else ((0, 0, 1, 1),)
    data = b""
    for x0, y0, dx, dy in passes:
        sub = s[y0::dy, x0::dx]
        if sub.size:
            data += _filter(_pack(sub, depth), bpp, filters)
    out = png.PNG_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0,
                                                          int(interlace)))
    if plte is not None:
        out += _chunk(b"PLTE", np.asarray(plte, np.uint8).tobytes())
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    out += extra + _chunk(b"IDAT", zlib.compress(data)) + _chunk(b"IEND", b"")
    return out


RNG = np.random.default_rng(13)


@pytest.mark.parametrize("ctype,depth", [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (2, 8), (2, 16),
                                         (3, 1), (3, 2), (3, 4), (3, 8), (4, 8), (4, 16), (6, 8),
                                         (6, 16)])
def test_decode_every_colour_type_and_depth(ctype, depth):
    h, w = 11, 13  # odd sizes: partial bytes at low depths, empty Adam7 passes
    n = NSAMP[ctype]
    top = (1 << depth) - 1
    plte = None
    if ctype == 3:
        npal = min(top + 1, 40)
        samples = RNG.integers(0, npal, (h, w, 1))
        plte = RNG.integers(0, 256, (npal, 3))
        expected = plte[samples[:, :, 0]]
    else:
        samples = RNG.integers(0, top + 1, (h, w, n))
        expected = samples * (255 // top) if depth < 8 else samples
        if depth == 16 and n > 1:          # Pillow keeps 16-bit colour's high bytes (as dlib's >> 8)
            expected = expected >> 8
        expected = expected[:, :, 0] if n == 1 else expected
    for interlace in (False, True):
        data = make_png(samples, ctype, depth, filters=(0, 1, 2, 3, 4), interlace=interlace,
                        plte=plte)
        got = png.decode_png(data, "t.png")
        assert got.dtype == (np.uint16 if depth == 16 and n == 1 else np.uint8)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("filt", [0, 1, 2, 3, 4])
def test_each_filter_alone(filt):
    img = RNG.integers(0, 256, (7, 9, 3))
    np.testing.assert_array_equal(png.decode_png(make_png(img, 2, filters=(filt,))), img)


def test_trns_palette_gray_and_rgb():
    idx = np.array([[0, 1], [2, 1]])
    plte = [[10, 20, 30], [40, 50, 60], [70, 80, 90]]
    got = png.decode_png(make_png(idx, 3, plte=plte, trns=bytes([0, 128])))  # entry 2: opaque
    np.testing.assert_array_equal(got[:, :, 3], [[0, 128], [255, 128]])
    np.testing.assert_array_equal(got[:, :, :3], np.array(plte)[idx])
    g = np.array([[0, 3], [2, 3]])  # 2-bit gray, key 3 (compared before scaling to 255)
    got = png.decode_png(make_png(g, 0, 2, trns=struct.pack(">H", 3)))
    np.testing.assert_array_equal(got, [[[0, 255], [255, 0]], [[170, 255], [255, 0]]])
    rgb = np.array([[[1, 2, 3], [4, 5, 6]]])
    got = png.decode_png(make_png(rgb, 2, trns=struct.pack(">HHH", 4, 5, 6)))
    np.testing.assert_array_equal(got[:, :, 3], [[255, 0]])


def test_write_read_round_trip_all_channel_counts(tmp_path):
    for shape in [(5, 6), (5, 6, 2), (5, 6, 3), (5, 6, 4)]:
        img = RNG.integers(0, 256, shape).astype(np.uint8)
        p = save_png(img, tmp_path / "a.png")
        np.testing.assert_array_equal(png.read_png(p), img)
        assert load_image(p, "RGBA").shape == (5, 6, 4)


def test_broken_files_name_file_and_chunk(tmp_path):
    data = bytearray(make_png(np.zeros((2, 2)), 0))
    data[-20] ^= 1  # inside the IDAT chunk's compressed data: its CRC no longer matches
    p = tmp_path / "bad.png"
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"cannot decode .*bad\.png \(png\)"):
        load_image(p)
    p.write_bytes(make_png(np.zeros((2, 2)), 0)[:40])
    with pytest.raises(ValueError, match=r"cannot decode .*bad\.png"):
        png.read_png(p)
    with pytest.raises(FileNotFoundError, match="no such file: .*missing.png"):
        load_image(tmp_path / "missing.png")
    with pytest.raises(OSError, match="read_png: cannot read"):
        png.read_png(tmp_path / "missing.png")
    p.write_bytes(b"hello, not an image")
    with pytest.raises(ValueError, match=r"bad\.png is not an image file"):
        load_image(p)
    with pytest.raises(ValueError, match="mode must be one of"):
        load_image(p, "CMYK")


def _raw_png(w, h, raw, ctype=0, interlace=0):
    """A PNG declaring ``w x h`` 8-bit samples whose IDAT holds ``raw`` (whatever its size)."""
    return (png.PNG_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, interlace))
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("case", ["paeth-40000-rows", "sub-1e6-rows", "interlaced-1e10-pixels",
                                  "bomb-20000x20000"])
def test_hostile_png_files_end_fast(case, tmp_path):
    """Files of a few hundred bytes declaring huge images or many rows: decoded or refused
    (ValueError naming the file) well within a second, never decoded past the pixel limit."""
    import time
    p = tmp_path / f"{case}.png"
    if case == "paeth-40000-rows":           # 1 x 40000 gray, every row Paeth: 159 bytes
        p.write_bytes(_raw_png(1, 40000, b"\x04\x00" * 40000))
    elif case == "sub-1e6-rows":             # 1 x 10^6 gray, every row Sub: about 2 KB
        p.write_bytes(_raw_png(1, 10**6, b"\x01\x00" * 10**6))
    elif case == "interlaced-1e10-pixels":   # 100000 x 100000 interlaced, 100 bytes of data
        p.write_bytes(_raw_png(100000, 100000, b"\x00" * 100, interlace=1))
    else:                                    # a valid 20000 x 20000 gray image: 400 M pixels
        p.write_bytes(_raw_png(20000, 20000, b"\x00" * (20001 * 20000)))
    assert p.stat().st_size < 400_000
    start = time.monotonic()
    if case in ("paeth-40000-rows", "sub-1e6-rows"):
        assert load_image(p, "L").shape == (int(case.split("-")[1].replace("1e6", "1000000")), 1)
    else:
        with pytest.raises(ValueError, match=rf"{case}\.png is .*over the (pixel )?limit.*set_max_image_pixels"):
            load_image(p)
    assert time.monotonic() - start < 1.0


def test_the_pixel_limit_is_a_setting(tmp_path):
    p = tmp_path / "a.png"
    save_png(np.zeros((4, 5), np.uint8), p)
    default = imio.get_max_image_pixels()
    assert default == 89_478_485
    try:
        imio.set_max_image_pixels(19)
        with pytest.raises(ValueError, match=r"a\.png is 5 x 4 = 20 pixels, over the limit of 19.*set_max_image_pixels"):
            load_image(p)
        imio.set_max_image_pixels(None)
        assert load_image(p, "L").shape == (4, 5)
        with pytest.raises(ValueError, match="an integer >= 1 or None"):
            imio.set_max_image_pixels(0)
    finally:
        imio.set_max_image_pixels(default)


def test_modes_follow_dlib_rules():
    rgba = np.array([[[200, 100, 50, 255], [200, 100, 50, 128], [9, 9, 9, 0]]], np.uint8)
    np.testing.assert_array_equal(imio._to_mode(rgba, "RGB"),
                                  [[[200, 100, 50], [100, 50, 25], [0, 0, 0]]])
    np.testing.assert_array_equal(imio._to_mode(rgba, "L"), [[116, 116 * 128 // 255, 0]])
    rgb16 = np.array([[[65535, 256, 255]]], np.uint16)
    np.testing.assert_array_equal(imio._to_mode(rgb16, "RGB"), [[[255, 1, 0]]])


def test_exif_orientation_from_png_exif_chunk(tmp_path):
    img = np.arange(6, dtype=np.uint8).reshape(2, 3)
    tiff = b"MM\x00*" + struct.pack(">IH", 8, 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0) + b"\0" * 4
    p = tmp_path / "o.png"
    p.write_bytes(make_png(img, 0, extra=_chunk(b"eXIf", tiff)))
    np.testing.assert_array_equal(load_image(p, "L", respect_exif=False), img)
    np.testing.assert_array_equal(load_image(p, "L"), np.rot90(img, -1))  # 6: rotate 90 CW


def _dlib():
    return pytest.importorskip("dlib", reason="dlib-bin (the dlib extra) is the oracle")


def test_matches_dlib_load_rgb_image(tmp_path):
    dlib = _dlib()
    h, w = 9, 10
    cases = {
        "gray8": make_png(RNG.integers(0, 256, (h, w)), 0, filters=(4, 3)),
        "gray1": make_png(RNG.integers(0, 2, (h, w)), 0, 1, filters=(1,)),
        "gray4_il": make_png(RNG.integers(0, 16, (h, w)), 0, 4, interlace=True),
        "rgb": make_png(RNG.integers(0, 256, (h, w, 3)), 2, filters=(0, 1, 2, 3, 4)),
        "rgb_il": make_png(RNG.integers(0, 256, (h, w, 3)), 2, filters=(4,), interlace=True),
        "pal": make_png(RNG.integers(0, 5, (h, w)), 3, 4, plte=RNG.integers(0, 256, (5, 3))),
        "pal_trns": make_png(RNG.integers(0, 5, (h, w)), 3, plte=RNG.integers(0, 256, (5, 3)),
                             trns=bytes([0, 77, 255])),
        "graya": make_png(RNG.integers(0, 256, (h, w, 2)), 4, filters=(2, 4)),
        "rgba": make_png(RNG.integers(0, 256, (h, w, 4)), 6, filters=(3,)),
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.png"
        p.write_bytes(data)
        np.testing.assert_array_equal(load_image(p), dlib.load_rgb_image(str(p)), err_msg=name)
        np.testing.assert_array_equal(load_image(p, "L"), dlib.load_grayscale_image(str(p)),
                                      err_msg=name)
        np.testing.assert_array_equal(load_image(p, "RGBA"), dlib.load_rgb_alpha_image(str(p)),
                                      err_msg=name)


def test_pillow_reads_the_same(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    img = RNG.integers(0, 256, (6, 7, 3)).astype(np.uint8)
    Image.fromarray(img).save(tmp_path / "p.png")
    np.testing.assert_array_equal(png.read_png(tmp_path / "p.png"), img)
    np.testing.assert_array_equal(load_image(tmp_path / "p.png"), img)
    save_jpeg(img, tmp_path / "p.jpg", quality=95)
    assert load_image(tmp_path / "p.jpg").shape == (6, 7, 3)


def test_save_image_by_extension(tmp_path):
    """dlib's Python ``save_image``: the format from the extension; an unknown one refused."""
    img = RNG.integers(0, 256, (6, 7, 3)).astype(np.uint8)
    for ext in (".png", ".bmp", ".webp"):
        p = imio.save_image(img, tmp_path / f"a{ext}")
        assert np.array_equal(load_image(p), img) if ext != ".webp" else load_image(p).shape == img.shape
    assert load_image(imio.save_image(img, tmp_path / "a.JPG")).shape == img.shape
    with pytest.raises(ValueError, match="extension"):
        imio.save_image(img, tmp_path / "a.gif")
