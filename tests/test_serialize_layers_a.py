"""Per-layer serialization (dlib's ``serialize``/``deserialize`` friends) for conv, fc,
linear, activations, softmax, dropout, normalisation, affine and pooling layers:
round trips, dlib's exact bytes, old versions, cross-type reads and bad records."""


import numpy as np
import pytest

from dnnpy import (CONV_MODE, FC_MODE, FC_NO_BIAS, affine_, avg_pool_, bn_, clipped_relu_,
                   con_, cont_, dropout_, dropout_rate_, elu_, fc_, gelu_, htan_, l2normalize_,
                   layer_norm_, leaky_relu_, linear_, max_pool_, mish_, multiply_, prelu_,
                   relu_, rms_norm_, sig_, silu_, smelu_, softmax_, softmax_all_)
from dnnpy.errors import SerializationError
from dnnpy.layers.linear import LINEAR_NO_BIAS
from dnnpy.layers.softmax import PLANE_WISE
from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.tensor import resizable_tensor
from dnnpy.testing import _backward, _fake_subnet, _forward

from helpers import read_into, s
from helpers import ser as to_bytes


# -- helpers ----------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _keep_global_rngs():
    """Setting layers up draws from the process-wide initialisation generators; restore
    them so these tests do not change the random parameters other test files see."""
    import copy
    import importlib

    base = importlib.import_module("dnnpy.layers.base")
    dropout = importlib.import_module("dnnpy.layers.dropout")
    saved = copy.deepcopy(base._rng), copy.deepcopy(dropout._seeds)
    yield
    base._rng, dropout._seeds = saved


def i(v):
    w = Writer()
    w.int(v)
    return w.bytes()


def dims(*d):
    return b"".join(i(x) for x in d)


def tensor_bytes(arr):
    arr = np.asarray(arr, dtype=np.float32)
    shape = arr.shape + (1,) * (4 - arr.ndim)
    return i(2) + dims(*shape) + arr.astype("<f4").tobytes()


def alias_bytes(*d):
    d = d + (1,) * (4 - len(d))
    return i(1) + dims(*d)


EMPTY_T = bytes.fromhex("01020100010001000100")
EMPTY_A = bytes.fromhex("01010100010001000100")
D1 = bytes.fromhex("01108104")      # 1.0 as a double
D0 = bytes.fromhex("0100010b")      # 0.0 as a double
MULTS = D1 + D1 + D1 + D0           # dlib's default lr, wd, bias lr, bias wd


def _bn_trained(mode):
    def make():
        layer = bn_(mode, 10, 1e-3)
        layer._train_batch = True
        return layer
    return make


def _no_bias(layer):
    layer.disable_bias()
    return layer


def _with_relu(layer):
    layer.enable_relu()
    return layer


def _disabled(layer):
    layer.disable()
    return layer


def _fc_disabled_bias():
    layer = fc_(3)
    layer.disable_bias()
    return layer


# name -> (factory, input shape)
CASES = {
    "con 3x3": (lambda: con_(3, 3, 3, 1, 1), (2, 2, 5, 5)),
    "con s2 p1 no bias": (lambda: _no_bias(con_(2, 3, 3, 2, 2, 1, 1)), (2, 2, 6, 6)),
    "con relu": (lambda: _with_relu(con_(2, 3, 3, 1, 1)), (2, 2, 4, 4)),
    "con whole input": (lambda: con_(2, 0, 0, 1, 1), (2, 3, 3, 4)),
    "cont 3x3 s2": (lambda: cont_(3, 3, 3, 2, 2), (2, 2, 3, 3)),
    "cont no bias": (lambda: _no_bias(cont_(2, 4, 4, 2, 2, 1, 1)), (2, 2, 3, 3)),
    "fc": (lambda: fc_(4), (3, 2, 2, 3)),
    "fc_no_bias": (lambda: fc_(3, FC_NO_BIAS), (3, 5, 1, 1)),
    "fc disabled bias": (_fc_disabled_bias, (3, 5, 1, 1)),
    "linear": (lambda: linear_(4), (2, 2, 3, 5)),
    "linear_no_bias": (lambda: linear_(3, LINEAR_NO_BIAS), (2, 1, 3, 4)),
    "relu": (relu_, (2, 3, 2, 2)),
    "relu disabled": (lambda: _disabled(relu_()), (2, 3, 2, 2)),
    "prelu": (lambda: prelu_(0.1), (2, 3, 2, 2)),
    "leaky_relu": (lambda: leaky_relu_(0.2), (2, 3, 2, 2)),
    "sig": (sig_, (2, 3, 2, 2)),
    "mish": (mish_, (2, 3, 2, 2)),
    "htan": (htan_, (2, 3, 2, 2)),
    "clipped_relu": (lambda: clipped_relu_(0.7), (2, 3, 2, 2)),
    "elu": (lambda: elu_(0.3), (2, 3, 2, 2)),
    "gelu": (gelu_, (2, 3, 2, 2)),
    "smelu": (lambda: smelu_(0.5), (2, 3, 2, 2)),
    "silu": (silu_, (2, 3, 2, 2)),
    "softmax": (softmax_, (2, 3, 2, 2)),
    "softmaxm": (lambda: softmax_(PLANE_WISE), (2, 3, 2, 2)),
    "softmax_all": (softmax_all_, (2, 3, 2, 2)),
    "l2normalize": (lambda: l2normalize_(1e-3), (2, 3, 2, 2)),
    "dropout": (lambda: dropout_(0.3), (2, 3, 2, 2)),
    "dropout_rate": (lambda: dropout_rate_(20), (2, 3, 2, 2)),
    "multiply": (lambda: multiply_(0.7), (2, 3, 2, 2)),
    "bn_con": (_bn_trained(CONV_MODE), (4, 3, 2, 2)),
    "bn_fc": (_bn_trained(FC_MODE), (4, 2, 2, 1)),
    "layer_norm": (lambda: layer_norm_(1e-4), (2, 3, 2, 2)),
    "rms_norm": (lambda: rms_norm_(1e-4), (2, 3, 2, 2)),
    "affine con": (lambda: affine_(CONV_MODE), (2, 3, 2, 2)),
    "affine fc": (lambda: affine_(FC_MODE), (2, 3, 2, 2)),
    "affine disabled": (lambda: _disabled(affine_(CONV_MODE)), (2, 3, 2, 2)),
    "max_pool": (lambda: max_pool_(3, 3, 2, 2), (2, 2, 5, 5)),
    "max_pool_everything": (lambda: max_pool_(0, 0, 1, 1), (2, 2, 3, 3)),
    "avg_pool": (lambda: avg_pool_(3, 3, 1, 1), (2, 2, 4, 4)),
    "avg_pool s2": (lambda: avg_pool_(2, 2, 2, 2), (2, 2, 4, 4)),
}


def _prepared(name, seed=1):
    """A set-up layer with random parameters and non-default multipliers, and its subnet."""
    factory, shape = CASES[name]
    layer = factory()
    rng = np.random.default_rng(seed)
    sub = _fake_subnet(rng, [], shape)
    layer.setup(sub)
    if layer.params.size():
        layer.params.assign(rng.standard_normal(layer.params.shape).astype(np.float32) * 0.5
                            + (1.0 if isinstance(layer, (bn_, affine_)) else 0.0))
    if hasattr(layer, "set_weight_decay_multiplier"):
        layer.set_weight_decay_multiplier(0.25)
        layer.set_learning_rate_multiplier(0.5)
    if hasattr(layer, "set_bias_learning_rate_multiplier"):
        layer.set_bias_learning_rate_multiplier(3.0)
        layer.set_bias_weight_decay_multiplier(0.125)
    if getattr(layer, "_train_batch", False) or isinstance(layer, (layer_norm_, dropout_)):
        # populate the batch statistics / running statistics / mask
        out = resizable_tensor()
        _forward(layer, sub, out)
    return layer, sub


def _forward_out(layer, sub):
    out = resizable_tensor()
    _forward(layer, sub, out)
    return out.host_read().copy()


# -- round trips ------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_round_trip(name):
    layer, sub = _prepared(name)
    data = to_bytes(layer)
    factory, _ = CASES[name]
    copy = read_into(factory(), data)
    np.testing.assert_array_equal(copy.params.host_read(), layer.params.host_read())
    assert copy.params.shape == layer.params.shape
    assert repr(copy) == repr(layer)
    assert to_bytes(copy) == data
    for field in ("mask", "means", "invstds", "running_means", "running_variances"):
        if hasattr(layer, field):
            np.testing.assert_array_equal(getattr(copy, field).host_read(),
                                          getattr(layer, field).host_read())
    if isinstance(layer, dropout_):
        assert copy.drop_rate == layer.drop_rate and copy.mask.size() > 0
        return  # forward draws a fresh random mask
    # identical forward outputs without calling setup on the copy
    np.testing.assert_array_equal(_forward_out(copy, sub), _forward_out(layer, sub))


@pytest.mark.parametrize("name", ["con 3x3", "fc", "linear", "bn_con", "layer_norm", "rms_norm", "prelu"])
def test_round_trip_backward_matches(name):
    """The read layer also back-propagates identically (its views are all rebuilt)."""
    layer, sub = _prepared(name)
    copy = read_into(CASES[name][0](), to_bytes(layer))
    results = []
    for lay in (layer, copy):
        out = resizable_tensor()
        _forward(lay, sub, out)
        grad = resizable_tensor(*out.shape)
        grad.assign(np.linspace(-1, 1, out.size()).reshape(out.shape))
        pg = resizable_tensor()
        pg.copy_size(lay.params)
        sub.gradient_input.assign(np.zeros(sub.gradient_input.shape))
        _backward(lay, out, grad, sub, pg)
        results.append((pg.host_read().copy(), sub.gradient_input.host_read().copy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(CASES))
def test_unset_layer_round_trip(name):
    """A layer never set up writes dlib's default (0,0,0,0) alias shapes and empty tensors,
    and reads back to the same bytes."""
    factory, _ = CASES[name]
    data = to_bytes(factory())
    assert to_bytes(read_into(factory(), data)) == data
    layer = factory()
    if any(hasattr(layer, a) for a in ("filters", "weights", "gamma")) and layer.params.size() == 0:
        assert EMPTY_A in data
        assert alias_bytes(0) not in data  # never our (0,1,1,1) default


@pytest.mark.parametrize("name", list(CASES))
def test_every_truncation_is_a_serialization_error(name):
    layer, _ = _prepared(name)
    data = to_bytes(layer)
    step = max(1, len(data) // 150)
    for cut in list(range(0, len(data), step)) + [len(data) - 1]:
        with pytest.raises(SerializationError):
            CASES[name][0]().deserialize(Reader(data[:cut], "test"))


@pytest.mark.parametrize("name", ["con 3x3", "cont 3x3 s2", "fc", "linear", "bn_con", "affine con",
                                  "layer_norm", "max_pool", "dropout", "prelu", "l2normalize"])
def test_mutated_records_raise_only_serialization_errors(name):
    layer, _ = _prepared(name)
    data = bytearray(to_bytes(layer))
    rng = np.random.default_rng(5)
    for _ in range(300):
        mutated = bytearray(data)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            mutated[pos] = int(rng.integers(0, 256))
        try:
            CASES[name][0]().deserialize(Reader(bytes(mutated), "test"))
        except SerializationError:
            pass


# -- dlib's exact bytes (the 759-byte example net and the reference) ---------------------

def test_con_6_bytes_of_the_reference_example():
    layer = con_(2, 3, 3, 1, 1)
    layer.setup(_fake_subnet(np.random.default_rng(0), [], (1, 1, 4, 4)))
    values = np.arange(20, dtype=np.float32) / 8 - 1
    layer.params.assign(values.reshape(layer.params.shape))
    expected = (s("con_6") + tensor_bytes(values.reshape(20, 1, 1, 1))
                + bytes.fromhex("01 02 01 03 01 03 01 01 01 01 01 01 01 01")
                + bytes.fromhex("01 01 01 02 01 01 01 03 01 03")       # filters (2,1,3,3)
                + bytes.fromhex("01 01 01 01 01 02 01 01 01 01")       # biases (1,2,1,1)
                + MULTS + b"10")                                        # use_bias, use_relu
    assert to_bytes(layer) == expected


def test_fc_3_bytes_of_the_reference_example():
    layer = fc_(3)
    layer.setup(_fake_subnet(np.random.default_rng(0), [], (2, 2, 4, 4)))
    values = (np.arange(99, dtype=np.float32) - 50) / 16
    layer.params.assign(values.reshape(layer.params.shape))
    expected = (s("fc_3") + bytes.fromhex("01 03 01 20") + tensor_bytes(values.reshape(33, 3))
                + bytes.fromhex("01 01 01 20 01 03 01 01 01 01")       # weights (32,3)
                + bytes.fromhex("01 01 01 01 01 03 01 01 01 01")       # biases (1,3)
                + bytes.fromhex("01 00") + MULTS + b"1")
    assert to_bytes(layer) == expected


def test_small_records_bytes():
    assert to_bytes(relu_()) == bytes.fromhex("01 06") + b"relu_2" + b"0"
    assert to_bytes(_disabled(relu_())) == s("relu_2") + b"1"
    assert to_bytes(max_pool_(3, 3, 2, 2)) == s("max_pool_2") + bytes.fromhex("010301030102010201000100")
    assert to_bytes(avg_pool_(0, 0, 1, 1)) == s("avg_pool_2") + bytes.fromhex("010001000101010101000100")
    assert to_bytes(avg_pool_(3, 3, 1, 1)) == s("avg_pool_2") + bytes.fromhex("010301030101010101010101")
    assert to_bytes(sig_()) == s("sig_")
    assert to_bytes(softmax_all_()) == s("softmax_all_")
    # float fields are C++ floats (24 mantissa bits), eps of l2normalize_ a double
    assert to_bytes(leaky_relu_(1.0)) == s("leaky_relu_") + bytes.fromhex("01 80 81 07")
    assert to_bytes(multiply_(0.5)) == s("multiply_") + bytes.fromhex("01 80 81 08")
    assert to_bytes(l2normalize_(1.0)) == s("l2normalize_") + D1
    assert to_bytes(dropout_(0.5)) == s("dropout_") + bytes.fromhex("01 80 81 08") + EMPTY_T
    assert to_bytes(dropout_rate_(50)) == to_bytes(dropout_(0.5))
    assert to_bytes(prelu_(1.0)) == s("prelu_") + EMPTY_T + bytes.fromhex("01 80 81 07")


def test_unset_con_fc_bytes():
    assert to_bytes(con_(2, 3, 3, 1, 1)) == (
        s("con_6") + EMPTY_T + bytes.fromhex("01 02 01 03 01 03 01 01 01 01 01 01 01 01")
        + EMPTY_A + EMPTY_A + MULTS + b"10")
    assert to_bytes(fc_(3)) == s("fc_3") + bytes.fromhex("0103 0100") + EMPTY_T + EMPTY_A + EMPTY_A \
        + bytes.fromhex("0100") + MULTS + b"1"


def test_bn_affine_norm_bytes():
    bn = bn_(CONV_MODE)
    bn.setup(_fake_subnet(np.random.default_rng(0), [], (1, 2, 1, 1)))
    w = Writer()
    w.float64(1e-4)
    expected = (s("bn_con2") + tensor_bytes(np.array([1, 1, 0, 0]).reshape(4, 1))
                + alias_bytes(1, 2) + alias_bytes(1, 2) + EMPTY_T + EMPTY_T
                + tensor_bytes(np.zeros((1, 2))) + tensor_bytes(np.ones((1, 2)))
                + i(0) + i(100)
                + D1 + D0 + D1 + D1          # normalisation layers: wd 0, bias wd 1
                + w.bytes())                 # eps 1e-4 as a double
    assert to_bytes(bn) == expected
    aff = affine_(CONV_MODE)
    aff.setup(_fake_subnet(np.random.default_rng(0), [], (1, 2, 1, 1)))
    assert to_bytes(aff) == (s("affine_2") + tensor_bytes(np.array([1, 1, 0, 0]).reshape(4, 1))
                             + alias_bytes(1, 2) + alias_bytes(1, 2) + i(0) + b"0")
    rms = rms_norm_()
    assert to_bytes(rms).startswith(s("rms_norm_") + EMPTY_T + EMPTY_A + D1 + D0 + D1 + D1)


# -- old versions and cross-type records --------------------------------------------------

def test_reads_con_4_and_con_5():
    layer, sub = _prepared("con 3x3")
    new = to_bytes(layer)
    assert new.endswith(b"10") and new.startswith(s("con_6"))
    body = new[len(s("con_6")):-2]
    old4 = read_into(con_(3, 3, 3, 1, 1), s("con_4") + body)
    assert to_bytes(old4) == s("con_4") + body          # the version read is written back
    assert not old4.bias_is_disabled() and old4.relu_is_disabled()
    np.testing.assert_array_equal(_forward_out(old4, sub), _forward_out(layer, sub))
    fresh = con_(3, 3, 3, 1, 1)
    fresh.enable_relu()
    read_into(fresh, s("con_4") + body)
    assert not fresh.relu_is_disabled()                 # con_4/5 do not store use_relu
    old5 = read_into(con_(3, 3, 3, 1, 1), s("con_5") + body + b"1")
    assert to_bytes(old5) == s("con_5") + body + b"1"
    old5._dlib_version = None                            # as if built in code: the newest
    assert to_bytes(old5) == new


def test_reads_cont_1():
    layer, sub = _prepared("cont 3x3 s2")
    new = to_bytes(layer)
    body = new[len(s("cont_2")):-1]
    old = read_into(cont_(3, 3, 3, 2, 2), s("cont_1") + body)
    assert to_bytes(old) == s("cont_1") + body
    old._dlib_version = None
    assert to_bytes(old) == new
    np.testing.assert_array_equal(_forward_out(old, sub), _forward_out(layer, sub))


def test_reads_fc_2_from_hand_built_bytes():
    w = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    b = np.array([[0.5, -1, 2]], dtype=np.float32)
    data = (s("fc_2") + i(3) + i(2) + tensor_bytes(np.vstack([w, b]))
            + alias_bytes(2, 3) + alias_bytes(1, 3) + i(0) + MULTS)
    layer = read_into(fc_(3), data)
    sub = _fake_subnet(np.random.default_rng(0), [], (4, 2, 1, 1))
    x = sub.get_output().host_read().reshape(4, 2)
    np.testing.assert_allclose(_forward_out(layer, sub).reshape(4, 3), x @ w + b, rtol=1e-6)
    assert to_bytes(layer) == data
    layer._dlib_version = None
    assert to_bytes(layer) == s("fc_3") + data[len(s("fc_2")):] + b"1"


def test_reads_relu_():
    layer = read_into(relu_(), s("relu_"))
    assert not layer.is_disabled()
    assert read_into(relu_(), s("relu_2") + b"1").is_disabled()


def test_reads_affine_():
    g = np.array([2.0, -1.0], dtype=np.float32)
    bt = np.array([0.5, 3.0], dtype=np.float32)
    data = (s("affine_") + tensor_bytes(np.concatenate([g, bt]).reshape(4, 1))
            + alias_bytes(1, 2) + alias_bytes(1, 2) + i(CONV_MODE))
    layer = read_into(affine_(FC_MODE), data)
    assert layer.get_mode() == CONV_MODE and not layer.is_disabled()
    sub = _fake_subnet(np.random.default_rng(0), [], (2, 2, 2, 2))
    x = sub.get_output().host_read()
    np.testing.assert_allclose(_forward_out(layer, sub),
                               x * g.reshape(1, 2, 1, 1) + bt.reshape(1, 2, 1, 1), rtol=1e-6)
    assert to_bytes(layer) == data
    layer._dlib_version = None
    assert to_bytes(layer) == s("affine_2") + data[len(s("affine_")):] + b"0"


@pytest.mark.parametrize("mode,version", [(CONV_MODE, "bn_con2"), (FC_MODE, "bn_fc2")])
def test_affine_reads_bn_records_in_float32(mode, version):
    k = 3
    rng = np.random.default_rng(3)
    gamma = rng.standard_normal(k).astype(np.float32)
    beta = rng.standard_normal(k).astype(np.float32)
    rm = rng.standard_normal(k).astype(np.float32)
    rv = (rng.random(k) + 0.1).astype(np.float32)
    shape = (1, k) if mode == CONV_MODE else (1, k, 1, 1)
    w = Writer()
    w.float64(1e-4)
    data = (s(version) + tensor_bytes(np.concatenate([gamma, beta]).reshape(2 * k, 1))
            + alias_bytes(*shape) + alias_bytes(*shape)
            + tensor_bytes(rng.standard_normal((1, k))) + tensor_bytes(rng.standard_normal((1, k)))
            + tensor_bytes(rm.reshape(1, k)) + tensor_bytes(rv.reshape(1, k))
            + i(7) + i(100) + D1 + D0 + D1 + D1 + w.bytes())
    layer = read_into(affine_(FC_MODE if mode == CONV_MODE else CONV_MODE), data)
    assert layer.get_mode() == mode and not layer.is_disabled()
    g = gamma / np.sqrt(rv + np.float32(1e-4))
    b = beta - g * rm
    assert g.dtype == np.float32 and b.dtype == np.float32
    np.testing.assert_array_equal(layer.params.host_read().reshape(-1), np.concatenate([g, b]))
    # the same as building the affine_ from a bn_ read from the record
    bn = read_into(bn_(mode), data)
    np.testing.assert_array_equal(affine_(bn).params.host_read(), layer.params.host_read())
    sub = _fake_subnet(np.random.default_rng(0), [], (2, k, 1, 1))
    x = sub.get_output().host_read().reshape(2, k)
    np.testing.assert_allclose(_forward_out(layer, sub).reshape(2, k), x * g + b, rtol=1e-6)
    # written as dlib's affine_ writes itself (the bn_ record is not kept): "affine_2" with the
    # converted params, the record's gamma/beta shapes, its mode, not disabled
    assert to_bytes(layer) == (s("affine_2") + tensor_bytes(np.concatenate([g, b]).reshape(2 * k, 1))
                               + alias_bytes(*shape) + alias_bytes(*shape) + i(mode) + b"0")


def test_affine_reads_unset_bn_record():
    layer = read_into(affine_(CONV_MODE), to_bytes(bn_(FC_MODE)))
    assert layer.get_mode() == FC_MODE and layer.params.size() == 0


def test_multiply_reads_dropout_record():
    d, _ = _prepared("dropout")
    layer = read_into(multiply_(), to_bytes(d))
    assert layer.get_multiply_value() == np.float32(1) - np.float32(0.3)
    assert to_bytes(layer) == s("multiply_") + to_bytes(multiply_(layer.val))[len(s("multiply_")):]


def test_dropout_rate_reads_file_rate():
    layer = read_into(dropout_rate_(10), to_bytes(dropout_(0.25)))
    assert layer.get_drop_rate() == 0.25 and layer.percent == 10


def test_num_filters_and_num_outputs_are_the_files():
    """As dlib: num_filters / num_outputs come from the file (set_num_filters and
    set_num_outputs may have changed them, as dlib's MMOD examples do), and the layer then
    computes what the saved one did."""
    layer, sub = _prepared("con 3x3")
    other = read_into(con_(5, 3, 3, 1, 1), to_bytes(layer))
    assert other.num_filters() == 3
    np.testing.assert_array_equal(_forward_out(other, sub), _forward_out(layer, sub))
    f, fsub = _prepared("fc")
    assert read_into(fc_(9), to_bytes(f)).get_num_outputs() == 4
    # a window that differs is still another net type
    with pytest.raises(SerializationError, match=r"nr"):
        read_into(con_(3, 5, 5, 1, 1), to_bytes(layer))


# -- mismatches and bad records -----------------------------------------------------------

def _error(layer, data):
    with pytest.raises(SerializationError) as e:
        layer.deserialize(Reader(data, "test"))
    return str(e.value)


@pytest.mark.parametrize("other,field", [
    (lambda: con_(3, 5, 5, 1, 1), "nr=3"),
    (lambda: con_(3, 3, 3, 2, 1, 1, 1), "stride_y=1"),
    (lambda: con_(3, 3, 3, 1, 1, 0, 1), "padding_y=1"),
    (lambda: con_(3, 3, 1, 1, 1), "nc=3"),
])
def test_con_template_mismatch(other, field):
    layer, _ = _prepared("con 3x3")
    msg = _error(other(), to_bytes(layer))
    assert "con_" in msg and field in msg and "net type" in msg and "byte offset" in msg


def test_version_and_mode_mismatches():
    assert "con_" in _error(con_(2, 3, 3, 1, 1), to_bytes(fc_(3)))
    assert "cont_1" in _error(cont_(2, 3, 3, 1, 1), to_bytes(con_(2, 3, 3, 1, 1)))
    assert "fc_" in _error(fc_(3), s("fc_4"))
    assert "relu_" in _error(relu_(), to_bytes(sig_()))
    assert "bn_con2" in _error(bn_(CONV_MODE), to_bytes(bn_(FC_MODE)))
    assert "affine_" in _error(affine_(), to_bytes(relu_()))
    msg = _error(fc_(3, FC_NO_BIAS), to_bytes(fc_(3)))
    assert "fc_" in msg and "bias_mode=0" in msg
    msg = _error(linear_(3), to_bytes(linear_(3, LINEAR_NO_BIAS)))
    assert "linear_" in msg and "bias_mode=1" in msg
    msg = _error(max_pool_(3, 3, 2, 2), to_bytes(max_pool_(3, 3, 1, 1)))
    assert "max_pool_" in msg and "stride_y=1" in msg
    msg = _error(avg_pool_(3, 3, 1, 1), to_bytes(max_pool_(3, 3, 1, 1)))
    assert "avg_pool_2" in msg and "max_pool_2" in msg
    assert "relu_ disabled" in _error(relu_(), s("relu_2") + b"x")


def test_inconsistent_shapes_are_rejected_at_read_time():
    layer, _ = _prepared("con 3x3")
    data = to_bytes(layer)
    good = bytes.fromhex("01 01 01 03 01 02 01 03 01 03")     # filters (3,2,3,3)
    assert good in data
    bad = data.replace(good, bytes.fromhex("01 01 01 03 01 09 01 03 01 03"))
    assert "con_" in _error(con_(3, 3, 3, 1, 1), bad)
    f, _ = _prepared("fc")
    data = to_bytes(f)
    good = alias_bytes(12, 4)
    bad = data.replace(good, alias_bytes(40, 4))
    assert "fc_" in _error(fc_(4), bad)
    bn, _ = _prepared("bn_con")
    data = to_bytes(bn)
    bad = data.replace(alias_bytes(1, 3), alias_bytes(1, 5), 1)
    assert "bn_" in _error(bn_(CONV_MODE), bad)
    aff = affine_(CONV_MODE)
    bad_mode = (s("affine_2") + tensor_bytes(np.ones((2, 1))) + alias_bytes(1, 1)
                + alias_bytes(1, 1) + i(5) + b"0")
    assert "mode=5" in _error(aff, bad_mode)


def test_float64_default_dtype_round_trip():
    from dnnpy.tensor import default_dtype
    layer, sub = _prepared("con 3x3")
    data = to_bytes(layer)
    with default_dtype(np.float64):
        copy = read_into(con_(3, 3, 3, 1, 1), data)
        assert copy.params.dtype == np.float64
        assert to_bytes(copy) == data
