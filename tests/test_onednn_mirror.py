"""Layout mirrors (``tensor_tools/cpu/onednn/layout.py``): a oneDNN op may leave a tensor's
values in a blocked layout, and every way of reading the tensor still sees them.

Numbers are compared with numpy's twin to the oneDNN convolution's float32 tolerance
(tests/test_onednn_conv.py: 1e-5 of the largest value); the mirror bookkeeping itself
(reorders in and out) is exact, so "equal" below means bit-equal.
"""

import copy
import pickle

import numpy as np
import pytest

from dnnpy.tensor import alias_tensor, read_only_view, resizable_tensor
from dnnpy.tensor_tools.cpu import conv as cpu_conv
from dnnpy.tensor_tools.cpu import onednn
from dnnpy.tensor_tools.cpu.onednn import conv as oc

if not onednn.available():
    pytest.skip(f"oneDNN is not usable here: {onednn.info()['reason']}", allow_module_level=True)

TOL = 1e-5


@pytest.fixture(autouse=True)
def blocked(monkeypatch):
    monkeypatch.setenv(oc.LAYOUT_ENV, "any")


def _tensor(a):
    t = resizable_tensor(*a.shape)
    t.host()[...] = a
    return t


def _conv(x, f, n_out):
    """A 3x3 'same' convolution of ``x`` by oneDNN into a new tensor."""
    y = resizable_tensor(x.num_samples(), n_out, x.nr(), x.nc())
    assert oc.conv_forward(False, y, x, f, 1, 1, 1, 1)
    return y


def _reference(x, w):
    y = resizable_tensor(x.shape[0], w.shape[0], x.shape[2], x.shape[3])
    with onednn.force_numpy():
        cpu_conv.conv_forward(False, y, _tensor(x), _tensor(w), 1, 1, 1, 1)
    return y.host_read().copy()


def _data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_an_output_stays_blocked_until_read():
    rng = np.random.default_rng(0)
    x, w = _data(rng, 2, 16, 6, 7), _data(rng, 16, 16, 3, 3)
    y = _conv(_tensor(x), _tensor(w), 16)
    assert y.layout_mirror() is not None and not y.is_host_current()
    got = y.host_read()
    assert y.is_host_current() and y.layout_mirror() is not None     # both sides current
    ref = _reference(x, w)
    assert np.abs(got - ref).max() <= TOL * np.abs(ref).max()


def test_a_chain_reads_the_mirror_and_equals_the_host_route():
    rng = np.random.default_rng(1)
    x, w1, w2 = _data(rng, 2, 16, 8, 8), _data(rng, 32, 16, 3, 3), _data(rng, 16, 32, 3, 3)
    y = _conv(_tensor(x), _tensor(w1), 32)
    mirror = y.layout_mirror()
    z = _conv(y, _tensor(w2), 16)
    assert y.layout_mirror() is mirror and not y.is_host_current()   # read without a reorder out
    # the same through NCHW: y read to the host, copied, convolved again
    y_host = _tensor(y.host_read().copy())
    z_host = _conv(y_host, _tensor(w2), 16)
    assert np.array_equal(z.host_read(), z_host.host_read())


def test_a_host_write_makes_the_mirror_stale():
    rng = np.random.default_rng(2)
    x, w = _data(rng, 1, 16, 5, 5), _data(rng, 16, 16, 3, 3)
    f = _tensor(w)
    y = _conv(_tensor(x), f, 16)
    y.host()[...] = 1.0                    # a write through numpy
    assert y.layout_mirror() is None
    z = _conv(y, f, 16)
    ref = _reference(np.ones_like(x), w)
    assert np.abs(z.host_read() - ref).max() <= TOL * np.abs(ref).max()
    y.host_write_only()[...] = 2.0
    assert np.array_equal(y.host_read(), np.full(x.shape, 2.0, np.float32))


def test_views_copies_and_resizes_see_the_values():
    rng = np.random.default_rng(3)
    x, w = _tensor(_data(rng, 2, 16, 4, 4)), _tensor(_data(rng, 16, 16, 3, 3))
    want = _conv(x, w, 16).host_read().copy()
    readers = {
        "deepcopy": lambda y: copy.deepcopy(y).host_read(),
        "copy": lambda y: y.copy().host_read(),
        "pickle": lambda y: pickle.loads(pickle.dumps(y)).host_read(),
        "read_only_view": lambda y: read_only_view(y, "y").host_read(),
        "numpy": lambda y: np.asarray(y),
        "a window": lambda y: np.stack([alias_tensor(16 * 4 * 4)(y, i * 16 * 4 * 4).host_read()
                                        .reshape(16, 4, 4) for i in range(2)]),
        "set_size": lambda y: y.set_size(2, 16, 16, 1).host_read().reshape(want.shape),
    }
    for name, read in readers.items():
        y = _conv(x, w, 16)
        assert not y.is_host_current()
        assert np.array_equal(read(y), want), name


def test_a_mirror_write_is_a_write():
    rng = np.random.default_rng(4)
    x, w = _tensor(_data(rng, 1, 16, 4, 4)), _tensor(_data(rng, 16, 16, 3, 3))
    y = _conv(x, w, 16)
    view = read_only_view(y, "y")
    assert oc.conv_forward(False, y, x, w, 1, 1, 1, 1)       # writes the mirror alone
    assert not view.is_current()
    with pytest.raises(TypeError, match="read-only"):
        view.set_layout_mirror(y.layout_mirror(), host_current=False)


def test_a_window_has_no_mirror():
    rng = np.random.default_rng(5)
    big = resizable_tensor(2 * 16 * 4 * 4 + 10)
    y = alias_tensor(2, 16, 4, 4)(big, 10)
    assert oc.conv_forward(False, y, _tensor(_data(rng, 2, 16, 4, 4)),
                           _tensor(_data(rng, 16, 16, 3, 3)), 1, 1, 1, 1)
    assert y.layout_mirror() is None and y.is_host_current()
    with pytest.raises(ValueError, match="does not cover its storage"):
        y.set_layout_mirror(object(), host_current=True)


# -- ops that run on the blocked values ----------------------------------------------------
# Each is compared with the same op on NCHW copies of its inputs (the host route). ReLU,
# its gradient, sums and copies are element-wise: bit-equal. Batch norm's statistics are
# summed in another order (float32 rows of one pixel row, then float64, against rows of a
# whole plane): 1e-6 of the largest value for the outputs, 1e-6 relative for the
# statistics, and its gradient is oneDNN's jit kernel against its NCHW kernel: 1e-5.

import dnnpy.tensor_tools as tt  # noqa: E402


def _blocked_pair(rng, shape=(2, 32, 5, 6)):
    """A tensor whose values are blocked (a convolution's output) and an NCHW copy."""
    x = _tensor(_data(rng, shape[0], shape[1], shape[2], shape[3]))
    w = _tensor(_data(rng, shape[1], shape[1], 3, 3) / 10)
    y = _conv(x, w, shape[1])
    assert y.layout_mirror() is not None and y.layout_mirror().lanes()
    return y, _tensor(y.host_read().copy())


def _still_blocked(y):
    got = y.layout_mirror()
    assert got is not None and not y.is_host_current()
    return y.host_read()


def test_relu_add_and_copies_run_blocked_and_equal():
    rng = np.random.default_rng(6)
    a, a_host = _blocked_pair(rng)
    b, b_host = _blocked_pair(rng)
    out, out_host = resizable_tensor(*a.shape), resizable_tensor(*a.shape)
    tt.relu(out, a)
    tt.relu(out_host, a_host)
    assert np.array_equal(_still_blocked(out), out_host.host_read())
    tt.add(out, a, b)                                   # add_prev's forward
    tt.add(out_host, a_host, b_host)
    assert np.array_equal(_still_blocked(out), out_host.host_read())
    tt.add(1, out, 2, b)                                # out += 2 b, out blocked
    tt.add(1, out_host, 2, b_host)
    assert np.array_equal(_still_blocked(out), out_host.host_read())
    plain = _tensor(np.ones(a.shape, np.float32))       # an NCHW source joins the layout
    tt.add(out, plain, a)
    tt.add(out_host, plain, a_host)
    assert np.array_equal(_still_blocked(out), out_host.host_read())
    tt.add(0, out, 1, a)                                # a copy
    assert np.array_equal(_still_blocked(out), a_host.host_read())


def test_relu_gradient_runs_blocked_and_equals():
    rng = np.random.default_rng(7)
    y, y_host = _blocked_pair(rng)
    for add_to in (False, True):
        gi, gi_host = _blocked_pair(rng)
        g, g_host = _blocked_pair(rng)
        tt.relu_gradient(g, y, gi, add_to)
        tt.relu_gradient(g_host, y_host, gi_host, add_to)
        assert np.array_equal(_still_blocked(g), g_host.host_read())
    tt.relu_gradient(gi, y, gi)                         # in place
    tt.relu_gradient(gi_host, y_host, gi_host)
    assert np.array_equal(_still_blocked(gi), gi_host.host_read())


def _bn(x, gamma, beta, rm, rv, f):
    dest, means, invstds = resizable_tensor(), resizable_tensor(), resizable_tensor()
    tt.batch_normalize_conv(1e-5, dest, means, invstds, f, rm, rv, x, gamma, beta)
    return dest, means, invstds


def test_batch_norm_runs_blocked_and_equals_nchw():
    rng = np.random.default_rng(8)
    x, x_host = _blocked_pair(rng, (4, 32, 6, 7))
    x.host()[...] += 10                                 # a mean far from 0; back to blocked:
    x = _tensor(x.host_read().copy())
    w = _tensor(np.eye(32, dtype=np.float32).reshape(32, 32, 1, 1))
    y = resizable_tensor(*x.shape)
    assert oc.conv_forward(False, y, x, w, 1, 1, 0, 0)  # an identity convolution: blocked x
    x_host = _tensor(y.host_read().copy())
    gamma, beta = _tensor(_data(rng, 1, 32, 1, 1)), _tensor(_data(rng, 1, 32, 1, 1))
    rm, rv = _data(rng, 1, 32, 1, 1), np.abs(_data(rng, 1, 32, 1, 1))
    stats = [_tensor(rm), _tensor(rv), _tensor(rm), _tensor(rv)]    # running statistics
    got = _bn(y, gamma, beta, stats[0], stats[1], 0.1)
    want = _bn(x_host, gamma, beta, stats[2], stats[3], 0.1)
    out = _still_blocked(got[0])
    ref = want[0].host_read()
    assert np.abs(out - ref).max() <= 1e-6 * np.abs(ref).max()
    for a, b in zip(got[1:] + (stats[0], stats[1]), want[1:] + (stats[2], stats[3])):
        np.testing.assert_allclose(a.host_read(), b.host_read(), rtol=1e-6)

    # the gradient: data gradient blocked (assigned, then added to), gamma and beta's
    gi, gi_host = _blocked_pair(rng, x.shape)
    for add_to in (False, True):
        grads = [resizable_tensor(1, 32, 1, 1) for _ in range(4)]
        dx, dx_host = _blocked_pair(rng, x.shape)
        tt.batch_normalize_conv_gradient(1e-5, gi, got[1], got[2], y, gamma, dx, grads[0],
                                         grads[1], add_to)
        tt.batch_normalize_conv_gradient(1e-5, gi_host, got[1], got[2], x_host, gamma, dx_host,
                                         grads[2], grads[3], add_to)
        g, ref = _still_blocked(dx), dx_host.host_read()
        assert np.abs(g - ref).max() <= 1e-5 * np.abs(ref).max()
        for a, b in zip(grads[:2], grads[2:]):
            np.testing.assert_allclose(a.host_read(), b.host_read(), rtol=1e-5, atol=1e-5)


def test_force_numpy_runs_on_nchw():
    rng = np.random.default_rng(9)
    a, a_host = _blocked_pair(rng)
    out = resizable_tensor(*a.shape)
    with onednn.force_numpy():
        tt.relu(out, a)
    assert out.layout_mirror() is None and out.is_host_current()
    assert np.array_equal(out.host_read(), np.maximum(a_host.host_read(), 0))


def test_affine_transform_runs_blocked_and_equals():
    # dlib's inference nets' affine layer: a product then a sum, each rounded, as numpy's
    rng = np.random.default_rng(10)
    x, x_host = _blocked_pair(rng)
    a, b = _tensor(_data(rng, 1, 32, 1, 1)), _tensor(_data(rng, 1, 32, 1, 1))
    out, out_host = resizable_tensor(*x.shape), resizable_tensor(*x.shape)
    tt.affine_transform_conv(out, x, a, b)
    tt.affine_transform_conv(out_host, x_host, a, b)
    assert np.array_equal(_still_blocked(out), out_host.host_read())
    tt.affine_transform_conv(x, x, a, b)                # in place
    assert np.array_equal(_still_blocked(x), out_host.host_read())


def test_filter_copies_follow_every_write():
    # filters are windows into the parameters (no mirror): their blocked copies are kept
    # per tensor and write, so layers of one geometry and a solver's updates stay right
    rng = np.random.default_rng(11)
    x = _data(rng, 1, 16, 5, 5)
    params = [resizable_tensor(16 * 16 * 9 + 16) for _ in range(3)]
    filters = [alias_tensor(16, 16, 3, 3)(p) for p in params]
    ws = [_data(rng, 16, 16, 3, 3) for _ in filters]
    for f, w in zip(filters, ws):
        f.host()[...] = w
    for _ in range(2):                          # alternating tensors of one geometry
        for f, w in zip(filters, ws):
            ref = _reference(x, w)
            got = _conv(_tensor(x), f, 16).host_read()
            assert np.abs(got - ref).max() <= TOL * np.abs(ref).max()
    params[0].host()[...] *= 2                  # an update through the parameters
    ref = _reference(x, 2 * ws[0])
    got = _conv(_tensor(x), filters[0], 16).host_read()
    assert np.abs(got - ref).max() <= TOL * np.abs(ref).max()


@pytest.mark.parametrize("do_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("window", [(2, 2, 2, 2, 0, 0), (3, 3, 2, 2, 1, 1)])
def test_pooling_runs_blocked_and_equals(window, do_max):
    # the same oneDNN arithmetic in another layout: max exact; averages within 1e-6
    from dnnpy.tensor_tools import cpu
    rng = np.random.default_rng(12)
    x, x_host = _blocked_pair(rng, (2, 32, 7, 9))
    n, k, h, w = x.shape
    wh, ww, sy, sx, py, px = window
    out_shape = (n, k, 1 + (h + 2 * py - wh) // sy, 1 + (w + 2 * px - ww) // sx)
    gi = _data(rng, *out_shape)
    results = []
    for src in (x, x_host):
        dest, state = resizable_tensor(*out_shape), {}
        cpu.pooling_forward(dest, src, do_max, *window, state=state)
        assert (dest.layout_mirror() is not None) == (src is x)
        grads = [resizable_tensor(*x.shape), _tensor(np.ones(x.shape, np.float32))]
        cpu.pooling_backward(_tensor(gi), dest, src, grads[0], do_max, *window, add_to=False,
                             state=state)
        cpu.pooling_backward(_tensor(gi), dest, src, grads[1], do_max, *window, state=state)
        assert (grads[0].layout_mirror() is not None) == (src is x)
        results.append([t.host_read() for t in [dest] + grads])
    for got, want in zip(*results):
        if do_max:
            assert np.array_equal(got, want)
        else:
            assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def test_max_pooling_a_nan_runs_on_numpy():
    # oneDNN's max skips NaN: blocked values holding one go to numpy, which keeps it
    from dnnpy.tensor_tools import cpu
    rng = np.random.default_rng(13)
    a = _data(rng, 1, 16, 4, 4)
    a[0, 3, 0, 1] = np.nan
    x = resizable_tensor(1, 16, 4, 4)           # blocked by an identity convolution
    assert oc.conv_forward(False, x, _tensor(a), _tensor(np.eye(16, dtype=np.float32).reshape(
        16, 16, 1, 1)), 1, 1, 0, 0)
    assert x.layout_mirror() is not None
    dest = resizable_tensor(1, 16, 2, 2)
    cpu.pooling_forward(dest, x, True, 2, 2, 2, 2, 0, 0, state={})
    assert np.isnan(dest.host_read()[:, :, 0, 0]).all()    # 0 * NaN: every channel there
    assert not np.isnan(dest.host_read()[:, :, 1]).any()


# -- review cases: refused writes, views of another shape, pinned storages, old pickles ------

def test_a_read_only_output_is_refused_before_anything_is_written():
    rng = np.random.default_rng(14)
    x, w = _tensor(_data(rng, 1, 16, 4, 4)), _tensor(_data(rng, 16, 16, 3, 3))
    want = _conv(x, w, 16).host_read().copy()
    ops = (lambda v, y: tt.relu(v, v), lambda v, y: tt.add(v, y, y),
           lambda v, y: oc.conv_forward(False, v, y, w, 1, 1, 1, 1))
    for op in ops:
        y = _conv(x, w, 16)                             # its values in the mirror alone
        view = read_only_view(y, "the output")
        with pytest.raises(TypeError, match="read-only"):
            op(view, y)
        assert view.is_current()
        assert np.array_equal(y.host_read(), want)


def test_views_of_another_shape_read_the_nchw_values():
    from dnnpy.tensor_tools import cpu
    rng = np.random.default_rng(15)
    a, a_host = _blocked_pair(rng, (1, 16, 4, 4))
    av = a_host.host_read()
    b = alias_tensor(1, 16, 2, 8)(a, 0)                 # the same storage, another shape
    d = resizable_tensor(1, 16, 4, 4)
    tt.add(d, a, b)                                     # zero padded: a + b's first columns
    want = av.copy()
    want[:, :, :2, :4] += av.reshape(1, 16, 2, 8)[:, :, :, :4]
    assert np.array_equal(d.host_read(), want)
    a, _ = _blocked_pair(np.random.default_rng(15), (1, 16, 4, 4))
    v = alias_tensor(1, 64, 2, 2)(a, 0)
    out = resizable_tensor(1, 64, 1, 1)
    cpu.pooling_forward(out, v, True, 2, 2, 2, 2, 0, 0)
    assert np.array_equal(out.host_read(), av.reshape(1, 64, 2, 2).max(axis=(2, 3), keepdims=True))


def test_filter_copies_pin_no_storage():
    import gc
    import weakref
    rng = np.random.default_rng(16)
    x = _tensor(_data(rng, 1, 16, 4, 4))
    params = resizable_tensor(16 * 16 * 9)
    f = alias_tensor(16, 16, 3, 3)(params)
    for step in range(3):                               # updates replace the copy
        f.host()[...] = step
        assert np.allclose(_conv(x, f, 16).host_read(), _reference(x.host_read(), np.full(
            (16, 16, 3, 3), step, np.float32)), atol=1e-3)
    ref = weakref.ref(params._storage)
    del params, f
    gc.collect()
    assert ref() is None


def test_storages_pickled_by_older_versions_load():
    from dnnpy.tensor import _storage
    s = _storage.__new__(_storage)
    s.__setstate__((None, {"host_array": np.arange(4, dtype=np.float32), "device_array": None,
                           "host_current": True, "device_current": False, "generation": 3}))
    assert np.array_equal(s.host_array, np.arange(4)) and s.generation == 3 and s.host_current


def test_adding_a_scaled_tensor_to_itself():
    for t in (_tensor(np.ones((1, 16, 2, 2), np.float32)), _blocked_pair(np.random.default_rng(17))[0]):
        want = 1.5 * t.host_read()
        tt.add(0.5, t, 1, t)
        assert np.allclose(t.host_read(), want)
