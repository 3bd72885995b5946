"""ONNX export (``dnnpy.onnx.export``): every net ONNX can express, written with our own
protobuf writer; ``onnx`` and ``onnxruntime`` are only test oracles (``dnnpy[onnx]``).
See docs/onnx.md."""

from .graph import graph_builder, onnx_export_error
from .export import OPSETS, export, export_bytes
from .decode import decode

__all__ = ["export", "export_bytes", "decode", "onnx_export_error", "graph_builder", "OPSETS"]
