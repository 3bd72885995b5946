import os
import sys

import numpy as np
import pytest

# dnnpy before any test module's torch: its OpenMP wait policy (dnnpy/tensor_tools/wait_policy.py)
# must be in the environment before libgomp loads, or the suite spins on a busy machine
import dnnpy  # noqa: F401,E402

sys.path.insert(0, os.path.dirname(__file__))


# opt-in suites: marker -> what the summary line calls them
OPT_IN = {"dlib_cpp": "dlib_cpp parity tests", "mpi": "MPI data-parallel tests"}


def pytest_collection_modifyitems(config, items):
    for marker in OPT_IN:
        _deselect_opt_in(config, items, marker)
    _skip_cuda_without_a_device(items)


def _deselect_opt_in(config, items, marker):
    """The opt-in suites run only when asked for with ``-m MARKER`` (or a marker expression
    naming it): dlib_cpp (tests/dlib_cpp) compiles dlib from source, mpi
    (tests/test_distributed_mpi.py) starts mpiexec jobs. Otherwise their tests are
    deselected, so the README's ``python -m pytest -q`` never builds or launches anything."""
    if marker in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if not item.get_closest_marker(marker)]
    dropped = [item for item in items if item.get_closest_marker(marker)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        config._dnnpy_deselected = getattr(config, "_dnnpy_deselected", {})
        config._dnnpy_deselected[marker] = len(dropped)


def pytest_terminal_summary(terminalreporter, config):
    for marker, n in getattr(config, "_dnnpy_deselected", {}).items():
        terminalreporter.write_line(f"{n} {OPT_IN[marker]} deselected (opt-in: python -m pytest -m {marker})")


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


@pytest.fixture(params=["compiled", "numpy"])
def kernels(request):
    """Runs a test twice: with dnnpy's compiled kernels (``dnnpy/kernels``, skipped without
    Numba) and with numpy only (``jit.force_numpy``): the two twins of the image code."""
    from dnnpy import jit
    from helpers import needs_compiled_kernels

    if request.param == "numpy":
        with jit.force_numpy():
            yield "numpy"
        return
    needs_compiled_kernels()
    yield "compiled"
