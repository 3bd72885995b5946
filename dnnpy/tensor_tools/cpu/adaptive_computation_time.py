"""CPU twin of ``dnnpy/tensor_tools/adaptive_computation_time.py`` (numpy, vectorised). The
dispatchers have checked the shapes. Arithmetic stays in the tensors' dtype."""

import numpy as np

from .._twins import twin_ops

__all__ = twin_ops("adaptive_computation_time")


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
