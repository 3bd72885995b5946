"""random_cropper (T5) and jitter_image (T6). random_cropper is not in dlib-bin: its crops are
checked against tests/dlib_cpp/random_cropper.cpp, a program built from dlib's own headers
(dlib master 3d40bf57, g++ -std=c++14 on x86-64), whose output is hard-coded below.
jitter_image is checked against dlib-bin's dlib.jitter_image in a fresh process (the binding
draws from one process-wide, default-seeded dlib::rand)."""

import subprocess
import sys

import numpy as np
import pytest

from dnnpy.data import dlib_rand
from dnnpy.geometry import drectangle, get_rect, mmod_rect, rectangle
from dnnpy.image import chip_dims, disturb_colors, jitter_image, jitter_images, random_cropper
from dnnpy.loss import yolo_rect

try:
    import dlib
except ImportError:  # the oracle is optional
    dlib = None
needs_dlib = pytest.mark.skipif(dlib is None, reason="dlib-bin not installed")


def _ramp(nr, nc, k):
    r, c = np.mgrid[:nr, :nc]
    return ((r * 7 + c * 13 + k * 31) % 256).astype(np.uint8)


def _dataset():
    images = [_ramp(120, 160, 0), _ramp(90, 100, 1)]
    boxes = [[mmod_rect(rectangle(20, 30, 79, 69)), mmod_rect(rectangle(100, 10, 139, 109), label="tall"),
              mmod_rect(rectangle(140, 90, 170, 130)),      # partly outside the image
              mmod_rect(rectangle(60, 80, 69, 89))],        # small
             [mmod_rect(rectangle(5, 5, 94, 84), ignore=True),
              mmod_rect(rectangle(30, 40, 44, 49))]]        # small: the crop rect grows (min_scale > 1)
    return images, boxes


def _cropper(**kw):
    return random_cropper(chip_dims=(64, 80), min_object_length_long_dim=30, min_object_length_short_dim=12,
                          max_rotation_degrees=20, background_crops_fraction=0.3, translate_amount=0.2,
                          max_object_size=0.6, min_object_coverage=0.9, **kw)


# per crop of random_cropper.cpp (seed 7, cropper(images, rects, crop, crop_rects) 24 times):
# the crop's pixel sum and its boxes (left, top, right, bottom, ignore, label)
DLIB_CROPS = [
    (675732, [(-96, -77, 121, 117, 1, ''), (27, 11, 60, 34, 0, '')]),
    (629791, [(-3, 4, 82, 82, 1, ''), (45, 40, 58, 49, 1, '')]),
    (666472, [(-108, -71, 123, 140, 1, ''), (22, 17, 57, 42, 0, '')]),
    (651672, [(-98, -54, 107, 126, 1, ''), (18, 22, 49, 43, 0, '')]),
    (653493, [(7, -90, 158, 33, 1, '')]),
    (603377, [(29, 18, 61, 49, 0, '')]),
    (205795, [(14, 25, 32, 37, 1, ''), (39, 18, 51, 47, 0, 'tall'), (51, 41, 60, 53, 1, ''), (27, 39, 30, 42, 1, '')]),
    (642305, [(-92, -60, 110, 122, 1, ''), (22, 13, 52, 35, 0, '')]),
    (650664, [(-22, -8, 98, 101, 1, ''), (11, 41, 30, 54, 1, '')]),
    (692165, [(-48, -103, 222, 146, 1, ''), (28, 6, 70, 35, 0, '')]),
    (220705, [(-5, -49, 31, 26, 1, 'tall'), (25, 17, 51, 49, 0, '')]),
    (602128, [(30, 10, 60, 38, 0, '')]),
    (263965, [(60, 23, 80, 39, 1, ''), (35, 13, 53, 43, 0, 'tall'), (21, 36, 33, 50, 1, ''), (60, 40, 63, 43, 1, '')]),
    (631488, [(-52, -127, 147, 53, 1, '')]),
    (676580, [(-103, -74, 113, 120, 1, ''), (19, 15, 52, 38, 0, '')]),
    (262530, [(9, 20, 28, 34, 1, ''), (35, 11, 51, 40, 0, 'tall'), (53, 33, 64, 46, 1, ''), (24, 36, 27, 39, 1, '')]),
    (639569, [(-17, 1, 72, 82, 1, ''), (8, 36, 22, 45, 1, '')]),
    (215634, [(58, -47, 92, 35, 1, 'tall'), (32, 19, 57, 53, 0, '')]),
    (651438, [(-76, -50, 108, 117, 1, ''), (28, 22, 56, 41, 1, '')]),
    (650162, [(-137, -92, 148, 163, 1, ''), (23, 9, 65, 40, 0, '')]),
    (619869, [(24, 12, 60, 47, 0, '')]),
    (649048, [(-1, -36, 126, 78, 1, ''), (70, 15, 90, 28, 1, '')]),
    (650635, [(-2, -2, 80, 76, 1, ''), (44, 36, 56, 46, 1, '')]),
    (228878, [(55, -40, 88, 32, 1, 'tall'), (27, 17, 51, 48, 0, '')]),
]


def test_random_cropper_matches_dlib_cpp():
    images, boxes = _dataset()
    c = _cropper(seed=7)
    for i, (want_sum, want_boxes) in enumerate(DLIB_CROPS):
        crop, out = c(images, boxes)
        assert crop.shape == (64, 80) and crop.dtype == np.uint8
        assert int(crop.astype(np.int64).sum()) == want_sum, i
        assert [(b.rect.l, b.rect.t, b.rect.r, b.rect.b, int(b.ignore), b.label) for b in out] == want_boxes, i
    # the default cropper's background crop of a thin image, and the generator after it
    plain = random_cropper()
    bg = plain(_ramp(50, 400, 2))
    assert bg.shape == (300, 300) and int(bg.astype(np.int64).sum()) == 11075089
    assert plain.get_rnd().get_random_32bit_number() == 1344442829


def test_random_cropper_forms_and_order():
    images, boxes = _dataset()
    crops, crop_boxes = _cropper(seed=7)(5, images, boxes)       # = five single calls in order
    c = _cropper(seed=7)
    for crop, cb in zip(crops, crop_boxes):
        crop1, cb1 = c(images, boxes)
        assert np.array_equal(crop, crop1) and cb == cb1
    more_c, more_b = list(crops), list(crop_boxes)
    _cropper(seed=7).append(2, images, boxes, more_c, more_b)
    assert len(more_c) == len(more_b) == 7 and np.array_equal(more_c[5], crops[0])
    # one image, given: no image draw; the boxes given are the ones mapped
    crop, cb = _cropper(seed=3).crop(images[1], boxes[1])
    assert crop.shape == (64, 80) and all(isinstance(b, mmod_rect) for b in cb)
    # the input boxes are not changed
    assert boxes[1][1] == mmod_rect(rectangle(30, 40, 44, 49)) and boxes[1][0].ignore


def test_random_cropper_invariants():
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (60, 70, 3), dtype=np.uint8) for _ in range(3)]
    boxes = [[mmod_rect(rectangle(10, 10, 39, 29))], [mmod_rect(rectangle(30, 5, 49, 44)),
                                                     mmod_rect(rectangle(0, 40, 8, 59))], []]
    c = random_cropper(chip_dims=(24, 32), min_object_length_long_dim=12, min_object_length_short_dim=6,
                       seed="inv")
    crops, crop_boxes = c(40, images, boxes)
    window = rectangle(0, 0, 31, 23)
    kept = 0
    for crop, cb in zip(crops, crop_boxes):
        assert crop.shape == (24, 32, 3) and crop.dtype == np.uint8
        for b in cb:
            assert not window.intersect(b.rect).is_empty()          # wholly outside: dropped
            if not b.ignore:                                         # kept boxes: inside and big enough
                kept += 1
                assert window.contains(b.rect)
                assert b.rect.width() >= 6 and b.rect.height() >= 6
                assert max(b.rect.width(), b.rect.height()) >= 12
    assert kept > 10


def test_random_cropper_flips():
    # an image that brightens to the right, an object in its left half: a flipped crop darkens
    # to the right and its box is mirrored in the crop window
    img = np.tile((np.arange(80) * 3).astype(np.uint8), (80, 1))
    box = [mmod_rect(rectangle(10, 30, 29, 49))]
    kw = dict(chip_dims=(40, 40), max_rotation_degrees=0, translate_amount=0, background_crops_fraction=0,
              min_object_length_long_dim=10, min_object_length_short_dim=5)
    c = random_cropper(seed=5, **kw)
    seen = set()
    for _ in range(12):
        crop, cb = c.crop(img, box)
        flipped = int(crop[20, 30]) < int(crop[20, 10])
        seen.add(flipped)
        (b,) = cb
        # the box's sides show the object's sides (x = 10 and 29: values 30 and 87), swapped when
        # flipped
        left, right = int(crop[20, b.rect.l]), int(crop[20, b.rect.r])
        assert (left > right) == flipped
        assert abs(min(left, right) - 30) <= 8 and abs(max(left, right) - 87) <= 8
    assert seen == {True, False}
    # randomly_flip=False draws no flip number: never flipped
    c = random_cropper(seed=5, randomly_flip=False, **kw)
    for _ in range(6):
        crop, _ = c.crop(img, box)
        assert int(crop[20, 30]) > int(crop[20, 10])


def test_random_cropper_yolo_rect_boxes_stay_drectangles():
    img = _ramp(100, 100, 0)
    c = random_cropper(chip_dims=(50, 50), min_object_length_long_dim=10, min_object_length_short_dim=5,
                       background_crops_fraction=0, seed=2)
    crop, cb = c.crop(img, [yolo_rect(drectangle(20, 20, 59.5, 69.5), label="a")])
    assert len(cb) == 1 and isinstance(cb[0], yolo_rect) and isinstance(cb[0].rect, drectangle)
    assert cb[0].label == "a"


def test_random_cropper_settings_and_errors():
    c = random_cropper()
    assert (c.get_chip_dims().rows, c.get_chip_dims().cols) == (300, 300)
    assert c.get_randomly_flip() and c.get_max_rotation_degrees() == 30
    assert (c.get_min_object_length_long_dim(), c.get_min_object_length_short_dim()) == (75, 30)
    assert c.get_max_object_size() == 0.7 and c.get_background_crops_fraction() == 0.5
    assert c.get_translate_amount() == 0.1 and c.get_min_object_coverage() == 1.0
    c.set_max_rotation_degrees(-12)
    assert c.get_max_rotation_degrees() == 12
    c.set_chip_dims(chip_dims(10, 20))
    assert str(c).splitlines()[1:3] == ["  chip_dims.rows:              10",
                                        "  chip_dims.cols:              20"]
    for bad in (lambda: c.set_min_object_size(10, 20), lambda: c.set_min_object_size(10, 0),
                lambda: c.set_max_object_size(0), lambda: c.set_background_crops_fraction(1.5),
                lambda: c.set_translate_amount(-1), lambda: c.set_min_object_coverage(0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(TypeError, match="unknown settings"):
        random_cropper(chip_size=3)
    img = _ramp(40, 40, 0)
    with pytest.raises(ValueError, match="empty"):
        c(3, [], [])
    with pytest.raises(ValueError, match="2 images but 1"):
        c(3, [img, img], [[]])
    with pytest.raises(ValueError, match=r"box 1 of image 0 .* outside the 40x40 image"):
        c(3, [img], [[mmod_rect(rectangle(1, 1, 10, 10)), mmod_rect(rectangle(50, 50, 60, 60))]])
    with pytest.raises(TypeError, match="box 0 of image 0 must be an mmod_rect"):
        c(3, [img], [[rectangle(1, 1, 10, 10)]])
    with pytest.raises(ValueError, match="empty"):
        c.crop(np.zeros((0, 5), np.uint8), [])
    with pytest.raises(ValueError, match="came out 0x0 pixels"):
        random_cropper(chip_dims=(2, 2))(np.zeros((1, 1), np.uint8))
    with pytest.raises(TypeError, match="list of images"):
        c(img, [[]])


# -- jitter_image ------------------------------------------------------------------------------

_DLIB_JITTER = """
import sys, numpy as np, dlib
img = np.load(sys.argv[1])
np.save(sys.argv[2], np.stack(dlib.jitter_image(img, int(sys.argv[3]), sys.argv[4] == "1")))
"""


def _dlib_jitters(tmp_path, img, n, colors):
    src, dst = tmp_path / "img.npy", tmp_path / "out.npy"
    np.save(src, img)
    subprocess.run([sys.executable, "-c", _DLIB_JITTER, str(src), str(dst), str(n), "1" if colors else "0"],
                   check=True, timeout=60)
    return np.load(dst)


@needs_dlib
def test_jitter_image_matches_dlib_bin(tmp_path):
    rng = np.random.default_rng(1)
    even = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
    odd = rng.integers(0, 256, (37, 37, 3), dtype=np.uint8)
    # even sides, with dlib-bin's colour disturbance: pixel for pixel
    theirs = _dlib_jitters(tmp_path, even, 30, True)
    ours = jitter_images(even, dlib_rand(), 30, disturb_colors=True)
    assert all(np.array_equal(a, b) for a, b in zip(theirs, ours))
    # odd sides: the centre pixel's sample lands exactly on a pixel, where the last bit of the
    # chip's affine map decides a truncation; find_affine_transform repeats dlib's own SVD-based
    # pinv, so this is exact too (with numpy's pinv, 76% of 37x37 crops were 1 off there)
    theirs = _dlib_jitters(tmp_path, odd, 30, False)
    ours = jitter_images(odd, dlib_rand(), 30)
    assert all(np.array_equal(a, b) for a, b in zip(theirs, ours))


def test_jitter_image_draws_and_errors():
    img = _ramp(20, 20, 0)
    r = dlib_rand("j")
    crop = jitter_image(img, r)
    assert crop.shape == img.shape and crop.dtype == img.dtype
    r2 = dlib_rand("j")
    for _ in range(5 * 2):         # 5 get_double_in_range / get_random_double draws, 2 words each
        r2.get_random_32bit_number()
    assert r.get_random_32bit_number() == r2.get_random_32bit_number()
    # jitter_images = jitter_image then disturb_colors, in turn
    rgb = np.stack([img] * 3, -1)
    a = jitter_images(rgb, dlib_rand(4), 2, disturb_colors=True)
    r = dlib_rand(4)
    for want in a:
        got = jitter_image(rgb, r)
        disturb_colors(got, r)
        assert np.array_equal(got, want)
    with pytest.raises(ValueError, match="square"):
        jitter_image(np.zeros((10, 12), np.uint8), dlib_rand())
    with pytest.raises(ValueError, match="square"):
        jitter_image(np.zeros((0, 0), np.uint8), dlib_rand())
    with pytest.raises(TypeError, match="dlib_rand"):
        jitter_image(img, np.random.default_rng())
    assert get_rect(crop) == rectangle(0, 0, 19, 19)
