"""dnnpy.parallel.parallel_for: every index once, on the caller and the workers; nested,
concurrent and dependent calls end (each test runs its calls in a daemon thread and fails
instead of hanging); the first exception reaches the caller."""

import threading

import numpy as np
import pytest

from dnnpy.parallel import parallel_for


def _ends(target, seconds=20):
    """Run ``target`` in a daemon thread; fail if it has not returned in ``seconds``."""
    errors = []

    def run():
        try:
            target()
        except BaseException as e:    # noqa: B036 (reported below)
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "parallel_for did not return (a deadlock)"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_every_index_once(threads):
    seen, lock = [], threading.Lock()

    def f(i):
        with lock:
            seen.append((i, threading.current_thread().name))

    _ends(lambda: parallel_for(3, 40, f, num_threads=threads))
    assert sorted(i for i, _ in seen) == list(range(3, 40))
    names = {n for _, n in seen}
    if threads == 1:
        assert len(names) == 1 and not next(iter(names)).startswith("dnnpy-worker")
    parallel_for(5, 5, f)                  # an empty range calls nothing
    assert len(seen) == 37


def test_work_is_shared_between_threads():
    names, lock = set(), threading.Lock()

    def f(i):
        np.sqrt(np.arange(300_000.0))        # numpy releases the GIL: another thread can start
        with lock:
            names.add(threading.current_thread().name)

    _ends(lambda: parallel_for(0, 16, f, num_threads=2))
    assert any(n.startswith("dnnpy-worker") for n in names)


def test_nested_concurrent_and_dependent_calls_end():
    # every thread of every call waits for an index handed out before its own, and each
    # call nests another: with 2 threads, a pool that waited for queued work would hang
    def outer():
        done = [threading.Event() for _ in range(12)]
        total = []

        def f(i):
            if i:
                done[i - 1].wait()
            inner = []
            parallel_for(0, 6, inner.append, num_threads=2)
            total.append(len(inner))
            done[i].set()

        parallel_for(0, 12, f, num_threads=2)
        assert total == [6] * 12

    callers = [threading.Thread(target=outer, daemon=True) for _ in range(3)]
    _ends(lambda: ([c.start() for c in callers], [c.join() for c in callers]))


def test_the_first_exception_reaches_the_caller():
    calls = []

    def f(i):
        calls.append(i)
        if i == 3:
            raise KeyError("index 3")

    with pytest.raises(KeyError, match="index 3"):
        _ends(lambda: parallel_for(0, 1000, f, num_threads=2))
    assert len(calls) < 1000                 # the indices after the failure are skipped


def test_workers_run_onednn_on_one_thread():
    """The parallelism is across the calls: a worker's OpenMP count is 1, not libgomp's
    default of one per CPU (the caller keeps dnnpy's count)."""
    from dnnpy.tensor_tools.cpu import onednn
    if not onednn.available():
        pytest.skip("oneDNN is not available")
    counts, lock = {}, threading.Lock()

    def f(i):
        np.sqrt(np.arange(300_000.0))
        with lock:
            counts[threading.current_thread().name] = onednn.get_num_threads()

    _ends(lambda: parallel_for(0, 16, f, num_threads=2))
    workers = {n: c for n, c in counts.items() if n.startswith("dnnpy-worker")}
    assert workers and set(workers.values()) == {1}, counts
