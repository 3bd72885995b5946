"""Fixtures of the dlib_cpp suite: the programs built from dlib's C++ source by ``build.py``
(loaded by path: this folder is not a package). A failed build fails the tests that need it,
with the compiler's output."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _build_module():
    spec = importlib.util.spec_from_file_location("dnnpy_dlib_cpp_build", os.path.join(HERE, "build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _built(what, make):
    build = _build_module()
    try:
        return make(build)
    except build.BuildError as e:
        pytest.fail(f"building {what} failed:\n{e}", pytrace=False)


@pytest.fixture(scope="session")
def driver():
    """The parity driver (driver.cpp and nets_*.cpp)."""
    return _built("the dlib parity driver", lambda b: b.build())


@pytest.fixture(scope="session")
def released_files_program():
    """released_files.cpp: writes files in the layouts of dlib's released models."""
    return _built("released_files", lambda b: b.build_program("released_files"))


@pytest.fixture(scope="session")
def linear_classifier_program():
    """linear_classifier.cpp: dlib's own files of a multiclass_linear_decision_function."""
    return _built("linear_classifier", lambda b: b.build_program("linear_classifier"))


@pytest.fixture(scope="session")
def onnx_import_program():
    """onnx_import.cpp: runs the nets `dnnpy import` wrote from ONNX models, as declared."""
    return _built("onnx_import", lambda b: b.build_program("onnx_import"))
