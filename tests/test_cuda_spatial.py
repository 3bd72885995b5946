"""CUDA twin of the rearranging spatial ops (``tensor_tools/cuda/spatial.py``) against the CPU
twin: reorg, reorg_gradient, copy_tensor (both overloads), transpose.

These ops only move numbers (and add once per element with ``add_to``), so the GPU result
must EQUAL the CPU one bit for bit, in float32 and float64. Assign mode starts from a
destination full of NaN and inf: an op that reads what it should overwrite fails. Sources
and destinations include alias views at an offset into a larger storage, so the window
arithmetic of the device mirror is exercised too.

GPU tests carry ``@pytest.mark.cuda`` and skip without a usable CUDA backend; the twins'
signatures are compared in test_twins.py.
"""


import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
ADD_TO = pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])


cuda_test = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)


# ----------------------------------------------------------------------------------------
# helpers

class _Maker:
    """Builds the same tensors (same values, same alias layout) afresh for each backend."""

    def __init__(self, dtype, seed):
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.arrays = []

    def data(self, shape):
        a = self.rng.standard_normal(shape)
        self.arrays.append(("plain", a, None))
        return len(self.arrays) - 1

    def poisoned(self, shape):
        """A destination for assign mode: NaN and inf everywhere."""
        a = np.where(self.rng.random(shape) < 0.5, np.nan, np.inf)
        self.arrays.append(("plain", a, None))
        return len(self.arrays) - 1

    def aliased(self, shape, fill):
        """A view at an offset into a larger storage (the rest of which holds -7); the view
        holds random numbers, or ``fill`` when given."""
        offset = int(self.rng.integers(1, 7))
        a = self.rng.standard_normal(shape) if fill is None else np.full(shape, fill)
        self.arrays.append(("alias", a, offset))
        return len(self.arrays) - 1

    def build(self):
        out = []
        with default_dtype(self.dtype):
            for kind, a, offset in self.arrays:
                if kind == "plain":
                    out.append(resizable_tensor(a))
                    continue
                base = resizable_tensor(offset + a.size + 5)
                base.host_write_only()[...] = -7.0
                view = alias_tensor(*a.shape)(base, offset)
                view.assign(a)
                out.append(view)
        return out


def _on_gpu_last(t):
    """The op ran on the GPU: the device copy is current and the host copy stale."""
    return t.is_device_current() and not t.is_host_current()


def _check_both(maker, call, dest_index):
    """Run ``call(tensors)`` on the CPU and on the GPU from identical tensors; the
    destination (and, for alias views, the whole storage around it) must be equal."""
    cpu = maker.build()
    with dnnpy.force_cpu():
        call(cpu)
    gpu = maker.build()
    call(gpu)
    assert _on_gpu_last(gpu[dest_index]), "the op did not run on the CUDA twin"
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(c))
        # the storage outside an alias window must be untouched, too (host_read syncs it)
        g.host_read()
        np.testing.assert_array_equal(g.storage_host_read(), c.storage_host_read())


# ----------------------------------------------------------------------------------------
# reorg / reorg_gradient

@cuda_test
@DTYPES
@ADD_TO
@pytest.mark.parametrize("seed", range(6))
def test_reorg(seed, add_to, dtype):
    m = _Maker(dtype, seed)
    rs, cs = int(m.rng.integers(1, 4)), int(m.rng.integers(1, 4))
    n, k, ho, wo = (int(v) for v in m.rng.integers(1, 5, 4))
    src_shape, dest_shape = (n, k, ho * rs, wo * cs), (n, k * rs * cs, ho, wo)
    src = m.aliased(src_shape, None) if seed % 2 else m.data(src_shape)
    dest = (m.data if add_to else m.poisoned)(dest_shape) if seed % 3 else \
        m.aliased(dest_shape, None if add_to else np.nan)
    _check_both(m, lambda t: tt.reorg(add_to, t[dest], rs, cs, t[src]), dest)


@cuda_test
@DTYPES
@ADD_TO
@pytest.mark.parametrize("seed", range(6))
def test_reorg_gradient(seed, add_to, dtype):
    m = _Maker(dtype, 100 + seed)
    rs, cs = int(m.rng.integers(1, 4)), int(m.rng.integers(1, 4))
    n, k, ho, wo = (int(v) for v in m.rng.integers(1, 5, 4))
    gi_shape, grad_shape = (n, k * rs * cs, ho, wo), (n, k, ho * rs, wo * cs)
    gi = m.aliased(gi_shape, None) if seed % 2 else m.data(gi_shape)
    grad = (m.data if add_to else m.poisoned)(grad_shape) if seed % 3 else \
        m.aliased(grad_shape, None if add_to else np.inf)
    _check_both(m, lambda t: tt.reorg_gradient(add_to, t[grad], rs, cs, t[gi]), grad)


@cuda_test
@DTYPES
def test_reorg_then_gradient_is_identity(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 4))
    with default_dtype(dtype):
        src, mid, back = resizable_tensor(x), resizable_tensor(2, 3 * 6, 2, 2), resizable_tensor(*x.shape)
    tt.reorg(False, mid, 3, 2, src)
    tt.reorg_gradient(False, back, 3, 2, mid)
    assert _on_gpu_last(back)
    np.testing.assert_array_equal(np.asarray(back), x.astype(dtype))


# ----------------------------------------------------------------------------------------
# copy_tensor

@cuda_test
@DTYPES
@ADD_TO
@pytest.mark.parametrize("seed", range(8))
def test_copy_tensor_block(seed, add_to, dtype):
    m = _Maker(dtype, 200 + seed)
    n = int(m.rng.integers(1, 4))
    k, nr, nc = (int(v) for v in m.rng.integers(1, 4, 3))
    src_shape = (n, k + int(m.rng.integers(0, 3)), nr + int(m.rng.integers(0, 3)), nc + int(m.rng.integers(0, 3)))
    dest_shape = (n, k + int(m.rng.integers(0, 3)), nr + int(m.rng.integers(0, 3)), nc + int(m.rng.integers(0, 3)))
    so = [int(m.rng.integers(0, s - b + 1)) for s, b in zip(src_shape[1:], (k, nr, nc))]
    do = [int(m.rng.integers(0, d - b + 1)) for d, b in zip(dest_shape[1:], (k, nr, nc))]
    src = m.aliased(src_shape, None) if seed % 2 else m.data(src_shape)
    # assign mode: the block is overwritten, the rest of dest (NaN/inf here) stays as it was
    dest = (m.data if add_to else m.poisoned)(dest_shape) if seed % 3 else \
        m.aliased(dest_shape, None if add_to else np.nan)
    _check_both(m, lambda t: tt.copy_tensor(add_to, t[dest], do[0], do[1], do[2], t[src], so[0], so[1],
                                            so[2], k, nr, nc), dest)


@cuda_test
@DTYPES
@ADD_TO
@pytest.mark.parametrize("seed", range(4))
def test_copy_tensor_channels(seed, add_to, dtype):
    m = _Maker(dtype, 300 + seed)
    n, nr, nc = (int(v) for v in m.rng.integers(1, 5, 3))
    count = int(m.rng.integers(1, 4))
    sk_total, dk_total = count + int(m.rng.integers(0, 3)), count + int(m.rng.integers(0, 3))
    sk, dk = int(m.rng.integers(0, sk_total - count + 1)), int(m.rng.integers(0, dk_total - count + 1))
    src = m.data((n, sk_total, nr, nc))
    dest = (m.data if add_to else m.poisoned)((n, dk_total, nr, nc)) if seed % 2 else \
        m.aliased((n, dk_total, nr, nc), None)
    _check_both(m, lambda t: tt.copy_tensor(add_to, t[dest], dk, t[src], sk, count), dest)


# ----------------------------------------------------------------------------------------
# transpose

@cuda_test
@DTYPES
@ADD_TO
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 4, 5), (3, 2, 1, 7), (2, 2, 33, 17), (1, 4, 64, 3)])
def test_transpose(shape, add_to, dtype):
    m = _Maker(dtype, sum(shape))
    n, k, nr, nc = shape
    src = m.aliased(shape, None) if nr % 2 else m.data(shape)
    dest_shape = (n, k, nc, nr)
    dest = (m.data if add_to else m.poisoned)(dest_shape) if nc % 2 else \
        m.aliased(dest_shape, None if add_to else np.inf)
    _check_both(m, lambda t: tt.transpose(add_to, t[dest], t[src]), dest)


@cuda_test
@DTYPES
def test_assign_overwrites_poison(dtype):
    """Assign mode must not read the destination: NaN/inf in it never reach the result."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 4, 6))
    with default_dtype(dtype):
        src = resizable_tensor(x)
        dests = {"reorg": resizable_tensor(2, 12, 2, 3), "transpose": resizable_tensor(2, 3, 6, 4),
                 "copy_tensor": resizable_tensor(2, 3, 4, 6)}
        back = resizable_tensor(2, 3, 4, 6)
    for t in list(dests.values()) + [back]:
        t.fill(np.nan)
    tt.reorg(False, dests["reorg"], 2, 2, src)
    tt.transpose(False, dests["transpose"], src)
    tt.copy_tensor(False, dests["copy_tensor"], 0, src, 0, 3)
    tt.reorg_gradient(False, back, 2, 2, dests["reorg"])
    for name, t in list(dests.items()) + [("reorg_gradient", back)]:
        assert _on_gpu_last(t), name
        assert np.all(np.isfinite(np.asarray(t))), name
    np.testing.assert_array_equal(np.asarray(dests["copy_tensor"]), x.astype(dtype))
    np.testing.assert_array_equal(np.asarray(back), x.astype(dtype))


@cuda_test
def test_non_default_stream():
    """The twins run on CuPy's current stream: results read after that stream are right."""
    import cupy

    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 8, 32, 48)).astype(np.float32)
    src, dest = resizable_tensor(x), resizable_tensor(4, 8 * 4, 16, 24)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        src.device_read()
        tt.reorg(False, dest, 2, 2, src)
        got = np.asarray(dest)
    stream.synchronize()
    with dnnpy.force_cpu():
        want = resizable_tensor(4, 32, 16, 24)
        tt.reorg(False, want, 2, 2, resizable_tensor(x))
    np.testing.assert_array_equal(got, np.asarray(want))
