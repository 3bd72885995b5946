"""dlib's ``set_dnn_prefer_smallest_algorithms()`` / ``set_dnn_prefer_fastest_algorithms()``:
whether cuDNN may pick algorithms that need a workspace (faster, more GPU memory) or only
those that need none (dlib's "slower but more RAM frugal" choice).

The CUDA twin reads the setting where it caps a cuDNN call's workspace
(``cuda/handles.max_workspace``: 0 while the smallest are preferred); algorithm choices are
cached per cap, so a change applies to the next call. The CPU twin has no such choice (oneDNN
and numpy use no per-call workspace that trades memory for speed): there the setting changes
nothing, and nothing else either way.
"""

from __future__ import annotations

__all__ = ["set_dnn_prefer_smallest_algorithms", "set_dnn_prefer_fastest_algorithms",
           "dnn_prefer_smallest_algorithms"]

_prefer_smallest = False


def set_dnn_prefer_smallest_algorithms():
    """Prefer cuDNN algorithms that need no workspace (dlib's name)."""
    global _prefer_smallest
    _prefer_smallest = True


def set_dnn_prefer_fastest_algorithms():
    """Let cuDNN pick the fastest algorithms within the workspace cap (dlib's default)."""
    global _prefer_smallest
    _prefer_smallest = False


def dnn_prefer_smallest_algorithms() -> bool:
    """Whether ``set_dnn_prefer_smallest_algorithms()`` is in effect (dlib's
    ``dnn_prefer_smallest_algorithms()``)."""
    return _prefer_smallest
