"""CPU twin of ``dnnpy/tensor_tools/merge.py`` (numpy, vectorised). The dispatchers have
checked the shapes. Arithmetic stays in the tensors' dtype (float32, or float64 in
test_layer's float64 mode)."""

import numpy as np
from .._twins import twin_ops

__all__ = twin_ops("merge")


def _overlap(*shapes):
    """The leading region common to all shapes, as a tuple of slices."""
    return tuple(slice(0, min(dims)) for dims in zip(*shapes))


def multiply_zero_padded(add_to, dest, src1, src2):
    a, b = src1.host_read(), src2.host_read()
    region = _overlap(dest.shape, src1.shape, src2.shape)
    prod = a[region] * b[region]  # computed before dest is written: dest may alias a source
    if add_to:
        dest.host()[region] += prod
        return
    out = dest.host_write_only()
    out[...] = 0
    out[region] = prod


def scale_channels(add_to, dest, src, scales):
    prod = src.host_read() * scales.host_read()  # (n,k,1,1) broadcasts over (nr, nc)
    if add_to:
        dest.host()[...] += prod
    else:
        dest.host_write_only()[...] = prod


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


# ----------------------------------------------------------------------------------------
# adaptive computation time: positions are (n, s) rows of a (N, C, S, D) input

def _positions(t, batch_size, seq_len):
    """A per-position state tensor as an (N, S) array view."""
    return t.host().reshape(batch_size, seq_len)


def compute_act_halt_probabilities(halt_probs, logits, input_data, halt_params, batch_size, seq_len,
                                   feature_dim):
    x = input_data.host_read()                            # (N, C, S, D)
    k = input_data.k()
    p = halt_params.host_read().reshape(-1)
    w = p[:feature_dim].reshape(k, feature_dim // k)      # W[c*d_model + d]
    z = np.einsum("ncsd,cd->ns", x, w) + p[feature_dim]
    logits.host_write_only().reshape(batch_size, seq_len)[...] = z
    one = z.dtype.type(1)
    halt_probs.host_write_only().reshape(batch_size, seq_len)[...] = one / (one + np.exp(-z))


def update_act_state(output, input_data, halt_probs, cumulative_halting, remainders, n_steps,
                     effective_weights, batch_size, seq_len, d_model, num_channels, halt_threshold,
                     current_step):
    cum = _positions(cumulative_halting, batch_size, seq_len)
    rem = _positions(remainders, batch_size, seq_len)
    steps = _positions(n_steps, batch_size, seq_len)
    eff = _positions(effective_weights, batch_size, seq_len)
    p = halt_probs.host_read().reshape(batch_size, seq_len)
    thr = cum.dtype.type(halt_threshold)
    active = cum < thr
    e = np.where(active, np.minimum(p * rem, thr - cum), 0).astype(cum.dtype)
    cum[active] += e[active]
    rem[active] -= e[active]
    steps[active] = current_step + 1
    eff[active] += e[active]
    x = input_data.host_read()
    # halted rows are skipped (not multiplied by 0: an inf input must not turn into NaN)
    output.host()[...] += np.where(active[:, None, :, None], e[:, None, :, None] * x, 0)


def finalize_act_output(output, input_data, remainders, effective_weights, batch_size, seq_len, d_model,
                        num_channels):
    rem = remainders.host_read().reshape(batch_size, seq_len)
    eff = _positions(effective_weights, batch_size, seq_len)
    live = rem > rem.dtype.type(1e-6)
    eff[live] += rem[live]
    x = input_data.host_read()
    output.host()[...] += np.where(live[:, None, :, None], rem[:, None, :, None] * x, 0)


def apply_act_depth_scaling(gradients, n_steps, batch_size, seq_len, d_model, num_channels, max_steps,
                            scale_factor):
    g = gradients.host()
    dt = g.dtype.type
    steps = n_steps.host_read().reshape(batch_size, seq_len)
    scale = dt(1) + dt(scale_factor) * (steps / dt(max_steps))
    g *= scale[:, None, :, None]


def act_data_gradient(grad, gradient_input, effective_weights):
    gi = gradient_input.host_read()
    w = effective_weights.host_read().reshape(gi.shape[0], 1, gi.shape[2], 1)
    grad.host()[...] += w * gi
