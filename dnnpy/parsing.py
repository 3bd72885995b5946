"""Parsing a net type's bracket expression (``repr(net_type)``) back into the identical,
cached ``NetType``, without ``eval``: ``net_type_from_string``.

Names resolve through the registry in ``templates`` (every layer family registers its
templates when imported) plus the input layers, so this module imports the whole catalogue
and sits above it.
"""

from __future__ import annotations

import re

import numpy as np

from . import inputs as input_module
from . import layers, loss  # noqa: F401  (importing them registers their templates)
from .inputs.base import input_layer
from .templates import NetType, is_input_type, register_input, registered

__all__ = ["net_type_from_string", "input_type_from_string", "MAX_EXPRESSION_LENGTH", "MAX_DEPTH"]

_REGISTRY, _INPUTS, _INPUT_TEMPLATES = registered()


_TOKEN = re.compile(r"\s*(?:(?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf\b|nan\b)"
                    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<str>'[^']*')|(?P<punct>[\[\],]))")


# A type expression from a real net is a few KB (dlib's face ResNet: 1.5 KB, 132 levels);
# nets deeper than a few hundred layers without ``repeat`` cannot be built or printed. The caps
# stop a hostile or corrupt file's header before it costs time or memory: the expression is
# read token by token, so an over-long or over-deep one is refused before most of it is read.
MAX_EXPRESSION_LENGTH = 1 << 20
MAX_DEPTH = 500


class _Tokens:
    """The tokens of ``s``, read one at a time: ``peek()`` -> ``(kind, text, offset)``, with
    kind None at the end."""

    def __init__(self, s):
        self.s, self.pos = s.rstrip(), 0
        self.ahead = self._read()

    def _read(self):
        if self.pos >= len(self.s):
            return None, None, len(self.s)
        m = _TOKEN.match(self.s, self.pos)
        if m is None or m.end() == self.pos:
            raise ValueError(f"net_type_from_string: unexpected text at offset {self.pos}: "
                             f"{self.s[self.pos:self.pos + 20]!r}")
        self.pos = m.end()
        return m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)

    def peek(self):
        return self.ahead

    def advance(self):
        self.ahead = self._read()


def net_type_from_string(s: str) -> NetType:
    """Parse ``repr(net_type)`` back into the identical (cached) NetType. Raises ValueError
    for anything else, including an expression over ``MAX_EXPRESSION_LENGTH`` characters or
    nested over ``MAX_DEPTH`` brackets deep (refused before it is read further)."""
    result = _parse(s)
    if not isinstance(result, NetType):
        raise ValueError(f"net_type_from_string: {s[:100]!r} is not a net type")
    return result


def input_type_from_string(s: str):
    """Parse an input layer's expression (``input_rgb_image_sized[150]``, ``input[uint8]``,
    ``input_tensor``) into its class; ValueError for anything else."""
    result = _parse(s)
    if not is_input_type(result):
        raise ValueError(f"input_type_from_string: {s[:100]!r} is not an input layer")
    return result


def _parse(s):
    _ensure_registered()
    if len(s) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"net_type_from_string: the expression has {len(s)} characters, over the "
                         f"{MAX_EXPRESSION_LENGTH} a net type can have")
    tokens = _Tokens(s)
    peek = tokens.peek
    depth = 0

    def expect(value):
        kind, text, at = peek()
        if text != value:
            raise ValueError(f"net_type_from_string: expected {value!r} at offset {at}, found {text!r}")
        tokens.advance()

    def opening():
        nonlocal depth
        expect("[")
        depth += 1
        if depth > MAX_DEPTH:
            raise ValueError(f"net_type_from_string: brackets nested over {MAX_DEPTH} deep at offset "
                             f"{peek()[2]}: not a net type dnnpy can build")

    def closing():
        nonlocal depth
        expect("]")
        depth -= 1

    def value():
        kind, text, at = peek()
        if kind is None:
            raise ValueError("net_type_from_string: unexpected end of expression")
        tokens.advance()
        if kind == "num":
            return float(text) if any(c in text for c in ".eEn") else int(text)
        if kind == "str":
            return text[1:-1]
        if kind != "name":
            raise ValueError(f"net_type_from_string: unexpected {text!r} at offset {at}")
        if text in ("True", "False"):
            return text == "True"
        if text in _INPUT_TEMPLATES and peek()[1] == "[":  # input[uint8], input_rgb_image_sized[4, 6]
            opening()
            args = [input_arg()]
            while peek()[1] == ",":
                tokens.advance()
                args.append(input_arg())
            closing()
            try:
                return _INPUT_TEMPLATES[text][args[0] if len(args) == 1 else tuple(args)]
            except (TypeError, ValueError) as e:
                raise ValueError(f"net_type_from_string: {e} (at offset {at})") from None
        if text in _INPUTS and peek()[1] != "[":
            return _INPUTS[text]
        template = _REGISTRY.get(text)
        if template is None:
            raise ValueError(f"net_type_from_string: unknown template or input {text!r} at offset {at}")
        if peek()[1] != "[":  # a template as an argument: add_prev[tag1, ...], concat[tag1, tag2, ...]
            return template
        opening()
        args = [value()]
        while peek()[1] == ",":
            tokens.advance()
            args.append(value())
        closing()
        return template[tuple(args)]

    def input_arg():
        # an input template's argument: a number, or a numpy dtype name (input[float32])
        kind, text, at = peek()
        if kind == "name" and text not in _REGISTRY and text not in _INPUTS and text not in _INPUT_TEMPLATES:
            tokens.advance()
            if text == "rgb_pixel":       # input[rgb_pixel]: dlib's pixel type, not a dtype
                return text
            try:
                return np.dtype(text)
            except TypeError:
                raise ValueError(f"net_type_from_string: unknown input argument {text!r} at offset {at}") from None
        return value()

    result = value()
    if peek()[0] is not None:
        raise ValueError(f"net_type_from_string: trailing text at offset {peek()[2]}")
    return result


def _ensure_registered():
    """Register every input layer class and bracket input template of ``dnnpy.inputs``
    (templates register themselves; input layers are plain classes)."""
    for cls in vars(input_module).values():
        if is_input_type(cls) and not cls.__name__.startswith("_") and cls is not input_layer:
            register_input(cls)
        elif getattr(cls, "is_input_template", False):  # input[...], input_rgb_image_sized[...]
            _INPUT_TEMPLATES[cls.name] = cls
