"""Image pyramids on images (dnnpy.image.pyramid): pyramid_down(N)(img) for every N against
dlib-bin and dlib's source, create_tiled_pyramid against dlib-bin's level operations and the
pyramid input layers' tensors, load_image_dataset's shrink_big_images, image_plane."""

import numpy as np
import pytest

from dnnpy.data import image_dataset_file, image_dataset_metadata, load_image_dataset, save_image_dataset_metadata
from dnnpy.data.imglab import shrink_big_image
from dnnpy.geometry import ignored_mmod_rect, mmod_rect, rectangle
from dnnpy.image import (compute_tiled_image_pyramid_details, create_tiled_pyramid, pyramid_down, resize_image,
                         save_png)
from dnnpy.inputs import input_grayscale_image_pyramid, input_rgb_image_pyramid

from dnnpy.tensor import image_plane, resizable_tensor

try:
    import dlib
except ImportError:  # dlib-bin is a test oracle only
    dlib = None

needs_dlib = pytest.mark.skipif(dlib is None, reason="dlib-bin not installed")


def _img(rng, shape, dtype=np.uint8):
    if np.issubdtype(dtype, np.floating):
        return (rng.random(shape) * 250).astype(dtype)
    if np.issubdtype(dtype, np.signedinteger):
        return rng.integers(-300, 300, shape).astype(dtype)
    return rng.integers(0, 256, shape).astype(dtype)


def _three_two_reference(img):
    """dlib's pyramid_down_3_2 for a grayscale integer image, written as dlib's loops (small
    images only: the oracle for machines without dlib-bin)."""
    a = img.astype(np.int64)
    nr, nc = a.shape

    def f(y, x):  # separable_3x3_filter_block_grayscale with [2 12 2] at one pixel
        return sum(wy * (2 * a[y + dy, x - 1] + 12 * a[y + dy, x] + 2 * a[y + dy, x + 1])
                   for dy, wy in ((-1, 2), (0, 12), (1, 2)))

    out = np.zeros((2 * (nr - 2) // 3, 2 * (nc - 2) // 3), np.int64)
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            (ya, yb), (xa, xb) = [(1 + 3 * (o // 2) + 2 * (o % 2), 2 + 3 * (o // 2)) for o in (r, c)]
            out[r, c] = (9 * f(ya, xa) + 3 * f(yb, xa) + 3 * f(ya, xb) + f(yb, xb)) // 4096
    return out.astype(img.dtype)


def test_pyramid_down_every_n_from_dlib_source():
    rng = np.random.default_rng(0)
    img = _img(rng, (14, 17))
    np.testing.assert_array_equal(pyramid_down(3)(img), _three_two_reference(img))
    assert pyramid_down(3)(img).shape == (8, 10)
    assert pyramid_down(1)(img).shape == (0, 0)                      # pyramid_disable
    assert pyramid_down(3)(img[:8]).shape == (0, 0)                  # sides <= 8: empty
    for n in (4, 6, 11):   # (N-1)*nr/N in integers, then dlib's bilinear resize_image
        out = pyramid_down(n)(img)
        assert out.shape == ((n - 1) * 14 // n, (n - 1) * 17 // n)
        np.testing.assert_array_equal(out, resize_image(img, *out.shape))
    rgb = _img(rng, (12, 10, 3))
    assert pyramid_down(6)(rgb).shape == (10, 8, 3) and pyramid_down(3)(rgb).dtype == np.uint8
    with pytest.raises(ValueError, match=r"pyramid_down\(6\)\(img\): expected an HxW"):
        pyramid_down(6)(img[0])


@needs_dlib
def test_pyramid_down_every_n_matches_dlib(kernels):
    rng = np.random.default_rng(1)
    cases = [((31, 29), np.uint8), ((40, 33), np.float32), ((17, 12), np.int16),
             ((20, 23), np.float64), ((9, 9), np.uint16), ((8, 20), np.uint8), ((41, 44, 3), np.uint8)]
    for n in (1, 2, 3, 4, 5, 6, 7, 20):
        for shape, dtype in cases:
            img = _img(rng, shape, dtype)
            ours, ref = pyramid_down(n)(img), dlib.pyramid_down(n)(img)
            assert ours.dtype == ref.dtype and ours.shape == ref.shape, (n, shape, dtype)
            np.testing.assert_array_equal(ours, ref, err_msg=f"N={n} {shape} {dtype}")


@needs_dlib
@pytest.mark.parametrize("n", [2, 3, 6])
def test_create_tiled_pyramid_levels_match_dlib(n):
    rng = np.random.default_rng(2)
    img = _img(rng, (70, 64, 3))
    pyr = pyramid_down(n)
    tiled, rects = create_tiled_pyramid(img, pyr, 10, 11)
    ref_rects, NR, NC = compute_tiled_image_pyramid_details(pyr, 70, 64, 10, 11)
    assert rects == ref_rects and tiled.shape == (NR, NC, 3) and len(rects) >= 3
    covered = np.zeros((NR, NC), bool)
    level = img
    for i, r in enumerate(rects):
        if i:   # each level from the one above it, resampled into its rectangle
            level = dlib.pyramid_down(n)(level) if n <= 3 else dlib.resize_image(level, r.height(), r.width())
        np.testing.assert_array_equal(tiled[r.t:r.b + 1, r.l:r.r + 1], level, err_msg=f"level {i}")
        covered[r.t:r.b + 1, r.l:r.r + 1] = True
    assert not tiled[~covered].any()


def test_create_tiled_pyramid_defaults_and_errors():
    img = np.full((30, 40), 7, np.uint8)
    tiled, rects = create_tiled_pyramid(img, pyramid_down(2))       # dlib's 10 and 0
    assert rects[0] == rectangle(0, 0, 39, 29)
    assert (tiled.shape[0], tiled.shape[1]) == compute_tiled_image_pyramid_details(pyramid_down(2), 30, 40, 10, 0)[1:]
    assert create_tiled_pyramid(img[:0], pyramid_down(6))[0].shape == (0, 0)
    with pytest.raises(ValueError, match="outer_padding must be an integer >= 0"):
        create_tiled_pyramid(img, pyramid_down(6), 10, -1)
    with pytest.raises(TypeError, match="pyr must be a pyramid"):
        create_tiled_pyramid(img, 6)
    with pytest.raises(ValueError, match="too small for a tiled pyramid"):
        create_tiled_pyramid(np.zeros((40, 8), np.uint8), pyramid_down(6), 30)


@pytest.mark.parametrize("gray", [False, True])
def test_input_layer_tensor_is_the_tiled_image(gray):
    """dlib's input layer resamples each level of the float tensor with tt::resize_bilinear,
    create_tiled_pyramid each uint8 level with resize_image (rounded for gray, truncated for
    RGB), so level i differs by less than i (rounding at most 1 per level, never amplified
    by bilinear averaging) plus float32 noise; level 0 and the layout are the same."""
    rng = np.random.default_rng(3)
    img = _img(rng, (60, 70) if gray else (60, 70, 3))
    pyr = pyramid_down(6)
    layer = (input_grayscale_image_pyramid if gray else input_rgb_image_pyramid)[pyr]()
    data = resizable_tensor()
    layer.to_tensor([img], data)
    tiled, rects = create_tiled_pyramid(img, pyr, layer.get_pyramid_padding(), layer.get_pyramid_outer_padding())
    plane = data.numpy()[0].transpose(1, 2, 0) * 256
    if gray:
        plane = plane[..., 0]
    else:
        plane += np.array([layer.avg_red, layer.avg_green, layer.avg_blue])
    assert rects == data.annotation and plane.shape == tiled.shape and len(rects) > 8
    diffs = [np.abs(plane[r.t:r.b + 1, r.l:r.r + 1] - tiled[r.t:r.b + 1, r.l:r.r + 1]).max() for r in rects]
    assert diffs[0] < 1e-4
    assert all(d <= i + 1e-3 for i, d in enumerate(diffs)), diffs
    assert max(diffs) > 1   # the two really are computed differently (the bound is not vacuous)


def _shrink_dataset(tmp_path, img):
    save_png(img, str(tmp_path / "a.png"))
    boxes = [image_dataset_metadata.box(rectangle(10, 12, 49, 51), label="car"),
             image_dataset_metadata.box(rectangle(3, 4, 60, 70), ignore=True)]
    meta = image_dataset_metadata.dataset([image_dataset_metadata.image("a.png", boxes),
                                           image_dataset_metadata.image("a.png", boxes[1:])])
    save_image_dataset_metadata(meta, str(tmp_path / "d.xml"))
    return str(tmp_path / "d.xml")


def test_shrink_big_images(tmp_path):
    rng = np.random.default_rng(4)
    img = _img(rng, (90, 80, 3))
    xml = _shrink_dataset(tmp_path, img)
    images, boxes = load_image_dataset(image_dataset_file(xml).shrink_big_images(100))
    # smallest box 40x40 = 1600: one 2:1 step (1600/4 = 400 > 100, 400/4 = 100 is not), then
    # one 3:2 step (400 * 4/9 = 177.8 > 100, 79 is not)
    expected = pyramid_down(3)(pyramid_down(2)(img))
    np.testing.assert_array_equal(images[0], expected)
    r2 = rectangle._coerce(pyramid_down(2).rect_down(rectangle(10, 12, 49, 51)))
    assert boxes[0][0].rect == rectangle._coerce(pyramid_down(3).rect_down(r2))
    assert boxes[0][1].ignore and boxes[0][0].label == "car"
    # only an ignored box: not shrunk (dlib would loop forever)
    assert images[1].shape == img.shape and boxes[1][0].rect == rectangle(3, 4, 60, 70)
    # no shrinking without the option, or under a high threshold
    assert load_image_dataset(xml)[0][0].shape == img.shape
    assert load_image_dataset(image_dataset_file(xml).shrink_big_images())[0][0].shape == img.shape
    if dlib is not None:   # the boxes as dlib-bin's rect_down rounds them
        d = dlib.pyramid_down(3).rect_down(dlib.pyramid_down(2).rect_down(dlib.rectangle(10, 12, 49, 51)))
        assert (boxes[0][0].rect.l, boxes[0][0].rect.t, boxes[0][0].rect.r, boxes[0][0].rect.b) == \
            (d.left(), d.top(), d.right(), d.bottom())


def test_shrink_big_image_leaves_inputs_alone():
    img = np.zeros((50, 50), np.uint8)
    rects = [mmod_rect(rectangle(0, 0, 39, 39)), ignored_mmod_rect(rectangle(1, 1, 5, 5))]
    out, new = shrink_big_image(img, rects, 200)
    assert out.shape == (23, 23) and new[0].rect != rects[0].rect and rects[0].rect == rectangle(0, 0, 39, 39)
    assert new[1].ignore


def test_image_plane():
    t = resizable_tensor()
    t.set_size(2, 3, 4, 5)
    t.assign(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
    p = image_plane(t, 1, 2)
    np.testing.assert_array_equal(p, np.arange(120).reshape(2, 3, 4, 5)[1, 2])
    p[0, 0] = -1   # a copy
    assert t.numpy()[1, 2, 0, 0] == 100
    np.testing.assert_array_equal(image_plane(t), t.numpy()[0, 0])
    with pytest.raises(ValueError, match=r"image_plane: k=3 is out of range .*\(2, 3, 4, 5\)"):
        image_plane(t, 0, 3)
    # dlib's mmod_find_cars: max_pointwise over the channels is np.maximum
    best = image_plane(t, 0, 0)
    for k in range(1, 3):
        best = np.maximum(best, image_plane(t, 0, k))
    np.testing.assert_array_equal(best, t.numpy()[0].max(axis=0))
