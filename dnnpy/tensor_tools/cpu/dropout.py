"""CPU twin of ``dnnpy.tensor_tools.dropout`` (numpy, vectorised): multiply, threshold, random
numbers.

Every op reads its inputs before it asks for a writable view, so an output may be an input.
"""

from __future__ import annotations

import numpy as np

from .._twins import twin_ops
from ._common import _store

__all__ = twin_ops("dropout")


# ----------------------------------------------------------------------------------------
# multiply, threshold, random numbers

def multiply(add_to, dest, src1, src2):
    tail = dest.shape[1:]
    a = src1.host_read().reshape((src1.num_samples(),) + tail)
    b = src2.host_read().reshape((src2.num_samples(),) + tail)
    prod = a * b                         # broadcasts a num_samples of 1 over the other
    if dest.num_samples() == 1 and prod.shape[0] != 1:
        prod = prod.sum(axis=0, keepdims=True)
    if add_to:
        dest.host()[...] += prod
    else:
        _store(dest, np.broadcast_to(prod, dest.shape))


def threshold(data, thresh):
    d = data.host()
    d[...] = d > thresh


def rand_generator(seed):
    return np.random.default_rng(seed)


def rand_fill_uniform(gen, data):
    a = data.host_write_only()
    # Generator.random gives [0, 1); 1 - u gives dlib's documented (0, 1]
    a[...] = 1 - gen.random(a.shape, dtype=np.float64)


def rand_fill_gaussian(gen, data, mean, stddev):
    a = data.host_write_only()
    a[...] = gen.standard_normal(a.shape) * stddev + mean
