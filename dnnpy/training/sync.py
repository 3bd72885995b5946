"""The dnn_trainer's state file (dlib's ``serialize(dnn_trainer)``, trainer.h) and the file
handling of its synchronization: which of ``name`` / ``name_`` is newest, atomic writes.

Layout of a sync file (all dlib encodings, ``dnnpy.serialization.primitives``)::

    raw  b"DNNPY\\0", uint format version,  dnnpy's file header (dnnpy.serialization.files;
    uint payload length, 4 bytes CRC32     version 1 files, without length and CRC, still read)
    str  "dnn_trainer"                     what the file holds
    str  repr(net.net_type)                the net type's bracket expression
    -- dlib's trainer body, version 13 (trainer.h serialize) --
    int 13, uint num_layers, running_stats rs, running_stats_decayed rs_test,
    deque<double> previous_loss_values, max_num_epochs, mini_batch_size, bool verbose,
    the net (write_net), vector<solver> (size, then each solver's own record),
    double learning_rate, double min_learning_rate, iter_without_progress_thresh,
    steps_without_progress, double learning_rate_shrink, epoch_iteration, epoch_pos,
    train_one_step_calls, test_one_step_calls, matrix<double,0,1> lr_schedule (-nr, -nc,
    values), lr_schedule_pos, test_iter_without_progress_thresh, test_steps_without_progress,
    deque<double> test_previous_loss_values, previous_loss_values_dump_amount,
    test_previous_loss_values_dump_amount, deque<double> previous_loss_values_to_keep_until_disk_sync
    -- dnnpy's extension, version 4 --
    int 4, bool record_loss_history,
    uint n, n raw little-endian float64: the loss history (one per training step),
    uint m, m raw float64: the test losses, then m raw little-endian int64: the training
    step of each test loss (-1: unknown),
    unsigned gradient_check_budget

Older extensions still read: 3 (no test steps: they read as unknown), 2 (histories as dlib
doubles), 1 (also no gradient_check_budget: read as 0).

Reading is all-or-nothing: ``decode_state`` parses the whole file, the net and the solvers
into staged copies, and only then does the trainer commit it.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import SerializationError
from ..serialization import files
from ..serialization import net as net_io
from ..serialization.primitives import Reader, Writer
from .statistics import running_stats, running_stats_decayed

KIND = "dnn_trainer"
DLIB_TRAINER_VERSION = 13
EXTENSION_VERSION = 4


def net_type_expr(net) -> str:
    if net.net_type is None:
        raise TypeError("dnn_trainer: the net was not built from a net type (net_type is None), "
                        "so its sync file cannot record which type it holds")
    return repr(net.net_type)


def _write_doubles(w, values):
    w.uint(len(values))
    for v in values:
        w.float64(v)


def _write_raw_doubles(w, values):
    """A long history as count + raw little-endian float64 (one memcpy, not one encoded
    number per value: histories grow for the whole run and are written at every sync)."""
    a = np.asarray(values, dtype="<f8")
    w.uint(a.size)
    w.raw(a.tobytes())


def _read_raw_doubles(r, what):
    n = r.uint(f"the length of {what}")
    if n * 8 > r.remaining():
        raise r.error(f"{what} claims {n} values but only {r.remaining()} bytes remain")
    return np.frombuffer(r.raw(n * 8, what), dtype="<f8").tolist()


def _read_steps(r, n):
    """The training step of each of ``n`` test losses (version 4); -1 (unknown) reads as None."""
    what = "the steps of the test loss history"
    if n * 8 > r.remaining():
        raise r.error(f"{what}: {n} values need {n * 8} bytes but only {r.remaining()} remain")
    start = r.pos
    steps = np.frombuffer(r.raw(n * 8, what), dtype="<i8")
    if steps.size and steps.min() < -1:
        raise r.error(f"{what}: expected steps >= 0 (or -1: unknown), found {int(steps.min())}", start)
    return [None if v < 0 else int(v) for v in steps.tolist()]


def _read_doubles(r, what):
    n = r.uint(f"the length of {what}")
    # each double takes at least 4 bytes: a size larger than that is corrupt, not a request
    if n * 4 > r.remaining():
        raise r.error(f"{what} claims {n} values but only {r.remaining()} bytes remain")
    return [r.float64(what) for _ in range(n)]


def _positive(r, what):
    """An unsigned field the trainer's setter requires > 0 (0 would make train() loop forever)."""
    start = r.pos
    value = r.uint(what)
    if value == 0:
        raise r.error(f"expected {what} > 0, found 0", start)
    return value


def _rate(r, what):
    """A learning rate: >= 0 (repeated shrinking may reach 0), never NaN or negative."""
    start = r.pos
    value = r.float64(what)
    if not value >= 0:
        raise r.error(f"expected {what} >= 0, found {value!r}", start)
    return value


def encode_state(t) -> bytes:
    """The whole state of dnn_trainer ``t`` as sync-file bytes."""
    expr = net_type_expr(t._net)
    w = Writer()
    w.int(DLIB_TRAINER_VERSION)
    w.uint(t._net.num_layers())
    t._rs.serialize(w)
    t._rs_test.serialize(w)
    _write_doubles(w, t._previous_loss_values)
    w.uint(t._max_num_epochs)
    w.uint(t._mini_batch_size)
    w.bool(t._verbose)
    net_io.write_net(w, t._net)
    files.write_solvers(w, t._solvers)
    w.float64(t._learning_rate)
    w.float64(t._min_learning_rate)
    w.uint(t._iter_without_progress_thresh)
    w.uint(t._steps_without_progress)
    w.float64(t._learning_rate_shrink)
    w.uint(t._epoch_iteration)
    w.uint(t._epoch_pos)
    w.uint(t._train_one_step_calls)
    w.uint(t._test_one_step_calls)
    w.int(-len(t._lr_schedule))
    w.int(-1)
    for v in t._lr_schedule:
        w.float64(v)
    w.int(t._lr_schedule_pos)
    w.uint(t._test_iter_without_progress_thresh)
    w.uint(t._test_steps_without_progress)
    _write_doubles(w, t._test_previous_loss_values)
    w.uint(t._previous_loss_values_dump_amount)
    w.uint(t._test_previous_loss_values_dump_amount)
    _write_doubles(w, t._guard.losses_since_sync)
    w.int(EXTENSION_VERSION)
    w.bool(t._record_history)
    _write_raw_doubles(w, t._loss_history)
    _write_raw_doubles(w, [loss for _, loss in t._test_loss_history])
    steps = [-1 if step is None else step for step, _ in t._test_loss_history]
    w.raw(np.asarray(steps, dtype="<i8").tobytes())
    w.uint(t._gradient_check_budget)
    # the dnnpy header (payload length and CRC32) in front: dnnpy.serialization.files
    return files.with_header(KIND, expr, w.buffer)


def read_header(r, expected_type):
    """Check the magic, kind and net type; ``expected_type`` is ``repr`` of the trainer's net type."""
    header = files.read_header(r)   # magic, version; length and checksum (version 2)
    if header is None:
        raise r.error(f"expected a dnnpy trainer sync file (magic {files.MAGIC!r}); this is not one", 0)
    kind, found = header
    if kind != KIND:
        raise r.error(f"expected a {KIND!r} sync file, found a {kind!r} file")
    if found != expected_type:
        raise r.error(f"dnn_trainer: the sync file was written for the net type {found} but this "
                      f"trainer's net type is {expected_type}")
    return found


def decode_state(data, what, t) -> dict:
    """Parse sync-file bytes for trainer ``t`` into a dict of fields (plus ``commit_net`` and
    ``commit_solvers``, functions that move the staged net and solver states into ``t._net``
    and ``t._solvers``); nothing of ``t`` changes. Every problem raises ``SerializationError``."""
    r = Reader(data, what)
    try:
        read_header(r, net_type_expr(t._net))
        s = {}
        start = r.pos
        version = r.int("the dnn_trainer version")
        if version != DLIB_TRAINER_VERSION:
            raise r.error(f"expected dnn_trainer version {DLIB_TRAINER_VERSION}, found {version}", start)
        start = r.pos
        nl = r.uint("num_layers")
        if nl != t._net.num_layers():
            raise r.error(f"dnn_trainer: the sync file is for a net with {nl} layers but the net "
                          f"has {t._net.num_layers()}", start)
        s["rs"] = running_stats()
        s["rs"].deserialize(r)
        s["rs_test"] = running_stats_decayed(200)
        s["rs_test"].deserialize(r)
        s["previous_loss_values"] = _read_doubles(r, "previous_loss_values")
        s["max_num_epochs"] = _positive(r, "max_num_epochs")
        s["mini_batch_size"] = _positive(r, "mini_batch_size")
        s["verbose"] = r.bool("verbose")
        s["commit_net"] = net_io.read_net_staged(r, t._net)
        start = r.pos
        n = Reader(data, what, pos=r.pos).uint("the number of solvers")
        if n != len(t._solvers):
            raise r.error(f"dnn_trainer: the sync file holds {n} solvers but the net has "
                          f"{len(t._solvers)} computational layers", start)
        s["commit_solvers"] = files.read_solvers_staged(r, t._solvers)
        s["learning_rate"] = _rate(r, "learning_rate")
        s["min_learning_rate"] = _rate(r, "min_learning_rate")
        s["iter_without_progress_thresh"] = r.uint("iter_without_progress_thresh")
        s["steps_without_progress"] = r.uint("steps_without_progress")
        start = r.pos
        s["learning_rate_shrink"] = r.float64("learning_rate_shrink")
        if not 0 < s["learning_rate_shrink"] <= 1:
            raise r.error(f"expected learning_rate_shrink in (0, 1], found {s['learning_rate_shrink']!r}",
                          start)
        s["epoch_iteration"] = r.uint("epoch_iteration")
        s["epoch_pos"] = r.uint("epoch_pos")
        s["train_one_step_calls"] = r.uint("train_one_step_calls")
        s["test_one_step_calls"] = r.uint("test_one_step_calls")
        start = r.pos
        nr, nc = abs(r.int("lr_schedule rows")), abs(r.int("lr_schedule columns"))
        if nr * nc * 4 > r.remaining() or (nr and nc != 1):
            raise r.error(f"lr_schedule: a {nr}x{nc} matrix is not a column vector that fits "
                          f"in the {r.remaining()} remaining bytes", start)
        s["lr_schedule"] = [_rate(r, "an lr_schedule value") for _ in range(nr * nc)]
        start = r.pos
        s["lr_schedule_pos"] = r.int("lr_schedule_pos")
        if s["lr_schedule_pos"] < 0:   # dlib compares it unsigned; Python would index from the end
            raise r.error(f"expected lr_schedule_pos >= 0, found {s['lr_schedule_pos']}", start)
        s["test_iter_without_progress_thresh"] = r.uint("test_iter_without_progress_thresh")
        s["test_steps_without_progress"] = r.uint("test_steps_without_progress")
        s["test_previous_loss_values"] = _read_doubles(r, "test_previous_loss_values")
        s["previous_loss_values_dump_amount"] = r.uint("previous_loss_values_dump_amount")
        s["test_previous_loss_values_dump_amount"] = r.uint("test_previous_loss_values_dump_amount")
        s["previous_loss_values_to_keep_until_disk_sync"] = _read_doubles(
            r, "previous_loss_values_to_keep_until_disk_sync")
        start = r.pos
        ext = r.int("the dnnpy extension version")
        if not 1 <= ext <= EXTENSION_VERSION:
            raise r.error(f"expected dnnpy trainer extension version 1 to {EXTENSION_VERSION}, "
                          f"found {ext}", start)
        s["record_history"] = r.bool("record_loss_history")
        # versions 1 and 2 encoded every value as a dlib double; 3 writes raw float64
        read_history = _read_raw_doubles if ext >= 3 else _read_doubles
        s["loss_history"] = read_history(r, "the loss history")
        test_losses = read_history(r, "the test loss history")
        steps = _read_steps(r, len(test_losses)) if ext >= 4 else [None] * len(test_losses)
        s["test_loss_history"] = list(zip(steps, test_losses))
        s["gradient_check_budget"] = r.uint("gradient_check_budget") if ext >= 2 else 0
        if not r.at_end():
            raise r.error(f"expected the end of the sync file, found {r.remaining()} more bytes")
        return s
    except SerializationError:
        raise
    except Exception as e:  # a deserializer's unexpected error still is a read error
        raise r.error(f"dnn_trainer: could not read the sync file ({type(e).__name__}: {e})") from e


# ----------------------------------------------------------------------------------------
# files

def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def newest_syncfile(name) -> str:
    """dlib's ``select_newest_file(name, name + "_")`` (the other one if a file is missing;
    on a tie ``name``, so newest and oldest always differ)."""
    alt = name + "_"
    m1, m2 = _mtime(name), _mtime(alt)
    if m1 is None:
        return alt
    if m2 is None:
        return name
    return name if m1 >= m2 else alt


def oldest_syncfile(name) -> str:
    """The file to write next: a missing one, else the older one."""
    alt = name + "_"
    return alt if newest_syncfile(name) == name else name


def read_file(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def atomic_write(path, data):
    """Atomic save (temp file in the same directory, fsync, rename): dnnpy's one implementation."""
    files.atomic_write(path, data)
