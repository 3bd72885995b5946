"""serialize_objects / deserialize_objects: several objects in one file in dlib's order
(``serialize(f) << net << labels``), both formats; bytes checked against dlib's encodings
written out by hand (dlib/serialize.h), reads atomic, errors naming the file and object."""

import io

import numpy as np
import pytest

import dnnpy
from dnnpy import (SerializationError, deserialize_objects, fc, input, loss_multiclass_log, relu,
                   serialize_objects)
from dnnpy.serialization import to_bytes

net_t = loss_multiclass_log[fc[3, relu[fc[4, input[np.float32]]]]]
seg_t = relu[fc[2, input[np.float32]]]


def _net(seed=0):
    net = net_t()
    net(np.random.default_rng(seed).standard_normal((2, 2, 2)).astype(np.float32))  # set up
    return net


def _params(net):
    return [n.layer_details().get_layer_params().numpy().copy()
            for n in dnnpy.computational_nodes(net)]


def test_dlib_bytes_are_the_objects_back_to_back():
    net = _net()
    buf = io.BytesIO()
    serialize_objects(buf, net, ["cat", "dog"], 7, format="dlib")
    # std::vector<std::string>: count, then each (length, bytes); size_t 7: one magnitude byte
    tail = b"\x01\x02" + b"\x01\x03cat" + b"\x01\x03dog" + b"\x01\x07"
    assert buf.getvalue() == to_bytes(net, "dlib") + tail


def test_reads_a_dlib_file_holding_a_net_then_labels(tmp_path):
    """The layout of dlib's resnet34_1000_imagenet_classifier.dnn: a net, then labels."""
    net = _net(1)
    path = tmp_path / "classifier.dnn"
    path.write_bytes(to_bytes(net, "dlib") + b"\x01\x02" + b"\x01\x01a" + b"\x01\x02bb")
    got, labels = deserialize_objects(path, net_t, list[str])
    assert labels == ["a", "bb"]
    for a, b in zip(_params(got), _params(net)):
        np.testing.assert_array_equal(a, b)
    target = net_t()
    got2, _ = deserialize_objects(path, target, list[str])
    assert got2 is target


def test_dnnpy_format_round_trip_and_rebuild_from_header(tmp_path):
    net = _net(2)
    seg = {"b": seg_t(), "a": seg_t()}
    seg["a"](np.ones((1, 2, 2), np.float32))
    path = tmp_path / "bundle.dnnpy"
    serialize_objects(path, net, ["x", "y"], seg, 12345678901, 0.25, True, "note",
                      {"k": "v"}, [dnnpy.adam()])
    assert path.read_bytes().startswith(b"DNNPY\0")
    out = deserialize_objects(path)             # everything rebuilt from the header
    n2, labels, seg2, i, f, b, s, m, solvers = out
    assert (labels, i, f, b, s, m) == (["x", "y"], 12345678901, 0.25, True, "note", {"k": "v"})
    assert list(seg2) == ["a", "b"] and isinstance(solvers[0], dnnpy.adam)
    for a, c in zip(_params(n2) + _params(seg2["a"]), _params(net) + _params(seg["a"])):
        np.testing.assert_array_equal(a, c)
    with pytest.raises(SerializationError, match="several objects.*deserialize_objects"):
        dnnpy.load(path)


def test_map_is_written_in_std_map_key_order():
    buf = io.BytesIO()
    serialize_objects(buf, {"b": "2", "a": "1"}, format="dlib")
    assert buf.getvalue() == b"\x01\x02" + b"\x01\x01a\x01\x011" + b"\x01\x01b\x01\x012"


@pytest.mark.parametrize("fmt", ["dlib", "dnnpy"])
def test_failed_read_names_the_object_and_changes_nothing(tmp_path, fmt):
    net = _net(3)
    path = tmp_path / "f.bin"
    buf = io.BytesIO()
    serialize_objects(buf, net, ["a", "b"], format=fmt)
    data = buf.getvalue()
    target = _net(4)
    before = _params(target)
    if fmt == "dlib":       # truncated in the labels
        path.write_bytes(data[:-1])
        with pytest.raises(SerializationError, match=r"f\.bin: object 1 of 2: .*string"):
            deserialize_objects(path, target, list[str])
        path.write_bytes(data + b"\x00")
        with pytest.raises(SerializationError, match="after 2 objects, but 1 more"):
            deserialize_objects(path, target, list[str])
    else:                   # the header says what is there
        path.write_bytes(data)
        with pytest.raises(SerializationError, match=r"object 1 in the file is a strings.*int"):
            deserialize_objects(path, target, int)
        with pytest.raises(SerializationError, match="holds 2 objects but 1 were asked"):
            deserialize_objects(path, target)
    for a, b in zip(_params(target), before):
        np.testing.assert_array_equal(a, b)


def test_failed_save_leaves_the_file_alone(tmp_path):
    path = tmp_path / "keep.dat"
    serialize_objects(path, "old")
    with pytest.raises(SerializationError, match="object 1: a dict must have str keys"):
        serialize_objects(path, "new", {1: "x"})
    with pytest.raises(SerializationError, match="object 1: .*cannot serialize a set"):
        serialize_objects(path, "new", {"x"})
    assert deserialize_objects(path, str) == ("old",)
