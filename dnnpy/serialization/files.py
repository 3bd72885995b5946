"""The public save/load API: ``serialize``, ``deserialize``, ``load`` (and their in-memory
forms ``to_bytes`` / ``from_bytes``), the dnnpy header, and atomic saves.

Two formats:

* ``"dlib"``: dlib's bytes (``serialize("f.dat") << net``): no header.
* ``"dnnpy"``: a header, then the same dlib bytes. The header (format version 2) is the raw
  magic ``b"DNNPY\\0"``, then in dlib's encodings the format version (unsigned, 2) and the
  length of the payload (unsigned), then the CRC32 of the payload (4 raw bytes, little-endian),
  then the payload: the object kind (string: ``"net"``, ``"solver"``, ``"solvers"``,
  ``"object"``, or ``"dnn_trainer"`` for a trainer's sync file), the type expression (string:
  ``repr(net.net_type)`` for a net, the class name of a solver / solvers' element / object),
  then the dlib bytes. A changed, missing or extra byte anywhere is a ``SerializationError``.
  Version 1 files (no length, no checksum: magic, version, kind, type, body) are still read.
  ``load`` rebuilds a net from the type expression with ``net_type_from_string`` (no
  ``eval``).

Which format: ``format=None`` (the default) picks dlib's for a path (or a file object's
``name``) ending in ``.dat``, dlib's usual extension, and dnnpy's otherwise; an explicit
``format=`` always wins.

Cached tensors: ``clean=True`` (the default, both formats) writes the net as dlib writes it
after ``net.clean()``: no cached outputs, no gradients. The caller's net is not touched (a
cleaned copy is written). ``clean=False`` writes the net as it is, caches included: with
``format="dlib"`` these are exactly the bytes dlib writes for the same net.

Objects: a net (any node; nets with a loss are dlib's usual files), a solver (``sgd``,
``adam``), a list of solvers (dlib's ``std::vector<solver>``: count, then each), or any object
with ``serialize(w)``/``deserialize(r)`` (a layer's details). Reading checks that the whole
input was consumed and is atomic: on any error the target is unchanged.
"""

from __future__ import annotations

import contextlib
import copy
import os
import zlib

from ..core import net_node
from ..parsing import net_type_from_string
from ..templates import NetType, refresh_net_types, repeat
from ..solvers import adam, sgd
from ..atomic import atomic_write
from ..errors import FileOverrideWarning, SerializationError, warn
from .net import _adopt, read_net_staged, read_object, write_net, write_object
from .primitives import Reader, Writer

__all__ = ["serialize", "deserialize", "load", "to_bytes", "from_bytes", "atomic_write",
           "write_solvers", "read_solvers_staged", "with_header", "read_header", "MAGIC",
           "FORMAT_VERSION", "READABLE_VERSIONS", "read_source", "not_a_net_reason",
           "solver_classes", "object_kind", "write_body", "stage_object", "warn_about_overrides", "default_format",
           "cleaned", "solver_from_name", "refuse_plainly_not_a_net", "node_count", "header_net_type",
           "build_header_net"]

MAGIC = b"DNNPY\0"
FORMAT_VERSION = 2              # the version written
READABLE_VERSIONS = (1, 2)      # 1: no payload length, no checksum
FORMATS = ("dnnpy", "dlib")
_DLIB_EXTENSIONS = (".dat",)

# ----------------------------------------------------------------------------------------
# kinds of objects

def solver_classes():
    """``{record name: solver class}`` for the solvers a dnnpy file can hold."""

    return {"sgd": sgd, "adam": adam}


def _is_solver(obj):
    return isinstance(obj, tuple(solver_classes().values()))


def object_kind(obj):
    """``(kind, type expression)`` of an object to save."""
    if isinstance(obj, net_node):
        if obj.net_type is None:
            return "net", None
        return "net", repr(obj.net_type)
    if isinstance(obj, (list, tuple)):
        names = {type(s).__name__ for s in obj}
        if not all(_is_solver(s) for s in obj) or len(names) > 1:
            raise SerializationError("serialize: a list must hold solvers of one type (dlib's "
                                     f"std::vector<solver>), got {sorted(names)}")
        return "solvers", names.pop() if names else ""
    if _is_solver(obj):
        return "solver", type(obj).__name__
    if hasattr(obj, "serialize"):
        return "object", type(obj).__name__
    raise SerializationError(f"serialize: cannot serialize a {type(obj).__name__}: expected a net, "
                             f"a solver, a list of solvers or an object with serialize(w)")


def write_solvers(w: Writer, solvers):
    """dlib's ``std::vector<solver>``: the count (unsigned), then each solver."""
    w.uint(len(solvers))
    for s in solvers:
        write_object(w, s, "solver")


def write_body(w, obj, kind):
    if kind == "net":
        write_net(w, obj)
    elif kind == "solvers":
        write_solvers(w, obj)
    else:
        write_object(w, obj, kind)


def default_format(target):
    """dlib's format for a ``.dat`` path (or a file object named so), dnnpy's otherwise."""
    name = getattr(target, "name", None) if hasattr(target, "write") else target
    try:
        name = os.fspath(name) if name is not None else ""
    except TypeError:
        return "dnnpy"
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return "dlib" if str(name).lower().endswith(_DLIB_EXTENSIONS) else "dnnpy"


def cleaned(obj):
    """A copy of net ``obj`` after dlib's ``clean()`` (the caller's net is not touched)."""
    if not isinstance(obj, net_node):
        return obj
    out = copy.deepcopy(obj)
    out.clean()
    return out


def with_header(kind: str, expr: str, body: bytes) -> bytes:
    """``body`` (dlib bytes) behind a dnnpy header naming ``kind`` and the type expression
    ``expr``, with the payload's length and CRC32 (format version ``FORMAT_VERSION``)."""
    payload = Writer()
    payload.string(kind)
    payload.string(expr)
    payload.raw(body)
    payload = payload.buffer
    w = Writer()
    w.raw(MAGIC)
    w.uint(FORMAT_VERSION)
    w.uint(len(payload))
    w.raw((zlib.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "little"))
    w.raw(payload)
    return w.bytes()


def to_bytes(obj, format="dnnpy", clean=True) -> bytes:
    """The bytes ``serialize(obj, path, format, clean)`` writes (``format`` is ``"dnnpy"`` or
    ``"dlib"``; ``None`` means dnnpy here, as there is no file name to go by)."""
    if format is None:
        format = "dnnpy"
    if format not in FORMATS:
        raise ValueError(f"serialize: format must be one of {FORMATS} (or None: by the file "
                         f"name's extension), got {format!r}")
    kind, expr = object_kind(obj)
    if format == "dnnpy" and expr is None:
        raise SerializationError("serialize: this net was not built from a net type (it has no "
                                 "net_type), so the dnnpy header cannot name its type; use "
                                 "format='dlib'")
    w = Writer()
    # a net another thread trains or runs is read between its calls (core/calls.py's lock)
    with obj.input_node().lock if isinstance(obj, net_node) else contextlib.nullcontext():
        write_body(w, cleaned(obj) if clean else obj, kind)
    if format == "dlib":
        return w.bytes()
    return with_header(kind, expr, w.buffer)


# ----------------------------------------------------------------------------------------
# files

def serialize(obj, path_or_file, format=None, clean=True):
    """Save ``obj`` (a net, a solver, a list of solvers) to a path (atomically) or to a
    binary file object.

    ``format``: ``"dnnpy"`` (a header that lets ``load`` rebuild the net, with a checksum),
    ``"dlib"`` (dlib's bytes, no header), or ``None`` (default): ``"dlib"`` when the file name
    ends in ``.dat``, else ``"dnnpy"``.
    ``clean``: ``True`` (default) writes the net without its cached outputs and gradients,
    as dlib writes it after ``net.clean()``, without touching ``obj``; ``False`` writes them
    too (``format="dlib", clean=False`` gives exactly dlib's bytes for a net holding its
    caches). The bytes are built in memory first, so a failure while serializing never
    touches the destination."""
    if format is None:
        format = default_format(path_or_file)
    data = to_bytes(obj, format, clean)
    if hasattr(path_or_file, "write"):
        path_or_file.write(data)
    else:
        atomic_write(path_or_file, data)


def _is_data(x):
    """Whether ``x`` passed as a path is a file's bytes instead (``load(data)``): a bytearray
    or memoryview, or bytes that cannot be a path (empty, a NUL byte, the dnnpy magic)."""
    if isinstance(x, (bytearray, memoryview)):
        return True
    return isinstance(x, bytes) and (not x or b"\0" in x or x.startswith(MAGIC) or len(x) > 4096)


def read_source(path_or_file, bytes_are_data=False):
    """``(bytes, name)`` of a path, a binary file object or bytes. ``bytes_are_data``: any
    ``bytes`` is the data (for readers whose paths are never given as bytes); by default only
    bytes that cannot be a path are (``_is_data``)."""
    if hasattr(path_or_file, "read"):
        data = path_or_file.read()
        return data, getattr(path_or_file, "name", "stream")
    if (bytes_are_data and isinstance(path_or_file, bytes)) or _is_data(path_or_file):
        return bytes(path_or_file), "bytes"
    path = os.fspath(path_or_file)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise SerializationError(f"{path}: cannot read the file: {e.strerror or e}") from e


# what a file that is not a net may be, by its first bytes
_KNOWN_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a zip archive (a PyTorch .pt/.pth file is one)"),
    (b"\x1f\x8b", "a gzip-compressed file: decompress it first"),
    (b"BZh", "a bzip2-compressed file (dlib's downloads are .dat.bz2): decompress it first, "
             "e.g. with bunzip2"),
    (b"\xfd7zXZ\x00", "an xz-compressed file: decompress it first"),
    (b"\x93NUMPY", "a numpy .npy file"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file (Keras?)"),
    (b"%PDF", "a PDF document"),
)


def not_a_net_reason(data):
    """What ``data`` is when it plainly is not a net file (empty, a known magic number),
    else None."""
    if len(data) == 0:
        return "the file is empty (0 bytes): not a net file"
    head = bytes(data[:16])
    for magic, what in _KNOWN_MAGIC:
        if head.startswith(magic):
            return f"not a net file: this is {what}"
    return None


def refuse_other_files(data, name, what):
    """Raise ``SerializationError`` when ``data`` (read from ``name``) plainly is not ``what``
    (e.g. "a shape predictor"): a dnnpy file (use dnnpy.load), empty, or a known other format."""
    if data[:len(MAGIC)] == MAGIC:
        raise SerializationError(f"{name}: a dnnpy file (a net, solver or objects), not {what}: "
                                 f"use dnnpy.load")
    why = not_a_net_reason(data)
    if why:
        raise SerializationError(f"{name}: {why.replace('not a net file', f'not {what}')}")


def _looks_like_text(data):
    head = bytes(data[:512])
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\t\r\n" for c in text)


def read_header(r: Reader):
    """The dnnpy header at ``r``'s position (the start of the data): ``(kind, type
    expression)`` with ``r`` left at the body, or ``None`` (``r`` unmoved) when there is no
    magic (a dlib-format body). Version 2 checks that the payload has the announced length
    and CRC32; version 1 (no length, no checksum) is read as it was written. Raises
    ``SerializationError`` naming the source."""
    if bytes(r.data[r.pos:r.pos + len(MAGIC)]) != MAGIC:
        return None
    r.pos += len(MAGIC)
    start = r.pos
    version = r.uint("the dnnpy format version")
    if version not in READABLE_VERSIONS:
        raise r.error(f"expected a dnnpy format version in {READABLE_VERSIONS}, found {version} "
                      f"(a file from a newer dnnpy?)", start)
    if version >= 2:
        start = r.pos
        length = r.uint("the payload length")
        crc = int.from_bytes(r.raw(4, "bytes of the payload checksum"), "little")
        found = r.remaining()
        if found < length:
            raise r.error(f"the file is truncated: its header announces {length} bytes of payload "
                          f"but only {found} follow", start)
        if found > length:
            raise r.error(f"expected the end of the data after the {length} bytes of payload the "
                          f"header announces, but {found - length} more bytes follow", start)
        actual = zlib.crc32(r.data[r.pos:]) & 0xFFFFFFFF
        if actual != crc:
            raise r.error(f"checksum failed: the header's CRC32 of the payload is 0x{crc:08x} but "
                          f"the payload's is 0x{actual:08x}; the file is corrupt (a byte after "
                          f"offset {r.pos} changed)", start)
    kind = r.string("the object kind")
    expr = r.string("the type expression")
    return kind, expr


_read_header = read_header


def _expect_end(r, what):
    if not r.at_end():
        raise r.error(f"expected the end of the data after {what}, but {r.remaining()} more "
                      f"bytes follow")


def _check_kind(r, header, kind, expected_expr):
    if header is None:
        return
    found_kind, found_expr = header
    if found_kind != kind:
        raise r.error(f"the file holds a {found_kind} ({found_expr}) but a {kind} was given to read into")
    if expected_expr is not None and found_expr != expected_expr and not (kind == "solvers" and not found_expr):
        raise r.error(f"the file holds the type {found_expr} but the {kind} given has the type "
                      f"{expected_expr}")


def solver_from_name(r, name):
    cls = solver_classes().get(name)
    if cls is None:
        raise r.error(f"unknown solver type {name!r} (expected one of {sorted(solver_classes())})")
    return cls()


def _blank(proto):
    """A new solver of ``proto``'s type for dlib's ``vector::resize`` (a default-constructed
    one: every field is then read from the file), without copying ``proto``'s state tensors."""
    try:
        return type(proto)()
    except TypeError:
        return copy.deepcopy(proto)


def read_solvers_staged(r: Reader, solvers, element=None):
    """Read dlib's ``std::vector<solver>`` into the list ``solvers`` (resized to the file's
    count, as dlib does; new entries are new solvers of the type of ``solvers[0]`` or of
    ``element``).
    Returns the commit function; ``solvers`` is untouched until it runs."""
    start = r.pos
    n = r.uint("the number of solvers")
    if n > r.remaining():  # every solver takes more than one byte: a bad count fails fast
        raise r.error(f"the file claims {n} solvers but only {r.remaining()} bytes remain", start)
    proto = solvers[0] if len(solvers) else element
    if proto is None and n:
        raise r.error("cannot tell the solver type to read into an empty list; pass a list holding "
                      "one solver of the wanted type")
    staged = []
    for i in range(n):
        # copy one, read it, then the next: a corrupt count fails when the data runs out,
        # before it has made more copies of a (possibly large) solver than the file can fill
        s = copy.deepcopy(solvers[i]) if i < len(solvers) else _blank(proto)
        read_object(r, s, "solver")
        staged.append(s)

    def commit():
        old = list(solvers)
        solvers[:] = [_adopt(old[i], s) if i < len(old) else s for i, s in enumerate(staged)]
    return commit


def stage_object(r, obj, header):
    """Read the body into a staged copy of ``obj``; returns the commit function."""
    if isinstance(obj, net_node):
        _check_kind(r, header, "net", repr(obj.net_type) if obj.net_type is not None else None)
        commit = read_net_staged(r, obj)
        return lambda: (commit(), warn_about_overrides(obj, r.what))
    if isinstance(obj, tuple):
        raise SerializationError("deserialize: cannot read into a tuple; pass a list of solvers")
    if isinstance(obj, list):
        element = None
        if header is not None:
            _check_kind(r, header, "solvers", type(obj[0]).__name__ if obj else None)
            if not obj and header[1]:
                element = solver_from_name(r, header[1])
        return read_solvers_staged(r, obj, element)
    kind = "solver" if _is_solver(obj) else "object"
    if not hasattr(obj, "deserialize"):
        raise SerializationError(f"deserialize: cannot read into a {type(obj).__name__}: expected a "
                                 f"net, a solver, a list of solvers or an object with deserialize(r)")
    _check_kind(r, header, kind, type(obj).__name__)
    staged = copy.deepcopy(obj)
    read_object(r, staged, kind)
    return lambda: _adopt(obj, staged)


def warn_about_overrides(net, what):
    """After a read: when the file gave layers other template arguments than ``net``'s type
    declared (``fc[16, ...]`` declared, 32 outputs in the file; dlib takes the file's), make
    ``net.net_type`` report the file's values and say so (``FileOverrideWarning``)."""
    changes = refresh_net_types(net)
    if not changes:
        return
    said = [f"layer<{net.index_of(node)}> {name}: {param}={declared!r} declared, {actual!r} in the file"
            for node, name, param, declared, actual in changes[:3]]
    more = f" (and {len(changes) - 3} more)" if len(changes) > 3 else ""
    warn(f"{what}: the file overrides template arguments of the declared net type: "
                  f"{'; '.join(said)}{more}. The net has the file's values, as in dlib, and "
                  f"net.net_type now reports them", FileOverrideWarning)


def _read_into(r, obj, header):
    """Read the body at ``r`` (after ``header``) into ``obj``; the whole input must be consumed."""
    try:
        commit = stage_object(r, obj, header)
        _expect_end(r, "the serialized object")
    except SerializationError:
        raise
    except Exception as e:  # noqa: BLE001 - never anything but a SerializationError
        raise r.error(f"reading failed: {type(e).__name__}: {e}") from e
    commit()
    return obj


def refuse_plainly_not_a_net(data, name):
    plainly = not_a_net_reason(data)
    if plainly:
        raise SerializationError(f"{name}: {plainly}")


def from_bytes(data, obj, what="bytes"):
    """Read ``data`` (either format) into ``obj``; the whole input must be consumed."""
    r = Reader(data, what)
    header = read_header(r)
    if header is None:
        refuse_plainly_not_a_net(data, what)
    return _read_into(r, obj, header)


def deserialize(path_or_file, obj):
    """Read a file (dnnpy or dlib format; detected by the magic) into ``obj`` (a net, a
    solver, a list of solvers); ``path_or_file`` is a path, a binary file object or bytes. Raises ``SerializationError`` (what was expected, what was
    found, the byte offset) on any malformed, truncated or mismatched input, or trailing
    bytes, and then leaves ``obj`` unchanged. Returns ``obj``."""
    data, name = read_source(path_or_file)
    return from_bytes(data, obj, name)


def node_count(net_type, cap):
    """The number of wrapper nodes ``net_type()`` builds (each ``repeat`` copy counted), or
    some number above ``cap`` as soon as it exceeds it: a repeat count in a corrupted or
    hostile header must not make a reader build millions of layers before the read fails."""
    count = 0
    while isinstance(net_type, NetType):
        count += 1
        if net_type.template is repeat:
            reps, block = net_type.args
            count += reps * node_count(block, cap)
        if count > cap:
            return count
        net_type = net_type.subnet
    return count


def header_net_type(r: Reader, expr, budget=None):
    """The net type a dnnpy header names (``expr``), for every reader that rebuilds one
    (``load``, ``deserialize_objects``, ``dnnpy info`` on a trainer's sync file): parsed with
    the parser's length and depth caps, and refused when it has more layers (repeat counts
    included) than ``budget`` bytes could hold (default: the bytes that follow ``r``'s
    position; every layer takes at least one), before any layer is built. Returns ``(net
    type, its layer count)``; raises ``SerializationError`` naming the file."""
    budget = r.remaining() if budget is None else budget
    try:
        net_type = net_type_from_string(expr)
    except Exception as e:  # noqa: BLE001 - a ValueError from the parser; never anything else out
        hint = ""
        if "unknown template" in str(e):
            hint = (" (a layer, loss or input of your own? import the module that defines it "
                    "before loading: its template registers the name; with the command "
                    "line, dnnpy info --import MODULE)")
        raise SerializationError(f"{r.what}: the file's net type {_quoted(expr)} cannot be rebuilt: "
                                 f"{e}{hint}") from e
    nodes = node_count(net_type, budget)
    if nodes > budget:
        raise r.error(f"the file's net type {_quoted(expr)} has "
                      f"{nodes if nodes < 1 << 62 else 'over 2**62'} layers (repeat counts "
                      f"included) but only {budget} bytes are left for them, and every layer "
                      f"takes at least one")
    return net_type, nodes


def build_header_net(r: Reader, net_type, expr):
    """``net_type()`` for a reader (``expr``: the header's text of it), any failure a
    ``SerializationError`` naming the file."""
    try:
        return net_type()
    except RecursionError as e:
        raise SerializationError(f"{r.what}: cannot construct the file's net type {_quoted(expr)}: "
                                 f"it is nested deeper than a net dnnpy can build (Python's "
                                 f"recursion limit)") from e
    except Exception as e:  # noqa: BLE001 - whatever a layer's constructor raised
        raise SerializationError(f"{r.what}: cannot construct the file's net type "
                                 f"{_quoted(expr)}: {type(e).__name__}: {e}") from e


def _quoted(expr, limit=200):
    """A type expression from a file, for a message: at most ``limit`` characters (a text in
    parentheses as it is)."""
    if expr.startswith("("):
        return expr
    return repr(expr) if len(expr) <= limit else repr(expr[:limit]) + f"... ({len(expr)} characters)"


def load(path_or_file):
    """Rebuild what a dnnpy-format file holds: a net (its type parsed from the header, no
    ``eval``), a solver or a list of solvers. ``path_or_file``: a path, a binary file object,
    or the file's bytes. A net with layers of your own needs the module that defines them
    imported first (its templates register their names)."""
    data, name = read_source(path_or_file)
    r = Reader(data, name)
    header = read_header(r)
    if header is None:
        refuse_plainly_not_a_net(data, name)
        text = " (it looks like a text file)" if _looks_like_text(data) else ""
        raise SerializationError(f"{name}: no dnnpy header: a dlib-format file, or not a net "
                                 f"file{text}. A dlib-format file does not say its net type: build "
                                 f"the net and use dnnpy.deserialize(path, net_type())")
    kind, expr = header
    if kind == "net":
        obj = build_header_net(r, header_net_type(r, expr)[0], expr)
    elif kind == "solver":
        obj = solver_from_name(r, expr)
    elif kind == "solvers":
        obj = []
    elif kind == "dnn_trainer":
        raise SerializationError(f"{name}: this is a dnn_trainer's synchronization file (net type "
                                 f"{expr}); the trainer reads it (set_synchronization_file), and "
                                 f"`dnnpy info {name}` describes it")
    elif kind == "objects":
        raise SerializationError(f"{name}: this file holds several objects; read them with "
                                 f"dnnpy.deserialize_objects({name!r}) (a tuple, rebuilt from the "
                                 f"header)")
    else:
        raise SerializationError(f"{name}: load cannot rebuild a {kind!r} ({expr}); use "
                                 f"dnnpy.deserialize(path, obj) with an object of that type")
    return _read_into(r, obj, header)
