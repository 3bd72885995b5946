"""What the CPU twin's modules share: storing computed values with dlib's assign/add rule,
and per-thread scratch buffers."""

import threading

import numpy as np

_workspace = threading.local()


def scratch(name, shape, dtype):
    """A reused per-thread scratch array named ``name`` (contents undefined). It grows to
    the largest size asked for: on some machines faulting fresh pages in costs as much as
    the arithmetic done in them. Two live scratch arrays need two names."""
    size = int(np.prod(shape))
    bufs = _workspace.__dict__.setdefault("bufs", {})
    buf = bufs.get(name)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = bufs[name] = np.empty(size, dtype=dtype)
    return buf[:size].reshape(shape)


def _store(dest, values):
    """Assign ``values`` (already computed from the inputs) to dest."""
    dest.host_write_only()[...] = values


def _grad_out(grad, gradient_input, values):
    """dlib's rule for the activation gradients: assign when grad is gradient_input,
    otherwise add."""
    if grad is gradient_input:
        grad.host_write_only()[...] = values
    else:
        grad.host()[...] += values
