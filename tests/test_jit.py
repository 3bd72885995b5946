"""dnnpy.jit: when the compiled kernels run, how they are reported, and the
fall back to numpy when one cannot compile. (What each kernel computes is tested beside its
numpy twin: tests/test_shape_predictor.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import dnnpy
from dnnpy import jit
from helpers import needs_compiled_kernels


def test_backend_info_reports_the_kernels():
    info = dnnpy.backend_info(print_report=False)["jit"]
    assert info["used"] == jit.available()
    assert (info["reason"] is None) == info["used"]
    assert info["used"] == (info["numba"] is not None)


def test_environment_turns_them_off():
    code = ("import dnnpy; from dnnpy import jit; i = jit.info(); "
            "print(i['used'], i['reason'], jit.kernels('landmarks'))")
    env = dict(os.environ, DNNPY_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["False", "turned", "off", "by", "DNNPY_DISABLE_JIT", "None"]


@pytest.fixture
def landmarks_kernels():
    return needs_compiled_kernels().kernels("landmarks")


def test_a_kernel_that_does_not_compile_turns_them_off_with_a_warning(monkeypatch, landmarks_kernels):
    from numba.core.errors import TypingError

    def broken(*args):
        raise TypingError("no implementation for this argument type")

    monkeypatch.setattr(landmarks_kernels, "cascade", broken)
    monkeypatch.setattr(jit, "_usable", True)       # restored after the test
    monkeypatch.setattr(jit, "_reason", None)
    with pytest.warns(RuntimeWarning, match=r"landmarks\.cascade does not compile.*TypingError"):
        assert jit.call("landmarks", "cascade", 1, 2) is False
    assert not jit.available() and "TypingError" in jit.info()["reason"]
    assert jit.call("landmarks", "cascade") is False           # numpy from now on, no warning


def test_other_errors_of_a_kernel_are_raised(monkeypatch, landmarks_kernels):
    def failing(*args):
        raise IndexError("index 9 is out of bounds")

    monkeypatch.setattr(landmarks_kernels, "cascade", failing)
    with pytest.raises(IndexError, match="out of bounds"):
        jit.call("landmarks", "cascade")
    assert jit.available()


def test_force_numpy_is_per_thread_and_nests():
    import threading

    seen = []
    with jit.force_numpy():
        with jit.force_numpy():
            assert jit.kernels("landmarks") is None
        assert jit.kernels("landmarks") is None
        t = threading.Thread(target=lambda: seen.append(jit.kernels("landmarks") is None))
        t.start()
        t.join()
    assert seen == [not jit.available()]
    assert (jit.kernels("landmarks") is None) == (not jit.available())


def test_force_numpy_reaches_the_tasks_of_parallel_for():
    from dnnpy.parallel import parallel_for

    seen = []
    with jit.force_numpy():
        parallel_for(0, 8, lambda i: seen.append(jit.kernels("landmarks") is None), num_threads=2)
    assert seen == [True] * 8
    assert jit.active() == jit.available()     # the block is closed again


def test_a_kernel_module_that_does_not_load_turns_them_off_with_a_warning(monkeypatch, landmarks_kernels):
    import importlib

    real = importlib.import_module

    def failing(name, *args):
        if name == "dnnpy.kernels.fhog":
            raise RuntimeError("cannot cache function '_gradients': no locator available")
        return real(name, *args)

    monkeypatch.setattr(jit.importlib, "import_module", failing)
    monkeypatch.setattr(jit, "_usable", True)       # restored after the test
    monkeypatch.setattr(jit, "_reason", None)
    import numpy as np

    img = np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)
    with pytest.warns(RuntimeWarning, match=r"kernels of fhog cannot be loaded.*no locator"):
        got = dnnpy.image.extract_fhog_features(img)
    with jit.force_numpy():
        assert np.array_equal(got, dnnpy.image.extract_fhog_features(img))
    assert not jit.available()


def test_a_batch_whose_kernels_stop_midway_is_run_by_numpy(monkeypatch, landmarks_kernels):
    """Kernels turned off while a batch's tasks run (another thread's kernel failed to
    compile): the boxes are computed by numpy, none is left unwritten."""
    import numpy as np

    import test_shape_predictor as tsp

    sp = dnnpy.shape_predictor(tsp._synthetic())
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (50, 60, 3), dtype=np.uint8)
    boxes = tsp._random_boxes(rng, 50, 60, 40)
    with jit.force_numpy():
        want = [d.parts for d in sp.batch(img, boxes)]
    real, calls = jit.call, []

    def second_fails(*args):
        calls.append(args[1])
        return real(*args) if len(calls) == 1 else False

    monkeypatch.setattr(jit, "call", second_fails)
    assert [d.parts for d in sp.batch(img, boxes)] == want
    assert len(calls) > 1


def test_onednn_force_numpy_reaches_the_tasks_of_parallel_for():
    from dnnpy.parallel import parallel_for
    from dnnpy.tensor_tools.cpu import onednn

    seen = []
    with dnnpy.force_numpy():
        parallel_for(0, 8, lambda i: seen.append(onednn.active()), num_threads=2)
    assert seen == [False] * 8 and onednn.active() == onednn.available()
