"""dnnpy.examples.dnn_self_supervised_learning in --quick mode: every step runs (Barlow Twins
steps, grafting the backbone under loss_metric, saving/reloading it, the linear probes on SSL
and random features, the eccm PNG)."""

import numpy as np
import pytest

import dnnpy
from dnnpy.data import dlib_rand, make_shape_classes
from dnnpy.examples import dnn_self_supervised_learning as ssl
from dnnpy.image import load_image


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("ssl")
    return out, ssl.main(["--quick", "--quiet", "--out", str(out)])


def test_quick_run_writes_loadable_files(quick):
    out, r = quick
    fnet = dnnpy.load(r["backbone_path"])
    assert type(fnet.input_layer()).__name__ == "input_rgb_image"
    images, _ = make_shape_classes(1, size=32, seed=3)
    f = np.asarray(fnet(images[:4]))
    assert f.reshape(4, -1).shape == (4, 16) and np.all(np.isfinite(f))   # 4 * width (quick: 4)
    df = dnnpy.multiclass_linear_decision_function.load(r["classifier_path"])
    assert df.weights.shape == (10, 16)
    eccm = load_image(r["eccm_png"])
    assert eccm.shape[:2] == (32, 32)                # dims 16, drawn 2x
    for key in ("test_accuracy", "random_test_accuracy", "train_accuracy"):
        assert 0.0 <= r[key] <= 1.0
    assert np.isfinite(r["loss"])


def test_augment_is_dlibs_recipe():
    img = np.zeros((40, 48, 3), np.uint8)
    img[..., 0] = np.arange(48, dtype=np.uint8)[None] * 5
    img[..., 1] = 100
    rnd = dlib_rand(7)
    crops = [ssl.augment(img, rnd) for _ in range(40)]
    assert all(c.shape == (32, 32, 3) and c.dtype == np.uint8 for c in crops)
    grey = [c for c in crops if np.all(c[..., 0] == c[..., 1])]
    assert 0 < len(grey) < 40                             # p 0.2 of grey
    # the crop rectangle: at an offset inside the image (dlib's: a side longer than the image
    # sticks out, and extract_image_chip fills that part with zeros), ratio 3/4..4/3
    rnd = dlib_rand(1)
    for _ in range(50):
        r = ssl.make_random_cropping_rect(img, rnd)
        assert 0 <= r.left() and 0 <= r.top()
        assert (r.right() < 48 or r.left() == 0) and (r.bottom() < 40 or r.top() == 0)
        assert 0.7 <= r.width() / r.height() <= 1.4
        assert 0.2 * 40 * 40 <= r.area() <= 1.05 * 40 * 40
    rnd = dlib_rand(1)                                  # --crop-scale: the side's lower bound
    for _ in range(50):
        r = ssl.make_random_cropping_rect(img, rnd, min_scale=0.9)
        assert 0.9 * 0.75 * 40 * 40 <= r.area()         # side >= 0.9 * 40, ratio >= 3/4


def test_help_and_bad_fraction(capsys):
    with pytest.raises(SystemExit) as e:
        ssl.main(["--help"])
    assert e.value.code == 0 and "--cifar" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        ssl.main(["--quick", "--fraction", "0"])
    with pytest.raises(SystemExit):
        ssl.main(["--quick", "--crop-scale", "1.5"])


def test_shuffle_colors_permutes_and_inverts_channels():
    rnd = dlib_rand(5)
    img = np.random.default_rng(0).integers(0, 256, (8, 8, 3)).astype(np.uint8)
    seen = set()
    for _ in range(30):
        out = ssl.shuffle_colors(img, rnd)
        assert out.shape == img.shape and out.dtype == np.uint8
        sources = []
        for c in range(3):                  # each output channel: one input channel, maybe inverted
            hits = [(k, inv) for k in range(3) for inv in (0, 1)
                    if np.array_equal(out[..., c], 255 - img[..., k] if inv else img[..., k])]
            assert len(hits) == 1
            sources.append(hits[0])
        assert sorted(k for k, _ in sources) == [0, 1, 2]
        seen.add(tuple(sources))
    assert len(seen) > 10                   # 48 outcomes: both permutations and inversions vary
