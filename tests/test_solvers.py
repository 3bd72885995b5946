"""sgd and adam against their formulas written out in float64, dlib's bias special cases,
and net.update_parameters training a small net."""

import numpy as np
import pytest

from dnnpy import (adam, bn_con, con, fc, fc_, input, input_tensor, layer, loss_mean_squared,
                   make_solvers, relu, resizable_tensor, sgd)
from dnnpy.tensor import default_dtype


def f32(x):
    """A Python float holding the float32 rounding of x (dlib's solvers store floats)."""
    return float(np.float32(x))


def _fc_with_params(rng, n_in=3, n_out=2):
    d = fc_(n_out)
    d.setup(type("S", (), {"get_output": lambda self: resizable_tensor(1, n_in, 1, 1)})())
    d.get_layer_params().assign(rng.standard_normal(d.get_layer_params().shape))
    return d


def _grad(rng, like):
    g = resizable_tensor()
    g.copy_size(like)
    g.assign(rng.standard_normal(like.shape))
    return g


def test_sgd_matches_formula_with_bias_multipliers(rng):
    with default_dtype(np.float64):
        d = _fc_with_params(rng)
        d.set_learning_rate_multiplier(0.5)
        d.set_weight_decay_multiplier(2.0)   # bias: lr mult 1, wd mult 0 (fc's defaults)
        p = np.asarray(d.get_layer_params()).reshape(-1).copy()
        solver = sgd(weight_decay=0.01, momentum=0.8)
        v = np.zeros_like(p)
        for _ in range(3):
            g = _grad(rng, d.get_layer_params())
            step = np.asarray(solver(0.1, d, g)).reshape(-1).copy()
            gv = np.asarray(g).reshape(-1)
            lr, wd = 0.1 * 0.5, f32(0.01) * 2.0
            w = slice(0, p.size - 2)
            b = slice(p.size - 2, p.size)
            v[w] = f32(0.8) * v[w] - wd * lr * p[w] - lr * gv[w]
            v[b] = f32(0.8) * v[b] - 0.0 * lr - lr * gv[b]       # bias: lr*1, wd*0
            np.testing.assert_allclose(step, v, rtol=1e-12, atol=1e-15)


def test_adam_matches_formula(rng):
    with default_dtype(np.float64):
        d = _fc_with_params(rng)
        solver = adam(weight_decay=0.001, momentum1=0.9, momentum2=0.99)
        p = np.asarray(d.get_layer_params()).reshape(-1).copy()
        m = np.zeros_like(p)
        v = np.zeros_like(p)
        b1, b2, wd = f32(0.9), f32(0.99), f32(0.001)
        for t in range(1, 4):
            g = _grad(rng, d.get_layer_params())
            s = np.asarray(solver(0.01, d, g)).reshape(-1).copy()
            gv = np.asarray(g).reshape(-1)
            n = p.size - 2   # fc's bias block: wd mult 0
            gw = np.concatenate([wd * p[:n] + gv[:n], gv[n:]])
            m = b1 * m + (1 - b1) * gw
            v = b2 * v + (1 - b2) * gw * gw
            alpha = 0.01 * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            np.testing.assert_allclose(s, -alpha * m / (np.sqrt(v) + 1e-8), rtol=1e-10)


def test_update_parameters_trains_and_respects_multipliers(rng):
    net = loss_mean_squared[fc[1, relu[fc[8, input[np.float32]]]]]()
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(16)]
    ys = [float(x.sum()) for x in xs]
    solvers = make_solvers(net, sgd(momentum=0.9))
    assert len(solvers) == 3 and repr(solvers[0]) == "sgd: weight_decay=0.0005, momentum=0.9"
    first = net.compute_loss(xs, ys)
    for _ in range(60):
        net.compute_parameter_gradients(xs, ys)
        net.update_parameters(solvers, 0.01)
    assert net.compute_loss(xs, ys) < 0.2 * first

    frozen = layer(net, 3).layer_details()          # fc[8]: a zero lr multiplier skips it
    frozen.set_learning_rate_multiplier(0)
    frozen_before = np.array(frozen.get_layer_params())
    top_before = np.array(layer(net, 1).layer_details().get_layer_params())
    net.compute_parameter_gradients(xs, ys)
    net.update_parameters(solvers, 0.01)
    np.testing.assert_array_equal(np.asarray(frozen.get_layer_params()), frozen_before)
    assert np.any(np.asarray(layer(net, 1).layer_details().get_layer_params()) != top_before)
    with pytest.raises(ValueError, match="3 computational layers but 1 solvers"):
        net.update_parameters(solvers[:1], 0.01)
    with pytest.raises(ValueError, match="learning_rate"):
        net.update_parameters(solvers, 0)


def test_bn_bias_block_is_the_second_half(rng):
    """bn_'s beta (second half of its params) gets the bias multipliers: with adam and the
    bias learning-rate multiplier 0, beta does not move while gamma does."""
    net = loss_mean_squared[fc[1, bn_con[con[2, 3, 3, 1, 1, input_tensor]]]]()
    x = [rng.standard_normal((1, 1, 5, 5)).astype(np.float32) for _ in range(4)]
    ys = [0.5, -0.2, 1.0, 0.3]
    bn = layer(net, 2).layer_details()
    bn.set_bias_learning_rate_multiplier(0)
    solvers = make_solvers(net, adam())
    net.compute_parameter_gradients(x, ys)
    before = np.array(bn.get_layer_params()).reshape(-1)
    net.update_parameters(solvers, 0.01)
    after = np.asarray(bn.get_layer_params()).reshape(-1)
    half = before.size // 2
    assert np.all(after[:half] != before[:half])
    np.testing.assert_array_equal(after[half:], before[half:])


def test_solver_errors_name_the_solver(rng):
    d = _fc_with_params(rng)
    with pytest.raises(ValueError, match="sgd: params_grad"):
        sgd()(0.1, d, resizable_tensor(1, 1, 1, 1))
    with pytest.raises(ValueError, match="adam: momentum1"):
        adam(momentum1=1.5)
