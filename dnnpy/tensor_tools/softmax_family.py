"""Dispatchers: the softmax family (``softmax``, ``softmax_all`` and their gradients), and
dlib's ``operation_mode`` (``CHANNEL_WISE`` / ``PLANE_WISE``, also used by ``tt.gemm``).

Gradients ASSIGN to ``grad`` when ``grad is gradient_input`` and ADD to it otherwise.
"""

from __future__ import annotations

from .backend import _backend, _same_dims

__all__ = ["CHANNEL_WISE", "PLANE_WISE", "softmax", "softmax_gradient", "softmax_all",
           "softmax_all_gradient"]

# dlib's operation_mode
CHANNEL_WISE = 0
PLANE_WISE = 1


def _check_mode(op, mode):
    if isinstance(mode, bool) or mode not in (CHANNEL_WISE, PLANE_WISE):
        raise ValueError(f"{op}: mode must be CHANNEL_WISE (0) or PLANE_WISE (1), got {mode!r}")
    return int(mode)


# ----------------------------------------------------------------------------------------
# softmax family

def softmax(dest, src, mode=CHANNEL_WISE):
    """CHANNEL_WISE: softmax over k at every (n, r, c). PLANE_WISE: softmax over nc along
    every row (n, k, r) of each plane (dlib's implementation, not its comment); a row that
    is all -inf becomes all 0. Requires same dimensions; dest may be src."""
    _same_dims("softmax", dest=dest, src=src)
    _backend().softmax(dest, src, _check_mode("softmax", mode))


def softmax_gradient(grad, dest, gradient_input, mode=CHANNEL_WISE):
    """Gradient of ``dot(softmax(x, mode), gradient_input)`` given ``dest = softmax(x, mode)``:
    ``dest*(gi - sum(dest*gi))`` over the same groups. Assigns if ``grad is
    gradient_input``, else ADDS."""
    _same_dims("softmax_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().softmax_gradient(grad, dest, gradient_input, _check_mode("softmax_gradient", mode))


def softmax_all(dest, src):
    """Softmax over all ``k*nr*nc`` values of each sample."""
    _same_dims("softmax_all", dest=dest, src=src)
    _backend().softmax_all(dest, src)


def softmax_all_gradient(grad, dest, gradient_input):
    """Gradient of ``dot(softmax_all(x), gradient_input)`` given ``dest``. Assigns if
    ``grad is gradient_input``, else ADDS."""
    _same_dims("softmax_all_gradient", grad=grad, dest=dest, gradient_input=gradient_input)
    _backend().softmax_all_gradient(grad, dest, gradient_input)
