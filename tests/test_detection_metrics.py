"""average_precision and test_object_detection_function against hand-computed cases from
dlib's definitions (statistics/average_precision.h, dnn/validation.h and
svm/cross_validate_object_detection_trainer.h), and with a real loss_mmod net as detector."""

import numpy as np
import pytest

from dnnpy.data import average_precision, test_object_detection_function
from dnnpy.geometry import mmod_rect, rectangle, test_box_overlap
from dnnpy.inputs import input_grayscale_image_pyramid, pyramid_down
from dnnpy.layers.conv import con
from dnnpy.loss.mmod import detector_window_details, loss_mmod
from dnnpy.loss.mmod_options import mmod_options


@pytest.mark.parametrize("items, missing, expected", [
    ([], 0, 1.0),
    ([], 2, 0.0),
    ([True, False, True], 0, (1 + 2 / 3) / 2),
    ([False, True, True], 0, (2 / 3 + 2 / 3) / 2),         # 1/2 is lifted to the later 2/3
    ([True, False, False, True, True], 1, (1 + 0.6 + 0.6) / 4),
    ([(0.9, True), (0.5, False)], 3, 1 / 4),
    ([False, False], 0, 1.0),                              # no relevant item at all
])
def test_average_precision(items, missing, expected):
    assert average_precision(items, missing) == pytest.approx(expected, rel=1e-15)


def _det(l, t, r, b, score, label=""):
    return mmod_rect(rectangle(l, t, r, b), detection_confidence=score, label=label)


def _detector(per_image, calls=None):
    """A fake detector: images are ints (their index); returns the preset detections."""
    def detect(images, adjust_threshold):
        if calls is not None:
            calls.append(adjust_threshold)
        return [list(per_image[images[0]])]
    return detect


def test_counts_ignore_boxes_and_labels():
    truth = [[mmod_rect(rectangle(0, 0, 9, 9), label="a"), mmod_rect(rectangle(20, 0, 29, 9), label="a"),
              mmod_rect(rectangle(50, 50, 69, 69), ignore=True, label="other")],
             [mmod_rect(rectangle(0, 0, 9, 9), label="b")]]
    dets = {0: [_det(0, 0, 9, 9, 0.9, "a"),          # hits truth 0
                _det(50, 50, 69, 69, 0.8, "a"),      # on the ignore box (any label): not counted
                _det(100, 100, 109, 109, 0.7, "a"),  # false alarm
                _det(1, 0, 10, 9, 0.6, "a")],        # truth 0 already used: false alarm
            1: [_det(0, 0, 9, 9, 0.95, "a")]}        # wrong label: false alarm, truth "b" missed
    calls = []
    res = test_object_detection_function(_detector(dets, calls), [0, 1], truth, adjust_threshold=-0.5)
    assert calls == [-0.5, -0.5]
    # hits 1, counted detections 4, truth 3 (2 missed); ranked (0.95 F) (0.9 T) (0.7 F) (0.6 F)
    assert res.shape == (1, 3) and res.dtype == np.float64
    np.testing.assert_allclose(res, [[1 / 4, 1 / 3, (1 / 2) / 3]], rtol=1e-15)
    # an ignore tester that accepts nothing: the detection on the ignore box is a false alarm
    res = test_object_detection_function(_detector(dets), [0, 1], truth,
                                         overlaps_ignore_tester=test_box_overlap(1, 1))
    np.testing.assert_allclose(res, [[1 / 5, 1 / 3, (1 / 2) / 3]], rtol=1e-15)


def test_greedy_matching_follows_truth_then_detector_order():
    t1, t2 = mmod_rect(rectangle(0, 0, 9, 9)), mmod_rect(rectangle(2, 0, 11, 9))
    dets = {0: [_det(1, 0, 10, 9, 0.9), _det(5, 0, 14, 9, 0.8)]}   # X overlaps both; Y only t2
    np.testing.assert_allclose(test_object_detection_function(_detector(dets), [0], [[t1, t2]]),
                               [[1, 1, 1]])
    # t2 first takes X; Y does not overlap t1: one hit, one miss, one false alarm
    np.testing.assert_allclose(test_object_detection_function(_detector(dets), [0], [[t2, t1]]),
                               [[1 / 2, 1 / 2, 1 / 2]])


def test_empty_and_bad_input():
    assert test_object_detection_function(_detector({0: []}), [0], [[]]).tolist() == [[1, 1, 1]]
    res = test_object_detection_function(_detector({0: []}), [0], [[mmod_rect(rectangle(0, 0, 5, 5))]])
    assert res.tolist() == [[1, 0, 0]]
    with pytest.raises(ValueError, match="2 images but 1 truth"):
        test_object_detection_function(_detector({}), [0, 1], [[]])


def test_with_a_loss_mmod_net():
    net = loss_mmod[con[1, 3, 3, 1, 1, input_grayscale_image_pyramid[pyramid_down(3)]]]()
    net.loss_details().options = mmod_options(detector_windows=[detector_window_details(10, 10)])
    imgs = [np.full((12, 12), 100, np.uint8), np.arange(144, dtype=np.uint8).reshape(12, 12)]
    found = net(imgs, adjust_threshold=-1e6)    # everything passes the threshold: NMS leaves a few boxes
    assert sum(map(len, found)) > 0
    truth = [[mmod_rect(d.rect, label=d.label) for d in dets] for dets in found]
    res = test_object_detection_function(net, imgs, truth, adjust_threshold=-1e6)
    np.testing.assert_allclose(res, [[1, 1, 1]])
    res = test_object_detection_function(net, imgs, truth, adjust_threshold=1e6)
    np.testing.assert_allclose(res, [[1, 0, 0]])
