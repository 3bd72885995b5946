"""Whole nets in dlib's byte layout (``dlib/dnn/core.h``'s wrapper ``serialize`` friends).

Each wrapper writes its version int, then its subnet, then its own fields, so the file holds
every wrapper version (outer to inner), then the input layer, then each layer's details and
bookkeeping from the input up (docs/serialization.md has the whole layout)::

    add_loss_layer             int 1, <loss details>, <subnet>
    add_layer (on a layer)     int 2, <subnet>, <details>, bool setup_called,
                               bool gradient_input_is_stale, bool getters_disabled,
                               tensor x_grad, tensor cached_output, tensor params_grad
                               (v1: no params_grad; read only)
    add_layer (on the input)   int 3, <input>, <details>, 3 bools, tensor x_grad,
                               tensor cached_output, tensor grad_final,
                               unsigned sample_expansion_factor   (v2: no sef, read as 1)
    add_tag_layer (on a layer) int 1, <subnet>                    (the tag id is not stored)
    add_tag_layer (on input)   int 2, <input>, tensor cached_output, tensor grad_final,
                               bool gradient_input_is_stale, unsigned sef (v1: no sef)
    add_skip_layer             int 1, <subnet>
    repeat                     int 1, vector of the N copies (each a net over
                               repeat_input_layer, which writes nothing), <subnet>

Every details object (layer, loss, input) writes itself with ``obj.serialize(w)`` and reads
itself with ``obj.deserialize(r)`` (the per-object contract, ``docs/serialization.md``).

``read_net`` is atomic: it reads into a deep copy of the net and only when every byte was read
moves the state into the caller's nodes (``read_net_staged`` returns that commit step, so a
caller reading a larger record, such as a trainer's sync file, commits only at the end).
"""

from __future__ import annotations

import copy

from ..core import (add_layer, add_loss_layer, add_skip_layer, add_tag_layer, input_node,
                    net_layers, repeat_layer, wrapper_state)
from ..errors import SerializationError
from ..templates import SUBNET as _repeat_input_layer
from ..tensor import resizable_tensor
from .primitives import Reader, Writer

__all__ = ["write_net", "read_net", "read_net_staged", "write_object", "read_object"]


# ----------------------------------------------------------------------------------------
# one details object

def _name(obj) -> str:
    return type(obj).__name__


def write_object(w: Writer, obj, role="layer"):
    """``obj.serialize(w)``, or a ``SerializationError`` naming the class when it has none."""
    method = getattr(obj, "serialize", None)
    if method is None:
        raise SerializationError(f"cannot serialize the {role} {_name(obj)} ({obj!r}): it has no "
                                 f"serialize(w) method yet")
    method(w)


def read_object(r: Reader, obj, role="layer"):
    """``obj.deserialize(r)``; any exception that is not a ``SerializationError`` (a numpy
    error on odd data, ...) becomes one naming the object and the offset where it started."""
    method = getattr(obj, "deserialize", None)
    if method is None:
        raise r.error(f"cannot deserialize the {role} {_name(obj)}: it has no deserialize(r) "
                      f"method yet")
    start = r.pos
    try:
        method(r)
    except SerializationError:
        raise
    except Exception as e:  # noqa: BLE001 - wrapped with its object and offset
        raise r.error(f"reading the {role} {_name(obj)} failed: {type(e).__name__}: {e}",
                      start) from e


def _empty_if_none(t):
    return t if t is not None else resizable_tensor()


# ----------------------------------------------------------------------------------------
# writing

def _write_owned(w, node, obj, role="layer"):
    """``write_object``; a failure remembers ``node`` so that write_net names its layer."""
    try:
        write_object(w, obj, role)
    except SerializationError as e:
        e._dnnpy_node = node
        raise


def _write_input(w, node):
    layer = node.input_layer()
    if isinstance(layer, _repeat_input_layer):
        return  # repeat_input_layer serializes nothing
    _write_owned(w, node, layer, "input layer")


def _write_node(w, node):
    if isinstance(node, add_loss_layer):
        w.int(1)
        _write_owned(w, node, node.loss_details(), "loss layer")
        _write_node(w, node.subnet_node())
    elif isinstance(node, add_layer):
        sub = node.subnet_node()
        on_input = isinstance(sub, input_node)
        w.int(3 if on_input else 2)
        if on_input:
            _write_input(w, sub)
        else:
            _write_node(w, sub)
        _write_owned(w, node, node.layer_details())
        st = node.wrapper_state()
        w.bool(st.setup_called)
        w.bool(st.gradient_input_is_stale)
        w.bool(st.getters_disabled)
        w.tensor(st.x_grad)
        w.tensor(st.cached_output)
        if on_input:
            _, grad_final, _, sef, _ = sub.input_state()
            w.tensor(grad_final)
            w.uint(sef)
        else:
            w.tensor(st.params_grad)
    elif isinstance(node, add_tag_layer):
        sub = node.subnet_node()
        if isinstance(sub, input_node):
            x, grad_final, stale, sef, file_output = sub.input_state()
            w.int(2)
            _write_input(w, sub)
            # dlib's tag on the input copies x into its cached_output, except on repeat's input
            # (the bottom of a repeated block), where it only points at x and its cached_output
            # holds what it last read from a file (empty for a net never read)
            repeat_input = isinstance(sub.input_layer(), _repeat_input_layer)
            w.tensor(_empty_if_none(file_output if repeat_input else x))
            w.tensor(grad_final)
            w.bool(stale)
            w.uint(sef)
        else:
            w.int(1)
            _write_node(w, sub)
    elif isinstance(node, add_skip_layer):
        w.int(1)
        _write_node(w, node.subnet_node())
    elif isinstance(node, repeat_layer):
        w.int(1)
        w.uint(len(node.copies))
        for c in node.copies:
            _write_node(w, c)
        _write_node(w, node.subnet_node())
    elif isinstance(node, input_node):
        # only reachable for a skip or repeat directly on the input (not a dlib type):
        # the input layer alone
        _write_input(w, node)
    else:
        raise SerializationError(f"cannot serialize a net node of type {_name(node)}")


def write_net(w: Writer, net):
    """Append ``net`` in dlib's layout (the bytes dlib's ``serialize(net, out)`` writes).
    An object that cannot be written fails with a ``SerializationError`` naming its layer
    (``layer<i>: ...``)."""
    try:
        _write_node(w, net)
    except SerializationError as e:
        node = getattr(e, "_dnnpy_node", None)
        where = _layer_labels(net).get(id(node)) if node is not None else None
        if where is None:
            raise
        raise SerializationError(f"{where}: {e}") from e


# ----------------------------------------------------------------------------------------
# reading

def _version(r, what, accepted):
    start = r.pos
    v = r.int(f"the version of {what}")
    if v not in accepted:
        raise r.error(f"expected {what} version {' or '.join(map(str, accepted))}, found {v}", start)
    return v


def _read_input(r, node):
    if isinstance(node.input_layer(), _repeat_input_layer):
        return
    read_object(r, node.input_layer(), "input layer")


def _layer_labels(net):
    """``{id(node): "layer<i>"}``, ``i`` as dlib's ``layer<i>(net)`` (and dnnpy's printing)
    counts, so a read error names the layer a user sees when printing the net."""
    node_of = {}

    def collect(node):
        while True:
            if isinstance(node, repeat_layer):
                for c in node.copies:
                    collect(c)
            elif isinstance(node, input_node):
                node_of[id(node.input_layer())] = node
                return
            else:
                node_of[id(node)] = node
            node = node.subnet_node()
            if node is None:
                return
    collect(net)
    return {id(node_of.get(id(obj), obj)): f"layer<{i}>" for i, obj in enumerate(net_layers(net))}


def _read_node(r, node, labels):
    # every error raised while reading this node's own part names it ("layer<3>: con_: ...")
    here = f"{labels[id(node)]}: " if id(node) in labels else ""
    r.context = here
    if isinstance(node, add_loss_layer):
        _version(r, "add_loss_layer", (1,))
        read_object(r, node.loss_details(), "loss layer")
        _read_node(r, node.subnet_node(), labels)
    elif isinstance(node, add_layer):
        sub = node.subnet_node()
        on_input = isinstance(sub, input_node)
        name = _name(node.layer_details())
        what = f"add_layer<{name}>{' (next to the input)' if on_input else ''}"
        v = _version(r, what, (2, 3) if on_input else (1, 2))
        if on_input:
            r.context = f"{labels[id(sub)]}: " if id(sub) in labels else ""
            _read_input(r, sub)
        else:
            _read_node(r, sub, labels)
        r.context = here
        read_object(r, node.layer_details())
        st = wrapper_state()
        st.setup_called = r.bool(f"{name}'s setup_called flag")
        st.gradient_input_is_stale = r.bool(f"{name}'s gradient_input_is_stale flag")
        st.getters_disabled = r.bool(f"{name}'s get_output_and_gradient_input_disabled flag")
        st.x_grad = r.tensor(f"{name}'s x_grad tensor")
        st.cached_output = r.tensor(f"{name}'s cached_output tensor")
        if on_input:
            grad_final = r.tensor(f"{name}'s grad_final tensor")
            sef = r.uint(f"{name}'s sample_expansion_factor") if v >= 3 else 1
            sub.set_input_state(None, grad_final, True, sef)
            st.params_grad = resizable_tensor()
        elif v >= 2:
            st.params_grad = r.tensor(f"{name}'s params_grad tensor")
        else:
            st.params_grad = resizable_tensor()
        node.set_wrapper_state(st)
    elif isinstance(node, add_tag_layer):
        sub = node.subnet_node()
        if isinstance(sub, input_node):
            v = _version(r, f"add_tag_layer tag{node.id} (on the input)", (1, 2))
            r.context = f"{labels[id(sub)]}: " if id(sub) in labels else ""
            _read_input(r, sub)
            r.context = here
            out = r.tensor(f"tag{node.id}'s cached_output tensor")
            grad_final = r.tensor(f"tag{node.id}'s grad_final tensor")
            stale = r.bool(f"tag{node.id}'s gradient_input_is_stale flag")
            sef = r.uint(f"tag{node.id}'s sample_expansion_factor") if v >= 2 else 1
            out = out if out.size() else None
            sub.set_input_state(out, grad_final, stale, sef, file_output=out)
        else:
            _version(r, f"add_tag_layer tag{node.id}", (1,))
            _read_node(r, sub, labels)
    elif isinstance(node, add_skip_layer):
        _version(r, f"add_skip_layer skip{node.id}", (1,))
        _read_node(r, node.subnet_node(), labels)
    elif isinstance(node, repeat_layer):
        _version(r, "repeat", (1,))
        start = r.pos
        n = r.uint("the number of repeat copies")
        if n != len(node.copies):
            raise r.error(f"repeat: the file has {n} copies but the net type has "
                          f"{len(node.copies)}", start)
        for c in node.copies:
            _read_node(r, c, labels)
        _read_node(r, node.subnet_node(), labels)
    elif isinstance(node, input_node):
        _read_input(r, node)
    else:
        raise r.error(f"cannot deserialize a net node of type {_name(node)}")


def _pairs(old, new):
    """Corresponding nodes of two nets of the same structure."""
    yield old, new
    if isinstance(old, repeat_layer):
        for a, b in zip(old.copies, new.copies):
            yield from _pairs(a, b)
    if not isinstance(old, input_node):
        yield from _pairs(old.subnet_node(), new.subnet_node())


def _adopt(old, new):
    """Give ``old`` the state of ``new`` while keeping ``old``'s identity (a user may hold a
    reference to a layer's details); objects without a plain ``__dict__`` are replaced."""
    if type(old) is type(new) and hasattr(old, "__dict__") and not hasattr(type(old), "__slots__"):
        old.__dict__.clear()
        old.__dict__.update(new.__dict__)
        return old
    return new


def _commit(old, new):
    for a, b in _pairs(old, new):
        if isinstance(a, add_loss_layer):
            a.set_loss_details(_adopt(a.loss_details(), b.loss_details()))
        elif isinstance(a, add_layer):
            a.set_layer_details(_adopt(a.layer_details(), b.layer_details()))
            a.set_wrapper_state(b.wrapper_state())
        elif isinstance(a, input_node):
            a.set_input_layer(_adopt(a.input_layer(), b.input_layer()))
            a.set_input_state(*b.input_state())


def read_net_staged(r: Reader, net):
    """Read a net of ``net``'s structure from ``r`` into a copy of ``net``; returns a function
    that moves the state into ``net`` (it cannot fail). ``net`` is untouched until then."""
    try:
        staged = copy.deepcopy(net)
    except Exception as e:  # noqa: BLE001
        raise SerializationError(f"cannot copy the target net to read into it: {type(e).__name__}: {e}") from e
    start = r.pos
    try:
        _read_node(r, staged, _layer_labels(staged))
    except SerializationError:
        raise
    except RecursionError as e:
        raise r.error("the net is nested too deeply to read", start) from e
    except Exception as e:  # noqa: BLE001 - a bug or odd data in some reader: still a read error
        raise r.error(f"reading the net failed: {type(e).__name__}: {e}") from e
    finally:
        r.context = ""
    return lambda: _commit(net, staged)


def read_net(r: Reader, net):
    """Read a net written by ``write_net`` (or by dlib) into ``net``, atomically: on any error
    a ``SerializationError`` is raised and ``net`` is unchanged."""
    read_net_staged(r, net)()
