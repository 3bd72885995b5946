"""dnnpy.distributed without MPI: dlib's split, the reduction each loss declares (checked in
one process against the full-batch gradient), the gathered-output order, the launcher's
command, the NCCL transport's logic against a fake ``cupy.cuda.nccl`` (no GPU here), the
trainer's ``devices`` argument and the error naming the extra when mpi4py is missing."""

import os
import sys

import numpy as np
import pytest

import dnnpy
from dnnpy import (con, detector_window_details, dnn_trainer, drectangle, fc, input,
                   input_grayscale_image_pyramid, input_tensor, loss_mean_squared, loss_metric, loss_mmod,
                   loss_multiclass_log, loss_yolo, mmod_options, mmod_rect, pyramid_down, rectangle, relu,
                   sgd, sig, tag1, tag2, yolo_options, yolo_rect)
from dnnpy import distributed as dist
from dnnpy.distributed.nccl import nccl_communicator, nccl_dtype
from dnnpy.distributed.run import build_command
from dnnpy.layers.base import seeded_initialisation
from dnnpy.distributed import single_process_communicator
from dnnpy.training import trainer as trainer_module
from dnnpy.training.data_parallel import gathered_order, reduction_of, replica_group


def test_chunks_follow_dlibs_send_job():
    assert [dist.chunk_bounds(15, 2, r) for r in range(2)] == [(0, 8), (8, 15)]
    assert dist.chunk_counts(17, 3) == [6, 5, 6]          # round(5.67), ..., as dlib
    assert dist.chunk_counts(8, 3) == [3, 2, 3]
    assert dist.chunk_counts(2, 3) == [1, 0, 1]           # an empty chunk is possible
    assert sum(dist.chunk_counts(1001, 7)) == 1001
    assert dist.shard(list(range(15)), 2, 1) == list(range(8, 15))
    with pytest.raises(ValueError, match="rank 3"):
        dist.chunk_bounds(4, 3, 3)


def test_declared_reductions():
    gather = {n for n in dnnpy.__all__ if n.startswith("loss_") and n.endswith("_")
              and reduction_of(getattr(dnnpy, n)) == "gather"}
    assert gather == {"loss_metric_", "loss_ranking_", "loss_barlow_twins_"}
    assert dnnpy.loss_yolo_.distributed_reduction == "sum"
    assert reduction_of(dnnpy.loss_mmod_) == reduction_of(dnnpy.loss_multiclass_log_) == "mean"


def _grads(net, x, y):
    net.compute_parameter_gradients(net.to_tensor(x), y)
    return np.concatenate([node.get_parameter_gradient().numpy().ravel()
                           for node in dnnpy.core.computational_nodes(net)])


@pytest.mark.parametrize("loss", [loss_multiclass_log, loss_mean_squared])
def test_weighted_chunks_give_the_full_batch_gradient(loss):
    """The "mean" rule in one process: chunks 4/3 weighted by their share give the full
    batch's gradient (float64; dlib's unweighted mean of the chunks does not)."""
    r = np.random.default_rng(0)
    x = [r.normal(size=(2, 2)) for _ in range(7)]
    y = [int(v) for v in r.integers(0, 3, 7)] if loss is loss_multiclass_log else list(r.normal(size=7))
    with dnnpy.default_dtype(np.float64), seeded_initialisation(0):
        net = loss[fc[3 if loss is loss_multiclass_log else 1, relu[fc[5, input[np.float64]]]]]()
        full = _grads(net, x, y)
        a, b = _grads(net, x[:4], y[:4]), _grads(net, x[4:], y[4:])
    np.testing.assert_allclose(4 / 7 * a + 3 / 7 * b, full, rtol=1e-12, atol=1e-14)
    assert np.max(np.abs((a + b) / 2 - full)) > 1e-3


def _yolo_case(rng):
    net = loss_yolo[tag1, tag2, tag1[sig[con[14, 1, 1, 1, 1, tag2[sig[con[7, 3, 3, 1, 1, input_tensor]]]]]]]()
    opts = yolo_options(labels=["cat", "dog"])
    opts.add_anchors(tag1, [(4, 5), (9, 7)])
    opts.add_anchors(tag2, [(14, 12)])
    net.loss_details().options = opts
    x = [rng.standard_normal((1, 2, 16, 16)) for _ in range(3)]
    y = [[yolo_rect(drectangle(2, 3, 6, 7), 1.0, "cat"), yolo_rect(drectangle(5, 1, 14, 9), 0.8, "dog")],
         [yolo_rect(drectangle(8, 6, 15, 15), 1.0, "dog")],
         [yolo_rect(drectangle(1, 8, 9, 15), 1.0, "cat")]]
    return net, x, y


def _mmod_case(rng):
    net = loss_mmod[con[1, 3, 3, 1, 1, input_grayscale_image_pyramid[pyramid_down(3)]]]()
    net.loss_details().options = mmod_options(detector_windows=[detector_window_details(10, 10)])
    x = [rng.integers(0, 256, (14, 14)).astype(np.uint8) for _ in range(3)]
    y = [[mmod_rect(rectangle(1, 1, 10, 10))], [], [mmod_rect(rectangle(3, 2, 12, 11))]]
    return net, x, y


@pytest.mark.parametrize("case", [_yolo_case, _mmod_case])
def test_detection_losses_follow_their_declared_reduction(case):
    """loss_yolo ("sum": dlib writes each sample's gradient undivided) and loss_mmod ("mean"):
    the chunks 2/1 combined by the declared rule give the full batch's gradient (float64;
    the other rule does not)."""
    with dnnpy.default_dtype(np.float64), seeded_initialisation(0):
        net, x, y = case(np.random.default_rng(0))
        full = _grads(net, x, y)
        a, b = _grads(net, x[:2], y[:2]), _grads(net, x[2:], y[2:])
    rule = reduction_of(net.loss_details())
    combined, other = (a + b, 2 / 3 * a + 1 / 3 * b) if rule == "sum" else (2 / 3 * a + 1 / 3 * b, a + b)
    np.testing.assert_allclose(combined, full, rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(other - full)) > 1e-6 * np.max(np.abs(full))


def test_metric_loss_is_not_separable():
    """Why loss_metric gathers: its chunks' gradients, however weighted, are not the batch's."""
    r = np.random.default_rng(1)
    x = [r.normal(size=(3, 2)) for _ in range(8)]
    y = [i % 3 for i in range(8)]
    with dnnpy.default_dtype(np.float64), seeded_initialisation(0):
        net = loss_metric[fc[4, input[np.float64]]]()
        full = _grads(net, x, y)
        a, b = _grads(net, x[:4], y[:4]), _grads(net, x[4:], y[4:])
    assert np.max(np.abs((a + b) / 2 - full)) > 1e-3 and np.max(np.abs(a + b - full)) > 1e-3


def test_gathered_order():
    assert gathered_order([2, 1], 1, False).tolist() == [0, 1, 2]
    assert gathered_order([2, 1], 2, False).tolist() == list(range(6))      # item-major
    # view-major (input_rgb_image_pair): rank 0 holds [a0 a1 b0 b1], rank 1 [a2 b2]
    assert gathered_order([2, 1], 2, True).tolist() == [0, 1, 4, 2, 3, 5]


def test_launcher_command():
    cmd, n = build_command(["-n", "3", "-hosts", "a,b", "train.py", "--epochs", "2"],
                           mpiexec="mpiexec", python="py")
    assert n == 3
    assert cmd == ["mpiexec", "-n", "3", "-hosts", "a,b", "py", "-m", "mpi4py", "train.py", "--epochs", "2"]
    # a module, as python -m (mpi4py's own -m)
    cmd, _ = build_command(["-n", "2", "-m", "pkg.train", "--fast"], mpiexec="mpiexec", python="py")
    assert cmd == ["mpiexec", "-n", "2", "py", "-m", "mpi4py", "-m", "pkg.train", "--fast"]
    for bad in (["train.py"], ["-n", "2"], ["-n", "x", "t.py"], ["-n", "0", "t.py"], ["-n", "2", "-m"]):
        with pytest.raises(ValueError):
            build_command(bad)


class _fake_nccl:
    NCCL_SUM, NCCL_FLOAT32, NCCL_FLOAT64 = "sum", "f32", "f64"
    calls = []

    @staticmethod
    def get_unique_id():
        return ("uid",)

    class NcclCommunicator:
        def __init__(self, n, uid, rank):
            _fake_nccl.calls.append(("init", n, uid, rank))

        def allReduce(self, send, recv, count, dtype, op, stream):
            _fake_nccl.calls.append(("allReduce", send, recv, count, dtype, op, stream))


class _fake_cupy:
    class cuda:
        class _stream:
            ptr = 77

            def synchronize(self):
                _fake_nccl.calls.append(("sync",))

        @staticmethod
        def get_current_stream():
            return _fake_cupy.cuda._stream()


class _fake_device_array:
    __cuda_array_interface__ = {}
    size, dtype = 6, np.dtype(np.float32)

    class flags:
        c_contiguous = True

    class data:
        ptr = 1234


class _fake_mpi(dist.single_process_communicator):
    rank, size, local_rank = 1, 2, 1
    bcasts = []

    def bcast_object(self, obj):
        self.bcasts.append(obj)
        return ("uid-from-rank-0",)

    def allreduce_sum(self, buf):
        buf += 1


def test_nccl_transport_logic():
    _fake_nccl.calls.clear()
    c = nccl_communicator(_fake_mpi(), nccl=_fake_nccl, cupy=_fake_cupy)
    assert _fake_mpi.bcasts == [None]                       # rank 1 does not draw the id
    assert _fake_nccl.calls == [("init", 2, ("uid-from-rank-0",), 1)]
    c.allreduce_sum(_fake_device_array())
    assert _fake_nccl.calls[1] == ("allReduce", 1234, 1234, 6, "f32", "sum", 77)
    host = np.zeros(3)
    c.allreduce_sum(host)                                   # host arrays go through MPI
    assert host.tolist() == [1, 1, 1]
    assert nccl_dtype(_fake_nccl, np.float64) == "f64"
    with pytest.raises(TypeError, match="complex128"):
        nccl_dtype(_fake_nccl, np.complex128)


def test_single_process_trainer_accepts_devices():
    """On the CPU backend a device list means one replica in this process, as dlib's CPU build."""
    net = loss_mean_squared[fc[1, input[np.float32]]]()
    t = dnn_trainer(net, sgd(), [0, 1])
    t.train_one_step([np.ones((2, 2), np.float32)] * 2, [1.0, 2.0])
    assert t.get_train_one_step_calls() == 1
    with pytest.raises(TypeError, match="devices"):
        dnn_trainer(net, sgd(), devices="gpu")
    with pytest.raises(ValueError, match="device ids"):
        dnn_trainer(net, sgd(), devices=[-1])


def test_missing_mpi_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    with pytest.raises(ImportError, match=r"dnnpy\[mpi\]"):
        dist.load_mpi()
    info = dist.mpi_info()
    assert info["available"] is False and "dnnpy[mpi]" in info["reason"]


def test_backend_info_reports_mpi():
    info = dnnpy.backend_info(print_report=False)["mpi"]
    assert set(info) >= ({"available", "library", "mpi4py"} if info["available"] else {"reason"})


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files via /proc")
def test_quiet_ranks_hold_no_file(monkeypatch):
    """A rank other than 0 discards its verbose output without opening os.devnull (which was
    never closed: one file descriptor leaked per trainer)."""
    class rank_one(single_process_communicator):
        rank = 1

    monkeypatch.setattr(trainer_module, "make_replica_group",
                        lambda net, solver, devices: replica_group(net, solver, rank_one()))
    before = len(os.listdir("/proc/self/fd"))
    trainers = [dnn_trainer(loss_mean_squared[fc[1, input[np.float32]]]()) for _ in range(3)]
    assert len(trainers) == 3 and len(os.listdir("/proc/self/fd")) == before
