"""copy_subnet (dlib's ``layer<N>(net2) = layer<M>(net1)``) and copy_net_as: a trained
backbone grafted under a new top gives identical outputs, structures are checked before
anything changes, and the copy is deep."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (affine, bn_con, con, copy_subnet, fc, fc_no_bias, input_rgb_image_sized, layer,
                   loss_metric, loss_multiclass_log, relu, sgd, tag1, add_prev1)

backbone = lambda s: relu[add_prev1[bn_con[con[4, 3, 3, 1, 1, tag1[relu[con[4, 3, 3, 2, 2, s]]]]]]]
IN = input_rgb_image_sized[8]
classifier_t = loss_multiclass_log[fc[3, backbone(IN)]]
metric_t = loss_metric[fc_no_bias[5, backbone(IN)]]


def _images(n, seed=0):
    return list(np.random.default_rng(seed).integers(0, 256, (n, 8, 8, 3), dtype=np.uint8))


def _trained_classifier():
    net = classifier_t()
    trainer = dnnpy.dnn_trainer(net, sgd())
    trainer.set_learning_rate(0.1)
    x, y = _images(6), [0, 1, 2, 0, 1, 2]
    for _ in range(3):
        trainer.train_one_step(x, y)
    return net


def test_grafted_backbone_gives_identical_outputs_and_is_deep():
    net1 = _trained_classifier()
    net2 = metric_t()
    x = _images(4, seed=1)
    net2(x)                                   # set up net2 with its own random backbone
    copy_subnet(net2.subnet().subnet(), net1.subnet().subnet())
    a = net1.subnet().subnet()(x)
    b = net2.subnet().subnet()(x)
    np.testing.assert_array_equal(a, b)       # same parameters, same bn running stats
    top = net2.subnet().layer_details().get_layer_params().numpy().copy()
    # training the new net leaves the old one alone (deep copy), and its top is its own
    before = net1.subnet().subnet()(x)
    t2 = dnnpy.dnn_trainer(net2, sgd())
    t2.set_learning_rate(0.1)
    for _ in range(2):
        t2.train_one_step(_images(6, seed=2), [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(net1.subnet().subnet()(x), before)
    assert not np.array_equal(net2.subnet().subnet()(x), before)
    assert net2.subnet().layer_details().get_layer_params().numpy().shape == top.shape


def test_layer_indices_and_converting_copy_to_affine():
    net1 = _trained_classifier()
    inf_t = dnnpy.inference_type(metric_t)    # bn_con -> affine
    net2 = inf_t()
    copy_subnet(layer(net2, 2), layer(net1, 2))
    assert isinstance(layer(net2, 4).layer_details(), dnnpy.affine_)
    x = _images(3, seed=3)
    # affine uses bn's running statistics: compare with the classifier's own inference copy
    ref = dnnpy.inference_copy(net1)
    np.testing.assert_allclose(layer(net2, 2)(x), layer(ref, 2)(x), rtol=1e-5, atol=1e-5)


def test_mismatched_structures_name_the_layer_and_change_nothing():
    net1 = _trained_classifier()
    other = loss_metric[fc_no_bias[5, relu[add_prev1[bn_con[con[8, 3, 3, 1, 1, tag1[relu[
        con[4, 3, 3, 2, 2, IN]]]]]]]]]()
    params = [n.layer_details().get_layer_params().numpy().copy()
              for n in dnnpy.computational_nodes(other)]
    with pytest.raises(TypeError, match=r"layer<3>: con_ \(con\[4, .*\) \(source\) vs con_ \(con\[8"):
        copy_subnet(other.subnet().subnet(), net1.subnet().subnet())
    with pytest.raises(TypeError, match=r"layer<0>: fc_ .* vs relu_"):
        copy_subnet(other.subnet().subnet(), net1.subnet())
    with pytest.raises(TypeError, match="copy_subnet: the nets differ at layer<1>: relu_"):
        copy_subnet(fc[3, bn_con[IN]](), net1.subnet())
    with pytest.raises(TypeError, match="input layer"):
        copy_subnet(relu[con[4, 3, 3, 2, 2, input_rgb_image_sized[16]]](),
                    layer(net1, 7))
    with pytest.raises(TypeError, match="copy_subnet: the destination must be a node"):
        copy_subnet(layer(net1, 9), layer(net1, 9))
    with pytest.raises(TypeError, match="affine_ .* vs bn_"):  # dlib converts bn -> affine only
        copy_subnet(bn_con[IN](), affine[IN]())
    for n, p in zip(dnnpy.computational_nodes(other), params):
        np.testing.assert_array_equal(n.layer_details().get_layer_params().numpy(), p)


def test_copy_net_as_names_the_layer():
    with pytest.raises(TypeError, match=r"copy_net_as: the nets differ at layer<0>: loss_multiclass_log_"):
        dnnpy.copy_net_as(classifier_t(), metric_t)


def test_rgb_input_layers_convert_as_dlib_does():
    # dlib: loss_metric<backbone<input_rgb_image>> fnet(layer<5>(barlow_twins_net)): the pair
    # input becomes an input_rgb_image with the same channel means (dlib's converting ctor)
    from dnnpy import input_rgb_image, input_rgb_image_pair
    src = relu[fc[3, input_rgb_image_pair]]()
    src.input_node().set_input_layer(input_rgb_image_pair(1.0, 2.0, 3.0))
    a, b = np.full((2, 2, 3), 9, np.uint8), np.full((2, 2, 3), 200, np.uint8)
    src([(a, b)])
    dst = loss_metric[relu[fc[3, input_rgb_image]]]()
    copy_subnet(dst.subnet(), src)
    moved = dst.input_layer()
    assert type(moved) is input_rgb_image and moved.get_avg_blue() == 3.0
    got = dst.subnet()([b])
    np.testing.assert_allclose(np.asarray(got).reshape(-1),
                               np.asarray(src.get_output().numpy())[1].reshape(-1), rtol=1e-6)
    with pytest.raises(TypeError, match="input layer"):    # not the other way round
        copy_subnet(relu[fc[3, dnnpy.input[np.uint8]]](), src)
