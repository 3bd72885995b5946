"""dnnpy.set_num_threads / get_num_threads: numpy's BLAS pool (through threadpoolctl) and
oneDNN's OpenMP pool follow one count; bad counts are refused naming the function; without
threadpoolctl a warning names why the BLAS pool was not limited and backend_info says so."""

import sys

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools.cpu as cpu_twin

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_counts():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def restore_threads():
    before = dnnpy.get_num_threads()
    with threadpoolctl.threadpool_limits(limits=None, user_api="blas"):  # restores the BLAS pool
        yield before
    dnnpy.set_num_threads(before)


def test_set_num_threads_limits_blas_and_onednn(restore_threads):
    np.ones((64, 64)) @ np.ones((64, 64))      # numpy's BLAS is loaded
    assert _blas_counts(), "numpy's BLAS is not visible to threadpoolctl"
    dnnpy.set_num_threads(1)
    assert dnnpy.get_num_threads() == 1
    assert _blas_counts() == [1] * len(_blas_counts())
    onednn = getattr(cpu_twin, "onednn", None)
    if getattr(onednn, "get_num_threads", None) is not None:
        assert onednn.get_num_threads() == 1
    threads = dnnpy.backend_info(print_report=False)["threads"]
    assert threads["requested"] == 1 and threads["reason"] is None
    assert threads["blas"] and all(p["num_threads"] == 1 for p in threads["blas"])
    dnnpy.set_num_threads(np.int64(2))          # numpy integers are ints
    assert dnnpy.get_num_threads() == 2 and set(_blas_counts()) == {2}
    dnnpy.set_num_threads(restore_threads)
    assert dnnpy.get_num_threads() == restore_threads


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                        ("2", TypeError), (True, TypeError), (None, TypeError)])
def test_bad_counts_are_refused(bad, error):
    before = _blas_counts()
    with pytest.raises(error, match="set_num_threads"):
        dnnpy.set_num_threads(bad)
    assert _blas_counts() == before


def test_without_threadpoolctl_warns_and_reports(monkeypatch, restore_threads):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)     # import threadpoolctl fails
    with pytest.warns(RuntimeWarning, match="threadpoolctl is not installed.*BLAS"):
        dnnpy.set_num_threads(1)
    threads = dnnpy.backend_info(print_report=False)["threads"]
    assert threads["blas"] is None and "threadpoolctl is not installed" in threads["reason"]
    monkeypatch.undo()
