"""A minimal protobuf writer for the ONNX messages the exporter needs (numpy only).

Protocol buffers' wire format: every field is a key ``(field_number << 3) | wire_type``
(a varint) followed by its value: wire type 0 a varint (int32/int64/enum/bool; negative
numbers as their 64-bit two's complement), 5 four little-endian bytes (float), 2 a
length-delimited byte string (strings, bytes, embedded messages, packed repeated
numbers). Each function below returns one message's bytes; an embedded message is written
as a length-delimited field of its parent. Field numbers are those of ``onnx.proto3``
(onnx 1.x; the schema has been stable since IR version 3).

Only what the exporter writes is here: ModelProto (with opset imports and
``metadata_props``), GraphProto, NodeProto, AttributeProto (float, int, string, tensor,
floats, ints), TensorProto (``raw_data``, little-endian) and ValueInfoProto with a tensor
type and a shape whose dimensions are numbers or symbolic names.
"""

from __future__ import annotations

import numbers
import struct

import numpy as np

__all__ = ["FLOAT", "UINT8", "INT64", "BOOL", "tensor_proto", "attribute_proto", "node_proto",
           "value_info_proto", "graph_proto", "model_proto", "elem_type_of"]

# TensorProto.DataType values
FLOAT, UINT8, INT8, INT32, INT64, BOOL, DOUBLE = 1, 2, 3, 6, 7, 9, 11
_ELEM_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
               np.dtype(np.int32): INT32, np.dtype(np.int64): INT64, np.dtype(np.bool_): BOOL,
               np.dtype(np.float64): DOUBLE}

# AttributeProto.AttributeType values
_A_FLOAT, _A_INT, _A_STRING, _A_TENSOR, _A_FLOATS, _A_INTS = 1, 2, 3, 4, 6, 7


def elem_type_of(dtype) -> int:
    """The ONNX element type of a numpy dtype (float32, uint8, int8, int32, int64, bool, float64)."""
    try:
        return _ELEM_TYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"onnx proto: no ONNX element type for dtype {np.dtype(dtype)}") from None


# -- wire format -------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int32/int64 fields: 10-byte two's complement, as protobuf does
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(int(value))


def _float(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", float(value))


def _bytes(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _str(field: int, s: str) -> bytes:
    return _bytes(field, s.encode("utf-8"))


def _packed_ints(field: int, values) -> bytes:
    return _bytes(field, b"".join(_varint(int(v)) for v in values))


def _packed_floats(field: int, values) -> bytes:
    return _bytes(field, np.asarray(values, dtype="<f4").tobytes())


# -- messages ----------------------------------------------------------------------------

def tensor_proto(name: str, array) -> bytes:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    a = np.asarray(array)
    etype = elem_type_of(a.dtype)
    raw = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    out = b"".join(_int(1, d) for d in a.shape)  # dims: repeated int64 (unpacked is valid too)
    return out + _int(2, etype) + _str(8, name) + _bytes(9, raw)


def attribute_proto(name: str, value) -> bytes:
    """AttributeProto: name (1), then by type: f (2), i (3), s (4), t (5), floats (7),
    ints (8); type (20). ``value``: bool/int -> INT, float -> FLOAT, str/bytes -> STRING,
    numpy array -> TENSOR, a list/tuple of ints -> INTS, of floats -> FLOATS."""
    out = _str(1, name)
    if isinstance(value, np.ndarray):
        return out + _bytes(5, tensor_proto("", value)) + _int(20, _A_TENSOR)
    if isinstance(value, (bool, numbers.Integral)):
        return out + _int(3, int(value)) + _int(20, _A_INT)
    if isinstance(value, numbers.Real):
        return out + _float(2, value) + _int(20, _A_FLOAT)
    if isinstance(value, (str, bytes)):
        data = value.encode("utf-8") if isinstance(value, str) else value
        return out + _bytes(4, data) + _int(20, _A_STRING)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (bool, numbers.Integral)) for v in value):
            return out + _packed_ints(8, value) + _int(20, _A_INTS)
        if all(isinstance(v, numbers.Real) for v in value):
            return out + _packed_floats(7, value) + _int(20, _A_FLOATS)
    raise TypeError(f"onnx proto: attribute {name!r} has an unsupported value {value!r}")


def node_proto(op_type: str, inputs, outputs, name: str = "", attributes=None, domain: str = "") -> bytes:
    """NodeProto: input (1), output (2), name (3), op_type (4), attribute (5), domain (7).
    An empty input name is an omitted optional input."""
    out = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    if name:
        out += _str(3, name)
    out += _str(4, op_type)
    for k, v in (attributes or {}).items():
        out += _bytes(5, attribute_proto(k, v))
    if domain:
        out += _str(7, domain)
    return out


def value_info_proto(name: str, elem_type: int, shape) -> bytes:
    """ValueInfoProto: name (1), type (2) = TypeProto{tensor_type (1) = {elem_type (1),
    shape (2) = TensorShapeProto{dim (1) = {dim_value (1) | dim_param (2)}}}}. A dimension is
    an int or a symbolic name (str); ``shape`` None leaves the shape unknown."""
    tensor_type = _int(1, elem_type)
    if shape is not None:
        dims = b""
        for d in shape:
            dim = _str(2, d) if isinstance(d, str) else _int(1, d)
            dims += _bytes(1, dim)
        tensor_type += _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def graph_proto(name: str, nodes, inputs, outputs, initializers=(), value_infos=(), doc_string="") -> bytes:
    """GraphProto: node (1), name (2), initializer (5), doc_string (10), input (11),
    output (12), value_info (13). Every argument holds already serialized messages."""
    out = b"".join(_bytes(1, n) for n in nodes) + _str(2, name)
    out += b"".join(_bytes(5, t) for t in initializers)
    if doc_string:
        out += _str(10, doc_string)
    out += b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    out += b"".join(_bytes(13, v) for v in value_infos)
    return out


def model_proto(graph: bytes, opset: int, ir_version: int = 8, producer_name: str = "dnnpy",
                producer_version: str = "", metadata=None, doc_string: str = "") -> bytes:
    """ModelProto: ir_version (1), producer_name (2), producer_version (3), doc_string (6),
    graph (7), opset_import (8) = OperatorSetIdProto{domain (1), version (2)} for the
    default domain, metadata_props (14) = StringStringEntryProto{key (1), value (2)}."""
    out = _int(1, ir_version) + _str(2, producer_name)
    if producer_version:
        out += _str(3, producer_version)
    if doc_string:
        out += _str(6, doc_string)
    out += _bytes(7, graph) + _bytes(8, _str(1, "") + _int(2, opset))
    for k, v in (metadata or {}).items():
        out += _bytes(14, _str(1, str(k)) + _str(2, str(v)))
    return out
