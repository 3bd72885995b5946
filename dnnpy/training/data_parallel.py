"""The data-parallel side of ``dnn_trainer``: one replica of the net per process, each
trained on its contiguous chunk of every mini-batch (dlib's split), so that the parameters
after every step equal single-process training up to float rounding (``docs/distributed.md``).

The trainer calls a ``replica_group`` at four points: ``check_data`` (before training),
``compute_parameter_gradients`` and ``compute_loss`` (each step), and the sync guard's file
access (``shared_sync_files``). With one process every call is the single-process code path.

How a step combines the ranks, by the loss's ``distributed_reduction``:

* ``"mean"`` (per-sample means, most losses): each rank computes its chunk's mean loss and
  gradient; both are weighted by the chunk's share ``n_r/N`` and summed (dlib averages the
  devices unweighted, which is off when the chunks differ in size).
* ``"sum"`` (``loss_yolo``: gradients per sample, not divided by N): gradients summed with
  weight 1, the loss value weighted ``n_r/N``.
* ``"gather"`` (losses that couple the samples: ``loss_metric``, ``loss_ranking``,
  ``loss_barlow_twins``): the outputs are gathered in batch order, every rank computes the
  loss on the whole batch, back-propagates its own rows, and the gradients are summed.

Gradients and the loss travel in one buffer (float64 on the host; the tensor's dtype on
the device with NCCL), one all-reduce per step.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .. import distributed as _dist
from ..inputs import input_rgb_image_pair
from ..tensor import default_dtype, resizable_tensor
from ..tensor_tools import use_cuda
from ..core import computational_nodes
from ..visitors.walk import visit_layer_parameters
from . import batches as _batches
from .guard import local_sync_files

__all__ = ["replica_group", "shared_sync_files", "reduction_of", "gathered_order"]

_NAME = "dnn_trainer"


def reduction_of(loss) -> str:
    """The loss's ``distributed_reduction`` ("mean" unless the loss class says otherwise)."""
    kind = getattr(loss, "distributed_reduction", "mean")
    if kind not in ("mean", "sum", "gather"):
        raise ValueError(f"{type(loss).__name__}.distributed_reduction must be 'mean', 'sum' or "
                         f"'gather', got {kind!r}")
    return kind


def gathered_order(counts, sef, view_major):
    """Row permutation from the rank-order concatenation of the chunks' outputs (rank r holds
    ``counts[r]`` input objects, ``sef`` output rows each) to the single-process output order.
    Item-major inputs (the ``sef`` rows of an object adjacent) need none; view-major inputs
    (``input_rgb_image_pair``: all first views, then all second views) interleave."""
    total = int(sum(counts)) * sef
    if sef <= 1 or not view_major:
        return np.arange(total)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) * sef
    order = []
    for v in range(sef):
        for s, c in zip(starts, counts):
            order.append(np.arange(s + v * c, s + (v + 1) * c))
    return np.concatenate(order)


class _shape_of:
    """What the coupled losses read of the input tensor: its dimensions."""

    def __init__(self, n, k, nr, nc):
        self._dims = (n, k, nr, nc)

    def num_samples(self):
        return self._dims[0]

    def k(self):
        return self._dims[1]

    def nr(self):
        return self._dims[2]

    def nc(self):
        return self._dims[3]

    @property
    def shape(self):
        return self._dims


class _gathered_subnet:
    """The whole batch's output as the loss sees a subnet: ``get_output``,
    ``get_gradient_input``, ``sample_expansion_factor``, ``input_layer``."""

    def __init__(self, output, sef, input_layer):
        with default_dtype(output.dtype):
            self._out = resizable_tensor(*output.shape)
            self._grad = resizable_tensor(*output.shape)
        self._out.host_write_only()[...] = output
        self._grad.fill(0)
        self._sef, self._input_layer = sef, input_layer

    def get_output(self):
        return self._out

    def get_gradient_input(self):
        return self._grad

    def sample_expansion_factor(self):
        return self._sef

    def input_layer(self):
        return self._input_layer


def _chunk_where(where, lo):
    return _batches.position(where.who, lambda j: where.locate(lo + j))


class replica_group:
    """The ranks training one net together (``comm``: a ``dnnpy.distributed`` communicator).
    ``size == 1`` is the single-process trainer."""

    def __init__(self, net, solver, comm):
        self.comm = comm
        self._net = net
        self._solver_text = repr(solver)
        self._reduction = reduction_of(net.loss_details())
        self._verified = False
        self._layout = None          # gradient sizes, from the last step this rank had data
        if comm.size > 1:
            for node in net.layers():
                details = getattr(node, "layer_details", None)
                if details is not None and type(details()).__name__ == "embeddings_":
                    raise ValueError(f"{_NAME}: data-parallel training cannot train a net with "
                                     f"embeddings_: it updates its table inside backward, bypassing "
                                     f"the gradient all-reduce, so the replicas would drift apart")

    @property
    def size(self):
        return self.comm.size

    @property
    def rank(self):
        return self.comm.rank

    def smallest_chunk(self, n):
        """The fewest samples a rank gets from a mini-batch of ``n``."""
        return min(_dist.chunk_counts(n, self.size))

    # -- checks before training ---------------------------------------------------------
    def check_data(self, what, n, mini_batch_size=None):
        """Every rank must pass the same number of samples, and every rank must get samples
        from a full mini-batch: ValueError (on every rank) otherwise."""
        if self.size == 1:
            return
        sizes = self.comm.allgather_object(int(n))
        if len(set(sizes)) != 1:
            raise ValueError(f"{_NAME}.{what}: every rank must pass the same data (the global "
                             f"mini-batch, split here), but the ranks passed "
                             f"{', '.join(f'rank {r}: {s}' for r, s in enumerate(sizes))} samples")
        batch = n if mini_batch_size is None else min(n, mini_batch_size)
        if batch < self.size:
            which = "the mini-batch" if mini_batch_size is None else (
                f"the mini-batch size {mini_batch_size}" if mini_batch_size <= n else f"the data ({n} samples)")
            raise ValueError(f"{_NAME}.{what}: {self.size} ranks but {which} has only {batch} "
                             f"sample{'s' * (batch != 1)}: rank {self.size - 1} would get none. "
                             f"Use a mini-batch of at least {self.size} samples (it is the global "
                             f"batch, split across the ranks) or fewer ranks")

    # -- one step -----------------------------------------------------------------------
    def compute_parameter_gradients(self, data, labels, n, where, convert):
        """Forward and backward on this rank's chunk of the mini-batch; afterwards every
        rank's parameter gradients are those of the whole mini-batch. Returns the loss of the
        whole mini-batch (the same value on every rank). The gradient with respect to the
        net's input, which a step never reads, is not computed
        (``set_final_data_gradient_wanted``)."""
        wanted = self._net.final_data_gradient_wanted()
        self._net.set_final_data_gradient_wanted(False)
        try:
            return self._parameter_gradients(data, labels, n, where, convert)
        finally:
            self._net.set_final_data_gradient_wanted(wanted)

    def _parameter_gradients(self, data, labels, n, where, convert):
        if self.size == 1:
            return self._net.compute_parameter_gradients(convert(data, labels, where), labels)
        lo, hi = _dist.chunk_bounds(n, self.size, self.rank)
        if self._reduction == "gather":
            loss, grad_weight, loss_weight = self._gathered_step(data, labels, n, where, convert, lo, hi)
        else:
            loss = 0.0
            if hi > lo:
                chunk_labels = None if labels is None else _batches.take(labels, slice(lo, hi))
                x = convert(_batches.take(data, slice(lo, hi)), chunk_labels, _chunk_where(where, lo))
                loss = self._net.compute_parameter_gradients(x, chunk_labels)
            loss_weight = (hi - lo) / n
            grad_weight = 1.0 if self._reduction == "sum" else loss_weight
        if not self._verified:
            self._verify()
        return self._reduce(hi > lo, grad_weight, loss, loss_weight)

    def compute_loss(self, data, labels, n, where, convert):
        """The whole mini-batch's loss without updating (``test_one_step``)."""
        if self.size == 1:
            return self._net.compute_loss(convert(data, labels, where), labels)
        lo, hi = _dist.chunk_bounds(n, self.size, self.rank)
        if self._reduction == "gather":
            return self._gathered_step(data, labels, n, where, convert, lo, hi, backward=False)[0]
        loss = np.zeros(1)
        if hi > lo:
            chunk_labels = None if labels is None else _batches.take(labels, slice(lo, hi))
            x = convert(_batches.take(data, slice(lo, hi)), chunk_labels, _chunk_where(where, lo))
            loss[0] = self._net.compute_loss(x, chunk_labels) * (hi - lo) / n
        self.comm.allreduce_sum(loss)
        return float(loss[0])

    def _gathered_step(self, data, labels, n, where, convert, lo, hi, backward=True):
        """The coupled-loss step: -> (loss, gradient weight, loss weight)."""
        sub = self._net.subnet()
        x = None
        local = np.zeros((0,), np.float64)
        if hi > lo:
            chunk_labels = None if labels is None else _batches.take(labels, slice(lo, hi))
            x = convert(_batches.take(data, slice(lo, hi)), chunk_labels, _chunk_where(where, lo))
            local = sub.forward(x).numpy()
        full = self.comm.allgather_rows(local)
        sef = max(1, self._net.sample_expansion_factor())
        view_major = isinstance(self._net.input_layer(), input_rgb_image_pair)
        counts = _dist.chunk_counts(n, self.size)
        order = gathered_order(counts, sef, view_major)
        whole = _gathered_subnet(full[order], sef, self._net.input_layer())
        dims = (x.k(), x.nr(), x.nc()) if x is not None else (0, 0, 0)
        loss_obj = self._net.loss_details()
        x_whole = _shape_of(full.shape[0], *dims)
        if labels is None:
            loss = float(loss_obj.compute_loss_value_and_gradient(x_whole, whole))
        else:
            loss = float(loss_obj.compute_loss_value_and_gradient(x_whole, labels, whole))
        if backward and hi > lo:
            g = np.empty_like(full)
            g[order] = whole.get_gradient_input().host_read()     # back to rank order
            start = sum(counts[:self.rank]) * sef
            sub.back_propagate_error(x, g[start:start + (hi - lo) * sef])
        return loss, 1.0, 0.0

    def _reduce(self, had_data, grad_weight, loss, loss_weight):
        """All-reduce the gradients (weighted) and the loss in one buffer; write the sums back."""
        nodes = computational_nodes(self._net)
        grads = [node.get_parameter_gradient() for node in nodes]
        if had_data:
            self._layout = [g.size() for g in grads]
        elif self._layout is None:
            raise RuntimeError(f"{_NAME}: rank {self.rank} got no samples before its net ever ran "
                               f"(use mini-batches of at least {self.size} samples)")
        device = self.comm.device_arrays and use_cuda()
        if device:
            import cupy

            xp, dtype = cupy, (grads[0].dtype if grads else np.float32)
        else:
            xp, dtype = np, np.float64
        total = sum(self._layout)
        buf = xp.zeros(total + 1, dtype)
        if had_data:
            o = 0
            for g, s in zip(grads, self._layout):
                if s:
                    src = g.device_read() if device else g.host_read()
                    buf[o:o + s] = src.reshape(-1)
                    o += s
            if grad_weight != 1.0:
                buf[:total] *= grad_weight
        buf[total] = loss * loss_weight
        self.comm.allreduce_sum(buf)
        o = 0
        for node, s in zip(nodes, self._layout):
            if s:
                node.assign_parameter_gradient(buf[o:o + s])
                o += s
        return loss if self._reduction == "gather" else float(buf[total])

    # -- replicas -------------------------------------------------------------------------
    def parameters_digest(self):
        """SHA-256 of every parameter's bytes, in layer order."""
        h = hashlib.sha256()
        visit_layer_parameters(self._net, lambda p: h.update(np.ascontiguousarray(p.host_read()).tobytes()))
        return h.hexdigest()

    def _verify(self):
        """Refuse to train replicas that differ in net type, solver or parameters."""
        mine = (repr(self._net.net_type), self._solver_text, self.parameters_digest())
        every = self.comm.allgather_object(mine)
        for what, i in (("net type", 0), ("solver", 1), ("initial parameters", 2)):
            values = [e[i] for e in every]
            if len(set(values)) != 1:
                bad = next(r for r, v in enumerate(values) if v != values[0])
                detail = ("" if i == 2 else f": rank 0 has {values[0]}, rank {bad} has {values[bad]}")
                hint = (" Initialise the nets the same way on every rank (dnnpy's default "
                        "initialisation is deterministic; seeded_initialisation(seed) or loading "
                        "the same weights on every rank keeps it so)" if i == 2 else "")
                raise ValueError(f"{_NAME}: the replicas differ in their {what}{detail}; every "
                                 f"rank must train the same net with the same solver.{hint}")
        self._verified = True


class shared_sync_files(local_sync_files):
    """The sync guard's file access shared by the ranks: rank 0 alone reads, writes and reads
    the clock; the others receive its answers, so every rank takes the same decisions and
    resumes from the same bytes (multi-node runs need no shared file system)."""

    def __init__(self, comm):
        self._comm = comm

    def check_path(self, name):
        problem = None
        if self._comm.rank == 0:
            try:
                super().check_path(name)
            except (OSError, ValueError) as e:
                problem = e
        problem = self._comm.bcast_object(problem)
        if problem is not None:
            raise problem

    def newest(self, name):
        return self._comm.bcast_object(super().newest(name) if self._comm.rank == 0 else None)

    def exists(self, path):
        return self._comm.bcast_object(os.path.exists(path) if self._comm.rank == 0 else None)

    def read(self, path):
        return self._comm.bcast_bytes(super().read(path) if self._comm.rank == 0 else None)

    def save(self, name, encode):
        return self._comm.bcast_object(super().save(name, encode) if self._comm.rank == 0 else None)

    def agree(self, flag):
        return bool(self._comm.bcast_object(bool(flag) if self._comm.rank == 0 else None))


def make_replica_group(net, solver, devices):
    """The trainer's ``replica_group``: one process unless a launcher started several. On the
    CUDA backend each rank uses ``devices[local_rank]`` (several GPUs in one process are not
    supported: ValueError showing the mpiexec command)."""
    devices = _check_devices(devices)
    cuda = bool(devices) and use_cuda()
    world = _dist.launched_world_size()
    if cuda and world == 1 and len(set(devices)) > 1:
        raise ValueError(f"{_NAME}: devices={devices} asks for {len(set(devices))} GPUs, but dnnpy "
                         f"trains one replica per process: start one process per GPU with "
                         f"'mpiexec -n {len(set(devices))} python -m mpi4py your_script.py' (or "
                         f"'python -m dnnpy.distributed.run -n {len(set(devices))} your_script.py')")
    comm = _dist.get_communicator(cuda=cuda, distinct_devices=cuda and world <= len(set(devices)))
    if cuda and comm.size > 1:
        import cupy

        cupy.cuda.Device(devices[comm.local_rank % len(devices)]).use()
    return replica_group(net, solver, comm)


def _check_devices(devices):
    if devices is None:
        return []
    try:
        out = [int(d) for d in devices]
    except (TypeError, ValueError):
        raise TypeError(f"{_NAME}: devices must be a list of device ids (e.g. [0, 1]), got "
                        f"{devices!r}") from None
    if any(d < 0 for d in out) or any(d != float(v) for d, v in zip(out, devices)):
        raise ValueError(f"{_NAME}: device ids must be integers >= 0, got {list(devices)!r}")
    return out
