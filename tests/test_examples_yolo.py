"""dlib's dnn_yolo_train_ex in --quick mode: one shared run trains a few steps, fuses and saves
the inference net, computes the mAP and writes the PNG; --anchors, --map and --visualize reuse
its output folder."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy.data import load_image_dataset
from dnnpy.examples import dnn_yolo_train as ex
from dnnpy.image import load_image


def _run(argv):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        r = ex.main(argv)
    return r, text.getvalue()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("yolo")
    r, text = _run(["--quick", "--quiet", "--out", str(out)])
    return out, r, text


def test_quick_run_trains_fuses_saves_and_scores(quick_run):
    out, r, text = quick_run
    assert r["steps"] == 3 and "burn-in finished" in text and "mAP: " in text
    assert r["labels"] == ["car", "smiley", "truck"]
    assert set(r["ap"]) == set(r["labels"]) and all(0.0 <= v <= 1.0 for v in r["ap"].values())
    assert r["map"] == pytest.approx(np.mean(list(r["ap"].values())))
    # the loss prints dlib's custom tag ids
    assert "3 outputs:(tag4008,tag4016,tag4032)" in text
    # the saved net is the fused inference type (affine, no bn_con) and reloads into it
    inet = dnnpy.deserialize(r["net_path"], dnnpy.inference_type(ex.train_type(3))())
    assert "bn_con" not in repr(inet.net_type) and "affine" in repr(inet.net_type)
    opts = inet.loss_details().get_options()
    assert sorted(opts.anchors) == [4008, 4016, 4032] and opts.labels == r["labels"]
    images, boxes = load_image_dataset(r["test_xml"])
    assert images[0].shape == (120, 160, 3)
    dets = ex.detect(inet, images, 128, 0.005)
    assert len(dets) == len(images)
    png = load_image(r["png_path"])
    assert png.ndim == 3 and png.shape[2] == 3 and png.shape[0] >= 120


def test_map_option_reloads_the_saved_net(quick_run):
    out, r, _ = quick_run
    r2, text = _run(["--quick", "--quiet", "--out", str(out), "--map"])
    assert "computing mean average precision for 2 images" in text
    assert r2["map"] == pytest.approx(r["map"])


def test_anchors_option_prints_kmeans_anchors(quick_run):
    out, _, _ = quick_run
    r, text = _run(["--quick", "--out", str(out), "--anchors", "3"])
    assert r["anchors"].shape == (3, 2) and "Average IoU: " in text
    areas = r["anchors"].prod(axis=1)
    assert np.all(np.diff(areas) >= 0) and 0.5 < r["average_iou"] <= 1.0


def test_mean_average_precision_by_hand():
    from dnnpy.geometry import drectangle, mmod_rect, rectangle
    from dnnpy import yolo_rect
    truth = [[mmod_rect(rectangle(0, 0, 9, 9), label="a"), mmod_rect(rectangle(20, 20, 29, 29), label="b")]]
    dets = [[yolo_rect(drectangle(0, 0, 9, 9), 0.9, "a"), yolo_rect(drectangle(40, 40, 49, 49), 0.8, "a"),
             yolo_rect(drectangle(20, 20, 29, 29), 0.7, "a")]]   # right place, wrong label
    aps, m = ex.mean_average_precision(["a", "b"], truth, dets)
    assert aps == {"a": 1.0, "b": 0.0} and m == 0.5


def test_help():
    with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(io.StringIO()):
        ex.main(["--help"])
    assert e.value.code == 0
