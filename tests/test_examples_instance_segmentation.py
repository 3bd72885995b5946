"""dlib's instance segmentation examples in --quick mode: every step runs (detector and mask
net training, saving ``det_net << std::map<string, seg_net>`` in dlib's format, reading it back,
painting, PNG); the metrics are only range-checked (a 2-step net learns nothing). One quick
training and one runner pass are shared by the module."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy import deserialize_objects, serialize_objects
from dnnpy.examples import dnn_instance_segmentation as runner
from dnnpy.examples import dnn_instance_segmentation_train as train_ex
from dnnpy.examples.instance_segmentation_net import (SEG_DIM, det_net_type, get_cropping_rect,
                                                      predict_mask, seg_net_type)
from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image import load_image
from dnnpy.layers.base import seeded_initialisation


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("instance_segmentation")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        trained = train_ex.main(["--quick", "--quiet", "--out", str(out)])
        ran = runner.main(["--quick", "--quiet", "--out", str(out)])
    return {"trained": trained, "ran": ran, "text": text.getvalue()}


@pytest.mark.filterwarnings("ignore::dnnpy.FileOverrideWarning")   # the detector's filters: one per window, from the file
def test_saved_file_is_dlib_bytes_det_net_then_map_of_nets(quick_runs):
    path = quick_runs["trained"]["net_path"]
    data = path.read_bytes()
    assert not data.startswith(b"DNNPY")                    # dlib's format: no header
    det, segs = deserialize_objects(path, det_net_type(), dict[str, seg_net_type()])
    assert sorted(segs) == ["car", "smiley"]
    # written back the same way, the bytes are the file's: nothing lost or reordered
    buf = io.BytesIO()
    serialize_objects(buf, det, segs, format="dlib")
    assert buf.getvalue() == data
    # the runner's types: the detector with affine layers reads bn_con's records
    det_a, _ = deserialize_objects(path, det_net_type(testing=True), dict[str, seg_net_type()])
    assert "affine" in repr(det_a.net_type) and "bn_con" not in repr(det_a.net_type)


def test_runner_paints_png_and_metrics_in_range(quick_runs):
    ran = quick_runs["ran"]
    img = load_image(ran["png_path"])
    assert img.ndim == 3 and img.shape[2] == 3 and img.shape[0] >= 120 and img.shape[1] >= 320
    for res in (ran, quick_runs["trained"]):
        for key in [k for k in res if k.endswith("_mask_iou")]:
            assert 0.0 <= res[key] <= 1.0
    assert ran["scenes_instances"] > 0 and 0.0 <= ran["scenes"][2] <= 1.0
    assert "Found 2 images" in quick_runs["text"]


def test_get_cropping_rect_is_dlibs():
    # centre (25, 37) (dlib's center: (l + r + 1) / 2), half side round(40 / 2 * 1.5) = 30
    assert get_cropping_rect(rectangle(5, 17, 44, 56)) == rectangle(-5, 7, 55, 67)
    with pytest.raises(ValueError, match="get_cropping_rect.*empty"):
        get_cropping_rect(rectangle(5, 5, 4, 4))


def test_instance_sample_labels_one_instance():
    scene = train_ex.make_data(1, seed=3)[0]
    j = next(i for i, b in enumerate(scene.boxes) if b.label == "smiley")
    image, label = train_ex.instance_sample(scene, j, dnnpy.data.dlib_rand())
    assert image.shape == (SEG_DIM, SEG_DIM, 3) and label.shape == (SEG_DIM, SEG_DIM)
    assert set(np.unique(label)) <= {-1.0, 0.0, 1.0}
    c = SEG_DIM // 2
    assert label[c, c] == 1.0 and label[0, 0] == -1.0      # the object sits in the middle
    assert 0 < np.mean(label == 1) < 0.6


def test_match_instances_needs_label_and_overlap():
    truth = [mmod_rect(rectangle(0, 0, 19, 19), label="car"),
             mmod_rect(rectangle(40, 0, 59, 19), label="smiley"),
             mmod_rect(rectangle(80, 0, 99, 19), label="car", ignore=True)]
    dets = [mmod_rect(rectangle(41, 1, 60, 20), label="car"),       # right place, wrong label
            mmod_rect(rectangle(1, 0, 20, 19), label="car")]
    assert train_ex.match_instances(truth, dets) == {0: 1, 1: None}


def test_predict_mask_places_the_chip_scores_and_missing_net_is_an_error():
    with seeded_initialisation(0):
        net = seg_net_type()()
        image = np.full((60, 80, 3), 100, np.uint8)
        scores = predict_mask(net, image, rectangle(30, 20, 49, 39))
    assert scores.shape == (60, 80) and scores.dtype == np.float32
    assert np.all(scores[:, :10] == 0) and np.any(scores[20:40, 30:50] != 0)
    dets = [mmod_rect(rectangle(30, 20, 49, 39), label="truck")]
    with pytest.raises(KeyError, match="no mask net for the label 'truck'"):
        runner.paint_instances(image, dets, {"car": net, "smiley": net}, dnnpy.data.dlib_rand())


def test_help_works(capsys):
    for mod in (train_ex, runner):
        with pytest.raises(SystemExit) as e:
            mod.main(["--help"])
        assert e.value.code == 0
    assert "--seg-steps" in capsys.readouterr().out
