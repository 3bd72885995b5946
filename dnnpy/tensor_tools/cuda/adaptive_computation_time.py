"""CUDA twin of ``cpu/adaptive_computation_time.py`` (CuPy kernels, the tensors' dtype, no FMA
contraction; see ``activations.py``). The dispatchers have checked the shapes.
"""

import cupy as cp

from .._twins import twin_ops
from ._kernels import _ew, _mul, _read

__all__ = twin_ops("adaptive_computation_time")


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
