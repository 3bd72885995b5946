"""dnnpy.image chips and transforms (T4) against dlib-bin where it exposes them
(extract_image_chip(s), chip_details, get_face_chip(_details), insert_image_chip,
pyramid_down, transform_image), and against dlib's source semantics elsewhere."""

import math

import numpy as np
import pytest

from dnnpy.geometry import drectangle, full_object_detection, rectangle
from dnnpy.image import (chip_details, chip_dims, extract_image_chip, extract_image_chips,
                         find_affine_transform, find_similarity_transform, get_face_chip,
                         get_face_chip_details, get_mapping_to_chip, insert_image_chip,
                         interpolate_nearest_neighbor, interpolate_quadratic, inv, map_det_to_chip,
                         point_transform_affine, rectangle_transform, rotate_point, transform_image)
from dnnpy.image.matrix_la import pinv, svd3
from dnnpy.inputs import pyramid_down

try:
    import dlib
except ImportError:  # the oracle is optional
    dlib = None
needs_dlib = pytest.mark.skipif(dlib is None, reason="dlib-bin not installed")


def _img(rng, shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


def _dlib_chip(d):
    r = d.rect
    return dlib.chip_details(dlib.drectangle(r.l, r.t, r.r, r.b), dlib.chip_dims(d.rows, d.cols), d.angle)


# chips whose sample points do not fall on exact pixel boundaries (see the note in
# test_extract_image_chip_sweep): scaled, rotated, much smaller (pyramid levels), partly outside
CHIPS = [
    chip_details(drectangle(10.3, 5.7, 60.2, 44.9), chip_dims(20, 25), 0.0),
    chip_details(drectangle(-8.4, 12.1, 40.6, 70.3), chip_dims(13, 11), 0.7),
    chip_details(drectangle(3.5, 2.25, 95.1, 77.6), chip_dims(9, 12), -2.1),    # pyramid depth 2
    chip_details(drectangle(20.2, 30.9, 29.7, 39.1), chip_dims(31, 29), 0.3),   # enlarging
    chip_details(drectangle(70.1, 60.2, 130.7, 110.4), chip_dims(15, 15), 1.2),  # partly outside
]


@needs_dlib
@pytest.mark.parametrize("shape", [(80, 100), (80, 100, 3)])
def test_extract_image_chips_match_dlib(shape):
    img = _img(np.random.default_rng(0), shape)
    ours = extract_image_chips(img, CHIPS)
    theirs = dlib.extract_image_chips(img, [_dlib_chip(d) for d in CHIPS])
    for d, a, b in zip(CHIPS, ours, theirs):
        assert a.shape == b.shape == (d.rows, d.cols) + shape[2:]
        np.testing.assert_array_equal(a, b, err_msg=repr(d))
    for d, b in zip(CHIPS, theirs):  # one at a time: a different bounding sub-image, same chips
        np.testing.assert_array_equal(extract_image_chip(img, d), dlib.extract_image_chip(img, _dlib_chip(d)))


@needs_dlib
def test_extract_image_chip_sweep():
    """Random chips, integer rects (and integer sizes) included: there samples land exactly on
    pixel boundaries, where the last bit of the chip's affine map decides between neighbours.
    find_affine_transform repeats dlib's own SVD-based pinv operation for operation, so every
    chip equals dlib's (with numpy's pinv, 22% of integer-aligned chips differed)."""
    rng = np.random.default_rng(1)
    bad = []
    for k in range(120):
        H, W = rng.integers(12, 70, 2)
        img = _img(rng, (H, W, 3) if k % 2 else (H, W))
        l, t = rng.uniform(-10, W), rng.uniform(-10, H)
        w, h = rng.uniform(2, 70, 2)
        if k % 3 == 0:
            l, t = float(int(l)), float(int(t))
            if k % 2:
                w, h = float(int(w)), float(int(h))
        d = chip_details(drectangle(l, t, l + w - 1, t + h - 1), chip_dims(*rng.integers(1, 30, 2)),
                         rng.choice([0.0, rng.uniform(-3, 3)]))
        a, b = extract_image_chip(img, d), dlib.extract_image_chip(img, _dlib_chip(d))
        if not np.array_equal(a, b):
            bad.append((k, d))
    assert not bad, bad


def test_plain_copy_and_background():
    img = _img(np.random.default_rng(2), (20, 30))
    d = chip_details(rectangle(-3, 5, 10, 24))  # rows/cols from the rect: a plain copy
    assert (d.rows, d.cols, d.angle) == (20, 14, 0.0)
    chip = extract_image_chip(img, d)
    np.testing.assert_array_equal(chip[:15, 3:], img[5:20, 0:11])
    assert not chip[:, :3].any() and not chip[15:].any()


@needs_dlib
def test_chip_details_constructors_match_dlib():
    rng = np.random.default_rng(3)
    for _ in range(50):
        l, t = rng.uniform(0, 50, 2)
        w, h = rng.uniform(1, 60, 2)
        size = int(rng.integers(1, 3000))
        a = chip_details(drectangle(l, t, l + w, t + h), size, 0.3)
        b = dlib.chip_details(dlib.drectangle(l, t, l + w, t + h), size, 0.3)
        assert (a.rows, a.cols, a.angle) == (b.rows, b.cols, b.angle)
    e = chip_details(drectangle(), 50)
    assert (e.rows, e.cols) == (7, 7)
    d = chip_details(drectangle(0.4, 0, 10.6, 4.5))
    assert (d.rows, d.cols) == (6, 11)  # lround(5.5), lround(11.2)


@needs_dlib
def test_chip_details_from_points_match_dlib_bit_for_bit():
    rng = np.random.default_rng(6)
    for k in range(40):
        n = int(rng.integers(2, 8))
        cp, ip = rng.uniform(0, 100, (n, 2)), rng.uniform(0, 100, (n, 2))
        if k % 2:
            cp, ip = np.round(cp), np.round(ip)
        a = chip_details(cp.tolist(), ip.tolist(), chip_dims(40, 60))
        b = dlib.chip_details(dlib.dpoints([dlib.dpoint(*p) for p in cp]),
                              dlib.dpoints([dlib.dpoint(*p) for p in ip]), dlib.chip_dims(40, 60))
        assert (a.angle, *a.rect) == (b.angle, b.rect.left(), b.rect.top(), b.rect.right(), b.rect.bottom())


@needs_dlib
@pytest.mark.parametrize("n", [5, 68])
def test_face_chips_match_dlib(n):
    rng = np.random.default_rng(4 + n)
    img = _img(rng, (120, 140, 3))
    pts = [(int(x), int(y)) for x, y in rng.uniform(20, 110, (n, 2))]
    det = full_object_detection(rectangle(10, 10, 100, 100), pts)
    ddet = dlib.full_object_detection(dlib.rectangle(10, 10, 100, 100),
                                      dlib.points([dlib.point(*p) for p in pts]))
    a, b = get_face_chip_details(det, 150, 0.25), dlib.get_face_chip_details(ddet, 150, 0.25)
    assert (a.rows, a.cols) == (b.rows, b.cols) == (150, 150)
    # bit for bit: dlib's similarity fit (its own 2x2 SVD) and its rounding of the canonical points
    for size, pad in [(150, 0.25), (97, 0.2), (60, 0.37)]:
        a, b = get_face_chip_details(det, size, pad), dlib.get_face_chip_details(ddet, size, pad)
        assert (a.angle, *a.rect) == (b.angle, b.rect.left(), b.rect.top(), b.rect.right(), b.rect.bottom())
    # dlib-bin's get_face_chip takes padding as a float32 (0.2 is not 0.2 there)
    for pad in (0.25, 0.2):
        np.testing.assert_array_equal(get_face_chip(img, det, 60, pad), dlib.get_face_chip(img, ddet, 60, pad))
    assert get_face_chip_details([det, det], 80) == [get_face_chip_details(det, 80)] * 2
    with pytest.raises(ValueError, match="5- or 68-point"):
        get_face_chip_details(full_object_detection(rectangle(0, 0, 9, 9), pts[:4]))


@needs_dlib
def test_insert_image_chip_matches_dlib():
    rng = np.random.default_rng(6)
    img = _img(rng, (50, 60))
    ref = img.copy()
    d = chip_details(drectangle(10.3, 5.2, 40.7, 30.1), chip_dims(17, 23), 0.4)
    chip = _img(rng, (17, 23))
    insert_image_chip(img, chip, d)
    dlib.insert_image_chip(ref, chip, _dlib_chip(d))
    np.testing.assert_array_equal(img, ref)
    with pytest.raises(ValueError, match="chip's shape"):
        insert_image_chip(img, chip[:5], d)


@needs_dlib
def test_pyramid_down_image_matches_dlib():
    rng = np.random.default_rng(7)
    for shape in [(9, 9), (20, 31), (40, 33, 3), (17, 64, 3), (8, 20)]:
        img = _img(rng, shape)
        np.testing.assert_array_equal(pyramid_down(2)(img), dlib.pyramid_down(2)(img))
    img = (rng.random((20, 31)) * 100).astype(np.float32)
    np.testing.assert_array_equal(pyramid_down(2)(img), dlib.pyramid_down(2)(img))
    with pytest.raises(ValueError, match=r"pyramid_down\(3\)\(img\): expected an HxW"):
        pyramid_down(3)(img[0])   # every N works on images now (tests/test_image_pyramid_tools.py)


@needs_dlib
def test_transform_image_matches_dlib():
    img = _img(np.random.default_rng(8), (40, 50, 3))
    t = point_transform_affine([[0.83, -0.31], [0.29, 0.91]], [7.3, -2.6])
    theirs = dlib.transform_image(img, dlib.point_transform_projective(
        np.array([[0.83, -0.31, 7.3], [0.29, 0.91, -2.6], [0, 0, 1]])), 35, 45)
    np.testing.assert_array_equal(transform_image(img, t, 35, 45), theirs)
    # a plain callable on coordinate arrays works the same way
    np.testing.assert_array_equal(transform_image(img, lambda x, y: t.map_arrays(x, y), 35, 45), theirs)


def test_nearest_and_quadratic_interpolation():
    img = np.arange(30, dtype=np.uint8).reshape(5, 6)
    shift = point_transform_affine(b=[0.4, 0.6])   # nearest: x + 0.4 rounds to x, y + 0.6 to y + 1
    out = transform_image(img, shift, 5, 6, interpolate_nearest_neighbor())
    np.testing.assert_array_equal(out[:4], img[1:])
    assert not out[4].any()
    # a quadratic (here linear) ramp is reproduced exactly inside, background on the border
    ramp = np.add.outer(np.arange(8.0) * 2, np.arange(9.0) * 3)
    out = transform_image(ramp, point_transform_affine(b=[0.25, 0.25]), 8, 9, interpolate_quadratic())
    np.testing.assert_allclose(out[1:-2, 1:-2], ramp[1:-2, 1:-2] + 0.25 * 2 + 0.25 * 3, rtol=1e-7)
    assert (out[0] == 0).all() and (out[:, -1] == 0).all()


def test_point_transforms():
    t = point_transform_affine([[2.0, 1.0], [-1.0, 3.0]], [5.0, -4.0])
    assert t((1, 2)) == (9.0, 1.0)
    assert inv(t)(t((3.5, -1.25))) == pytest.approx((3.5, -1.25))
    assert (t * inv(t))((7, 8)) == pytest.approx((7, 8))
    frm = [(0, 0), (10, 0), (0, 10), (3, 7)]
    f = find_affine_transform(frm, [t(p) for p in frm])
    np.testing.assert_allclose(f.m, t.m, atol=1e-12)
    np.testing.assert_allclose(f.b, t.b, atol=1e-12)
    # a similarity: rotation 0.5, scale 1.7, translation (3, -2), recovered from noisy-free points
    s = point_transform_affine(1.7 * np.array([[math.cos(0.5), -math.sin(0.5)], [math.sin(0.5), math.cos(0.5)]]),
                               [3, -2])
    g = find_similarity_transform(frm, [s(p) for p in frm])
    np.testing.assert_allclose(g.m, s.m, atol=1e-12)
    np.testing.assert_allclose(g.b, s.b, atol=1e-12)
    # a mirror image is not a similarity: the best one has det > 0
    assert np.linalg.det(find_similarity_transform(frm, [(-x, y) for x, y in frm]).m) > 0
    assert rotate_point((1, 1), (2, 1), math.pi / 2) == pytest.approx((1, 2))  # clockwise on screen
    with pytest.raises(ValueError, match="find_affine_transform"):
        find_affine_transform(frm[:2], frm[:2])


def test_matrix_la_svd3_and_pinv():
    """dlib's SVD/pinv port: right up to rounding (float64, cond ~ 1e2: 1e-12 is ample), for
    tall, square, wide and rank-deficient matrices; singular values unsorted but >= 0."""
    rng = np.random.default_rng(3)
    for shape in [(3, 3), (5, 3), (2, 2), (3, 7)]:
        a = rng.normal(size=shape)
        if shape[0] >= shape[1]:
            u, w, v = svd3(a.tolist())
            u, w, v = np.array(u), np.array(w), np.array(v)
            assert (w >= 0).all() and u.shape == shape
            np.testing.assert_allclose(u @ np.diag(w) @ v.T, a, atol=1e-12)
            np.testing.assert_allclose(v.T @ v, np.eye(shape[1]), atol=1e-12)
        np.testing.assert_allclose(np.array(pinv(a.tolist())), np.linalg.pinv(a), atol=1e-12)
    low = np.outer([1.0, 2, 3], [4.0, 5, 6])  # rank 1: the tiny singular values are dropped
    np.testing.assert_allclose(np.array(pinv(low.tolist())), np.linalg.pinv(low), atol=1e-12)
    with pytest.raises(ValueError, match="svd3"):
        svd3([[1.0, 2.0]])
    with pytest.raises(ValueError, match="pinv"):
        pinv([[1.0, 2.0], [3.0]])


def test_rectangle_transform_and_mapping_to_chip():
    # a 90 degree turn keeps the box's area; a scale scales it
    rt = rectangle_transform(point_transform_affine([[0, -1], [1, 0]]))
    r = rt(drectangle(0, 0, 9, 4))
    assert (r.width(), r.height()) == pytest.approx((5, 10))
    assert rectangle_transform(point_transform_affine(2 * np.eye(2)))(rectangle(0, 0, 9, 9)) == rectangle(0, 0, 18, 18)
    d = chip_details(drectangle(10, 20, 29, 59), chip_dims(10, 5), 0.0)
    m = get_mapping_to_chip(d)
    assert m((10, 20)) == pytest.approx((0, 0)) and m((29, 59)) == pytest.approx((4, 9))
    det = full_object_detection(rectangle(10, 20, 29, 59), [(20, 40)])
    mapped = map_det_to_chip(det, d)
    assert mapped.part(0) == pytest.approx(m((20, 40))) and mapped.rect == rectangle(0, 0, 4, 9)


def test_bad_input():
    img = np.zeros((10, 10), np.uint8)
    with pytest.raises(ValueError, match="empty size or rect"):
        extract_image_chip(img, chip_details(drectangle(0, 0, 5, 5), chip_dims(0, 3)))
    with pytest.raises(ValueError, match="HxW"):
        extract_image_chip(np.zeros(5), chip_details(drectangle(0, 0, 5, 5), 9))
    with pytest.raises(TypeError, match="chip_details"):
        extract_image_chips(img, [drectangle(0, 0, 5, 5)])


def test_rect_helpers():
    from dnnpy.geometry import grow_rect, set_aspect_ratio, shrink_rect
    assert shrink_rect(rectangle(0, 0, 9, 9), 2) == rectangle(2, 2, 7, 7)
    assert grow_rect(rectangle(0, 0, 9, 9), 1, 2) == rectangle(-1, -2, 10, 11)
    assert grow_rect(drectangle(0, 0, 9, 9), 0.5) == drectangle(-0.5, -0.5, 9.5, 9.5)
    if dlib is not None:
        assert tuple(shrink_rect(rectangle(3, 4, 20, 30), 3)) == tuple(
            (lambda r: (r.left(), r.top(), r.right(), r.bottom()))(dlib.shrink_rect(dlib.rectangle(3, 4, 20, 30), 3)))
    r = set_aspect_ratio(rectangle(0, 0, 99, 24), 1.0)   # area 2500 -> 50x50 about the same centre
    assert (r.width(), r.height()) == (50, 50) and r == rectangle(24, -13, 73, 36)
    r = set_aspect_ratio(rectangle(0, 0, 99, 99), 0.5)   # w = trunc(sqrt(5000) + .5) = 71, h = 142
    assert (r.width(), r.height()) == (71, 142)
    with pytest.raises(ValueError, match="ratio"):
        set_aspect_ratio(rectangle(0, 0, 9, 9), 0)
