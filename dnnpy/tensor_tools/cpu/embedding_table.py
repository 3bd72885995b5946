"""CPU twin of ``dnnpy/tensor_tools/embedding_table.py`` (numpy, vectorised). The dispatchers
have checked the shapes. Arithmetic stays in the tensors' dtype."""

import numpy as np

from .._twins import twin_ops

__all__ = twin_ops("embedding_table")


def _tokens(prev, num_embeddings):
    """(n, k, nr) integer tokens from column 0 of prev, and the in-range mask. dlib casts the
    float to unsigned long: truncation toward zero, so (-1, 1) gives token 0; negative
    tokens, NaN and tokens >= num_embeddings are out of range."""
    col = prev.host_read()[..., 0]
    t = np.trunc(col)
    valid = (t >= 0) & (t < num_embeddings)  # NaN compares False
    idx = np.where(valid, t, 0).astype(np.int64)
    return idx, valid


def embeddings(dest, src, embs):
    table = embs.host_read().reshape(embs.num_samples(), embs.k())
    idx, valid = _tokens(src, embs.num_samples())
    rows = table[idx]                       # (n, k, nr, embedding_dim)
    rows[~valid] = 0
    dest.host_write_only()[...] = rows


def calc_token_freqs(freqs, prev):
    idx, valid = _tokens(prev, freqs.num_samples())
    counts = np.bincount(idx[valid].ravel(), minlength=freqs.num_samples())
    f = freqs.host_write_only()
    f.reshape(-1)[...] = counts.astype(f.dtype)


def embeddings_gradient(prev, gradient_input, grads, freqs, learning_rate, scale):
    table = grads.host().reshape(grads.num_samples(), grads.k())
    idx, valid = _tokens(prev, grads.num_samples())
    f = freqs.host_read().reshape(-1)
    tokens = idx[valid]                                   # one per in-range (n, k, r)
    g = gradient_input.host_read()[valid]                 # (m, embedding_dim)
    dt = table.dtype
    freq_scale = np.ones(tokens.shape, dt)
    if scale:
        ft = f[tokens]
        nz = ft != 0
        # dlib: min(0.15, max(1/f, 1)), which is 0.15 whenever it applies
        freq_scale[nz] = np.minimum(dt.type(0.15), np.maximum(1 / ft[nz], dt.type(1)))
    step = g * (dt.type(learning_rate) * freq_scale)[:, None]
    np.subtract.at(table, tokens, step)                   # repeated tokens accumulate
