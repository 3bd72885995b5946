"""Procedural identities (dnnpy.data.make_identities)."""

import numpy as np
import pytest

from dnnpy.data import identity_parameters, make_identities


def test_shapes_dtypes_labels_and_determinism():
    a, la = make_identities(3, 4, size=20, seed=5)
    b, lb = make_identities(3, 4, size=20, seed=5)
    c, _ = make_identities(3, 4, size=20, seed=6)
    assert la == lb == [0] * 4 + [1] * 4 + [2] * 4
    assert len(a) == 12 and all(im.shape == (20, 20, 3) and im.dtype == np.uint8 for im in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(np.stack(a), np.stack(c))
    assert len({im.tobytes() for im in a}) == 12          # every image jittered differently
    big, _ = make_identities(1, 1, size=64)
    assert big[0].shape == (64, 64, 3)


def test_identity_parameters_do_not_depend_on_the_count():
    p3, p5 = identity_parameters(3, seed=2), identity_parameters(5, seed=2)
    for k in p3:
        np.testing.assert_array_equal(p3[k], p5[k][:3])


def test_same_identity_is_closer_than_different_ones():
    # the central face region (background and shading excluded roughly) of images of one
    # identity is closer in mean colour than that of different identities, on average
    ims, labels = make_identities(12, 6, size=32, seed=0)
    x = np.stack([im[8:24, 8:24].reshape(-1, 3).mean(0) for im in ims]).astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)                     # lighting-invariant
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    y = np.asarray(labels)
    same = (y[:, None] == y[None]) & ~np.eye(len(y), dtype=bool)
    diff = y[:, None] != y[None]
    assert d[same].mean() < 0.6 * d[diff].mean()


@pytest.mark.parametrize("args, match", [((0, 3), "num_identities"), ((2, 0), "images_per_identity"),
                                         ((2.5, 3), "num_identities"), ((2, 3, 8), "size"),
                                         ((True, 3), "num_identities")])
def test_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        make_identities(*args)
