"""How dnn_trainer cuts data into mini-batches and checks them before the net sees them.

* ``epoch_order``: the sample order of one epoch under ``train(..., shuffle=True)``; a function
  of (seed, epoch) only, so a trainer resumed from a sync file mid-epoch continues the same order.
* ``take``: a mini-batch of a list or an array, by slice or by indices.
* ``check_inputs`` / ``check_labels``: non-finite inputs (after the input layer's conversion)
  and non-finite float labels raise a ``ValueError`` naming the sample in the user's data and
  its place (epoch, mini-batch, position). The passing case costs one vectorised
  ``isfinite().all()`` over the converted tensor; the sample is looked for only on failure.
* ``batch_norm_layer``: the first ``bn_`` of a net, which cannot train on a 1-sample mini-batch.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Callable, NamedTuple

import numpy as np

from ..layers.norm import bn_
from ..tensor import resizable_tensor
from ..visitors.walk import visit_computational_layers


class position(NamedTuple):
    """Where a mini-batch came from, for error messages.

    ``who``: the trainer call (``"dnn_trainer.train"``); ``locate(j)``: for position ``j`` of
    the mini-batch, ``(name of the sample in the user's data, where it sits)``."""

    who: str
    locate: Callable[[int], tuple]


def one_batch_position(where) -> position:
    """Names the samples of a mini-batch given to ``*_one_step`` (``where``) for errors."""
    what = where.rsplit(".", 1)[-1]
    return position(where, lambda j: (f"data[{j}]", f"position {j} of the mini-batch given to {what}"))


def epoch_position(where, n, pos, end, order, mini_batch_size, epoch) -> position:
    """Names the samples of the mini-batch ``[pos, end)`` of epoch ``epoch`` of ``train()``
    (``order``: the epoch's shuffled order, or None) for errors."""
    def locate(j):
        index = pos + j if order is None else int(order[pos + j])
        span = f"(data[{pos}:{end}]) " if order is None else ""
        return (f"data[{index}]", f"position {j} of mini-batch {pos // mini_batch_size + 1} of "
                                  f"{-(-n // mini_batch_size)} {span}in epoch {epoch + 1}"
                                  + ("" if order is None else " (shuffled order)"))

    return position(where, locate)


def epoch_order(n, seed, epoch) -> np.ndarray:
    """The permutation of ``range(n)`` that epoch ``epoch`` (0-based) visits under ``seed``."""
    return np.random.default_rng((int(seed), int(epoch))).permutation(n)


def take(seq, index):
    """``seq[index]`` for a slice; for an index array a gathered list (or array, for arrays)."""
    if isinstance(index, slice) or isinstance(seq, np.ndarray):
        return seq[index]
    return [seq[i] for i in index]


def _one(batch, j):
    return batch[j:j + 1]


def _first_nonfinite(a):
    """``(index tuple, value)`` of the first non-finite value of array ``a``."""
    where = np.argwhere(~np.isfinite(a))[0]
    return tuple(int(v) for v in where), a[tuple(where)]


def check_inputs(pos: position, net, x, batch):
    """Raise ValueError if tensor ``x`` (``net.to_tensor(batch)``) holds NaN or inf, naming the
    first sample of ``batch`` whose conversion does."""
    a = x.host_read()
    if a.dtype.kind != "f" or np.isfinite(a).all():
        return
    scratch = resizable_tensor()
    for j in range(len(batch)):
        one = net.to_tensor(_one(batch, j), scratch).host_read()
        if not np.isfinite(one).all():
            bad = int(np.count_nonzero(~np.isfinite(a))) - int(np.count_nonzero(~np.isfinite(one)))
            (n, k, r, c), value = _first_nonfinite(one)
            sample, where = pos.locate(j)
            more = f"; the rest of this mini-batch holds {bad} more" if bad else ""
            at = f"channel {k}, row {r}, column {c}" + (f" of copy {n}" if one.shape[0] > 1 else "")
            raise ValueError(f"{pos.who}: {sample} holds non-finite input values ({value} at {at} "
                             f"of its converted input tensor{more}); it is at {where}. The net "
                             f"was not run on this mini-batch: repair or remove that sample.")
    (n, k, r, c), value = _first_nonfinite(a)     # no single sample is to blame
    raise ValueError(f"{pos.who}: the converted mini-batch holds non-finite input values ({value} "
                     f"at tensor index ({n}, {k}, {r}, {c})), although no sample does on its own")


def _float_labels(labels):
    """The labels as a float array when they are numbers or float arrays, else None (class
    indices, boxes, ...: the loss checks those)."""
    if isinstance(labels, np.ndarray):
        return labels if labels.dtype.kind == "f" else None
    first = labels[0]
    scalar = isinstance(first, numbers.Real) and not isinstance(first, (bool, numbers.Integral))
    if not (scalar or (isinstance(first, np.ndarray) and first.dtype.kind == "f")):
        return None
    try:
        # (float32 arrays stay float32: finiteness is the same, and no float64 copy is made)
        arr = np.asarray(labels)
    except (TypeError, ValueError):
        return None       # ragged or mixed: the loss judges them
    return arr if arr.dtype.kind == "f" else None


def _finite_arrays(labels):
    """True when ``labels`` is a list of float arrays that are all finite, checked one by one
    with a sum (NaN and inf propagate; an overflow to inf is checked element by element)
    instead of stacking a copy of them all; False when that cannot tell (other labels, or
    some non-finite value: the caller looks closer)."""
    if isinstance(labels, np.ndarray) or not all(isinstance(t, np.ndarray) and t.dtype.kind == "f"
                                                 for t in labels):
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        return all(np.isfinite(np.add.reduce(t, axis=None)) or np.isfinite(t).all() for t in labels)


def check_labels(pos: position, labels):
    """Raise ValueError if float labels hold NaN or inf, naming the sample (a regression loss
    would turn them into a NaN/inf loss, which the divergence guard can only undo)."""
    if len(labels) and _finite_arrays(labels):
        return
    arr = _float_labels(labels)
    if arr is None or np.isfinite(arr).all():
        return
    bad = ~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1)
    j = int(np.argmax(bad))
    sample, where = pos.locate(j)
    _, value = _first_nonfinite(np.asarray(arr[j]).reshape(-1))
    more = int(bad.sum()) - 1
    extra = f"; {more} more labels of this mini-batch are non-finite too" if more else ""
    raise ValueError(f"{pos.who}: the label of {sample} is not finite ({value}{extra}); it is at "
                     f"{where}. The net was not run on this mini-batch: repair or remove that "
                     f"sample.")


def batch_norm_layer(net):
    """``"layer<i> bn_con"`` for the first ``bn_`` layer of ``net``, or None."""
    found = []
    visit_computational_layers(net, lambda i, d: found.append(f"layer<{i}> {repr(d).split()[0]}")
                               if isinstance(d, bn_) else None)
    return found[0] if found else None


def warn_one_sample_skipped(where, bn, n, pos, mini_batch_size):
    """The one-time warning of ``train()`` skipping a 1-sample mini-batch under ``bn``."""
    warnings.warn(
        f"{where}: skipping the mini-batch of 1 sample at data position {pos} ({n} samples, batch "
        f"size {mini_batch_size}): the net has {bn}, which cannot train on one sample (batch "
        f"normalization needs the statistics of at least 2). Such a mini-batch is skipped in "
        f"every epoch; a batch size that does not leave 1 sample over avoids it, and "
        f"shuffle=True at least skips a different sample each epoch.", RuntimeWarning, stacklevel=4)
