"""dnn_imagenet_train / dnn_imagenet examples (dlib's dnn_imagenet_train_ex, dnn_imagenet_ex)."""

import numpy as np
import pytest

import dnnpy
from dnnpy.data import SHAPE_CLASS_NAMES, dlib_rand, make_shape_classes
from dnnpy.examples import dnn_imagenet, dnn_imagenet_train as train_ex


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("imagenet")
    results = train_ex.main(["--quick", "--quiet", "--out", str(out)])
    return out, results


def test_train_quick_saves_net_and_labels_as_dlib(quick_run):
    out, r = quick_run
    assert r["net_path"].exists() and 0 <= r["top1"] <= r["top5"] <= 1
    anet_type = dnnpy.inference_type(train_ex.make_net_type(10, 8))
    net, labels = dnnpy.deserialize_objects(r["net_path"], anet_type, list[str])
    assert labels == list(SHAPE_CLASS_NAMES)
    assert net.net_type == anet_type           # the bn net reads back as dlib's anet_type


def test_runner_on_the_saved_net_and_on_files(quick_run, tmp_path, capsys):
    out, _ = quick_run
    r = dnn_imagenet.main(["--quick", "--quiet", "--out", str(out)])
    assert 0 <= r["top1"] <= r["top5"] <= 1 and r["labels"] == list(SHAPE_CLASS_NAMES)
    img = make_shape_classes(1, 64, seed=9)[0][0]
    f = tmp_path / "g4.png"
    dnnpy.image.save_png(img, f)
    capsys.readouterr()
    dnn_imagenet.main(["--quick", "--out", str(out), str(f)])
    lines = capsys.readouterr().out.splitlines()
    top5 = [ln for ln in lines if ": " in ln and ln.split(": ")[1] in SHAPE_CLASS_NAMES]
    probs = [float(ln.split(":")[0]) for ln in top5]
    assert len(top5) == 5 and probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-5


def test_random_cropping_rect_is_dlibs():
    img = np.zeros((64, 80, 3), np.uint8)
    rnd, ref = dlib_rand(3), dlib_rand(3)
    for _ in range(20):
        r = train_ex.make_random_cropping_rect_resnet(img, rnd)
        size = int((0.466666666 + ref.get_random_double() * (0.875 - 0.466666666)) * 64)
        y = ref.get_random_32bit_number() % (64 - size)
        x = ref.get_random_32bit_number() % (80 - size)
        assert (r.left(), r.top(), r.width(), r.height()) == (x, y, size, size)
        assert r.right() < 80 and r.bottom() < 64


def test_crops_and_top_k():
    img = make_shape_classes(1, 64, seed=1)[0][0]
    crops = train_ex.randomly_crop_images(img, dlib_rand(1), 5)
    assert len(crops) == 5 and all(c.shape == (48, 48, 3) and c.dtype == np.uint8 for c in crops)
    p = np.array([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]])
    assert train_ex.top_k_accuracies(p, [2, 0], k=2) == (0.5, 1.0)


def test_dlib_net_type_builds_dlibs_layout():
    anet = dnnpy.inference_type(train_ex.make_dlib_net_type())
    text = str(anet)
    assert text.startswith("loss_multiclass_log[fc[1000, avg_pool_everything[")
    assert "con[64, 7, 7, 2, 2, input_rgb_image_sized[227" in text.replace(" ]", "]")
    assert text.count("add_prev") == 16 and "bn_con" not in text


def test_help(capsys):
    for mod in (train_ex, dnn_imagenet):
        with pytest.raises(SystemExit) as e:
            mod.main(["--help"])
        assert e.value.code == 0
    assert "--model" in capsys.readouterr().out
