"""dlib serialization of layer family B (resize, rearrange, merge, transformer, act): round
trips of set-up layers (same bytes, same forward output without a new setup), dlib's exact
bytes for hand-built records, type-value mismatches raising SerializationError naming the
layer, and truncated records leaving the layer unchanged."""

import numpy as np
import pytest

from dnnpy import SerializationError
from dnnpy.layers.adaptive_computation_time import adaptive_computation_time_
from dnnpy.layers.merge import add_prev_, mult_prev_, multm_prev_, scale_, scale_prev_
from dnnpy.layers.rearrange import concat_, extract_, reorg_, slice_, transpose_
from dnnpy.layers.resize import reshape_to_, resize_prev_to_tagged_, resize_to_, upsample_
from dnnpy.layers.transformer import embeddings_, neg_infinity_tag, positional_encodings_, tril_, zero_tag
from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.templates import tag_templates
from dnnpy.tensor import resizable_tensor
from dnnpy.testing import _backward, _fake_subnet, _forward

from helpers import read_into, s, ser
from layer_cases.merge import CASES as MERGE_CASES
from layer_cases.spatial import CASES as SPATIAL_CASES

tag1, tag2, tag3 = tag_templates[:3]

MINE = (upsample_, resize_to_, reshape_to_, resize_prev_to_tagged_, reorg_, transpose_, extract_, slice_,
        concat_, add_prev_, mult_prev_, multm_prev_, scale_, scale_prev_, tril_, positional_encodings_,
        embeddings_, adaptive_computation_time_)

CASES = {name: case for name, case in {**SPATIAL_CASES, **MERGE_CASES}.items()
         if isinstance(case[0](), MINE)}


@pytest.fixture(autouse=True)
def _keep_init_rng():
    """Setting up embeddings_ / act draws from the process-wide initialisation generator;
    restore it so these tests do not change what other test files see."""
    import copy

    from dnnpy.layers import base

    saved = copy.deepcopy(base._rng)
    yield
    base._rng = saved


def _run(layer, sub):
    out = resizable_tensor()
    _forward(layer, sub, out)
    return out


def test_every_family_b_class_has_cases():
    assert {type(c[0]()) for c in CASES.values()} == set(MINE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_of_a_set_up_layer(name):
    factory, shape, *tagged = CASES[name]
    rnd = np.random.default_rng(3)
    sub = _fake_subnet(rnd, [], shape, tagged[0] if tagged else None)
    layer = factory()
    layer.setup(sub)
    out = _run(layer, sub)
    grad = resizable_tensor()
    grad.copy_size(out)
    grad.assign(np.random.default_rng(4).standard_normal(out.shape) * 0.1)
    params_grad = resizable_tensor()
    params_grad.copy_size(layer.params)
    _backward(layer, out, grad, sub, params_grad)   # sets scale_'s alias shapes, trains embeddings
    data = ser(layer)
    fresh = read_into(factory(), data)
    assert ser(fresh) == data
    assert repr(fresh) == repr(layer)
    # no setup: the restored state alone must give the same output
    again = _run(fresh, sub)
    np.testing.assert_array_equal(again.host_read(), _run(layer, sub).host_read())


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_before_setup_and_truncations(name):
    factory = CASES[name][0]
    data = ser(factory())
    assert ser(read_into(factory(), data)) == data
    for cut in range(len(data)):
        layer = factory()
        before = ser(layer)
        with pytest.raises(SerializationError):
            read_into(layer, data[:cut])
        assert ser(layer) == before


@pytest.mark.parametrize("make,version", [
    (lambda: resize_prev_to_tagged_(tag2), "resize_prev_to_tagged_"),
    (lambda: transpose_(), "transpose_"),
    (lambda: add_prev_(tag1), "add_prev_"),
    (lambda: mult_prev_(tag3), "mult_prev_"),
    (lambda: multm_prev_(tag1), "multm_prev_"),
    (lambda: positional_encodings_(4, 6), "positional_encodings_"),
])
def test_version_only_records(make, version):
    assert ser(make()) == s(version)
    with pytest.raises(SerializationError, match=version):
        read_into(make(), s("relu_"))


def test_hand_built_records():
    assert ser(upsample_(2, 3)) == s("upsample_") + bytes.fromhex("0102 0103")
    assert ser(reorg_(2, 2)) == s("reorg_") + bytes.fromhex("0102 0102")
    assert ser(extract_(3, 2, 2, 1)) == s("extract_") + bytes.fromhex("0103 0102 0102 0101")
    assert ser(slice_(1, 0, 1, 1, 2, 1)) == s("slice_") + bytes.fromhex("0101 0100 0101 0101 0102 0101")
    assert ser(concat_(tag3, tag1, tag2)) == s("concat_") + bytes.fromhex("0103")
    # resize_to_: NR, NC longs, then scale_y, scale_x doubles (1.0 = 01 10 81 04)
    assert ser(resize_to_(3, 5)) == s("resize_to_") + bytes.fromhex("0103 0105 01108104 01108104")
    # tril_: diag long, diag_value float
    w = Writer()
    w.string("tril_")
    w.int(-1)
    w.float32(0.5)
    assert ser(tril_(-1, None, 1, 2)) == w.bytes()
    assert ser(tril_(0, neg_infinity_tag)) == s("tril_") + bytes.fromhex("0100 0100 02017d")  # -inf: mantissa 0, exponent 32001
    # scale_ before backward: dlib's default alias_tensor shapes (0, 0, 0, 0)
    empty_alias = bytes.fromhex("0101 0100 0100 0100 0100")
    assert ser(scale_(tag1)) == s("scale_") + empty_alias * 2
    assert ser(scale_prev_(tag2)) == s("scale_prev_") + empty_alias * 2
    # reshape_to_ before setup: input dims 0, output dims the template's (-1 kept), bool
    assert ser(reshape_to_(-1, 3, 3)) == s("reshape_to_") + bytes.fromhex("0100 0100 0100 8101 0103 0103") + b"0"


def test_scale_alias_shapes_after_backward():
    layer = scale_prev_(tag1)
    sub = _fake_subnet(np.random.default_rng(0), [], (2, 3, 2, 4), lambda sh: (sh[0], sh[1], 1, 1))
    out = _run(layer, sub)
    _backward(layer, out, out, sub, resizable_tensor())
    w = Writer()
    w.string("scale_prev_")
    w.alias(layer.reshape_scales)
    w.alias(layer.reshape_src)
    assert ser(layer) == w.bytes()
    assert layer.reshape_scales.shape == (6, 1, 1, 1) and layer.reshape_src.shape == (6, 8, 1, 1)
    back = read_into(scale_prev_(tag1), ser(layer))
    assert (back.reshape_scales.shape, back.reshape_src.shape) == ((6, 1, 1, 1), (6, 8, 1, 1))


def test_embeddings_record_field_by_field():
    layer = embeddings_(3, 4)
    sub = _fake_subnet(np.random.default_rng(1), [], (2, 2, 3, 1))
    layer.setup(sub)
    layer.set_learning_rate_multiplier(0.25)
    layer.set_scale_by_freq(False)
    data = ser(layer)
    r = Reader(data)
    r.expect_string("embeddings_")
    table = r.tensor()
    np.testing.assert_array_equal(table.host_read(), layer.embs.host_read())
    assert table.shape == (3, 4, 1, 1)
    assert (r.uint(), r.uint(), r.float64(), r.bool()) == (3, 4, 0.25, False) and r.at_end()
    back = read_into(embeddings_(3, 4), data)
    np.testing.assert_array_equal(back.embs.host_read(), layer.embs.host_read())
    assert (back.learning_rate_multiplier, back.scale_by_freq) == (0.25, False)


def test_act_record_field_by_field():
    layer = adaptive_computation_time_(4)
    sub = _fake_subnet(np.random.default_rng(2), [], (3, 1, 4, 2))
    layer.setup(sub)
    layer.set_halt_threshold(0.9)
    layer.set_ponder_penalty(0.5)
    layer.enable_depth_scaling()
    data = ser(layer)
    r = Reader(data)
    r.expect_string("act_")
    assert r.int() == 4
    assert (r.float32(), r.float32(), r.bool()) == (float(np.float32(0.9)), 0.5, True)
    assert [r.int() for _ in range(5)] == [3, 4, 2, 1, 2]   # batch, seq_len, d_model, channels, feature_dim
    params = r.tensor()
    assert params.shape == (1, 1, 3, 1) and r.at_end()
    back = read_into(adaptive_computation_time_(4), data)
    assert back.depth_scaling_enabled() and back.get_halt_threshold() == float(np.float32(0.9))
    assert back.halting_probs_.size() == 0   # the workspace is allocated by the next forward
    np.testing.assert_array_equal(_run(back, sub).host_read(), _run(layer, sub).host_read())
    assert back.halting_probs_.shape == (12, 1, 1, 1)
    # absurd sizes in a file allocate nothing
    w = Writer()
    w.string("act_")
    w.int(4)
    w.float32(0.99)
    w.float32(0.01)
    w.bool(False)
    for v in (1 << 40, 1 << 40, 0, 1, 0):
        w.int(v)
    w.tensor(resizable_tensor())
    huge = read_into(adaptive_computation_time_(4), w.bytes())
    assert huge.batch_size_ == 1 << 40 and huge.input_cache_.size() == 0
    with pytest.raises(SerializationError, match=r"adaptive_computation_time_.*max_steps=4.*max_steps=8"):
        read_into(adaptive_computation_time_(8), data)


@pytest.mark.parametrize("written,reader,pattern", [
    (lambda: upsample_(2, 3), lambda: upsample_(2, 2), "upsample_: the file has scale_x=3 but the net type has scale_x=2"),
    (lambda: reorg_(2, 3), lambda: reorg_(3, 3), "reorg_: the file has row_stride=2 but the net type has row_stride=3"),
    (lambda: extract_(3, 2, 2, 1), lambda: extract_(4, 2, 2, 1), "extract_: the file has offset=3 but the net type has offset=4"),
    (lambda: slice_(1, 0, 1, 1, 2, 1), lambda: slice_(1, 0, 1, 1, 3, 1), "slice_: the file has nr=2 but the net type has nr=3"),
    (lambda: concat_(tag1, tag2), lambda: concat_(tag1, tag2, tag3), "concat_: the file has 2 tags but the net type has 3"),
    (lambda: resize_to_(3, 5), lambda: resize_to_(3, 4), "resize_to_: the file has NR=3, NC=5 but the net type has NR=3, NC=4"),
    (lambda: tril_(0, zero_tag), lambda: tril_(0, neg_infinity_tag), "tril_: the file has diag=0, diag_value=0"),
    (lambda: tril_(-1, None, 1, 2), lambda: tril_(1, None, 1, 2), "tril_: the file has diag=-1"),
    (lambda: embeddings_(3, 4), lambda: embeddings_(3, 5), "embeddings_: the file has num_embeddings=3, embedding_dim=4"),
    (lambda: add_prev_(tag1), lambda: mult_prev_(tag1), "mult_prev_"),
    (lambda: scale_(tag1), lambda: scale_prev_(tag1), "scale_prev_"),
])
def test_mismatches_name_the_layer(written, reader, pattern):
    layer = reader()
    before = ser(layer)
    with pytest.raises(SerializationError, match=pattern):
        read_into(layer, ser(written()))
    assert ser(layer) == before


def test_bad_restored_values():
    w = Writer()
    w.string("reshape_to_")
    for v in (2, 3, 4, 0, 3, 3):   # output_k 0 is not a dimension
        w.int(v)
    w.bool(False)
    with pytest.raises(SerializationError, match="reshape_to_: the file has output_k=0"):
        read_into(reshape_to_(), w.bytes())
    w = Writer()
    w.string("embeddings_")
    t = resizable_tensor(3, 5)
    t.fill(1)
    w.tensor(t)
    w.uint(3)
    w.uint(4)
    w.float64(1)
    w.bool(True)
    with pytest.raises(SerializationError, match=r"embeddings_: the file's table has shape \(3, 5, 1, 1\)"):
        read_into(embeddings_(3, 4), w.bytes())
