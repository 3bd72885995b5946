"""dnn_mmod_train_find_cars and dnn_mmod_find_cars (dlib's vehicle detector examples) in
--quick mode (one shared run: find_cars trains the net first because it is missing), and the
training example's ignore_overlapped_boxes."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image import load_image
from dnnpy.examples import dnn_mmod_find_cars as find, dnn_mmod_train_find_cars as ex


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One --quick run of dnn_mmod_find_cars with no net saved yet: it runs the training
    example first. Returns (out folder, find_cars's results, printed text)."""
    out = tmp_path_factory.mktemp("cars")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        f = find.main(["--quick", "--quiet", "--out", str(out)])
    return out, f, buf.getvalue()


def test_ignore_overlapped_boxes_as_dlib():
    big = mmod_rect(rectangle(0, 0, 19, 19))
    small = mmod_rect(rectangle(0, 0, 18, 18))
    apart = mmod_rect(rectangle(50, 50, 69, 69))
    pre = mmod_rect(rectangle(1, 1, 18, 18), ignore=True)
    boxes = [small, pre, big, apart]
    n = ex.ignore_overlapped_boxes(boxes, dnnpy.test_box_overlap(0.5, 0.95))
    assert n == 1 and small.ignore and not big.ignore and not apart.ignore
    # dlib's loop keeps comparing box i after it was ignored, so three near-copies of one box
    # count 3 (a vs b, a vs c, b vs c: a is counted twice), and only the largest is kept
    a, b, c = (mmod_rect(rectangle(0, 0, 9 + k, 9 + k)) for k in range(3))
    assert ex.ignore_overlapped_boxes([a, b, c], dnnpy.test_box_overlap(0.5, 0.95)) == 3
    assert a.ignore and b.ignore and not c.ignore


def test_train_find_cars_training(quick_run):
    out, f, text = quick_run
    assert "training one first" in text
    for line in ("num_overlapped_ignored: 1", "num_overlapped_ignored_test: 1",
                 "num_additional_ignored:", "training results:", "testing results:",
                 "random_cropper details", "max_rotation_degrees:        2"):
        assert line in text
    r = f["training"]
    assert r["num_overlapped_ignored"] == 1 and r["num_overlapped_ignored_test"] == 1
    # quick mode's 3 scenes hold 2 of the 3 aspect ratios (wide cars, tall trucks, square vans)
    assert r["num_windows"] >= 2
    assert f"Number of channels in final tensor image: {r['num_windows']}" in text
    for key in ("training", "testing"):
        assert len(r[key]) == 3 and all(0 <= v <= 1 for v in r[key])
    # the dataset round-trips through imglab XML: every vehicle labelled rear, ignore boxes kept
    imgs, boxes = dnnpy.data.load_image_dataset(out / "cars_dataset" / "training.xml")
    assert len(imgs) == 3 and imgs[0].shape == (120, 160, 3)
    assert {b.label for v in boxes for b in v} <= {"rear", "crowd"}
    assert any(b.ignore for v in boxes for b in v)


def test_saved_net_reads_back(quick_run, tmp_path):
    out, f, _ = quick_run
    path = f["training"]["net_path"]
    imgs, _ = dnnpy.data.load_image_dataset(out / "cars_dataset" / "training.xml")
    # the saved net (dlib format) reads back into the bn_con type and the affine type
    net, rest = find.read_mmod_net(path, ex.make_net_type((4, 4, 4, 4), 1))
    assert rest == 0 and net.subnet().layer_details().num_filters_ == f["training"]["num_windows"]
    # bytes after the net (dlib's file has a shape_predictor there) are left unread
    junk = tmp_path / "with_sp.dat"
    junk.write_bytes(path.read_bytes() + b"shape_predictor bytes")
    run_net, rest = find.read_mmod_net(junk, ex.make_net_type((4, 4, 4, 4), 1, norm=dnnpy.layers.affine))
    assert rest == len(b"shape_predictor bytes")
    a = net([imgs[0]], adjust_threshold=-1.0)[0]
    b = run_net([imgs[0]], adjust_threshold=-1.0)[0]
    assert a and [d.rect for d in a] == [d.rect for d in b]       # bn_con in test mode == affine
    # dlib's file: the net, then a shape predictor that refines each box to its landmarks' box
    from test_shape_predictor import _synthetic
    with_sp = tmp_path / "net_and_sp.dat"
    with_sp.write_bytes(path.read_bytes() + _synthetic(parts=4))
    net2, sp, r = find.read_mmod_file(with_sp, ex.make_net_type((4, 4, 4, 4), 1, norm=dnnpy.layers.affine))
    assert r.at_end() and sp.num_parts() == 4 and sp.to_bytes() == _synthetic(parts=4)
    refined = find.refine_boxes(sp, imgs[0], a)
    for box, shape in zip(refined, sp.batch(imgs[0], [d.rect for d in a])):
        xs, ys = zip(*shape.parts)
        assert (box.left(), box.top(), box.right(), box.bottom()) == (min(xs), min(ys), max(xs), max(ys))


def test_find_cars_windows(quick_run):
    out, f, text = quick_run
    assert 0 <= f["ap"] <= 1
    assert load_image(f["paths"]["detections"]).shape == (90, 120, 3)
    for name in ("collapsed", "collapsed_overlay"):
        assert load_image(f["paths"][name]).shape[:2] == (90, 120)
    # the whole output tensor, resized by image width / output width (dlib's win_output)
    assert load_image(f["paths"]["network_output"]).shape[1] == 120
    tiled = load_image(f["paths"]["tiled_pyramid"])
    assert load_image(f["paths"]["pyramid_overlay"]).shape == tiled.shape
    assert tiled.shape[0] > 90 and tiled.shape[1] >= 120      # level 0 plus the smaller levels
    # create_tiled_pyramid puts the scene itself, unchanged, at level 0 (outer padding 11)
    scene = load_image(out / "cars_scene.png")
    assert np.array_equal(tiled[11:11 + 90, 11:11 + 120], scene)
    assert np.isfinite(f["collapsed_max"])
    # find_cars now reuses the saved net (no training)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        find.main(["--quick", "--quiet", "--out", str(out), "--no-upsample"])
    assert "training one first" not in buf.getvalue()


@pytest.mark.parametrize("name", ["dnn_mmod_train_find_cars", "dnn_mmod_find_cars"])
def test_help(name, capsys):
    import importlib

    mod = importlib.import_module(f"dnnpy.examples.{name}")
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0 and "--quick" in capsys.readouterr().out
