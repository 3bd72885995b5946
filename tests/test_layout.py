"""The package's layering: no import circles among dnnpy's modules, and no dnnpy module
imported inside a function (which is how a circle hides), except the deliberate ones listed
below with the reason.

Read statically with ``ast`` (nothing is imported), so a circle hidden behind a late import
fails here instead of waiting for an import order that breaks it.
"""

import ast
import functools
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


@functools.lru_cache(maxsize=None)
def _tree(path):
    with open(path) as f:
        return ast.parse(f.read())


@functools.lru_cache(maxsize=None)
def _imports(name):
    path, is_pkg = MODULES[name]
    tree = _tree(path)
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


@functools.lru_cache(maxsize=None)
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


# The layers, bottom to top: a module may import from its own level and the ones below,
# never from above (docs/index.md, "Layout of the code"). A new top-level module or
# package gets a level here.
LEVELS = {
    # foundations: no nets, no tensors
    "errors": 0, "printing": 0, "atomic": 0, "rand": 0, "geometry": 0, "distributed": 0, "_moved": 0,
    # compiled loops (numpy and Numba only) and the switch that loads them
    "jit": 0, "kernels": 0, "numpy_only": 0,
    # arrays and images
    "tensor": 1, "image": 1,
    # the ops and their twins, and dnnpy's worker threads (their count is the ops')
    "tensor_tools": 2, "parallel": 2,
    # nets: nodes, input layers
    "core": 3, "inputs": 3, "constructor_arguments": 3,
    # bracket templates
    "templates": 4,
    # computational layers
    "layers": 5,
    # what sits on the layers: losses, visitors, the gradient checkers, dlib's spellings
    "loss": 6, "visitors": 6, "testing": 6, "testing_loss": 6, "spellings": 6,
    # on the whole catalogue: the parser, the solvers, C++ declarations, training statistics
    "parsing": 7, "solvers": 7, "cpp": 7,
    # files
    "serialization": 8,
    # applications of nets and files
    "training": 9, "onnx": 9, "data": 9, "landmarks": 9,
    "object_detector": 9, "faces": 9, "models": 9, "face_recognition": 9,
    # front ends
    "cli": 10, "face_recognition_cli": 10, "examples": 10, "__main__": 10, "dnnpy": 10,
    # the old paths of moved modules (they re-export the new ones and warn)
    "datasets": 10, "png": 10, "statistics": 10, "linear_classifier": 10,
}


def _unit(module):
    """``dnnpy.layers.conv`` -> ``layers``; ``dnnpy.geometry`` -> ``geometry``; ``dnnpy`` -> ``dnnpy``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_module_has_a_level():
    assert sorted({_unit(m) for m in MODULES} - set(LEVELS)) == []


def test_imports_run_down_the_layers():
    upward = sorted((a, b) for a, edges in _graph().items() for b in edges
                    if LEVELS[_unit(b)] > LEVELS[_unit(a)])
    assert not upward, f"imports from a higher level (move the shared code down): {upward}"


def test_no_private_name_imported_from_another_package():
    """``from X import _name`` only inside one package (or one top-level module): what
    another package needs gets a public name in the right layer."""
    crossing = []
    for name, (path, is_pkg) in MODULES.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                for target in _resolve(name, is_pkg, node):
                    private = [a.name for a in node.names
                               if a.name.startswith("_") and not a.name.startswith("__")]
                    if private and _unit(target) != _unit(name):
                        crossing.append((name, target, private))
    assert not crossing, f"private names imported across packages: {crossing}"


def test_every_package_docstring_lists_its_modules():
    """Each package's docstring names each of its modules and sub-packages (``name.py``,
    ``name/``), one line each, so that a reader finds their way from the package."""
    missing = {}
    for name, (path, is_pkg) in MODULES.items():
        if not is_pkg:
            continue
        folder = os.path.dirname(path)
        doc = ast.get_docstring(_tree(path)) or ""
        entries = [f for f in os.listdir(folder) if f.endswith(".py") and f != "__init__.py"]
        entries += [d + "/" for d in os.listdir(folder)
                    if os.path.exists(os.path.join(folder, d, "__init__.py"))]
        absent = sorted(e for e in entries if f"``{e}``" not in doc)
        if absent:
            missing[name] = absent
    assert not missing, f"modules a package's docstring does not list: {missing}"


def test_moved_modules_keep_their_old_paths_with_a_warning():
    import importlib
    import sys
    import warnings

    moved = {"dnnpy.datasets": "dnnpy.data.datasets", "dnnpy.png": "dnnpy.image.png",
             "dnnpy.statistics": "dnnpy.training.statistics",
             "dnnpy.linear_classifier": "dnnpy.data.linear_classifier",
             "dnnpy.image.geometry": "dnnpy.image.interpolation"}
    for old, new in moved.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert [str(w.message).split(":")[0] for w in caught
                if issubclass(w.category, DeprecationWarning)] == [f"{old} moved to {new}"]
        target = importlib.import_module(new)
        assert all(getattr(module, n) is getattr(target, n) for n in target.__all__)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert dnnpy.datasets.load_digits is dnnpy.load_digits     # the old attribute too
