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

__all__ = ["net_type_from_string"]

_REGISTRY, _INPUTS, _INPUT_TEMPLATES = registered()


_TOKEN = re.compile(r"\s*(?:(?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf\b|nan\b)"
                    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<str>'[^']*')|(?P<punct>[\[\],]))")


def _tokenize(s):
    pos, out = 0, []
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"net_type_from_string: unexpected text at offset {pos}: {s[pos:pos + 20]!r}")
        out.append((m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
        pos = m.end()
    return out


def net_type_from_string(s: str) -> NetType:
    """Parse ``repr(net_type)`` back into the identical (cached) NetType."""
    _ensure_registered()
    tokens = _tokenize(s)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else (None, None, len(s))

    def expect(value):
        nonlocal pos
        kind, text, at = peek()
        if text != value:
            raise ValueError(f"net_type_from_string: expected {value!r} at offset {at}, found {text!r}")
        pos += 1

    def value():
        nonlocal pos
        kind, text, at = peek()
        if kind is None:
            raise ValueError("net_type_from_string: unexpected end of expression")
        pos += 1
        if kind == "num":
            return float(text) if any(c in text for c in ".eEn") else int(text)
        if kind == "str":
            return text[1:-1]
        if kind != "name":
            raise ValueError(f"net_type_from_string: unexpected {text!r} at offset {at}")
        if text in ("True", "False"):
            return text == "True"
        if text in _INPUT_TEMPLATES and peek()[1] == "[":  # input[uint8], input_rgb_image_sized[4, 6]
            expect("[")
            args = [input_arg()]
            while peek()[1] == ",":
                pos += 1
                args.append(input_arg())
            expect("]")
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
        expect("[")
        args = [value()]
        while peek()[1] == ",":
            pos += 1
            args.append(value())
        expect("]")
        return template[tuple(args)]

    def input_arg():
        # an input template's argument: a number, or a numpy dtype name (input[float32])
        nonlocal pos
        kind, text, at = peek()
        if kind == "name" and text not in _REGISTRY and text not in _INPUTS and text not in _INPUT_TEMPLATES:
            pos += 1
            if text == "rgb_pixel":       # input[rgb_pixel]: dlib's pixel type, not a dtype
                return text
            try:
                return np.dtype(text)
            except TypeError:
                raise ValueError(f"net_type_from_string: unknown input argument {text!r} at offset {at}") from None
        return value()

    result = value()
    if pos != len(tokens):
        raise ValueError(f"net_type_from_string: trailing text at offset {tokens[pos][2]}")
    if not isinstance(result, NetType):
        raise ValueError(f"net_type_from_string: {s!r} is not a net type")
    return result


def _ensure_registered():
    """Register every input layer class and bracket input template of ``dnnpy.inputs``
    (templates register themselves; input layers are plain classes)."""
    for cls in vars(input_module).values():
        if is_input_type(cls) and not cls.__name__.startswith("_") and cls is not input_layer:
            register_input(cls)
        elif getattr(cls, "is_input_template", False):  # input[...], input_rgb_image_sized[...]
            _INPUT_TEMPLATES[cls.name] = cls
