"""dnnpy.image.interpolation (T8): resize_image against dlib-bin pixel for pixel; flips,
rotate_image, letterbox_image, pyramid_up and upsample_image_dataset against dlib's C++.

The hard-coded values were printed by tests/dlib_cpp/geometry_tools.cpp, a program built from
dlib's own headers (dlib master 3d40bf57, g++ -std=c++14 on x86-64, no LAPACK); images are
compared through the FNV-1a 64 hash of their row-major bytes."""

import numpy as np
import pytest

from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image import (add_image_left_right_flips, find_affine_transform, flip_image_dataset_left_right,
                         flip_image_left_right, flip_image_up_down, flip_rect_left_right, interpolate_bilinear,
                         letterbox_image, point_transform_affine, pyramid_up, resize_image, rotate_image, upsample_image_dataset)
from dnnpy.inputs import pyramid_down
from helpers import needs_compiled_kernels

try:
    import dlib
except ImportError:  # the oracle is optional
    dlib = None
needs_dlib = pytest.mark.skipif(dlib is None, reason="dlib-bin not installed")


def _gray(nr, nc):  # the C++ program's test images
    r, c = np.mgrid[:nr, :nc]
    return ((r * 37 + c * 11 + (r * c) % 13) & 255).astype(np.uint8)


def _rgb(nr, nc):
    r, c = np.mgrid[:nr, :nc]
    return np.stack([(r * 37 + c * 11 + k * 71 + (r * c * (k + 1)) % 17) & 255 for k in range(3)], -1).astype(np.uint8)


def _fnv(a):
    h = 1469598103934665603
    for b in np.ascontiguousarray(a).tobytes():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def _tf(t):
    return [*t.m.ravel().tolist(), *t.b.tolist()]


@needs_dlib
def test_resize_image_matches_dlib_bit_for_bit(kernels):
    """Random sizes up and down (including 1-pixel sides), every dtype dlib-bin binds: the
    SIMD blocks, the leftover columns and both rounding rules are exercised."""
    rng = np.random.default_rng(0)
    for k in range(40):
        H, W = rng.integers(1, 30, 2)
        R, C = rng.integers(1, 60, 2)
        for kind in ("u8", "rgb", "f32", "f64", "i16"):
            if kind == "rgb":
                img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
            elif kind == "u8":
                img = rng.integers(0, 256, (H, W), dtype=np.uint8)
            elif kind == "i16":
                img = rng.integers(-300, 300, (H, W)).astype(np.int16)
            else:
                img = (rng.standard_normal((H, W)) * 50).astype(np.float32 if kind == "f32" else np.float64)
            a = resize_image(img, R, C)
            assert a.dtype == img.dtype and a.shape == (R, C) + img.shape[2:]
            np.testing.assert_array_equal(a, dlib.resize_image(img, int(R), int(C)), err_msg=f"{kind} {img.shape}->{R}x{C}")
            if kind != "u8":  # dlib-bin binds no scale overload for uint8 grayscale
                s = float(rng.uniform(0.2, 3))
                np.testing.assert_array_equal(resize_image(s, img), dlib.resize_image(img, s))


def test_resize_image_contract():
    img = _gray(5, 7)
    np.testing.assert_array_equal(resize_image(img, 5, 7), img)     # same size: exact copy
    assert resize_image(1.0, img) is not img
    assert resize_image(2.5, img).shape == (13, 18)                  # std::round: 12.5 -> 13, 17.5 -> 18
    assert resize_image(img, 0, 4).shape == (0, 4)
    f = np.linspace(0, 1, 12).reshape(3, 4).astype(np.float32)
    up = resize_image(f, 5, 7)
    assert up[0, 0] == f[0, 0] and up[-1, -1] == f[-1, -1]
    with pytest.raises(ValueError, match="resize_image"):
        resize_image(img, -1, 3)
    with pytest.raises(ValueError, match="scale"):
        resize_image(0.0, img)
    with pytest.raises(TypeError, match="resize_image"):
        resize_image(img, 3)


@pytest.mark.parametrize("kind", ["rgb", "u8", "f32"])
def test_resize_image_bands_change_nothing(monkeypatch, kind, kernels):
    """The main loop runs a band of output rows at a time: bands of a few rows (and a last,
    shorter one) give the image one band gives."""
    import dnnpy.image.resize as rz
    rng = np.random.default_rng(3)
    img = (rng.integers(0, 256, (53, 61, 3), dtype=np.uint8) if kind == "rgb" else
           rng.integers(0, 256, (53, 61), dtype=np.uint8) if kind == "u8" else
           (rng.standard_normal((53, 61)) * 50).astype(np.float32))
    for rows, cols in ((107, 119), (44, 50), (7, 9)):     # (7, 9): bands read only some rows
        whole = resize_image(img, rows, cols)
        monkeypatch.setattr(rz, "_BAND_VALUES", 3 * cols * 3)     # 3 rows a band (RGB)
        np.testing.assert_array_equal(resize_image(img, rows, cols), whole)
        monkeypatch.undo()


@pytest.mark.parametrize("kind", ["rgb", "u8"])
def test_pyramid_up_on_threads_gives_the_same_bits(monkeypatch, kind, kernels):
    """``pyramid_up(img, parallel=...)`` makes its bands of rows on dnnpy's threads (the HOG
    detectors' upsampling): the same image, band for band, in any order."""
    import dnnpy.image.resize as rz
    from dnnpy.image.interpolation import pyramid_up
    from dnnpy.parallel import parallel_for
    rng = np.random.default_rng(4)
    img = rng.integers(0, 256, (41, 57, 3) if kind == "rgb" else (41, 57), dtype=np.uint8)
    whole = pyramid_up(img)
    monkeypatch.setattr(rz, "_BAND_VALUES", 3 * 114 * 4)          # 4 rows a band (RGB): 21 bands
    order = []

    def backwards(n, f):            # any order must do: the bands are independent
        order.extend(range(n))
        for j in reversed(range(n)):
            f(j)

    np.testing.assert_array_equal(pyramid_up(img, parallel=backwards), whole)
    assert len(order) > 5
    np.testing.assert_array_equal(pyramid_up(img, parallel=lambda n, f: parallel_for(0, n, f, 2)), whole)


# dlib's rotate_image outputs: (shape, hash, returned transform m00 m01 m10 m11 b0 b1)
ROT = {
    ("gray", 0.3): ((31, 37), 0x50d8807affd562ef, [0.95533648912560598, 0.29552020666133955, -0.29552020666133955,
                                                  0.95533648912560598, 0.41923038984117422, 8.9241017195384238]),
    ("rgb", 0.3): ((20, 17), 0xe1878af2f3d287ef, [0.95533648912560598, 0.29552020666133955, -0.29552020666133955,
                                                 0.95533648912560598, -0.24394069137502272, 3.1527610824003851]),
    ("gray", -1.1): ((37, 35), 0xebeb52cf642da1c1, [0.45359612142557731, -0.89120736006143542, 0.89120736006143542,
                                                   0.45359612142557731, 19.999339139292132, -0.3576677366028802]),
    ("rgb", -1.1): ((19, 22), 0xb18725a8f35c49a3, [0.45359612142557731, -0.89120736006143542, 0.89120736006143542,
                                                  0.45359612142557731, 15.35368583196874, -0.20281119248601787]),
    ("gray", 3.14159): ((23, 31), 0x9ffa697a3a257bff, [-0.99999999999647926, 2.65358979335273e-06, -2.65358979335273e-06,
                                                      -0.99999999999647926, 29.999970810459462, 22.000039803808175]),
    ("rgb", 0.0): ((18, 13), 0x1d71798ba5874ee7, [1, 0, 0, 1, 0, 0]),
}


@pytest.mark.parametrize("key", list(ROT))
def test_rotate_image_matches_dlib(key):
    kind, angle = key
    shape, h, tf = ROT[key]
    if kind == "gray":   # dlib's default interpolation: quadratic
        out, t = rotate_image(_gray(23, 31), angle)
    else:
        out, t = rotate_image(_rgb(18, 13), angle, interpolate_bilinear())
    assert out.shape[:2] == shape and _fnv(out) == h
    assert _tf(t) == tf     # bit for bit: dlib's closed-form 2x2 inverse


# dlib's letterbox_image: (output size) -> (hash, scale, offset); only sizes where dlib's scale
# choice is well defined (see letterbox_image's docstring)
LB = {
    ("gray", 64, 64): (0x8eef578ad25108a3, 2.064516129032258, (0, 8.5)),
    ("rgb", 64, 64): (0xb877d32cba8cf5a8, 3.5555555555555554, (9, 0)),
    ("rgb", 40, 100): (0x26e3308ae008e232, 2.2222222222222223, (35.5, 0)),
    ("gray", 100, 40): (0xa6028fcd4774f857, 1.2903225806451613, (0, 35)),
    ("gray", 23, 31): (0x5b85bb405c44cee9, 1.0, (0, 0)),
    ("rgb", 23, 31): (0xac6f98858bfc17b7, 1.2777777777777777, (7, 0)),
    ("rgb", 17, 50): (0x4cf8ef7baa2a0cbd, 0.94444444444444442, (19, 0)),
}


@pytest.mark.parametrize("key", list(LB))
def test_letterbox_image_matches_dlib(key):
    kind, rows, cols = key
    h, scale, off = LB[key]
    img = _gray(23, 31) if kind == "gray" else _rgb(18, 13)
    out, t = letterbox_image(img, (rows, cols))
    assert out.shape[:2] == (rows, cols) and _fnv(out) == h
    assert _tf(t) == [scale, 0, 0, scale, *off]
    assert letterbox_image(_gray(8, 8), 16)[0].shape == (16, 16)
    with pytest.raises(ValueError, match="letterbox_image"):
        letterbox_image(img, 0)


def test_pyramid_up_and_upsample_dataset_match_dlib():
    out = pyramid_up(_gray(23, 31))
    assert out.shape == (47, 64) and _fnv(out) == 0xeb5a48bac4aff5a3
    out = pyramid_up(_rgb(18, 13))
    assert out.shape == (37, 28, 3) and _fnv(out) == 0x3ac6d37fbb5023f9
    out = pyramid_up(_gray(23, 31), pyramid_down(3))
    assert out.shape == (36, 48) and _fnv(out) == 0x662ec6324f4ad26
    assert pyramid_up(np.zeros((0, 5), np.uint8)).shape == (0, 0)

    imgs = [_gray(20, 30), _gray(15, 11)]
    objs = [[mmod_rect(rectangle(3, 4, 10, 12), 0.5, True, "a"), rectangle(-5, 2, 7, 30)], [mmod_rect(rectangle(2, 3, 5, 6))]]
    upsample_image_dataset(imgs, objs)
    assert objs[0][0].rect == rectangle(9, 10, 23, 26) and objs[0][0].ignore and objs[0][0].label == "a"
    assert objs[0][1] == rectangle(-8, 6, 17, 62) and objs[1][0].rect == rectangle(7, 8, 13, 14)
    assert (imgs[0].shape, _fnv(imgs[0])) == ((41, 62), 0x62d3278eb40e315b)
    assert (imgs[1].shape, _fnv(imgs[1])) == ((31, 24), 0x4c958994320d869a)
    imgs, objs = [_gray(20, 30)], [[mmod_rect(rectangle(3, 4, 10, 12))]]
    upsample_image_dataset(imgs, objs, pyramid_down(3))
    assert objs[0][0].rect == rectangle(6, 8, 17, 20) and imgs[0].shape == (31, 46)
    imgs, objs = [_gray(20, 30)], [[rectangle(1, 2, 3, 4)]]
    upsample_image_dataset(imgs, objs, max_image_size=599)           # too big: untouched
    assert imgs[0].shape == (20, 30) and objs[0] == [rectangle(1, 2, 3, 4)]


def test_find_affine_transform_bit_for_bit():
    """find_affine_transform (dlib's SVD-based pinv, matrix_la) equals dlib's C++ to the bit,
    for 3 pairs (P square) and 5 pairs (P wide: pinv of its transpose)."""
    f, t = [(1.5, 2.25), (40.1, 3.7), (7.3, 55.9)], [(0, 0), (31, 0.5), (2, 29)]
    assert find_affine_transform(f, t) == point_transform_affine(
        [[0.80497750281214886, -0.049745936930297441], [-0.0073818897637795144, 0.54133858267716584]],
        [-1.0955378961250533, -1.2069389763779523])
    f, t = f + [(20, 20), (-3, 8)], t + [(15.5, 13), (-2, 5)]
    assert find_affine_transform(f, t) == point_transform_affine(
        [[0.7856216601098065, -0.060187065987061979], [-0.013648493233623563, 0.53487559953236452]],
        [0.027068095540253578, 0.068172617222572729])


def test_flips_match_dlib():
    img = _rgb(5, 7)
    out, t = flip_image_left_right(img)
    np.testing.assert_array_equal(out, img[:, ::-1])
    # dlib fits the map over the 4 corners with its own SVD: its last-bit noise, bit for bit
    assert t == point_transform_affine([[-0.99999999999999956, -5.5511151231257827e-16],
                                        [4.4408920985006262e-16, 0.99999999999999956]],
                                       [5.9999999999999973, -4.4408920985006262e-16])
    assert flip_image_left_right(np.zeros((17, 2), np.uint8))[1] == point_transform_affine(
        [[-1.0000000000000004, -6.9388939039072284e-18], [-4.4408920985006262e-15, 1]], [1.0000000000000002, 0])
    assert flip_image_left_right(np.zeros((1, 1), np.uint8))[1] == point_transform_affine([[0, 0], [0, 0]])
    np.testing.assert_array_equal(flip_image_up_down(img), img[::-1])
    assert flip_rect_left_right(rectangle(3, 4, 10, 12), rectangle(0, 0, 29, 19)) == rectangle(19, 4, 26, 12)

    imgs = [_gray(20, 30)]
    objs = [[rectangle(3, 4, 10, 12), rectangle(-5, 2, 7, 30), mmod_rect(rectangle(2, 3, 5, 6), label="x")]]
    flip_image_dataset_left_right(imgs, objs)
    assert objs[0][:2] == [rectangle(19, 4, 26, 12), rectangle(22, 2, 34, 30)]
    assert objs[0][2].rect == rectangle(24, 3, 27, 6) and objs[0][2].label == "x"
    assert _fnv(imgs[0]) == 0xd1d7bef16d8a56dd

    imgs = [_gray(20, 30), _gray(15, 11)]
    objs = [[mmod_rect(rectangle(3, 4, 10, 12)), mmod_rect(rectangle(0, 0, 29, 19), ignore=True),
             mmod_rect(rectangle(-5, 2, 7, 30))],
            [mmod_rect(rectangle(2, 3, 5, 6), label="x"), mmod_rect(rectangle(4, 1, 8, 2))]]
    add_image_left_right_flips(imgs, objs)
    assert len(imgs) == len(objs) == 4 and _fnv(imgs[2]) == 0xd1d7bef16d8a56dd
    assert [o.rect for o in objs[0]] == [rectangle(3, 4, 10, 12), rectangle(0, 0, 29, 19), rectangle(-5, 2, 7, 30)]
    assert [o.rect for o in objs[2]] == [rectangle(19, 4, 26, 12), rectangle(0, 0, 29, 19), rectangle(22, 2, 34, 30)]
    assert objs[2][1].ignore and objs[3][0].label == "x"
    # as dlib: its SVD-fitted flip map is a few ulps off -1, so half-pixel box centres round
    # down (an exact map would give (5, 3, 8, 6) and (2, 1, 6, 2))
    assert [o.rect for o in objs[3]] == [rectangle(5, 2, 8, 5), rectangle(2, 0, 6, 1)]
    with pytest.raises(ValueError, match="add_image_left_right_flips"):
        add_image_left_right_flips([img], [])
    with pytest.raises(TypeError, match="rectangle or mmod_rect"):
        flip_image_dataset_left_right([img], [[(1, 2, 3, 4)]])


def test_compiled_resize_equals_numpys():
    """The compiled bilinear loop (dnnpy/kernels/resize.py) against the numpy one, for the
    uint8 images it takes (grey and RGB, strided views), up and down, wide and narrow
    bands: the same bits (both are dlib's float32 steps in dlib's order)."""
    jit = needs_compiled_kernels()
    rng = np.random.default_rng(8)
    for k in range(120):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        img = rng.integers(0, 256, (h, w, 3) if k % 2 else (h, w), dtype=np.uint8)
        img = img[::-1, ::2] if k % 3 == 0 else img
        rows, cols = (int(v) for v in rng.integers(1, 150, 2))
        got = resize_image(img, rows, cols)
        with jit.force_numpy():
            want = resize_image(img, rows, cols)
        np.testing.assert_array_equal(got, want, err_msg=f"{img.shape} -> {rows}x{cols}")
