"""dnnpy.tag_template / skip_template: tags with any id (dlib's add_tag_layer<ID, SUBNET>)."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (concat2, con, input_rgb_image, layer, loss_multiclass_log_per_pixel,
                   max_pool, relu, resize_prev_to_tagged)

ctag1 = dnnpy.tag_template("test_ctag1", 2101)
ctag1_ = dnnpy.tag_template("test_ctag1_", 2111)
cskip1 = dnnpy.skip_template("test_cskip1", 2101)


def test_same_declaration_returns_same_template_and_clashes_raise():
    assert dnnpy.tag_template("test_ctag1", 2101) is ctag1
    with pytest.raises(ValueError, match="already taken"):
        dnnpy.tag_template("test_ctag1", 7)
    with pytest.raises(ValueError, match="already taken"):
        dnnpy.tag_template("con", 7)
    with pytest.raises(ValueError, match="already taken"):
        dnnpy.skip_template("test_ctag1", 2101)          # a tag's name, not a skip
    with pytest.raises(ValueError, match="identifier"):
        dnnpy.tag_template("a b", 1)
    with pytest.raises(ValueError, match="integer"):
        dnnpy.tag_template("test_ctag_bad", -1)


def test_custom_tags_in_resize_and_concat_and_skip():
    net_type = loss_multiclass_log_per_pixel[con[3, 1, 1, 1, 1,
        concat2[ctag1, ctag1_, ctag1_[resize_prev_to_tagged[ctag1,
        max_pool[2, 2, 2, 2, ctag1[relu[con[4, 3, 3, 1, 1, input_rgb_image]]]]]]]]]
    assert dnnpy.net_type_from_string(repr(net_type)) is net_type
    net = net_type()
    x = np.random.default_rng(0).integers(0, 256, (2, 10, 12, 3), dtype=np.uint8)
    out = net(list(x))
    assert out[0].shape == (10, 12)
    text = str(net)
    assert "tag2101" in text and "tag2111" in text and "concat\t (2101,2111)" in text
    assert layer(net, ctag1).get_output().shape == (2, 4, 10, 12)
    # the concat's first 4 channels are the tagged relu output
    np.testing.assert_array_equal(layer(net, 2).get_output().numpy()[:, :4],
                                  layer(net, ctag1).get_output().numpy())

    # the skip outputs the tagged layer's output, not the relu above it
    skip_net = concat2[ctag1, ctag1_, ctag1_[cskip1[relu[ctag1[con[2, 1, 1, 1, 1, input_rgb_image]]]]]]()
    y = skip_net.forward(skip_net.to_tensor(list(x))).numpy()
    tagged = layer(skip_net, ctag1).get_output().numpy()
    assert (tagged < 0).any()
    np.testing.assert_array_equal(y, np.concatenate([tagged, tagged], axis=1))


def test_inference_type_through_concat():
    # concat2's template makes its layer with a factory function, not a class (was a TypeError)
    net_type = concat2[ctag1, ctag1_, ctag1_[dnnpy.bn_con[ctag1[con[2, 1, 1, 1, 1, input_rgb_image]]]]]
    assert repr(dnnpy.inference_type(net_type)).startswith("concat2[test_ctag1, test_ctag1_, test_ctag1_[affine[")
