"""dlib's MMOD examples (dnn_mmod, dnn_mmod_face_detection, random_cropper) in --quick mode:
each runs every step, writes its files, and the files load back. One quick
dnn_mmod_face_detection run (which trains dnn_mmod --quick first, its detector file being
missing) is shared by the module's tests."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy.data import load_image_dataset
from dnnpy.examples import dnn_mmod, dnn_mmod_face_detection, random_cropper
from dnnpy.image import load_image, pyramid_up


def _in_unit(values):
    return all(0.0 <= v <= 1.0 for v in values)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mmod")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        r = dnn_mmod_face_detection.main(["--quick", "--quiet", "--out", str(out)])
    return out, r, text.getvalue()


def test_dnn_mmod_quick(quick_run):
    _, fd, text = quick_run
    r = fd["training_run"]
    assert r is not None
    assert "training results: " in text and "testing results:  " in text
    assert "detector window width by height: 24 x 24" in text
    assert r["steps"] == 4
    for key in ("training", "testing", "upsampled_testing"):
        assert len(r[key]) == 3 and _in_unit(r[key])
    # the data went through imglab XML + PNG and loads back as dlib's example loads it
    images, boxes = load_image_dataset(r["train_xml"])
    assert len(images) == 2 and images[0].shape == (120, 160, 3)
    assert all(b.label == "smiley" for bs in boxes for b in bs) and sum(map(len, boxes)) >= 2
    # the saved net (dlib's format) loads into the same net type and detects the same boxes
    net = dnnpy.deserialize(r["net_path"], dnn_mmod.net_type())
    assert len(net.loss_details().get_options().detector_windows) == 1
    test_images, test_boxes = load_image_dataset(r["test_xml"])
    assert net(test_images) == dnn_mmod_face_detection.load_detector(r["net_path"])(test_images)
    png = load_image(r["png_path"])
    assert png.shape == (120, 160, 3)            # tile_images of the one testing scene
    assert len(test_boxes[0]) >= 2 and (png != test_images[0]).any()     # boxes were drawn


def test_dnn_mmod_face_detection_quick_trains_when_missing(quick_run):
    out, r, text = quick_run
    assert r["trained_here"] and "training one first with dnn_mmod --quick" in text
    assert r["model"] == out / dnn_mmod.NET_FILE and r["model"].exists()
    assert _in_unit([r["precision"], r["recall"], r["ap"]])
    assert r["upsamplings"] == [1, 1]            # 160x120 -> about 320x240 >= 240*240 pixels
    up = pyramid_up(np.zeros((120, 160, 3), np.uint8)).shape      # dlib's sizes: 241x321
    assert load_image(r["png_path"]).shape == (up[0], 2 * up[1], 3)
    # a second run finds the file and does not train
    with contextlib.redirect_stdout(io.StringIO()):
        r2 = dnn_mmod_face_detection.main(["--quick", "--quiet", "--out", str(out)])
    assert not r2["trained_here"] and r2["training_run"] is None and r2["ap"] == r["ap"]


def test_dnn_mmod_face_detection_on_files(tmp_path):
    """--images with --model: the file is upsampled to --min-pixels and drawn."""
    net_path = tmp_path / "net.dat"
    net = dnn_mmod.net_type(dnnpy.loss_mmod_(dnnpy.mmod_options(
        detector_windows=[dnnpy.detector_window_details(24, 24)])))
    net([np.zeros((60, 60, 3), np.uint8)])
    dnnpy.serialize(net, net_path, format="dlib")
    img_path = dnnpy.image.save_png(np.full((30, 40, 3), 90, np.uint8), tmp_path / "grey.png")
    r = dnn_mmod_face_detection.main(["--images", str(img_path), "--model", str(net_path),
                                      "--min-pixels", str(80 * 60), "--out", str(tmp_path)])
    assert load_image(r["png_paths"][0]).shape == pyramid_up(np.zeros((30, 40, 3), np.uint8)).shape
    assert len(r["detections"]) == 1
    # a folder of images, and dlib's HOG face detector beside (no face in a grey picture)
    folder = tmp_path / "photos"
    folder.mkdir()
    dnnpy.image.save_png(np.full((30, 40, 3), 90, np.uint8), folder / "grey.png")
    r = dnn_mmod_face_detection.main(["--images", str(folder), "--model", str(net_path), "--hog",
                                      "--min-pixels", "1", "--out", str(tmp_path / "out")])
    assert len(r["detections"]) == 1 and r["hog_detections"] == [0]
    with pytest.raises(FileNotFoundError, match="no such file"):
        dnn_mmod_face_detection.main(["--images", str(tmp_path / "missing.png"), "--model", str(net_path)])


def test_random_cropper_quick(tmp_path, capsys):
    r = random_cropper.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "32 crops of 96x96" in text
    assert r["crops"] == 32 and r["kept_boxes"] > 0 and r["ignored_boxes"] > 0
    grid = load_image(r["png_path"])
    assert grid.shape == (2 + 4 * 98, 2 + 4 * 98, 3)
    assert (grid == [255, 0, 0]).all(axis=2).any() and (grid == [255, 255, 0]).all(axis=2).any()


def test_random_cropper_check_catches_bad_crops(tmp_path):
    cropper = random_cropper.make_cropper(96, 20, 15, seed=0)
    box = dnnpy.mmod_rect(dnnpy.rectangle(90, 10, 120, 40))        # runs off the chip
    with pytest.raises(AssertionError, match="not inside"):
        random_cropper.check_crops([np.zeros((96, 96, 3), np.uint8)], [[box]], cropper)
    with pytest.raises(AssertionError, match="shape"):
        random_cropper.check_crops([np.zeros((90, 96, 3), np.uint8)], [[]], cropper)


@pytest.mark.parametrize("module", [dnn_mmod, dnn_mmod_face_detection, random_cropper])
def test_help(module, capsys):
    with pytest.raises(SystemExit) as e:
        module.main(["--help"])
    assert e.value.code == 0 and "--quick" in capsys.readouterr().out
