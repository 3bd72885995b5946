"""CUDA twin of ``dnnpy.tensor_tools.dropout`` (CuPy): multiply, threshold, random numbers.
Same names, signatures and assign/add semantics as ``cpu/dropout.py``; numerics as
``activations.py`` explains (no FMA contraction, sums in double).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from .._twins import twin_ops
from ._kernels import _ew, _mul, _out, _read, _sum_prod

__all__ = twin_ops("dropout")


# ----------------------------------------------------------------------------------------
# multiply, threshold, random numbers

_threshold_k = _ew("T thresh", "T d", "d = d > thresh ? (T)1 : (T)0;", "threshold")


def multiply(add_to, dest, src1, src2):
    tail = dest.shape[1:]
    a = _read(src1, dest).reshape((src1.num_samples(),) + tail)
    b = _read(src2, dest).reshape((src2.num_samples(),) + tail)
    if dest.num_samples() == 1 and max(src1.num_samples(), src2.num_samples()) != 1:
        # products summed over the samples (a num_samples of 1 broadcasts over the other)
        prod = _sum_prod(a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1), axis=0)
        o = _out(dest, add_to).reshape(-1)
        if add_to:
            o += prod
        else:
            o[...] = prod
        return
    _mul(add_to, a, b, _out(dest, add_to))


def threshold(data, thresh):
    d = data.device()
    _threshold_k(d.dtype.type(thresh), d)


def rand_generator(seed):
    """CuPy's default Generator (XORWOW bit generator) seeded with ``seed``. Its streams
    differ from the CPU twin's numpy PCG64 for the same seed, as dlib's cuRAND streams
    differ from its CPU ones: code must not rely on specific values."""
    return cp.random.default_rng(seed)


def rand_fill_uniform(gen, data):
    a = data.device_write_only()
    # Generator.random gives [0, 1); 1 - u gives dlib's documented (0, 1]
    a[...] = 1 - gen.random(a.shape, dtype=np.float64)


def rand_fill_gaussian(gen, data, mean, stddev):
    a = data.device_write_only()
    a[...] = gen.standard_normal(a.shape, dtype=np.float64) * stddev + mean
