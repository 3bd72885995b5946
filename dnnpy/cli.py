"""The ``dnnpy`` command line (also ``python -m dnnpy``).

``dnnpy --version``
    Print dnnpy's version.

``dnnpy info FILE [--type EXPR] [--import MODULE ...]``
    What a saved file holds: for a net its type expression, dlib's layer table
    (``print(net)``), the parameter count and where the file's bytes go (parameters, cached
    outputs and gradients, the rest); for solvers their settings; for a trainer's
    synchronization file the training state (epoch, step, learning rate, average losses,
    solver, net). A dnnpy-format file names its own type; a dlib-format file does not, so
    ``--type "loss_...[...]"`` (a bracket expression, as ``repr(net_type)`` prints it) is
    needed to read it. ``--import MODULE`` (repeatable) imports a module first, so that the
    templates of your own layers are known.

``dnnpy test-layer [MODULE:]EXPR [--dtype float64] [--seed N] [--input-shape N,K,R,C]
[--tagged-shape N,K,R,C] [--keep-params] [--import MODULE ...]``
    Run ``test_layer`` (dlib's numerical gradient check) on one layer. EXPR is a call of a
    layer class with literal numbers, strings, booleans, tag/skip templates
    (``add_prev_(tag1)``) or named constants (``bn_(CONV_MODE)``) as arguments; it is parsed
    with ``ast`` and never evaluated. The class is one of dnnpy's, or one of your own:
    ``mypkg.layers:swish_(0.3)`` imports ``mypkg.layers`` (the current directory is on the
    path) and looks the class and argument names up there first. ``--input-shape`` fixes the
    fake subnet's output shape and ``--tagged-shape`` the shape of the level a ``tagN``
    argument reaches (``scale_(tag1) --input-shape 2,3,1,1 --tagged-shape 2,3,4,4``).
    ``--keep-params`` checks the parameters ``setup`` writes instead of random ones. Exit
    status 0 when the layer passes, 1 otherwise.

``dnnpy import MODEL.onnx -o NET.dat [--loss multiclass_log]``
    Read an ONNX model as a dnnpy net (``dnnpy.onnx.import_model``) and write it in dlib's
    format, with the C++ declaration that reads it beside it (``NET.hpp``, also printed).

``dnnpy face-recognition KNOWN_PEOPLE_FOLDER IMAGE_TO_CHECK`` and ``dnnpy face-detection IMAGE_TO_CHECK``
    The ``face_recognition`` package's command lines (``dnnpy.face_recognition_cli``).

``dnnpy export FILE -o OUT.onnx [--type EXPR] [--input-shape K,R,C] [--input-mode tensor|input_layer]
[--outputs scores,labels] [--opset 17] [--dropout error|multiply] [--bn error|running_stats]
[--import MODULE ...]``
    Write the net in FILE (dnnpy format, or dlib's with ``--type``) as an ONNX model
    (``dnnpy.onnx.export``, docs/onnx.md). ``--input-shape`` is the tensor shape the input
    layer makes (K,R,C or N,K,R,C), needed unless the input has a fixed size.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import numbers
import os
import re
import sys

import numpy as np

import dnnpy

from . import __version__, face_recognition_cli, layers
from .core import net_node
from .errors import SerializationError
from .layers.base import computational_layer
from .atomic import atomic_write
from .cpp import cpp_declaration
from .onnx import export as onnx_export, import_model
from .parsing import net_type_from_string
from .serialization.files import (build_header_net, deserialize, header_net_type, load, not_a_net_reason, read_header, read_source,
                                  serialize, solver_classes, to_bytes)
from .serialization.primitives import Reader
from .templates import skip_templates, tag_templates
from .testing import test_layer
from .training import sync
from .training.trainer import dnn_trainer
from .visitors import count_parameters

__all__ = ["main", "parse_layer_expression"]


# ----------------------------------------------------------------------------------------
# layer expressions, without eval

def _is_layer_class(obj):
    if not inspect.isclass(obj) or obj is computational_layer:
        return False
    if issubclass(obj, computational_layer):
        return True
    # a user layer that does not derive from computational_layer: dlib's duck typing
    return hasattr(obj, "setup") and (hasattr(obj, "forward") or hasattr(obj, "forward_inplace"))


def _layer_classes(modules=()):
    """Classes a layer expression may call: the given modules' first, then dnnpy's."""
    out = {}
    for name in layers.__all__:
        obj = getattr(layers, name, None)
        if _is_layer_class(obj):
            out[name] = obj
    for module in modules:
        for name, obj in vars(module).items():
            if not name.startswith("_") or name.endswith("_"):
                if _is_layer_class(obj):
                    out[name] = obj
    return out


def _named_values(modules=()):
    """Names an argument may use: tag/skip templates and numeric constants (dnnpy's, and
    the given modules' upper-case ones)."""
    names = {}
    for source in (dnnpy, *modules):
        for n, v in vars(source).items():
            if n[:1].isupper() and isinstance(v, numbers.Number) and not isinstance(v, bool):
                names[n] = v
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
                         f"templates such as tag1, and constants such as CONV_MODE)")
    raise ValueError(f"{expr!r}: arguments must be literal numbers, strings, booleans or names, "
                     f"found {ast.unparse(node)!r}")


_MODULE_PREFIX = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:(?!:)(.*)$", re.S)


def import_module(name):
    """Import a user module by name, with the current directory on the path (as
    ``python -m`` has it); a failure is a ``ValueError`` naming the module."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ValueError(f"cannot import the module {name!r}: {e}") from None


def parse_layer_expression(expr: str, modules=()):
    """``"con_(16,5,5,2,2)"`` -> a ``con_`` instance, without ``eval``: the expression must be
    one call of a layer class whose arguments are literals or allowed names.

    ``"mypkg.layers:swish_(0.3)"`` imports ``mypkg.layers`` and looks names up there first;
    ``modules`` (imported module objects) are searched too."""
    modules = list(modules)
    m = _MODULE_PREFIX.match(expr)
    if m is not None:
        modules.insert(0, import_module(m.group(1)))
        expr = m.group(2)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"{expr!r} is not a layer expression: {e.msg}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"{expr!r}: expected a call of a layer class, such as con_(16,5,5,2,2)")
    classes = _layer_classes(modules)
    cls = classes.get(call.func.id)
    if cls is None:
        where = f" in {', '.join(mod.__name__ for mod in modules)} or dnnpy" if modules else ""
        hint = "" if modules else "; a layer of your own: MODULE:EXPR (e.g. mypkg.layers:swish_(0.3))"
        raise ValueError(f"{expr!r}: unknown layer class {call.func.id!r}{where}{hint}; known: "
                         f"{', '.join(sorted(classes))}")
    names = _named_values(modules)
    args = [_literal(a, names, expr) for a in call.args]
    kwargs = {}
    for k in call.keywords:
        if k.arg is None:
            raise ValueError(f"{expr!r}: **kwargs are not allowed")
        kwargs[k.arg] = _literal(k.value, names, expr)
    return cls(*args, **kwargs)


def _shape(text):
    try:
        shape = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        shape = ()
    if len(shape) != 4 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected N,K,R,C (four positive integers), got {text!r}")
    return shape


# ----------------------------------------------------------------------------------------
# info

def _mb(n):
    return f"{n} bytes" if n < 10_000 else f"{n / 1e6:.3g} MB ({n} bytes)"


def _byte_breakdown(net, file_bytes, out):
    """Where a net's bytes go: learnable parameters, cached tensors, the rest."""
    try:
        whole = len(to_bytes(net, "dlib", clean=False))
        cleaned = len(to_bytes(net, "dlib", clean=True))
    except Exception:  # noqa: BLE001 - a breakdown is a bonus, never a failure
        return
    params = 4 * count_parameters(net)
    cached = whole - cleaned
    rest = file_bytes - params - cached
    print(f"bytes: {_mb(params)} of parameters, {_mb(cached)} of cached outputs and gradients, "
          f"{_mb(max(rest, 0))} of the rest (headers, layer settings, other state)", file=out)
    if cached > max(params, 1):
        print("  the cached tensors are not needed to use the net: dnnpy.serialize drops them "
              "(clean=True, the default), as net.clean() does", file=out)


def _describe_net(net, file_bytes, out):
    print(f"net type: {net.net_type!r}", file=out)
    print(str(net), end="", file=out)
    print(f"parameters: {count_parameters(net)}", file=out)
    _byte_breakdown(net, file_bytes, out)


def _sync_state(data, name, expr):
    """Decode a trainer sync file with the trainer's own reader (``training.sync``'s
    ``decode_state`` and a ``dnn_trainer`` built for the file's net type), trying each solver
    type. Returns ``(trainer, state dict)``."""

    r = Reader(data, name)
    read_header(r)
    net_type = header_net_type(r, expr)[0]
    errors = []
    for solver_name, cls in solver_classes().items():
        trainer = dnn_trainer(build_header_net(r, net_type, expr), cls())
        try:
            state = sync.decode_state(data, name, trainer)
        except SerializationError as e:
            errors.append(e)
            continue
        state["commit_net"]()
        state["commit_solvers"]()
        return trainer, state
    # the solver type that read furthest into the file is the file's: report its error
    raise max(errors, key=_error_offset)


def _error_offset(e):
    m = re.search(r"at byte offset (\d+)\)", str(e))
    return int(m.group(1)) if m else -1


def _describe_sync(data, name, expr, out):
    trainer, s = _sync_state(data, name, expr)
    get = s.get
    print(f"trainer synchronization file (dnn_trainer), net type: {expr}", file=out)
    print(f"epoch: {get('epoch_iteration')}  (position {get('epoch_pos')} in it)", file=out)
    print(f"steps: {get('train_one_step_calls')} train_one_step calls, {get('test_one_step_calls')} "
          f"test_one_step calls (as dlib, train() steps are not counted there)", file=out)
    solvers = trainer.get_solvers()
    counts = [getattr(sv, "t", None) for sv in solvers]      # adam counts its updates
    counts = [float(c) for c in counts if isinstance(c, numbers.Real)]
    if counts:
        print(f"solver updates: {max(counts):g}", file=out)
    print(f"learning rate: {get('learning_rate'):g} (stops below {get('min_learning_rate'):g}; "
          f"shrink factor {get('learning_rate_shrink'):g})", file=out)
    rs, rs_test = get("rs"), get("rs_test")
    if rs is not None and rs.current_n():
        print(f"average loss: {rs.mean():.6g} (over the last {int(rs.current_n())} steps)", file=out)
    else:
        print("average loss: none recorded yet", file=out)
    if rs_test is not None and rs_test.current_n():
        print(f"average test loss: {rs_test.mean():.6g}", file=out)
    print(f"steps without progress: {get('steps_without_progress')} "
          f"(threshold {get('iter_without_progress_thresh')})", file=out)
    print(f"mini-batch size: {get('mini_batch_size')}, max epochs: {get('max_num_epochs')}", file=out)
    history = get("loss_history") or []
    if history:
        print(f"loss history: {len(history)} values, last {history[-1]:.6g}", file=out)
    if solvers:
        print(f"solver: {solvers[0]!r} (one per computational layer: {len(solvers)})", file=out)
    net = trainer.get_net()
    print(str(net), end="", file=out)

    print(f"parameters: {count_parameters(net)}", file=out)
    print(f"file: {_mb(len(data))}", file=out)


def _info(args, out):
    data, _ = read_source(args.file)
    header = read_header(Reader(data, args.file))
    if header is not None and header[0] == "dnn_trainer":
        print(f"file: {args.file} (dnnpy format, {len(data)} bytes)", file=out)
        _describe_sync(data, args.file, header[1], out)
        return 0
    if header is not None:
        obj = load(args.file)
        fmt = "dnnpy"
    else:
        if not args.type:
            plainly = not_a_net_reason(data)
            if plainly:
                raise SerializationError(f"{args.file}: {plainly}")
            raise SerializationError(
                f"{args.file}: no dnnpy header: a dlib-format file, or not a net file. A "
                f"dlib-format file does not store its net type: pass it as a bracket expression, "
                f"dnnpy info {args.file} --type \"loss_...[...]\"")
        try:
            net_type = net_type_from_string(args.type)
        except ValueError as e:
            raise SerializationError(f"--type: {e}") from None
        obj = deserialize(args.file, net_type())
        fmt = "dlib"
    print(f"file: {args.file} ({fmt} format, {len(data)} bytes)", file=out)
    if isinstance(obj, net_node):
        _describe_net(obj, len(data), out)
    elif isinstance(obj, list):
        print(f"solvers: {len(obj)}", file=out)
        for i, s in enumerate(obj):
            print(f"  {i}: {s!r}", file=out)
    else:
        print(f"solver: {obj!r}", file=out)
    return 0


# ----------------------------------------------------------------------------------------
# export

def _tensor_shape(text):
    try:
        shape = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        shape = ()
    if len(shape) not in (3, 4) or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected K,R,C or N,K,R,C (positive integers), got {text!r}")
    return shape


def _read_net(path, type_expr, command):
    """The net in ``path``: a dnnpy-format file names its type; a dlib one needs ``type_expr``."""
    data, _ = read_source(path)
    if read_header(Reader(data, path)) is not None:
        obj = load(path)
    else:
        if not type_expr:
            raise SerializationError(
                f"{path}: no dnnpy header: a dlib-format file does not store its net type: pass it "
                f"as a bracket expression, dnnpy {command} {path} --type \"loss_...[...]\"")
        try:
            net_type = net_type_from_string(type_expr)
        except ValueError as e:
            raise SerializationError(f"--type: {e}") from None
        obj = deserialize(path, net_type())
    if not isinstance(obj, net_node):
        raise SerializationError(f"{path}: holds {type(obj).__name__}, not a net")
    return obj


def _export(args, out):
    net = _read_net(args.file, args.type, "export")
    outputs = tuple(o.strip() for o in args.outputs.split(",") if o.strip())
    data = onnx_export(net, args.output, args.input_shape, opset=args.opset, input_mode=args.input_mode,
                       outputs=outputs, dropout=args.dropout, bn=args.bn)
    print(f"wrote {args.output} ({len(data)} bytes, opset {args.opset}, outputs {', '.join(outputs)})", file=out)
    return 0


def _import(args, out):
    """``dnnpy import MODEL.onnx -o NET.dat``: the net in dlib's format, and beside it
    (``NET.hpp``) the C++ declaration that reads it; the declaration is printed too."""
    net = import_model(args.file, loss=args.loss, input=args.input)
    declaration = cpp_declaration(net)            # refused layers fail before anything is written
    serialize(net, args.output, format="dlib")
    header = os.path.splitext(args.output)[0] + ".hpp"
    atomic_write(header, (f"// dlib's type of {os.path.basename(args.output)}, written by dnnpy import "
                          f"from {os.path.basename(args.file)}:\n// net_type net; "
                          f"dlib::deserialize(\"{os.path.basename(args.output)}\") >> net;\n"
                          + declaration).encode())
    print(f"wrote {args.output} (dlib's format) and {header}:\n", file=out)
    print(declaration, file=out)
    return 0


# ----------------------------------------------------------------------------------------
# test-layer

_SHAPE_HINT = ("this layer may need particular input shapes: pass --input-shape N,K,R,C (the "
               "fake subnet's output) and, for a tag argument, --tagged-shape N,K,R,C")


def _test_layer(args, out, modules):
    layer = parse_layer_expression(args.layer, modules)
    dtype = np.dtype(args.dtype)
    try:
        result = test_layer(layer, dtype=dtype, seed=args.seed, input_shape=args.input_shape,
                            tagged_shape=args.tagged_shape, randomize_params=not args.keep_params)
    except ValueError as e:
        hint = "" if args.input_shape and args.tagged_shape else f" ({_SHAPE_HINT})"
        raise ValueError(f"{layer!r}: {e}{hint}") from None
    shapes = ""
    if args.input_shape:
        shapes += f", input shape {args.input_shape}"
    if args.tagged_shape:
        shapes += f", tagged shape {args.tagged_shape}"
    if result.randomized_params:
        params = ", parameters redrawn"
    elif args.keep_params:
        params = ", setup's parameters"
    else:
        params = ""
    print(f"{layer!r}  ({dtype.name}, seed {args.seed}{shapes}{params})", file=out)
    print(str(result), file=out)
    print("PASSED" if result else "FAILED", file=out)
    return 0 if result else 1


# ----------------------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser(prog="dnnpy", description="dnnpy: dlib's dnn in Python")
    p.add_argument("--version", action="version", version=f"dnnpy {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    imp = dict(action="append", default=[], metavar="MODULE",
               help="import MODULE first (repeatable): the module defining your own layers")
    i = sub.add_parser("info", help="describe a saved net, solver or trainer sync file")
    i.add_argument("file")
    i.add_argument("--type", help="the net type of a dlib-format file, as a bracket expression")
    i.add_argument("--import", dest="imports", **imp)
    t = sub.add_parser("test-layer", help="run test_layer on a layer expression, e.g. \"con_(4,3,3,1,1)\" "
                                          "or \"mypkg.layers:swish_(0.3)\"")
    t.add_argument("layer", help="[MODULE:]EXPR, e.g. con_(4,3,3,1,1) or mypkg.layers:swish_(0.3)")
    t.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--input-shape", type=_shape, metavar="N,K,R,C",
                   help="the fake subnet's output shape (default: random, as dlib)")
    t.add_argument("--tagged-shape", type=_shape, metavar="N,K,R,C",
                   help="the shape of the level a tagN argument reaches (scale_, multm_prev_ ...)")
    t.add_argument("--keep-params", action="store_true",
                   help="check the parameters setup writes (dlib's behaviour) instead of random ones")
    t.add_argument("--import", dest="imports", **imp)
    e = sub.add_parser("export", help="write a saved net (dnnpy or dlib format) as an ONNX model")
    e.add_argument("file")
    e.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    e.add_argument("--type", help="the net type of a dlib-format file, as a bracket expression")
    e.add_argument("--input-shape", type=_tensor_shape, metavar="K,R,C",
                   help="the shape of the tensor the input layer makes (K,R,C or N,K,R,C)")
    e.add_argument("--input-mode", default="tensor", choices=["tensor", "input_layer"],
                   help="graph input: the tensor, or what the input layer takes (preprocessing in the graph)")
    e.add_argument("--outputs", default="scores", help="comma-separated: scores, labels, probabilities")
    e.add_argument("--opset", type=int, default=17)
    e.add_argument("--dropout", default="error", choices=["error", "multiply"])
    e.add_argument("--bn", default="error", choices=["error", "running_stats"])
    e.add_argument("--import", dest="imports", **imp)
    m = sub.add_parser("import", help="read an ONNX model as a dnnpy net and write it in dlib's format, "
                                      "with the C++ declaration that reads it")
    m.add_argument("file", help="the .onnx model")
    m.add_argument("-o", "--output", required=True, help="the dlib-format file to write (e.g. net.dat); "
                                                          "the C++ declaration goes beside it (net.hpp)")
    m.add_argument("--loss", default=None, help="a loss layer on top, e.g. multiclass_log")
    m.add_argument("--input", default=None, help="the input layer whose output the graph takes, as a "
                   "bracket expression, e.g. 'input_rgb_image_sized[150]' (default: input_tensor)")
    m.add_argument("--import", dest="imports", **imp)
    face_recognition_cli.add_commands(sub)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(args, "run"):                    # face-recognition, face-detection
        try:
            return args.run(args)
        except (FileNotFoundError, NotADirectoryError) as e:
            print(f"dnnpy {args.command}: error: {e}", file=sys.stderr)
            return 1
    try:
        modules = [import_module(m) for m in args.imports]
        if args.command == "info":
            return _info(args, sys.stdout)
        if args.command == "export":
            return _export(args, sys.stdout)
        if args.command == "import":
            return _import(args, sys.stdout)
        return _test_layer(args, sys.stdout, modules)
    except (SerializationError, ValueError, TypeError) as e:
        print(f"dnnpy {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
