"""ONNX export (``dnnpy.onnx.export``): every net ONNX can express, written with our own
protobuf writer; ``onnx`` and ``onnxruntime`` are only test oracles for it (``dnnpy[onnx]``).
ONNX import (``dnnpy.onnx.import_model``): an ONNX graph as a dnnpy net, read with the ``onnx``
package. See docs/onnx.md.

Modules:

- ``decode.py``: ``decode``: labels (``loss_mmod`` and ``loss_yolo`` detections) from an ONNX
  runtime's outputs
- ``export.py``: ``export``: a dnnpy (or dlib) net as an ONNX model
- ``graph.py``: the graph builder the layers' ONNX converters write into
- ``importer.py``: ``import_model``: an ONNX model as a dnnpy net, its weights loaded (the
  graph walk: chains, blocks, tags, constant folding)
- ``layer_mapping.py``: one ONNX node as one dlib layer, and the values put into it
- ``proto.py``: a minimal protobuf writer for the ONNX messages (numpy only)
"""

from .graph import graph_builder, onnx_export_error
from .export import OPSETS, export, export_bytes
from .decode import decode
from .importer import OPSET_RANGE, import_model, onnx_import_error

__all__ = ["export", "export_bytes", "decode", "onnx_export_error", "graph_builder", "OPSETS",
           "import_model", "onnx_import_error", "OPSET_RANGE"]
