"""tensor_tools ops other than convolution: results, ADD vs ASSIGN semantics, and the
errors mismatched tensors get."""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import resizable_tensor


def T(a):
    return resizable_tensor(np.asarray(a, np.float32))


def test_add_broadcasts_and_assigns_over_inf(rng):
    dest = T(np.full((2, 3, 2, 2), np.inf))
    src = rng.standard_normal((1, 3, 1, 1))
    tt.add(0, dest, 2, T(src))  # beta == 0 assigns: the inf never leaks in
    np.testing.assert_allclose(np.asarray(dest), np.broadcast_to(2 * src, (2, 3, 2, 2)), rtol=1e-6)
    d0 = rng.standard_normal((2, 3, 2, 2))
    dest = T(d0)
    tt.add(0.5, dest, 1, T(src))
    np.testing.assert_allclose(np.asarray(dest), 0.5 * d0 + src, rtol=1e-6)
    with pytest.raises(ValueError, match=r"add: src\(2, 2, 1, 1\).*dest\(2, 3, 2, 2\)"):
        tt.add(1, dest, 1, resizable_tensor(2, 2))


def test_affine_transform(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    dest = resizable_tensor(2, 3)
    tt.affine_transform(dest, T(a), 2, 1)
    np.testing.assert_allclose(np.asarray(dest).reshape(2, 3), 2 * a + 1, rtol=1e-6)
    tt.affine_transform(dest, T(a), T(b), 2, -1, 0.5)
    np.testing.assert_allclose(np.asarray(dest).reshape(2, 3), 2 * a - b + 0.5, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="affine_transform"):
        tt.affine_transform(dest, T(a), resizable_tensor(3, 2), 1, 1)
    with pytest.raises(TypeError, match="affine_transform"):
        tt.affine_transform(dest, T(a))


def test_affine_transform_with_tensor_coefficients_names_the_op():
    dest, src = resizable_tensor(2, 3), resizable_tensor(2, 3)
    with pytest.raises(TypeError, match="affine_transform_tensors"):
        tt.affine_transform(dest, src, resizable_tensor(2, 3), resizable_tensor(2, 3))


def test_affine_transform_rect_assigns_only_inside_the_rectangle(rng):
    from dnnpy import rectangle
    n, k, r, c = 3, 2, 2, 2                                  # matrix view: 3 x 8
    a, b, d = (rng.standard_normal((n, k, r, c)) for _ in range(3))
    dest, src1, src2, src3 = T(np.full((n, k, r, c), 5.0)), T(a), T(b), T(d)
    tt.affine_transform(rectangle(2, 1, 6, 2), dest, src1, src2, src3, 2, 3, -1)   # l, t, r, b
    want = np.full((3, 8), 5.0)
    m = lambda x: x.reshape(3, 8)[1:3, 2:7]
    want[1:3, 2:7] = 2 * m(a) + 3 * m(b) - m(d)
    np.testing.assert_allclose(np.asarray(dest).reshape(3, 8), want, rtol=1e-6, atol=1e-6)
    tt.affine_transform(rectangle(), dest, src1, src2, src3, 1, 1, 1)   # empty: nothing
    np.testing.assert_allclose(np.asarray(dest).reshape(3, 8), want, rtol=1e-6, atol=1e-6)
    tt.affine_transform(rectangle(0, 0, 7, 2), src1, src1, src2, src3, 1, 0, 0)   # in place
    np.testing.assert_array_equal(np.asarray(src1), a.astype(np.float32))
    with pytest.raises(ValueError, match=r"rect \[left 0, top 0, right 8, bottom 2\].*3x8"):
        tt.affine_transform(rectangle(0, 0, 8, 2), dest, src1, src2, src3, 1, 1, 1)
    with pytest.raises(ValueError, match=r"src2\(2, 12, 1, 1\).*num_samples of dest\(3, 2, 2, 2\)"):
        tt.affine_transform(rectangle(0, 0, 1, 1), dest, src1, resizable_tensor(2, 12), src3, 1, 1, 1)


@pytest.mark.parametrize("name", ["exp", "log", "log10"])
def test_exp_log_log10_assign_and_work_in_place(name, rng):
    ref = getattr(np, name)
    x = rng.uniform(0.5, 3.0, (2, 3, 4, 1)).astype(np.float32).astype(np.float64)
    dest = T(np.full((6, 4), np.nan))                        # same size, other dimensions
    op = getattr(tt, name)
    op(dest, T(x))
    assert dest.shape == (6, 4, 1, 1)
    # against float64 of the same float32 inputs: float32 exp/log are within 2 ulps (2.4e-7)
    np.testing.assert_allclose(np.asarray(dest).ravel(), ref(x).ravel(), rtol=2.4e-7)
    src = T(x)
    op(src, src)
    np.testing.assert_allclose(np.asarray(src).ravel(), ref(x).ravel(), rtol=2.4e-7)
    with pytest.raises(ValueError, match=rf"{name}: dest\(2, 3, 1, 1\) and src\(2, 3, 4, 1\)"):
        op(resizable_tensor(2, 3), T(x))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm(ta, tb, rng):
    a = rng.standard_normal((4, 3) if not ta else (3, 4))
    b = rng.standard_normal((3, 5) if not tb else (5, 3))
    ref = (a.T if ta else a) @ (b.T if tb else b)
    dest = T(np.full((4, 5), np.inf))
    tt.gemm(0, dest, 2, T(a), ta, T(b), tb)
    np.testing.assert_allclose(np.asarray(dest).reshape(4, 5), 2 * ref, rtol=1e-5, atol=1e-5)
    tt.gemm(1, dest, 1, T(a), ta, T(b), tb)
    np.testing.assert_allclose(np.asarray(dest).reshape(4, 5), 3 * ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="gemm: op"):
        tt.gemm(0, resizable_tensor(4, 4), 1, T(a), ta, T(b), tb)


def test_relu_and_gradient_add_vs_assign(rng):
    x = rng.standard_normal((2, 3, 2, 2))
    out = resizable_tensor(2, 3, 2, 2)
    tt.relu(out, T(x))
    np.testing.assert_array_equal(np.asarray(out), np.maximum(x, 0).astype(np.float32))
    gi = rng.standard_normal(x.shape)
    grad = T(np.ones(x.shape))
    tt.relu_gradient(grad, out, T(gi))           # distinct: adds
    np.testing.assert_allclose(np.asarray(grad), 1 + np.where(x > 0, gi, 0), rtol=1e-6)
    same = T(gi)
    tt.relu_gradient(same, out, same)            # aliased: assigns
    np.testing.assert_allclose(np.asarray(same), np.where(x > 0, gi, 0), rtol=1e-6)
    with pytest.raises(ValueError, match=r"relu_gradient.*grad\(2, 3, 2, 2\).*dest\(1, 3, 2, 2\)"):
        tt.relu_gradient(grad, resizable_tensor(1, 3, 2, 2), same)


def test_bias_gradients_and_dot(rng):
    g = rng.standard_normal((3, 4, 2, 5))
    b = T(np.full((1, 4, 1, 1), np.inf))
    tt.assign_conv_bias_gradient(b, T(g))
    np.testing.assert_allclose(np.asarray(b).ravel(), g.sum(axis=(0, 2, 3)), rtol=1e-5)
    fb = T(np.full((1, 40, 1, 1), np.inf))
    tt.assign_bias_gradient(fb, T(g))
    np.testing.assert_allclose(np.asarray(fb).ravel(), g.reshape(3, -1).sum(0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="assign_conv_bias_gradient"):
        tt.assign_conv_bias_gradient(resizable_tensor(1, 3), T(g))
    a, c = rng.standard_normal(50), rng.standard_normal(50)
    assert tt.dot(T(a), T(c)) == pytest.approx(float(np.dot(a.astype(np.float32).astype(np.float64),
                                                            c.astype(np.float32).astype(np.float64))))
    with pytest.raises(TypeError, match="dot: a must be a dnnpy tensor"):
        tt.dot(a, T(c))


def test_backend_selection(monkeypatch):
    assert tt.backend_name() in ("cpu", "cuda")
    with tt.force_cpu():
        assert not tt.use_cuda() and tt.backend_name() == "cpu"


def test_disable_env_parsing(monkeypatch):
    from dnnpy.tensor_tools import backend

    for value, disabled in (("", False), ("0", False), ("false", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("DNNPY_DISABLE_CUDA", value)
        assert backend._env_disables_cuda() is disabled


@pytest.mark.parametrize("mode", ["add", "assign", "inplace"])
def test_relu_gradient_modes_and_non_finite_gradients(mode):
    """gi where dest > 0, else exactly 0, even for an infinite or NaN gi (no ``inf*0``);
    in place, a NaN dest keeps its gradient (dlib: zeroed only where dest <= 0). The numpy
    twin's promise; oneDNN's differs for non-finite values (cpu/onednn/eltwise.py)."""
    d = np.array([[1.0, 0.0, 2.0, 0.0, np.nan, 3.0]]).reshape(1, 6, 1, 1)
    gi = np.array([[5.0, np.inf, -np.inf, np.nan, 7.0, -2.0]]).reshape(1, 6, 1, 1)
    g = T(gi) if mode == "inplace" else T(np.full(gi.shape, 1.0 if mode == "add" else np.nan))
    with tt.force_numpy():
        _relu_gradient_modes(g, d, gi, mode)


def _relu_gradient_modes(g, d, gi, mode):
    if mode == "inplace":
        tt.relu_gradient(g, T(d), g)
        want = [5.0, 0.0, -np.inf, 0.0, 7.0, -2.0]
    else:
        tt.relu_gradient(g, T(d), T(gi), add_to=(mode == "add"))
        want = [5.0, 0.0, -np.inf, 0.0, 0.0, -2.0]
        if mode == "add":
            want = [w + 1.0 for w in want]
    np.testing.assert_array_equal(np.asarray(g).ravel(), want)
