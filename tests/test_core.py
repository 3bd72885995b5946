"""Composition: templates, the seed net, printing, parsing back, layer(), in-place rules,
tags / skips / repeat, and the errors bad input gets."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (con, con_, cont, fc, fc_no_bias, input, input_rgb_image, input_tensor,
                   layer, loss_mean_squared_per_channel_and_pixel, net_type_from_string, relu,
                   repeat, resizable_tensor, skip1, tag1, tag2)

SEED = loss_mean_squared_per_channel_and_pixel[3,
           relu[cont[3, 4, 4, 2, 2, relu[con[16, 4, 4, 2, 2, input_rgb_image]]]]]


def images(n, rng, size=64):
    return rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def test_seed_autoencoder_shapes_and_gradients(rng):
    net = SEED()
    batch = images(3, rng)
    out = net.subnet()(batch)
    assert out.shape == (3, 3, 64, 64)
    labels = [rng.standard_normal((3, 64, 64)).astype(np.float32) * 0.1 for _ in range(3)]
    loss = net.compute_parameter_gradients(batch, labels)
    assert np.isfinite(loss) and loss > 0
    assert net.get_final_data_gradient().shape == (3, 3, 64, 64)
    for i in (2, 4):
        g = layer(net, i).get_parameter_gradient()
        assert g.size() == layer(net, i).layer_details().get_layer_params().size()
        assert np.all(np.isfinite(np.asarray(g))) and np.any(np.asarray(g) != 0)
    assert len(net(batch)) == 3 and net(batch)[0].shape == (3, 64, 64)


def test_input_rgb_image_is_dlibs_mean_subtraction(rng):
    batch = images(2, rng, 5)
    data = resizable_tensor()
    input_rgb_image().to_tensor(batch, data)
    avg = np.array([122.782, 117.001, 104.298], np.float32)
    expected = (batch.astype(np.float32) - avg) / np.float32(256)
    np.testing.assert_array_equal(np.asarray(data), expected.transpose(0, 3, 1, 2))


def test_input_matrix_layers(rng):
    u8 = rng.integers(0, 256, (2, 4, 5), dtype=np.uint8)
    data = resizable_tensor()
    input[np.uint8]().to_tensor(list(u8), data)
    assert data.shape == (2, 1, 4, 5)
    np.testing.assert_array_equal(np.asarray(data)[:, 0], u8.astype(np.float32) / 256)
    f = rng.standard_normal((3, 2, 2)).astype(np.float32)
    input[np.float32]().to_tensor(f, data)
    np.testing.assert_array_equal(np.asarray(data)[:, 0], f)
    assert repr(input[np.float32]()) == "input<matrix>"


def test_input_tensor_concatenates(rng):
    a, b = rng.standard_normal((2, 3, 2, 2)), rng.standard_normal((1, 3, 2, 2))
    data = resizable_tensor()
    input_tensor().to_tensor([a, b], data)
    np.testing.assert_allclose(np.asarray(data), np.concatenate([a, b]).astype(np.float32))


def test_bad_batches_name_the_input_layer(rng):
    net = relu[con[2, 3, 3, 1, 1, input_rgb_image]]()
    with pytest.raises(ValueError, match=r"input_rgb_image.*\(4, 4, 3\).*\(5, 4, 3\)"):
        net([np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)])
    with pytest.raises(ValueError, match=r"input_rgb_image.*float64"):
        net([np.zeros((4, 4, 3))])
    with pytest.raises(ValueError, match=r"input_rgb_image.*\(4, 4\)"):
        net([np.zeros((4, 4), np.uint8)])
    with pytest.raises(ValueError, match="empty"):
        net([])
    with pytest.raises(ValueError, match=r"input\[uint8\]|input<matrix>.*uint8"):
        con[2, 3, 3, 1, 1, input[np.uint8]]()([np.zeros((4, 4), np.float32)])


def test_constructor_arguments_are_checked():
    with pytest.raises(ValueError, match="con_.*num_filters"):
        con_(0, 3, 3, 1, 1)
    with pytest.raises(ValueError, match="con_.*stride_y"):
        con_(2, 3, 3, 0, 1)
    with pytest.raises(ValueError, match="con_.*padding_y=3.*filter size 3"):
        con_(2, 3, 3, 1, 1, 3, 0)
    with pytest.raises(ValueError, match=r"cont\[...\].*cont_.*nr"):
        cont[2, 0, 3, 1, 1, input_tensor]
    with pytest.raises(ValueError, match="fc_.*num_outputs"):
        fc[0, input_tensor]
    with pytest.raises(TypeError, match=r"con\[...\]"):
        con[2, 3, input_tensor]
    with pytest.raises(TypeError, match="SUBNET"):
        relu[3]
    with pytest.raises(TypeError, match="loss"):
        relu[SEED]


def test_templates_are_cached_and_parse_back():
    assert con[16, 4, 4, 2, 2, input_rgb_image] is con[16, 4, 4, 2, 2, input_rgb_image]
    types = [
        SEED,
        fc[10, relu[fc_no_bias[5, tag1[con[3, 5, 3, 2, 1, 2, 1, input[np.uint8]]]]]],
        relu[skip1[tag2[relu[tag1[con[2, 3, 3, 1, 1, input[np.float32]]]]]]],
        repeat[3, lambda s: relu[fc[4, s]], tag1[input_tensor]],
    ]
    for t in types:
        text = repr(t)
        assert net_type_from_string(text) is t, text
        assert hash(t) == hash(net_type_from_string(text))
    assert repr(types[3]) == "repeat[3, relu[fc[4, SUBNET]], tag1[input_tensor]]"
    with pytest.raises(ValueError, match="unknown template"):
        net_type_from_string("relu[bogus[input_tensor]]")
    with pytest.raises(ValueError, match="offset"):
        net_type_from_string("relu[con[2, 3, 3, 1, 1, input_tensor]")


def test_print_matches_dlib_table(rng):
    net = fc[3, relu[con[2, 3, 3, 1, 1, input[np.float32]]]]()
    net([rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2)])
    expected = (
        "layer<0>\toutput size=(num:2, k:3,    nr:1,   nc:1)\tfc\t (num_outputs=3) learning_rate_mult=1 "
        "weight_decay_mult=1 bias_learning_rate_mult=1 bias_weight_decay_mult=0\n"
        "layer<1>\toutput size=(num:2, k:2,    nr:4,   nc:4)\trelu\n"
        "layer<2>\toutput size=(num:2, k:2,    nr:4,   nc:4)\tcon\t (num_filters=2, nr=3, nc=3, stride_y=1, "
        "stride_x=1, padding_y=1, padding_x=1) learning_rate_mult=1 weight_decay_mult=1 "
        "bias_learning_rate_mult=1 bias_weight_decay_mult=0\n"
        "layer<3>\tinput<matrix>\n")
    assert str(net) == expected


def test_layer_access():
    net_type = fc[3, relu[tag1[relu[con[2, 3, 3, 1, 1, input_tensor]]]]]
    net = net_type()
    assert layer(net, 0) is net
    assert isinstance(layer(net, 1).layer_details(), dnnpy.relu_)
    assert layer(net, tag1) is layer(net, 2)
    assert layer(net, relu) is layer(net, 1)
    assert layer(net, relu, 2) is layer(net, 3)
    assert isinstance(layer(net, 5), input_tensor)
    assert net.num_layers() == 6 and net.num_computational_layers() == 4
    assert isinstance(dnnpy.input_layer(net), input_tensor)
    with pytest.raises(IndexError, match="past the input layer"):
        layer(net, 6)
    assert len(net) == 6 and net[1] is layer(net, 1) and list(net) == dnnpy.net_layers(net)
    with pytest.raises(ValueError, match="no such layer"):
        layer(net, dnnpy.tag3)


def test_inplace_rule(rng):
    x = [rng.standard_normal((2, 3, 5, 5)).astype(np.float32)]
    # relu on con runs in place: con's getters are disabled
    net = relu[con[2, 3, 3, 1, 1, input_tensor]]()
    net(x)
    assert net.get_output().is_aliased_with(net.subnet()._private_get_output())
    with pytest.raises(RuntimeError, match="in-place"):
        net.subnet().get_output()
    # a relu on a tag (or on the input, or on a relu) runs out of place
    net2 = relu[tag1[con[2, 3, 3, 1, 1, input_tensor]]]()
    net2(x)
    assert not net2.get_output().is_aliased_with(layer(net2, 2).get_output())
    net3 = relu[relu[con[2, 3, 3, 1, 1, input_tensor]]]()
    net3(x)
    assert not net3.get_output().is_aliased_with(net3.subnet().get_output())
    assert np.all(np.asarray(net3.subnet().get_output()) >= 0)


def test_inplace_and_out_of_place_give_the_same_gradients(rng):
    """The same weights in relu[con] (in place) and relu[tag1[con]] (out of place)."""
    x = [rng.standard_normal((2, 3, 6, 6)).astype(np.float32)]
    a = relu[con[4, 3, 3, 1, 1, input_tensor]]()
    b = relu[tag1[con[4, 3, 3, 1, 1, input_tensor]]]()
    a(x)
    b(x)
    layer(b, 2).layer_details().get_layer_params().assign(layer(a, 1).layer_details().get_layer_params())
    xa, xb = a.to_tensor(x), b.to_tensor(x)
    np.testing.assert_array_equal(np.asarray(a.forward(xa)), np.asarray(b.forward(xb)))
    g = resizable_tensor(rng.standard_normal(a.get_output().shape).astype(np.float32))
    a.back_propagate_error(xa, g)
    b.back_propagate_error(xb, g)
    np.testing.assert_allclose(np.asarray(a.get_final_data_gradient()),
                               np.asarray(b.get_final_data_gradient()), atol=1e-6)
    np.testing.assert_allclose(np.asarray(layer(a, 1).get_parameter_gradient()),
                               np.asarray(layer(b, 2).get_parameter_gradient()), atol=1e-5)


def test_skip_outputs_the_tagged_layer(rng):
    net = fc[2, skip1[relu[fc[3, tag1[relu[con[2, 3, 3, 1, 1, input_tensor]]]]]]]()
    x = [rng.standard_normal((2, 3, 4, 4)).astype(np.float32)]
    net(x)
    assert layer(net, 1).get_output().is_aliased_with(layer(net, tag1).get_output())
    assert net.layer_details().num_inputs == 2 * 4 * 4
    xt = net.to_tensor(x)
    net.forward(xt)
    net.back_propagate_error(xt, resizable_tensor(np.ones((2, 2, 1, 1), np.float32)))
    assert np.any(np.asarray(net.get_final_data_gradient()) != 0)


def test_repeat_equals_the_unrolled_net(rng):
    block = lambda s: relu[fc[4, s]]  # noqa: E731
    rep = repeat[3, block, fc[4, input_tensor]]()
    unrolled = block(block(block(fc[4, input_tensor])))()
    x = [rng.standard_normal((2, 5, 1, 1)).astype(np.float32)]
    rep(x)
    unrolled(x)
    assert rep.num_layers() == unrolled.num_layers() == 8
    for i in (1, 3, 5, 6):
        src = layer(rep, i).layer_details().get_layer_params()
        layer(unrolled, i).layer_details().get_layer_params().assign(src)
    xr, xu = rep.to_tensor(x), unrolled.to_tensor(x)
    np.testing.assert_allclose(np.asarray(rep.forward(xr)), np.asarray(unrolled.forward(xu)), rtol=1e-6)
    g = resizable_tensor(rng.standard_normal((2, 4, 1, 1)).astype(np.float32))
    rep.back_propagate_error(xr, g)
    unrolled.back_propagate_error(xu, g)
    np.testing.assert_allclose(np.asarray(rep.get_final_data_gradient()),
                               np.asarray(unrolled.get_final_data_gradient()), rtol=1e-5, atol=1e-7)
    for i in (1, 3, 5, 6):
        np.testing.assert_allclose(np.asarray(layer(rep, i).get_parameter_gradient()),
                                   np.asarray(layer(unrolled, i).get_parameter_gradient()), rtol=1e-5, atol=1e-7)
    text = str(rep)
    assert "repeat_input_layer" not in text and text.count("\n") == 8


def test_gradients_accumulate_without_zeroing(rng):
    net = con[2, 3, 3, 1, 1, input_tensor]()
    x = net.to_tensor([rng.standard_normal((1, 3, 3, 3)).astype(np.float32)])
    net.forward(x)
    g = resizable_tensor(np.ones((1, 2, 3, 3), np.float32))
    net.back_propagate_error(x, g)
    first = np.asarray(net.get_final_data_gradient()).copy()
    net.back_propagate_error(x, g)  # the input gradient is recomputed, not accumulated (dlib)
    np.testing.assert_allclose(np.asarray(net.get_final_data_gradient()), first)


def test_loss_label_errors(rng):
    net = SEED()
    with pytest.raises(ValueError, match="labels"):
        net.compute_loss(images(2, rng), [np.zeros((3, 64, 64), np.float32)])
    with pytest.raises(ValueError, match=r"\(3, 64, 64\)"):
        net.compute_loss(images(1, rng), [np.zeros((3, 32, 32), np.float32)])


def test_clean_frees_outputs(rng):
    net = SEED()
    net(images(1, rng))
    net.clean()
    assert net.subnet().get_output().size() == 0
    assert net(images(1, rng))[0].shape == (3, 64, 64)


def test_layer_index_works_on_the_sub_a_layer_sees(rng):
    seen = {}

    class probe_(dnnpy.relu_):
        def setup(self, sub):
            seen["sub1"] = layer(sub, 1)

    net_type = dnnpy.layer_template("probe_for_test", probe_)[fc[3, relu[fc[2, input_tensor]]]]
    net_type()([rng.standard_normal((1, 2, 1, 1)).astype(np.float32)])
    assert isinstance(seen["sub1"].layer_details(), dnnpy.relu_)


def test_net_type_call_passes_arguments_to_the_top_layer():
    """dlib's ``net_type net(options)``: constructor arguments go to the top layer."""
    from dnnpy import (con, input_rgb_image_pyramid, loss_mmod, loss_yolo, mmod_options, pyramid_down,
                       sig, yolo_options)

    t = loss_mmod[con[1, 3, 3, 1, 1, input_rgb_image_pyramid[pyramid_down(6)]]]
    opts = mmod_options()
    opts.loss_per_false_alarm = 2.5
    assert t(opts).loss_details().options.loss_per_false_alarm == 2.5
    assert t().loss_details().options.loss_per_false_alarm == 1
    prototype = t(opts).loss_details()
    copied = t(prototype).loss_details()           # an instance of the details class is copied
    assert copied is not prototype and copied.options.loss_per_false_alarm == 2.5

    yt = loss_yolo[dnnpy.tag1, sig[con[6, 1, 1, 1, 1, dnnpy.tag1[input_tensor]]]]
    yopts = yolo_options()
    built = yt(yopts).loss_details().options      # copied, as every constructor argument is
    assert built is not yopts and repr(built) == repr(yopts)

    with pytest.raises(TypeError, match="fc"):
        fc[3, input_tensor](1, 2, 3)
    with pytest.raises(TypeError, match="tag1"):
        dnnpy.tag1[input_tensor](3)
