"""Locate and load cuDNN 9 (``libcudnn.so.9``) for the ctypes bindings in ``_cudnn.py``.

CuPy 14 has no cuDNN bindings, so dnnpy loads the cuDNN "shim" library itself. Only the
shim is opened (it exports every public function and dlopens its sub-libraries through
``$ORIGIN``); LD_LIBRARY_PATH is never touched.

Search order (the first candidate that loads AND passes the checks wins):

1. ``$DNNPY_CUDNN_LIBRARY``: an explicit path to the library.
2. A ``libcudnn.so.9`` already mapped into this process (e.g. by torch): loading a second,
   different copy next to it would clash, so reuse it.
3. The ``nvidia`` namespace package: ``<dir>/cudnn/lib/libcudnn.so.9`` for each dir of
   ``nvidia.__path__``, then for each ``sys.path`` entry ``<entry>/nvidia/cudnn/lib``. The
   cu12 and cu13 wheels install the same file there.
4. ``$CUDNN_PATH``, ``$CONDA_PREFIX``, ``$CUDA_PATH``, ``$CUDA_HOME``: ``lib`` and ``lib64``.
5. The bare soname, ``ctypes.CDLL("libcudnn.so.9")``: LD_LIBRARY_PATH and ld.so.cache.
6. ``cuda.pathfinder.load_nvidia_dynamic_lib("cudnn")`` when the installed pathfinder knows
   cuDNN (>= 1.7); last, because it also insists on finding cuBLASLt.

Checks on a loaded candidate: ``cudnnGetVersion()`` is 9.x (the legacy API used here is
supported for all of 9 and may go in 10), and ``cudnnOpsVersionCheck()`` /
``cudnnCnnVersionCheck()`` succeed (they force the lazy sub-library loads, so a broken
install fails here with a clear message rather than inside the first convolution).
When nothing works, ``CudnnNotFoundError`` lists every place tried and why it failed.

Nothing here needs a GPU: loading and the version calls are host-only.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

__all__ = ["SONAME", "CudnnNotFoundError", "candidate_paths", "load_cudnn", "cudnn_info"]

SONAME = "libcudnn.so.9"
_ENV_DIRS = ("CUDNN_PATH", "CONDA_PREFIX", "CUDA_PATH", "CUDA_HOME")

_lock = threading.Lock()
_loaded = None          # (CDLL, path, version) once found
_failure = None         # the CudnnNotFoundError of the last failed search


class CudnnNotFoundError(OSError):
    """No usable cuDNN 9 was found; the message lists every candidate and its failure."""


def _nvidia_dirs():
    try:
        import nvidia  # the namespace package shared by all NVIDIA wheels
    except ImportError:
        return []
    return list(getattr(nvidia, "__path__", []))


def _already_loaded(maps_path="/proc/self/maps"):
    """Paths of libcudnn.so.9 copies already mapped into this process (Linux only)."""
    found = []
    try:
        with open(maps_path) as f:
            for line in f:
                path = line.rstrip("\n").split(" ", 5)[-1].strip() if " /" in line else ""
                if path.endswith("/" + SONAME) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def candidate_paths(environ=None, nvidia_dirs=None, sys_path=None, loaded=None):
    """``[(where, path)]`` in search order (see the module docstring); ``where`` says which
    rule produced the candidate. Absolute paths are listed whether or not they exist (the
    loader skips missing ones and reports them); duplicates are dropped.

    The keyword arguments replace the process's environment, ``nvidia.__path__``,
    ``sys.path`` and the already-mapped copies (tests use them)."""
    environ = os.environ if environ is None else environ
    nvidia_dirs = _nvidia_dirs() if nvidia_dirs is None else nvidia_dirs
    sys_path = sys.path if sys_path is None else sys_path
    loaded = _already_loaded() if loaded is None else loaded
    out = []

    def put(where, path):
        if path and all(p != path for _, p in out):
            out.append((where, path))

    explicit = environ.get("DNNPY_CUDNN_LIBRARY", "").strip()
    if explicit:
        put("$DNNPY_CUDNN_LIBRARY", explicit)
    for path in loaded:
        put("already loaded in this process", path)
    for base in nvidia_dirs:
        put("nvidia.__path__", os.path.join(base, "cudnn", "lib", SONAME))
    for entry in sys_path:
        if entry:
            put("sys.path", os.path.join(entry, "nvidia", "cudnn", "lib", SONAME))
    for var in _ENV_DIRS:
        root = environ.get(var, "").strip()
        if root:
            for sub in ("lib", "lib64"):
                put(f"${var}", os.path.join(root, sub, SONAME))
    put("system loader (LD_LIBRARY_PATH, ld.so.cache)", SONAME)
    return out


def _check(lib, path):
    """The 9.x version check and the sub-library checks; returns the version number."""
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    lib.cudnnGetVersion.argtypes = []
    version = int(lib.cudnnGetVersion())
    # cuDNN 9 encodes the version as major*10000 + minor*100 + patch
    if not 90000 <= version < 100000:
        raise OSError(f"it is cuDNN {_version_string(version)}, dnnpy needs 9.x")
    for check in ("cudnnOpsVersionCheck", "cudnnCnnVersionCheck"):
        fn = getattr(lib, check)
        fn.restype, fn.argtypes = ctypes.c_int, []
        status = fn()
        if status != 0:
            lib.cudnnGetErrorString.restype = ctypes.c_char_p
            lib.cudnnGetErrorString.argtypes = [ctypes.c_int]
            name = (lib.cudnnGetErrorString(status) or b"").decode(errors="replace")
            buf = ctypes.create_string_buffer(1024)
            lib.cudnnGetLastErrorString.restype = None
            lib.cudnnGetLastErrorString.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            lib.cudnnGetLastErrorString(buf, len(buf))
            raise OSError(f"{check}() failed with {status} {name}: "
                          f"{buf.value.decode(errors='replace')} (a sub-library next to "
                          f"{path} is missing or from another cuDNN version)")
    return version


def _version_string(version):
    if version < 90000:  # cuDNN <= 8 encoded major*1000 + minor*100 + patch
        return f"{version // 1000}.{version // 100 % 10}.{version % 100}"
    return f"{version // 10000}.{version // 100 % 100}.{version % 100}"


def _try(path, opener):
    lib = opener(path)
    return lib, _check(lib, path)


def load_cudnn(candidates=None, opener=ctypes.CDLL, use_pathfinder=True):
    """``(lib, path, version)`` of the first usable cuDNN 9 (cached after the first success
    when called with the defaults). Raises ``CudnnNotFoundError`` listing every candidate
    tried and why it failed. ``candidates``/``opener``/``use_pathfinder`` are for tests."""
    global _loaded, _failure
    default = candidates is None and opener is ctypes.CDLL and use_pathfinder
    if default and _loaded is not None:
        return _loaded
    with _lock:
        if default and _loaded is not None:
            return _loaded
        tried = []
        for where, path in (candidate_paths() if candidates is None else candidates):
            if os.path.isabs(path) and not os.path.exists(path):
                tried.append(f"  {path} ({where}): no such file")
                continue
            try:
                lib, version = _try(path, opener)
            except (OSError, AttributeError) as e:  # AttributeError: a symbol is missing
                tried.append(f"  {path} ({where}): {e}")
                continue
            result = (lib, _resolved_path(lib, path), version)
            if default:
                _loaded, _failure = result, None
            return result
        if use_pathfinder:
            try:
                from cuda.pathfinder import load_nvidia_dynamic_lib  # cuDNN known from 1.7

                path = load_nvidia_dynamic_lib("cudnn").abs_path
                lib, version = _try(path, opener)
                result = (lib, path, version)
                if default:
                    _loaded, _failure = result, None
                return result
            except Exception as e:  # ImportError, DynamicLibNotFoundError, OSError, ...
                tried.append(f"  cuda.pathfinder: {type(e).__name__}: {e}")
        error = CudnnNotFoundError(
            f"cuDNN 9 ({SONAME}) not found or unusable. Install the wheel matching CuPy "
            "(pip install nvidia-cudnn-cu12 for cupy-cuda12x, nvidia-cudnn-cu13 for "
            "cupy-cuda13x) or set DNNPY_CUDNN_LIBRARY to the library's path. Tried:\n"
            + "\n".join(tried))
        if default:
            _failure = error
        raise error


def _resolved_path(lib, path):
    """The absolute file behind a bare-soname load, when the loader can tell."""
    if os.path.isabs(path):
        return path
    try:
        lib.cudnnGetVersion  # the symbol's address names the mapped file
        for mapped in _already_loaded():
            return mapped
    except Exception:
        pass
    return path


def cudnn_info():
    """``{"path", "version", "version_string", "cudart_version", "error"}`` for
    ``dnnpy.backend_info()``. Never raises: when cuDNN cannot be loaded, path and the
    versions are None and ``error`` holds the loader's message."""
    try:
        lib, path, version = load_cudnn()
    except CudnnNotFoundError as e:
        return {"path": None, "version": None, "version_string": None, "cudart_version": None,
                "error": str(e)}
    lib.cudnnGetCudartVersion.restype = ctypes.c_size_t
    lib.cudnnGetCudartVersion.argtypes = []
    return {"path": path, "version": version, "version_string": _version_string(version),
            "cudart_version": int(lib.cudnnGetCudartVersion()), "error": None}
