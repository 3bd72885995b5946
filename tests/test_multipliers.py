"""dlib core.h's free multiplier functions (set_weight_decay_multiplier(l, m), ...): act on
layers that have the multiplier, leave the others alone, refuse negative values."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (con, fc, input, layer, loss_multiclass_log, relu, visit_computational_layers,
                   visit_computational_layers_range)
from dnnpy.visitors import multipliers as m

NAMES = ["learning_rate_multiplier", "bias_learning_rate_multiplier", "weight_decay_multiplier",
         "bias_weight_decay_multiplier"]


def small_net():
    return loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.uint8]]]]]()


@pytest.mark.parametrize("name", NAMES)
def test_set_and_get_on_details_and_nodes(name):
    net = small_net()
    get, put = getattr(m, "get_" + name), getattr(m, "set_" + name)
    fc_details = layer(net, 1).layer_details()
    put(fc_details, 0.25)
    assert getattr(fc_details, "get_" + name)() == 0.25 and get(fc_details) == 0.25
    put(layer(net, 3), 3)                 # the add_layer node of con
    assert get(layer(net, 3).layer_details()) == 3.0
    assert getattr(dnnpy, "set_" + name) is put   # exported at the top


def test_layers_without_multipliers_are_left_alone():
    net = small_net()
    relu_details = layer(net, 2).layer_details()
    before = dict(vars(relu_details))
    m.set_weight_decay_multiplier(relu_details, 0.5)
    m.set_learning_rate_multiplier(relu_details, 0)
    assert dict(vars(relu_details)) == before
    assert m.get_learning_rate_multiplier(relu_details) == 1.0      # dlib's default getter
    assert m.get_bias_weight_decay_multiplier(relu_details) == 1.0


def test_custom_visitor_as_in_dnn_introduction3():
    net = small_net()
    visit_computational_layers(net, lambda l: m.set_weight_decay_multiplier(l, 0.001))
    visit_computational_layers_range(net, 0, 2, lambda l: m.set_weight_decay_multiplier(l, 1))
    assert m.get_weight_decay_multiplier(layer(net, 1).layer_details()) == 1.0     # fc, in [0, 2)
    assert m.get_weight_decay_multiplier(layer(net, 3).layer_details()) == 0.001   # con


@pytest.mark.parametrize("bad, err", [(-0.5, ValueError), (float("nan"), ValueError),
                                      ("1", TypeError), (True, TypeError)])
def test_bad_multiplier(bad, err):
    details = layer(small_net(), 1).layer_details()
    with pytest.raises(err, match="set_weight_decay_multiplier"):
        m.set_weight_decay_multiplier(details, bad)
    assert details.get_weight_decay_multiplier() == 1.0
