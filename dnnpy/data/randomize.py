"""dlib's ``randomize_samples`` (``dlib/svm/svm.h``): shuffle samples and their labels (and any
other parallel sequence) in place, with one permutation, so pairs stay together.

    randomize_samples(images, labels)             # the same permutation every call (dlib)
    randomize_samples(images, labels, rng=7)      # a seed
    randomize_samples(images, labels, weights, rng=np.random.default_rng())
    randomize_samples(images, labels, rng=dlib_rand())   # dlib's exact order (and stream)

``dnn_trainer.train`` feeds the data in the order given (as dlib does); data sorted by class
trains badly that way, so shuffle it once with this, or pass ``train(..., shuffle=True)`` for a
new order every epoch.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..rand import dlib_rand

__all__ = ["randomize_samples"]


def _dlib_permutation(rnd, n):
    """The order dlib's ``randomize_samples(t, ..., rnd)`` leaves: for k = n-1 down to 1 it
    swaps item ``rnd.get_random_32bit_number() % (k + 1)`` into place k (n - 1 draws)."""
    perm = list(range(n))
    if n > 1:
        picks = (rnd.get_random_32bit_numbers(n - 1).astype(np.int64)
                 % np.arange(n, 1, -1)).tolist()
        for k, idx in zip(range(n - 1, 0, -1), picks):
            perm[idx], perm[k] = perm[k], perm[idx]
    return np.array(perm, dtype=np.intp)


def _permutation(rng, n):
    if isinstance(rng, dlib_rand):
        return _dlib_permutation(rng, n)
    if isinstance(rng, np.random.Generator):
        return rng.permutation(n)
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral) or rng < 0:
        raise TypeError(f"randomize_samples: rng must be an integer seed >= 0, a "
                        f"numpy.random.Generator or a dlib_rand, got {rng!r}")
    return np.random.default_rng(int(rng)).permutation(n)


def _check(i, seq):
    if isinstance(seq, np.ndarray):
        if seq.ndim == 0:
            raise ValueError(f"randomize_samples: argument {i} is a 0-d array, not a sequence "
                             f"of samples")
        if not seq.flags.writeable:
            raise ValueError(f"randomize_samples: argument {i} is a read-only array; it is "
                             f"shuffled in place, so pass a writable copy (np.array(x))")
        return len(seq)
    if isinstance(seq, list):
        return len(seq)
    raise TypeError(f"randomize_samples: argument {i} must be a list or a numpy array (shuffled "
                    f"in place), got {type(seq).__name__}; convert it with list(...)")


def randomize_samples(samples, *parallel, rng=0):
    """Shuffle ``samples`` and every sequence in ``parallel`` (labels, auxiliary data) in
    place with one random permutation: after the call, ``parallel[j][r]`` is still the
    partner of ``samples[r]``. Lists and numpy arrays (shuffled along their first axis) can
    be mixed. Returns None, as ``random.shuffle`` does.

    ``rng``: an integer seed or a ``numpy.random.Generator`` (numpy's permutation), or a
    ``dlib_rand``: then the permutation is dlib's ``randomize_samples(..., rnd)``, exactly,
    and ``rng`` advances by ``len(samples) - 1`` 32-bit draws as dlib's does
    (``rng=dlib_rand()`` is dlib's call without a generator). The default (seed 0) follows
    dlib in spirit: every call without ``rng`` applies the same permutation (numpy's, not
    dlib's); pass a Generator or a dlib_rand to get a different order at each call.

    Raises ``ValueError`` when the lengths differ (naming them), ``TypeError`` for a tuple or
    another type that cannot be shuffled in place, leaving everything unchanged."""
    seqs = (samples, *parallel)
    counts = [_check(i, s) for i, s in enumerate(seqs)]
    if len(set(counts)) > 1:
        raise ValueError(f"randomize_samples: the sequences must have one length (one label per "
                         f"sample), got lengths {counts}")
    perm = _permutation(rng, counts[0])
    for s in seqs:
        if isinstance(s, np.ndarray):
            s[...] = s[perm]          # a gathered copy, written back in place
        else:
            s[:] = [s[i] for i in perm]
