"""ONNX export: the protobuf writer (``proto``); the exporter follows."""
