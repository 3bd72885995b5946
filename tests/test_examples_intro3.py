"""dnn_introduction3 (transfer learning): the --quick run, the resnet.h families, and the
--resnet50 path on a narrow file of ResNet-50's layout (net, then labels, as dlib's file)."""

import numpy as np
import pytest

import dnnpy
from dnnpy import affine, bn_con, count_parameters, get_learning_rate_multiplier, layer, net_layers
from dnnpy.examples import dnn_introduction3 as ex


def test_quick_run(tmp_path, capsys):
    r = ex.main(["--quick", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "number of network parameters: " in out and "1-NN accuracy" in out
    assert r["labels"] == ["0", "1", "2", "3", "4"]
    assert r["backbone_unchanged"]                     # lr multiplier 0 froze the backbone
    for k in ("pretrained_knn_accuracy", "random_knn_accuracy", "pretrain_accuracy"):
        assert 0.0 <= r[k] <= 1.0
    # the classifier file is dlib's layout: the net, then the labels
    net, labels = dnnpy.deserialize_objects(r["classifier_path"], ex.resnet_def(bn_con, 8).classifier(18, 5),
                                            list[str])
    assert labels == ["0", "1", "2", "3", "4"]
    metric = ex.metric_net_type(18, 8)()
    dnnpy.deserialize(r["net_path"], metric)
    assert count_parameters(metric) == r["num_parameters"]
    # the grafted backbone is the pretrained one: same backbone parameters
    assert np.array_equal(ex.backbone_parameters(net), ex.backbone_parameters(metric))


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        ex.main(["--help"])
    assert e.value.code == 0 and "--resnet50" in capsys.readouterr().out


def test_resnet_def_layouts():
    # dlib's layer counts (no forward needed): the metric ResNet-50 net has 193 layers, the
    # ones dlib's set_learning_rate_multipliers_range<154, 193> ends at
    assert ex.metric_net_type(50, 16)().num_layers() == 193
    assert ex.resnet_def(affine, 16).classifier(18)().num_layers() == 81
    with pytest.raises(ValueError, match="depth must be"):
        ex.resnet_def(bn_con).classifier(19)
    with pytest.raises(ValueError, match="width_divisor"):
        ex.resnet_def(bn_con, 0)


def test_resnet50_file_path(tmp_path, capsys):
    # a narrow file with the structure of dlib's resnet50_1000_imagenet_classifier.dnn:
    # train_50 (widths /16) followed by a vector<string> of 1000 labels
    path = tmp_path / "narrow_resnet50.dnn"
    src = ex.resnet_def(bn_con, 16).classifier(50, num_classes=1000)()
    src.forward(src.to_tensor([np.zeros((64, 64, 3), np.uint8)] * 2))
    labels = [f"class{i}" for i in range(1000)]
    dnnpy.serialize_objects(path, src, labels, format="dlib")
    net, got = ex.resnet50_transfer(path, width_divisor=16, image_size=64, quiet=True)
    assert got == labels
    assert np.array_equal(ex.backbone_parameters(net), ex.backbone_parameters(src))
    # dlib's per-stage rates, after the freeze: [0,2) 1, [2,38) 0.1, ..., [154,193) 0.0001
    rates = [(i, get_learning_rate_multiplier(n)) for i, n in enumerate(net_layers(net))
             if hasattr(getattr(n, "layer_details", lambda: None)(), "set_learning_rate_multiplier")]
    for begin, end, rate in ex.RESNET50_STAGE_RATES:
        stage = [r for i, r in rates if begin <= i < end]
        assert stage and stage == pytest.approx([rate] * len(stage)), (begin, end)
    assert layer(net, 2).layer_details().__class__.__name__ == "avg_pool_"
    assert "number of network parameters: " in capsys.readouterr().out


def test_resnet50_missing_file(tmp_path, capsys):
    with pytest.raises(SystemExit):
        ex.main(["--resnet50", str(tmp_path / "nope.dnn")])
    assert "resnet50_1000_imagenet_classifier.dnn" in capsys.readouterr().out
