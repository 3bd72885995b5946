"""dnnpy's exception and warning types, and ``warn`` (a warning attributed to the user's
line, not to dnnpy's)."""

import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.abspath(__file__))


def warn(message, category):
    """``warnings.warn`` with the stack level of the first caller outside the dnnpy package,
    so the message names the user's line (and Python's once-per-location filter applies
    there)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_ROOT):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class SerializationError(Exception):
    """A file or stream could not be read or written as the expected net/layer/tensor."""


class EvaluationWarning(UserWarning):
    """A training net (with ``bn_`` or dropout layers) was evaluated with ``net(x)``: its answers
    depend on the rest of the batch and change from call to call, as in dlib. Shown once per
    process; ``dnnpy.inference_copy(net)`` is the net to evaluate."""


class FileOverrideWarning(UserWarning):
    """A file gave a layer other template arguments than the net type declared (``fc[16, ...]``
    declared, 32 outputs in the file): the net takes the file's values, as dlib does, and
    ``net.net_type`` reports them."""


class ThreadSettingWarning(RuntimeWarning):
    """A thread-pool setting dnnpy chose could not take effect (libgomp was loaded, by torch
    for instance, before dnnpy could set its wait policy): the message names the variable,
    the value in force, its effect and the remedy. Given once per process."""
