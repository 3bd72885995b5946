"""Dispatchers of ``embeddings_``: the embedding lookup, the token counts and the in-place
update of the table (dlib's names and argument order, destination first).
"""

from __future__ import annotations

from .backend import _backend, _check_tensors

__all__ = ["embeddings", "embeddings_gradient", "calc_token_freqs"]


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
