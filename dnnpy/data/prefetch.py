"""``prefetch``: training data made in background threads while the net trains, in place of
the ``dlib::pipe`` + loader threads of dlib's examples (dnn_imagenet_train_ex,
dnn_metric_learning_on_images_ex, ...).

::

    def make_batch(i):                    # item i depends on i alone: a deterministic stream
        rnd = dnnpy.data.dlib_rand(i)
        ...
        return images, labels

    with prefetch(make_batch, depth=4, threads=3, count=steps) as batches:
        for images, labels in batches:
            trainer.train_one_step(images, labels)

Items come out in index order whatever the number of threads. At most ``depth`` items are
made ahead of the consumer (the pipe's size). numpy and the net's ops release the GIL for
most of their work, so loader threads overlap with training.

Why threads of its own and not ``concurrent.futures.ThreadPoolExecutor`` (which would be
shorter): the executor's threads are joined when the interpreter exits, so a source blocked
for good (a stalled network read, a queue nobody fills) would hang the program's exit after
``close()``; these workers are daemon threads, which exit with the program.
"""

from __future__ import annotations

import threading

__all__ = ["prefetch"]

_END = object()


class _state:
    """What the worker threads share with the consumer (never the ``prefetch`` object
    itself, so dropping the last reference to it closes it)."""

    def __init__(self, depth, count):
        self.cond = threading.Condition()
        self.depth = depth
        self.next_in = 0          # the next index a worker takes
        self.next_out = 0         # the next index the consumer takes
        self.end = count          # items there are (None: not known yet)
        self.results = {}         # index -> (ok, value or exception)
        self.stop = False


def _worker(st, make):
    while True:
        with st.cond:
            while not st.stop and st.next_in - st.next_out >= st.depth:
                st.cond.wait()
            if st.stop or (st.end is not None and st.next_in >= st.end):
                return
            i = st.next_in
            st.next_in += 1
        try:
            result = (True, make(i))
        except StopIteration:
            result = (True, _END)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            result = (False, e)
        with st.cond:
            if result[1] is _END:
                st.end = i if st.end is None else min(st.end, i)
            else:
                st.results[i] = result
            st.cond.notify_all()
            if not result[0]:
                return


class prefetch:
    """An iterator over ``source``'s items, made ahead in background threads.

    ``source``: an iterable (read in one thread: ``threads`` must be 1), or a callable
    ``make(i)`` giving item ``i`` (``i = 0, 1, 2, ...``; it ends the stream by raising
    ``StopIteration``, or after ``count`` items). With ``threads > 1``, items are made in
    parallel and still come out in index order, so the stream is deterministic when item
    ``i`` depends on ``i`` alone (seed each item's randomness with ``i``).
    ``depth`` (>= 1): items made ahead of the consumer at most.

    An exception in a worker is raised to the consumer when it reaches that item, the same
    exception object with its original traceback and a note naming the item index; the
    iterator is then closed. ``close()`` (also on ``with`` exit, on garbage collection, and
    when the consumer is interrupted, e.g. KeyboardInterrupt while waiting) stops the
    workers: they finish the item they are making (a worker blocked in the source cannot be
    interrupted; the threads are daemons) and make no more.
    """

    def __init__(self, source, depth=2, threads=1, count=None):
        for name, v in (("depth", depth), ("threads", threads)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"prefetch: {name} must be an integer >= 1, got {v!r}")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"prefetch: count must be None or an integer >= 0, got {count!r}")
        if callable(source) and not hasattr(source, "__iter__"):
            make = source
        else:
            try:
                it = iter(source)
            except TypeError:
                raise TypeError(f"prefetch: source must be an iterable or a callable make(i), got "
                                f"{type(source).__name__}") from None
            if threads != 1:
                raise ValueError(f"prefetch: an iterable is read in one thread; threads={threads} "
                                 f"needs a callable make(i)")
            make = lambda i: next(it)  # noqa: E731 - StopIteration ends the stream
        self._st = _state(depth, count)
        self._threads = [threading.Thread(target=_worker, args=(self._st, make), daemon=True,
                                          name=f"dnnpy-prefetch-{k}") for k in range(threads)]
        for t in self._threads:
            t.start()

    def __iter__(self):
        return self

    def __next__(self):
        st = self._st
        try:
            with st.cond:
                i = st.next_out
                while not st.stop and i not in st.results and (st.end is None or i < st.end):
                    st.cond.wait(0.1)     # a timed wait: Ctrl-C reaches the consumer
                if st.stop or i not in st.results:
                    raise StopIteration
                ok, value = st.results.pop(i)
                st.next_out += 1
                st.cond.notify_all()
        except StopIteration:
            self.close()
            raise
        except BaseException:
            self.close()
            raise
        if not ok:
            self.close()
            value.add_note(f"(raised by prefetch's worker while making item {i})")
            raise value
        return value

    def close(self, timeout=1.0):
        """Stop the workers and drop the items made ahead; waits up to ``timeout`` seconds
        for each worker to finish its current item. Calling it again does nothing."""
        st = self._st
        with st.cond:
            st.stop = True
            st.results.clear()
            st.cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        st = getattr(self, "_st", None)
        if st is not None:
            with st.cond:
                st.stop = True
                st.results.clear()
                st.cond.notify_all()
