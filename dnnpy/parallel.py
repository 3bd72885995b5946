"""dlib's ``parallel_for`` for dnnpy's numpy code: ``parallel_for(begin, end, funct)`` calls
``funct(i)`` for every ``i`` in ``[begin, end)`` on the calling thread and on dnnpy's worker
threads, and returns once every call has returned. numpy releases the GIL inside its loops,
so work made of large array operations (image bands, pyramid levels) runs in parallel.

* Threads: ``dnnpy.get_num_threads()`` in all, the caller included (so ``set_num_threads(1)``
  runs everything on the caller). On the worker threads oneDNN runs on one thread: the
  parallelism is across the calls. The workers are kept from call to call: a new thread's
  first large arrays fault in fresh pages (a new allocator arena), which on some machines
  costs more than the work done in them. After a fork the child makes its own.
* Never a deadlock, nested or concurrent: the caller and the workers take indices from a
  shared counter, and the caller waits only for calls a worker has already started; the
  helpers still queued when the indices run out are cancelled. A ``funct`` may therefore
  call ``parallel_for`` itself, or wait for an index handed out before its own (indices are
  handed out in increasing order).
* The first exception raised by a call is raised in the caller, after the started calls
  have returned; indices not yet handed out are skipped.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from . import numpy_only
from .tensor_tools.cpu import onednn
from .tensor_tools.threads import get_num_threads

__all__ = ["parallel_for"]

_pool = {"executor": None, "workers": 0}
_pool_lock = threading.Lock()


def _workers(count):
    """The shared executor with ``count`` worker threads (a new count: a new executor; the
    old one's threads end once the calls using it are done)."""
    with _pool_lock:
        if _pool["workers"] != count:
            _pool.update(executor=ThreadPoolExecutor(max_workers=count, thread_name_prefix="dnnpy-worker"),
                         workers=count)
        return _pool["executor"]


def _forget_pool():
    global _pool_lock
    _pool.update(executor=None, workers=0)
    _pool_lock = threading.Lock()           # a parent thread may have held it at the fork


if hasattr(os, "register_at_fork"):         # POSIX; Windows does not fork
    os.register_at_fork(after_in_child=_forget_pool)


def parallel_for(begin, end, funct, num_threads=None):
    """Call ``funct(i)`` for ``i`` in ``range(begin, end)`` on up to ``num_threads`` threads
    (default ``dnnpy.get_num_threads()``), the calling thread one of them (see the module's
    docstring)."""
    begin, end = int(begin), int(end)
    if end <= begin:
        return
    threads = get_num_threads() if num_threads is None else int(num_threads)
    helpers = min(threads, end - begin) - 1
    if helpers <= 0:
        for i in range(begin, end):
            funct(i)
        return
    indices = iter(range(begin, end))
    lock = threading.Lock()
    failed = []
    callers_switches = numpy_only.state()     # its force_numpy() blocks, for the helpers too

    def work(helper=False):
        if helper:
            # the parallelism is across the calls: oneDNN runs each call's ops on its thread
            # (a worker's OpenMP count is otherwise libgomp's default, one per CPU)
            onednn.set_num_threads_if_running(1)
        with numpy_only.restored(callers_switches):
            while not failed:
                with lock:
                    i = next(indices, None)
                if i is None:
                    return
                try:
                    funct(i)
                except BaseException as e:          # noqa: B036 (re-raised in the caller)
                    failed.append(e)

    pool, futures = _workers(max(threads, get_num_threads()) - 1), []
    try:
        for _ in range(helpers):
            futures.append(pool.submit(work, True))
    except RuntimeError:                        # the interpreter is shutting down: fewer helpers
        pass
    try:
        work()
        for f in futures:
            if not f.cancel():
                f.result()
    except BaseException as e:                  # an interrupt while waiting: helpers stop taking
        failed.append(e)
        raise
    if failed:
        raise failed[0]
