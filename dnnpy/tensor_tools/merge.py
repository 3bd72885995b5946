"""Ops of the merge / transformer / ACT layers: zero-padded products, channel scaling,
embedding lookup and its in-place update, and adaptive computation time (dlib's names and
argument order, destination first). The zero-padded 3-argument ``add`` and the PLANE_WISE
``gemm`` live with the core ops in ``tensor_tools/__init__.py``.
"""

from __future__ import annotations

from .backend import _backend, _check_tensors, _same_dims

try:  # dlib's operation_mode, defined with the softmax ops
    from .activations import CHANNEL_WISE, PLANE_WISE
except ImportError:  # pragma: no cover - until activations.py defines them
    CHANNEL_WISE, PLANE_WISE = 0, 1

__all__ = [
    "multiply_zero_padded", "scale_channels", "embeddings", "embeddings_gradient",
    "calc_token_freqs", "compute_act_halt_probabilities", "update_act_state",
    "finalize_act_output", "apply_act_depth_scaling", "act_data_gradient",
]


def multiply_zero_padded(add_to, dest, src1, src2):
    """``dest = src1 * src2`` (``+=`` if add_to), pointwise in 4-D; any dimensions: an
    element missing from src1 or src2 counts as 0 (so dest is 0 outside their overlap).

    Requires: nothing about the shapes. Ensures: every element of dest is written (assigned,
    or added to when ``add_to``).
    """
    _check_tensors("multiply_zero_padded", dest=dest, src1=src1, src2=src2)
    _backend().multiply_zero_padded(bool(add_to), dest, src1, src2)


def scale_channels(add_to, dest, src, scales):
    """``dest(n,k,r,c) = src(n,k,r,c) * scales(n,k)`` (``+=`` if add_to).

    Requires: dest and src have the same dimensions; scales is ``(src.num_samples(),
    src.k(), 1, 1)``.
    """
    _same_dims("scale_channels", dest=dest, src=src)
    _check_tensors("scale_channels", scales=scales)
    if scales.shape != (src.num_samples(), src.k(), 1, 1):
        raise ValueError(f"scale_channels: scales{scales.shape} must be "
                         f"({src.num_samples()}, {src.k()}, 1, 1) for src{src.shape}")
    _backend().scale_channels(bool(add_to), dest, src, scales)


def embeddings(dest, src, embs):
    """Embedding lookup: ``dest(n,k,r,:) = embs[token]`` with ``token = src(n,k,r,0)``
    truncated toward zero; a token outside ``[0, embs.num_samples())`` (or NaN) gives a row
    of zeros.

    Requires: ``src.nr() > 0``; embs is ``(num_embeddings, embedding_dim, 1, 1)``; dest is
    ``(src.num_samples(), src.k(), src.nr(), embedding_dim)``. Ensures: dest is assigned.
    """
    _check_tensors("embeddings", dest=dest, src=src, embs=embs)
    if src.nr() <= 0 or embs.num_samples() <= 0 or embs.k() <= 0 or embs.nr() != 1 or embs.nc() != 1:
        raise ValueError(f"embeddings: src{src.shape} must have nr > 0 and embs{embs.shape} must be "
                         "(num_embeddings > 0, embedding_dim > 0, 1, 1)")
    want = (src.num_samples(), src.k(), src.nr(), embs.k())
    if dest.shape != want:
        raise ValueError(f"embeddings: dest{dest.shape} must be {want} for src{src.shape}, embs{embs.shape}")
    _backend().embeddings(dest, src, embs)


def calc_token_freqs(freqs, prev):
    """``freqs[t] = number of (n,k,r) with token prev(n,k,r,0) == t`` for every in-range
    token (dlib's ``embeddings_::calc_token_freqs``).

    Requires: freqs is ``(num_embeddings, 1, 1, 1)``. Ensures: freqs is assigned.
    """
    _check_tensors("calc_token_freqs", freqs=freqs, prev=prev)
    if freqs.k() != 1 or freqs.nr() != 1 or freqs.nc() != 1 or freqs.num_samples() == 0:
        raise ValueError(f"calc_token_freqs: freqs{freqs.shape} must be (num_embeddings, 1, 1, 1)")
    _backend().calc_token_freqs(freqs, prev)


def embeddings_gradient(prev, gradient_input, grads, freqs, learning_rate, scale):
    """Update the embedding table in place (it is not a solver parameter): for every
    (n,k,r) whose token ``t = prev(n,k,r,0)`` is in range,
    ``grads[t,:] -= gradient_input(n,k,r,:) * learning_rate * freq_scale`` where
    ``freq_scale = min(0.15, max(1/freqs[t], 1))`` if ``scale`` and ``freqs[t] != 0``, else 1
    (dlib's formula: it is 0.15 whenever it applies).

    Requires: gradient_input is ``(prev.num_samples(), prev.k(), prev.nr(), grads.k())``;
    grads is ``(num_embeddings, embedding_dim, 1, 1)``; freqs has num_embeddings values.
    """
    _check_tensors("embeddings_gradient", prev=prev, gradient_input=gradient_input, grads=grads, freqs=freqs)
    gi = gradient_input
    if (prev.nr() <= 0 or gi.shape[:3] != prev.shape[:3] or gi.nc() != grads.k()
            or grads.num_samples() <= 0 or grads.k() <= 0 or grads.nr() != 1 or grads.nc() != 1):
        raise ValueError(f"embeddings_gradient: gradient_input{gi.shape} must be (prev.num_samples, "
                         f"prev.k, prev.nr, grads.k) for prev{prev.shape} and grads{grads.shape} "
                         "(num_embeddings, embedding_dim, 1, 1)")
    if freqs.size() != grads.num_samples():
        raise ValueError(f"embeddings_gradient: freqs{freqs.shape} must hold one count per embedding "
                         f"({grads.num_samples()})")
    _backend().embeddings_gradient(prev, gi, grads, freqs, float(learning_rate), bool(scale))


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
