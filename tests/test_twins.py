"""The two backend twins implement the same ops with the same signatures, on every CPU run.

The op list is ``tensor_tools._twins.TWIN_OPS`` (one row per concept module). The CUDA
twin's modules import CuPy, so they are read here with ``ast``, not imported: a missing op,
a renamed parameter or a changed default in ``cuda/*.py`` fails without CuPy or a GPU.
The CPU twin is read the same way, so both sides are compared as written.
"""

import ast
import importlib
import pathlib

import pytest

import dnnpy.tensor_tools as tt
from dnnpy.tensor_tools import cpu
from dnnpy.tensor_tools._twins import TWIN_OPS

ROOT = pathlib.Path(tt.__file__).parent


def _module_ast(twin, concept):
    return ast.parse((ROOT / twin / f"{concept}.py").read_text(encoding="utf-8"))


def _signature(fn):
    """A function's parameters as written: names, kinds and default expressions."""
    a = fn.args
    params = [("posonly", p.arg) for p in a.posonlyargs] + [("pos", p.arg) for p in a.args]
    defaults = [None] * (len(params) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    out = [(kind, name, d) for (kind, name), d in zip(params, defaults)]
    if a.vararg:
        out.append(("*", a.vararg.arg, None))
    out += [("kw", p.arg, None if d is None else ast.unparse(d))
            for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append(("**", a.kwarg.arg, None))
    return out


def _defined(tree):
    """Top-level function definitions and the ``__all__`` expression of a module."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    exported = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    return functions, exported


@pytest.mark.parametrize("concept", list(TWIN_OPS))
def test_both_twins_define_the_ops_with_the_same_signatures(concept):
    defined = {}
    for twin in ("cpu", "cuda"):
        functions, exported = _defined(_module_ast(twin, concept))
        # the module's __all__ is its row of the table, not a list typed again
        assert [ast.unparse(e) for e in exported] == [f"twin_ops({concept!r})"], (twin, concept)
        missing = [n for n in TWIN_OPS[concept] if n not in functions]
        assert not missing, f"{twin}/{concept}.py lacks {missing}"
        defined[twin] = {n: _signature(functions[n]) for n in TWIN_OPS[concept]}
    differ = {n: (defined["cpu"][n], defined["cuda"][n]) for n in TWIN_OPS[concept]
              if defined["cpu"][n] != defined["cuda"][n]}
    assert not differ, f"signatures differ (cpu, cuda): {differ}"


def test_twin_packages_join_every_concept_once():
    names = [n for row in TWIN_OPS.values() for n in row]
    assert len(names) == len(set(names)), "an op is listed under two concepts"
    assert cpu.__all__ == names
    assert all(callable(getattr(cpu, n)) for n in names)
    assert sorted(p.stem for p in (ROOT / "cuda").glob("*.py") if not p.stem.startswith("_")
                  and p.stem != "handles") == sorted(TWIN_OPS)
    assert sorted(p.stem for p in (ROOT / "cpu").glob("*.py") if not p.stem.startswith("_")) \
        == sorted(TWIN_OPS)


def test_cpu_twin_modules_export_their_row():
    for concept, row in TWIN_OPS.items():
        module = importlib.import_module(f"dnnpy.tensor_tools.cpu.{concept}")
        assert module.__all__ == list(row)
