"""Training on the GPU agrees with the CPU, and nets move between the backends by file.

1. From the same start (one net set up on the CPU, copied by serialization), a small net
   with conv, batch norm, max pooling, relu and fc layers is trained ``STEPS`` steps with
   ``dnn_trainer`` and sgd on each backend. The losses and every parameter agree within
   ``|gpu - cpu| <= TOL * max(1, max|cpu|)``, TOL = 2e-4 in float32: cuDNN and cuBLAS sum in
   other orders than numpy and the differences grow a little with each step (no TF32).
   sgd, not Adam: Adam divides by sqrt(v), so a gradient that is zero in exact arithmetic
   (the conv bias in front of batch norm) turns float noise into a full-size step of
   either sign; the Adam kernel itself is checked op by op in ``test_cuda_backend.py``.
2. A net trained on the GPU is serialized and loaded on the CPU: the parameters are
   bit-identical, and its CPU outputs are identical to the GPU-trained net's own CPU
   outputs (and equal to its GPU outputs within TOL). And the other way round.

Everything here is ``@pytest.mark.cuda`` and skips without a usable CUDA backend.
"""

import contextlib

import numpy as np
import pytest

import dnnpy
from dnnpy import bn_con, con, dnn_trainer, fc, input, loss_multiclass_log, max_pool, relu, sgd
from dnnpy.serialization import from_bytes, to_bytes
from dnnpy.visitors import visit_layer_parameters

from helpers import assert_close_scaled

pytestmark = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)

NET = loss_multiclass_log[fc[3, relu[fc[16, max_pool[2, 2, 2, 2, relu[bn_con[con[4, 3, 3, 1, 1,
                                                                           input[np.float32]]]]]]]]]
STEPS = 5
TOL = 2e-4


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    x = [rng.standard_normal((10, 10)).astype(np.float32) for _ in range(n)]
    y = [int(v) for v in rng.integers(0, 3, n)]
    return x, y


def _params(net):
    out = []
    visit_layer_parameters(net, lambda t: out.append(np.array(t.host_read(), copy=True)))
    return out


def _backend(on_cpu):
    return dnnpy.force_cpu() if on_cpu else contextlib.nullcontext()


def _copy(net):
    fresh = NET()
    from_bytes(to_bytes(net), fresh)
    return fresh


def _outputs(net, x):
    return np.array(net.subnet().forward(net.to_tensor(x)).host_read(), copy=True)


def _close(a, b, what):
    assert_close_scaled(b, a, TOL, what)


def _train(net, x, y, on_cpu):
    with _backend(on_cpu):
        trainer = dnn_trainer(net, sgd())
        trainer.set_learning_rate(0.05)
        trainer.set_mini_batch_size(len(x))
        losses = []
        for _ in range(STEPS):
            trainer.train_one_step(x, y)
            losses.append(net.compute_loss(x, y))
        trainer.get_net()        # waits for the trainer to finish, as in dlib
    return losses


def test_a_few_training_steps_agree():
    x, y = _data()
    start = NET()
    with dnnpy.force_cpu():
        start.compute_loss(x, y)           # setup: parameters drawn on the CPU
    cpu_net, gpu_net = _copy(start), _copy(start)
    assert to_bytes(cpu_net) == to_bytes(gpu_net)
    cpu_losses = _train(cpu_net, x, y, on_cpu=True)
    gpu_losses = _train(gpu_net, x, y, on_cpu=False)
    assert cpu_losses[-1] < cpu_losses[0]      # it trains at all
    _close(np.array(cpu_losses), np.array(gpu_losses), "losses")
    for i, (c, g) in enumerate(zip(_params(cpu_net), _params(gpu_net))):
        _close(c, g, f"parameter tensor {i}")


@pytest.mark.parametrize("trained_on_cpu", [False, True], ids=["gpu-to-cpu", "cpu-to-gpu"])
def test_trained_net_moves_between_backends(trained_on_cpu):
    x, y = _data(seed=1)
    net = NET()
    _train(net, x, y, on_cpu=trained_on_cpu)
    with _backend(trained_on_cpu):
        data = to_bytes(net)
        original = _outputs(net, x)                          # on the training backend
    with _backend(not trained_on_cpu):
        moved = NET()
        from_bytes(data, moved)
        assert to_bytes(moved) == data
        moved_out = _outputs(moved, x)                       # on the other backend
    for a, b in zip(_params(net), _params(moved)):
        assert np.array_equal(a, b)                          # the file carries the bits
    _close(original, moved_out, "outputs across backends")
    # on one backend, the original and the reloaded net give the very same outputs
    with dnnpy.force_cpu():
        assert np.array_equal(_outputs(net, x), _outputs(moved, x))
    assert np.array_equal(_outputs(net, x), _outputs(moved, x))
