"""Image pyramids: pyramid_down maps, dlib's tiled layout, the pyramid input layers, and
input/output coordinate maps through a net."""

import numpy as np
import pytest

import dnnpy
from dnnpy.geometry import drectangle, rectangle
from dnnpy.inputs import input_grayscale_image_pyramid, input_rgb_image_pyramid, pyramid_down
from dnnpy.inputs.pyramid import compute_tiled_image_pyramid_details
from dnnpy.layers.conv import con
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.templates import skip_templates, tag_templates
from dnnpy.visitors.maps import input_tensor_to_output_tensor, output_tensor_to_input_tensor


def test_pyramid_down_point_maps_and_sizes():
    p6, p2, p3 = pyramid_down(6), pyramid_down(2), pyramid_down(3)
    assert pyramid_down(6) is pyramid_down[6] and repr(p6) == "pyramid_down[6]"
    assert p6.point_down((10, 20)) == pytest.approx(((10 - 0.3) * 5 / 6, (20 - 0.3) * 5 / 6))
    assert p2.point_down((10, 20)) == pytest.approx((10 / 2 - 1.25, 20 / 2 - 0.75))
    assert p3.point_up((4, 6)) == pytest.approx((4 * 1.5 + 1.5, 6 * 1.5 + 1.5))
    for pyr in (p2, p3, p6, pyramid_down(4)):
        assert pyr.point_up(pyr.point_down((7.5, -3.0), 3), 3) == pytest.approx((7.5, -3.0))
    assert p6.output_size(100, 61) == (83, 50)        # floor(5/6 * n)
    assert p2.output_size(100, 61) == (48, 29)        # (n - 3) / 2
    assert p3.output_size(100, 61) == (65, 39)        # 2 (n - 2) / 3
    assert pyramid_down(1).output_size(100, 61) == (0, 0)
    r = p6.rect_up(drectangle(1, 2, 3, 4))
    assert r == drectangle(*p6.point_up((1, 2)), *p6.point_up((3, 4)))
    with pytest.raises(ValueError, match="pyramid_down"):
        pyramid_down(0)


def _layout_reference(nr, nc, pad=10, outer=11, n=6):
    """dlib's compute_tiled_image_pyramid_details written out plainly (normal sizes only)."""
    sizes = [(nr, nc)]
    while True:
        nr, nc = int(np.floor((n - 1) / n * nr)), int(np.floor((n - 1) / n * nc))
        if nr * nc == 0 or nr < 5:
            break
        sizes.append((nr, nc))
    total = sum(h + pad for h, _ in sizes) - 2 * pad
    h0, w0 = sizes[0]
    height, prev_w = 0, 0
    for h, w in sizes:
        if w <= w0 - prev_w - pad and (height - h0) * 2 >= total - h0:
            break
        height += h + pad
        prev_w = w
    height -= pad
    rects, y, i = [], outer, 0
    while y < height + outer and i < len(sizes):
        h, w = sizes[i]
        rects.append((outer, y, outer + w - 1, y + h - 1))
        y += h + pad
        i += 1
    y -= pad
    while i < len(sizes):
        h, w = sizes[i]
        r = (outer + w0 - w, y - h, outer + w0 - 1, y - 1)
        if not (r[0] > rects[0][2] or r[2] < rects[0][0] or r[1] > rects[0][3] or r[3] < rects[0][1]):
            break
        rects.append(r)
        y -= h + pad
        i += 1
    return rects, height + 2 * outer, w0 + 2 * outer


@pytest.mark.parametrize("nr,nc", [(100, 100), (50, 80), (200, 150), (37, 120), (64, 20)])
def test_tiled_layout_matches_dlib_formulas(nr, nc):
    rects, NR, NC = compute_tiled_image_pyramid_details(pyramid_down(6), nr, nc, 10, 11)
    want, wNR, wNC = _layout_reference(nr, nc)
    assert [tuple(r) for r in rects] == want and (NR, NC) == (wNR, wNC)
    assert rects[0] == rectangle(11, 11, 11 + nc - 1, 11 + nr - 1)
    plane = rectangle(0, 0, NC - 1, NR - 1)
    assert all(plane.contains(r) for r in rects)
    for i in range(len(rects)):
        for j in range(i + 1, len(rects)):
            assert rects[i].intersect(rects[j]).is_empty()


def test_tiled_layout_known_values():
    rects, NR, NC = compute_tiled_image_pyramid_details(pyramid_down(6), 100, 100, 10, 11)
    assert (NR, NC) == (418, 122) and len(rects) == 15
    assert rects[1] == rectangle(11, 121, 93, 203) and rects[5] == rectangle(72, 368, 110, 406)
    assert compute_tiled_image_pyramid_details(pyramid_down(6), 0, 5) == ([], 0, 0)


def _bilinear(src, nr, nc):
    """Align-corners bilinear resize in float64, loops."""
    out = np.zeros((nr, nc))
    ys = (src.shape[0] - 1) / max(nr - 1, 1)
    xs = (src.shape[1] - 1) / max(nc - 1, 1)
    for r in range(nr):
        for c in range(nc):
            y, x = r * ys, c * xs
            t, l = int(np.floor(y)), int(np.floor(x))
            b, rr = min(t + 1, src.shape[0] - 1), min(l + 1, src.shape[1] - 1)
            fy, fx = y - t, x - l
            out[r, c] = ((1 - fy) * ((1 - fx) * src[t, l] + fx * src[t, rr])
                         + fy * ((1 - fx) * src[b, l] + fx * src[b, rr]))
    return out


def test_rgb_pyramid_to_tensor_values():
    layer = input_rgb_image_pyramid[pyramid_down(6)]()
    rs = np.random.RandomState(1)
    imgs = [rs.randint(0, 256, (24, 30, 3)).astype(np.uint8) for _ in range(2)]
    data = resizable_tensor()
    layer.to_tensor(imgs, data)
    rects = data.annotation
    a = np.asarray(data, dtype=np.float64)
    assert data.shape == (2, 3, *compute_tiled_image_pyramid_details(pyramid_down(6), 24, 30, 10, 11)[1:])
    avg = np.array([122.782, 117.001, 104.298], dtype=np.float32)
    r0 = rects[0]
    lvl0 = (imgs[1].astype(np.float32) - avg) / np.float32(256)
    np.testing.assert_array_equal(a[1, :, r0.t:r0.b + 1, r0.l:r0.r + 1], lvl0.transpose(2, 0, 1))
    mask = np.zeros(data.shape[2:], bool)
    for r in rects:
        mask[r.t:r.b + 1, r.l:r.r + 1] = True
    assert np.all(a[:, :, ~mask] == 0)
    prev, cur = rects[0], rects[1]
    src = a[0, 2, prev.t:prev.b + 1, prev.l:prev.r + 1]
    np.testing.assert_allclose(a[0, 2, cur.t:cur.b + 1, cur.l:cur.r + 1],
                               _bilinear(src, cur.height(), cur.width()), atol=1e-5)


def test_grayscale_pyramid_and_float64():
    layer = input_grayscale_image_pyramid[pyramid_down(3)]()
    img = (np.arange(30 * 30) % 251).astype(np.uint8).reshape(30, 30)
    with default_dtype(np.float64):
        data = resizable_tensor()
        layer.to_tensor([img], data)
        assert data.dtype == np.float64
    assert [(r.height(), r.width()) for r in data.annotation] == [(30, 30), (18, 18), (10, 10), (5, 5)]
    r0, r1 = data.annotation[:2]
    a = np.asarray(data)
    np.testing.assert_array_equal(a[0, 0, r0.t:r0.b + 1, r0.l:r0.r + 1], img / 256.0)
    np.testing.assert_allclose(a[0, 0, r1.t:r1.b + 1, r1.l:r1.r + 1],
                               _bilinear(img / 256.0, r1.height(), r1.width()), atol=1e-12)


def test_coordinate_round_trips():
    layer = input_rgb_image_pyramid[pyramid_down(6)]()
    data = resizable_tensor()
    layer.to_tensor([np.zeros((120, 90, 3), np.uint8)], data)
    r = drectangle(20, 30, 50, 70)
    for level in range(4):
        scale = (5 / 6) ** level
        t = layer.image_space_to_tensor_space(data, scale, r)
        rect = data.annotation[level]
        assert rect.contains(rectangle._coerce(t))
        back = layer.tensor_space_to_image_space(data, t)
        assert tuple(back) == pytest.approx(tuple(r))
    assert layer.image_contained_point(data, (0, 0)) and layer.image_contained_point(data, (89, 119))
    assert not layer.image_contained_point(data, (90, 10))
    boxes = [drectangle(25.5, 20, 60, 44), drectangle(75, 130, 90, 170), drectangle(100, 400, 105, 410)]
    many = layer.tensor_space_to_image_space_many(data, *(np.array([getattr(b, a) for b in boxes])
                                                          for a in ("l", "t", "r", "b")))
    for i, b in enumerate(boxes):
        one = layer.tensor_space_to_image_space(data, b)
        assert tuple(v[i] for v in many) == pytest.approx(tuple(one))


def test_type_expr_repr_and_xml():
    T = input_rgb_image_pyramid[pyramid_down(6)]
    assert T is input_rgb_image_pyramid[pyramid_down[6]]
    assert T.type_expr() == "input_rgb_image_pyramid[pyramid_down[6]]"
    net_type = con[2, 3, 3, 1, 1, input_grayscale_image_pyramid[pyramid_down(3)]]
    assert dnnpy.net_type_from_string(repr(net_type)) is net_type
    assert dnnpy.net_type_from_string(repr(con[2, 3, 3, 1, 1, T])) is con[2, 3, 3, 1, 1, T]
    assert repr(T()) == ("input_rgb_image_pyramid(122.782,117.001,104.298) pyramid_padding=10 "
                         "pyramid_outer_padding=11")
    g = input_grayscale_image_pyramid[pyramid_down(3)]()
    g.set_pyramid_padding(4)
    assert repr(g) == "input_grayscale_image_pyramid() pyramid_padding=4 pyramid_outer_padding=11"
    assert g.to_xml() == "<input_grayscale_image_pyramid' pyramid_padding='4' pyramid_outer_padding='11'/>\n"
    with pytest.raises(TypeError, match="input_rgb_image_pyramid"):
        input_rgb_image_pyramid[6]


def test_pyramid_input_errors():
    layer = input_rgb_image_pyramid[pyramid_down(6)]()
    data = resizable_tensor()
    with pytest.raises(ValueError, match="input_rgb_image_pyramid"):
        layer.to_tensor([np.zeros((20, 20, 3), np.uint8), np.zeros((20, 21, 3), np.uint8)], data)
    with pytest.raises(ValueError, match="input_rgb_image_pyramid"):
        layer.to_tensor([np.zeros((20, 20, 3), np.float32)], data)
    with pytest.raises(ValueError, match="too small"):
        input_grayscale_image_pyramid[pyramid_down(6)]().to_tensor([np.zeros((7, 7), np.uint8)], data)
    with pytest.raises(ValueError, match="pyramid level"):
        layer.tensor_space_to_image_space(resizable_tensor(1, 3, 4, 4), drectangle(0, 0, 1, 1))


def test_maps_through_a_net():
    T = con[2, 5, 5, 2, 2, con[3, 3, 3, 1, 1, dnnpy.input[np.float32]]]
    net = T()
    net(np.zeros((1, 20, 20), np.float32))
    # con 5x5 stride 2 pad 0: x' = (x + 0 - 2) / 2 ; con 3x3 stride 1 pad 1: x' = x
    assert input_tensor_to_output_tensor(net, (10.0, 6.0)) == pytest.approx((4.0, 2.0))
    assert output_tensor_to_input_tensor(net, (4.0, 2.0)) == pytest.approx((10.0, 6.0))
    xs, ys = output_tensor_to_input_tensor(net, (np.arange(3.0), np.zeros(3)))
    np.testing.assert_allclose(xs, [2.0, 4.0, 6.0])
    tag1, skip1 = tag_templates[0], skip_templates[0]
    S = con[1, 3, 3, 2, 2, skip1[con[4, 3, 3, 2, 2, tag1[con[2, 5, 5, 2, 2, dnnpy.input[np.float32]]]]]]
    snet = S()
    snet(np.zeros((1, 20, 20), np.float32))
    # the skip jumps over the middle con: two stride-2 convs remain
    p = input_tensor_to_output_tensor(snet, (10.0, 10.0))
    assert p == pytest.approx((((10 - 2) / 2 + 0 - 1) / 2,) * 2)
    assert output_tensor_to_input_tensor(snet, p) == pytest.approx((10.0, 10.0))


def test_maps_error_names_the_layer():
    fc = getattr(dnnpy, "fc", None)
    if fc is None:
        pytest.skip("fc not available")
    net = fc[3, dnnpy.input[np.float32]]()
    with pytest.raises(TypeError, match="fc_"):
        input_tensor_to_output_tensor(net, (1.0, 1.0))


def test_point_maps_take_arrays():
    """point_down / point_up / image_to_tiled_pyramid map arrays of points as the scalar
    calls do, point by point (dnn_mmod_find_cars maps every pixel at once)."""
    from dnnpy.inputs.pyramid import image_to_tiled_pyramid
    xs, ys = np.array([0.0, 3.5, 17.0]), np.array([2.0, 9.25, 30.0])
    rects, _, _ = compute_tiled_image_pyramid_details(pyramid_down(6), 40, 50, 10, 11)
    for n in (2, 3, 6):
        pyr = pyramid_down(n)
        for f in (lambda p: pyr.point_down(p, 2), lambda p: pyr.point_up(p, 3),
                  lambda p: image_to_tiled_pyramid(pyr, rects, 0.6, p)):
            ax, ay = f((xs, ys))
            one = [f((float(a), float(b))) for a, b in zip(xs, ys)]
            assert ax.tolist() == [q[0] for q in one] and ay.tolist() == [q[1] for q in one]
