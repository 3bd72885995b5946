"""The public save/load API: ``serialize``, ``deserialize``, ``load`` (and their in-memory
forms ``to_bytes`` / ``from_bytes``), the dnnpy header, and atomic saves.

Two formats:

* ``"dlib"``: exactly the bytes dlib writes (``serialize("f.dat") << net``): no header.
* ``"dnnpy"`` (default): a header, then the same dlib bytes. The header is the raw magic
  ``b"DNNPY\\0"``, then in dlib's encodings: the format version (unsigned, 1), the object kind
  (string: ``"net"``, ``"solver"``, ``"solvers"`` or ``"object"``) and the type expression
  (string: ``repr(net.net_type)`` for a net, the class name of a solver / solvers' element /
  object). ``load`` rebuilds a net from that expression with ``net_type_from_string`` (no
  ``eval``).

Objects: a net (any node; nets with a loss are dlib's usual files), a solver (``sgd``,
``adam``), a list of solvers (dlib's ``std::vector<solver>``: count, then each), or any object
with ``serialize(w)``/``deserialize(r)`` (a layer's details). Reading checks that the whole
input was consumed and is atomic: on any error the target is unchanged.
"""

from __future__ import annotations

import copy
import os
import secrets

from ..core import _node
from ..errors import SerializationError
from .net import _adopt, read_net_staged, read_object, write_net, write_object
from .primitives import Reader, Writer

__all__ = ["serialize", "deserialize", "load", "to_bytes", "from_bytes", "atomic_write",
           "write_solvers", "read_solvers_staged", "MAGIC", "FORMAT_VERSION"]

MAGIC = b"DNNPY\0"
FORMAT_VERSION = 1
FORMATS = ("dnnpy", "dlib")


# ----------------------------------------------------------------------------------------
# kinds of objects

def _solver_classes():
    from ..solvers import adam, sgd

    return {"sgd": sgd, "adam": adam}


def _is_solver(obj):
    return isinstance(obj, tuple(_solver_classes().values()))


def _kind(obj):
    """``(kind, type expression)`` of an object to save."""
    if isinstance(obj, _node):
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


def _write_body(w, obj, kind):
    if kind == "net":
        write_net(w, obj)
    elif kind == "solvers":
        write_solvers(w, obj)
    else:
        write_object(w, obj, kind)


def to_bytes(obj, format="dnnpy") -> bytes:
    """The bytes ``serialize(obj, path, format)`` writes."""
    if format not in FORMATS:
        raise ValueError(f"serialize: format must be one of {FORMATS}, got {format!r}")
    kind, expr = _kind(obj)
    w = Writer()
    if format == "dnnpy":
        if expr is None:
            raise SerializationError("serialize: this net was not built from a net type (it has no "
                                     "net_type), so the dnnpy header cannot name its type; use "
                                     "format='dlib'")
        w.raw(MAGIC)
        w.uint(FORMAT_VERSION)
        w.string(kind)
        w.string(expr)
    _write_body(w, obj, kind)
    return w.bytes()


# ----------------------------------------------------------------------------------------
# files

def atomic_write(path, data: bytes):
    """Write ``data`` to ``path`` atomically: a temp file in the same directory, flushed and
    fsynced, then renamed over ``path``. On any failure ``path`` is untouched and the temp
    file is removed. A new file gets the usual ``0o666 & ~umask`` permissions; an existing
    file's permission bits are kept."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        keep_mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        keep_mode = None
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            fd = None
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if keep_mode is not None:
            os.chmod(tmp, keep_mode)
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename durable (best effort: not every OS can open a directory)
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def serialize(obj, path_or_file, format="dnnpy"):
    """Save ``obj`` (a net, a solver, a list of solvers) to a path (atomically) or to a
    binary file object. ``format="dlib"`` writes exactly dlib's bytes; ``"dnnpy"`` adds the
    header that lets ``load`` rebuild the net. The bytes are built in memory first, so a
    failure while serializing never touches the destination."""
    data = to_bytes(obj, format)
    if hasattr(path_or_file, "write"):
        path_or_file.write(data)
    else:
        atomic_write(path_or_file, data)


def _read_source(path_or_file):
    if hasattr(path_or_file, "read"):
        data = path_or_file.read()
        return data, getattr(path_or_file, "name", "stream")
    path = os.fspath(path_or_file)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise SerializationError(f"{path}: cannot read the file: {e.strerror or e}") from e


def _read_header(r):
    """``(kind, type expression)`` from a dnnpy header, or ``None`` for a dlib-format body."""
    if bytes(r.data[:len(MAGIC)]) != MAGIC:
        return None
    r.pos = len(MAGIC)
    start = r.pos
    version = r.uint("the dnnpy format version")
    if version != FORMAT_VERSION:
        raise r.error(f"expected dnnpy format version {FORMAT_VERSION}, found {version} (a file "
                      f"from a newer dnnpy?)", start)
    kind = r.string("the object kind")
    expr = r.string("the type expression")
    return kind, expr


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


def _solver_from_name(r, name):
    cls = _solver_classes().get(name)
    if cls is None:
        raise r.error(f"unknown solver type {name!r} (expected one of {sorted(_solver_classes())})")
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


def _stage(r, obj, header):
    """Read the body into a staged copy of ``obj``; returns the commit function."""
    if isinstance(obj, _node):
        _check_kind(r, header, "net", repr(obj.net_type) if obj.net_type is not None else None)
        return read_net_staged(r, obj)
    if isinstance(obj, tuple):
        raise SerializationError("deserialize: cannot read into a tuple; pass a list of solvers")
    if isinstance(obj, list):
        element = None
        if header is not None:
            _check_kind(r, header, "solvers", type(obj[0]).__name__ if obj else None)
            if not obj and header[1]:
                element = _solver_from_name(r, header[1])
        return read_solvers_staged(r, obj, element)
    kind = "solver" if _is_solver(obj) else "object"
    if not hasattr(obj, "deserialize"):
        raise SerializationError(f"deserialize: cannot read into a {type(obj).__name__}: expected a "
                                 f"net, a solver, a list of solvers or an object with deserialize(r)")
    _check_kind(r, header, kind, type(obj).__name__)
    staged = copy.deepcopy(obj)
    read_object(r, staged, kind)
    return lambda: _adopt(obj, staged)


def from_bytes(data, obj, what="bytes"):
    """Read ``data`` (either format) into ``obj``; the whole input must be consumed."""
    r = Reader(data, what)
    try:
        header = _read_header(r)
        commit = _stage(r, obj, header)
        _expect_end(r, "the serialized object")
    except SerializationError:
        raise
    except Exception as e:  # noqa: BLE001 - never anything but a SerializationError
        raise r.error(f"reading failed: {type(e).__name__}: {e}") from e
    commit()
    return obj


def deserialize(path_or_file, obj):
    """Read a file (dnnpy or dlib format; detected by the magic) into ``obj`` (a net, a
    solver, a list of solvers). Raises ``SerializationError`` (what was expected, what was
    found, the byte offset) on any malformed, truncated or mismatched input, or trailing
    bytes, and then leaves ``obj`` unchanged. Returns ``obj``."""
    data, name = _read_source(path_or_file)
    return from_bytes(data, obj, name)


def _node_count(net_type, cap):
    """The number of wrapper nodes ``net_type()`` builds (each ``repeat`` copy counted), or
    some number above ``cap`` as soon as it exceeds it: a repeat count in a corrupted or
    hostile header must not make ``load`` build millions of layers before the read fails."""
    from ..templates import NetType, repeat

    count = 0
    while isinstance(net_type, NetType):
        count += 1
        if net_type.template is repeat:
            reps, block = net_type.args
            count += reps * _node_count(block, cap)
        if count > cap:
            return count
        net_type = net_type.subnet
    return count


def load(path_or_file):
    """Rebuild what a dnnpy-format file holds: a net (its type parsed from the header, no
    ``eval``), a solver or a list of solvers."""
    from ..parsing import net_type_from_string

    data, name = _read_source(path_or_file)
    r = Reader(data, name)
    header = _read_header(r)
    if header is None:
        raise SerializationError(f"{name}: this is a dlib-format file (no dnnpy header), which does "
                                 f"not say its net type; build the net and use "
                                 f"dnnpy.deserialize(path, net_type())")
    kind, expr = header
    if kind == "net":
        try:
            net_type = net_type_from_string(expr)
        except Exception as e:  # noqa: BLE001
            raise SerializationError(f"{name}: the file's net type {expr!r} cannot be rebuilt: {e}") from e
        nodes = _node_count(net_type, r.remaining())
        if nodes > r.remaining():
            raise r.error(f"the file's net type {expr} has {nodes if nodes < 1 << 62 else 'over 2**62'} "
                          f"layers (repeat counts included) but only {r.remaining()} bytes follow, "
                          f"and every layer takes at least one")
        try:
            obj = net_type()
        except Exception as e:  # noqa: BLE001
            raise SerializationError(f"{name}: cannot construct the file's net type {expr}: "
                                     f"{type(e).__name__}: {e}") from e
    elif kind == "solver":
        obj = _solver_from_name(r, expr)
    elif kind == "solvers":
        obj = []
    else:
        raise SerializationError(f"{name}: load cannot rebuild a {kind!r} ({expr}); use "
                                 f"dnnpy.deserialize(path, obj) with an object of that type")
    return from_bytes(data, obj, name)
