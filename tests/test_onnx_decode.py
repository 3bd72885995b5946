"""dnnpy.onnx.decode: detections decoded from onnxruntime's outputs of an exported detector
equal the ones dnnpy's net gives: an MMOD net with several detector windows over a pyramid
input (with and without bounding box regression) and a two-head YOLO net, on textured
images (generated scenes, synthetic_images: no flat regions, so no exactly tied scores, which 1e-7
differences would break differently).

Boxes must be equal (mmod_rect: integer rectangles; yolo_rect: corners within 1e-4 pixel)
and confidences within 1e-5: the runtime's scores differ from dnnpy's by float32 rounding
(< 1e-6 here), which moves a box corner by a few 1e-6 pixel. Skipped without onnx /
onnxruntime (the ``onnx`` test extra)."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (con, detector_window_details, input_rgb_image, input_rgb_image_pyramid, loss_mmod,
                   loss_yolo, mmod_options, pyramid_down, relu, sig, tag1, tag2, yolo_options)
from dnnpy.data import make_scene
from dnnpy.data.datasets import synthetic_images
from dnnpy.layers.base import seeded_initialisation
from dnnpy.loss.mmod import loss_mmod_
from dnnpy.onnx import decode, export_bytes
from helpers import ort_session

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def same_detections(got, want, box_tol=0.0, conf_tol=1e-5):
    """Per sample: the same number of detections, in order, with equal labels, boxes
    within ``box_tol`` and confidences within ``conf_tol``."""
    assert [len(g) for g in got] == [len(w) for w in want]
    for g_dets, w_dets in zip(got, want):
        for g, w in zip(g_dets, w_dets):
            assert g.label == w.label
            assert g.detection_confidence == pytest.approx(w.detection_confidence, abs=conf_tol)
            gr, wr = g.rect, w.rect
            np.testing.assert_allclose([gr.l, gr.t, gr.r, gr.b], [wr.l, wr.t, wr.r, wr.b], rtol=0, atol=box_tol)


@pytest.mark.parametrize("bbr", [False, True])
def test_mmod_pyramid_detections(bbr):
    net_type = loss_mmod[con[2 * (5 if bbr else 1), 5, 5, 1, 1, relu[con[6, 3, 3, 2, 2, relu[con[
        4, 3, 3, 2, 2, input_rgb_image_pyramid[pyramid_down[6]]]]]]]]
    opts = mmod_options(detector_windows=[detector_window_details(20, 20, "sq"),
                                          detector_window_details(30, 15, "wide")])
    opts.use_bounding_box_regression = bbr
    imgs = [make_scene(seed, rows=60, cols=80).image for seed in (1, 2)]
    with seeded_initialisation(3):          # the parameters are made at the first forward
        net = net_type(loss_mmod_(opts))
        x = net.to_tensor(imgs)             # the tiled pyramid, built on the host
        net.subnet().forward(x)
    # keep the top 10% of the windows' scores (an untrained net's scores sit around 0)
    threshold = float(np.quantile(net.subnet().get_output().numpy()[:, :2], 0.9))
    want = net(x, adjust_threshold=threshold)
    outputs = ort_session(export_bytes(net, x.shape)).run(None, {"input": x.numpy()})
    net(imgs[::-1])                         # decode must read the runtime's scores, not these
    got = decode(net, outputs, x, adjust_threshold=threshold)
    assert min(len(w) for w in want) >= 10 and {d.label for w in want for d in w} == {"sq", "wide"}
    same_detections(got, want)
    if not bbr:
        # image space: windows found on the smaller pyramid levels are mapped back larger
        # than any window (<= 30 wide) in the tensor
        assert all(d.rect.l < 80 and d.rect.t < 60 for w in got for d in w)
        assert any(d.rect.width() > 40 for w in got for d in w)


def test_yolo_detections_from_images():
    """Two tagged heads (the graph outputs scores_tag1, scores_tag2), uint8 images in the
    graph; decode reads the heads by name or in graph order."""
    net_type = loss_yolo[tag1, tag2, tag1[sig[con[14, 1, 1, 1, 1, relu[con[8, 3, 3, 2, 2, tag2[sig[con[
        7, 1, 1, 1, 1, relu[con[8, 3, 3, 2, 2, relu[con[6, 3, 3, 2, 2, input_rgb_image]]]]]]]]]]]]]
    opts = yolo_options(labels=["a", "b"])
    opts.add_anchors(tag1, [(12, 12), (20, 10)])
    opts.add_anchors(tag2, [(8, 8)])
    imgs = synthetic_images(2, 48, seed=3)
    with seeded_initialisation(4):          # the parameters are made at the first forward
        net = net_type()
        net.loss_details().options = opts
        want = net(list(imgs), adjust_threshold=0.3)
    sess = ort_session(export_bytes(net, (3, 48, 48), input_mode="input_layer"))
    assert [o.name for o in sess.get_outputs()] == ["scores_tag1", "scores_tag2"]
    outputs = sess.run(None, {"input": imgs})
    x = net.to_tensor(list(imgs))
    net(list(imgs[::-1]))                   # decode must read the runtime's heads, not these
    assert min(len(w) for w in want) >= 5
    same_detections(decode(net, outputs, x, adjust_threshold=0.3), want, box_tol=1e-4)
    named = dict(zip(["scores_tag2", "scores_tag1"], outputs[::-1]))
    got = decode(net, named, x, adjust_threshold=0.3)
    same_detections(got, want, box_tol=1e-4)
    for g, w in zip(got[0], want[0]):       # every label above the threshold, with its confidence
        assert [lab for _, lab in g.labels] == [lab for _, lab in w.labels]
        np.testing.assert_allclose([c for c, _ in g.labels], [c for c, _ in w.labels], rtol=0, atol=1e-5)


def test_decode_other_losses_and_bad_input():
    """Any loss decodes the same way (here ArgMax labels); wrong outputs are named."""
    net = dnnpy.loss_multiclass_log[dnnpy.fc[4, dnnpy.relu[con[3, 3, 3, 1, 1, dnnpy.input[np.uint8]]]]]()
    imgs = np.random.default_rng(2).integers(0, 256, (3, 7, 6), dtype=np.uint8)
    want = net(imgs)
    x = net.to_tensor(imgs)
    outputs = ort_session(export_bytes(net, (1, 7, 6))).run(None, {"input": x.numpy()})
    assert list(decode(net, outputs, x.numpy())) == list(want)
    assert list(decode(net, {"scores": outputs[0]}, x)) == list(want)
    with pytest.raises(ValueError, match=r"no \['scores'\]"):
        decode(net, {"labels": outputs[0]}, x)
    with pytest.raises(ValueError, match="'scores' must be a 4-D float array"):
        decode(net, [outputs[0][:, :, 0, 0]], x)
    with pytest.raises(TypeError, match="expected a net with a loss layer"):
        decode(net.subnet(), outputs, x)
