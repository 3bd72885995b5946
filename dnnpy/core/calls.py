"""What the public calls of a net share: their arguments converted and checked (numpy in,
batches split), and errors raised inside a layer renamed to name it.

An exception raised by a layer's setup/forward/backward (or a loss) is marked with the
failing node (``_blame``); the public call the user made (``naming_layers(top)``) turns the
mark into ``layer<i> <class> (<phase> with input<shape>): <message>``, ``i`` counted from
the net the call was made on, as ``print(net)`` numbers it. The exception keeps its type
and traceback.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..errors import EvaluationWarning, warn
from ..tensor import resizable_tensor, tensor

__all__ = ["blame", "naming_layers", "net_lock", "running", "check_solvers", "as_gradient", "as_input_tensor", "split",
           "hint_if_training_net"]

_hinted = False


def hint_if_training_net(net):
    """Warn once per process (``EvaluationWarning``) when ``net(x)`` evaluates a net holding
    layers that behave differently at inference (their class says so with
    ``inference_form``: bn_ -> affine, dropout -> multiply)."""
    global _hinted
    if _hinted:
        return
    details = [n.layer_details() for n in net.layers() if getattr(n, "computational", False)]
    kinds = sorted({type(d).__name__ for d in details if getattr(d, "inference_form", None)})
    if not kinds:
        return
    _hinted = True
    warn(
        f"evaluating a training net: its {', '.join(kinds)} layers use each batch's statistics (and "
        f"update their running statistics) or draw new dropout masks, so a sample's answer depends "
        f"on the rest of its batch and changes from call to call, as in dlib. To evaluate, use "
        f"test_net = dnnpy.inference_copy(net), after dnnpy.recompute_bn_running_stats(net, "
        f"training_data) (README, 'How to evaluate'). Shown once.", EvaluationWarning)


def blame(e, node, phase, shape):
    """Mark ``e`` as raised by ``node`` during ``phase`` on an input of ``shape`` (the first
    mark wins: the innermost layer)."""
    if getattr(e, "_dnnpy_blame", None) is None:
        try:
            e._dnnpy_blame = (node, phase, shape)
        except AttributeError:  # an exception type without a __dict__: left as it is
            pass


def _renamed(e, message):
    """``e`` with ``message``, as the same exception type when it can carry one."""
    try:
        new = type(e)(message)
        if str(new) != message:
            raise TypeError
    except Exception:  # noqa: BLE001 - exception types with other constructors
        new = RuntimeError(message)
    new._dnnpy_named = True
    return new.with_traceback(e.__traceback__)


class net_lock:
    """The lock of one net (held by its ``input_node``, the one node every node of the net
    reaches): the public calls that run or change the net hold it, so calls from several
    threads on one net take turns instead of overwriting each other's activations (a
    forward keeps them in the layers). Re-entrant: a call may make others. A copy of the
    net (``copy.deepcopy``, pickle) gets a lock of its own, so copies run in parallel."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()

    def __copy__(self):             # a shallow copy shares the layers, so the lock too
        return self

    def __deepcopy__(self, memo):
        return net_lock()

    def __reduce__(self):
        return net_lock, ()


@contextlib.contextmanager
def running(top):
    """A public call on the net of node ``top``: its lock held, errors naming the layer (as
    ``naming_layers``; one context manager, as this is on every call's path)."""
    lock = top.input_node().lock._lock
    lock.acquire()
    try:
        yield
    except Exception as e:
        _name_the_layer(top, e)
        raise
    finally:
        lock.release()


@contextlib.contextmanager
def naming_layers(top):
    """Errors raised inside ``top``'s layers renamed to name the layer (module docstring)."""
    try:
        yield
    except Exception as e:
        _name_the_layer(top, e)
        raise


def _name_the_layer(top, e):
    """Raise ``e`` renamed ``layer<i> <class> (<phase> ...): <message>`` when a layer marked
    it (``blame``) and it is not named yet; else return (the caller re-raises it)."""
    blame = getattr(e, "_dnnpy_blame", None)
    if blame is None or getattr(e, "_dnnpy_named", False):
        return
    node, phase, shape = blame
    index = top.index_of(node)
    where = f"layer<{index}>" if index is not None else "a layer"
    what = f" with {'input' if phase != 'backward' else 'gradient input'}{shape}" if shape else ""
    raise _renamed(e, f"{where} {node._name()} ({phase}{what}): {e}") from None


def check_solvers(solvers, count):
    if not isinstance(solvers, (list, tuple)):
        raise TypeError(f"update_parameters: solvers must be a list with one solver per computational "
                        f"layer ({count} here; dnnpy.make_solvers(net, solver) builds it), got "
                        f"{type(solvers).__name__}")
    if len(solvers) != count:
        raise ValueError(f"update_parameters: the net has {count} computational layers "
                         f"but {len(solvers)} solvers were given")


def as_gradient(g, want, who):
    """A gradient argument as a tensor of the shape ``want`` (numpy arrays are accepted)."""
    if not isinstance(g, tensor):
        a = np.asarray(g)
        if a.shape != tuple(want):
            raise ValueError(f"{who}: the gradient has shape {a.shape}; expected the net's output "
                             f"shape {tuple(want)}")
        g = resizable_tensor(*a.shape)
        g.assign(a)
    elif g.shape != tuple(want):
        raise ValueError(f"{who}: the gradient has shape {g.shape}; expected the net's output "
                         f"shape {tuple(want)}")
    return g


def as_input_tensor(x, who):
    """``forward``'s argument: a dnnpy tensor, or a 4-D numpy array (copied into one)."""
    if isinstance(x, tensor):
        return x
    if isinstance(x, np.ndarray) and x.ndim == 4 and x.dtype.kind in "fiu":
        t = resizable_tensor(*x.shape)
        t.assign(x)
        return t
    raise TypeError(f"{who} expects the input TENSOR, a dnnpy tensor or a 4-D numpy array "
                    f"(num_samples, k, nr, nc); got {type(x).__name__}"
                    f"{getattr(x, 'shape', '')}. To run a batch of input objects use net(batch), "
                    f"or net.to_tensor(batch) then forward")


def split(batch, batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    n = len(batch)
    return [batch[i:i + batch_size] for i in range(0, n, batch_size)]
