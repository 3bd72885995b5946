"""Atomic file writes: dnnpy's one implementation, used by every save (nets, sync files,
imglab XML). Low in the import graph on purpose: it needs only the standard library and
``dnnpy.errors``."""

from __future__ import annotations

import os
import re
import secrets
import time

from .errors import SerializationError

__all__ = ["atomic_write"]

_STARTED = time.time()   # temp files of dead writers older than this are stale (atomic_write)
_TMP = re.compile(r"^\.(?P<base>.+)\.(?:(?P<pid>\d+)-)?[0-9a-f]{12}\.tmp$")


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:      # EPERM: it exists, owned by someone else
        return True
    return True


def _remove_stale_temp_files(directory, base):
    """Remove temp files that an earlier save of ``base`` in ``directory`` left behind when
    its process was killed: ``.base.<pid>-<hex>.tmp`` whose pid is not a live process and
    that is older than this process, or a pidless ``.base.<hex>.tmp`` (older dnnpy) over an
    hour old. A live process's temp file is never removed (a pid that is reused keeps its
    file until that process ends). Best effort: errors are ignored. POSIX only."""
    if os.name != "posix":
        return
    try:
        names = os.listdir(directory)
    except OSError:
        return
    prefix = f".{base}."
    now = time.time()
    for name in names:
        if not name.startswith(prefix) or not name.endswith(".tmp"):
            continue
        m = _TMP.match(name)
        if m is None or m.group("base") != base:
            continue
        path = os.path.join(directory, name)
        try:
            mtime = os.lstat(path).st_mtime
        except OSError:
            continue
        pid = m.group("pid")
        if pid is None:
            stale = mtime < now - 3600
        else:
            pid = int(pid)
            stale = pid != os.getpid() and mtime < _STARTED and not _pid_alive(pid)
        if stale:
            try:
                os.unlink(path)
            except OSError:
                pass


def _check_target(path, directory):
    """A clear ``SerializationError`` naming ``path`` when it cannot be saved to."""
    if os.path.isdir(path):
        raise SerializationError(f"cannot save to {path}: it is a directory (give a file name "
                                 f"inside it)")
    if not os.path.isdir(directory):
        what = "is not a directory" if os.path.exists(directory) else "does not exist"
        raise SerializationError(f"cannot save to {path}: the directory {directory} {what}")


def atomic_write(path, data: bytes):
    """Write ``data`` to ``path`` atomically: a temp file ``.name.<pid>-<hex>.tmp`` in the
    same directory, flushed and fsynced, then renamed over ``path``. On any failure ``path``
    is untouched and the temp file is removed; temp files that killed saves of the same
    ``path`` left behind are removed at the next save (see ``_remove_stale_temp_files``). A
    missing directory or a ``path`` that is a directory raise ``SerializationError`` naming
    ``path``. A new file gets the usual ``0o666 & ~umask`` permissions; an existing file's
    permission bits are kept."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _check_target(path, directory)
    try:
        keep_mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        keep_mode = None
    _remove_stale_temp_files(directory, base)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except (FileNotFoundError, NotADirectoryError) as e:   # the directory vanished meanwhile
        raise SerializationError(f"cannot save to {path}: the directory {directory} does not "
                                 f"exist") from e
    except OSError as e:     # e.g. no write permission in the directory: name the target
        raise SerializationError(f"cannot save to {path}: cannot create a file in {directory}: "
                                 f"{e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            fd = None
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if keep_mode is not None:
            os.chmod(tmp, keep_mode)
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename durable (best effort: not every OS can open a directory)
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
