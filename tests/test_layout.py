"""The package's layering: no import circles among dnnpy's modules, and no dnnpy module
imported inside a function (which is how a circle hides), except the deliberate ones listed
below with the reason.

Read statically with ``ast`` (nothing is imported), so a circle hidden behind a late import
fails here instead of waiting for an import order that breaks it.
"""

import ast
import os

import dnnpy

ROOT = os.path.dirname(dnnpy.__file__)

# (importing module, imported module): deferred imports that are part of the design
ALLOWED_LATE = {
    ("dnnpy.templates", "dnnpy.parsing"),   # pickling a NetType goes through the parser
    # the CUDA twin's package imports CuPy: loaded only when the CUDA backend is considered
    ("dnnpy.tensor_tools.backend", "dnnpy.tensor_tools.cuda"),
    ("dnnpy.tensor_tools.backend", "dnnpy.tensor_tools.cuda._cudnn"),
    ("dnnpy.tensor_tools.backend", "dnnpy.tensor_tools.cuda._loader"),
    ("dnnpy.tensor_tools.info", "dnnpy.tensor_tools.cuda._loader"),
}


def _modules():
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                name = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
                yield name, path, f == "__init__.py"


MODULES = {name: (path, is_pkg) for name, path, is_pkg in _modules()}


def _resolve(importer, is_pkg, node):
    """The dnnpy modules an ImportFrom/Import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "dnnpy"]
    if node.level:
        base = importer.split(".")
        base = base if is_pkg else base[:-1]
        base = base[:len(base) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    if mod.split(".")[0] != "dnnpy":
        return []
    out = []
    for a in node.names:  # "from . import layers" loads the submodule, not all of the package
        out.append(f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod)
    return out


def _imports(name):
    path, is_pkg = MODULES[name]
    tree = ast.parse(open(path).read())
    top, late = set(), set()
    for stmt in tree.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                in_function = any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))
                                  for p in _parents(stmt, node))
                (late if in_function else top).update(_resolve(name, is_pkg, node))
    return top, late


def _parents(root, target):
    """The nodes from root down to target (exclusive)."""
    path = []

    def walk(node):
        if node is target:
            return True
        for child in ast.iter_child_nodes(node):
            path.append(node)
            if walk(child):
                return True
            path.pop()
        return False

    walk(root)
    return path


def _graph():
    graph = {}
    for name in MODULES:
        top, _ = _imports(name)
        edges = set()
        for m in top:
            if m == name or m not in MODULES:
                continue
            edges.add(m)
            # loading a submodule runs its parent packages first, unless we are inside them
            parts = m.split(".")
            for i in range(2, len(parts)):
                parent = ".".join(parts[:i])
                if not (name == parent or name.startswith(parent + ".")):
                    edges.add(parent)
        graph[name] = edges
    return graph


def _cycles(graph):
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return [" -> ".join(c) for c in cycles]


def test_no_import_circles():
    cycles = _cycles(_graph())
    assert not cycles, "import circles:\n" + "\n".join(cycles)


def test_no_dnnpy_module_imported_inside_a_function():
    late = sorted((name, m) for name in MODULES for m in _imports(name)[1]
                  if (name, m) not in ALLOWED_LATE)
    assert not late, f"imports of dnnpy modules inside functions (hoist them): {late}"


def test_public_methods_of_nets_and_tensors_have_docstrings():
    import inspect
    import sys

    core, tensor = sys.modules["dnnpy.core"], sys.modules["dnnpy.tensor"]   # core re-exports its nodes
    classes = [core.net_node, core.input_node, core.add_layer, core.add_tag_layer,
               core.add_skip_layer, core.repeat_layer, core.add_loss_layer, tensor.tensor,
               tensor.resizable_tensor, tensor.alias_tensor, tensor.read_only_view, dnnpy.dnn_trainer]
    missing = [f"{c.__name__}.{name}" for c in classes for name, f in inspect.getmembers(c)
               if not name.startswith("_") and callable(f) and not inspect.getdoc(f)]
    assert not missing, f"public methods without a docstring: {missing}"
