"""dnn_mmod_find_cars2 (dlib's front + rear vehicle detector example) in --quick mode: one
shared run, which trains the 2-label net first because its file is missing."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy.examples import dnn_mmod_find_cars2 as ex
from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image import load_image, tile_images


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cars2")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = ex.main(["--quick", "--quiet", "--out", str(out)])
    return out, r, buf.getvalue()


def test_quick_run_trains_two_labels_and_reports_each(quick_run):
    out, r, text = quick_run
    assert "training one first" in text and r["training"] is not None
    assert (out / ex.MODEL_NAME).exists()
    # one detector window per label (both 2:1), so every detection carries rear or front
    assert r["labels"] == ["front", "rear"]
    assert set(r["per_label"]) == {"rear", "front"}
    for p, rec, ap in r["per_label"].values():
        assert 0 <= p <= 1 and 0 <= rec <= 1 and 0 <= ap <= 1
    assert "rear results (precision, recall, AP)" in text and "front results" in text
    # the dataset went through imglab XML with dlib's two labels
    _, boxes = dnnpy.data.load_image_dataset(out / "cars2_dataset" / "training.xml")
    assert {b.label for v in boxes for b in v if not b.ignore} <= {"rear", "front"}
    png = load_image(r["png_path"])
    assert png.shape == tile_images([np.zeros((120, 160, 3), np.uint8)] * 2).shape
    # a second run finds the saved net and does not train
    with contextlib.redirect_stdout(io.StringIO()):
        r2 = ex.main(["--quick", "--quiet", "--out", str(out)])
    assert r2["training"] is None and r2["per_label"] == r["per_label"]


def test_per_label_results_count_a_wrong_label_as_false_alarm_and_miss():
    img = np.zeros((40, 80, 3), np.uint8)
    truth = [mmod_rect(rectangle(0, 0, 31, 15), label="rear"), mmod_rect(rectangle(40, 0, 71, 15), label="front")]
    dets = [mmod_rect(rectangle(0, 0, 31, 15), 2.0, label="rear"),
            mmod_rect(rectangle(40, 0, 71, 15), 1.0, label="rear")]     # the front end called rear

    def net(imgs, adjust_threshold=0.0):
        return [list(dets)]
    res = ex.per_label_results(net, [img], [truth], ("rear", "front"))
    assert res["rear"][:2] == (0.5, 1.0)        # one hit, one false alarm
    assert res["front"][1] == 0.0                # the front end is missed


def test_draw_label_writes_the_text_clipped():
    img = np.zeros((10, 30, 3), np.uint8)
    ex.draw_label(img, "front", 1, 2, (255, 255, 0))
    assert (img[2:7, 1:20] == (255, 255, 0)).all(axis=-1).sum() > 20
    assert not img[:2].any() and not img[7:].any()
    ex.draw_label(img, "rear", 25, 8, (255, 0, 0))        # partly outside: clipped, no error
    assert img[8:, 25:].any()


def test_help():
    with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(io.StringIO()):
        ex.main(["--help"])
    assert e.value.code == 0
