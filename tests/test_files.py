"""Files (docs/serialization.md): caches dropped on save, the dnnpy header's checksum, the
format chosen by the extension, temp files, and what load says about files that are not nets."""

import io
import os
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

import dnnpy
from dnnpy import SerializationError, con, fc, input, loss_multiclass_log, relu, sgd
from dnnpy.serialization import (FORMAT_VERSION, MAGIC, Writer, from_bytes, read_header, to_bytes,
                                 with_header)
from dnnpy.atomic import _remove_stale_temp_files, atomic_write

NET = loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.float32]]]]]


def _used_net():
    net = NET()
    x = [np.random.default_rng(i).standard_normal((6, 6)).astype(np.float32) for i in range(3)]
    net.compute_parameter_gradients(x, [0, 1, 2])
    return net


# ----------------------------------------------------------------------------------------
# caches

@pytest.mark.parametrize("fmt", ["dnnpy", "dlib"])
def test_caches_are_dropped_by_default_and_the_net_is_untouched(fmt):
    net = _used_net()
    raw = to_bytes(net, fmt, clean=False)
    small = to_bytes(net, fmt)
    assert len(small) < len(raw)
    # the caller's net still holds its caches: the exact bytes did not change
    assert to_bytes(net, fmt, clean=False) == raw
    assert net.get_output().size() > 0
    # the default is what dlib writes after net.clean()
    net.clean()
    assert to_bytes(net, fmt, clean=False) == small
    # and it reads back into a net with the same parameters and output
    again = from_bytes(small, NET())
    x = [np.ones((6, 6), np.float32)]
    assert np.array_equal(again(x), net(x))


def test_clean_false_dlib_bytes_are_the_raw_wrapper_fields():
    """``format="dlib", clean=False`` writes the net as it is (dlib's bytes for a net holding
    its caches): the cached output of layer<1> is in the file, value for value."""
    net = _used_net()
    data = to_bytes(net, "dlib", clean=False)
    out = np.ascontiguousarray(dnnpy.layer(net, 1).get_output().host_read(), dtype="<f4").tobytes()
    assert out in data
    assert out not in to_bytes(net, "dlib")


def test_serialize_file_sizes(tmp_path):
    net = _used_net()
    dnnpy.serialize(net, tmp_path / "a.dnnpy")
    dnnpy.serialize(net, tmp_path / "b.dnnpy", clean=False)
    assert (tmp_path / "a.dnnpy").stat().st_size < (tmp_path / "b.dnnpy").stat().st_size


# ----------------------------------------------------------------------------------------
# the format follows the extension

def test_dat_means_dlib_bytes(tmp_path):
    net = _used_net()
    dnnpy.serialize(net, tmp_path / "n.dat")
    dnnpy.serialize(net, tmp_path / "n.DAT")
    dnnpy.serialize(net, tmp_path / "n.dnnpy")
    dnnpy.serialize(net, tmp_path / "n.bin")
    dnnpy.serialize(net, tmp_path / "x.dat", format="dnnpy")      # an explicit format wins
    assert (tmp_path / "n.dat").read_bytes() == to_bytes(net, "dlib")
    assert (tmp_path / "n.DAT").read_bytes() == to_bytes(net, "dlib")
    assert (tmp_path / "n.dnnpy").read_bytes().startswith(MAGIC)
    assert (tmp_path / "n.bin").read_bytes().startswith(MAGIC)
    assert (tmp_path / "x.dat").read_bytes().startswith(MAGIC)
    with open(tmp_path / "f.dat", "wb") as f:                      # a file object's name counts
        dnnpy.serialize(net, f)
    assert (tmp_path / "f.dat").read_bytes() == to_bytes(net, "dlib")
    buf = io.BytesIO()
    dnnpy.serialize(net, buf)                                     # no name: dnnpy
    assert buf.getvalue().startswith(MAGIC)


# ----------------------------------------------------------------------------------------
# the checksum

def test_header_layout_and_checksum():
    data = to_bytes(_used_net())
    w = Writer()
    w.raw(MAGIC)
    w.uint(FORMAT_VERSION)
    head = len(w.bytes())
    assert FORMAT_VERSION == 2 and data[:head] == w.bytes()
    r = dnnpy.serialization.Reader(data, "f")
    r.pos = head
    length = r.uint()
    crc = int.from_bytes(r.raw(4), "little")
    assert length == len(data) - r.pos and crc == zlib.crc32(data[r.pos:])


@pytest.mark.parametrize("where", [0.3, 0.6, 0.99])
def test_a_flipped_byte_fails_the_checksum(where, tmp_path):
    data = bytearray(to_bytes(_used_net()))
    i = int(len(data) * where)
    data[i] ^= 0x10
    path = tmp_path / "bad.dnnpy"
    path.write_bytes(bytes(data))
    target = NET()
    before = to_bytes(target, "dlib", clean=False)
    with pytest.raises(SerializationError, match="checksum failed") as e:
        dnnpy.deserialize(path, target)
    assert str(path) in str(e.value) and "0x" in str(e.value)
    assert to_bytes(target, "dlib", clean=False) == before
    with pytest.raises(SerializationError, match="checksum failed"):
        dnnpy.load(path)


def test_truncated_and_extended_payloads_are_named():
    data = to_bytes(_used_net())
    with pytest.raises(SerializationError, match="truncated"):
        from_bytes(data[:-5], NET())
    with pytest.raises(SerializationError, match="3 more bytes"):
        from_bytes(data + b"abc", NET())


def test_version_1_files_still_read():
    net = _used_net()
    w = Writer()
    w.raw(MAGIC)
    w.uint(1)
    w.string("net")
    w.string(repr(NET))
    w.raw(to_bytes(net, "dlib"))
    old = w.bytes()
    again = dnnpy.load(old)
    assert to_bytes(again, "dlib") == to_bytes(net, "dlib")
    assert read_header(dnnpy.serialization.Reader(old, "f")) == ("net", repr(NET))


def test_with_header_round_trip():
    data = with_header("object", "thing", b"payload")
    r = dnnpy.serialization.Reader(data, "f")
    assert read_header(r) == ("object", "thing") and r.raw(r.remaining()) == b"payload"


def test_sync_files_carry_the_checksum(tmp_path):
    from dnnpy import adam, dnn_trainer

    sync = str(tmp_path / "sync")
    x = [np.random.default_rng(i).standard_normal((6, 6)).astype(np.float32) for i in range(4)]
    t = dnn_trainer(NET(), adam())
    t.set_synchronization_file(sync, 1000)
    t.be_quiet()
    t.set_max_num_epochs(1)
    t.set_mini_batch_size(2)
    t.train(x, [0, 1, 2, 0])
    name = sync if os.path.exists(sync) else sync + "_"
    data = bytearray(open(name, "rb").read())
    assert read_header(dnnpy.serialization.Reader(bytes(data), name))[0] == "dnn_trainer"
    data[len(data) // 2] ^= 1
    for f in (sync, sync + "_"):
        if os.path.exists(f):
            os.remove(f)
    open(sync, "wb").write(bytes(data))
    t2 = dnn_trainer(NET(), adam())
    with pytest.raises(SerializationError, match="checksum failed"):
        t2.set_synchronization_file(sync, 1000)


# ----------------------------------------------------------------------------------------
# temp files and save errors

def test_no_temp_file_survives_a_failed_save(tmp_path, monkeypatch):
    target = tmp_path / "n.dnnpy"

    def boom(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="No space"):
        dnnpy.serialize(_used_net(), target)
    assert os.listdir(tmp_path) == []


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "n.dnnpy"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    old = time.time() - 7200
    names = {
        "dead": f".n.dnnpy.{dead}-0123456789ab.tmp",        # a killed save: removed
        "live": f".n.dnnpy.{os.getppid()}-0123456789ab.tmp",  # a live process's: kept
        "pidless_old": ".n.dnnpy.0123456789ab.tmp",          # older dnnpy, over an hour: removed
        "pidless_new": ".n.dnnpy.abcdef012345.tmp",          # older dnnpy, recent: kept
        "other": f".m.dnnpy.{dead}-0123456789ab.tmp",        # another target's: kept
    }
    for key, name in names.items():
        p = tmp_path / name
        p.write_bytes(b"x")
        if key != "pidless_new":
            os.utime(p, (old, old))
    dnnpy.serialize(_used_net(), target)
    left = set(os.listdir(tmp_path))
    assert left == {"n.dnnpy", names["live"], names["pidless_new"], names["other"]}


def test_killed_save_leaves_a_temp_file_that_the_next_save_removes(tmp_path):
    target = tmp_path / "n.dnnpy"
    code = ("import os, sys, numpy as np, dnnpy\n"
            "from dnnpy.serialization import files\n"
            "def die(fd): os._exit(9)\n"
            "os.fsync = die\n"
            "net = dnnpy.loss_multiclass_log[dnnpy.fc[3, dnnpy.input[np.float32]]]()\n"
            f"dnnpy.serialize(net, {str(target)!r})\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dnnpy.__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert r.returncode == 9
    stale = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(stale) == 1 and not target.exists()
    os.utime(tmp_path / stale[0], (time.time() - 3600,) * 2)   # older than this process
    dnnpy.serialize(_used_net(), target)
    assert os.listdir(tmp_path) == ["n.dnnpy"]


def test_save_into_a_missing_directory_or_onto_a_directory(tmp_path):
    net = _used_net()
    missing = tmp_path / "nope" / "n.dnnpy"
    with pytest.raises(SerializationError, match="does not exist") as e:
        dnnpy.serialize(net, missing)
    assert str(missing) in str(e.value) and ".tmp" not in str(e.value)
    with pytest.raises(SerializationError, match="is a directory") as e:
        dnnpy.serialize(net, tmp_path)
    assert str(tmp_path) in str(e.value)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(SerializationError, match="not a directory"):
        atomic_write(tmp_path / "file" / "n.dnnpy", b"x")


def test_remove_stale_tolerates_a_missing_directory(tmp_path):
    _remove_stale_temp_files(str(tmp_path / "missing"), "n")


# ----------------------------------------------------------------------------------------
# files that are not nets, and bytes

@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"\x89PNG\r\n\x1a\n" + bytes(40), "PNG image"),
    (b"\xff\xd8\xff\xe0" + bytes(40), "JPEG"),
    (b"PK\x03\x04" + bytes(40), "zip"),
    (b"\x1f\x8b\x08" + bytes(40), "gzip"),
    (b"BZh91AY&SY" + bytes(40), "bzip2"),
    (b"import numpy as np\nprint('hello')\n", "no dnnpy header: a dlib-format file, or not a net file"),
])
def test_load_names_files_that_are_not_nets(content, message, tmp_path):
    path = tmp_path / "f"
    path.write_bytes(content)
    with pytest.raises(SerializationError, match=message) as e:
        dnnpy.load(path)
    assert str(path) in str(e.value)
    if content[:1] in (b"\x89", b"\xff", b"P", b"\x1f", b"B", b""):
        with pytest.raises(SerializationError, match=message):
            dnnpy.deserialize(path, NET())


def test_text_file_is_called_text(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import dnnpy\n")
    with pytest.raises(SerializationError, match="text file"):
        dnnpy.load(path)


def test_load_and_deserialize_take_bytes():
    net = _used_net()
    data = to_bytes(net)
    again = dnnpy.load(data)
    assert to_bytes(again) == data
    assert to_bytes(dnnpy.load(bytearray(data))) == data
    target = dnnpy.deserialize(to_bytes(net, "dlib"), NET())
    assert to_bytes(target) == data


def test_unknown_template_suggests_importing_its_module():
    w = Writer()
    w.string("net")
    w.string("loss_multiclass_log[swish_mine[fc[3, input[float32]]]]")
    data = with_header("net", "loss_multiclass_log[swish_mine[fc[3, input[float32]]]]", b"\1")
    with pytest.raises(SerializationError, match="import the module that defines it"):
        dnnpy.load(data)


def test_load_of_a_solver_file_and_trainer_hint(tmp_path):
    solvers = dnnpy.make_solvers(_used_net(), sgd())
    dnnpy.serialize(solvers, tmp_path / "s.dnnpy")
    assert len(dnnpy.load(tmp_path / "s.dnnpy")) == 3
    with pytest.raises(SerializationError, match="dnnpy info"):
        dnnpy.load(with_header("dnn_trainer", repr(NET), b""))
