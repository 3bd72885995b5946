"""Serialization in dlib's byte format (see ``docs/serialization.md``).

Modules:

- ``files.py``: ``serialize`` / ``deserialize`` / ``load`` (dnnpy header with a checksum, or
  raw dlib bytes; atomic saves), ``to_bytes`` / ``from_bytes``, ``with_header`` /
  ``read_header``
- ``net.py``: ``write_net`` / ``read_net``: whole nets in dlib's wrapper layout (atomic reads)
- ``objects.py``: ``serialize_objects`` / ``deserialize_objects``: several objects in one
  file, in dlib's order (``serialize(f) << net << labels``)
- ``packed.py``: dlib's packed integers and floats, a whole stream at a time, with numpy
- ``primitives.py``: ``Writer`` / ``Reader``, dlib's encodings of integers, floats, strings,
  tensors and alias_tensors
"""

from .files import (FORMAT_VERSION, MAGIC, READABLE_VERSIONS, atomic_write, deserialize,
                    from_bytes, load, read_header, read_solvers_staged, serialize, to_bytes,
                    with_header, write_solvers)
from .objects import deserialize_objects, serialize_objects
from .net import read_net, read_net_staged, read_object, write_net, write_object
from .primitives import Reader, Writer
from ..errors import SerializationError

__all__ = ["Writer", "Reader", "SerializationError", "write_net", "read_net", "read_net_staged",
           "write_object", "read_object", "serialize", "deserialize", "load",
           "serialize_objects", "deserialize_objects", "to_bytes",
           "from_bytes", "atomic_write", "write_solvers", "read_solvers_staged", "with_header",
           "read_header", "MAGIC", "FORMAT_VERSION", "READABLE_VERSIONS"]
