"""The gradient with respect to a net's input: computed by every backward pass by default (as
dlib), skipped during dnn_trainer's steps, which never read it (as PyTorch skips the gradient
of an input that requires none). Skipping it changes no parameter gradient, bit for bit."""

import copy

import numpy as np
import pytest

import dnnpy
from dnnpy import (con, cont, dnn_trainer, fc, input_tensor, linear, loss_mean_squared_multioutput,
                   relu, sgd, tag1, add_prev1)

NETS = {
    "con": loss_mean_squared_multioutput[fc[3, relu[con[4, 3, 3, 1, 1, input_tensor]]]],
    "cont": loss_mean_squared_multioutput[fc[3, relu[cont[4, 3, 3, 2, 2, input_tensor]]]],
    "fc": loss_mean_squared_multioutput[fc[3, relu[fc[5, input_tensor]]]],
    "linear": loss_mean_squared_multioutput[fc[3, relu[linear[5, input_tensor]]]],
    # a tag on the input keeps its gradient (dlib's tag on the input owns it): not skipped
    "tagged": loss_mean_squared_multioutput[fc[3, add_prev1[con[2, 3, 3, 1, 1, tag1[input_tensor]]]]],
}


def _data(rng):
    x = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    return x, [row.reshape(3, 1) for row in y]


def _grads(net):
    return [np.array(n.get_parameter_gradient(), copy=True) for n in dnnpy.core.computational_nodes(net)
            if n.get_parameter_gradient().size()]


@pytest.mark.parametrize("name", sorted(NETS))
def test_skipping_the_input_gradient_changes_no_parameter_gradient(name):
    rng = np.random.default_rng(3)
    x, y = _data(rng)
    a = NETS[name]()
    a(x)                                      # sets the layers up
    b = copy.deepcopy(a)                      # the same weights
    loss_a = a.compute_parameter_gradients(a.to_tensor(x), y)
    assert a.get_final_data_gradient().shape == (4, 2, 6, 6)
    b.set_final_data_gradient_wanted(False)
    assert not b.final_data_gradient_wanted()
    loss_b = b.compute_parameter_gradients(b.to_tensor(x), y)
    assert loss_a == loss_b
    for ga, gb in zip(_grads(a), _grads(b)):
        assert np.array_equal(ga, gb)
    if name == "tagged":
        assert np.array_equal(np.asarray(b.get_final_data_gradient()), np.asarray(a.get_final_data_gradient()))
    else:
        with pytest.raises(ValueError, match="did not compute the gradient with respect to the input"):
            b.get_final_data_gradient()


def test_trainer_steps_skip_it_and_leave_the_setting_as_it_was():
    rng = np.random.default_rng(4)
    x, y = _data(rng)
    net = NETS["con"]()
    trainer = dnn_trainer(net, sgd())
    trainer.train_one_step(x, y)
    assert net.final_data_gradient_wanted()
    with pytest.raises(ValueError, match="dnn_trainer's steps skip it"):
        net.get_final_data_gradient()
    # the user's own backward pass computes it again
    t = net.to_tensor(x)
    net.compute_parameter_gradients(t, y)
    g = np.asarray(net.get_final_data_gradient())
    assert g.shape == (4, 2, 6, 6) and np.abs(g).max() > 0
