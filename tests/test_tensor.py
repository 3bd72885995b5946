"""Tensors: shapes, views, aliasing, read-only reads, and the host/device mirror (on a
numpy stand-in for CuPy, so it runs on every CPU machine)."""

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
    view = alias_tensor(2, 3)(u)                 # a view cannot change size
    with pytest.raises(ValueError, match=r"\(4,\).*\(2, 3, 1, 1\)"):
        view.assign(np.zeros(4))
    u.assign(np.zeros(4))                        # a resizable_tensor resizes, as dlib's t = mat(m)
    assert u.shape == (4, 1, 1, 1)
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


# ----------------------------------------------------------------------------------------
# the host/device mirror, on a numpy stand-in for CuPy (tests/fake_cupy.py): what is copied
# when, through the public view methods only

@pytest.fixture
def gpu(monkeypatch):
    import fake_cupy

    return fake_cupy.install(monkeypatch)


def _host(t):
    return np.array(t.host_read())


def test_mirror_copies_a_side_only_when_the_other_was_written(gpu):
    t = resizable_tensor(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(t.device_read().ravel(), np.arange(6))   # host -> device once
    t.device_read()
    t.host_read()                          # reading keeps both sides current: no copy
    assert (gpu.counts["empty"], gpu.counts["set"], gpu.counts["get"]) == (1, 1, 0)
    t.device()[0] = 40                     # a device write makes the host stale
    assert _host(t)[0, 0, 0, 0] == 40      # device -> host, after waiting for the device
    assert (gpu.counts["get"], gpu.counts["synchronize"]) == (1, 1)
    _host(t)
    t.device_read()                        # the read left the device current
    assert (gpu.counts["set"], gpu.counts["get"]) == (1, 1)
    t.host()[0] = 7                        # a host write makes the device stale
    assert float(t.device_read()[0, 0, 0, 0]) == 7
    assert (gpu.counts["set"], gpu.counts["empty"]) == (2, 1)  # the device buffer is reused


def test_device_memory_is_not_the_host_memory(gpu):
    t = resizable_tensor(np.zeros(4, np.float32))
    d = t.device()
    d[...] = 3
    host = t.host_read()                   # the copy, not shared memory, carries the values
    assert not np.shares_memory(np.asarray(d), host)
    np.testing.assert_array_equal(host.ravel(), 3)


def test_write_only_views_skip_the_copy_only_when_they_cover_the_storage(gpu):
    t = resizable_tensor(np.arange(8, dtype=np.float32))
    t.device()[...] = -1                   # device current, host stale
    t.host_write_only()[...] = 5           # covers the storage: nothing to fetch
    assert gpu.counts["get"] == 0
    assert np.all(t.device_read() == 5)    # and the device was marked stale
    gpu.reset_counts()
    t.device_write_only()[...] = 9         # covers the storage: no host -> device copy
    assert gpu.counts["set"] == 0
    np.testing.assert_array_equal(_host(t).ravel(), 9)

    half = alias_tensor(4)(t, 4)
    t.device()[...] = 1                    # device current, host stale
    gpu.reset_counts()
    half.host_write_only()[...] = 2        # a window: the rest must be fetched first
    assert gpu.counts["get"] == 1
    np.testing.assert_array_equal(_host(t).ravel(), [1, 1, 1, 1, 2, 2, 2, 2])
    gpu.reset_counts()
    half.device_write_only()[...] = 3      # a window: the host's other half goes along
    assert gpu.counts["set"] == 1
    np.testing.assert_array_equal(_host(t).ravel(), [1, 1, 1, 1, 3, 3, 3, 3])


def test_alias_windows_see_each_others_writes_across_sides(gpu):
    params = resizable_tensor(np.zeros(10, np.float32))
    filters = alias_tensor(2, 2, 2)(params, 0)
    bias = alias_tensor(1, 2)(params, 8)
    filters.device()[...] = 4              # through the device ...
    bias.host()[...] = -1                  # ... then the host, in another window
    np.testing.assert_array_equal(np.asarray(params.device_read()).ravel(), [4] * 8 + [-1, -1])
    inner = alias_tensor(2)(alias_tensor(4)(params, 6), 1)   # offsets compose: floats 7 and 8
    inner.device()[...] = 8
    np.testing.assert_array_equal(_host(params).ravel(), [4] * 7 + [8, 8, -1])
    assert inner.is_aliased_with(bias) and inner.is_aliased_with(filters)
    assert not alias_tensor(1)(params, 9).is_aliased_with(filters)


def test_resizing_past_the_capacity_starts_a_new_mirror(gpu):
    t = resizable_tensor(np.ones(4, np.float32))
    t.device_read()
    t.set_size(2, 2)                       # fits: same storage, both sides still current
    t.device_read()
    assert (gpu.counts["empty"], gpu.counts["set"]) == (1, 1)
    t.set_size(3, 3)                       # grows: new memory, host side first
    t.host_write_only()[...] = 2
    assert np.all(t.device_read() == 2) and gpu.counts["empty"] == 2


def test_out_of_device_memory_retries_once_then_names_the_bytes(gpu):
    t = resizable_tensor(np.ones(6, np.float32))
    gpu.fail_allocs = 1                    # the retry after freeing the pool succeeds
    assert np.all(t.device_read() == 1) and gpu.counts["free_all_blocks"] == 1
    u = resizable_tensor(np.ones(5, np.float32))
    gpu.fail_allocs = 2
    with pytest.raises(MemoryError, match=r"5 float32 values = 20 bytes"):
        u.device_read()
    assert np.all(u.host_read() == 1)      # the host side is untouched
