"""One net used from several threads: every public call holds the net's lock
(``core/calls.py``'s ``net_lock``), so concurrent calls take turns and never return another
call's numbers; a copy (``copy.deepcopy``) has a lock of its own."""

import copy
import threading

import numpy as np

import dnnpy
from dnnpy import con, fc, input, loss_mean_squared_multioutput, max_pool, relu

NET_TYPE = loss_mean_squared_multioutput[fc[5, relu[fc[16, max_pool[2, 2, 2, 2, relu[con[8, 3, 3, 1, 1,
                                                                                   input[np.float32]]]]]]]]


def _batches():
    rng = np.random.default_rng(0)
    x1 = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(4)]
    x2 = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(7)]
    return x1, x2


def _run_threads(*jobs):
    errors = []

    def guarded(job):
        try:
            job()
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(job,), daemon=True) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors


def test_two_threads_calling_one_net_get_their_own_answers():
    net = NET_TYPE()
    x1, x2 = _batches()
    e1, e2 = net(x1), net(x2)
    wrong = []

    def caller(x, expected, out):
        def job():
            for _ in range(60):
                got = net(x)
                if not all(np.array_equal(a, b) for a, b in zip(got, expected)) or len(got) != len(expected):
                    wrong.append(1)
                out.append(net.subnet()(x).shape[0])    # the plain net's call too
        return job

    n1, n2 = [], []
    _run_threads(caller(x1, e1, n1), caller(x2, e2, n2))
    assert not wrong
    assert set(n1) == {4} and set(n2) == {7}


def test_calling_a_net_while_another_thread_trains_it_changes_nothing():
    """The trainer holds the lock for a whole step (forward, backward, update), so net(x)
    runs between steps: the trained parameters are those of training alone."""
    x1, x2 = _batches()
    y = [np.full(5, 0.5, np.float32)] * len(x2)
    alone = NET_TYPE()
    alone(x1)                              # set up: the copy starts from the same parameters
    shared = copy.deepcopy(alone)
    trainer_alone = dnnpy.dnn_trainer(alone, dnnpy.sgd())
    for _ in range(20):
        trainer_alone.train_one_step(x2, y)

    trainer = dnnpy.dnn_trainer(shared, dnnpy.sgd())
    stop = threading.Event()

    def train():
        try:
            for _ in range(20):
                trainer.train_one_step(x2, y)
        finally:
            stop.set()

    def call():
        while not stop.is_set():
            assert len(shared(x1)) == 4

    _run_threads(train, call)
    for a, b in zip(_params(alone), _params(shared)):
        assert np.array_equal(a, b)


def _params(net):
    out = []
    dnnpy.visit_layer_parameters(net, lambda i, p: out.append(p.numpy().copy()))
    return out


def test_a_deep_copy_has_a_lock_of_its_own():
    net = NET_TYPE()
    other = copy.deepcopy(net)
    assert other.input_node().lock is not net.input_node().lock
    assert net.subnet().input_node().lock is net.input_node().lock
    with net.input_node().lock:        # held here: a copy still runs in another thread
        done = []
        t = threading.Thread(target=lambda: done.append(len(other(_batches()[0]))), daemon=True)
        t.start()
        t.join(timeout=60)
        assert done == [4]
