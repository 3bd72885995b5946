"""CUDA twin of ``cpu/embedding_table.py``: the embedding lookup, token counts and table update
(CuPy kernels, the tensors' dtype, no FMA contraction; see ``activations.py``). The
dispatchers have checked the shapes.

Tokens, as the CPU twin: column 0 of ``prev`` truncated toward zero; a token outside
``[0, num_embeddings)`` or NaN is out of range. The embedding update and the token counts
use atomics: repeated tokens accumulate in an unspecified order, so the float update agrees
with the CPU's sequential one to rounding (the counts are exact).
"""

import cupy as cp

from .._twins import twin_ops
from ._kernels import _ew

__all__ = twin_ops("embedding_table")


# ----------------------------------------------------------------------------------------
# embeddings. Raw arrays are flat: row r of prev (one (n, k, r)) starts at r*prev_nc.

_TOKEN = ("T t = trunc(prev[row * prev_nc]);"
          " bool valid = t >= (T)0 && t < (T)num;")   # NaN compares false

_embeddings_k = _ew(
    "raw T prev, raw T table, int64 prev_nc, int64 dim, int64 num", "T y",
    "long long row = i / dim; long long d = i - row * dim;"
    + _TOKEN +
    " y = valid ? table[(long long)t * dim + d] : (T)0;",
    "embeddings")

_count_tokens = _ew(
    "raw T prev, int64 prev_nc, int64 num", "raw uint64 counts",
    "long long row = i;"
    + _TOKEN +
    " if (valid) atomicAdd(&counts[(long long)t], 1ULL);",
    "count_tokens")

# dlib's frequency scale: min(0.15, max(1/f, 1)) when scaling and f != 0, else 1
_embeddings_update = _ew(
    "T g, raw T prev, raw T freqs, int64 prev_nc, int64 dim, int64 num, T lr, int32 scale",
    "raw T table",
    "long long row = i / dim; long long d = i - row * dim;"
    + _TOKEN +
    " if (valid) {"
    "   long long tok = (long long)t;"
    "   T fs = (T)1;"
    "   if (scale) {"
    "     T f = freqs[tok];"
    "     if (f != (T)0) { T r = (T)1 / f; T mx = r > (T)1 ? r : (T)1;"
    "                      fs = mx > (T)0.15 ? (T)0.15 : mx; }"
    "   }"
    "   atomicAdd(&table[tok * dim + d], -(g * (lr * fs)));"
    " }",
    "embeddings_update")


def embeddings(dest, src, embs):
    prev = src.device_read().ravel()
    table = embs.device_read().ravel()
    _embeddings_k(prev, table, src.nc(), embs.k(), embs.num_samples(), dest.device_write_only())


def calc_token_freqs(freqs, prev):
    num = freqs.num_samples()
    counts = cp.zeros(num, dtype=cp.uint64)
    rows = prev.num_samples() * prev.k() * prev.nr()
    if rows:
        _count_tokens(prev.device_read().ravel(), prev.nc(), num, counts, size=rows)
    f = freqs.device_write_only().reshape(-1)
    f[...] = counts.astype(f.dtype)


def embeddings_gradient(prev, gradient_input, grads, freqs, learning_rate, scale):
    g = gradient_input.device_read()
    if g.size == 0:
        return
    p = prev.device_read().ravel()
    f = freqs.device_read().ravel()
    table = grads.device().reshape(-1)
    _embeddings_update(g, p, f, prev.nc(), grads.k(), grads.num_samples(),
                       g.dtype.type(learning_rate), cp.int32(bool(scale)), table)
