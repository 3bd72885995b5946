"""Dispatchers of ``adaptive_computation_time_`` (dlib's ACT ops, destination first).
"""

from __future__ import annotations

from .backend import _backend, _check_tensors, _same_dims

__all__ = ["compute_act_halt_probabilities", "update_act_state", "finalize_act_output",
           "apply_act_depth_scaling", "act_data_gradient"]


# ----------------------------------------------------------------------------------------
# adaptive computation time. The input is (batch_size, num_channels, seq_len, d_model); a
# "position" is one (n, s) row, and the per-position state tensors hold batch_size*seq_len
# values in the order n*seq_len + s.

def _check_act_input(op, input_data, batch_size, seq_len, d_model, num_channels):
    want = (batch_size, num_channels, seq_len, d_model)
    if input_data.shape != want:
        raise ValueError(f"{op}: input{input_data.shape} must be (batch_size, num_channels, seq_len, "
                         f"d_model) = {want}")


def _check_positions(op, positions, **named):
    _check_tensors(op, **named)
    for name, t in named.items():
        if t.size() != positions:
            raise ValueError(f"{op}: {name}{t.shape} must hold batch_size*seq_len = {positions} values")


def compute_act_halt_probabilities(halt_probs, logits, input_data, halt_params, batch_size, seq_len,
                                   feature_dim):
    """``logits[n*seq_len+s] = b + sum_{c,d} input(n,c,s,d) * W[c*d_model+d]`` and
    ``halt_probs = sigmoid(logits)``, with ``W = halt_params[:feature_dim]``,
    ``b = halt_params[feature_dim]`` and ``d_model = feature_dim / input.k()``.

    Requires: input is ``(batch_size, k, seq_len, feature_dim/k)``; halt_params holds
    ``feature_dim + 1`` values; halt_probs and logits hold batch_size*seq_len values.
    Ensures: halt_probs and logits are assigned.
    """
    op = "compute_act_halt_probabilities"
    _check_tensors(op, input_data=input_data, halt_params=halt_params)
    k = input_data.k()
    if k == 0 or feature_dim % k != 0:
        raise ValueError(f"{op}: feature_dim={feature_dim} must be a multiple of input.k()={k}")
    _check_act_input(op, input_data, batch_size, seq_len, feature_dim // k, k)
    if halt_params.size() != feature_dim + 1:
        raise ValueError(f"{op}: halt_params{halt_params.shape} must hold feature_dim+1 = {feature_dim + 1} values")
    _check_positions(op, batch_size * seq_len, halt_probs=halt_probs, logits=logits)
    _backend().compute_act_halt_probabilities(halt_probs, logits, input_data, halt_params,
                                              batch_size, seq_len, feature_dim)


def update_act_state(output, input_data, halt_probs, cumulative_halting, remainders, n_steps,
                     effective_weights, batch_size, seq_len, d_model, num_channels, halt_threshold,
                     current_step):
    """One ACT step. For every position with ``cumulative_halting < halt_threshold``:
    ``e = min(p*remainder, halt_threshold - cumulative_halting)``; cumulative_halting += e;
    remainders -= e; n_steps = current_step + 1; effective_weights += e; and
    ``output(n,:,s,:) += e * input(n,:,s,:)``. Halted positions are left unchanged.

    Requires: output and input are ``(batch_size, num_channels, seq_len, d_model)``; the
    state tensors hold batch_size*seq_len values.
    """
    op = "update_act_state"
    _same_dims(op, output=output, input_data=input_data)
    _check_act_input(op, input_data, batch_size, seq_len, d_model, num_channels)
    _check_positions(op, batch_size * seq_len, halt_probs=halt_probs, cumulative_halting=cumulative_halting,
                     remainders=remainders, n_steps=n_steps, effective_weights=effective_weights)
    _backend().update_act_state(output, input_data, halt_probs, cumulative_halting, remainders, n_steps,
                                effective_weights, batch_size, seq_len, d_model, num_channels,
                                float(halt_threshold), int(current_step))


def finalize_act_output(output, input_data, remainders, effective_weights, batch_size, seq_len, d_model,
                        num_channels):
    """Remainder contributions: for every position with ``remainder > 1e-6``,
    ``effective_weights += remainder`` and ``output(n,:,s,:) += remainder * input(n,:,s,:)``.

    Requires: as ``update_act_state``.
    """
    op = "finalize_act_output"
    _same_dims(op, output=output, input_data=input_data)
    _check_act_input(op, input_data, batch_size, seq_len, d_model, num_channels)
    _check_positions(op, batch_size * seq_len, remainders=remainders, effective_weights=effective_weights)
    _backend().finalize_act_output(output, input_data, remainders, effective_weights, batch_size, seq_len,
                                   d_model, num_channels)


def apply_act_depth_scaling(gradients, n_steps, batch_size, seq_len, d_model, num_channels, max_steps,
                            scale_factor):
    """``gradients(n,:,s,:) *= 1 + scale_factor * n_steps[n*seq_len+s] / max_steps``, in place
    (the whole tensor, whatever it held before).

    Requires: gradients is ``(batch_size, num_channels, seq_len, d_model)``; n_steps holds
    batch_size*seq_len values.
    """
    op = "apply_act_depth_scaling"
    _check_tensors(op, gradients=gradients)
    _check_act_input(op, gradients, batch_size, seq_len, d_model, num_channels)
    _check_positions(op, batch_size * seq_len, n_steps=n_steps)
    _backend().apply_act_depth_scaling(gradients, n_steps, batch_size, seq_len, d_model, num_channels,
                                       float(max_steps), float(scale_factor))


def act_data_gradient(grad, gradient_input, effective_weights):
    """ACT's data gradient (a loop inside dlib's ``adaptive_computation_time_::backward``):
    ``grad(n,c,s,d) += effective_weights[n*nr+s] * gradient_input(n,c,s,d)``. Always ADDS.

    Requires: grad and gradient_input have the same dimensions; effective_weights holds
    ``num_samples * nr`` values.
    """
    op = "act_data_gradient"
    _same_dims(op, grad=grad, gradient_input=gradient_input)
    _check_positions(op, grad.num_samples() * grad.nr(), effective_weights=effective_weights)
    _backend().act_data_gradient(grad, gradient_input, effective_weights)
