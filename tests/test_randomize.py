"""dnnpy.randomize_samples: dlib's in-place shuffle of parallel sequences."""

import numpy as np
import pytest

import dnnpy
from dnnpy import randomize_samples


def test_pairs_stay_together_for_lists_and_arrays():
    x = [np.full((2, 2), i, np.float32) for i in range(50)]
    y = np.arange(50)
    aux = [f"s{i}" for i in range(50)]
    ids = [id(v) for v in x]
    assert randomize_samples(x, y, aux) is None
    assert sorted(y.tolist()) == list(range(50)) and y.tolist() != list(range(50))
    for xi, yi, ai in zip(x, y, aux):
        assert xi[0, 0] == yi and ai == f"s{yi}"
    assert sorted(ids) == sorted(id(v) for v in x)        # the same objects, moved
    big = np.arange(50 * 3).reshape(50, 3)
    labels = list(range(50))
    randomize_samples(big, labels)                        # arrays along the first axis
    assert [row[0] // 3 for row in big] == labels


def test_default_is_dlibs_fixed_seed_and_a_generator_varies():
    a, b = list(range(20)), list(range(20))
    randomize_samples(a)
    randomize_samples(b)
    assert a == b                                         # dlib: each call does the same thing
    c = list(range(20))
    randomize_samples(c, rng=7)
    assert c != a and sorted(c) == list(range(20))
    rng = np.random.default_rng(0)
    d, e = list(range(20)), list(range(20))
    randomize_samples(d, rng=rng)
    randomize_samples(e, rng=rng)
    assert d != e


def test_bad_arguments_change_nothing():
    x, y = list(range(5)), list(range(4))
    with pytest.raises(ValueError, match=r"one length .* \[5, 4\]"):
        randomize_samples(x, y)
    assert x == list(range(5)) and y == list(range(4))
    with pytest.raises(TypeError, match="tuple"):
        randomize_samples(list(range(3)), (0, 1, 2))
    ro = np.arange(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        randomize_samples([0, 1, 2], ro)
    with pytest.raises(TypeError, match="rng"):
        randomize_samples([0, 1], rng=1.5)


def test_exported():
    assert dnnpy.randomize_samples is randomize_samples
    from dnnpy.data import randomize_samples as r
    assert r is randomize_samples
