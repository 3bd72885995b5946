"""Completeness from the registry: every layer and loss class that dnnpy's templates register
(their details classes) and every op both backends implement (``tensor_tools._twins.TWIN_OPS``)
appears in each table that checks one kind of correctness, or carries a reasoned exemption
in ``EXEMPT``; otherwise a test fails naming it. A new layer with no rows fails here, as
``test_a_new_layer_without_rows_is_named`` shows with a throwaway one.

The tables are read from the test files themselves (with ``ast``, so that files needing an
optional package are read without it): a class counts as covered by a table when its name
(or the name of a dnnpy class it derives from) appears where that kind of check runs:

- test_layer: ``tests/layer_cases/*.py`` (the rows ``tests/test_layers.py`` runs);
- test_loss: the test functions that call ``test_loss``, with the module-level tables they
  read;
- serialization: ``tests/test_serialize_*.py``;
- export (``net_to_xml``, ``net_to_dot``): ``tests/test_export.py`` and the test functions
  that compare a ``to_xml()``;
- torch oracle: ``tests/test_torch_oracle.py``;
- dlib C++ parity: ``tests/dlib_cpp/*.py`` (the opt-in suite against dlib compiled from its
  sources);
- ops: each op of ``TWIN_OPS`` called in a test of the CPU suite, and in a CUDA test file
  (``tests/test_cuda_*.py``, the GPU parity checks).
"""

import ast
import functools
from pathlib import Path

import pytest

import dnnpy  # noqa: F401  (registers every template)
from dnnpy import templates
from dnnpy.tensor_tools._twins import TWIN_OPS

TESTS = Path(__file__).resolve().parent

# (table, class or op) -> why it is not in that table
EXEMPT = {
    **{("torch oracle", name): "pure data movement or a tag-indexed merge, exact by construction: "
                               "test_layer, the serialization round trips and the dlib_cpp parity "
                               "suite check it; torch adds nothing"
       for name in ("add_prev_", "mult_prev_", "multm_prev_", "scale_", "scale_prev_", "concat_",
                    "extract_", "slice_", "reorg_", "transpose_", "reshape_to_", "upsample_",
                    "resize_prev_to_tagged_", "multiply_", "dropout_", "dropout_rate_", "affine_",
                    "tril_", "positional_encodings_")},
    ("torch oracle", "adaptive_computation_time_"): "no torch counterpart; dlib's C++ parity "
                                                    "(tests/dlib_cpp) is its oracle",
}
EXEMPT.update({("dlib C++ parity", name): "concat_ with more tags, the code concat2's C++ case runs; "
                                          "concat3 also runs in dlib's C++ in the ONNX import proof "
                                          "(tests/dlib_cpp/test_onnx_import_in_dlib.py, inception)"
               for name in ("concat3", "concat4", "concat5")})
# the losses: torch has a few of dlib's; the rest are checked against dlib's C++
EXEMPT.update({("torch oracle", name): "no torch counterpart of dlib's definition; test_loss and "
                                       "the dlib_cpp parity suite check it"
               for name in ("loss_multiclass_log_weighted_", "loss_multimulticlass_log_",
                            "loss_mmod_", "loss_metric_", "loss_ranking_", "loss_epsilon_insensitive_",
                            "loss_mean_squared_multioutput_", "loss_binary_log_per_pixel_",
                            "loss_multiclass_log_per_pixel_weighted_", "loss_mean_squared_per_pixel_",
                            "loss_mean_squared_per_channel_and_pixel_", "loss_dot_", "loss_yolo_",
                            "loss_barlow_twins_")})


def registered_classes():
    """``{name: (kind, names that cover it)}`` of the details classes (or factories) of
    dnnpy's registered templates, kind ``layer`` or ``loss``. A class is covered by a row
    naming it, one of its templates, or a dnnpy layer or loss class it derives from (a
    ``concat3`` by rows of ``concat_``; a factory such as ``flatten``'s by the classes its
    body names). Templates of classes defined outside the library (a user's, another
    test's, an example's: ``dnnpy.examples`` registers its own when imported, and its tests
    check them) are not the library's to cover."""
    out = {}
    for t in templates.registered()[0].values():
        cls = getattr(t, "details_cls", None)
        if cls is None or not cls.__module__.startswith("dnnpy.") or cls.__module__.startswith("dnnpy.examples."):
            continue
        kind = "loss" if isinstance(t, templates.loss_template) else "layer"
        names = out.get(cls.__name__, (kind, {cls.__name__}))[1] | {t.name}
        out[cls.__name__] = (kind, names | _own_names(cls))
    return out


@functools.lru_cache(maxsize=None)
def _names(node):
    """The identifiers, attribute names and identifier-like strings (parametrized op names)
    in ``node``."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def _module(path):
    return ast.parse(path.read_text(), str(path))


@functools.lru_cache(maxsize=None)
def _whole_files(*patterns):
    names = set()
    for pattern in patterns:
        for path in sorted(TESTS.glob(pattern)):
            names |= _names(_module(path))
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def _functions_calling(callee, patterns=("test_*.py",)):
    """Names in the test functions that call ``callee``, and in the module-level tables and
    helper functions those functions use."""
    names = set()
    for pattern in patterns:
        for path in sorted(TESTS.glob(pattern)):
            tree = _module(path)
            helpers = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                       for t in node.targets if isinstance(t, ast.Name)}
            helpers.update({node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)})
            for fn in ast.walk(tree):
                if isinstance(fn, ast.FunctionDef) and callee in _names(fn):
                    inside = _names(fn)
                    names |= inside
                    for used in inside & set(helpers):
                        names |= _names(helpers[used])
    return frozenset(names)


def _export_names():
    return _whole_files("test_export.py") | _functions_calling("to_xml")


TABLES = {
    "test_layer": (("layer",), lambda: _whole_files("layer_cases/*.py")),
    "test_loss": (("loss",), lambda: _functions_calling("test_loss")),
    "serialization": (("layer", "loss"), lambda: _whole_files("test_serialize_*.py")),
    "export": (("layer", "loss"), _export_names),
    "torch oracle": (("layer", "loss"), lambda: _whole_files("test_torch_oracle.py")),
    "dlib C++ parity": (("layer", "loss"), lambda: _whole_files("dlib_cpp/*.py")),
}


def _own_names(cls):
    """The dnnpy layer or loss classes ``cls`` derives from (not the shared bases), or for
    a factory function the ``..._`` names its body uses."""
    if not isinstance(cls, type):
        import inspect
        return {n for n in _names(ast.parse(inspect.getsource(cls).strip())) if n.endswith("_")}
    return {c.__name__ for c in cls.__mro__
            if c.__module__.startswith(("dnnpy.layers.", "dnnpy.loss."))
            and c.__module__ not in ("dnnpy.layers.base", "dnnpy.loss.base")}


def missing(table, classes=None):
    """The registered classes of the table's kinds that it does not cover and that are not
    exempt from it, sorted."""
    kinds, read = TABLES[table]
    covered = read()
    classes = registered_classes() if classes is None else classes
    return sorted(name for name, (kind, names) in classes.items()
                  if kind in kinds and not (names & covered) and not _exempt(table, names))


def _exempt(table, names):
    return any((table, n) in EXEMPT for n in names)


@pytest.mark.parametrize("table", list(TABLES))
def test_every_registered_layer_and_loss_is_in_the_table(table):
    absent = missing(table)
    assert not absent, (f"registered but not in the {table} checks (add rows, or an entry with "
                        f"its reason in tests/test_completeness.py's EXEMPT): {absent}")


def test_every_exemption_names_something_registered():
    classes = registered_classes()
    known = set(classes).union(*(names for _, names in classes.values()),
                               (op for row in TWIN_OPS.values() for op in row))
    stale = sorted(name for _, name in EXEMPT if name not in known)
    assert not stale, f"EXEMPT names what dnnpy no longer registers: {stale}"
    assert all(table in TABLES or table.startswith("ops") for table, _ in EXEMPT)


@pytest.mark.parametrize("table", list(TABLES))
def test_no_exemption_for_what_the_table_covers(table):
    covered = TABLES[table][1]()
    needless = sorted(name for t, name in EXEMPT if t == table and name in covered)
    assert not needless, f"exempt from the {table} checks but covered there: remove {needless}"


# twin ops that tests reach through a public name of another form: a dispatcher's variant
# (tt.affine_transform with a rectangle), a class (tt.pooling, tt.tensor_rand)
REACHED_AS = {"affine_transform_rect": "affine_transform", "pooling_forward": "pooling",
              "pooling_backward": "pooling", "rand_generator": "tensor_rand",
              "rand_fill_uniform": "fill_uniform", "rand_fill_gaussian": "fill_gaussian"}


@functools.lru_cache(maxsize=None)
def _ops_called(patterns, exclude=()):
    names = set()
    for pattern in patterns:
        for path in sorted(TESTS.glob(pattern)):
            if path.name not in exclude:
                names |= _names(_module(path))
    return frozenset(names)


@pytest.mark.parametrize("where, patterns, exclude", [
    ("ops (CPU)", ("test_*.py",), ("test_twins.py", "test_completeness.py")),
    ("ops (CUDA)", ("test_cuda_*.py",), ()),
])
def test_every_twin_op_is_called_by_a_test(where, patterns, exclude):
    called = _ops_called(patterns, exclude)
    absent = sorted(op for row in TWIN_OPS.values() for op in row
                    if not {op, REACHED_AS.get(op)} & called and (where, op) not in EXEMPT)
    assert not absent, f"ops both backends implement that no test calls ({where}): {absent}"


def test_a_new_layer_without_rows_is_named():
    """A throwaway layer registered as dnnpy's own: every table names it."""
    from dnnpy.layers.base import computational_layer

    class throwaway_layer_(computational_layer):
        def forward_inplace(self, input, output):
            output.assign(input.host_read())

        def backward_inplace(self, gradient_input, data_grad, params_grad):
            data_grad.assign(gradient_input.host_read())

    throwaway_layer_.__module__ = "dnnpy.layers.throwaway"
    registry = templates.registered()[0]
    try:
        templates.layer_template("throwaway_layer", throwaway_layer_)
        for table, (kinds, _) in TABLES.items():
            if "layer" in kinds:
                assert "throwaway_layer_" in missing(table), table
    finally:
        registry.pop("throwaway_layer", None)
    assert "throwaway_layer_" not in registered_classes()
