"""CPU twin of convolution: im2col over strided views plus BLAS GEMMs.

Layouts: data ``(N, C, H, W)``, filters ``(K, C, R, S)`` (OIHW), output ``(N, K, Ho, Wo)``,
cross-correlation as in dlib and cuDNN.

Stride 1 is the core. The zero-padded input is laid out channel-major, ``(C, N*Hp*Wp)``,
and the convolution computed in padded coordinates: row ``(c, i, j)`` of the column matrix
is then channel c shifted by ``i*Wp + j``, one contiguous slice, so im2col is a handful of
long memcpy-like copies and the GEMM is one large ``(K, C*R*S) @ (C*R*S, L)`` over many
samples at once. The valid ``Ho x Wo`` window of each sample is cut out of the result
afterwards (a few percent of extra FLOPs on padding positions).

A stride ``(sy, sx)`` convolution is the sum of ``sy*sx`` stride-1 ones: phase
``(ry, rx)`` pairs the input rows ``ry, ry+sy, ...`` and columns ``rx, rx+sx, ...`` of the
padded input with the taps ``W[:, :, ry::sy, rx::sx]``. The same split gives the filter
gradient (each phase fills its taps) and the data gradient (each phase of the padded data
gradient is a stride-1 full convolution of dy with its flipped taps). So every pass runs
on the stride-1 machinery, with no strided im2col and no col2im scatter.

Samples go in chunks whose column buffer stays under ``IM2COL_BYTES``, so the copy lands
in cache right before the GEMM reads it and memory stays bounded (the loop is over
chunks, not samples). Scratch buffers are reused per thread (they grow to the largest
layer seen): on some machines faulting fresh pages in costs as much as the arithmetic.

Small problems (a column matrix of at most ``SMALL_COLUMNS`` elements: ``test_layer``'s
fake subnets, tiny feature maps) skip that machinery, whose fixed cost is a few dozen numpy
calls: the padded input seen through one ``(N, C, Ho, Wo, R, S)`` window view and one
``tensordot`` per pass (the data gradient scatters its columns back with one add per filter
tap). Measured, forward + both gradients: 116 us against 297 us for a (3, 3, 8, 8) input and
4x4 stride-2 filters (1,296 column elements); the two paths cross near 10,000-15,000.
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided
from .._twins import twin_ops
from . import onednn
from ._common import scratch

__all__ = twin_ops("conv")

IM2COL_BYTES = 8 << 20
SMALL_COLUMNS = 1 << 13

def _buffer(name, shape, dtype):
    """A reused per-thread scratch array (contents undefined)."""
    return scratch("conv_" + name, shape, dtype)


def _phases(w, sy, sx):
    """``[(ry, rx, taps)]``: the stride phases that have at least one filter tap (phase
    ``(0, 0)`` first: it has the most taps)."""
    r, s = w.shape[2:]
    return [(ry, rx, w[:, :, ry::sy, rx::sx]) for ry in range(min(sy, r)) for rx in range(min(sx, s))]


def _flat_input(x, py, px, sy, sx, phases):
    """The stride phases of ``x (N,C,H,W)`` zero-padded by ``(py, px)``, in the reused
    buffer ``(P, C, N, Hs, Ws)``: element ``[p, c, n, j, i]`` is padded pixel
    ``(ry + j*sy, rx + i*sx)`` of phase p. All phases share one geometry, so an output
    position has the same flat index in each of them."""
    n, c, h, w = x.shape
    hs, ws = len(range(0, h + 2 * py, sy)), len(range(0, w + 2 * px, sx))
    xf = _buffer("flat_in", (len(phases), c, n, hs, ws), x.dtype)
    for p, (ry, rx, _) in enumerate(phases):
        j0, i0 = max(0, -(-(py - ry) // sy)), max(0, -(-(px - rx) // sx))  # first row/col inside x
        rows = x[:, :, ry + j0 * sy - py::sy, rx + i0 * sx - px::sx]
        j1, i1 = j0 + rows.shape[2], i0 + rows.shape[3]
        f = xf[p]
        f[:, :, :j0] = 0
        f[:, :, j1:] = 0
        f[:, :, j0:j1, :i0] = 0
        f[:, :, j0:j1, i1:] = 0
        f[:, :, j0:j1, i0:i1] = rows.transpose(1, 0, 2, 3)
    return xf


def _chunks(xf, phases):
    """Yield ``(first sample, samples, length, cols)``: ``cols`` holds, for a chunk of
    samples and every phase p, tap (t, u) and channel c, the row ``phase p of channel c
    shifted by t*Ws + u``: the ``(C*R*S, length)`` column matrix in padded coordinates."""
    _, c, n, hs, ws = xf.shape
    plane = hs * ws
    crs = sum(c * t.shape[2] * t.shape[3] for _, _, t in phases)
    r0, s0 = phases[0][2].shape[2:]
    flat = xf.reshape(len(phases), c, n * plane)
    size = xf.itemsize
    step = max(1, min(n, IM2COL_BYTES // max(1, crs * plane * size)))
    for i in range(0, n, step):
        m = min(step, n - i)
        length = m * plane - (r0 - 1) * ws - (s0 - 1)  # covers the last valid output of the chunk
        cols = _buffer("cols", (crs, length), xf.dtype)
        row = 0
        for p, (_, _, taps) in enumerate(phases):
            t, u = taps.shape[2:]
            view = as_strided(flat[p, :, i * plane:], shape=(c, t, u, length),
                              strides=(flat.strides[1], ws * size, size, size), writeable=False)
            np.copyto(cols[row:row + c * t * u].reshape(c, t, u, length), view)
            row += c * t * u
        yield i, m, length, cols


def _stacked(phases):
    """The filters as one ``(K, C*R*S)`` matrix, rows ordered like ``_chunks``' columns."""
    k = phases[0][2].shape[0]
    return np.concatenate([t.reshape(k, -1) for _, _, t in phases], axis=1)


def _correlate(out, add_to_output, x, w, sy, sx, py, px):
    """``out (N,K,Ho,Wo) (+)= correlate(x (N,C,H,W), w (K,C,R,S))`` with strides and zero
    padding: one GEMM per chunk over all stride phases."""
    phases = _phases(w, sy, sx)
    xf = _flat_input(x, py, px, sy, sx, phases)
    _, _, n, hs, ws = xf.shape
    k = w.shape[0]
    ho, wo = out.shape[2], out.shape[3]
    wm = _stacked(phases)
    for i, m, length, cols in _chunks(xf, phases):
        y = _buffer("flat_out", (k, m * hs * ws), out.dtype)
        np.matmul(wm, cols, out=y[:, :length])
        valid = y.reshape(k, m, hs, ws)[:, :, :ho, :wo].transpose(1, 0, 2, 3)
        if add_to_output:
            out[i:i + m] += valid
        else:
            out[i:i + m] = valid


def _is_small(x_shape, w_shape, out_hw):
    n, c = x_shape[:2]
    return n * c * out_hw[0] * out_hw[1] * w_shape[2] * w_shape[3] <= SMALL_COLUMNS


def _windows(x, r, s, sy, sx, py, px, ho, wo):
    """The zero-padded ``x (N,C,H,W)`` as a read-only ``(N, C, Ho, Wo, R, S)`` view of its
    filter windows."""
    if py or px:
        x = np.pad(x, ((0, 0), (0, 0), (py, py), (px, px)))
    n, c = x.shape[:2]
    st = x.strides
    return as_strided(x, (n, c, ho, wo, r, s), (st[0], st[1], st[2] * sy, st[3] * sx, st[2], st[3]),
                      writeable=False)


def _store(dest, add_to_output, values):
    if add_to_output:
        dest += values
    else:
        dest[...] = values


def conv_forward(add_to_output, output, data, filters, stride_y, stride_x, padding_y, padding_x,
                 biases=None, use_relu=False):
    """``output (+)= conv``; then ``+= biases`` per channel (any K-element tensor) when
    given, then ReLU in place when ``use_relu``."""
    if onednn.conv_forward(add_to_output, output, data, filters, stride_y, stride_x, padding_y,
                           padding_x, biases, use_relu):
        return
    x, w = data.host_read(), filters.host_read()
    out = output.host() if add_to_output else output.host_write_only()
    if _is_small(x.shape, w.shape, out.shape[2:]):
        win = _windows(x, *w.shape[2:], stride_y, stride_x, padding_y, padding_x, *out.shape[2:])
        _store(out, add_to_output, np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2))
    else:
        _correlate(out, add_to_output, x, w, stride_y, stride_x, padding_y, padding_x)
    if biases is not None:
        out += biases.host_read().reshape(1, -1, 1, 1)
    if use_relu:
        np.maximum(out, 0, out=out)


def _flipped(taps):
    """Taps as the filters of the data gradient: flipped, input and output swapped."""
    return np.ascontiguousarray(taps[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))


def conv_backward_data(add_to_output, gradient_input, filters, data_gradient,
                       stride_y, stride_x, padding_y, padding_x):
    if onednn.conv_backward_data(add_to_output, gradient_input, filters, data_gradient,
                                 stride_y, stride_x, padding_y, padding_x):
        return
    gi = gradient_input.host_read()
    w = filters.host_read()
    dx = data_gradient.host() if add_to_output else data_gradient.host_write_only()
    r, s = w.shape[2:]
    if _is_small(dx.shape, w.shape, gi.shape[2:]):
        # the forward's adjoint: each window's columns, added back where the window read
        n, c, h, wd = dx.shape
        ho, wo = gi.shape[2:]
        cols = np.tensordot(gi, w, axes=([1], [0]))          # (N, Ho, Wo, C, R, S)
        dxp = np.zeros((n, c, h + 2 * padding_y, wd + 2 * padding_x), dx.dtype)
        for t in range(r):
            for u in range(s):
                dxp[:, :, t:t + stride_y * (ho - 1) + 1:stride_y,
                    u:u + stride_x * (wo - 1) + 1:stride_x] += cols[..., t, u].transpose(0, 3, 1, 2)
        _store(dx, add_to_output, dxp[:, :, padding_y:padding_y + h, padding_x:padding_x + wd])
        return
    if dx.shape[1] < gi.shape[1]:
        _scatter_columns(dx, add_to_output, gi, w, stride_y, stride_x, padding_y, padding_x)
        return
    if stride_y == 1 and stride_x == 1:
        # dx = correlate(pad(dy, R-1-py, S-1-px), flipped W with in/out channels swapped)
        _correlate(dx, add_to_output, gi, _flipped(w), 1, 1, r - 1 - padding_y, s - 1 - padding_x)
        return
    # Phase (ry, rx) of the padded gradient is the full stride-1 convolution of dy with
    # the phase's taps: dy padded by taps-1, correlated with the flipped taps. Phases with
    # the same number of taps read the same padded dy, so they share one GEMM.
    n, c, h, wd = dx.shape
    ho, wo = gi.shape[2], gi.shape[3]
    dxp = _buffer("padded_grad", (n, c, h + 2 * padding_y, wd + 2 * padding_x), dx.dtype)
    dxp.fill(0)  # phases without taps (stride > filter) and rows past the last output stay 0
    groups = {}
    for ry, rx, taps in _phases(w, stride_y, stride_x):
        groups.setdefault(taps.shape[2:], []).append((ry, rx, taps))
    for (t, u), members in groups.items():
        stacked = np.concatenate([_flipped(taps) for _, _, taps in members])
        full = _buffer("phase", (n, len(members) * c, ho + t - 1, wo + u - 1), dx.dtype)
        _correlate(full, False, gi, stacked, 1, 1, t - 1, u - 1)
        for p, (ry, rx, _) in enumerate(members):
            target = dxp[:, :, ry::stride_y, rx::stride_x]
            rows, cols = min(full.shape[2], target.shape[2]), min(full.shape[3], target.shape[3])
            target[:, :, :rows, :cols] = full[:, p * c:(p + 1) * c, :rows, :cols]
    inner = dxp[:, :, padding_y:padding_y + h, padding_x:padding_x + wd]
    if add_to_output:
        dx += inner
    else:
        dx[...] = inner


def _scatter_columns(dx, add_to_output, gi, w, sy, sx, py, px):
    """The data gradient as the forward's adjoint, for fewer data channels C than output
    channels K: one GEMM gives every window's columns ``(R*S*C, samples*Ho*Wo)``, and each
    filter tap's ``(C, samples, Ho, Wo)`` block is added back where that tap read. It moves
    C*R*S values per output position where the im2col of dy moves K*R*S (LeNet's first
    layer: 1 against 6 channels), and handles any stride directly. Samples go in chunks of
    at most ``IM2COL_BYTES`` of columns."""
    n, c, h, wd = dx.shape
    k, _, r, s = w.shape
    ho, wo = gi.shape[2:]
    wt = np.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(r * s * c, k)
    dxp = scratch("scatter_grad", (c, n, h + 2 * py, wd + 2 * px), dx.dtype)
    dxp.fill(0)
    step = max(1, min(n, IM2COL_BYTES // max(1, r * s * c * ho * wo * dx.itemsize)))
    for i in range(0, n, step):
        m = min(step, n - i)
        g = scratch("scatter_gi", (k, m, ho, wo), gi.dtype)
        np.copyto(g, gi[i:i + m].transpose(1, 0, 2, 3))
        cols = np.matmul(wt, g.reshape(k, -1), out=scratch("scatter_cols", (r * s * c, m * ho * wo),
                                                             dx.dtype))
        cols = cols.reshape(r, s, c, m, ho, wo)
        for t in range(r):
            for u in range(s):
                dxp[:, i:i + m, t:t + sy * (ho - 1) + 1:sy, u:u + sx * (wo - 1) + 1:sx] += cols[t, u]
    inner = dxp[:, :, py:py + h, px:px + wd].transpose(1, 0, 2, 3)
    _store(dx, add_to_output, inner)


def conv_backward_filters(add_to_output, gradient_input, data, filters_gradient,
                          stride_y, stride_x, padding_y, padding_x, bias_gradient=None):
    """``filters_gradient (+)=`` the filter gradient; with ``bias_gradient`` (K elements)
    also ASSIGNS it the sum of gradient_input over samples, rows and columns."""
    if onednn.conv_backward_filters(add_to_output, gradient_input, data, filters_gradient,
                                    stride_y, stride_x, padding_y, padding_x, bias_gradient):
        return
    gi = gradient_input.host_read()
    x = data.host_read()
    dw = filters_gradient.host() if add_to_output else filters_gradient.host_write_only()
    k = dw.shape[0]
    if bias_gradient is not None:
        # numpy's pairwise summation per channel, like assign_conv_bias_gradient
        bias_gradient.host_write_only()[...] = gi.reshape(gi.shape[0], k, -1).sum(axis=(0, 2)) \
            .reshape(bias_gradient.shape)
    if _is_small(x.shape, dw.shape, gi.shape[2:]):
        win = _windows(x, *dw.shape[2:], stride_y, stride_x, padding_y, padding_x, *gi.shape[2:])
        _store(dw, add_to_output, np.tensordot(gi, win, axes=([0, 2, 3], [0, 2, 3])))
        return
    phases = _phases(dw, stride_y, stride_x)  # they partition the taps
    xf = _flat_input(x, padding_y, padding_x, stride_y, stride_x, phases)
    _, _, n, hs, ws = xf.shape
    ho, wo = gi.shape[2], gi.shape[3]
    acc = None
    for i, m, length, cols in _chunks(xf, phases):
        # the output gradient in padded coordinates, zero off the valid window
        g = _buffer("flat_grad", (k, m, hs, ws), gi.dtype)
        g[:, :, :ho, :wo] = gi[i:i + m].transpose(1, 0, 2, 3)
        g[:, :, ho:] = 0
        g[:, :, :ho, wo:] = 0
        part = cols @ g.reshape(k, -1)[:, :length].T  # (C*R*S, K): the faster GEMM orientation
        acc = part if acc is None else acc + part
    row = 0
    for ry, rx, taps in phases:
        grad = acc[row:row + taps[0].size].T.reshape(taps.shape)
        row += taps[0].size
        if add_to_output:
            dw[:, :, ry::stride_y, rx::stride_x] += grad
        else:
            dw[:, :, ry::stride_y, rx::stride_x] = grad
