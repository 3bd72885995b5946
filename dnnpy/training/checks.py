"""dnn_trainer's argument checks: each refuses a bad value at the call, naming the method."""

from __future__ import annotations

import inspect
import math
import os

import numpy as np

__all__ = ["is_unsupervised", "positive_int", "nonneg_int", "positive_float", "check_sync_path",
           "check_solver"]

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
