"""prefetch: order, exceptions from the worker (original traceback, item index), closing
early without hanging (every wait here is bounded), and feeding dnn_trainer."""

import gc
import threading
import time
import traceback

import numpy as np
import pytest

import dnnpy
from dnnpy import fc, input, loss_multiclass_log, sgd
from dnnpy.data import prefetch


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("dnnpy-prefetch")]


def _wait_gone(timeout=2.0):
    end = time.monotonic() + timeout
    while _prefetch_threads() and time.monotonic() < end:
        time.sleep(0.01)
    return not _prefetch_threads()


def test_order_is_the_index_order_with_several_threads():
    def make(i):
        time.sleep(0.002 * ((7 * i) % 5))     # items finish out of order
        return i * i
    assert list(prefetch(make, depth=3, threads=4, count=20)) == [i * i for i in range(20)]
    assert list(prefetch(iter(range(5)))) == [0, 1, 2, 3, 4]
    assert list(prefetch(range(0))) == []


def test_stop_iteration_from_make_ends_the_stream():
    def make(i):
        if i == 4:
            raise StopIteration
        return i
    assert list(prefetch(make, threads=2)) == [0, 1, 2, 3]


def test_worker_exception_reaches_the_consumer_with_its_traceback_and_index():
    def make(i):
        if i == 3:
            raise KeyError("bad image 3")
        return i
    got = []
    with pytest.raises(KeyError, match="bad image 3") as info:
        for x in prefetch(make, depth=2, count=10):
            got.append(x)
    assert got == [0, 1, 2]
    assert any("making item 3" in n for n in info.value.__notes__)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "make" in frames                 # the worker's frames are kept
    assert _wait_gone()


def test_early_close_and_garbage_collection_do_not_hang():
    release = threading.Event()

    def slow(i):
        release.wait(0.05)
        return i
    p = prefetch(slow, depth=2, threads=2)   # endless stream
    assert next(p) == 0
    p.close(timeout=2.0)
    assert _wait_gone()
    with pytest.raises(StopIteration):
        next(p)
    with prefetch(slow, depth=1) as q:
        assert next(q) == 0
    assert _wait_gone()
    r = prefetch(slow, depth=2)
    next(r)
    del r
    gc.collect()
    assert _wait_gone()


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth must be an integer >= 1"):
        prefetch(range(3), depth=0)
    with pytest.raises(ValueError, match="threads=2 needs a callable"):
        prefetch(range(3), threads=2)
    with pytest.raises(TypeError, match="iterable or a callable"):
        prefetch(3)


def test_feeds_train_one_step():
    net = loss_multiclass_log[fc[2, input[np.float32]]]()
    trainer = dnnpy.dnn_trainer(net, sgd())
    trainer.set_learning_rate(0.1)

    def make(i):
        rng = np.random.default_rng(i)
        y = rng.integers(0, 2, 8)
        x = (rng.standard_normal((8, 1, 3)) + 2.0 * y[:, None, None]).astype(np.float32)
        return list(x), list(y)
    with prefetch(make, depth=2, threads=2, count=12) as batches:
        for x, y in batches:
            trainer.train_one_step(x, y)
    assert trainer.get_train_one_step_calls() == 12
    assert _wait_gone()
