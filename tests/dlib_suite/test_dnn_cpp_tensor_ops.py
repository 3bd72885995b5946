"""dlib's dnn tests of the element-wise, broadcasting and solver tensor ops, ported from
dlib 20.0.1's ``dlib/test/dnn.cpp`` (``/tmp/dnn2001.cpp``):

* ``test_basic_tensor_ops`` (lines 996-1403), in three tests: the CPU checks
  (``test_basic_tensor_ops``), its ``tt::exp``/``tt::log``/``tt::log10`` block (lines
  1376-1401, ``test_basic_tensor_ops_exp_log``) and its ``#ifdef DLIB_USE_CUDA`` memcpy
  checks with the data current on the device (``test_basic_tensor_ops_device_memcpy``,
  ``@pytest.mark.cuda``);
* the ``#ifdef DLIB_USE_CUDA`` block (lines 1407-2113): ``test_scale_channels``,
  ``test_affine_rect``, ``compare_adam``, ``test_multiply_zero_padded``, ``test_add``,
  ``test_more_ops`` (over ``run_tests``' six sizes), ``compare_bn_gpu_and_cpu``,
  ``compare_bn_conv_gpu_and_cpu`` and ``test_more_ops2``. (``test_conv``, of the same block,
  is in test_dnn_cpp_conv_pool.py.)

dlib's ``compare_*`` functions are ``test_compare_*`` here (pytest collects ``test_`` names).
dlib checks ``cuda::op`` against ``cpu::op`` there. Here the dnnpy op (``tt.op``, on the
active backend) is checked against a float64 numpy evaluation of dlib's CPU formula
(``dlib/cuda/cpu_dlib.cpp``) from the same float32 inputs, so the limit must cover the
float32 rounding of the op itself; each limit says why it does. The two functions named
for the GPU, ``compare_bn_gpu_and_cpu`` and ``compare_bn_conv_gpu_and_cpu``, compare the
CUDA twin with the CPU twin (``force_cpu()``) as dlib does and skip without a GPU.

dlib's ``tensor_rand`` and ``dlib::rand`` streams are replaced by ``np.random.default_rng``
with fixed seeds (uniform fills are ``[0, 1)``, gaussian fills standard normal, as dlib's).

Spellings: dlib's ``memcpy(dest, src)`` on tensors is ``dest.assign(src)``; ``t = v`` is
``t.fill(v)``; ``t *= v`` and ``t += matrix`` are dlib's (a matrix of the tensor's size);
the tensor-coefficient ``tt::affine_transform(dest, src,
A, B)`` is ``tt.affine_transform_tensors``.

Not ported: ``at(const_cast<const resizable_tensor&>(A), 8)`` is checked as ``at(A, 8)``
(C++ const-correctness of alias views has no Python counterpart); ``compare_adam`` runs on
1/104 of dlib's 35 million elements (dlib's size takes 700 MB and seconds of CPU here: see
the test).
"""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import alias_tensor, resizable_tensor
from dnnpy.geometry import rectangle
from dnnpy.layers.norm import DEFAULT_BATCH_NORM_EPS
from dnn_cpp_helpers import f64, fill_uniform, mat, max_abs

# float32 unit roundoff: one correctly rounded float32 operation is off by at most U*|result|
U = 2.0 ** -24


def fill_gaussian(rng, *tensors):
    for t in tensors:
        t.assign(rng.standard_normal(t.shape))


def zero_padded(a, shape):
    """``a`` read through dlib's bounds check: an element outside ``a`` is 0, and ``a`` is
    cropped to ``shape``."""
    out = np.zeros(shape)
    region = tuple(slice(0, min(x, y)) for x, y in zip(a.shape, shape))
    out[region] = a[region]
    return out


# ----------------------------------------------------------------------------------------

def test_basic_tensor_ops():
    rng = np.random.default_rng(997)
    dest, src, A, B = resizable_tensor(), resizable_tensor(3, 4), resizable_tensor(1, 4), resizable_tensor(1, 4)
    src.fill(2)
    dest.copy_size(src)
    tt.affine_transform(dest, src, 2, 3)

    truth1 = np.full((3, 4), 2.0)
    assert max_abs(truth1, mat(src)) < 1e-5
    src *= 2
    truth1 = np.full((3, 4), 4.0)
    assert max_abs(truth1, mat(src)) < 1e-5
    src.fill(2)

    truth1 = np.full((3, 4), 7.0)
    truth2 = np.array([[7, 10, 7, 7]] * 3, dtype=np.float64)
    assert max_abs(truth1, mat(dest)) < 1e-5

    A.fill(2)
    B.fill(3)
    A.host().reshape(-1)[1] = 3
    B.host().reshape(-1)[1] = 4
    dest.fill(0)
    tt.affine_transform_tensors(dest, src, A, B)           # dlib: affine_transform(dest, src, A, B)
    assert max_abs(truth2, mat(dest)) < 1e-5

    A.set_size(3, 4)
    B.set_size(3, 4)
    fill_gaussian(rng, A, B)
    tt.affine_transform_tensors(dest, src, A, B)
    truth3 = mat(src) * mat(A) + mat(B)
    assert max_abs(truth3, mat(dest)) < 1e-5

    truth4 = mat(A) * mat(B)
    tt.multiply(False, A, A, B)
    assert max_abs(truth4, mat(A)) < 1e-5
    truth4 = mat(A) * mat(B) + mat(A)
    tt.multiply(True, A, A, B)
    assert max_abs(truth4, mat(A)) < 1e-5

    truth5 = (mat(B) > 0.1).astype(np.float64)
    tt.threshold(B, 0.1)
    assert max_abs(truth5, mat(B)) < 1e-5

    A.host().reshape(-1)[:] = np.arange(A.size())         # for (auto& x : A) x = cnt++;

    truth1 = np.array([[0, 1], [2, 3]], dtype=np.float64)
    truth2 = np.array([[4, 5], [6, 7]], dtype=np.float64)
    truth3 = np.array([[8, 9], [10, 11]], dtype=np.float64)

    at = alias_tensor(2, 2)
    A0 = at(A, 0)
    A4 = at(A, 4)
    A8 = at(A, 8)
    assert np.array_equal(mat(A0), truth1)
    assert np.array_equal(mat(at(A, 4)), truth2)
    assert np.array_equal(mat(A8), truth3)

    A4 += np.full((2, 2), 2.0)                           # dlib: A4 += uniform_matrix<float>(2,2,2)
    truth2 += 2
    assert np.array_equal(mat(A4), truth2)
    truth1, truth2, truth3 = (t.reshape(1, -1) for t in (truth1, truth2, truth3))
    assert np.array_equal(mat(A), np.concatenate([truth1, truth2, truth3]).reshape(3, 4))

    tt.affine_transform(A, A, 1, 2)
    truth1, truth2, truth3 = truth1 + 2, truth2 + 2, truth3 + 2
    assert np.array_equal(mat(at(A, 4)), truth2.reshape(2, 2))
    assert np.array_equal(mat(A), np.concatenate([truth1, truth2, truth3]).reshape(3, 4))

    # multiply's broadcasting forms: a source of 1 sample is repeated, a dest of 1 sample
    # sums the products over the samples. Values in [0, 1); sums of 3 products: float32
    # rounding stays below 3*U*3 = 5e-7, under dlib's 1e-6.
    dest = resizable_tensor(3, 4)
    A, B = resizable_tensor(3, 4), resizable_tensor(3, 4)
    fill_uniform(rng, dest, A, B)
    dest.set_size(1, 4)
    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), (mat(A) * mat(B)).sum(axis=0, keepdims=True)) < 1e-6

    A.set_size(1, 4)
    fill_uniform(rng, A)
    AA = np.concatenate([mat(A)] * 3)
    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    tt.multiply(False, dest, B, A)
    assert max_abs(mat(dest), (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    prevdest = mat(dest)
    tt.multiply(True, dest, B, A)
    assert max_abs(mat(dest) - prevdest, (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6

    dest.set_size(3, 4)
    tt.multiply(False, dest, B, A)
    assert max_abs(mat(dest), AA * mat(B)) < 1e-6
    prevdest = mat(dest)
    tt.multiply(True, dest, B, A)
    assert max_abs(mat(dest) - prevdest, AA * mat(B)) < 1e-6

    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), AA * mat(B)) < 1e-6
    prevdest = mat(dest)
    tt.multiply(True, dest, B, A)
    assert max_abs(mat(dest) - prevdest, AA * mat(B)) < 1e-6

    # memcpy (dnnpy: assign) whatever side was touched last
    A, B, truth = resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5)
    A.fill(4)
    B.fill(1)
    truth.fill(1)
    assert max_abs(mat(B), mat(truth)) < 1e-5
    A.assign(truth)
    assert max_abs(mat(A), mat(truth)) < 1e-5
    A.fill(4)
    A.host()
    B.host()
    A.assign(truth)
    assert max_abs(mat(A), mat(truth)) < 1e-5

    out1, m, v = resizable_tensor(5, 6), resizable_tensor(5, 6), resizable_tensor(6)
    fill_uniform(rng, out1, m, v)
    tt.scale_columns(out1, m, v)
    # one product of two values < 1: float32 rounding <= U, under dlib's 1e-6
    assert max_abs(mat(out1), mat(m) * f64(v).reshape(1, -1)) < 1e-6

    # memcpy between alias views, into a distinct tensor and within one tensor
    A, B = resizable_tensor(11), resizable_tensor(11)
    at = alias_tensor(5)
    A.fill(4)
    B.fill(1)
    A.host()
    B.host()
    _check_alias_memcpy(A, B, at)

    # add(beta, dest, alpha, src) with a per-sample scalar src; 1.4*b + 0.5*a < 2: float32
    # rounding <= 3*U*2 = 4e-7, under dlib's 1e-6
    A, B = resizable_tensor(4, 5), resizable_tensor(4)
    fill_uniform(rng, A, B)
    alpha, beta = np.float32(1.4), np.float32(0.5)
    a, b = mat(A), mat(B)
    want = beta * a + alpha * b
    tt.add(beta, A, alpha, B)
    assert max_abs(mat(A), want) < 1e-6
    want = 0 * want + alpha * b
    tt.add(0, A, alpha, B)
    assert max_abs(mat(A), want) < 1e-6

    # add's broadcasting forms; 2*a + 3*b < 5: float32 rounding <= U*(3 + 5) = 5e-7
    A, B = resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5)
    for beta, alpha in ((2, 3), (0, 3), (1, 0), (0, 0)):
        fill_uniform(rng, A, B)
        want = beta * f64(A) + alpha * f64(B)
        tt.add(beta, A, alpha, B)
        assert max_abs(f64(A), want) < 1e-6, (beta, alpha)

    for shape in ((1, 3, 4, 5), (1, 1, 4, 5), (1, 3, 1, 1)):
        B.set_size(*shape)
        fill_uniform(rng, A, B)
        want = 2 * f64(A) + 3 * f64(B)                      # numpy broadcasting = dlib's join_cols/join_rows
        tt.add(2, A, 3, B)
        assert max_abs(f64(A), want) < 1e-6, shape
        assert A.num_samples() == 2


def _check_alias_memcpy(A, B, at):
    aA, aB = at(A, 5), at(B, 5)                             # non-aliasing
    aA.assign(aB)
    assert max_abs(mat(A).ravel(), [4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 4]) < 1e-5
    aA, aB = at(A, 1), at(A, 6)                             # aliasing: the same storage
    aA.assign(aB)
    assert max_abs(mat(A).ravel(), [4, 1, 1, 1, 1, 4, 1, 1, 1, 1, 4]) < 1e-5


def test_basic_tensor_ops_exp_log():
    rng = np.random.default_rng(1374)
    dest2 = resizable_tensor(123, 456)
    src1, src2 = resizable_tensor(123, 456), resizable_tensor(123, 456)
    # outputs within [0.3, 21]: float32 exp/log are within a few ulps (<= 1e-5 at 21)
    for op, ref in ((tt.exp, np.exp), (tt.log, np.log), (tt.log10, np.log10)):
        fill_uniform(rng, src1)
        tt.affine_transform(src1, src1, 1, 2)               # random in range [2, 3]
        src2.assign(src1)
        dest1 = ref(mat(src1))
        op(dest2, src2)
        op(src2, src2)                                      # should work in place
        assert max_abs(dest1, mat(dest2)) < 1e-5, op.__name__
        assert max_abs(dest1, mat(src2)) < 1e-5, op.__name__


@pytest.mark.cuda
def test_basic_tensor_ops_device_memcpy():
    A, B, truth = resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5)
    B.fill(1)
    truth.fill(1)
    for touch_a, touch_b in (("device", "host"), ("device", "device"), ("host", "device"),
                             ("host_write_only", "device")):
        A.fill(4)
        getattr(A, touch_a)()
        getattr(B, touch_b)()
        A.assign(truth)
        assert max_abs(mat(A), mat(truth)) < 1e-5, (touch_a, touch_b)

    A, B = resizable_tensor(11), resizable_tensor(11)
    at = alias_tensor(5)
    B.fill(1)
    for touch_a, touch_b in (("device", "host"), ("device", "device"), ("host", "device")):
        A.fill(4)
        getattr(A, touch_a)()
        getattr(B, touch_b)()
        _check_alias_memcpy(A, B, at)


# ----------------------------------------------------------------------------------------

def test_scale_channels():
    rng = np.random.default_rng(1409)
    dest1 = resizable_tensor(2, 3, 4, 5)
    src, scales = resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3)
    fill_gaussian(rng, dest1, src, scales)
    want = f64(dest1) + f64(src) * f64(scales)
    tt.scale_channels(True, dest1, src, scales)
    # dlib's limit compares two float32 runs; against float64 the float32 rounding is at most
    # U*(|src*scale| + |result|), < 1e-6 while those stay below 8 (gaussians, 120 of them:
    # measured 0.5e-7 to 3e-7 over 10 seeds)
    assert max_abs(mat(dest1), want.reshape(2, -1)) < 1e-6
    want = f64(src) * f64(scales)
    tt.scale_channels(False, dest1, src, scales)
    assert max_abs(mat(dest1), want.reshape(2, -1)) < 1e-6


def test_affine_rect():
    rng = np.random.default_rng(1437)
    for _ in range(20):
        nr, nc = (int(v) for v in rng.integers(1, 11, 2))
        dest1 = resizable_tensor(nr, nc)
        src1, src2, src3 = resizable_tensor(nr, nc), resizable_tensor(nr, nc), resizable_tensor(nr, nc)
        dest1.fill(1)
        dest3 = mat(dest1)
        src1.fill(2)
        src2.fill(3)
        src3.fill(4)
        p1 = (int(rng.integers(nc)), int(rng.integers(nr)))
        p2 = (int(rng.integers(nc)), int(rng.integers(nr)))
        rect = rectangle.from_points(p1, p2)
        # small integers: every step is exact in float32, so equality holds as in dlib
        dest3[rect.top():rect.bottom() + 1, rect.left():rect.right() + 1] = 2 * 2 + 3 * 3 + 4 * 4
        tt.affine_transform(rect, dest1, src1, src2, src3, 2, 3, 4)
        assert np.array_equal(dest3, mat(dest1))


def test_multiply_zero_padded():
    rng = np.random.default_rng(1627)

    def check(dest1, src1, src2):
        fill_uniform(rng, dest1, src1, src2)
        want = zero_padded(f64(src1), dest1.shape) * zero_padded(f64(src2), dest1.shape)
        tt.multiply_zero_padded(False, dest1, src1, src2)
        # one product (plus one sum when adding) of values < 1 (< 2): rounding <= 2*U*2
        assert max_abs(f64(dest1), want) < 1e-5
        before = f64(dest1)
        tt.multiply_zero_padded(True, dest1, src1, src2)
        assert max_abs(f64(dest1), before + want) < 1e-5

    for _ in range(300):
        shapes = rng.integers(1, 5, (3, 4))
        check(*(resizable_tensor(*(int(v) for v in s)) for s in shapes))
    # the case where all tensors have the same dimensions
    check(resizable_tensor(3, 4, 5, 6), resizable_tensor(3, 4, 5, 6), resizable_tensor(3, 4, 5, 6))


def test_add():
    rng = np.random.default_rng(1686)

    def check(dest1, src1, src2):
        fill_uniform(rng, dest1, src1, src2)
        want = zero_padded(f64(src1), dest1.shape) + zero_padded(f64(src2), dest1.shape)
        tt.add(dest1, src1, src2)
        # one sum of values < 1: rounding <= U*2
        assert max_abs(f64(dest1), want) < 1e-5

    for _ in range(300):
        shapes = rng.integers(1, 5, (3, 4))
        check(*(resizable_tensor(*(int(v) for v in s)) for s in shapes))
    check(resizable_tensor(3, 4, 5, 6), resizable_tensor(3, 4, 5, 6), resizable_tensor(3, 4, 5, 6))


def assert_f32_of(got, want, scale, what=""):
    """dlib's ``equal(cuda, cpu)`` between two float32 runs becomes: ``got`` is the float32
    evaluation of ``want`` (float64 from the same inputs), off by at most one rounding per
    operation, i.e. ``|got - want| <= 8*U*scale`` with ``scale`` the largest sum of the
    magnitudes of the terms (at most 7 roundings in these formulas)."""
    err = max_abs(got, want)
    assert err <= 8 * U * scale, f"{what}: {err} > 8*U*{scale}"


@pytest.mark.parametrize("nr,nc", [(1, 1), (3, 4), (4, 3), (4, 1), (1, 4), (10000, 4)])
def test_more_ops(nr, nc):
    rng = np.random.default_rng(1736 + nr * 7 + nc)
    dest, src = resizable_tensor(nr, nc), resizable_tensor(nr, nc)
    srcb, srcc = resizable_tensor(nr, nc), resizable_tensor(nr, nc)

    fill_uniform(rng, dest, src)
    want = f64(dest) * f64(src)
    tt.multiply(False, dest, dest, src)
    # a single float32 product is correctly rounded: exactly float32(the float64 product)
    assert np.array_equal(f64(dest), want.astype(np.float32))
    want = want.astype(np.float32) * (1.0 + f64(src))  # d += d*s
    tt.multiply(True, dest, dest, src)
    assert_f32_of(dest, want, 2, "multiply add_to")

    fill_uniform(rng, dest, src)
    tt.affine_transform(dest, src, 2, 3)
    assert_f32_of(dest, 2 * f64(src) + 3, 5, "affine_transform(dest, src, A, B)")

    fill_uniform(rng, dest, src, srcb)
    tt.affine_transform(dest, src, srcb, 2, 3, 4)
    assert_f32_of(dest, 2 * f64(src) + 3 * f64(srcb) + 4, 9, "affine_transform 2 sources")

    fill_uniform(rng, dest, src, srcb, srcc)
    tt.affine_transform(dest, src, srcb, srcc, 2, 3, 4, 5)
    want3 = 2 * f64(src) + 3 * f64(srcb) + 4 * f64(srcc)
    assert_f32_of(dest, want3 + 5, 14, "affine_transform 3 sources")
    tt.affine_transform(dest, src, srcb, srcc, 2, 3, 4, 0)
    assert_f32_of(dest, want3, 9, "affine_transform 3 sources, constant 0")

    tt.affine_transform_range(0, dest.size(), dest, src, srcb, srcc, 2, 3, 4)
    assert_f32_of(dest, want3, 9, "affine_transform_range, everything")

    if 3 < dest.size():
        dest.fill(999)
        tt.affine_transform_range(3, dest.size() - 1, dest, src, srcb, srcc, 2, 3, 4)
        want = np.full(dest.size(), 999.0)
        want[3:-1] = want3.ravel()[3:-1]
        assert_f32_of(f64(dest).ravel(), want, 9, "affine_transform_range [3, size-1)")
        assert np.array_equal(f64(dest).ravel()[[0, 1, 2, -1]], [999] * 4)   # untouched
        tt.affine_transform_range(dest.size(), dest.size(), dest, src, srcb, srcc, 2, 3, 4)
        assert_f32_of(f64(dest).ravel(), want, 9, "affine_transform_range, empty range")

    fill_uniform(rng, dest, src, srcb, srcc)
    tt.affine_transform_tensors(dest, src, srcb, srcc)     # dlib: affine_transform(dest, src, A, B)
    assert_f32_of(dest, f64(src) * f64(srcb) + f64(srcc), 2, "affine_transform tensors")
    # now exercise the code path where the A/B tensors have num_samples()==1
    srcb.set_size(1, nc)
    srcc.set_size(1, nc)
    fill_uniform(rng, dest, src, srcb, srcc)
    tt.affine_transform_tensors(dest, src, srcb, srcc)
    assert_f32_of(dest, f64(src) * f64(srcb) + f64(srcc), 2, "affine_transform tensors, 1 sample")

    fill_uniform(rng, src)
    want = (f64(src) > 0.5).astype(np.float64)
    tt.threshold(src, 0.5)
    assert np.array_equal(f64(src), want)

    # dlib runs cuda::multiply's broadcasting forms here, as test_basic_tensor_ops runs tt::'s
    dest = resizable_tensor(3, 4)
    A, B = resizable_tensor(3, 4), resizable_tensor(3, 4)
    fill_uniform(rng, dest, A, B)
    dest.set_size(1, 4)
    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), (mat(A) * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    A.set_size(1, 4)
    fill_uniform(rng, A)
    AA = np.concatenate([mat(A)] * 3)
    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    tt.multiply(False, dest, B, A)
    assert max_abs(mat(dest), (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    prevdest = mat(dest)
    tt.multiply(True, dest, B, A)
    assert max_abs(mat(dest) - prevdest, (AA * mat(B)).sum(axis=0, keepdims=True)) < 1e-6
    dest.set_size(3, 4)
    tt.multiply(False, dest, B, A)
    assert max_abs(mat(dest), AA * mat(B)) < 1e-6
    prevdest = mat(dest)
    tt.multiply(True, dest, B, A)
    assert max_abs(mat(dest) - prevdest, AA * mat(B)) < 1e-6
    tt.multiply(False, dest, A, B)
    assert max_abs(mat(dest), AA * mat(B)) < 1e-6

    invnorms1, data = resizable_tensor(), resizable_tensor(4, 5)
    fill_uniform(rng, data)
    eps = 0.1
    invnorms2 = 1 / np.sqrt((mat(data) ** 2).sum(axis=1) + eps)
    tt.inverse_norms(invnorms1, data, eps)
    # 1/sqrt of a sum of 5 squares: a few roundings of a value in [0.4, 3.2]
    assert max_abs(f64(invnorms1).ravel(), invnorms2) < 1e-6
    out1 = resizable_tensor()
    out1.copy_size(data)
    tt.scale_rows(out1, data, invnorms1)
    assert max_abs(mat(out1), mat(data) * f64(invnorms1).reshape(-1, 1)) < 1e-6

    a, b = resizable_tensor(123, 432), resizable_tensor(123, 432)
    fill_gaussian(rng, a, b)
    out = resizable_tensor()
    tt.dot_prods(out, a, b)
    truth = (mat(a) * mat(b)).sum(axis=1)
    # sums of 432 gaussian products (|sum| < 80): float32 summation error ~1e-5, dlib's 1e-4
    assert max_abs(f64(out).ravel(), truth) < 1e-4
    out.fill(0)
    assert max_abs(f64(out).ravel(), truth) > 1e-2
    tt.dot_prods(False, out, a, b)
    assert max_abs(f64(out).ravel(), truth) < 1e-4
    tt.dot_prods(True, out, a, b)
    assert max_abs(f64(out).ravel() / 2, truth) < 1e-4
    assert max_abs(f64(out).ravel(), truth) > 1e-2


def _adam_reference(s, m, v, t, lr, wd, m1, m2, params, params_grad):
    """cpu_dlib.cpp's compute_adam_update, in float64."""
    g = wd * params + params_grad
    m = m1 * m + (1 - m1) * g
    v = m2 * v + (1 - m2) * g * g
    alpha = lr * np.sqrt(1 - m2 ** t) / (1 - m1 ** t)
    return -alpha * m / (np.sqrt(v) + 1e-8), m, v


def test_compare_adam():
    # dlib's tensors are (89,90,60,73), 35 million floats each (5 of them: 700 MB and about
    # 3 s of numpy here); (89,90,6,7) keeps 336,420 elements of the same random kind.
    rng = np.random.default_rng(1593)
    t = 2
    shape = (89, 90, 6, 7)
    s, m, v, params, params_grad = (resizable_tensor(*shape) for _ in range(5))
    fill_uniform(rng, s, m, v, params, params_grad)
    want_s, want_m, want_v = _adam_reference(f64(s), f64(m), f64(v), t, 0.01, 0.001, 0.9, 0.99,
                                                    f64(params), f64(params_grad))
    fill_uniform(rng, s)
    tt.compute_adam_update(0, params.size(), s, m, v, t, 0.01, 0.001, 0.9, 0.99, params, params_grad)
    # m, v < 1 after a few roundings; s = -alpha*m/sqrt(v) is within a few ulps relative, and
    # |s| < 2 for these values (v >= 0.99*v0 is not tiny among 336k uniform draws), so dlib's
    # absolute 1e-6 holds (measured 1.3e-7 to 3.1e-7 over 10 seeds)
    assert max_abs(s, want_s) < 1e-6
    assert max_abs(m, want_m) < 1e-6
    assert max_abs(v, want_v) < 1e-6


def _bn_gpu_and_cpu(forward, gradient, src_shape, param_shape, seed):
    """dlib's compare_bn*_gpu_and_cpu: the CUDA twin against the CPU twin, from the same
    inputs, forward and gradient, with dlib's 1e-4 on every output."""
    rng = np.random.default_rng(seed)
    src = resizable_tensor(*src_shape)
    gamma, beta = resizable_tensor(*param_shape), resizable_tensor(*param_shape)
    gamma.fill(2)
    beta.fill(3)
    fill_uniform(rng, src)
    gradient_input = resizable_tensor(*src_shape)
    fill_uniform(rng, gradient_input)

    results = []
    for on_cpu in (True, False):
        dest, means, invstds, rm, rv = (resizable_tensor() for _ in range(5))
        src_grad, gamma_grad, beta_grad = (resizable_tensor() for _ in range(3))
        src_grad.copy_size(src)
        src_grad.fill(0)
        gamma_grad.copy_size(gamma)
        gamma_grad.fill(0)
        beta_grad.copy_size(beta)
        beta_grad.fill(0)

        def run():
            forward(DEFAULT_BATCH_NORM_EPS, dest, means, invstds, 1, rm, rv, src, gamma, beta)
            # dlib computes both gradients from the CPU's means and invstds
            gradient(DEFAULT_BATCH_NORM_EPS, gradient_input, *(results[0][1:3] if results else (means, invstds)),
                     src, gamma, src_grad, gamma_grad, beta_grad)

        if on_cpu:
            with tt.force_cpu():
                run()
        else:
            run()
        results.append((dest, means, invstds, rm, rv, src_grad, gamma_grad, beta_grad))
    names = ("dest", "means", "invstds", "running_means", "running_variances", "src_grad", "gamma_grad",
             "beta_grad")
    for name, c, g in zip(names, *results):
        assert max_abs(c, g) < 1e-4, name


@pytest.mark.cuda
def test_compare_bn_gpu_and_cpu():
    _bn_gpu_and_cpu(tt.batch_normalize, tt.batch_normalize_gradient, (64, 20, 100, 100), (1, 20, 100, 100), 1880)


@pytest.mark.cuda
def test_compare_bn_conv_gpu_and_cpu():
    _bn_gpu_and_cpu(tt.batch_normalize_conv, tt.batch_normalize_conv_gradient, (2, 8, 10, 9), (1, 8), 1947)


def test_more_ops2():
    rng = np.random.default_rng(2010)

    def random_shape():
        return tuple(int(v) for v in rng.integers(1, 31, 4))

    def relative(dest, want, what):
        # dlib's relative limits on a reduction over up to 27,000 products of values in
        # [0, 1): float32 pairwise sums are off by ~1e-7 relative, dlib allows 1e-4 / 1e-5
        scale, scalem = np.max(np.abs(want)), np.mean(np.abs(want))
        err = np.abs(f64(dest) - want)
        assert err.max() / scale < 1e-4, what
        assert err.mean() / scalem < 1e-5, what

    for _ in range(100):
        src1 = resizable_tensor(*random_shape())
        dest1 = resizable_tensor()
        dest1.copy_size(src1)
        src2 = resizable_tensor(1, src1.k(), 1, 1)
        fill_uniform(rng, dest1, src1, src2)
        want = f64(src1) * f64(src2)
        tt.multiply_conv(False, dest1, src1, src2)
        assert max_abs(dest1, want) < 1e-5                  # one product of values < 1
        before = f64(dest1)
        tt.multiply_conv(True, dest1, src1, src2)
        assert max_abs(dest1, before + want) < 1e-5

        # the other mode of multiply_conv: per-channel sums of products
        src2.copy_size(src1)
        dest1.set_size(1, src1.k(), 1, 1)
        fill_uniform(rng, dest1, src1, src2)
        want = (f64(src1) * f64(src2)).sum(axis=(0, 2, 3)).reshape(1, -1, 1, 1)
        tt.multiply_conv(False, dest1, src1, src2)
        relative(dest1, want, "multiply_conv sums")
        prevd = f64(dest1)
        tt.multiply_conv(True, dest1, src1, src2)
        relative(f64(dest1) - prevd, want, "multiply_conv sums, add_to")

    for _ in range(100):
        src = resizable_tensor(*random_shape())
        dest1 = resizable_tensor()
        dest1.copy_size(src)
        A, B = resizable_tensor(1, src.k(), 1, 1), resizable_tensor(1, src.k(), 1, 1)
        fill_uniform(rng, dest1, src, A, B)
        tt.affine_transform_conv(dest1, src, A, B)
        assert max_abs(dest1, f64(A) * f64(src) + f64(B)) < 1e-5

    for _ in range(100):
        g = resizable_tensor(*random_shape())
        dest1 = resizable_tensor(1, g.k(), 1, 1)
        fill_uniform(rng, dest1, g)
        tt.assign_conv_bias_gradient(dest1, g)
        relative(dest1, f64(g).sum(axis=(0, 2, 3)).reshape(1, -1, 1, 1), "assign_conv_bias_gradient")
