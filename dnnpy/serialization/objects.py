"""Several objects in one file, in dlib's order: ``serialize(file) << net << labels`` is
``serialize_objects(file, net, labels)``, ``deserialize(file) >> net >> labels`` is
``net, labels = deserialize_objects(file, net, list[str])``.

dlib writes the objects back to back, each in its own encoding, with nothing between them
(so ``format="dlib"`` gives exactly those bytes, e.g. dlib's
``resnet34_1000_imagenet_classifier.dnn``: a net, then a ``std::vector<std::string>``).
Besides what ``serialize`` takes (nets, solvers, lists of solvers, objects with
``serialize(w)``), the plain values dlib's examples store beside their nets:

==================================  ===============================  =======================
Python value                        dlib type                        bytes
==================================  ===============================  =======================
``str``                             ``std::string``                  length, then UTF-8 bytes
``int`` (numpy integers too)        any integer (``size_t``, ...)    dlib's integer encoding
``bool``                            ``bool``                         ``'1'`` / ``'0'``
``float``                           ``double``                       mantissa, exponent
a list of ``str``                   ``std::vector<std::string>``     count, then each string
a dict ``str -> str``               ``std::map<string, string>``     count, then key, value
a dict ``str -> net`` (one type)    ``std::map<string, net_type>``   count, then key, net
==================================  ===============================  =======================

Maps are written in ``std::map``'s order: keys sorted by their bytes.

The dnnpy format (``format="dnnpy"``) puts one header in front of the same bytes: kind
``"objects"`` and, as the type expression, one line per object: its kind and type (``net
loss_multiclass_log[...]``, ``strings``, ``map_net relu[...]``, ...), checked against what
is read; ``deserialize_objects(path)`` with no targets rebuilds everything from it.
"""

from __future__ import annotations

import typing

import numpy as np

from ..atomic import atomic_write
from ..core import net_node
from ..errors import SerializationError
from ..templates import NetType
from .files import (FORMATS, build_header_net, cleaned, default_format, header_net_type, node_count,
                    object_kind, read_header, read_source, refuse_plainly_not_a_net, solver_from_name,
                    stage_object, warn_about_overrides, with_header, write_body)
from .net import read_net_staged, write_net
from .primitives import Reader, Writer

__all__ = ["serialize_objects", "deserialize_objects"]

KIND = "objects"
_PLAIN = ("string", "int", "bool", "double", "strings", "map_string")


# ----------------------------------------------------------------------------------------
# writing

def _element_kind(obj, i):
    """``(kind, type expression)`` of object ``i``."""
    if isinstance(obj, (bool, np.bool_)):
        return "bool", ""
    if isinstance(obj, (int, np.integer)):
        return "int", ""
    if isinstance(obj, (float, np.floating)):
        return "double", ""
    if isinstance(obj, str):
        return "string", ""
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(x, str) for x in obj):
        return "strings", ""
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise SerializationError(f"serialize_objects: object {i}: a dict must have str keys "
                                     f"(dlib's std::map<std::string, T>)")
        values = list(obj.values())
        if all(isinstance(v, str) for v in values):
            return "map_string", ""
        types = {v.net_type for v in values if isinstance(v, net_node)}
        if all(isinstance(v, net_node) for v in values) and len(types) == 1:
            t = types.pop()
            return "map_net", "" if t is None else repr(t)
        raise SerializationError(f"serialize_objects: object {i}: a dict's values must all be str "
                                 f"or all nets of one net type (std::map<std::string, T>)")
    try:
        return object_kind(obj)
    except SerializationError as e:
        raise SerializationError(f"serialize_objects: object {i}: {e}") from None


def _sorted_items(d):
    return sorted(d.items(), key=lambda kv: kv[0].encode("utf-8"))


def _write(w, obj, kind, clean):
    if kind == "bool":
        w.bool(obj)
    elif kind == "int":
        w.int(int(obj))
    elif kind == "double":
        w.float64(float(obj))
    elif kind == "string":
        w.string(obj)
    elif kind == "strings":
        w.uint(len(obj))
        for s in obj:
            w.string(s)
    elif kind in ("map_string", "map_net"):
        w.uint(len(obj))
        for k, v in _sorted_items(obj):
            w.string(k)
            if kind == "map_string":
                w.string(v)
            else:
                write_net(w, cleaned(v) if clean else v)
    else:
        write_body(w, cleaned(obj) if clean else obj, kind)


def serialize_objects(path_or_file, *objs, format=None, clean=True):
    """dlib's ``serialize(path) << a << b << ...``: write ``objs`` one after the other to a
    path (atomically) or a binary file object. ``format`` and ``clean`` as in ``serialize``
    (``None``: dlib's bytes for a ``.dat`` name, else the dnnpy format with one header for
    all). Objects: what ``serialize`` takes, plus str, int, bool, float, a list of str and a
    dict of str to str or to nets (see the module docstring for their dlib types). Nothing is
    written unless every object serializes."""
    if not objs:
        raise ValueError("serialize_objects: no objects to write")
    if format is None:
        format = default_format(path_or_file)
    if format not in FORMATS:
        raise ValueError(f"serialize_objects: format must be one of {FORMATS} (or None: by the "
                         f"file name's extension), got {format!r}")
    kinds = [_element_kind(o, i) for i, o in enumerate(objs)]
    if format == "dnnpy":
        for i, (kind, expr) in enumerate(kinds):
            if kind in ("net", "map_net") and not expr:
                raise SerializationError(f"serialize_objects: object {i}: a net not built from a net "
                                         f"type (no net_type) cannot be named in the dnnpy header; "
                                         f"use format='dlib'")
    w = Writer()
    for obj, (kind, _) in zip(objs, kinds):
        _write(w, obj, kind, clean)
    data = w.bytes()
    if format == "dnnpy":
        data = with_header(KIND, "\n".join(f"{k} {e}" if e else k for k, e in kinds), data)
    if hasattr(path_or_file, "write"):
        path_or_file.write(data)
    else:
        atomic_write(path_or_file, data)


# ----------------------------------------------------------------------------------------
# reading

def _count(r, what, start):
    n = r.uint(f"the number of {what}")
    if n > r.remaining():      # every element takes at least one byte
        raise r.error(f"the data claims {n} {what} but only {r.remaining()} bytes remain", start)
    return n


def _read_plain(r, kind):
    start = r.pos
    if kind == "string":
        return r.string()
    if kind == "int":
        return r.int()
    if kind == "bool":
        return r.bool()
    if kind == "double":
        return r.float64()
    if kind == "strings":
        return [r.string() for _ in range(_count(r, "strings", start))]
    n = _count(r, "map entries", start)
    return {r.string("a map key"): r.string("a map value") for _ in range(n)}


def _read_net_map(r, net_type):
    start = r.pos
    out = {}
    nodes = node_count(net_type, r.remaining())
    for _ in range(_count(r, "map entries", start)):
        key = r.string("a map key")
        if nodes > r.remaining():       # each entry's net takes a byte per layer at least
            raise r.error(f"a map entry's net type has {nodes} layers but only {r.remaining()} "
                          f"bytes remain")
        net = build_header_net(r, net_type, "(the map's)")
        read_net_staged(r, net)()       # a new net: nobody else holds it
        warn_about_overrides(net, r.what)
        out[key] = net
    return out


def _target_kind(target):
    """``(kind, expected type expression or None)`` for a read target."""
    plain = {str: "string", int: "int", bool: "bool", float: "double"}
    if isinstance(target, type) and target in plain:
        return plain[target], ""
    origin, args = typing.get_origin(target), typing.get_args(target)
    if origin is list and args == (str,):
        return "strings", ""
    if origin is dict and len(args) == 2 and args[0] is str:
        if args[1] is str:
            return "map_string", ""
        if isinstance(args[1], NetType):
            return "map_net", repr(args[1])
    if isinstance(target, NetType):
        return "net", repr(target)
    if isinstance(target, net_node):
        return "net", None if target.net_type is None else repr(target.net_type)
    return None, None          # a solver, a list of solvers, an object: stage_object checks


def _check(r, entry, kind, expr, i):
    if entry is None or kind is None:
        return
    found_kind, found_expr = entry
    empty_map = found_kind.startswith("map_") and kind.startswith("map_")
    if found_kind != kind and not empty_map:
        raise r.error(f"object {i} in the file is a {found_kind} {found_expr}".rstrip()
                      + f", but a {kind} was asked for")
    if expr and found_expr and expr != found_expr:
        raise r.error(f"object {i} in the file has the type {found_expr} but {expr} was asked for")


def _stage(r, target, entry, i):
    """Read object ``i`` into/as ``target``; returns a function giving the result (and moving
    the state into ``target`` when it is an object read in place)."""
    kind, expr = _target_kind(target)
    _check(r, entry, kind, expr, i)
    if kind in _PLAIN:
        value = _read_plain(r, kind)
        return lambda: value
    if kind == "map_net":
        nets = _read_net_map(r, typing.get_args(target)[1])
        return lambda: nets
    if isinstance(target, NetType):
        target = build_header_net(r, target, expr)
    commit = stage_object(r, target, entry)
    return lambda: (commit(), target)[1]


def _targets_from_header(r, entries):
    """What to read each object of a dnnpy file into, from its header lines."""
    out = []
    budget = r.remaining()          # the nets of all objects share the bytes that follow
    for i, (kind, expr) in enumerate(entries):
        try:
            if kind in ("net", "map_net"):
                t, nodes = header_net_type(r, expr, budget)
                budget -= nodes if kind == "net" else 0     # a map may be empty
                out.append(t if kind == "net" else dict[str, t])
            elif kind == "solver":
                out.append(solver_from_name(r, expr))
            elif kind == "solvers":
                out.append([solver_from_name(r, expr)] if expr else [])
            elif kind in _PLAIN:
                out.append({"string": str, "int": int, "bool": bool, "double": float,
                            "strings": list[str], "map_string": dict[str, str]}[kind])
            else:
                raise r.error(f"object {i} is a {kind} ({expr}): it cannot be rebuilt from the "
                              f"header; pass an object of that type to read into")
        except SerializationError:
            raise
        except Exception as e:  # noqa: BLE001 - an unknown template name, ...
            raise r.error(f"object {i}: the type {expr!r} cannot be rebuilt: {e}") from e
    return out


def _entries(r, header):
    if header is None:
        return None
    kind, expr = header
    if kind != KIND:
        raise r.error(f"the file holds one {kind} ({expr}), not several objects: use "
                      f"dnnpy.deserialize or dnnpy.load")
    return [tuple(line.split(" ", 1)) if " " in line else (line, "")
            for line in expr.split("\n")]


def deserialize_objects(path_or_file, *targets):
    """dlib's ``deserialize(path) >> a >> b >> ...``: read the objects of a file (either
    format; a path, a binary file object or bytes) in order; returns them as a tuple.

    Each target is an object to read into (a net, a solver, a list of solvers, an object with
    ``deserialize(r)``: filled in place and returned), a net type (a new net is built), or the
    type of a plain value: ``str``, ``int``, ``bool``, ``float``, ``list[str]``,
    ``dict[str, str]``, ``dict[str, net_type]``. With no targets, a dnnpy-format file is
    rebuilt from its header. The whole input must be consumed.

    Atomic: on any error (a ``SerializationError`` naming the file, the object's index and
    what was expected) no target has changed."""
    data, name = read_source(path_or_file)
    r = Reader(data, name)
    header = read_header(r)
    if header is None:
        refuse_plainly_not_a_net(data, name)
    entries = _entries(r, header)
    if not targets:
        if entries is None:
            raise SerializationError(f"{name}: no dnnpy header, so the objects' types are unknown: "
                                     f"pass what to read, e.g. deserialize_objects(path, net_type, "
                                     f"list[str])")
        targets = _targets_from_header(r, entries)
    if entries is not None and len(entries) != len(targets):
        raise r.error(f"the file holds {len(entries)} objects but {len(targets)} were asked for")
    staged = []
    for i, target in enumerate(targets):
        try:
            staged.append(_stage(r, target, None if entries is None else entries[i], i))
        except SerializationError as e:
            msg = str(e).removeprefix(f"{name}: ")
            raise SerializationError(f"{name}: object {i} of {len(targets)}: {msg}") from e
        except Exception as e:  # noqa: BLE001 - never anything but a SerializationError
            raise r.error(f"object {i} of {len(targets)}: reading failed: {type(e).__name__}: {e}") from e
    if not r.at_end():
        raise r.error(f"expected the end of the data after {len(targets)} objects, but "
                      f"{r.remaining()} more bytes follow")
    return tuple(get() for get in staged)
