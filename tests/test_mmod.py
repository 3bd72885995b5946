"""Geometry, mmod_options and the MMOD loss."""

import warnings

import numpy as np
import pytest

import dnnpy
from dnnpy.geometry import (box_intersection_over_union, center, drectangle, find_tight_overlap_tester,
                            mmod_rect, rectangle, test_box_overlap)
from dnnpy.inputs import input_grayscale_image_pyramid, pyramid_down
from dnnpy.layers.conv import con
from dnnpy.loss.mmod import (detector_window_details, impossible_labeling_error, loss_mmod, loss_mmod_,
                             mmod_options, use_image_pyramid)
from dnnpy.data import dlib_rand
from dnnpy.tensor import resizable_tensor
from dnnpy.testing_loss import test_loss


# -- geometry --------------------------------------------------------------------------------

def test_rectangle_basics():
    r = rectangle(2, 3, 11, 7)
    assert (r.width(), r.height(), r.area()) == (10, 5, 50)
    assert str(r) == "[(2, 3) (11, 7)]" and rectangle().is_empty() and rectangle().area() == 0
    assert r.intersect(rectangle(10, 0, 20, 4)) == rectangle(10, 3, 11, 4)
    assert center(r) == (7, 5) and center(rectangle(-3, -3, -2, -2)) == (-2, -2)  # dlib's rounding
    assert rectangle._coerce(drectangle(0.5, -0.5, 2.5, 1.49)) == rectangle(1, -1, 3, 1)  # lround
    assert rectangle.from_size(4, 3) == rectangle(0, 0, 3, 2)
    # dlib's rectangle(width, height), not an empty rectangle at the point (4, 3)
    assert rectangle(4, 3) == rectangle(0, 0, 3, 2) and rectangle(0, 0).is_empty()
    with pytest.raises(TypeError, match="width, height"):
        rectangle(1, 2, 3)
    assert drectangle(0, 0, 1.5, 1).width() == 2.5


def test_box_overlap_cases():
    a, b = rectangle(0, 0, 9, 9), rectangle(5, 0, 14, 9)       # inner 50, bounding box 150
    assert box_intersection_over_union(a, b) == pytest.approx(50 / 150)
    assert not test_box_overlap(0.4)(a, b)                      # 50/150 < 0.4 and 50% <= 100%
    assert test_box_overlap(0.3)(a, b)
    assert test_box_overlap(0.9, 0.4)(a, b)                      # covers 50% > 40% of a
    assert not test_box_overlap(0.0, 0.0)(a, rectangle(20, 20, 30, 30))  # no intersection
    inner = rectangle(2, 2, 3, 3)
    assert not test_box_overlap()(a, inner) and test_box_overlap(0.5, 0.99)(a, inner)
    # dlib divides by the area of the bounding box (a+b), not of the union
    c = rectangle(0, 5, 4, 14)                                  # inner 25, bbox 150, union 125
    assert test_box_overlap(0.16)(a, c) and not test_box_overlap(0.17)(a, c)  # 25/150; IoU is 25/175
    t = find_tight_overlap_tester([[a, b], [rectangle(0, 0, 3, 3)]])
    assert t.iou_thresh == pytest.approx(1.0000001 / 3) and t.percent_covered_thresh == pytest.approx(0.5000000500)
    with pytest.raises(ValueError, match="test_box_overlap"):
        test_box_overlap(1.5)


def test_dlib_rand_stream():
    # std::mt19937 seeded 5489 yields 3499211612 first; dlib::rand discards 10000 outputs
    mt = np.random.MT19937()
    rs = np.random.RandomState(5489).get_state()
    mt.state = {"bit_generator": "MT19937", "state": {"key": rs[1], "pos": rs[2]}}
    assert int(mt.random_raw()) == 3499211612
    raw = mt.random_raw(10001)[-2:]
    assert int(dlib_rand().get_random_64bit_numbers(1)[0]) == (int(raw[0]) << 32) | int(raw[1])


# -- mmod_options ----------------------------------------------------------------------------

def _boxes():
    sq = [mmod_rect(rectangle(10, 10, 49, 49)), mmod_rect(rectangle(100, 10, 139, 49))]   # 40x40
    wide = [mmod_rect(rectangle(10, 100, 89, 139)), mmod_rect(rectangle(0, 0, 60, 29))]   # 80x40, 61x30
    return [sq, wide, [mmod_rect(rectangle(0, 0, 5, 50), ignore=True)]]


def test_mmod_options_clusters_aspect_ratios():
    opts = mmod_options(_boxes(), 40, 20)
    got = sorted((w.width, w.height) for w in opts.detector_windows)
    assert got == [(40, 20), (40, 40)]   # ratio 1 -> 40x40; ratio 2 -> 40 wide, 20 tall
    # nms: tightest test on the non-ignored boxes, relaxed by 10% toward 1
    tight = find_tight_overlap_tester([[b.rect for b in im if not b.ignore] for im in _boxes()])
    assert opts.overlaps_nms.iou_thresh == pytest.approx(tight.iou_thresh + (1 - tight.iou_thresh) * 0.1)
    opts2 = mmod_options(_boxes(), 40, 30)
    assert sorted((w.width, w.height) for w in opts2.detector_windows) == [(40, 40), (60, 30)]
    with pytest.raises(ValueError, match="mmod_options"):
        mmod_options([[mmod_rect(rectangle(0, 0, 9, 9), ignore=True)]], 40, 20)
    with pytest.raises(ValueError, match="min_target_size"):
        mmod_options(_boxes(), 20, 40)


def test_mmod_options_sizes_and_labels():
    boxes = [[mmod_rect(rectangle(0, 0, 39, 39), label="a"), mmod_rect(rectangle(50, 0, 89, 41), label="a"),
              mmod_rect(rectangle(0, 50, 19, 59), label="b")]]
    opts = mmod_options(use_image_pyramid.no, boxes)
    assert opts.assume_image_pyramid == use_image_pyramid.no
    wins = [(w.width, w.height, w.label) for w in opts.detector_windows]
    assert wins == [(40, 40, "a"), (20, 10, "b")]   # labels in sorted order; the exemplar is a random pick
    # which near-square box becomes the exemplar follows dlib::rand's stream (pinned here)
    b = [[mmod_rect(rectangle(0, 0, w - 1, h - 1)) for w, h in [(40, 40), (41, 40), (40, 42), (60, 30),
                                                            (62, 30), (30, 60)]]]
    assert [(w.width, w.height) for w in mmod_options(b, 40, 20).detector_windows] == [(38, 40), (40, 20), (20, 40)]
    explicit = mmod_options(detector_windows=[detector_window_details(10, 10)], loss_per_false_alarm=2)
    assert explicit.loss_per_false_alarm == 2 and explicit.overlaps_nms == test_box_overlap(0.4)
    with pytest.raises(TypeError, match="unknown field"):
        mmod_options(bogus=1)


# -- the loss --------------------------------------------------------------------------------

def _setup(windows=((10, 10),), bbr=False, n=1):
    """A 12x12 image: pyramid_down(3) keeps one level; outer padding 2 gives a 16x16 plane."""
    layer = input_grayscale_image_pyramid[pyramid_down(3)]()
    layer.set_pyramid_outer_padding(2)
    x = resizable_tensor()
    layer.to_tensor([np.zeros((12, 12), np.uint8)] * n, x)
    assert x.shape == (n, 1, 16, 16) and x.annotation == [rectangle(2, 2, 13, 13)]
    opts = mmod_options(detector_windows=[detector_window_details(w, h) for w, h in windows],
                        use_bounding_box_regression=bbr)
    k = len(windows) * (5 if bbr else 1)
    out = np.full((n, k, x.nr(), x.nc()), -2.0)
    if bbr:
        out[:, len(windows):] = 0.0
    return layer, x, loss_mmod_(opts), out


def _truth_index(layer, x, rect, w=10, h=10):
    """Where dlib puts a truth box: the centre of its mapped rectangle."""
    scale = min(1.0, max(w / rect.width(), h / rect.height()))
    mapped = rectangle._coerce(layer.image_space_to_tensor_space(x, scale, rect))
    return center(mapped)


def _fake_sub(out, layer):
    from dnnpy.testing_loss import _loss_subnet

    return _loss_subnet(out, 1, layer)


def test_mmod_loss_values_by_hand():
    layer, x, loss, out = _setup()
    truth = rectangle(1, 1, 10, 10)
    cx, cy = _truth_index(layer, x, truth)
    assert (cx, cy) == (8, 8)      # (3, 3, 12, 12) in the plane
    scale = 1 / (x.nr() * x.nc())  # the gradient is the value's divided by nr*nc*windows
    out[0, 0, cy, cx] = 0.5        # detected, but its score does not beat the miss cost (1)
    res = test_loss(loss, out, [[mmod_rect(truth)]], x=x, input_layer=layer, gradient_scale=scale)
    assert res and res.loss == pytest.approx(1 - 0.5)
    out[0, 0, cy, cx] = 1.5        # detected and worth it: 1 - 1.5 - 1 + 1.5 = 0
    res = test_loss(loss, out, [[mmod_rect(truth)]], x=x, input_layer=layer, gradient_scale=scale)
    assert res and res.loss == pytest.approx(0.0)
    out[0, 0, 2, 13] = 0.3         # a false alarm (IoU 0.11 with the truth): + 1 + 0.3
    res = test_loss(loss, out, [[mmod_rect(truth)]], x=x, input_layer=layer, gradient_scale=scale)
    assert res and res.loss == pytest.approx(1.3)
    out[0, 0, cy, cx + 1] = 0.2    # next to the truth detection: suppressed by NMS (0.82 > 0.4)
    res = test_loss(loss, out, [[mmod_rect(truth)]], x=x, input_layer=layer, gradient_scale=scale)
    assert res and res.loss == pytest.approx(1.3)
    # an ignore box over the false alarm removes its cost
    fa = [d for d in loss.to_label(x, _fake_sub(out, layer))[0] if d.detection_confidence == pytest.approx(0.3)]
    labels = [[mmod_rect(truth), mmod_rect(fa[0].rect, ignore=True)]]
    res = test_loss(loss, out, labels, x=x, input_layer=layer, gradient_scale=scale)
    assert res and res.loss == pytest.approx(0.0)
    # two images: the value is the batch mean
    layer2, x2, loss2, out2 = _setup(n=2)
    out2[0] = out[0]
    res = test_loss(loss2, out2, [[mmod_rect(truth)], [mmod_rect(truth)]], x=x2, input_layer=layer2,
                    gradient_scale=scale)
    assert res and res.loss == pytest.approx((1.3 + (1 - (-2.0))) / 2)   # image 1 misses: 1 - score


def test_mmod_to_label_nms_and_threshold():
    layer, x, loss, out = _setup()
    out[0, 0, 8, 8] = 2.0
    out[0, 0, 8, 9] = 1.0          # overlaps the first: suppressed
    out[0, 0, 2, 13] = 0.5
    dets = loss.to_label(x, _fake_sub(out, layer))[0]
    assert [d.detection_confidence for d in dets] == [2.0, 0.5]
    assert dets[0].rect == rectangle(2, 2, 11, 11)   # window (3.5..12.5) - level origin (2, 2), lround
    high = loss.to_label(x, _fake_sub(out, layer), adjust_threshold=1.0)[0]
    assert [d.detection_confidence for d in high] == [2.0]


def test_mmod_loss_with_bbr_gradient():
    layer, x, loss, out = _setup(bbr=True)
    loss.options.bbr_lambda = 1.0
    truth = rectangle(1, 1, 12, 11)
    cx, cy = _truth_index(layer, x, truth)
    assert (cx, cy) == (9, 8)
    out[0, 0, cy, cx] = 1.5
    out[0, 1:5, cy, cx] = [0.1, -0.2, 0.05, 0.3]
    res = test_loss(loss, out, [[mmod_rect(truth)]], x=x, input_layer=layer,
                    gradient_scale=1 / (x.nr() * x.nc()))
    assert res, res.log
    # sliding-window box (3, 2, 12, 11): centre (7.5, 6.5), w = h = 9; truth centre (6.5, 6)
    targets = [(6.5 - 7.5) / 9, (6.0 - 6.5) / 9, np.log(11 / 9), np.log(10 / 9)]
    d = np.array([0.1, -0.2, 0.05, 0.3]) - targets
    smooth = np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5).sum()
    assert res.loss == pytest.approx(smooth)


def test_mmod_loss_errors_and_repr():
    layer, x, loss, out = _setup()
    with pytest.raises(impossible_labeling_error):
        test_loss(loss, out, [[mmod_rect(rectangle(40, 40, 60, 60))]], x=x, input_layer=layer)
    with pytest.raises(ValueError, match="loss_mmod_"):
        test_loss(loss, np.zeros((1, 2, x.nr(), x.nc())), [[]], x=x, input_layer=layer)
    with pytest.raises(TypeError, match="loss_mmod_"):
        loss.options = "nope"
    assert repr(loss) == ("loss_mmod\t (detector_windows:(:10x10), loss per FA:1, loss per miss:1, "
                          "truth match IOU thresh:0.5, use_bounding_box_regression:0, overlaps_nms:(0.4,1), "
                          "overlaps_ignore:(0.5,1))")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        # too small for the 10x10 window: ignored with a warning, no loss
        res = test_loss(loss, out, [[mmod_rect(rectangle(1, 1, 3, 3))]], x=x, input_layer=layer)
    assert res and res.loss == 0.0 and any("ignoring object" in str(m.message) for m in w)


def test_mmod_net_level():
    T = loss_mmod[con[1, 3, 3, 1, 1, input_grayscale_image_pyramid[pyramid_down(3)]]]
    assert dnnpy.net_type_from_string(repr(T)) is T
    net = T()
    net.loss_details().options = mmod_options(detector_windows=[detector_window_details(10, 10)])
    imgs = [np.full((12, 12), 100, np.uint8), np.zeros((12, 12), np.uint8)]
    labels = [[mmod_rect(rectangle(1, 1, 10, 10))], []]
    dets = net(imgs)
    assert len(dets) == 2 and all(isinstance(d, mmod_rect) for im in dets for d in im)
    assert net.process(imgs, 1e6) == [[], []]
    loss = net.compute_parameter_gradients(imgs, labels)
    assert np.isfinite(loss) and loss >= 0
    g = np.asarray(net.subnet().get_parameter_gradient())
    assert g.shape[0] == 10 and np.all(np.isfinite(g))
    assert str(net).startswith("layer<0>\tloss_mmod\t (detector_windows:(:10x10)")


def test_mmod_maps_candidates_vectorised(monkeypatch, caplog):
    """Point-wise layers pass arrays through, so loss_mmod maps all candidates in one call
    (no per-point fallback); the result equals mapping them one at a time, bit for bit."""
    from dnnpy.layers import bn_con, relu
    from dnnpy.visitors.maps import output_tensor_to_input_tensor

    T = loss_mmod[con[1, 3, 3, 1, 1, relu[bn_con[con[2, 5, 5, 2, 2, input_grayscale_image_pyramid[pyramid_down(3)]]]]]]
    net = T(loss_mmod_(mmod_options(detector_windows=[detector_window_details(10, 10)])))
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (30, 30), dtype=np.uint8) for _ in range(2)]
    labels = [[mmod_rect(rectangle(3, 4, 14, 15))], [mmod_rect(rectangle(10, 8, 22, 19))]]
    net(imgs)
    xs, ys = np.arange(6.0), np.arange(6.0)[::-1].copy()
    px, py = output_tensor_to_input_tensor(net.subnet(), (xs, ys))
    one = [output_tensor_to_input_tensor(net.subnet(), (float(a), float(b))) for a, b in zip(xs, ys)]
    assert px.tolist() == [q[0] for q in one] and py.tolist() == [q[1] for q in one]

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = net.compute_loss(imgs, labels)
            return value, np.array(net.subnet().get_gradient_input().host_read()), net.process(imgs, -0.5)

    with caplog.at_level("WARNING", logger="dnnpy.loss_mmod"):
        fast = run()
    assert not caplog.records        # no fallback
    monkeypatch.setattr(loss_mmod_, "_map_to_input", staticmethod(lambda sub, xs, ys: tuple(
        np.array(v, np.float64) for v in zip(*[output_tensor_to_input_tensor(sub, (float(a), float(b)))
                                               for a, b in zip(xs, ys)])) if len(xs) else (xs, ys)))
    slow = run()
    assert fast[0] == slow[0] and np.array_equal(fast[1], slow[1]) and fast[2] == slow[2]
    assert np.count_nonzero(fast[1]) > 2 and sum(map(len, fast[2])) > 0   # candidates were there


def test_mmod_xml_is_dlibs_bare_element():
    """dlib's to_xml of loss_mmod_ writes the bare element, whatever the options (loss.h
    leaves them out: "TODO, add options fields")."""
    opts = mmod_options(detector_windows=[detector_window_details(40, 40)], use_bounding_box_regression=True)
    assert loss_mmod_(opts).to_xml() == loss_mmod_().to_xml() == "<loss_mmod/>\n"
