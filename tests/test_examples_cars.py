"""dnn_mmod_train_find_cars and dnn_mmod_find_cars (dlib's vehicle detector examples) in
--quick mode, and the training example's ignore_overlapped_boxes."""

import numpy as np
import pytest

import dnnpy
from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image import load_image


def test_ignore_overlapped_boxes_as_dlib():
    from dnnpy.examples.dnn_mmod_train_find_cars import ignore_overlapped_boxes

    big = mmod_rect(rectangle(0, 0, 19, 19))
    small = mmod_rect(rectangle(0, 0, 18, 18))
    apart = mmod_rect(rectangle(50, 50, 69, 69))
    pre = mmod_rect(rectangle(1, 1, 18, 18), ignore=True)
    boxes = [small, pre, big, apart]
    n = ignore_overlapped_boxes(boxes, dnnpy.test_box_overlap(0.5, 0.95))
    assert n == 1 and small.ignore and not big.ignore and not apart.ignore
    # dlib's loop keeps comparing box i after it was ignored, so three near-copies of one box
    # count 3 (a vs b, a vs c, b vs c: a is counted twice), and only the largest is kept
    a, b, c = (mmod_rect(rectangle(0, 0, 9 + k, 9 + k)) for k in range(3))
    assert ignore_overlapped_boxes([a, b, c], dnnpy.test_box_overlap(0.5, 0.95)) == 3
    assert a.ignore and b.ignore and not c.ignore


def test_train_find_cars_quick(tmp_path, capsys):
    from dnnpy.examples import dnn_mmod_find_cars as find, dnn_mmod_train_find_cars as ex

    r = ex.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    for line in ("num_overlapped_ignored: 1", "num_overlapped_ignored_test: 1",
                 "num_additional_ignored:", "training results:", "testing results:",
                 "random_cropper details", "max_rotation_degrees:        2"):
        assert line in text
    assert r["num_overlapped_ignored"] == 1 and r["num_overlapped_ignored_test"] == 1
    for key in ("training", "testing"):
        assert len(r[key]) == 3 and all(0 <= v <= 1 for v in r[key])
    # the dataset round-trips through imglab XML: every vehicle labelled rear
    imgs, boxes = dnnpy.data.load_image_dataset(tmp_path / "cars_dataset" / "training.xml")
    assert len(imgs) == 3 and imgs[0].shape == (120, 160, 3)
    assert {b.label for v in boxes for b in v} <= {"rear", "crowd"}
    # the saved net (dlib format) reads back into the bn_con type and the affine type
    T = ex.make_net_type((4, 4, 4), 1)
    net, rest = find.read_mmod_net(r["net_path"], T)
    assert rest == 0 and net.subnet().layer_details().num_filters_ == r["num_windows"]
    # bytes after the net (dlib's file has a shape_predictor there) are left unread
    junk = tmp_path / "with_sp.dat"
    junk.write_bytes(r["net_path"].read_bytes() + b"shape_predictor bytes")
    run_net, rest = find.read_mmod_net(junk, ex.make_net_type((4, 4, 4), 1, norm=dnnpy.layers.affine))
    assert rest == len(b"shape_predictor bytes")
    a = net([imgs[0]], -1.0)[0]
    b = run_net([imgs[0]], -1.0)[0]
    assert [d.rect for d in a] == [d.rect for d in b]       # bn_con in test mode == affine

    # find_cars reuses the saved net (no training) and writes dlib's windows
    f = find.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "training one first" not in text and "Number of channels in final tensor image" in text
    assert 0 <= f["ap"] <= 1
    scene = load_image(f["paths"]["detections"])
    assert scene.shape == (90, 120, 3)
    for name in ("collapsed", "collapsed_overlay"):
        assert load_image(f["paths"][name]).shape[:2] == (90, 120)
    # the whole output tensor, resized by image width / output width (dlib's win_output)
    assert load_image(f["paths"]["network_output"]).shape[1] == 120
    tiled = load_image(f["paths"]["tiled_pyramid"])
    assert load_image(f["paths"]["pyramid_overlay"]).shape == tiled.shape
    assert tiled.shape[0] > 90 and tiled.shape[1] >= 120      # level 0 plus the smaller levels
    assert np.isfinite(f["collapsed_max"])


def test_find_cars_trains_when_missing(tmp_path, capsys):
    from dnnpy.examples import dnn_mmod_find_cars as find

    f = find.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert "training one first" in capsys.readouterr().out and f["trained"]
    assert (tmp_path / "mmod_rear_end_vehicle_detector.dat").exists()


@pytest.mark.parametrize("name", ["dnn_mmod_train_find_cars", "dnn_mmod_find_cars"])
def test_help(name, capsys):
    import importlib

    mod = importlib.import_module(f"dnnpy.examples.{name}")
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0 and "--quick" in capsys.readouterr().out
