"""dlib's semantic segmentation examples in --quick mode: every step runs (train, save, read
back into the affine net type, segment, write PNGs); the metrics are only range-checked
(a 3-step net learns nothing)."""

import numpy as np
import pytest

import dnnpy
from dnnpy.examples import dnn_semantic_segmentation as runner
from dnnpy.examples import dnn_semantic_segmentation_train as train_ex
from dnnpy.examples.semantic_segmentation_net import crop_to_input, make_net_type
from dnnpy.image import load_image


def test_train_then_run_quick(tmp_path, capsys):
    res = train_ex.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "saving network" in text and "val accuracy  :" in text
    for k in ("train_accuracy", "val_accuracy", "val_mean_iou"):
        assert 0.0 <= res[k] <= 1.0
    # the file is dlib's bn_con net; it reads back into both net types with equal outputs
    classes = len(res["class_names"])
    bnet = make_net_type(classes)()
    dnnpy.deserialize(res["net_path"], bnet)
    anet = make_net_type(classes, testing=True)()
    dnnpy.deserialize(res["net_path"], anet)
    img = np.random.default_rng(0).integers(0, 256, (65, 65, 3), dtype=np.uint8)
    assert np.array_equal(anet([img])[0], dnnpy.inference_copy(bnet)([img])[0])

    out = runner.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert "is missing" not in capsys.readouterr().out     # it found the trained net
    assert len(out["pngs"]) == 2
    png = load_image(out["pngs"][0])
    assert png.shape == (120, 3 * 160, 3)
    for lab in out["labels"]:
        assert lab.shape == (120, 160) and lab.max() < classes
    assert 0.0 <= out["mean_iou"] <= 1.0 and 0.0 <= out["prominent_class_accuracy"] <= 1.0


def test_runner_trains_when_net_missing(tmp_path, capsys):
    out = runner.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert "is missing: training it first" in capsys.readouterr().out
    assert out["net_path"].exists()


def test_helpers():
    lab = np.array([[0, 1, dnnpy.label_to_ignore], [2, 2, 1]], np.uint16)
    rgb = runner.index_label_image_to_rgb_label_image(lab)
    assert rgb.shape == (2, 3, 3) and tuple(rgb[0, 2]) == (224, 224, 192) and tuple(rgb[0, 0]) == (0, 0, 0)
    names = ("background", "a", "b")
    # a tie goes to the first class, as dlib's max_element
    assert runner.get_most_prominent_non_background_classlabel(lab, names) == "a"
    assert runner.get_most_prominent_non_background_classlabel(np.array([[2, 1, 2]]), names) == "b"
    with pytest.raises(ValueError, match="no colour"):
        runner.index_label_image_to_rgb_label_image(np.array([[40]], np.uint16))
    # the centred nearest-neighbour chip: a 5x5 cut to 3x3 keeps the middle, padded with 0 when bigger
    big = np.arange(25, dtype=np.uint16).reshape(5, 5)
    assert np.array_equal(crop_to_input(big, 3, 3), big[1:4, 1:4])
    grown = crop_to_input(big, 7, 7)
    assert np.array_equal(grown[1:6, 1:6], big) and grown[0].sum() == 0
    # scenes: the metric ignores label_to_ignore and is 1 for a perfect prediction
    scenes = train_ex.make_data(2, seed=3)
    perfect = [np.where(s.class_labels == dnnpy.label_to_ignore, 0, s.class_labels) for s in scenes]
    acc, miou, _ = train_ex.pixel_metrics(scenes, perfect, 6)
    assert acc == 1.0 and miou == 1.0


def test_random_crop_keeps_labels_aligned():
    s = train_ex.make_data(1, seed=5)[0]
    img, lab = train_ex.randomly_crop_image(s.image, s.class_labels, dnnpy.data.dlib_rand(1))
    assert img.shape == (65, 65, 3) and img.dtype == np.uint8
    assert lab.shape == (65, 65) and lab.dtype == np.uint16
    assert set(np.unique(lab)) <= set(range(6)) | {dnnpy.label_to_ignore}


def test_help(capsys):
    for mod in (train_ex, runner):
        with pytest.raises(SystemExit):
            mod.main(["--help"])
    assert "--steps" in capsys.readouterr().out
