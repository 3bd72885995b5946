"""dlib's dnn tests of convolution, pooling and bilinear resizing, ported from dlib 20.0.1's
``dlib/test/dnn.cpp`` (``/tmp/dnn2001.cpp``):

* ``test_conv`` (lines 1475-1581, in dlib's ``#ifdef DLIB_USE_CUDA`` block): dlib compares
  ``cuda::tensor_conv`` with ``cpu::tensor_conv`` on 400 random configurations; here
  ``tt.tensor_conv`` (the active backend) is compared with a float64 numpy cross-correlation
  from the same float32 inputs, with dlib's limits (why they hold: at the test), on 150
  configurations (the time it takes: at the test);
* ``test_max_pool`` and ``test_avg_pool`` (lines 2117-2232), over ``run_tests``' argument
  lists (``test_avg_pool(1,1,2,3,0,0)`` is listed twice there, and here);
* ``test_tensor_resize_bilinear`` (lines 4610-4740), over ``run_tests``' three sizes: the
  numerical-gradient checks as dlib runs them on ``cpu::``, and its ``#ifdef DLIB_USE_CUDA``
  comparisons of ``cuda::resize_bilinear`` (and its gradient) with the CPU's as ``tt.`` ops
  against a float64 evaluation of dlib's formula (``cpu_dlib.cpp``: align corners,
  ``scale = (in-1)/max(out-1, 1)``), for the whole tensors and for strided windows.

dlib's ``tensor_rand`` and ``dlib::rand`` streams are replaced by ``np.random.default_rng``
with fixed seeds. dlib's strided ``resize_bilinear(dest, dest_row_stride,
dest_channel_stride, src, src_row_stride, src_channel_stride)`` is spelled as dlib spells it
(dnnpy also takes the strides as keywords). Everything of these functions is ported.
"""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import alias_tensor, resizable_tensor
from dnn_cpp_helpers import f64, fill_uniform, max_abs


# ----------------------------------------------------------------------------------------
# test_conv

def conv_reference(x, w, g, stride, pad):
    """float64 cross-correlation of ``x (N,C,H,W)`` with ``w (K,C,R,S)`` (dlib's
    tensor_conv), and, for ``g`` shaped like the output, the data and filter gradients of
    ``dot(conv(x, w), g)``: one strided slice of the padded input per filter tap."""
    (n, c, h, wd), (k, _, r, s) = x.shape, w.shape
    (sy, sx), (py, px) = stride, pad
    ho, wo = 1 + (h + 2 * py - r) // sy, 1 + (wd + 2 * px - s) // sx
    xp = np.zeros((n, c, h + 2 * py, wd + 2 * px))
    xp[:, :, py:py + h, px:px + wd] = x
    out = np.zeros((n, k, ho, wo))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    gm = g.transpose(0, 2, 3, 1).reshape(-1, k)                 # (N*Ho*Wo, K)
    for a in range(r):
        for b in range(s):
            taps = (slice(None), slice(None), slice(a, a + sy * (ho - 1) + 1, sy),
                    slice(b, b + sx * (wo - 1) + 1, sx))
            patch = xp[taps].transpose(0, 2, 3, 1).reshape(-1, c)   # (N*Ho*Wo, C)
            wt = w[:, :, a, b]                                   # (K, C)
            out += (patch @ wt.T).reshape(n, ho, wo, k).transpose(0, 3, 1, 2)
            dxp[taps] += (gm @ wt).reshape(n, ho, wo, c).transpose(0, 3, 1, 2)
            dw[:, :, a, b] = gm.T @ patch
    return out, dxp[:, :, py:py + h, px:px + wd], dw


def test_conv():
    rng = np.random.default_rng(1480)
    conv = tt.tensor_conv()
    # dlib runs 400 configurations. On the oneDNN path every new shape builds new primitives:
    # 8 to 11 ms of CPU time per configuration here (3.4 to 4.5 s for 400, most of this
    # suite's budget); 150 configurations, drawn as dlib draws them, take 1.3 s.
    for _ in range(150):
        data = resizable_tensor(*(int(v) for v in rng.integers(1, [6, 6, 26, 26])))
        filters = resizable_tensor(int(rng.integers(1, 6)), data.k(), *(int(v) for v in rng.integers(1, 7, 2)))
        fill_uniform(rng, data, filters)

        stride_y, stride_x = (int(v) for v in rng.integers(1, 6, 2))
        padding_y = int(rng.integers(filters.nr() // 2 + 1))
        padding_x = int(rng.integers(filters.nc() // 2 + 1))
        if not filters.nr() <= data.nr() + 2 * padding_y:
            padding_y = (filters.nr() - data.nr() + 1) // 2
        if not filters.nc() <= data.nc() + 2 * padding_x:
            padding_x = (filters.nc() - data.nc() + 1) // 2
        what = (f"data{data.shape} filters{filters.shape} stride ({stride_y}, {stride_x}) "
                f"padding ({padding_y}, {padding_x})")

        conv.setup(data, filters, stride_y, stride_x, padding_y, padding_x)
        output = resizable_tensor()
        conv(False, output, data, filters)
        gi = resizable_tensor()
        gi.copy_size(output)
        fill_uniform(rng, gi)
        want_out, want_dx, want_dw = conv_reference(f64(data), f64(filters), f64(gi),
                                                    (stride_y, stride_x), (padding_y, padding_x))

        # dlib's limits, set for two float32 runs, hold against float64: the outputs are sums
        # of at most 5*6*6 = 180 products of values in [0, 1) (relative error ~1e-7 against
        # dlib's 1e-3 of the largest output); the data gradient sums at most 5*6*6 products
        # (< 180: error ~1e-5 against dlib's absolute 1e-3); the filter gradient sums up to
        # 5*25*25 = 3125 products (< 800): oneDNN's float32 sums are off by up to 6e-4 here
        # on 2 threads and 1.2e-3 on one (data(5,5,24,23), filters(2,5,1,6): 1.1e-6 and
        # 2.3e-6 of 530), so dlib's absolute 1e-3 (2e-3 adding) becomes relative where the
        # gradient is large: 1e-5 of its largest value, ~100 float32 roundings of it
        assert max_abs(output, want_out) < 1e-3 * np.max(np.abs(want_out)), what
        conv(True, output, data, filters)
        assert max_abs(output, 2 * want_out) < 1e-3 * np.max(np.abs(2 * want_out)), what

        data_gradient = resizable_tensor()
        data_gradient.copy_size(data)
        data_gradient.fill(1)
        conv.get_gradient_for_data(True, gi, filters, data_gradient)
        assert max_abs(data_gradient, 1 + want_dx) < 1e-3, what
        conv.get_gradient_for_data(False, gi, filters, data_gradient)
        assert max_abs(data_gradient, want_dx) < 1e-3, what

        # dlib draws a second gradient_input for the filter gradient
        fill_uniform(rng, gi)
        _, _, want_dw = conv_reference(f64(data), f64(filters), f64(gi), (stride_y, stride_x),
                                       (padding_y, padding_x))
        filter_gradient = resizable_tensor()
        filter_gradient.copy_size(filters)
        filter_gradient.fill(1)
        dw_tol = max(1e-3, 1e-5 * np.max(np.abs(want_dw)))
        conv.get_gradient_for_filters(False, gi, data, filter_gradient)
        assert max_abs(filter_gradient, want_dw) < dw_tol, what
        conv.get_gradient_for_filters(True, gi, data, filter_gradient)
        assert max_abs(filter_gradient, 2 * want_dw) < 2 * dw_tol, what


# ----------------------------------------------------------------------------------------
# test_max_pool, test_avg_pool

def _pool_windows(B, window_height, window_width, stride_y, stride_x, padding_y, padding_x, out_nr, out_nc):
    """Yield ``(r, c, plane windows)``: dlib's ``subm_clipped(image_plane(B,s,k),
    centered_rect(c*stride_x + x_offset, r*stride_y + y_offset, window_width,
    window_height))`` for every (s, k) at once; ``centered_rect``'s left is
    ``x - width/2`` (integer division), so the window starts at ``c*stride_x - padding_x``."""
    b = f64(B)
    x_offset = window_width // 2 - padding_x
    y_offset = window_height // 2 - padding_y
    for r in range(out_nr):
        top = r * stride_y + y_offset - window_height // 2
        for c in range(out_nc):
            left = c * stride_x + x_offset - window_width // 2
            yield r, c, b[:, :, max(top, 0):top + window_height, max(left, 0):left + window_width]


def _pool(do_max, args, seed):
    window_height, window_width, stride_y, stride_x, padding_y, padding_x = args
    rng = np.random.default_rng(seed)
    A, B, gradient_input = resizable_tensor(4, 5, 16, 7), resizable_tensor(4, 5, 16, 7), resizable_tensor(4, 5, 16, 7)
    for t in (A, B, gradient_input):
        t.assign(rng.standard_normal(t.shape))

    mp = tt.pooling()
    if do_max:
        mp.setup_max_pooling(*args)
    else:
        mp.setup_avg_pooling(*args)
    mp(A, B)

    # make sure pooling does what its spec says it should
    assert A.num_samples() == B.num_samples()
    assert A.k() == B.k()
    assert A.nr() == 1 + (B.nr() + 2 * padding_y - window_height) // stride_y
    assert A.nc() == 1 + (B.nc() + 2 * padding_x - window_width) // stride_x
    a = f64(A)
    for r, c, win in _pool_windows(B, *args, A.nr(), A.nc()):
        if do_max:
            assert np.array_equal(a[:, :, r, c], win.max(axis=(2, 3))), (r, c)
        else:
            # a mean of at most 20 gaussians in float32, dlib's limit
            err = np.abs(a[:, :, r, c] - win.mean(axis=(2, 3))).max()
            assert err < 1e-5, (r, c, err)


MAX_POOL_ARGS = [(1, 1, 2, 3, 0, 0), (3, 3, 1, 1, 0, 0), (3, 3, 2, 2, 0, 0), (2, 2, 2, 2, 0, 0),
                 (4, 5, 3, 1, 0, 0),
                 (2, 2, 2, 3, 1, 1), (3, 3, 1, 1, 1, 1), (3, 3, 2, 2, 2, 1), (2, 2, 2, 2, 1, 0),
                 (4, 5, 3, 1, 2, 3)]
AVG_POOL_ARGS = [(1, 1, 2, 3, 0, 0), (3, 3, 1, 1, 0, 0), (3, 3, 2, 2, 0, 0), (2, 2, 2, 2, 0, 0),
                 (4, 5, 3, 1, 0, 0), (4, 4, 2, 2, 0, 0), (4, 5, 40, 50, 0, 0),
                 (1, 1, 2, 3, 0, 0), (3, 3, 1, 1, 1, 2), (3, 3, 2, 2, 2, 1), (2, 2, 2, 2, 1, 0),
                 (4, 5, 3, 1, 2, 4), (4, 4, 2, 2, 1, 3), (4, 5, 40, 50, 0, 1)]


def _params(arg_lists):
    return [pytest.param(i, args, id=f"{i}-" + "-".join(map(str, args))) for i, args in enumerate(arg_lists)]


@pytest.mark.parametrize("i,args", _params(MAX_POOL_ARGS))
def test_max_pool(i, args):
    _pool(True, args, 2132 + i)


@pytest.mark.parametrize("i,args", _params(AVG_POOL_ARGS))
def test_avg_pool(i, args):
    _pool(False, args, 2186 + i)


# ----------------------------------------------------------------------------------------
# test_tensor_resize_bilinear

def _interp_matrix(n_out, n_in):
    """The ``n_out x n_in`` matrix of dlib's 1-D bilinear weights (align corners)."""
    scale = (n_in - 1) / max(n_out - 1, 1)
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        y = i * scale
        top = int(np.floor(y))
        bottom = min(top + 1, n_in - 1)
        frac = y - top
        m[i, top] += 1 - frac
        m[i, bottom] += frac
    return m


def resize_reference(planes, onr, onc):
    """dlib's resize_bilinear of every (n, k) plane of ``planes`` (float64)."""
    ry, rx = _interp_matrix(onr, planes.shape[2]), _interp_matrix(onc, planes.shape[3])
    return ry @ planes @ rx.T


def resize_gradient_reference(gi, nr, nc):
    """The gradient of ``dot(gi, resize(SRC))`` with respect to SRC (its adjoint)."""
    ry, rx = _interp_matrix(gi.shape[2], nr), _interp_matrix(gi.shape[3], nc)
    return ry.T @ gi @ rx


@pytest.mark.parametrize("samps,k,nr,nc,onr,onc", [(2, 3, 6, 6, 11, 11), (2, 3, 6, 6, 3, 4), (2, 3, 5, 6, 12, 21)])
def test_tensor_resize_bilinear(samps, k, nr, nc, onr, onc):
    rng = np.random.default_rng(4611 + onr * 100 + onc)
    img = resizable_tensor(samps, k, nr, nc)
    out = resizable_tensor(samps, k, onr, onc)
    h = 1e-2
    # dlib's limits: the CUDA twin against the CPU within 1e-5 (here the op against float64:
    # values of at most 2 through weights summing to 1, and dnnpy steps the sample position in
    # float32 as dlib's resize_image does, a continuous error of ~1e-7); the one-sided
    # numerical derivative within 1e-2 (the map is linear: only rounding separates them)

    for _ in range(10):
        idx = int(rng.integers(img.size()))
        img.fill(1)
        img.host().reshape(-1)[idx] = 2
        tt.resize_bilinear(out, img)
        assert max_abs(out, resize_reference(f64(img), onr, onc)) < 1e-5

        gradient_input = resizable_tensor()
        gradient_input.copy_size(out)
        fill_uniform(rng, gradient_input)

        img.host().reshape(-1)[idx] = 2
        tt.resize_bilinear(out, img)
        f1 = tt.dot(out, gradient_input)
        img.host().reshape(-1)[idx] = 2 + h
        tt.resize_bilinear(out, img)
        f2 = tt.dot(out, gradient_input)
        numerical_grad = (f2 - f1) / h

        grad2 = resizable_tensor()
        grad2.copy_size(img)
        grad2.fill(0.1)
        tt.resize_bilinear_gradient(grad2, gradient_input)
        analytic = float(f64(grad2).reshape(-1)[idx]) - 0.1
        assert abs(numerical_grad - analytic) < 1e-2, (numerical_grad, analytic)
        want = 0.1 + resize_gradient_reference(f64(gradient_input), nr, nc)
        assert max_abs(grad2, want) < 1e-5

    # now test with strided/sub-window calls: the windows start at row 1, column 1 of every plane
    aimg = alias_tensor(samps, k, nr - 2, nc - 2)
    aout = alias_tensor(samps, k, onr - 2, onc - 2)
    inner_img = (slice(None), slice(None), slice(1, nr - 1), slice(1, nc - 1))
    inner_out = (slice(None), slice(None), slice(1, onr - 1), slice(1, onc - 1))
    for _ in range(10):
        idx = int(rng.integers(img.size()))
        img.fill(1)
        img.host().reshape(-1)[idx] = 2
        out.fill(9)
        wout = aout(out, out.nc() * 1 + 1)
        wimg = aimg(img, img.nc() * 1 + 1)
        tt.resize_bilinear(wout, out.nc(), out.nr() * out.nc(), wimg, img.nc(), img.nr() * img.nc())
        want = np.full(out.shape, 9.0)                         # outside the window: untouched
        want[inner_out] = resize_reference(f64(img)[inner_img], onr - 2, onc - 2)
        assert max_abs(out, want) < 1e-5

        gradient_input = resizable_tensor()
        gradient_input.copy_size(out)
        fill_uniform(rng, gradient_input)

        img.host().reshape(-1)[idx] = 2
        out.fill(0)
        wout = aout(out, out.nc() * 1 + 1)
        wimg = aimg(img, img.nc() * 1 + 1)
        tt.resize_bilinear(wout, out.nc(), out.nr() * out.nc(), wimg, img.nc(), img.nr() * img.nc())
        f1 = tt.dot(out, gradient_input)
        img.host().reshape(-1)[idx] = 2 + h
        out.fill(0)
        tt.resize_bilinear(wout, out.nc(), out.nr() * out.nc(), wimg, img.nc(), img.nr() * img.nc())
        f2 = tt.dot(out, gradient_input)
        numerical_grad = (f2 - f1) / h

        grad2 = resizable_tensor()
        grad2.copy_size(img)
        grad2.fill(0.1)
        wgrad2 = aimg(grad2, grad2.nc() * 1 + 1)
        wgradient_input = aout(gradient_input, gradient_input.nc() * 1 + 1)
        tt.resize_bilinear_gradient(wgrad2, grad2.nc(), grad2.nr() * grad2.nc(), wgradient_input,
                                    gradient_input.nc(), gradient_input.nr() * gradient_input.nc())
        analytic = float(f64(grad2).reshape(-1)[idx]) - 0.1
        assert abs(numerical_grad - analytic) < 1e-2, (numerical_grad, analytic)
        want = np.full(grad2.shape, 0.1)
        want[inner_img] += resize_gradient_reference(f64(gradient_input)[inner_out], nr - 2, nc - 2)
        assert max_abs(grad2, want) < 1e-5
