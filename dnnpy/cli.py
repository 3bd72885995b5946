"""The ``dnnpy`` command line (also ``python -m dnnpy``).

``dnnpy info FILE [--type EXPR]``
    What a saved file holds: for a net its type expression, dlib's layer table
    (``print(net)``) and the parameter count; for solvers their settings. A dnnpy-format file
    names its own type; a dlib-format file does not, so ``--type "loss_...[...]"`` (a bracket
    expression, as ``repr(net_type)`` prints it) is needed to read it.

``dnnpy test-layer "cont_(16,4,4,2,2)" [--dtype float64] [--seed N]``
    Run ``test_layer`` (dlib's numerical gradient check) on one layer. The expression is a
    call of a dnnpy layer class with literal numbers, strings, booleans, tag/skip templates
    (``add_prev_(tag1)``) or dnnpy's named constants (``bn_(CONV_MODE)``) as arguments; it is
    parsed with ``ast`` and never evaluated. Exit status 0 when the layer passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import numbers
import sys

import numpy as np

__all__ = ["main", "parse_layer_expression"]


# ----------------------------------------------------------------------------------------
# layer expressions, without eval

def _layer_classes():
    from . import layers
    from .layers.base import computational_layer

    out = {}
    for name in layers.__all__:
        obj = getattr(layers, name, None)
        if inspect.isclass(obj) and issubclass(obj, computational_layer) and obj is not computational_layer:
            out[name] = obj
    return out


def _named_values():
    """Names an argument may use: tag/skip templates and dnnpy's numeric constants."""
    import dnnpy

    names = {}
    for n in dir(dnnpy):
        v = getattr(dnnpy, n)
        if n[:1].isupper() and isinstance(v, numbers.Number) and not isinstance(v, bool):
            names[n] = v
    from .templates import skip_templates, tag_templates

    for t in (*tag_templates, *skip_templates):
        names[t.name] = t
    return names


def _literal(node, names, expr):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
            and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))
            and not isinstance(node.operand.value, bool)):
        v = node.operand.value
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise ValueError(f"{expr!r}: unknown name {node.id!r} (allowed: numbers, strings, tag/skip "
                         f"templates such as tag1, and dnnpy constants such as CONV_MODE)")
    raise ValueError(f"{expr!r}: arguments must be literal numbers, strings, booleans or names, "
                     f"found {ast.unparse(node)!r}")


def parse_layer_expression(expr: str):
    """``"con_(16,5,5,2,2)"`` -> a ``con_`` instance, without ``eval``: the expression must be
    one call of a dnnpy layer class whose arguments are literals or allowed names."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"{expr!r} is not a layer expression: {e.msg}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"{expr!r}: expected a call of a layer class, such as con_(16,5,5,2,2)")
    classes = _layer_classes()
    cls = classes.get(call.func.id)
    if cls is None:
        raise ValueError(f"{expr!r}: unknown layer class {call.func.id!r}; known: "
                         f"{', '.join(sorted(classes))}")
    names = _named_values()
    args = [_literal(a, names, expr) for a in call.args]
    kwargs = {}
    for k in call.keywords:
        if k.arg is None:
            raise ValueError(f"{expr!r}: **kwargs are not allowed")
        kwargs[k.arg] = _literal(k.value, names, expr)
    return cls(*args, **kwargs)


# ----------------------------------------------------------------------------------------
# commands

def _info(args, out):
    from .core import _node
    from .errors import SerializationError
    from .serialization.files import MAGIC, _read_source, deserialize, load
    from .parsing import net_type_from_string
    from .visitors import count_parameters

    data, _ = _read_source(args.file)
    is_dnnpy = data.startswith(MAGIC)
    if is_dnnpy:
        obj = load(args.file)
        fmt = "dnnpy"
    else:
        if not args.type:
            raise SerializationError(
                f"{args.file} is a dlib-format file: it does not store its net type. Pass the type "
                f"as a bracket expression: dnnpy info {args.file} --type \"loss_...[...]\"")
        try:
            net_type = net_type_from_string(args.type)
        except ValueError as e:
            raise SerializationError(f"--type: {e}") from None
        obj = deserialize(args.file, net_type())
        fmt = "dlib"
    print(f"file: {args.file} ({fmt} format, {len(data)} bytes)", file=out)
    if isinstance(obj, _node):
        print(f"net type: {obj.net_type!r}", file=out)
        print(str(obj), end="", file=out)
        print(f"parameters: {count_parameters(obj)}", file=out)
    elif isinstance(obj, list):
        print(f"solvers: {len(obj)}", file=out)
        for i, s in enumerate(obj):
            print(f"  {i}: {s!r}", file=out)
    else:
        print(f"solver: {obj!r}", file=out)
    return 0


def _test_layer(args, out):
    from .testing import test_layer

    layer = parse_layer_expression(args.layer)
    dtype = np.dtype(args.dtype)
    result = test_layer(layer, dtype=dtype, seed=args.seed)
    print(f"{layer!r}  ({dtype.name}, seed {args.seed})", file=out)
    print(str(result), file=out)
    print("PASSED" if result else "FAILED", file=out)
    return 0 if result else 1


def _parser():
    p = argparse.ArgumentParser(prog="dnnpy", description="dnnpy: dlib's dnn in Python")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("info", help="describe a saved net or solver file")
    i.add_argument("file")
    i.add_argument("--type", help="the net type of a dlib-format file, as a bracket expression")
    t = sub.add_parser("test-layer", help="run test_layer on a layer expression, e.g. \"con_(4,3,3,1,1)\"")
    t.add_argument("layer")
    t.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    t.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None) -> int:
    from .errors import SerializationError

    args = _parser().parse_args(argv)
    try:
        if args.command == "info":
            return _info(args, sys.stdout)
        return _test_layer(args, sys.stdout)
    except (SerializationError, ValueError, TypeError) as e:
        print(f"dnnpy {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
