"""Per-thread "numpy only" switches: ``with switch.force(): ...`` makes the enclosed block,
in the calling thread, skip an accelerator (oneDNN under the CPU twin, the image code's
compiled kernels) and run its numpy twin. Blocks nest. ``parallel_for`` hands the caller's
switches to the worker threads running its tasks (``state()`` / ``restored(state)``), so a
block covers the work it starts on dnnpy's threads too.

    _switch = NumpyOnly()
    force_numpy = _switch.force           # the public context manager
    if _switch.on(): ...                  # run numpy
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["NumpyOnly", "state", "restored"]

_switches = []          # every NumpyOnly made, for state() and restored()


class NumpyOnly:
    """One per-thread switch (its depth: the ``force`` blocks open in this thread)."""

    def __init__(self):
        self._local = threading.local()
        _switches.append(self)

    def on(self) -> bool:
        """Whether a ``force`` block is open in this thread."""
        return getattr(self._local, "depth", 0) > 0

    @contextlib.contextmanager
    def force(self):
        """Run the enclosed block with numpy only (this thread, and the tasks it hands to
        dnnpy's worker threads through ``parallel_for``; nests)."""
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1


def state():
    """The calling thread's depth of every switch (for ``restored`` in another thread)."""
    return [getattr(s._local, "depth", 0) for s in _switches]


@contextlib.contextmanager
def restored(depths):
    """Run the enclosed block with the switches' depths ``depths`` (from ``state()`` in the
    thread whose work this is), then put this thread's own back."""
    switches = _switches[:len(depths)]
    before = [getattr(s._local, "depth", 0) for s in switches]
    for s, d in zip(switches, depths):
        s._local.depth = d
    try:
        yield
    finally:
        for s, d in zip(switches, before):
            s._local.depth = d
