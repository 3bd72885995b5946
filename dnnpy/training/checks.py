"""dnn_trainer's argument checks: each refuses a bad value at the call, naming the method."""

from __future__ import annotations

import inspect
import math
import os

import numpy as np

__all__ = ["is_unsupervised", "positive_int", "nonneg_int", "positive_float", "check_sync_path",
           "check_solver", "check_batch", "check_bn_batches"]

_NAME = "dnn_trainer"


def is_unsupervised(loss) -> bool:
    """dlib's ``training_label_type == no_label_type``: the loss takes no labels."""
    params = inspect.signature(loss.compute_loss_value_and_gradient).parameters
    return len(params) == 2


def positive_int(what, value):
    """``value`` as an int; a ValueError naming ``dnn_trainer.what`` unless it is > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{_NAME}.{what}: expected an integer > 0, got {value!r}")
    return int(value)


def nonneg_int(what, value):
    """``value`` as an int; a ValueError unless it is >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{_NAME}.{what}: expected an integer >= 0, got {value!r}")
    return int(value)


def positive_float(what, value):
    """``value`` as a float; a ValueError unless it is finite and > 0."""
    value = float(value)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{_NAME}.{what}: expected a finite value > 0, got {value!r}")
    return value


def check_sync_path(name):
    """Refuse, at the call, a sync file that could not be written later."""
    what = f"{_NAME}.set_synchronization_file"
    if os.path.isdir(name):
        raise IsADirectoryError(f"{what}: {name!r} is a folder; give a file name in it, e.g. "
                                f"{os.path.join(name, 'trainer.sync')!r}")
    folder = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{what}: the folder {folder!r} of the sync file {name!r} does not "
                                f"exist; create it first (os.makedirs)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"{what}: cannot write in the folder {folder!r} of the sync file "
                              f"{name!r}")


def check_solver(solver):
    """A solver instance (``adam()``), not its class (``adam``)."""
    if isinstance(solver, type):
        raise TypeError(f"{_NAME}: solver must be an instance such as {solver.__name__}(), got the "
                        f"class {solver.__name__}")
    if not callable(solver):
        raise TypeError(f"{_NAME}: solver must be a solver instance such as sgd() or adam(), got "
                        f"{type(solver).__name__}")
    return solver


def check_batch(what, loss, unsupervised, data, labels) -> int:
    """The number of samples of ``data``; refuses labels for an unsupervised ``loss``, missing
    labels for a supervised one, non-sequences, empty data and label counts that differ."""
    if unsupervised and labels is not None:
        raise ValueError(f"{_NAME}.{what}: {type(loss).__name__} is an "
                         f"unsupervised loss; call {what}(data) without labels")
    if not unsupervised and labels is None:
        raise ValueError(f"{_NAME}.{what}: {type(loss).__name__} needs "
                         f"labels: call {what}(data, labels)")
    try:
        n = len(data)
    except TypeError:
        raise TypeError(f"{_NAME}.{what}: data must be a sequence (list or array) of inputs, "
                        f"got {type(data).__name__}") from None
    if n == 0:
        raise ValueError(f"{_NAME}.{what}: the data is empty")
    if labels is not None and len(labels) != n:
        raise ValueError(f"{_NAME}.{what}: got {n} data samples but {len(labels)} labels; "
                         f"the counts must match")
    return n


def check_bn_batches(bn, n, mini_batch_size, ranks, smallest_chunk):
    """``train``'s refusal for a net with a ``bn_`` (``bn``, or None): batch norm needs 2
    samples, in every mini-batch and on every rank (``smallest_chunk`` of the mini-batch)."""
    if bn is None:
        return
    if n == 1 or mini_batch_size == 1:
        raise ValueError(f"{_NAME}.train: the net has {bn}, which needs mini-batches of at least "
                         f"2 samples, but " + ("the data has 1 sample" if n == 1 else
                                               "the mini-batch size is 1 (set_mini_batch_size)"))
    if smallest_chunk < 2:
        raise ValueError(f"{_NAME}.train: the net has {bn}, which needs at least 2 samples on "
                         f"every rank, but {ranks} ranks split the mini-batch "
                         f"of {min(n, mini_batch_size)} into chunks of 1")
