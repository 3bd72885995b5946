"""Training with oneDNN under the numpy twin gives what numpy alone gives: a few sgd and adam
steps of nets that use every routed op, from the same weights, reach the same losses.

Tolerance: each routed op agrees with numpy to float32 rounding (1e-7..1e-5 relative, the
per-op tests), but summation orders differ, so parameters drift apart by rounding that each
step feeds back; over 6 steps the losses measured agree to 2e-7 relative. 1e-4 leaves room
for other CPUs' kernels while still failing on any real difference (a wrong gradient moves
the loss by percents within two steps).
"""

import copy

import numpy as np
import pytest

import dnnpy
from dnnpy import (adam, add_prev1, avg_pool, avg_pool_everything, bn_con, tag1, bn_fc, con, cont, dnn_trainer, fc, input_rgb_image,
                   loss_mean_squared_per_channel_and_pixel, loss_multiclass_log, max_pool, relu,
                   sgd)
from dnnpy.tensor_tools.cpu import onednn

pytestmark = pytest.mark.skipif(not onednn.available(), reason="oneDNN is not available")

RNG = np.random.default_rng(3)


def _images(n, size):
    return [RNG.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n)]


def _losses(trainer, data, labels, steps):
    return [trainer.train_one_step(data, labels) for _ in range(steps)]


def _both(net_type, make_trainer, data, labels, steps=6):
    """The losses of ``steps`` steps with oneDNN and under force_numpy, from one net."""
    net = net_type()
    net(data[:2])                                     # allocate the parameters once
    twin = copy.deepcopy(net)
    with_onednn = _losses(make_trainer(net), data, labels, steps)
    with dnnpy.force_numpy():
        numpy_only = _losses(make_trainer(twin), data, labels, steps)
    return np.array(with_onednn), np.array(numpy_only)


def _sgd(net):
    t = dnn_trainer(net, sgd())
    t.set_learning_rate(0.05)
    return t


def test_classifier_steps_match_numpy():
    net_type = loss_multiclass_log[fc[5, relu[bn_fc[fc[16, avg_pool[2, 2, 2, 2,
               max_pool[3, 3, 2, 2, relu[bn_con[con[8, 3, 3, 1, 1, input_rgb_image]]]]]]]]]]
    data = _images(12, 12)
    labels = [int(v) for v in RNG.integers(0, 5, 12)]

    got, want = _both(net_type, _sgd, data, labels)
    assert want[-1] < want[0]                          # it trains
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_residual_steps_match_numpy_and_stay_blocked():
    # 16 channels: convolutions, batch norms, ReLUs and the residual sum pass oneDNN's blocked
    # values to each other (layout mirrors) in both directions
    net_type = loss_multiclass_log[fc[5, avg_pool_everything[relu[add_prev1[bn_con[con[
        16, 3, 3, 1, 1, relu[bn_con[con[16, 3, 3, 1, 1, tag1[relu[bn_con[con[
            16, 3, 3, 1, 1, input_rgb_image]]]]]]]]]]]]]]
    data = _images(8, 12)
    labels = [int(v) for v in RNG.integers(0, 5, 8)]

    net = net_type()
    net(data[:2])
    twin = copy.deepcopy(net)
    got = np.array(_losses(_sgd(net), data, labels, 6))
    blocked = []
    for i in range(net.num_layers):
        try:
            blocked += [i] if dnnpy.layer(net, i).get_output().layout_mirror() else []
        except (RuntimeError, AttributeError):  # hidden under an in-place layer; the input layer
            pass
    assert len(blocked) >= 4, blocked           # the outputs from the first con to the last relu
    with dnnpy.force_numpy():
        want = np.array(_losses(_sgd(twin), data, labels, 6))
    assert want[-1] < want[0]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_autoencoder_steps_match_numpy():
    # con_ with use_relu-style fused bias, cont_, adam
    net_type = loss_mean_squared_per_channel_and_pixel[3, relu[cont[3, 4, 4, 2, 2,
               relu[con[8, 4, 4, 2, 2, input_rgb_image]]]]]
    data = _images(8, 16)
    targets = [RNG.random((3, 16, 16)).astype(np.float32) for _ in range(8)]

    def make(net):
        t = dnn_trainer(net, adam())
        t.set_learning_rate(0.003)
        return t

    got, want = _both(net_type, make, data, targets)
    assert want[-1] < want[0]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_backend_info_names_onednn():
    info = dnnpy.backend_info(print_report=False)["onednn"]
    assert info["used"] and info["reason"] is None
    assert info["version"].startswith("3.") and info["isa"].startswith("avx")
    assert info["path"].endswith("libdnnl.so.3")
