"""cuDNN 9 bindings (``tensor_tools/cuda/_loader.py``, ``_cudnn.py``, ``handles.py``) without a
GPU.

Always run: the loader's search order and its error message (fake directories, environment
and opener; no real library needed), the perf struct's layout, the twins' signatures.
Run when a cuDNN 9 wheel is installed (``pip install --no-deps nvidia-cudnn-cu12``; skipped
otherwise): every symbol of the signature table resolves, every signature's parameter kinds
match the prototypes in the wheel's own headers, host-only shape inference agrees with the
CPU formulas, and ``cudnnCreate`` without a GPU gives a clean ``CudnnError``.

These modules import neither CuPy nor the rest of the CUDA twin at import time, so they are
loaded here without running ``dnnpy.tensor_tools.cuda/__init__`` when that package cannot
import (no CuPy).
"""

import ctypes
import glob
import importlib
import os
import re
import sys
import types

import numpy as np
import pytest


def _cuda_modules():
    names = ("_loader", "_cudnn", "handles", "conv", "pooling")  # conv, pooling: they import too
    base = "dnnpy.tensor_tools.cuda"
    try:
        return [importlib.import_module(f"{base}.{n}") for n in names]
    except ImportError:
        pass
    # The package's __init__ needs CuPy; load just these files under a bare package.
    import dnnpy.tensor_tools as tt

    saved = {k: v for k, v in sys.modules.items() if k == base or k.startswith(base + ".")}
    for k in saved:
        del sys.modules[k]
    stub = types.ModuleType(base)
    stub.__path__ = [os.path.join(os.path.dirname(tt.__file__), "cuda")]
    sys.modules[base] = stub
    try:
        return [importlib.import_module(f"{base}.{n}") for n in names]
    finally:
        for k in [k for k in sys.modules if k == base or k.startswith(base + ".")]:
            del sys.modules[k]
        sys.modules.update(saved)


L, C, H, _, _ = _cuda_modules()


def _loaded():
    try:
        return L.load_cudnn()
    except L.CudnnNotFoundError as e:
        return e


_LOADED = _loaded()
needs_wheel = pytest.mark.skipif(isinstance(_LOADED, Exception),
                                 reason="no cuDNN 9 library installed (nvidia-cudnn-cu12/13)")


# ----------------------------------------------------------------------------------------
# loader: search order and errors (no library needed)

def test_candidate_order():
    env = {"DNNPY_CUDNN_LIBRARY": "/explicit/libcudnn.so.9", "CUDNN_PATH": "/cudnn",
           "CONDA_PREFIX": "/conda", "CUDA_PATH": "", "CUDA_HOME": "/cuda"}
    got = L.candidate_paths(environ=env, nvidia_dirs=["/n1", "/n2"], sys_path=["/s1", ""],
                            loaded=["/torch/lib/libcudnn.so.9"])
    assert [p for _, p in got] == [
        "/explicit/libcudnn.so.9",
        "/torch/lib/libcudnn.so.9",
        "/n1/cudnn/lib/libcudnn.so.9", "/n2/cudnn/lib/libcudnn.so.9",
        "/s1/nvidia/cudnn/lib/libcudnn.so.9",
        "/cudnn/lib/libcudnn.so.9", "/cudnn/lib64/libcudnn.so.9",
        "/conda/lib/libcudnn.so.9", "/conda/lib64/libcudnn.so.9",
        "/cuda/lib/libcudnn.so.9", "/cuda/lib64/libcudnn.so.9",
        "libcudnn.so.9",
    ]
    assert got[0][0] == "$DNNPY_CUDNN_LIBRARY" and got[-1][1] == L.SONAME


def test_candidates_without_anything_and_duplicates():
    got = L.candidate_paths(environ={}, nvidia_dirs=["/site"], sys_path=["/site/.."], loaded=[])
    assert [p for _, p in got] == ["/site/cudnn/lib/libcudnn.so.9",
                                   "/site/../nvidia/cudnn/lib/libcudnn.so.9", "libcudnn.so.9"]
    same = L.candidate_paths(environ={"CUDA_HOME": "/x", "CUDA_PATH": "/x"}, nvidia_dirs=[],
                             sys_path=[], loaded=[])
    assert [p for _, p in same] == ["/x/lib/libcudnn.so.9", "/x/lib64/libcudnn.so.9", "libcudnn.so.9"]


def test_environment_variable_comes_first(monkeypatch):
    monkeypatch.setenv("DNNPY_CUDNN_LIBRARY", "/opt/mine/libcudnn.so.9")
    assert L.candidate_paths()[0] == ("$DNNPY_CUDNN_LIBRARY", "/opt/mine/libcudnn.so.9")


def test_already_loaded_copies_are_read_from_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /py/site/nvidia/cudnn/lib/libcudnn.so.9\n"
        "7f04-7f05 r--p 00001000 08:01 2 /py/site/nvidia/cudnn/lib/libcudnn.so.9\n"
        "7f06-7f07 rw-p 00000000 00:00 0 \n")
    assert L._already_loaded(str(maps)) == ["/py/site/nvidia/cudnn/lib/libcudnn.so.9"]
    assert L._already_loaded(str(tmp_path / "absent")) == []


def test_error_lists_every_place_tried(tmp_path):
    bad = tmp_path / "nvidia" / "cudnn" / "lib"
    bad.mkdir(parents=True)
    (bad / L.SONAME).write_bytes(b"not an ELF file")
    missing = str(tmp_path / "cuda" / "lib64" / L.SONAME)
    candidates = [("nvidia.__path__", str(bad / L.SONAME)), ("$CUDA_HOME", missing),
                  ("system loader", "libcudnn_no_such_soname.so.9")]
    with pytest.raises(L.CudnnNotFoundError) as err:
        L.load_cudnn(candidates=candidates, use_pathfinder=False)
    msg = str(err.value)
    assert str(bad / L.SONAME) in msg and "nvidia.__path__" in msg
    assert missing in msg and "no such file" in msg
    assert "libcudnn_no_such_soname.so.9" in msg
    assert "nvidia-cudnn-cu12" in msg and "DNNPY_CUDNN_LIBRARY" in msg


class _FakeFn:
    def __init__(self, value):
        self.value, self.restype, self.argtypes = value, None, None

    def __call__(self, *args):
        return self.value


class _FakeLib:
    def __init__(self, version, ops_status=0):
        self.cudnnGetVersion = _FakeFn(version)
        self.cudnnOpsVersionCheck = _FakeFn(ops_status)
        self.cudnnCnnVersionCheck = _FakeFn(0)
        self.cudnnGetErrorString = _FakeFn(b"CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED")
        self.cudnnGetLastErrorString = _FakeFn(None)


def test_first_usable_candidate_wins_and_versions_are_checked(tmp_path):
    libs = {"/a/libcudnn.so.9": OSError("wrong ELF class"),
            "/b/libcudnn.so.9": _FakeLib(8907),                  # cuDNN 8.9.7
            "/c/libcudnn.so.9": _FakeLib(92000, ops_status=1008),  # broken sub-libraries
            "/d/libcudnn.so.9": _FakeLib(91900),
            "/e/libcudnn.so.9": _FakeLib(92800)}
    for p in libs:
        os.makedirs(str(tmp_path) + os.path.dirname(p), exist_ok=True)
        open(str(tmp_path) + p, "wb").close()

    def opener(path):
        lib = libs[path[len(str(tmp_path)):]]
        if isinstance(lib, Exception):
            raise lib
        return lib

    candidates = [("test", str(tmp_path) + p) for p in libs]
    lib, path, version = L.load_cudnn(candidates=candidates, opener=opener, use_pathfinder=False)
    assert (lib, path, version) == (libs["/d/libcudnn.so.9"], str(tmp_path) + "/d/libcudnn.so.9", 91900)
    with pytest.raises(L.CudnnNotFoundError) as err:
        L.load_cudnn(candidates=candidates[:3], opener=opener, use_pathfinder=False)
    msg = str(err.value)
    assert "wrong ELF class" in msg
    assert "it is cuDNN 8.9.7, dnnpy needs 9.x" in msg
    assert "cudnnOpsVersionCheck() failed with 1008" in msg


def test_cudnn_info_never_raises(monkeypatch):
    def fail():
        raise L.CudnnNotFoundError("nothing here")
    monkeypatch.setattr(L, "load_cudnn", fail)
    info = L.cudnn_info()
    assert info["path"] is None and info["version"] is None and "nothing here" in info["error"]


# ----------------------------------------------------------------------------------------
# table, struct and twins (no library needed)

def test_perf_struct_layout():
    assert ctypes.sizeof(C.AlgoPerf) == 48
    assert C.AlgoPerf.memory.offset == 16 and C.AlgoPerf.mathType.offset == 28


def test_table_uses_only_plain_ctypes_kinds():
    for name, (restype, argtypes) in C.SIGNATURES.items():
        assert name.startswith("cudnn")
        for t in argtypes:
            assert _ckind(t) in ("ptr", "int", "size_t", "double"), (name, t)


def test_workspace_cap_setting(monkeypatch):
    old = H.max_workspace()
    try:
        H.set_max_workspace(1 << 20)
        assert H.max_workspace() == 1 << 20
        with pytest.raises(ValueError):
            H.set_max_workspace(-1)
    finally:
        H.set_max_workspace(old)
    monkeypatch.setenv("DNNPY_CUDNN_MAX_WORKSPACE", "12345")
    assert H._env_max_workspace() == 12345
    monkeypatch.setenv("DNNPY_CUDNN_MAX_WORKSPACE", "lots")
    with pytest.raises(ValueError, match="DNNPY_CUDNN_MAX_WORKSPACE"):
        H._env_max_workspace()


# ----------------------------------------------------------------------------------------
# against the installed wheel

def _ckind(t):
    if t is None:
        return None
    if t in (ctypes.c_void_p, ctypes.c_char_p) or (isinstance(t, type) and issubclass(t, ctypes._Pointer)):
        return "ptr"
    return {ctypes.c_int: "int", ctypes.c_size_t: "size_t", ctypes.c_double: "double",
            ctypes.c_float: "float"}.get(t, repr(t))


def _headers():
    if isinstance(_LOADED, Exception):
        pytest.skip("no cuDNN library")
    include = os.path.join(os.path.dirname(os.path.dirname(_LOADED[1])), "include")
    files = [f for f in glob.glob(os.path.join(include, "cudnn*.h")) if not f.endswith("_v9.h")]
    if not files:
        pytest.skip(f"no cuDNN headers next to {_LOADED[1]}")
    text = "\n".join(open(f, errors="replace").read() for f in files)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _parse(text):
    pointers = set(re.findall(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)", text))
    pointers |= set(re.findall(r"typedef\s+void\s*\*\s*(\w+)", text)) | {"cudaStream_t"}
    enums = set(re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)", text))

    def kind(decl):
        decl = decl.strip()
        if decl in ("void", ""):
            return None
        if "*" in decl or "[" in decl:
            return "ptr"
        words = [w for w in re.findall(r"\w+", decl)
                 if w not in ("const", "struct", "CUDNN_DEPRECATED")]
        typ = words[0]
        if typ in pointers:
            return "ptr"
        if typ in enums or typ == "int":
            return "int"
        return {"size_t": "size_t", "double": "double", "float": "float",
                "int64_t": "int64"}.get(typ, "unknown " + typ)

    protos = {}
    for ret, star, name, params in re.findall(
            r"(\w+)\s*(\*?)\s*CUDNNWINAPI\s+(\w+)\s*\(([^;{]*?)\)\s*;", text):
        ret_kind = "ptr" if star else kind(ret)
        args = [kind(p) for p in params.split(",")] if params.strip() not in ("", "void") else []
        protos[name] = (ret_kind, args)
    return protos


@needs_wheel
def test_version_is_9():
    lib, path, version = _LOADED
    assert 90000 <= version < 100000
    assert os.path.isabs(path) or path == L.SONAME
    info = L.cudnn_info()
    assert info["version"] == version and info["error"] is None
    assert info["version_string"].startswith("9.")
    assert C.api().version == version


@needs_wheel
def test_every_symbol_resolves():
    lib = _LOADED[0]
    missing = [name for name in C.SIGNATURES if not hasattr(lib, name)]
    assert not missing


@needs_wheel
def test_signatures_match_the_headers():
    protos = _parse(_headers())
    assert len(protos) > 150  # the parser found the API, not a handful of lines
    problems = []
    for name, (restype, argtypes) in C.SIGNATURES.items():
        if name not in protos:
            problems.append(f"{name}: not in the headers")
            continue
        want_ret, want_args = protos[name]
        got_args = [_ckind(t) for t in argtypes]
        if len(got_args) != len(want_args):
            problems.append(f"{name}: header has {len(want_args)} parameters, table {len(got_args)}")
        elif got_args != want_args:
            problems.append(f"{name}: header kinds {want_args}, table {got_args}")
        if _ckind(restype) != want_ret:
            problems.append(f"{name}: header returns {want_ret}, table {_ckind(restype)}")
    assert not problems, "\n".join(problems)


@needs_wheel
def test_header_check_catches_a_wrong_signature():
    protos = _parse(_headers())
    _, args = protos["cudnnConvolutionForward"]
    assert len(args) == 13 and args[7] == "int" and args[9] == "size_t"
    assert protos["cudnnSetActivationDescriptor"][1][3] == "double"


def _out_dim(*descs):
    dims = [ctypes.c_int() for _ in range(4)]
    fn = (C.api().cudnnGetConvolution2dForwardOutputDim if len(descs) == 3
          else C.api().cudnnGetPooling2dForwardOutputDim)
    fn(*descs, *(ctypes.byref(d) for d in dims))
    return tuple(d.value for d in dims)


@needs_wheel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_output_dims_match_the_cpu_formula(dtype):
    from dnnpy.tensor_tools.conv import _conv_out_size

    rng = np.random.default_rng(5)
    for _ in range(60):
        n, c, k = (int(v) for v in rng.integers(1, 6, 3))
        r, s = (int(v) for v in rng.integers(1, 7, 2))
        py, px = int(rng.integers(0, r)), int(rng.integers(0, s))
        sy, sx = (int(v) for v in rng.integers(1, 5, 2))
        h, w = int(rng.integers(max(1, r - 2 * py), 20)), int(rng.integers(max(1, s - 2 * px), 20))
        got = _out_dim(H.conv_desc(py, px, sy, sx, dtype, C.CUDNN_FMA_MATH),
                       H.tensor_desc((n, c, h, w), dtype), H.filter_desc((k, c, r, s), dtype))
        want = (n, k, _conv_out_size(h, r, sy, py), _conv_out_size(w, s, sx, px))
        assert got == want, (n, c, h, w, k, r, s, sy, sx, py, px)
        # the transposed convolution: cont_ maps (n, k, Ho, Wo) to an (n, c, H, W) whose
        # convolution gives back (Ho, Wo); cuDNN's backward-data runs on exactly that pair
        ho, wo = want[2:]
        th, tw = (ho - 1) * sy + r - 2 * py, (wo - 1) * sx + s - 2 * px
        if th > 0 and tw > 0:
            back = _out_dim(H.conv_desc(py, px, sy, sx, dtype, C.CUDNN_FMA_MATH),
                            H.tensor_desc((n, c, th, tw), dtype), H.filter_desc((k, c, r, s), dtype))
            assert back == (n, k, ho, wo)


@needs_wheel
def test_pooling_output_dims_match_the_cpu_formula():
    import dnnpy.tensor_tools as tt
    from dnnpy.tensor import resizable_tensor

    rng = np.random.default_rng(6)
    for _ in range(60):
        wh, ww = (int(v) for v in rng.integers(1, 6, 2))
        py, px = int(rng.integers(0, wh)), int(rng.integers(0, ww))
        sy, sx = (int(v) for v in rng.integers(1, 4, 2))
        h, w = int(rng.integers(max(1, wh - 2 * py), 15)), int(rng.integers(max(1, ww - 2 * px), 15))
        src = resizable_tensor(2, 3, h, w)
        p = tt.pooling()
        p.setup_avg_pooling(wh, ww, sy, sx, py, px)
        for mode in (C.CUDNN_POOLING_MAX, C.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING):
            got = _out_dim(H.pooling_desc(mode, wh, ww, py, px, sy, sx),
                           H.tensor_desc(src.shape, np.float32))
            assert got == p.output_shape(src), (h, w, wh, ww, sy, sx, py, px)
    # a whole-input window (dlib's nr = nc = 0) gives one output pixel
    assert _out_dim(H.pooling_desc(C.CUDNN_POOLING_MAX, 7, 9, 0, 0, 1, 1),
                    H.tensor_desc((2, 3, 7, 9), np.float32)) == (2, 3, 1, 1)


@needs_wheel
def test_descriptor_cache_reuses_and_evicts():
    cache = H._DescriptorCache(capacity=2)

    def make(v):
        return lambda: H._new("cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor",
                              "cudnnSetTensor4dDescriptor", C.CUDNN_TENSOR_NCHW,
                              C.CUDNN_DATA_FLOAT, 1, v, 1, 1)
    a = cache.get("a", make(1), "cudnnDestroyTensorDescriptor")
    assert cache.get("a", make(1), "cudnnDestroyTensorDescriptor") == a
    cache.get("b", make(2), "cudnnDestroyTensorDescriptor")
    cache.get("c", make(3), "cudnnDestroyTensorDescriptor")
    assert list(cache.items) == ["b", "c"]
    with pytest.raises(C.CudnnError, match="cudnnSetTensor4dDescriptor failed: 2000"):
        H._new("cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor",
               "cudnnSetTensor4dDescriptor", C.CUDNN_TENSOR_NCHW, C.CUDNN_DATA_FLOAT, 0, -1, 1, 1)


@needs_wheel
def test_create_handle_without_a_gpu_is_a_clean_error():
    try:
        import cupy
        if cupy.cuda.is_available():
            pytest.skip("a GPU is present")
    except ImportError:
        pass
    with pytest.raises(C.CudnnError) as err:
        H.create_handle()
    e = err.value
    assert e.function == "cudnnCreate" and e.status != 0
    assert "cannot create a cuDNN handle" in str(e) and e.name.startswith("CUDNN_STATUS_")
