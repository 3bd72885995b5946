"""Fetch dlib's C++ source (the PyPI sdist) and build the parity driver, cached.

``python tests/dlib_cpp/build.py`` builds (or finds) the driver and prints its path and the
time taken; the test module calls ``driver()``. ``python tests/dlib_cpp/build.py
released_files`` does the same for a standalone oracle program (``build_program``: one of our
sources, linked with dlib's object, cached the same way).

What it does:

1. ``pip download --no-binary :all: --no-deps --no-build-isolation dlib==20.0.1`` (needs
   ``wheel`` and ``setuptools`` in the running environment) saves the 3.3 MB sdist; its
   sha256 is checked, and only its ``dlib/`` tree is unpacked.
2. ``dlib/all/source.cpp`` is compiled once into ``dlib_all.o``.
3. Each of our translation units (``driver.cpp`` and ``nets_*.cpp``, which include
   ``parity.h``) is compiled into its own object, two at a time by default, and the objects are
   linked into ``parity_driver``.

Everything lives under the cache directory, ``$DNNPY_DLIB_CPP_CACHE`` or
``~/.cache/dnnpy/dlib_cpp``: ``sdist/`` (the download), ``src/dlib-20.0.1`` (the unpacked
tree), ``obj/<key>.o`` (one object per source, keyed by a hash of the compiler, the flags, the
dlib version and the source text (with our headers)) and ``bin/<key>/parity_driver`` (keyed by
the hash of all its objects' keys). A source that did not change is never compiled again, and
a second run with nothing changed only hashes the sources. A file lock makes concurrent builds
(pytest-xdist workers) wait for each other; every output is written to a temporary name and
renamed.

Compiler flags: ``-std=c++17 -O1`` (measured: -O1 compiles our units in about half the time
of -O2 and the nets are small enough that run time does not matter), ``DLIB_NO_GUI_SUPPORT``
(no X11). dlib uses BLAS, LAPACK, libpng, libjpeg, libgif, FFTW or CUDA only when
``DLIB_USE_BLAS``, ``DLIB_USE_LAPACK``, ``DLIB_PNG_SUPPORT``, ``DLIB_JPEG_SUPPORT``,
``DLIB_GIF_SUPPORT``, ``DLIB_USE_FFTW`` or ``DLIB_USE_CUDA`` is defined (its CMake build
defines them when it finds the libraries); none is defined here, so the build needs nothing
but a C++17 compiler and pthreads. Environment: ``CXX`` (default ``g++``),
``DNNPY_DLIB_CPP_JOBS`` (parallel compiles, default 2).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
DLIB_VERSION = "20.0.1"
SDIST = f"dlib-{DLIB_VERSION}.tar.gz"
SDIST_SHA256 = "7cb2a09467de032332c743bc967007f016598c66c9c9ebc54a5b66d3d9e46d54"
DEFINES = ["-DDLIB_NO_GUI_SUPPORT"]
FLAGS = ["-std=c++17", "-O1", "-w"] + DEFINES
DLIB_FLAGS = ["-std=c++17", "-O1", "-w"] + DEFINES
LIBS = ["-lpthread"]


class BuildError(RuntimeError):
    pass


def cache_dir() -> str:
    return os.environ.get("DNNPY_DLIB_CPP_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "dnnpy", "dlib_cpp")


def _cxx() -> list[str]:
    return os.environ.get("CXX", "g++").split()


def _jobs() -> int:
    return max(1, int(os.environ.get("DNNPY_DLIB_CPP_JOBS", "2")))


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run(cmd, what, log=None):
    started = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise BuildError(f"{what} failed (exit {p.returncode}):\n$ {' '.join(cmd)}\n{p.stdout[:20000]}")
    if log is not None:
        log.append((what, time.perf_counter() - started))
    return p.stdout


@contextlib.contextmanager
def _locked(root):
    import fcntl

    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _compiler_id() -> str:
    out = subprocess.run(_cxx() + ["--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if out.returncode != 0:
        raise BuildError(f"the C++ compiler {' '.join(_cxx())} does not run: {out.stdout}")
    return out.stdout.splitlines()[0] if out.stdout else "?"


# ----------------------------------------------------------------------------------------
# the sdist

def fetch_sdist(root, log=None) -> str:
    """The unpacked dlib tree (``.../src/dlib-20.0.1``), downloading it if needed."""
    src = os.path.join(root, "src", f"dlib-{DLIB_VERSION}")
    if os.path.isfile(os.path.join(src, "dlib", "all", "source.cpp")):
        return src
    sdist_dir = os.path.join(root, "sdist")
    archive = os.path.join(sdist_dir, SDIST)
    if not os.path.isfile(archive) or _sha256(archive) != SDIST_SHA256:
        os.makedirs(sdist_dir, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=sdist_dir) as tmp:
            _run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                  "--no-build-isolation", "--disable-pip-version-check", "-q", "-d", tmp,
                  f"dlib=={DLIB_VERSION}"], f"downloading the dlib {DLIB_VERSION} sdist "
                  "(pip needs wheel and setuptools installed)", log)
            got = os.path.join(tmp, SDIST)
            if not os.path.isfile(got):
                raise BuildError(f"pip download did not save {SDIST} (found {os.listdir(tmp)})")
            digest = _sha256(got)
            if digest != SDIST_SHA256:
                raise BuildError(f"{SDIST}: sha256 {digest}, expected {SDIST_SHA256}")
            os.replace(got, archive)
    started = time.perf_counter()
    parent = os.path.join(root, "src")
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        prefix = f"dlib-{DLIB_VERSION}/dlib/"
        with tarfile.open(archive, "r:gz") as tar:
            members = [m for m in tar.getmembers()
                       if m.name.startswith(prefix) and (m.isfile() or m.isdir())
                       and ".." not in m.name.split("/")]
            tar.extractall(tmp, members=members)
        if os.path.isdir(src):  # a partial tree from an interrupted run
            import shutil
            shutil.rmtree(src)
        os.replace(os.path.join(tmp, f"dlib-{DLIB_VERSION}"), src)
    if log is not None:
        log.append(("unpacking the sdist", time.perf_counter() - started))
    return src


# ----------------------------------------------------------------------------------------
# compiling

def _sources():
    """Our translation units, the driver first."""
    units = sorted(f for f in os.listdir(HERE) if f.startswith("nets_") and f.endswith(".cpp"))
    return ["driver.cpp"] + units


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def _compile(src_tree, source, obj, flags, what, log):
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    tmp = f"{obj}.{os.getpid()}.tmp"
    cmd = ["nice", "-n", "10"] + _cxx() + flags + ["-I", src_tree, "-I", HERE, "-c", source, "-o", tmp]
    try:
        _run(cmd, what, log)
        os.replace(tmp, obj)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def build(verbose=False) -> str:
    """Build (or find) the driver; returns its path. Raises ``BuildError`` with the compiler's
    output on failure."""
    return _build("parity_driver", _sources(), with_headers=True, verbose=verbose)


def build_program(name, verbose=False) -> str:
    """Build (or find) a standalone oracle program ``<name>.cpp`` of this folder (one
    translation unit, e.g. ``released_files.cpp``), linked with ``dlib_all.o``; returns its
    path. Cached as the driver is: ``obj/<name>-<key>.o`` and ``bin/<key>/<name>``."""
    return _build(name, [f"{name}.cpp"], with_headers=False, verbose=verbose)


def _build(name, units, with_headers, verbose) -> str:
    """``name`` linked from dlib's ``source.cpp`` and our ``units``; an object's key covers
    this folder's headers when ``with_headers``."""
    root = cache_dir()
    log = []
    started = time.perf_counter()
    with _locked(root):
        src_tree = fetch_sdist(root, log)
        compiler = _compiler_id()
        header = [b"".join(_read(os.path.join(HERE, h)) for h in sorted(os.listdir(HERE))
                           if h.endswith(".h"))] if with_headers else []
        dlib_key = _key("dlib", DLIB_VERSION, SDIST_SHA256, compiler, *DLIB_FLAGS)
        jobs = [(os.path.join(src_tree, "dlib", "all", "source.cpp"),
                 os.path.join(root, "obj", f"dlib_all-{dlib_key}.o"), DLIB_FLAGS,
                 "compiling dlib/all/source.cpp")]
        for unit in units:
            key = _key(unit, DLIB_VERSION, compiler, *FLAGS, *header, _read(os.path.join(HERE, unit)))
            jobs.append((os.path.join(HERE, unit),
                         os.path.join(root, "obj", f"{unit[:-4]}-{key}.o"), FLAGS, f"compiling {unit}"))
        exe = _link(root, name, compiler, src_tree, jobs, log)
    _report(verbose, log, started)
    return exe


def _link(root, name, compiler, src_tree, jobs, log) -> str:
    """``bin/<key>/<name>`` from the objects of ``jobs`` (source, object, flags, what), keyed
    by their objects' keys; compiles the missing objects first, the longest (dlib's
    source.cpp, listed first) first."""
    exe = os.path.join(root, "bin", _key(compiler, *LIBS, *(j[1] for j in jobs)), name)
    if not os.path.isfile(exe):
        todo = [j for j in jobs if not os.path.isfile(j[1])]
        with ThreadPoolExecutor(max_workers=_jobs()) as pool:
            for f in [pool.submit(_compile, src_tree, *j, log) for j in todo]:
                f.result()
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        tmp = f"{exe}.{os.getpid()}.tmp"
        _run(_cxx() + [j[1] for j in jobs] + ["-o", tmp] + LIBS, f"linking {name}", log)
        os.replace(tmp, exe)
    return exe


def _report(verbose, log, started):
    if verbose:
        for what, seconds in log:
            print(f"{seconds:7.1f} s  {what}")
        print(f"{time.perf_counter() - started:7.1f} s  total (wall)")


def main():
    names = sys.argv[1:]
    for name in names or ["driver"]:
        print(build(verbose=True) if name == "driver" else build_program(name, verbose=True))


if __name__ == "__main__":
    main()
