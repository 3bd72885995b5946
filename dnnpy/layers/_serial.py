"""Helpers for the layers' ``serialize(w)`` / ``deserialize(r)`` methods (dlib's per-layer
``serialize``/``deserialize`` friends). Every read error is a ``SerializationError`` raised
through ``r.error`` (which adds the byte offset) naming the layer, the field, the value the
type expects and the value found. Byte formats: docs/serialization.md ("Formats", "Every
object's record") and ``dnnpy/serialization/primitives.py``.

* ``write_alias``: dlib's default-constructed ``alias_tensor`` has the shape (0,0,0,0)
  while ours says (0,1,1,1); an alias that views nothing is written as dlib's default, so
  an un-set-up layer (or con_ after ``disable_bias``) writes the bytes dlib writes.
* ``read_alias``: an ``alias_tensor`` with the file's shape.
* ``expect_same``: a template value in the file must equal the net type's
  (``SerializationError`` naming the layer, the field, expected and found).
* ``check_fits``: the parameter views a file describes must fit in the file's parameter
  tensor, so a corrupted shape fails while reading, not later in ``forward``. dlib does not
  check this (it would read out of bounds); every file dlib writes passes.
* ``simple_serial``: a mixin for records made of a version string and scalar fields;
  ``version_only``: for records that are only a version string.
* ``read_type_ints``, ``read_int_at_least``, ``assign_tensor``: integer fields that are part
  of the type or restored from the file, and tensors restored in place.
"""

from __future__ import annotations

from ..tensor import alias_tensor

__all__ = ["write_alias", "read_alias", "expect_same", "check_fits", "write_multipliers",
           "read_multipliers", "check_dense_views", "simple_serial", "version_only", "read_type_ints", "read_int_at_least",
           "assign_tensor"]


def write_alias(w, a):
    if a.size() == 0:
        w.int(1)
        for _ in range(4):
            w.int(0)
    else:
        w.alias(a)


def read_alias(r, what):
    return alias_tensor(*r.alias(what))


def expect_same(r, layer, field, found, expected, at=None):
    if found != expected:
        raise r.error(f"{layer}: the file has {field}={found} but the net type has {expected}", at)


def check_fits(r, layer, params, *views):
    """``views``: ``(name, alias, offset)``; each must lie inside ``params``."""
    for name, a, offset in views:
        if a.size() and offset + a.size() > params.size():
            raise r.error(f"{layer}: the file's {name} shape {a.shape} at offset {offset} does not "
                          f"fit in its parameter tensor of {params.size()} values")


def check_dense_views(r, layer, params, weights, biases, num_inputs, num_outputs, has_bias):
    """fc_ / linear_: the file's weights ``(num_inputs, num_outputs)`` and (if any) biases
    ``num_outputs`` must lie in, and agree with, the file's parameter tensor."""
    if not params.size():
        return
    check_fits(r, layer, params, ("weights", weights, 0),
               *((("biases", biases, weights.size()),) if has_bias else ()))
    if weights.shape[:2] != (num_inputs, num_outputs) or (has_bias and biases.size() != num_outputs):
        raise r.error(f"{layer}: the file's weights {weights.shape} and biases {biases.shape} do "
                      f"not match num_inputs={num_inputs}, num_outputs={num_outputs}")


def write_multipliers(w, layer):
    """dlib's four double multipliers: lr, wd, bias lr, bias wd."""
    w.float64(layer.learning_rate_multiplier)
    w.float64(layer.weight_decay_multiplier)
    w.float64(layer.bias_learning_rate_multiplier)
    w.float64(layer.bias_weight_decay_multiplier)


def read_multipliers(r, layer, name):
    layer.learning_rate_multiplier = r.float64(f"{name} learning_rate_multiplier")
    layer.weight_decay_multiplier = r.float64(f"{name} weight_decay_multiplier")
    layer.bias_learning_rate_multiplier = r.float64(f"{name} bias_learning_rate_multiplier")
    layer.bias_weight_decay_multiplier = r.float64(f"{name} bias_weight_decay_multiplier")


class simple_serial:
    """``serialize``/``deserialize`` for layers whose record is a version string and a few
    scalar fields: ``_ser_name`` (default: the class name, as dlib's strings are) and
    ``_ser_fields``, ``(attribute, "float32" | "float64")`` pairs in dlib's order."""

    _ser_name = None
    _ser_fields = ()

    def _ser_version(self):
        return self._ser_name or type(self).__name__

    def serialize(self, w):
        w.string(self._ser_version())
        for attr, kind in self._ser_fields:
            getattr(w, kind)(getattr(self, attr))

    def deserialize(self, r):
        name = type(self).__name__
        r.expect_string(self._ser_version())
        values = [getattr(r, kind)(f"{name} {attr}") for attr, kind in self._ser_fields]
        for (attr, _), value in zip(self._ser_fields, values):
            setattr(self, attr, value)


class version_only:
    """A layer whose dlib record is its version string alone (``_ser_version``)."""

    _ser_version = ""

    def serialize(self, w) -> None:
        w.string(self._ser_version)

    def deserialize(self, r) -> None:
        r.expect_string(self._ser_version)


def read_type_ints(r, who, fields):
    """Read integers that are part of the type, in order, and compare each with the value
    the type has: ``fields`` is a list of ``(name, expected)``; dlib reads them all, then
    checks. Returns the values read."""
    found = []
    for name, _ in fields:
        found.append((r.pos, r.int(f"{who}'s {name}")))
    for (name, expected), (at, value) in zip(fields, found):
        if value != expected:
            raise r.error(f"{who}: the file has {name}={value} but the net type has {name}={expected}", at)
    return [v for _, v in found]


def read_int_at_least(r, who, name, lo):
    """An integer field restored from the file that must be >= ``lo``."""
    at = r.pos
    value = r.int(f"{who}'s {name}")
    if value < lo:
        raise r.error(f"{who}: {name} must be >= {lo}, found {value}", at)
    return value


def assign_tensor(dest, src):
    """Give the resizable tensor ``dest`` the shape and values of ``src`` (in place, so views
    and references to ``dest`` stay valid)."""
    dest.set_size(*src.shape)
    if src.size():
        dest.host_write_only()[...] = src.host_read()
