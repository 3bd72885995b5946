"""Whole nets in dlib's layout: the verified 759-byte example, wrapper versions, round trips
(tags, skips, repeat, merges, every input), ``load``, atomic saves, the dnnpy header, solvers."""

import io
import os

import numpy as np
import pytest

import dnnpy
from dnnpy import (SerializationError, adam, con, fc, input, input_rgb_image, input_tensor,
                   loss_multiclass_log, relu, repeat, sgd, skip1, tag1, tag2)
from dnnpy.serialization import MAGIC, Reader, Writer, from_bytes, read_net, to_bytes

from helpers import s


def hx(s):
    return bytes.fromhex(s.replace(" ", ""))


def tensor_bytes(t):
    w = Writer()
    w.tensor(t)
    return w.bytes()


EMPTY = hx("01 02 01 00 01 00 01 00 01 00")
ONE_D, ZERO_D = hx("01 10 81 04"), hx("01 00 01 0b")

EXAMPLE = loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.float32]]]]]


def matrices(n, shape=(4, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def test_verified_759_byte_example():
    """The 759 bytes dlib wrote for this net after clean()."""
    net = EXAMPLE()
    net(matrices(2))
    net.clean()
    data = to_bytes(net, "dlib")
    con_d = dnnpy.layer(net, 3).layer_details()
    fc_d = dnnpy.layer(net, 1).layer_details()
    expected = (
        hx("01 01") + s("loss_multiclass_log_")
        + hx("01 02 01 02 01 03") + s("input<matrix>")
        + s("con_6") + tensor_bytes(con_d.get_layer_params())
        + hx("01 02 01 03 01 03 01 01 01 01 01 01 01 01")
        + hx("01 01 01 02 01 01 01 03 01 03") + hx("01 01 01 01 01 02 01 01 01 01")
        + ONE_D * 3 + ZERO_D + b"10"
        + b"111" + EMPTY * 3 + hx("01 01")
        + s("relu_2") + b"0" + b"110" + EMPTY * 3
        + s("fc_3") + hx("01 03 01 20") + tensor_bytes(fc_d.get_layer_params())
        + hx("01 01 01 20 01 03 01 01 01 01") + hx("01 01 01 01 01 03 01 01 01 01")
        + hx("01 00") + ONE_D * 3 + ZERO_D + b"1" + b"110" + EMPTY * 3)
    assert con_d.get_layer_params().shape == (20, 1, 1, 1)
    assert fc_d.get_layer_params().shape == (33, 3, 1, 1)
    assert len(data) == 759
    assert data == expected


def test_wrapper_versions_tags_skips_repeat():
    # tag on the input: add_tag_layer v2 (input, cached_output, grad_final, bool, sef)
    nt = loss_multiclass_log[fc[3, skip1[tag2[relu[fc[4, tag1[input[np.float32]]]]]]]]
    net = nt()
    net(matrices(2))
    net.clean()
    data = to_bytes(net, "dlib")
    head = hx("01 01") + s("loss_multiclass_log_")
    # fc v2, skip v1, tag2 v1, relu v2, fc v2, tag1-on-input v2, then the input
    assert data.startswith(head + hx("01 02 01 01 01 01 01 02 01 02 01 02") + s("input<matrix>")
                           + EMPTY + EMPTY + b"1" + hx("01 01") + s("fc_3"))
    # repeat v1: the vector size, then each copy (bottom add_layer v3, empty input section)
    rt = loss_multiclass_log[fc[3, repeat[2, lambda sub: relu[fc[4, sub]], input[np.float32]]]]
    rnet = rt()
    rnet(matrices(2))
    rnet.clean()
    data = to_bytes(rnet, "dlib")
    assert data.startswith(head + hx("01 02 01 01 01 02") + hx("01 02 01 03") + s("fc_3"))


def test_missing_serialize_names_the_class():
    class nothing_:
        pass

    net = EXAMPLE()
    net.subnet().set_layer_details(nothing_())
    with pytest.raises(SerializationError, match="nothing_.*no serialize"):
        to_bytes(net, "dlib")


def _serializable(net_type):
    """Whether every details class in the type has serialize (layers landing in parallel)."""
    net = net_type()
    objs = []
    for node in dnnpy.visitors.net_layers(net):
        objs.append(node if not hasattr(node, "_subnet") else
                    getattr(node, "_details", getattr(node, "_loss", None)))
    return all(o is None or hasattr(o, "serialize") for o in objs)


def _net_types():
    T = {}
    T["con relu fc"] = (EXAMPLE, lambda: matrices(3))
    T["tags, skip, tag on input"] = (
        loss_multiclass_log[fc[3, skip1[tag2[relu[fc[4, tag1[input[np.float32]]]]]]]], lambda: matrices(3))
    T["repeat with tags in the block"] = (
        loss_multiclass_log[fc[3, repeat[2, lambda sub: relu[fc[4, tag1[sub]]], tag2[input[np.float32]]]]],
        lambda: matrices(3))
    T["add_prev residual"] = (
        loss_multiclass_log[fc[3, relu[dnnpy.add_prev1[con[2, 3, 3, 1, 1, relu[con[2, 3, 3, 1, 1,
                                      tag1[con[2, 3, 3, 1, 1, input[np.float32]]]]]]]]]],
        lambda: matrices(2, (5, 5)))
    T["pooling + bn"] = (
        loss_multiclass_log[fc[3, dnnpy.max_pool[2, 2, 2, 2, dnnpy.bn_con[con[3, 3, 3, 1, 1, input[np.float32]]]]]],
        lambda: matrices(2, (6, 6)))
    rgb = lambda: [np.random.default_rng(i).integers(0, 256, (6, 6, 3), dtype=np.uint8) for i in range(2)]
    T["input_rgb_image"] = (loss_multiclass_log[fc[3, con[2, 3, 3, 2, 2, input_rgb_image]]], rgb)
    T["input_rgb_image_sized"] = (
        loss_multiclass_log[fc[3, con[2, 3, 3, 2, 2, dnnpy.input_rgb_image_sized[6, 6]]]], rgb)
    T["input_tensor"] = (
        loss_multiclass_log[fc[3, con[2, 3, 3, 1, 1, input_tensor]]],
        lambda: [np.random.default_rng(i).standard_normal((1, 2, 3, 3)).astype(np.float32) for i in range(2)])
    T["input uint8"] = (loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.uint8]]]]],
                        lambda: [np.full((4, 4), 7, np.uint8), np.arange(16, dtype=np.uint8).reshape(4, 4)])
    T["input_array"] = (loss_multiclass_log[fc[3, con[2, 3, 3, 1, 1, dnnpy.input_array[np.float32, 2]]]],
                        lambda: [tuple(matrices(2, seed=i)) for i in range(2)])
    T["input_array2d"] = (loss_multiclass_log[fc[3, con[2, 3, 3, 1, 1, dnnpy.input_array2d[np.uint8]]]],
                          lambda: [np.arange(16, dtype=np.uint8).reshape(4, 4)] * 2)
    # no loss on top (dlib can save any net); pair input has sample expansion factor 2
    T["input_rgb_image_pair, no loss"] = (fc[3, con[2, 3, 3, 2, 2, dnnpy.input_rgb_image_pair]],
                                          lambda: [tuple(rgb()), tuple(rgb()[::-1])])
    T["pyramid input"] = (
        con[1, 3, 3, 1, 1, dnnpy.input_rgb_image_pyramid[dnnpy.pyramid_down(6)]],
        lambda: [np.random.default_rng(3).integers(0, 256, (30, 24, 3), dtype=np.uint8)])
    T["grayscale pyramid, tag on input"] = (
        con[1, 3, 3, 1, 1, tag1[dnnpy.input_grayscale_image_pyramid[dnnpy.pyramid_down(2)]]],
        lambda: [np.arange(30 * 24, dtype=np.uint8).reshape(30, 24)])
    return T


NETS = _net_types()


@pytest.mark.parametrize("name", list(NETS))
def test_round_trip_bit_identical(name, tmp_path):
    net_type, batch = NETS[name]
    if not _serializable(net_type):
        pytest.skip(f"{name}: a layer in it has no serialize method yet")
    net = net_type()
    x = batch()
    if net_type.is_loss():
        labels = [0] * net.to_tensor(x).num_samples()
        net.compute_parameter_gradients(x, labels)   # setup + gradients: bookkeeping not empty
        top = lambda n: n.subnet()
    else:
        net(x)
        top = lambda n: n
    out = np.array(top(net).get_output().host_read())
    path = tmp_path / "net.dnnpy"
    dnnpy.serialize(net, path)
    assert path.read_bytes().startswith(MAGIC)
    back = dnnpy.load(path)
    assert back.net_type is net_type
    # the reload restores setup_called: its first forward must not reinitialise parameters
    assert to_bytes(back) == to_bytes(net)
    out_back = np.asarray(top(back).forward(back.to_tensor(x)).host_read())
    out_again = np.asarray(top(net).forward(net.to_tensor(x)).host_read())
    assert np.array_equal(out_back, out_again)
    assert np.array_equal(out_again, out)
    if net_type.is_loss():
        assert back(x) == net(x)
    # dlib format into a fresh net of the type, and file objects
    buf = io.BytesIO()
    dnnpy.serialize(net, buf, format="dlib")
    fresh = net_type()
    dnnpy.deserialize(io.BytesIO(buf.getvalue()), fresh)
    assert to_bytes(fresh, "dlib") == buf.getvalue()


def test_read_restores_bookkeeping_and_keeps_identity():
    net = EXAMPLE()
    x = matrices(2)
    net.compute_parameter_gradients(x, [0, 1])
    data = to_bytes(net, "dlib", clean=False)     # with the caches (the default drops them)
    target = EXAMPLE()
    fc_details = target.subnet().layer_details()
    r = Reader(data)
    read_net(r, target)
    assert r.at_end()
    assert target.subnet().layer_details() is fc_details   # identity kept, state moved in
    assert target.subnet()._setup_called
    src, dst = net.subnet().get_parameter_gradient(), target.subnet().get_parameter_gradient()
    assert dst.size() and np.array_equal(src.host_read(), dst.host_read())
    assert np.array_equal(fc_details.get_layer_params().host_read(),
                          net.subnet().layer_details().get_layer_params().host_read())


def test_net_type_mismatch_in_header(tmp_path):
    net = EXAMPLE()
    net(matrices(1))
    path = tmp_path / "a.dnnpy"
    dnnpy.serialize(net, path)
    other_type = loss_multiclass_log[fc[3, relu[con[2, 5, 5, 1, 1, input[np.float32]]]]]
    other = other_type()
    before = to_bytes(other)
    with pytest.raises(SerializationError) as e:
        dnnpy.deserialize(path, other)
    assert repr(EXAMPLE) in str(e.value) and repr(other_type) in str(e.value)
    assert to_bytes(other) == before
    # the same mismatch in a dlib file is caught by con_'s stored kernel size
    dnnpy.serialize(net, path, format="dlib")
    with pytest.raises(SerializationError, match="con_.*nr"):
        dnnpy.deserialize(path, other)
    assert to_bytes(other) == before


def test_trailing_bytes_and_wrong_kind(tmp_path):
    net = EXAMPLE()
    net(matrices(1))
    data = to_bytes(net)
    with pytest.raises(SerializationError, match="3 more bytes"):
        from_bytes(data + b"abc", EXAMPLE())
    with pytest.raises(SerializationError, match="holds a net"):
        from_bytes(data, sgd())
    with pytest.raises(SerializationError, match="dlib-format"):
        p = tmp_path / "d.dat"
        dnnpy.serialize(net, p, format="dlib")
        dnnpy.load(p)
    with pytest.raises(SerializationError, match="cannot read the file"):
        dnnpy.load(tmp_path / "missing")


def test_load_rejects_a_bad_type_expression():
    w = Writer()
    w.raw(MAGIC)
    w.uint(1)
    w.string("net")
    w.string("__import__('os')[input[float32]]")
    with pytest.raises(SerializationError, match="cannot be rebuilt"):
        dnnpy.load(io.BytesIO(w.bytes()))


def test_atomic_save_keeps_the_old_file(tmp_path, monkeypatch):
    net = EXAMPLE()
    net(matrices(1))
    path = tmp_path / "net.dnnpy"
    dnnpy.serialize(net, path)
    good = path.read_bytes()
    # serialization failing midway (a layer raising) never touches the file
    fc_details = net.subnet().layer_details()
    monkeypatch.setattr(fc_details, "serialize", lambda w: (w.raw(b"junk"), 1 / 0), raising=False)
    with pytest.raises(ZeroDivisionError):
        dnnpy.serialize(net, path)
    assert path.read_bytes() == good
    monkeypatch.undo()
    # the disk write failing midway (fsync raising) leaves the old file and no temp file
    import dnnpy.serialization.files as files

    def boom(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files.os, "fsync", boom)
    with pytest.raises(OSError):
        dnnpy.serialize(net, path)
    monkeypatch.undo()
    assert path.read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == ["net.dnnpy"]


def test_solvers_round_trip_and_bytes(tmp_path):
    net = EXAMPLE()
    x = matrices(2)
    solvers = dnnpy.make_solvers(net, adam())
    for _ in range(2):
        net.compute_parameter_gradients(x, [0, 2])
        net.update_parameters(solvers, 0.01)
    path = tmp_path / "s.dnnpy"
    dnnpy.serialize(solvers, path)
    back = dnnpy.load(path)
    assert len(back) == 3 and all(isinstance(b, adam) for b in back)
    assert to_bytes(back, "dlib") == to_bytes(solvers, "dlib")
    assert back[0].t == 2 and np.array_equal(back[0].m.host_read(), solvers[0].m.host_read())
    # dlib bytes: vector size 3, then "adam2", m, v, s, 4 floats
    data = to_bytes(solvers, "dlib")
    assert data.startswith(hx("01 03") + s("adam2"))
    one = sgd(0.0005, 0.5)
    assert to_bytes(one, "dlib") == s("sgd2") + EMPTY + hx("03 6f 12 83 81 22") + hx("01 80 81 08")
    target = sgd()
    from_bytes(to_bytes(one), target)
    assert (target.weight_decay, target.momentum) == (np.float32(0.0005), 0.5)
    # a list is resized to the file's count, as dlib's std::vector
    into = [adam()]
    from_bytes(data, into)
    assert len(into) == 3 and to_bytes(into, "dlib") == data
    # a solver file read into the wrong solver type
    with pytest.raises(SerializationError, match="adam.*sgd|sgd.*adam"):
        from_bytes(to_bytes(back[0]), sgd())
    with pytest.raises(SerializationError, match="'sgd2', found 'adam2'"):
        from_bytes(to_bytes(back[0], "dlib"), sgd())


def _example_clean():
    net = EXAMPLE()
    net(matrices(2))
    net.clean()
    return net, to_bytes(net, "dlib")


def test_reads_older_wrapper_versions():
    """add_layer v1 (no params_grad) and the input add_layer v2 (no sample_expansion_factor)."""
    net, data = _example_clean()
    fc_at = 2 + len(s("loss_multiclass_log_"))
    assert data[fc_at:fc_at + 6] == hx("01 02 01 02 01 03")
    old = bytearray(data)
    old[fc_at + 1] = 1                                     # fc: add_layer v1 ...
    del old[-10:]                                          # ... has no params_grad
    old[fc_at + 5] = 2                                     # con on the input: v2 ...
    tail = b"111" + EMPTY * 3 + hx("01 01")
    i = bytes(old).index(tail)
    del old[i + len(tail) - 2:i + len(tail)]               # ... has no sample_expansion_factor
    target = EXAMPLE()
    from_bytes(bytes(old), target)
    assert to_bytes(target, "dlib") == data                # sef read as 1, params_grad empty


def test_wrapper_errors_name_the_layer_and_offset():
    net, data = _example_clean()
    fc_at = 2 + len(s("loss_multiclass_log_"))
    bad = bytearray(data)
    bad[fc_at + 1] = 5
    with pytest.raises(SerializationError, match=r"add_layer<fc_>.*version 1 or 2, found 5 \(at byte offset 24\)"):
        from_bytes(bytes(bad), EXAMPLE())
    bad = bytearray(data)
    bad[1] = 2
    with pytest.raises(SerializationError, match=r"add_loss_layer.*version 1, found 2"):
        from_bytes(bytes(bad), EXAMPLE())
    with pytest.raises(SerializationError, match="expected 'loss_multiclass_log_', found 'fc_3'|loss_multiclass_log_"):
        from_bytes(hx("01 01") + s("fc_3"), EXAMPLE())


def test_repeat_count_must_match():
    rt2 = loss_multiclass_log[fc[3, repeat[2, lambda sub: relu[fc[4, sub]], input[np.float32]]]]
    rt3 = loss_multiclass_log[fc[3, repeat[3, lambda sub: relu[fc[4, sub]], input[np.float32]]]]
    net = rt2()
    net(matrices(1))
    with pytest.raises(SerializationError, match="repeat: the file has 2 copies but the net type has 3"):
        from_bytes(to_bytes(net, "dlib"), rt3())


def test_hand_built_net_without_type():
    net = dnnpy.add_loss_layer(dnnpy.loss_multiclass_log_(), EXAMPLE().subnet())
    net.net_type = None
    with pytest.raises(SerializationError, match="format='dlib'"):
        to_bytes(net)
    data = to_bytes(net, "dlib")
    assert from_bytes(data, EXAMPLE()) is not None
