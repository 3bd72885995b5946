"""ONNX export (``dnnpy.onnx.export``): every net ONNX can express, written with our own
protobuf writer; ``onnx`` and ``onnxruntime`` are only test oracles for it (``dnnpy[onnx]``).
ONNX import (``dnnpy.onnx.import_model``): an ONNX graph as a dnnpy net, read with the ``onnx``
package. See docs/onnx.md."""

from .graph import graph_builder, onnx_export_error
from .export import OPSETS, export, export_bytes
from .decode import decode
from .importer import OPSET_RANGE, import_model, onnx_import_error

__all__ = ["export", "export_bytes", "decode", "onnx_export_error", "graph_builder", "OPSETS",
           "import_model", "onnx_import_error", "OPSET_RANGE"]
