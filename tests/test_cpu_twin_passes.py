"""CPU twin ops that avoid whole-tensor temporaries give the bits of the plain expressions.
The solvers update in blocks (dnnpy/tensor_tools/cpu/solver.py): over a range that spans
several blocks, starting and ending inside one, with dest aliasing a source, they give the
bits of the whole-range expressions in dlib's order and leave the rest untouched. The affine
transforms write into dest (dnnpy/tensor_tools/cpu/norm.py)."""

import numpy as np
import pytest

from dnnpy.tensor import resizable_tensor
from dnnpy.tensor_tools.cpu import solver


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(solver, "_BLOCK", 64)


def _tensors(rng, n, k, positive=()):
    out = []
    for i in range(k):
        a = rng.standard_normal(n).astype(np.float32)
        out.append(resizable_tensor((np.abs(a) if i in positive else a).reshape(n, 1, 1, 1)))
    return out


def test_sgd_update_in_blocks_equals_the_whole_range_expression(small_blocks):
    rng = np.random.default_rng(0)
    n, begin, end = 1000, 37, 963
    v, p, g = _tensors(rng, n, 3)
    v0, p0, g0 = (t.host().reshape(-1).copy() for t in (v, p, g))
    f = np.float32
    want = v0.copy()
    r = slice(begin, end)
    want[r] = (v0[r] * f(0.9) + p0[r] * f(-5e-6)) + g0[r] * f(-0.01)
    solver.affine_transform_range(begin, end, v, v, p, g, 0.9, -5e-6, -0.01)
    assert np.array_equal(v.host().reshape(-1), want)


def test_adam_update_in_blocks_equals_the_whole_range_expressions(small_blocks):
    rng = np.random.default_rng(1)
    n, begin, end = 1000, 5, 999
    s, m, v, p, g = _tensors(rng, n, 5, positive=(2,))
    s0, m0, v0, p0, g0 = (t.host().reshape(-1).copy() for t in (s, m, v, p, g))
    f = np.float32
    t, lr, wd, b1, b2 = 3.0, 0.01, 5e-4, f(0.9), f(0.999)
    alpha = f(lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t))
    r = slice(begin, end)
    gg = p0[r] * f(wd) + g0[r]
    mm, vv, ss = m0.copy(), v0.copy(), s0.copy()
    mm[r] = m0[r] * b1 + gg * (1 - b1)
    vv[r] = v0[r] * b2 + (gg * (1 - b2)) * gg
    ss[r] = (mm[r] * -alpha) / (np.sqrt(vv[r]) + f(1e-8))
    solver.compute_adam_update(begin, end, s, m, v, t, lr, wd, 0.9, 0.999, p, g)
    for got, want in ((m, mm), (v, vv), (s, ss)):
        assert np.array_equal(got.host().reshape(-1), want)


def test_affine_transform_writes_into_dest_with_the_same_bits():
    """The CPU twin's affine_transform_conv/_tensors write ``A*src + B`` straight into dest:
    the bits of the expression, in place too, and through a temporary when dest overlaps
    src elsewhere."""
    from dnnpy.tensor import alias_tensor
    from dnnpy.tensor_tools.cpu import norm

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    b = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    want = g * x + b
    src, A, B = resizable_tensor(x), resizable_tensor(g), resizable_tensor(b)
    dest = resizable_tensor(2, 3, 4, 5)
    norm.affine_transform_conv(dest, src, A, B)
    assert np.array_equal(dest.host(), want)
    norm.affine_transform_conv(src, src, A, B)                 # in place
    assert np.array_equal(src.host(), want)
    full = resizable_tensor(np.concatenate([x.reshape(-1), np.zeros(3, np.float32)]).reshape(-1, 1, 1, 1))
    view_src = alias_tensor(2, 3, 4, 5)(full, 0)
    view_dest = alias_tensor(2, 3, 4, 5)(full, 3)              # overlaps src, shifted
    norm.affine_transform_tensors(view_dest, view_src, A, B)
    assert np.array_equal(np.asarray(view_dest.host()), want)


def test_affine_transform_into_its_own_shift_or_scale():
    """dest may be B (or A): the expression is formed aside, as dlib's elementwise kernel
    reads every operand before writing."""
    from dnnpy.tensor_tools.cpu import norm

    s = resizable_tensor(np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1, 1))
    a = resizable_tensor(np.full((1, 4, 1, 1), 2, np.float32))
    b = resizable_tensor(np.full((1, 4, 1, 1), 10, np.float32))
    norm.affine_transform_tensors(b, s, a, b)
    assert np.array_equal(b.host().reshape(-1), [12, 14, 16, 18])
    norm.affine_transform_tensors(a, s, a, resizable_tensor(np.zeros((1, 4, 1, 1), np.float32)))
    assert np.array_equal(a.host().reshape(-1), [2, 4, 6, 8])


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 16, 70, 70)])
def test_onednn_affine_transform_has_numpys_bits(shape, monkeypatch):
    """oneDNN's per-channel affine (a product with a sum post-op, one pass) gives the bits
    of numpy's ``A*src + B``, into dest and in place."""
    from dnnpy.tensor_tools.cpu import onednn
    from dnnpy.tensor_tools.cpu.onednn import binary

    if not onednn.active():
        pytest.skip("oneDNN is not in use here")
    monkeypatch.setattr(binary, "MIN_ELEMENTS", 1)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    g, b = (rng.standard_normal((1, shape[1], 1, 1)).astype(np.float32) for _ in range(2))
    want = g * x + b
    src, A, B, dest = resizable_tensor(x), resizable_tensor(g), resizable_tensor(b), resizable_tensor(*shape)
    assert onednn.affine_transform_conv(dest, src, A, B)
    assert np.array_equal(dest.host(), want)
    assert onednn.affine_transform_conv(src, src, A, B)
    assert np.array_equal(src.host(), want)
    assert not onednn.affine_transform_conv(B, src, A, B)      # dest is B: numpy's temporary
