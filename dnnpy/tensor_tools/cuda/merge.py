"""CUDA twin of ``cpu/merge.py``: zero-padded products, channel scaling, embeddings and the
adaptive-computation-time ops (CuPy kernels, the tensors' dtype, no FMA contraction; see
``activations.py``). The dispatchers have checked the shapes.

Tokens, as the CPU twin: column 0 of ``prev`` truncated toward zero; a token outside
``[0, num_embeddings)`` or NaN is out of range. The embedding update and the token counts
use atomics: repeated tokens accumulate in an unspecified order, so the float update agrees
with the CPU's sequential one to rounding (the counts are exact).
"""

import cupy as cp

from .activations import _ew, _mul, _out, _read
from .._twins import twin_ops

__all__ = twin_ops("merge")


def _overlap(*shapes):
    """The leading region common to all shapes, as a tuple of slices."""
    return tuple(slice(0, min(dims)) for dims in zip(*shapes))


def multiply_zero_padded(add_to, dest, src1, src2):
    a, b = src1.device_read(), src2.device_read()
    region = _overlap(dest.shape, src1.shape, src2.shape)
    prod = a[region] * b[region]  # a new array, queued before any write: dest may alias a source
    if add_to:
        dest.device()[region] += prod
        return
    out = dest.device_write_only()
    out.fill(0)
    out[region] = prod


def scale_channels(add_to, dest, src, scales):
    x = _read(src, dest)
    s = _read(scales, dest)                      # (n, k, 1, 1) broadcasts over (nr, nc)
    _mul(add_to, x, s, _out(dest, add_to))


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


# ----------------------------------------------------------------------------------------
# adaptive computation time: positions are (n, s) rows of a (N, C, S, D) input

_halt_probs = _ew("T z, T b", "T logit, T prob",
                  "logit = z + b; prob = (T)1 / ((T)1 + exp(-logit));", "act_halt_probs")
_halt_logits = cp.ReductionKernel(
    "T x, T w", "T y", "(double)(x * w)", "a + b", "y = (T)a", "0", "dnnpy_act_halt_logits",
    reduce_type="double", options=("--fmad=false",))

# one ACT step per position; e and active feed the output update
_act_step = _ew(
    "T p, T thr, T step1", "T cum, T rem, T steps, T eff, T e, int8 active",
    "active = cum < thr;"
    " if (active) {"
    "   T ee = p * rem; T lim = thr - cum;"
    "   ee = (ee != ee || ee < lim) ? ee : lim;"  # numpy's minimum: NaN propagates
    "   e = ee; cum = cum + ee; rem = rem - ee; steps = step1; eff = eff + ee;"
    " } else { e = (T)0; }",
    "act_step")
_act_finalize = _ew("T rem", "T eff, int8 live",
                    "live = rem > (T)1e-6; if (live) eff = eff + rem;", "act_finalize")
# halted positions are skipped, not multiplied by 0 (an inf input must not become NaN)
_act_accumulate = _ew("T x, T e, int8 active", "T o", "if (active) o = o + e * x;",
                      "act_accumulate")
_act_depth_scale = _ew("T steps, T sf, T max_steps", "T g",
                       "g = g * ((T)1 + sf * (steps / max_steps));", "act_depth_scale")


def _positions(t, batch_size, seq_len):
    """A per-position state tensor as a writable (N, S) device view."""
    return t.device().reshape(batch_size, seq_len)


def compute_act_halt_probabilities(halt_probs, logits, input_data, halt_params, batch_size, seq_len,
                                   feature_dim):
    x = input_data.device_read()                          # (N, C, S, D)
    k = input_data.k()
    p = halt_params.device_read().reshape(-1)
    w = p[:feature_dim].reshape(1, k, 1, feature_dim // k)  # W[c*d_model + d]
    z = _halt_logits(x, w, axis=(1, 3))                   # (N, S)
    _halt_probs(z, p[feature_dim], logits.device_write_only().reshape(batch_size, seq_len),
                halt_probs.device_write_only().reshape(batch_size, seq_len))


def update_act_state(output, input_data, halt_probs, cumulative_halting, remainders, n_steps,
                     effective_weights, batch_size, seq_len, d_model, num_channels, halt_threshold,
                     current_step):
    p = halt_probs.device_read().reshape(batch_size, seq_len)
    dt = p.dtype.type
    e = cp.empty((batch_size, seq_len), dtype=p.dtype)
    active = cp.empty((batch_size, seq_len), dtype=cp.int8)
    _act_step(p, dt(halt_threshold), dt(current_step + 1),
              _positions(cumulative_halting, batch_size, seq_len),
              _positions(remainders, batch_size, seq_len),
              _positions(n_steps, batch_size, seq_len),
              _positions(effective_weights, batch_size, seq_len), e, active)
    shape = (batch_size, 1, seq_len, 1)
    x = _read(input_data, output)
    _act_accumulate(x, e.reshape(shape), active.reshape(shape), output.device())


def finalize_act_output(output, input_data, remainders, effective_weights, batch_size, seq_len, d_model,
                        num_channels):
    rem = remainders.device_read().reshape(batch_size, seq_len)
    live = cp.empty((batch_size, seq_len), dtype=cp.int8)
    _act_finalize(rem, _positions(effective_weights, batch_size, seq_len), live)
    shape = (batch_size, 1, seq_len, 1)
    x = _read(input_data, output)
    _act_accumulate(x, rem.reshape(shape), live.reshape(shape), output.device())


def apply_act_depth_scaling(gradients, n_steps, batch_size, seq_len, d_model, num_channels, max_steps,
                            scale_factor):
    steps = _read(n_steps, gradients).reshape(batch_size, 1, seq_len, 1)
    g = gradients.device()
    dt = g.dtype.type
    _act_depth_scale(steps, dt(scale_factor), dt(max_steps), g)


def act_data_gradient(grad, gradient_input, effective_weights):
    gi = _read(gradient_input, grad)
    w = _read(effective_weights, grad).reshape(gi.shape[0], 1, gi.shape[2], 1)
    _mul(True, w, gi, grad.device())
