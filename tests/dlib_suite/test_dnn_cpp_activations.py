"""dlib's dnn tests of the pointwise activations and the softmax family, ported from dlib
20.0.1's ``dlib/test/dnn.cpp`` (``/tmp/dnn2001.cpp``):

* ``test_tanh`` (lines 46-80), ``test_sigmoid`` (82-116): central differences of
  ``dot(gradient_input, f(src))`` against ``tt.*_gradient``;
* ``test_softmax`` (118-167), ``test_softmaxm`` (169-246), ``test_softmax_all`` (248-297):
  the same checks, the ``softmaxm`` layer against dlib's expected values (rows of -inf
  included), and their ``#ifdef DLIB_USE_CUDA`` blocks;
* ``test_mish``, ``test_leaky_relu``, ``test_clipped_relu``, ``test_elu``, ``test_gelu``,
  ``test_smelu``, ``test_silu`` (299-503): in dlib these are wholly inside ``#ifdef
  DLIB_USE_CUDA`` and compare ``cuda::op`` with ``cpu::op``.

dlib's ``cuda::op`` vs ``cpu::op`` comparisons are ported as the dnnpy op (``tt.op``, on the
active backend) against a float64 numpy evaluation of dlib's CPU formula
(``dlib/cuda/cpu_dlib.cpp``) from the same float32 inputs; each limit says why it holds
(U = 2^-24 = 6e-8 is float32's unit roundoff: one correctly rounded float32 operation is off
by at most U*|result|).
dlib's ``gaussian_randm``, ``tensor_rand`` and ``dlib::rand`` streams are replaced by
``np.random.default_rng`` with fixed seeds (uniform fills ``[0, 1)``, gaussian fills
standard normal with dlib's mean and deviation).

Spellings: dlib's ``resizable_tensor t; t = matrix_cast<float>(m);`` (an empty tensor
resized by the assignment) is ``t = resizable_tensor(m)``, since ``resizable_tensor.assign``
does not resize; ``t = matrix`` into a tensor of that many values is ``t.assign(m)``;
``t = v`` is ``t.fill(v)``; ``operation_mode::PLANE_WISE`` is ``tt.PLANE_WISE``;
``layer<tag1>(net)`` is ``dnnpy.layer(net, tag1)``; ``randomize_parameters(t, n, rnd)`` is
``dnnpy.layers.base.randomize_parameters(t, n)`` (its generator seeded by
``dnnpy.set_random_seed``).

Everything of these functions is ported (the logging calls excepted).
"""

import math

import numpy as np

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import input, resizable_tensor, softmaxm, tag1, tag2
from dnnpy.layers.base import randomize_parameters
from dnn_cpp_helpers import (central_difference, compare_gradients, f64, fill_gaussian,
                             fill_uniform, gaussian_randm, mat, max_abs)


def src_dest_gradient_input(seed):
    """The 5x5 src, dest and gradient_input of test_tanh and test_sigmoid."""
    rng = np.random.default_rng(seed)
    src = resizable_tensor(gaussian_randm(rng, 5, 5))
    dest = resizable_tensor(gaussian_randm(rng, 5, 5))
    gradient_input = resizable_tensor(gaussian_randm(rng, 5, 5))
    return src, dest, gradient_input


def softmax_reference(x, axis):
    """dlib's ttimpl::softmax in float64: ``exp(x - max)/sum`` over ``axis``."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----------------------------------------------------------------------------------------

def test_tanh():
    src, dest, gradient_input = src_dest_gradient_input(46)
    grad_src = central_difference(src, lambda: tt.tanh(dest, src), gradient_input, dest)

    src_grad = resizable_tensor()
    src_grad.copy_size(src)
    src_grad.fill(0)

    tt.tanh(dest, src)
    tt.tanh_gradient(src_grad, dest, gradient_input)

    grad_error = compare_gradients(src_grad, grad_src)
    assert grad_error < 0.001, grad_error


def test_sigmoid():
    src, dest, gradient_input = src_dest_gradient_input(83)
    grad_src = central_difference(src, lambda: tt.sigmoid(dest, src), gradient_input, dest)

    src_grad = resizable_tensor()
    src_grad.copy_size(src)
    src_grad.fill(0)

    tt.sigmoid(dest, src)
    tt.sigmoid_gradient(src_grad, dest, gradient_input)

    grad_error = compare_gradients(src_grad, grad_src)
    assert grad_error < 0.001, grad_error


def _softmax_family_gradient_check(forward, gradient, seed):
    """test_softmax's and test_softmax_all's shared body; returns src."""
    rng = np.random.default_rng(seed)
    nr = nc = 3
    src, dest, gradient_input = resizable_tensor(5, 5, nr, nr), resizable_tensor(5, 5, nr, nc), \
        resizable_tensor(5, 5, nr, nc)
    fill_uniform(rng, src, dest)
    # dlib: "fill like this as a test of the assignment operator": a 5 x 45 matrix into a
    # 5x5x3x3 tensor keeps the tensor's shape
    gradient_input.assign(gaussian_randm(rng, 5, 5 * nr * nc))
    assert gradient_input.shape == (5, 5, nr, nc)

    grad_src = central_difference(src, lambda: forward(dest, src), gradient_input, dest)

    src_grad = resizable_tensor()
    src_grad.copy_size(src)
    src_grad.fill(0)

    forward(dest, src)
    gradient(src_grad, dest, gradient_input)

    grad_error = compare_gradients(src_grad, grad_src)
    assert grad_error < 0.001, grad_error
    return src


def _softmax_all_against_reference(src):
    """dlib's ``#ifdef DLIB_USE_CUDA`` block of test_softmax and test_softmax_all:
    ``cuda::softmax_all`` vs ``cpu::softmax_all`` within 1e-5. Here tt.softmax_all against
    float64: outputs in (0, 1), each an exp, a sum of 45 terms and a division in float32,
    so a few U (~1e-7) off at most; dlib's 1e-5 holds with a factor 50 to spare."""
    src1 = resizable_tensor(src.numpy())
    dest1 = resizable_tensor()
    dest1.copy_size(src)
    tt.softmax_all(dest1, src1)
    want = softmax_reference(mat(src), axis=1).reshape(src.shape)
    err = max_abs(dest1, want)
    assert err < 1e-5, err


def test_softmax():
    src = _softmax_family_gradient_check(tt.softmax, tt.softmax_gradient, 120)
    # dlib's CUDA block here compares softmax_all, not softmax (as test_softmax_all's)
    _softmax_all_against_reference(src)
    # and tt.softmax itself, against float64, under the same limit and for the same reason
    dest = resizable_tensor()
    dest.copy_size(src)
    tt.softmax(dest, src)
    assert max_abs(dest, softmax_reference(f64(src), axis=1)) < 1e-5


def test_softmaxm():
    net_type = tag1[softmaxm[tag2[input[np.float32]]]]
    net = net_type()

    # The seed gives rows of every kind: all finite, some -inf, and all -inf (dlib draws a
    # fresh std::rand() seed; a 3-wide row is all -inf with probability 3%).
    rng = np.random.default_rng(53)
    nr, nc = 2, 3
    n_samples = 3
    x = []
    for _ in range(n_samples):
        xtmp = rng.standard_normal((nr, nc)).astype(np.float32)
        xtmp[(xtmp > 1) | (xtmp < -1)] = -np.inf
        x.append(xtmp)
    rows = np.isinf(np.array(x)).sum(axis=2).ravel()
    assert {0, nc} <= set(rows.tolist()) and (rows % nc).any()

    input_tensor = net.to_tensor(x)
    net.forward(input_tensor)

    # dlib's expected output, computed in float32 as dlib does (FLT_EPSILON in the sum)
    inp = input_tensor.numpy()
    expected = np.zeros_like(inp)
    for ii in range(n_samples):
        for jj in range(nr):
            m = inp[ii, 0, jj, :]
            if np.all(m == -np.inf):
                expected[ii, 0, jj, :] = 0.0
            else:
                exp_m = np.exp(m - m.max())
                sum_exp = exp_m.sum() + np.finfo(np.float32).eps
                expected[ii, 0, jj, :] = exp_m / sum_exp
    expected_output = resizable_tensor(expected)

    net_output = dnnpy.layer(net, tag1).get_output()
    assert max_abs(mat(net_output), mat(expected_output)) < 1e-5

    output_tensor, cpu_grad, gradient_input = (resizable_tensor() for _ in range(3))
    output_tensor.copy_size(input_tensor)
    cpu_grad.copy_size(input_tensor)
    cpu_grad.fill(0)
    gradient_input.copy_size(input_tensor)
    # dlib's randomize_parameters(gradient_input, nr + nc, rnd): uniform in
    # +-sqrt(6/(nr+nc)), drawn from the generator dnnpy.set_random_seed seeds
    dnnpy.set_random_seed(172)
    randomize_parameters(gradient_input, nr + nc)
    with tt.force_cpu():
        tt.softmax(output_tensor, input_tensor, tt.PLANE_WISE)
        tt.softmax_gradient(cpu_grad, output_tensor, gradient_input, tt.PLANE_WISE)
    assert max_abs(mat(output_tensor), mat(expected_output)) < 1e-5

    # dlib's CUDA block: cuda::softmax's output against the expected values, and the
    # gradient taken from it against the CPU's. Here tt.softmax on the active backend, and
    # its gradient against float64 evaluation of dlib's formula d*(gi - sum(d*gi)) per row
    # (zero where d is 0): values below 1 times gradients below 1.1, three-term sums, so a
    # few U off (1.4e-8 measured), far below dlib's 1e-5.
    grad = resizable_tensor()
    grad.copy_size(input_tensor)
    grad.fill(0)
    tt.softmax(output_tensor, input_tensor, tt.PLANE_WISE)
    tt.softmax_gradient(grad, output_tensor, gradient_input, tt.PLANE_WISE)
    assert max_abs(mat(output_tensor), mat(expected_output)) < 1e-5
    d, gi = f64(output_tensor), f64(gradient_input)
    want = d * (gi - (d * gi).sum(axis=3, keepdims=True))
    assert max_abs(grad, want) < 1e-5
    assert max_abs(cpu_grad, want) < 1e-5


def test_softmax_all():
    src = _softmax_family_gradient_check(tt.softmax_all, tt.softmax_all_gradient, 242)
    _softmax_all_against_reference(src)


# ----------------------------------------------------------------------------------------
# dlib: #ifdef DLIB_USE_CUDA, cuda::op vs cpu::op on a gaussian 4x5x3x3 tensor

def _gaussian_src(seed, stddev=1.0):
    src = resizable_tensor(4, 5, 3, 3)
    fill_gaussian(np.random.default_rng(seed), src, 0, stddev)
    return src


def _forward(op, src, *args):
    """``op(dest, src, *args)`` into a dest initialised to 1 (dlib initialises cuda's and
    cpu's dests to different values, so an op that leaves its output unwritten shows)."""
    dest = resizable_tensor()
    dest.copy_size(src)
    dest.fill(1)
    op(dest, src, *args)
    return dest


def test_mish():
    src = _gaussian_src(293)
    dest = _forward(tt.mish, src)
    x = f64(src)
    e = np.exp(x)
    want = x - 2 * x / (2 * e + e * e + 2)
    # dlib's 1e-6: |mish(x)| < 4 here, so a correctly rounded float32 result is within
    # 2.4e-7; the cancellation in x - 2x/delta (x near -4: 4 - 3.93) adds ~2 U*|x|
    err = max_abs(dest, want)
    assert err < 1e-6, err


def test_leaky_relu():
    src = _gaussian_src(318)
    alpha = np.float32(0.01)
    dest = _forward(tt.leaky_relu, src, float(alpha))
    x = f64(src)
    want = np.where(x > 0, x, float(alpha) * x)
    # dlib's 1e-7: positive values are copied, negative ones are one float32 product of
    # size < 0.05, within U*0.05 = 3e-9
    err = max_abs(dest, want)
    assert err < 1e-7, err


def test_clipped_relu():
    src = _gaussian_src(344, stddev=3)
    ceiling = 6.0
    dest = _forward(tt.clipped_relu, src, ceiling)
    x = f64(src)
    want = np.minimum(np.maximum(x, 0), ceiling)
    # dlib's 1e-7 (a select: exact)
    error = max_abs(dest, want)
    assert error < 1e-7, error

    rng = np.random.default_rng(345)
    grad, grad_input = resizable_tensor(), resizable_tensor()
    grad.copy_size(src)
    grad_input.copy_size(src)
    fill_uniform(rng, grad_input)
    grad.fill(0)
    tt.clipped_relu_gradient(grad, dest, grad_input, ceiling)
    d = f64(dest)
    want = np.where((d > 0) & (d < ceiling), f64(grad_input), 0.0)
    error = max_abs(grad, want)
    assert error < 1e-7, error


def test_elu():
    src = _gaussian_src(380)
    alpha = 1.0
    dest = _forward(tt.elu, src, alpha)
    x = f64(src)
    want = np.where(x > 0, x, alpha * (np.exp(x) - 1.0))
    # dlib allows 1e-7 between two float32 implementations. Against float64: negative
    # outputs lie in (-1, 0), numpy's float32 exp is within 2.3 ulp (measured on 45,000
    # gaussian values; ulp 6e-8 below 1) and "- 1" rounds once more (3e-8): 2e-7 bounds it
    # (1.2e-7 is the largest seen on 45,000 values)
    error = max_abs(dest, want)
    assert error < 2e-7, error

    rng = np.random.default_rng(381)
    grad, grad_input = resizable_tensor(), resizable_tensor()
    grad.copy_size(src)
    grad_input.copy_size(src)
    fill_gaussian(rng, grad_input)
    grad.fill(0)
    tt.elu_gradient(grad, dest, grad_input, alpha)
    d, gi = f64(dest), f64(grad_input)
    want = np.where(d > 0, gi, (alpha + d) * gi)
    # dlib's 1e-6: one product of values below 4, within U*4 = 2.4e-7
    error = max_abs(grad, want)
    assert error < 1e-6, error


def test_gelu():
    src = _gaussian_src(424)
    dest = _forward(tt.gelu, src)
    x = f64(src)
    want = 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2)))
    # dlib's 1e-6: |gelu(x)| < 4 here, a correctly rounded float32 result is within 2.4e-7
    err = max_abs(dest, want)
    assert err < 1e-6, err


def test_smelu():
    src = _gaussian_src(454)
    beta = 1.0
    dest = _forward(tt.smelu, src, beta)
    x = f64(src)
    want = np.where(x >= beta, x, np.where(x <= -beta, 0.0, (x + beta) ** 2 / (4 * beta)))
    # dlib allows 1e-7 between two float32 implementations. Against float64: copies and
    # zeros are exact; the quadratic branch, below 1, is off by at most 3 U relative in
    # float32 (x + beta rounded once, squared, rounded again): 1.8e-7, so 2e-7 (8.9e-8 is
    # the largest seen on 45,000 gaussian values)
    err = max_abs(dest, want)
    assert err < 2e-7, err


def test_silu():
    src = _gaussian_src(479)
    dest = _forward(tt.silu, src)
    x = f64(src)
    want = x / (1 + np.exp(-x))
    # dlib's 1e-6: |silu(x)| < 4 here, within a few U*4 = 2.4e-7 each
    err = max_abs(dest, want)
    assert err < 1e-6, err
