"""Tensors: shapes, views, aliasing, read-only reads."""

import numpy as np
import pytest

from dnnpy import alias_tensor, resizable_tensor
from dnnpy.tensor import default_dtype


def test_shape_and_access(rng):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    t = resizable_tensor(a)
    assert (t.num_samples(), t.k(), t.nr(), t.nc(), t.size()) == (2, 3, 4, 5, 120)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert resizable_tensor(np.ones((3, 4))).shape == (3, 4, 1, 1)
    assert resizable_tensor(2, 3).shape == (2, 3, 1, 1)
    assert resizable_tensor().size() == 0


def test_host_read_is_read_only_and_host_is_writable():
    t = resizable_tensor(1, 2, 2, 2)
    with pytest.raises(ValueError):
        t.host_read()[0, 0, 0, 0] = 1
    t.host()[0, 0, 0, 0] = 5
    t[0, 1] = 7
    assert t[0, 0, 0, 0] == 5 and np.all(t[0, 1] == 7)


def test_set_size_copy_size_and_assign():
    t = resizable_tensor(4, 4)
    t.set_size(2, 3, 1, 1)
    assert t.shape == (2, 3, 1, 1)
    u = resizable_tensor()
    u.copy_size(t)
    assert u.shape == t.shape
    u.assign(np.arange(6).reshape(2, 3, 1, 1))
    assert u.host_read().dtype == np.float32 and u[1, 2, 0, 0] == 5
    with pytest.raises(ValueError, match=r"\(4,\).*\(2, 3, 1, 1\)"):
        u.assign(np.zeros(4))
    u.fill(2)
    assert np.all(np.asarray(u) == 2)


def test_alias_views_share_memory():
    params = resizable_tensor(np.arange(10, dtype=np.float32))
    filters = alias_tensor(2, 2, 2)(params, 0)
    bias = alias_tensor(1, 2)(params, 8)
    assert filters.shape == (2, 2, 2, 1) and bias.shape == (1, 2, 1, 1)
    bias.fill(-1)
    np.testing.assert_array_equal(np.asarray(params).ravel()[8:], [-1, -1])
    inner = alias_tensor(1, 2)(alias_tensor(4)(params, 4), 1)  # offsets compose
    np.testing.assert_array_equal(np.asarray(inner).ravel(), [5, 6])
    with pytest.raises(ValueError, match="exceeds"):
        alias_tensor(3)(params, 8)


def test_default_dtype_context():
    with default_dtype(np.float64):
        t = resizable_tensor(2, 2)
        assert t.host_read().dtype == np.float64
    t.set_size(2, 2)  # reallocated as float32 outside the block
    assert t.host_read().dtype == np.float32
