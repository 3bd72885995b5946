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
