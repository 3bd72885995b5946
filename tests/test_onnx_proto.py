"""dnnpy.onnx.proto: our protobuf bytes parsed by the ``onnx`` package (a test extra) and run
by onnxruntime. Skipped without them."""

import numpy as np
import pytest

from dnnpy.onnx import proto
from helpers import ort_session

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _model(opset=17):
    w = np.arange(4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3) / 100
    b = np.array([1, -2, 3, -4], np.float32)
    nodes = [proto.node_proto("Conv", ["x", "W", "B"], ["c"], "conv",
                              {"strides": [1, 1], "pads": [1, 1, 1, 1], "kernel_shape": (3, 3)}),
             proto.node_proto("LeakyRelu", ["c"], ["l"], "", {"alpha": 0.25}),
             proto.node_proto("Reshape", ["l", "shape"], ["r"]),
             proto.node_proto("ArgMax", ["r"], ["idx"], "", {"axis": 1, "keepdims": 0}),
             proto.node_proto("Constant", [], ["k"], "", {"value": np.array([2.0], np.float32)}),
             proto.node_proto("Mul", ["r", "k"], ["y"])]
    inits = [proto.tensor_proto("W", w), proto.tensor_proto("B", b),
             proto.tensor_proto("shape", np.array([0, -1], np.int64))]
    g = proto.graph_proto("g", nodes, [proto.value_info_proto("x", proto.FLOAT, ["N", 3, 5, 4])],
                          [proto.value_info_proto("y", proto.FLOAT, ["N", 80]),
                           proto.value_info_proto("idx", proto.INT64, ["N"])], inits)
    return proto.model_proto(g, opset, 8, metadata={"dnnpy.net": "x", "ü": "välue"}), w, b


def test_parses_checks_and_runs():
    data, w, b = _model()
    m = onnx.load_from_string(data)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 8 and m.opset_import[0].version == 17 and m.opset_import[0].domain == ""
    assert {p.key: p.value for p in m.metadata_props} == {"dnnpy.net": "x", "ü": "välue"}
    assert [n.op_type for n in m.graph.node] == ["Conv", "LeakyRelu", "Reshape", "ArgMax", "Constant", "Mul"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in m.graph.node[0].attribute}
    assert attrs == {"strides": [1, 1], "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    assert onnx.helper.get_attribute_value(m.graph.node[1].attribute[0]) == 0.25
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(m.graph.initializer[0]), w)
    dims = m.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["N", 3, 5, 4]
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
    y, idx = ort_session(data).run(None, {"x": x})
    # the same graph built with onnx.helper gives the same numbers
    ref = onnx.helper
    g2 = ref.make_graph(
        [ref.make_node("Conv", ["x", "W", "B"], ["c"], strides=[1, 1], pads=[1, 1, 1, 1]),
         ref.make_node("LeakyRelu", ["c"], ["l"], alpha=0.25),
         ref.make_node("Reshape", ["l", "shape"], ["r"]),
         ref.make_node("Mul", ["r", "k"], ["y"])], "g2",
        [ref.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3, 5, 4])],
        [ref.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "W"), onnx.numpy_helper.from_array(b, "B"),
         onnx.numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
         onnx.numpy_helper.from_array(np.array([2.0], np.float32), "k")])
    m2 = ref.make_model(g2, opset_imports=[ref.make_opsetid("", 17)])
    m2.ir_version = 8
    y2 = ort_session(m2.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(idx, np.argmax(y, axis=1))


def test_negative_ints_bools_and_scalars():
    t = proto.tensor_proto("t", np.array([-1, 0, 2**40], np.int64))
    p = onnx.TensorProto()
    p.ParseFromString(t)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(p), [-1, 0, 2**40])
    a = onnx.AttributeProto()
    a.ParseFromString(proto.attribute_proto("axes", [-1, 3]))
    assert list(a.ints) == [-1, 3] and a.type == onnx.AttributeProto.INTS
    a.ParseFromString(proto.attribute_proto("scales", [0.5, 2.0]))
    assert list(a.floats) == [0.5, 2.0] and a.type == onnx.AttributeProto.FLOATS
    a = onnx.AttributeProto()
    a.ParseFromString(proto.attribute_proto("mode", "linear"))
    assert a.s == b"linear" and a.type == onnx.AttributeProto.STRING
    p = onnx.TensorProto()
    p.ParseFromString(proto.tensor_proto("m", np.array([[True, False]])))
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(p), [[True, False]])
    p.ParseFromString(proto.tensor_proto("s", np.float32(3.5)))
    assert onnx.numpy_helper.to_array(p).shape == () and onnx.numpy_helper.to_array(p) == 3.5
    with pytest.raises(TypeError, match="attribute 'bad'"):
        proto.attribute_proto("bad", {"a": 1})
    with pytest.raises(TypeError, match="complex128"):
        proto.tensor_proto("c", np.array([1j]))
