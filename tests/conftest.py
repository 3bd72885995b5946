import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    _deselect_dlib_cpp(config, items)
    _skip_cuda_without_a_device(items)


def _deselect_dlib_cpp(config, items):
    """The dlib_cpp parity suite (tests/dlib_cpp) compiles dlib from source: it runs only when
    asked for with ``-m dlib_cpp`` (or a marker expression naming it). Otherwise its tests are
    deselected, so the README's ``python -m pytest -q`` never builds anything."""
    if "dlib_cpp" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if "dlib_cpp" not in item.keywords]
    dropped = [item for item in items if "dlib_cpp" in item.keywords]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        config._dnnpy_dlib_cpp_deselected = len(dropped)


def pytest_terminal_summary(terminalreporter, config):
    n = getattr(config, "_dnnpy_dlib_cpp_deselected", 0)
    if n:
        terminalreporter.write_line(f"{n} dlib_cpp parity tests deselected (opt-in: python -m pytest -m dlib_cpp)")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _skip_cuda_without_a_device(items):
    """The one skip rule of ``@pytest.mark.cuda``: the test needs the CUDA backend in use
    (``tt.use_cuda()``), decided once, and only when such a test was collected (deciding
    imports CuPy where it is installed). ``@pytest.mark.cuda(guard=True)`` marks a test that
    runs anyway: one that must FAIL when a device exists but the backend is not in use."""
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_items:
        return
    import dnnpy.tensor_tools as tt

    if tt.use_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (tt.use_cuda() is False)")
    for item in cuda_items:
        if not item.get_closest_marker("cuda").kwargs.get("guard"):
            item.add_marker(skip)
