"""The metric-learning examples (dlib's dnn_metric_learning_ex, dnn_metric_learning_on_images_ex,
dnn_face_recognition_ex) in --quick mode."""

import numpy as np
import pytest

import dnnpy
from dnnpy.examples import dnn_face_recognition, dnn_metric_learning, dnn_metric_learning_on_images
from dnnpy.image import load_image, save_png


@pytest.mark.parametrize("module", [dnn_metric_learning, dnn_metric_learning_on_images,
                                    dnn_face_recognition])
def test_help(module, capsys):
    with pytest.raises(SystemExit) as e:
        module.main(["--help"])
    assert e.value.code == 0 and "--quick" in capsys.readouterr().out


def test_metric_learning_quick(tmp_path):
    r = dnn_metric_learning.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert r["num_right"] + r["num_wrong"] == 28 and r["steps"] == 30
    assert r["embedded"].shape == (8, 2)
    net = dnn_metric_learning.net_type()
    dnnpy.deserialize(r["net_path"], net)
    x = [np.eye(8)[i].reshape(8, 1) for i in range(8)]
    np.testing.assert_allclose(np.asarray(net(x)), r["embedded"], rtol=1e-6, atol=1e-7)


def test_pair_counts():
    e = np.array([[0, 0], [0.1, 0], [5, 0], [5, 0.1]])
    assert dnn_metric_learning.pair_counts(e, [1, 1, 2, 2], 0.6) == (6, 0)
    assert dnn_metric_learning.pair_counts(e, [1, 2, 1, 2], 0.6) == (2, 4)
    right, wrong, bal = dnn_metric_learning_on_images.pair_counts(e, [1, 2, 1, 2], 0.6)
    assert (right, wrong) == (2, 4) and bal == 0.5 * (0 / 2 + 2 / 4)


def test_load_mini_batch_draws_five_distinct_identities():
    objs = [[np.full((16, 16, 3), 10 * k, np.uint8)] * 3 for k in range(7)]
    x, y = dnn_metric_learning_on_images.load_mini_batch(5, 5, dnnpy.data.dlib_rand(3), objs)
    assert len(x) == 25 and len(set(y)) == 5 and all(y.count(k) == 5 for k in set(y))
    assert all(im.shape == (16, 16, 3) and im.dtype == np.uint8 for im in x)
    x2, y2 = dnn_metric_learning_on_images.load_mini_batch(5, 5, dnnpy.data.dlib_rand(3), objs)
    assert y == y2 and all(np.array_equal(a, b) for a, b in zip(x, x2))
    # colors=False (the example's default): no disturb_colors, so a flat image keeps its value
    # (jitter_image only adds 0 or blends with 0 at the borders); with dlib's colours it does not
    x3, _ = dnn_metric_learning_on_images.load_mini_batch(5, 5, dnnpy.data.dlib_rand(3), objs,
                                                          colors=False)
    assert all(im[8, 8].tolist() == [10 * k] * 3 for im, k in zip(x3, y))
    assert any(im[8, 8].tolist() != [10 * k] * 3 for im, k in zip(x, y))
    with pytest.raises(ValueError, match="num_people=8"):
        dnn_metric_learning_on_images.load_mini_batch(8, 5, dnnpy.data.dlib_rand(), objs)


def test_on_images_then_face_recognition_quick(tmp_path):
    r = dnn_metric_learning_on_images.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert r["num_right"] + r["num_wrong"] == 300
    assert 0 <= r["pair_accuracy"] <= 1 and 0 <= r["untrained_pair_accuracy"] <= 1
    # the saved file reads into the affine testing type
    tnet = dnnpy.inference_type(dnn_metric_learning_on_images.make_net_type())()
    dnnpy.deserialize(r["net_path"], tnet)
    assert "affine" in repr(tnet.net_type) and "bn_con" not in repr(tnet.net_type)

    f = dnn_face_recognition.main(["--quick", "--quiet", "--out", str(tmp_path)])
    assert f["net_path"] == r["net_path"]
    assert 1 <= f["num_clusters"] <= 16 and len(f["labels"]) == 16
    assert f["num_identities"] == 4 and 0.25 <= f["purity"] <= 1
    # the first of the --sets sets is the one shown: its purity is part of the mean
    assert f["sets"] == 2 and 0 <= f["sets_right"] <= 2
    assert min(f["purity"], 0.25) <= f["mean_purity"] <= 1
    png = load_image(f["png"])
    assert png.ndim == 3 and png.shape[0] == 2 + f["num_clusters"] * 34
    assert f["descriptor"].shape == (128,) and f["jittered"].shape == (128,)
    assert np.linalg.norm(f["jittered"] - f["descriptor"]) < np.linalg.norm(f["descriptor"]) + 1e-6


def test_face_recognition_trains_when_the_net_is_missing(tmp_path, capsys):
    f = dnn_face_recognition.main(["--quick", "--quiet", "--out", str(tmp_path),
                                   "--net", str(tmp_path / "none.dat")])
    assert "not found: training" in capsys.readouterr().out
    assert f["net_path"].is_file()


def test_cluster_and_purity():
    d = np.array([[0, 0], [0.1, 0], [3, 0], [3, 0.2], [9, 9]])
    n, labels = dnn_face_recognition.cluster(d, 0.6)
    assert n == 3 and labels.tolist() == [0, 0, 1, 1, 2]
    assert dnn_face_recognition.purity([0, 0, 1, 1], [5, 5, 5, 6]) == 0.75


def test_face_recognition_images_need_model_or_fail_clearly(tmp_path):
    with pytest.raises(SystemExit):
        dnn_face_recognition.main(["--quick", "--out", str(tmp_path), "--model", "x.dat"])
    img = save_png(np.zeros((20, 20, 3), np.uint8), tmp_path / "a.png")
    with pytest.raises(dnnpy.errors.SerializationError, match="missing.dat"):
        dnn_face_recognition.main(["--quick", "--out", str(tmp_path), "--images", str(img),
                                   "--model", str(tmp_path / "missing.dat")])
