"""What a user holds after a pass never changes behind their back, batches and numpy go in
naturally, and an error raised inside a layer names it (``layer<i>``)."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (StaleTensorError, con, fc, input, input_tensor, layer, loss_mean_squared,
                   loss_metric, loss_multiclass_log, max_pool, relu, resizable_tensor)


def _digits(rng, n):
    return rng.integers(0, 256, (n, 8, 8), dtype=np.uint8)


def _classifier():
    return loss_multiclass_log[fc[10, relu[con[4, 3, 3, 1, 1, input[np.uint8]]]]]()


# ----------------------------------------------------------------------------------------
# outputs never alias silently

def test_outputs_collected_over_batches_are_each_batch(rng):
    """finding 1: outputs collected in a loop were all the last batch's."""
    net = _classifier()
    x = _digits(rng, 96)
    feats = [net.subnet()(x[i:i + 32]) for i in range(0, 96, 32)]
    assert all(isinstance(f, np.ndarray) and f.shape == (32, 10, 1, 1) for f in feats)
    assert not np.array_equal(feats[0], feats[2])
    # each kept batch is still that batch's output (compared with a fresh run of the same
    # batch: a BLAS may round a 96-row product differently from a 32-row one)
    for i, f in enumerate(feats):
        np.testing.assert_array_equal(f, net.subnet()(x[32 * i:32 * i + 32]))


def test_views_refuse_to_be_read_after_the_next_pass(rng):
    net = _classifier()
    x = _digits(rng, 4)
    net.compute_parameter_gradients(x, [1, 2, 3, 4])
    out, grad = net.subnet().get_output(), layer(net, 1).get_parameter_gradient()
    kept_out, kept_grad, copied = out.numpy(), grad.numpy(), np.asarray(out)
    np.testing.assert_array_equal(out.host_read(), kept_out)       # valid until the next pass
    net.compute_parameter_gradients(_digits(rng, 4), [4, 3, 2, 1])
    for view in (out, grad):
        assert not view.is_current()
        with pytest.raises(StaleTensorError, match=r"overwritten by a later pass.*\.numpy\(\)"):
            view.host_read()
        with pytest.raises(StaleTensorError):
            np.asarray(view)
    assert not np.array_equal(kept_out, net.subnet().get_output().numpy())
    assert not np.array_equal(kept_grad, layer(net, 1).get_parameter_gradient().numpy())
    assert np.array_equal(copied, kept_out)                       # np.asarray copies
    with pytest.raises(TypeError, match="read-only"):
        net.subnet().get_output().host()[...] = 0


def test_tensor_numpy_and_asarray_copy_host_read_is_the_view():
    t = resizable_tensor(np.arange(6, dtype=np.float32).reshape(1, 6))
    a, b, v = t.numpy(), np.asarray(t), t.host_read()
    t.host()[...] = 0
    assert a.sum() == 15 and b.sum() == 15 and v.sum() == 0
    assert np.asarray(t, copy=False).base is not None or not np.asarray(t, copy=False).flags.owndata


def test_forward_returns_a_view_and_takes_numpy(rng):
    net = relu[fc[3, input_tensor]]()
    x = rng.standard_normal((2, 4, 1, 1))
    out = net.forward(x)                                         # a 4-D numpy array is the tensor
    np.testing.assert_array_equal(out.numpy(), net(x))
    with pytest.raises(TypeError, match="input TENSOR.*net\\(batch\\)"):
        net.forward([np.zeros((4, 1, 1))])


# ----------------------------------------------------------------------------------------
# batches

def test_net_call_with_batch_size_equals_one_call(rng):
    net = _classifier()
    x = _digits(rng, 11)
    net.subnet()(x)
    assert net(x, batch_size=4) == net(x) == net.predict(x, batch_size=3)
    assert net.process_batch(list(x), 5) == net(x)
    np.testing.assert_allclose(net.subnet()(x, batch_size=4), net.subnet()(x), rtol=0, atol=1e-6)
    embedder = loss_metric[fc[2, input[np.uint8]]]()
    got = embedder(x, batch_size=4)
    assert len(got) == 11 and all(np.allclose(a, b, atol=1e-6) for a, b in zip(got, embedder(x)))
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        net(x, batch_size=0)


def test_net_type_called_with_a_batch_says_build_the_net_first(rng):
    for net_type in (loss_multiclass_log[fc[10, input[np.uint8]]], loss_metric[fc[2, input[np.uint8]]]):
        with pytest.raises(TypeError, match=r"is a net TYPE.*net = net_type\(\); net\(batch\)"):
            net_type(_digits(rng, 3))
        with pytest.raises(TypeError, match=r"net TYPE"):
            net_type(list(_digits(rng, 3)))


# ----------------------------------------------------------------------------------------
# back_propagate_error with numpy, and its argument checks

def test_back_propagate_error_takes_numpy_and_checks_shapes(rng):
    net = fc[5, input_tensor]()
    x = net.to_tensor(rng.standard_normal((3, 4, 1, 1)))
    with pytest.raises(RuntimeError, match="run forward"):
        fc[5, input_tensor]().back_propagate_error(x)
    net.forward(x)
    g = rng.standard_normal((3, 5, 1, 1))
    net.back_propagate_error(x, g)                                # numpy gradient
    got = net.get_parameter_gradient().numpy()
    net.back_propagate_error(x, resizable_tensor(g))
    np.testing.assert_array_equal(net.get_parameter_gradient().numpy(), got)
    with pytest.raises(ValueError, match=r"gradient has shape \(3, 9\); expected the net's output shape \(3, 5, 1, 1\)"):
        net.back_propagate_error(x, np.zeros((3, 9)))
    with pytest.raises(ValueError, match=r"x must be the input tensor of the last forward \(shape \(3, 4, 1, 1\)\)"):
        net.back_propagate_error(net.to_tensor(rng.standard_normal((2, 4, 1, 1))), g)


def test_update_parameters_wants_a_list_of_solvers(rng):
    net = _classifier()
    net.compute_parameter_gradients(_digits(rng, 2), [0, 1])
    with pytest.raises(TypeError, match=r"one solver per computational layer \(3 here.*make_solvers"):
        net.update_parameters(dnnpy.sgd(), 0.1)


# ----------------------------------------------------------------------------------------
# errors name the layer

def test_an_op_error_names_the_layer_its_index_and_input_shape(rng):
    lenet = loss_multiclass_log[fc[10, max_pool[2, 2, 2, 2, relu[con[16, 5, 5, 1, 1,
                                max_pool[2, 2, 2, 2, relu[con[6, 5, 5, 1, 1, input[np.uint8]]]]]]]]]()
    with pytest.raises(ValueError, match=r"^layer<2> max_pool_ \(forward with input\(2, 16, 1, 1\)\): "
                                         r".*window does not fit"):
        lenet(np.zeros((2, 2, 2), np.uint8))
    with pytest.raises(ValueError, match=r"^layer<2> max_pool_"):
        lenet.compute_parameter_gradients(np.zeros((2, 2, 2), np.uint8), [0, 1])


def test_a_backward_error_names_the_layer(rng):
    class broken_(dnnpy.layers.base.computational_layer):
        def forward(self, sub, output):
            output.copy_size(sub.get_output())
            output.assign(sub.get_output())

        def backward(self, gradient_input, sub, params_grad):
            np.ones((2, 3)) + np.ones((4, 5))                    # a numpy error inside the layer

        def __repr__(self):
            return "broken"

    broken = dnnpy.layer_template("broken_test_layer", broken_)
    net = loss_mean_squared[fc[1, broken[fc[3, input_tensor]]]]()
    with pytest.raises(ValueError, match=r"^layer<2> broken_ \(backward with gradient input\(2, 3, 1, 1\)\): "
                                         r"operands could not be broadcast"):
        net.compute_parameter_gradients(rng.standard_normal((2, 4, 1, 1)), [0.0, 1.0])


def test_label_errors_keep_their_own_message(rng):
    net = _classifier()
    with pytest.raises(ValueError, match=r"^loss_multiclass_log_: got 3 labels"):
        net.compute_loss(_digits(rng, 2), [1, 2, 3])
