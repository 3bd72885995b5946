"""What the CUDA twin's modules share: the kernel factories (every kernel compiled with
``--fmad=false``: numpy rounds ``a*b + c`` twice, and a contracted FMA would make GPU and CPU
differ by more than the transcendental functions' own last-bit differences), sums accumulated
in double, the element-wise product, and the reads and writes that keep aliased operands
safe (``_read`` copies a source that overlaps an output at another offset).
"""

from __future__ import annotations

import cupy as cp

# Contracting a*b+c into one FMA changes the rounding: keep numpy's two roundings.
_OPTIONS = ("--fmad=false",)


def _ew(in_params, out_params, body, name):
    """An ElementwiseKernel built once, at import (construction is host-only: CuPy compiles
    on the first call, per dtype and device)."""
    return cp.ElementwiseKernel(in_params, out_params, body, "dnnpy_" + name, options=_OPTIONS)


class _grad_kernel:
    """A gradient kernel in two variants: ``body`` computes ``v``; the assign variant stores
    it (never reading the old ``grad``, which may hold inf), the add variant adds it."""

    def __init__(self, in_params, body, name):
        self.assign = _ew(in_params, "T grad", body + " grad = v;", name + "_assign")
        self.add = _ew(in_params, "T grad", body + " grad = grad + v;", name + "_add")

    def __call__(self, add, *args):
        (self.add if add else self.assign)(*args)


def _red(in_params, map_expr, name, out_type="T"):
    """Sum of ``map_expr`` accumulated in double, stored as ``out_type``."""
    # CuPy expands the post-map expression inside parentheses, ``#define POST_MAP(a)
    # (post_map_expr)``: it must be an expression, with no trailing semicolon
    post = "y = (T)a" if out_type == "T" else "y = a"
    return cp.ReductionKernel(in_params, f"{out_type} y", map_expr, "a + b", post, "0",
                              "dnnpy_" + name, reduce_type="double", options=_OPTIONS)


_sum = _red("T x", "(double)x", "sum")
_sum_f64 = _red("T x", "(double)x", "sum_f64", out_type="float64")
_sum_prod = _red("T x, T w", "(double)(x * w)", "sum_prod")
_sum_sq_f64 = _red("T x", "(double)x * (double)x", "sum_sq_f64", out_type="float64")


def _overlaps_elsewhere(a, b):
    """True when a and b share memory but are not the same window: a kernel writing one
    while reading the other would race."""
    return a.overlaps_elsewhere(b)


def _read(t, *outputs):
    """``t.device_read()``, or a private copy of it when it overlaps one of ``outputs``
    other than element for element."""
    a = t.device_read()
    if any(_overlaps_elsewhere(t, o) for o in outputs):
        return a.copy()
    return a


def _out(dest, add_to=False):
    """The device view to write: read-modify-write when adding, write-only when assigning
    (call it after every input has been read, so a write-only view of a shared storage
    never skips a pending host->device copy)."""
    return dest.device() if add_to else dest.device_write_only()


def _rows(t, a):
    return a.reshape(t.num_samples(), -1)


_mul = _grad_kernel("T a, T b", "T v = a * b;", "multiply")
