"""Seeded fuzzing of saved files: truncations at every offset and random byte mutations.
Each read must either succeed or raise SerializationError, never another exception, and a
failed read must leave the target unchanged. A dnnpy-format file carries a checksum of its
payload: every change to it must raise."""

import time

import numpy as np
import pytest

import dnnpy
from dnnpy import (SerializationError, adam, con, fc, input, loss_multiclass_log, relu, repeat,
                   skip1, tag1, tag2)
from dnnpy.serialization import from_bytes, to_bytes

NETS = {
    "example": loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.float32]]]]],
    "tags+repeat": loss_multiclass_log[fc[3, skip1[tag2[repeat[2, lambda s: relu[fc[3, s]],
                                                             tag1[input[np.float32]]]]]]],
}


def _trained(net_type):
    net = net_type()
    x = [np.random.default_rng(i).standard_normal((4, 4)).astype(np.float32) for i in range(2)]
    net.compute_parameter_gradients(x, [0, 1])
    return net


def _check(data, target, before):
    """Read ``data`` into ``target``: success, or a SerializationError and no change."""
    try:
        from_bytes(data, target, "fuzz")
    except SerializationError as e:
        assert "byte offset" in str(e) or "fuzz" in str(e)
        assert to_bytes(target, "dlib", clean=False) == before, "a failed read changed the target"
        return False
    return True


def _variants(data, rng, n_mutations):
    for cut in range(len(data)):           # every truncation
        yield data[:cut]
    for _ in range(n_mutations):           # 1-3 random bytes replaced
        b = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(len(b))] = rng.integers(256)
        yield bytes(b)
    for _ in range(n_mutations // 4):      # an inserted or deleted byte shifts everything after it
        i = int(rng.integers(len(data)))
        yield data[:i] + bytes([rng.integers(256)]) + data[i:] if rng.integers(2) else data[:i] + data[i + 1:]


@pytest.mark.parametrize("name", list(NETS))
@pytest.mark.parametrize("fmt", ["dnnpy", "dlib"])
def test_fuzz_net_files(name, fmt):
    net_type = NETS[name]
    data = to_bytes(_trained(net_type), fmt, clean=False)   # caches included: more to fuzz
    target = _trained(net_type)
    before = to_bytes(target, "dlib", clean=False)
    rng = np.random.default_rng(1234)
    ok = failed = 0
    t0 = time.perf_counter()
    for variant in _variants(data, rng, 300):
        if variant == data:               # a "mutation" that wrote the same byte back
            continue
        if _check(variant, target, before):
            ok += 1
            target = _trained(net_type)   # a successful read changed it: start again
            before = to_bytes(target, "dlib", clean=False)
        else:
            failed += 1
    assert failed >= len(data)            # every truncation fails (trailing-byte check too)
    if fmt == "dnnpy":
        assert ok == 0, f"{ok} changed dnnpy files loaded without an error"
    assert time.perf_counter() - t0 < 30  # no hang and no giant allocation


def test_fuzz_solver_files():
    net = _trained(NETS["example"])
    solvers = dnnpy.make_solvers(net, adam())
    net.update_parameters(solvers, 0.01)
    data = to_bytes(solvers)
    rng = np.random.default_rng(7)
    for variant in _variants(data, rng, 200):
        target = [adam()]
        try:
            from_bytes(variant, target)
        except SerializationError:
            assert len(target) == 1 and target[0].t == 0 and target[0].m.size() == 0


def test_corrupt_solver_count_does_not_copy_the_solver_per_count():
    """A list of solvers whose count field is corrupted must fail fast (each new entry is read
    right after it is made), not deep-copy a large solver once per claimed entry."""
    import io
    from dnnpy.serialization.primitives import Writer
    from dnnpy.tensor import resizable_tensor

    big = dnnpy.sgd()
    big.v = resizable_tensor()
    big.v.set_size(1 << 20)
    body = to_bytes([dnnpy.sgd()], "dlib")[2:]        # one sgd record, without its count
    w = Writer()
    w.uint(len(body))                                   # claims as many solvers as bytes follow
    data = w.bytes() + body
    target = [big]
    calls = []
    import copy as _copy
    orig = _copy.deepcopy

    def counting(obj, *a, **k):
        calls.append(type(obj).__name__)
        return orig(obj, *a, **k)

    _copy.deepcopy = counting
    try:
        with pytest.raises(SerializationError):
            from_bytes(data, target, "fuzz")
    finally:
        _copy.deepcopy = orig
    assert target == [big] and big.v.size() == 1 << 20
    assert calls.count("sgd") <= 1                      # only solvers[0] was copied


def test_load_refuses_a_huge_repeat_count_in_the_header():
    """The header's type expression is a size field too: repeat[2000000000, ...] with a
    short body fails at once instead of building the layers."""
    import io
    from dnnpy.serialization.files import MAGIC
    from dnnpy.serialization.primitives import Writer

    w = Writer()
    w.raw(MAGIC), w.uint(1), w.string("net")
    w.string("loss_multiclass_log[fc[3, repeat[2000000000, relu[fc[3, SUBNET]], input[float32]]]]")
    w.raw(b"\0" * 64)
    start = time.monotonic()
    with pytest.raises(SerializationError, match="repeat counts included"):
        dnnpy.load(io.BytesIO(w.bytes()))
    assert time.monotonic() - start < 5



_HUGE = "loss_mean_squared[repeat[1000000000000, relu[SUBNET], input[float32]]]"
_DEEP = "relu[" * 5000 + "input[float32]" + "]" * 5000


@pytest.mark.parametrize("case", ["load", "objects", "objects-map", "cli-info"])
@pytest.mark.parametrize("expr", [_HUGE, _DEEP, "," * 10_000_000, "relu[" * 400 + "input[float32]" + "]" * 400],
                         ids=["repeat-1e12", "5000-deep", "10MB-of-commas", "400-deep"])
def test_every_header_reader_refuses_a_hostile_type_at_once(case, expr, tmp_path, capsys):
    """Every path that rebuilds a net type named in a file (load, deserialize_objects, a map
    of nets, dnnpy info on a trainer's sync file) parses it with one length and depth cap
    and refuses more layers than the bytes that follow could hold, before building any: a
    SerializationError naming the file within a second, the message not the whole header."""
    from dnnpy.cli import main
    from dnnpy.serialization import with_header
    kind, text = {"load": ("net", expr), "objects": ("objects", "net " + expr),
                  "objects-map": ("objects", "map_net " + expr),
                  "cli-info": ("dnn_trainer", expr)}[case]
    path = tmp_path / "hostile.dnnpy"
    path.write_bytes(with_header(kind, text, b"\x01" * 10))
    start = time.monotonic()
    if case == "cli-info":
        assert main(["info", str(path)]) == 1
        message = capsys.readouterr().err
    else:
        read = dnnpy.load if case == "load" else dnnpy.deserialize_objects
        with pytest.raises(SerializationError) as e:
            read(str(path))
        message = str(e.value)
    assert time.monotonic() - start < 1.5
    assert str(path) in message and len(message) < 2000
    assert any(why in message for why in ("repeat counts included", "nested over 500 deep",
                                           "characters, over the", "nested deeper than a net",
                                           "unexpected ','"))


def test_fuzz_trainer_sync_state():
    """Truncated or mutated trainer sync files: a SerializationError and an unchanged trainer,
    or a clean load; never another exception."""
    from dnnpy import dnn_trainer, loss_mean_squared
    from dnnpy.training import sync as _sync

    net_type = loss_mean_squared[fc[1, relu[fc[4, input[np.float32]]]]]
    rng = np.random.default_rng(7)
    x = list(rng.standard_normal((8, 1, 3)).astype(np.float32))
    y = list(rng.standard_normal(8).astype(np.float32))
    t = dnn_trainer(net_type(), adam())
    t.set_learning_rate_schedule([0.1, 0.05, 0.01])
    t.record_loss_history()
    for _ in range(3):
        t.train_one_step(x, y)
    t.test_one_step(x, y)
    data = _sync.encode_state(t)
    target = dnn_trainer(net_type(), adam())
    before = _sync.encode_state(target)
    for variant in list(_variants(data, rng, 400))[::3]:
        try:
            target._load_state(variant, "fuzz")
        except SerializationError:
            assert _sync.encode_state(target) == before, "a failed load changed the trainer"
        else:
            target = dnn_trainer(net_type(), adam())
