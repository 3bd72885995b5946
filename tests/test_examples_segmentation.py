"""dlib's semantic segmentation examples in --quick mode: every step runs (train, save, read
back into the affine net type, segment, write PNGs); the metrics are only range-checked
(a 3-step net learns nothing). One quick training is shared by the module."""

import argparse
import contextlib
import io
import shutil

import numpy as np
import pytest

import dnnpy
from dnnpy.examples import dnn_semantic_segmentation as runner
from dnnpy.examples import dnn_semantic_segmentation_train as train_ex
from dnnpy.examples.semantic_segmentation_net import crop_to_input, make_net_type
from dnnpy.image import load_image


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """ONE quick training and one quick runner pass over its net, shared by the tests below."""
    out = tmp_path_factory.mktemp("segmentation")
    threads = dnnpy.get_num_threads()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        trained = train_ex.main(["--quick", "--quiet", "--out", str(out)])
        train_text = text.getvalue()
        ran = runner.main(["--quick", "--quiet", "--out", str(out)])
    return {"trained": trained, "train_text": train_text, "ran": ran,
            "run_text": text.getvalue()[len(train_text):], "threads_before": threads,
            "threads_after": dnnpy.get_num_threads()}


def test_train_quick(quick_runs):
    res, text = quick_runs["trained"], quick_runs["train_text"]
    assert "saving network" in text and "val accuracy  :" in text and "val mean IoU" in text
    for k in ("train_accuracy", "val_accuracy", "train_mean_iou", "val_mean_iou"):
        assert 0.0 <= res[k] <= 1.0
    assert res["steps"] == 3 and np.isfinite(res["final_loss"]) and res["cpu_seconds"] > 0
    assert res["class_names"] == ("background",) + train_ex.KINDS
    # --threads 1 (the default) is undone when main returns
    assert quick_runs["threads_after"] == quick_runs["threads_before"]


def test_saved_net_reads_into_both_net_types(quick_runs):
    res = quick_runs["trained"]
    classes = len(res["class_names"])
    bnet = make_net_type(classes)()
    dnnpy.deserialize(res["net_path"], bnet)
    anet = make_net_type(classes, testing=True)()
    dnnpy.deserialize(res["net_path"], anet)
    img = np.random.default_rng(0).integers(0, 256, (65, 65, 3), dtype=np.uint8)
    out = anet([img])[0]
    assert out.shape == (65, 65) and np.array_equal(out, dnnpy.inference_copy(bnet)([img])[0])


def test_runner_quick(quick_runs):
    out, classes = quick_runs["ran"], len(quick_runs["trained"]["class_names"])
    assert "is missing" not in quick_runs["run_text"]     # it found the trained net
    assert "most prominent class right on" in quick_runs["run_text"]
    assert out["net_path"] == quick_runs["trained"]["net_path"]
    assert len(out["pngs"]) == 2
    png = load_image(out["pngs"][0])
    assert png.shape == (120, 3 * 160, 3)
    for lab in out["labels"]:
        assert lab.shape == (120, 160) and lab.dtype.kind == "u" and lab.max() < classes
    assert 0.0 <= out["mean_iou"] <= 1.0 and 0.0 <= out["pixel_accuracy"] <= 1.0
    assert out["prominent_class_accuracy"] in (0.0, 0.25, 0.5, 0.75, 1.0)   # 4 images


def test_runner_trains_when_net_missing(quick_runs, tmp_path, monkeypatch, capsys):
    # the training itself is stubbed (the fixture's net copied in): only the branch is tested
    def fake_main(argv):
        folder = argv[argv.index("--out") + 1]
        target = f"{folder}/other.dnn"
        shutil.copy(quick_runs["trained"]["net_path"], target)
        return {"net_path": target}
    monkeypatch.setattr(runner.seg_train, "main", fake_main)
    missing = tmp_path / "net.dnn"
    net = runner.load_or_train(missing, 6, runner_args())
    assert "is missing: training it first" in capsys.readouterr().out
    assert missing.exists()
    img = np.zeros((65, 65, 3), np.uint8)
    assert net([img])[0].shape == (65, 65)


def runner_args():
    return argparse.Namespace(quick=True, levels=2, repeats=0)


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
