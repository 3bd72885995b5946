"""Dispatchers: what ``dropout_`` computes with: the pointwise ``multiply`` (also
``tril_``'s mask), ``threshold`` and the ``tensor_rand`` generator (dlib's ``tt::`` names).
"""

from __future__ import annotations

import numbers

from .backend import _backend, _check_real, _check_tensors

__all__ = ["multiply", "threshold", "tensor_rand"]


# ----------------------------------------------------------------------------------------
# multiply, threshold, random numbers (dropout)

def multiply(add_to, dest, src1, src2):
    """Pointwise ``src1*src2`` into dest (dlib's ``tt::multiply``).

    Requires: k, nr, nc equal across the three tensors; each num_samples is 1 or
    ``MD = max`` of the three. A source with num_samples 1 is replicated over MD samples;
    if ``dest.num_samples() == 1`` (and MD > 1) the products are summed over samples.
    Ensures: assigns to dest, or adds when ``add_to``.
    """
    _check_tensors("multiply", dest=dest, src1=src1, src2=src2)
    shapes = [t.shape for t in (dest, src1, src2)]
    md = max(s[0] for s in shapes)
    if len({s[1:] for s in shapes}) != 1 or any(s[0] not in (1, md) for s in shapes):
        raise ValueError(f"multiply: dest{dest.shape}, src1{src1.shape}, src2{src2.shape} must share "
                         "k, nr, nc, and each num_samples must be 1 or the largest one")
    if dest.size() == 0:
        return
    _backend().multiply(bool(add_to), dest, src1, src2)


def threshold(data, thresh):
    """``data = data > thresh ? 1 : 0`` element-wise, in place."""
    _check_tensors("threshold", data=data)
    _backend().threshold(data, _check_real("threshold", "thresh", thresh))


class tensor_rand:
    """Fills tensors with random numbers (dlib's ``tt::tensor_rand``), seedable.

    As in dlib, the sequence differs between the CPU and CUDA backends; code must not rely
    on specific values. Each backend keeps its own generator, created from the seed the
    first time that backend is used.
    """

    def __init__(self, seed=0):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"tensor_rand: seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self._generators = {}

    def _generator(self):
        b = _backend()
        g = self._generators.get(b.NAME)
        if g is None:
            g = self._generators[b.NAME] = b.rand_generator(self.seed)
        return b, g

    def fill_uniform(self, data):
        """Fill ``data`` with uniform numbers in (0, 1]."""
        _check_tensors("tensor_rand.fill_uniform", data=data)
        b, g = self._generator()
        b.rand_fill_uniform(g, data)

    def fill_gaussian(self, data, mean=0.0, stddev=1.0):
        """Fill ``data`` with N(mean, stddev^2) numbers. Requires ``data.size()`` even (dlib)."""
        _check_tensors("tensor_rand.fill_gaussian", data=data)
        if data.size() % 2 != 0:
            raise ValueError(f"tensor_rand.fill_gaussian: data.size() must be even, got data{data.shape}")
        b, g = self._generator()
        b.rand_fill_gaussian(g, data, _check_real("tensor_rand.fill_gaussian", "mean", mean),
                             _check_real("tensor_rand.fill_gaussian", "stddev", stddev))
