"""Backend selection, the CUDA twin's completeness, and the core ops' CUDA twins.

Runs without a GPU: ``import dnnpy`` never imports CuPy; ``use_cuda()`` is False (with one
warning naming the reason) where CuPy is installed but unusable; ``DNNPY_DISABLE_CUDA``;
``force_cpu``; ``backend_info()``; every name of ``tensor_tools.cpu.__all__`` exists in the
CUDA twin with an identical signature (needs CuPy installed, no GPU); the element-wise
kernel bodies of ``cuda/ops.py``, ``solver.py`` and ``resize.py`` compile as C++ (g++
syntax check with a small shim, so a typo does not wait for a GPU session).

``@pytest.mark.cuda`` (skipped without a usable CUDA backend): each core op CPU vs GPU on
random shapes, both ``add`` modes, assign ops pre-filled with inf, strided resize, float32
and float64, and one run on a non-blocking stream. Tolerance: ``|gpu - cpu| <= tol *
max(1, max|cpu|)`` with tol = 1e-5 in float32 (FMA contraction and other summation orders)
and 1e-12 in float64; the bilinear resize uses 2e-5 (dlib's GPU kernel computes positions
directly in float, its CPU code accumulates them: see ``cuda/resize.py``).
"""

import importlib
import os
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.tensor_tools import backend, cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import importlib.util

HAVE_CUPY = importlib.util.find_spec("cupy") is not None

needs_cupy = pytest.mark.skipif(not HAVE_CUPY, reason="CuPy is not installed")


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full.pop("DNNPY_DISABLE_CUDA", None)
    full.update(env)
    r = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


# ----------------------------------------------------------------------------------------
# selection (no GPU needed)

def test_import_dnnpy_does_not_import_cupy():
    out = _run("import sys, dnnpy; print('cupy' in sys.modules, 'dnnpy.tensor_tools.cuda' in sys.modules)")
    assert out.split() == ["False", "False"]


def test_disabled_by_env_never_imports_cupy_nor_warns():
    code = ("import sys, warnings\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import dnnpy, numpy as np\n"
            "    t = dnnpy.resizable_tensor(np.ones((2, 3)))\n"
            "    dnnpy.tensor_tools.relu(t, t)\n"
            "    print(dnnpy.use_cuda(), 'cupy' in sys.modules, len(w))\n")
    assert _run(code, DNNPY_DISABLE_CUDA="1").split() == ["False", "False", "0"]


@pytest.mark.parametrize("value,disables", [("", False), ("0", False), ("false", False), ("FALSE", False),
                                            (" 0 ", False), ("1", True), ("true", True), ("yes", True)])
def test_env_values(monkeypatch, value, disables):
    monkeypatch.setenv("DNNPY_DISABLE_CUDA", value)
    assert backend._env_disables_cuda() is disables


def test_env_unset(monkeypatch):
    monkeypatch.delenv("DNNPY_DISABLE_CUDA", raising=False)
    assert backend._env_disables_cuda() is False


@needs_cupy
def test_unusable_cuda_warns_once_with_the_reason():
    import cupy
    if cupy.cuda.is_available():
        pytest.skip("a CUDA device is usable here")
    code = ("import warnings\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import dnnpy\n"
            "    a = dnnpy.use_cuda(); b = dnnpy.use_cuda(); dnnpy.backend_info(print_report=False)\n"
            "print(a, b, len(w))\n"
            "print(w[0].category.__name__)\n"
            "print(w[0].message)\n")
    lines = _run(code).splitlines()
    assert lines[0].split() == ["False", "False", "1"]
    assert lines[1] == "RuntimeWarning"
    assert lines[2].startswith("dnnpy: CUDA is not used: CuPy ") and "is installed but" in lines[2]
    assert re.search(r"driver|device|cuDNN", lines[2]) and "DNNPY_DISABLE_CUDA=1" in lines[2]


def test_a_cudnn_without_a_bound_function_means_the_cpu(monkeypatch):
    """The whole cuDNN table is bound when the backend is chosen: a library that lacks a
    function gives a reason (the one warning, the CPU), not an error at the first conv."""
    import types

    fake_cupy = types.SimpleNamespace(__version__="0", cuda=types.SimpleNamespace(is_available=lambda: True))
    twin = types.ModuleType("dnnpy.tensor_tools.cuda")
    loader = types.ModuleType("dnnpy.tensor_tools.cuda._loader")
    loader.cudnn_info = lambda: {"error": None, "version_string": "9.99.0"}
    bindings = types.ModuleType("dnnpy.tensor_tools.cuda._cudnn")

    def api():
        raise AttributeError("/x/libcudnn.so.9: undefined symbol: cudnnConvolutionForward")

    bindings.api = api
    for name, module in (("cupy", fake_cupy), ("dnnpy.tensor_tools.cuda", twin),
                         ("dnnpy.tensor_tools.cuda._loader", loader),
                         ("dnnpy.tensor_tools.cuda._cudnn", bindings)):
        monkeypatch.setitem(sys.modules, name, module)
    module, reason = backend._cuda_twin()
    assert module is None
    assert reason == ("cuDNN 9.99.0 lacks a function dnnpy calls (AttributeError: /x/libcudnn.so.9: "
                      "undefined symbol: cudnnConvolutionForward)")


@pytest.mark.skipif(not os.environ.get("DNNPY_CI_GPU_FREE_CHECKS"),
                    reason="set by .ci/run, which installs torch, CuPy, cuDNN 9 and NVRTC")
def test_ci_has_what_the_gpu_free_checks_need():
    """In CI the checks that need CuPy, cuDNN, NVRTC or torch but no GPU must run: a broken
    install would otherwise turn them into skips that nobody reads."""
    import cupy  # noqa: F401
    import torch  # noqa: F401

    from dnnpy.tensor_tools.cuda._loader import load_cudnn
    from test_cuda_elementwise import _nvrtc

    load_cudnn()
    assert _nvrtc() is not None, "libnvrtc is not loadable"
    assert shutil.which("g++"), "g++ compiles the kernel bodies"


def test_force_cpu_nests_and_is_per_thread():
    before = tt.use_cuda()
    with dnnpy.force_cpu():
        assert not tt.use_cuda() and tt.backend_name() == "cpu"
        with dnnpy.force_cpu():
            assert not tt.use_cuda()
        assert not tt.use_cuda()
        seen = []
        th = threading.Thread(target=lambda: seen.append(tt.use_cuda()))
        th.start()
        th.join()
        assert seen == [before]          # another thread is not forced
    assert tt.use_cuda() == before


def test_backend_info_on_this_machine(capsys):
    info = dnnpy.backend_info()
    text = capsys.readouterr().out
    assert info["backend"] == ("cuda" if tt.use_cuda() else "cpu")
    assert text.startswith(f"dnnpy backend: {info['backend']}")
    assert info["numpy"] == np.__version__
    if HAVE_CUPY and not info["disabled_by_env"]:
        import cupy
        assert info["cupy"] == cupy.__version__ and f"CuPy: {cupy.__version__}" in text
        assert "cudnn_path" in info and "cuDNN" in text
    if info["backend"] == "cpu" and HAVE_CUPY and not info["disabled_by_env"]:
        assert info["reason"] and info["reason"] in text
    if info["backend"] == "cuda":
        assert info["device_name"] and info["memory_total_bytes"] > 0 and info["cudnn_version"].startswith("9.")
    assert dnnpy.backend_info(print_report=False) == info or info["backend"] == "cuda"  # memory moves
    assert capsys.readouterr().out == ""


def test_backend_info_disabled_by_env():
    out = _run("import dnnpy; i = dnnpy.backend_info(); print(i['backend'], i['disabled_by_env'], 'cupy' in i)",
               DNNPY_DISABLE_CUDA="1")
    assert "CUDA disabled by DNNPY_DISABLE_CUDA" in out and out.splitlines()[-1] == "cpu True False"


# ----------------------------------------------------------------------------------------
# the twin is complete (needs CuPy, not a GPU)

@needs_cupy
def test_cuda_package_imports_and_joins_the_twin_ops():
    # names and signatures are compared without CuPy in test_twins.py; this imports them
    from dnnpy.tensor_tools import cuda
    assert cuda.NAME == "cuda" and cpu.NAME == "cpu"
    assert cuda.__all__ == cpu.__all__
    assert all(callable(getattr(cuda, n)) for n in cuda.__all__)


# The g++ shim: raw arrays become a pointer wrapper, ``i`` the thread's index, atomicAdd a
# plain add; CUDA's float overloads of floor/sqrt are std's.
_SHIM = """
#include <cmath>
using std::floor; using std::sqrt;
template <typename T> struct Raw { T* p; T& operator[](long long j) const { return p[j]; } };
template <typename T> T atomicAdd(T* a, T v) { T old = *a; *a += v; return old; }
"""


def _kernel_source(k, index):
    params = []
    for p in k.in_params + k.out_params:
        const = p.is_const and not p.raw
        ctype = f"Raw<{p.ctype}>" if p.raw else p.ctype
        ref = "&" if (not p.raw and not p.is_const) else ""
        params.append(f"{'const ' if const else ''}{ctype}{ref} {p.name}")
    fn = f"kernel{index}"
    return (f"template <typename T> void {fn}(long long i, {', '.join(params)}) {{\n"
            f"{k.preamble}\n{k.operation};\n}}\n"   # CuPy appends the ";" too
            f"template void {fn}<float>(long long, {', '.join(_instantiate(params, 'float'))});\n"
            f"template void {fn}<double>(long long, {', '.join(_instantiate(params, 'double'))});\n")


def _instantiate(params, t):
    return [re.sub(r"\bT\b", t, p.rsplit(" ", 1)[0]) for p in params]


@needs_cupy
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_kernel_bodies_compile_as_cpp(tmp_path):
    import cupy
    from dnnpy.tensor_tools.cuda import ops, resize, solver
    kernels = [v for m in (ops, solver, resize) for v in vars(m).values()
               if isinstance(v, cupy.ElementwiseKernel)]
    assert len(kernels) >= 12
    src = _SHIM + "".join(_kernel_source(k, i) for i, k in enumerate(kernels))
    path = tmp_path / "kernels.cpp"
    path.write_text(src)
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Werror=return-type", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n" + src


# ----------------------------------------------------------------------------------------
# GPU: each core op, CPU vs CUDA

cuda_test = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)

TOL = {np.float32: 1e-5, np.float64: 1e-12}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])


def _twin(call, arrays, outs, dtype=np.float32, tol=None, prefill=None):
    """Run ``call(*tensors)`` on the CPU and on the GPU, each from fresh tensors holding
    ``arrays``; compare the tensors at indexes ``outs`` (and the return value). ``prefill``
    maps an index to a value its tensor is filled with first (inf: an assign must not
    read it)."""
    tol = TOL[dtype] if tol is None else tol
    results = []
    for on_cpu in (True, False):
        with default_dtype(dtype):
            ts = [resizable_tensor(np.array(a, dtype=dtype)) for a in arrays]
        for i, v in (prefill or {}).items():
            ts[i].fill(v)
        if not on_cpu:
            for t in ts:
                t.device()          # start device-resident, as on a training GPU
        if on_cpu:
            with dnnpy.force_cpu():
                ret = call(*ts)
        else:
            ret = call(*ts)
        results.append((ret, [np.array(ts[i].host_read(), copy=True) for i in outs]))
    (rc, c), (rg, g) = results
    if rc is not None:
        assert abs(rg - rc) <= tol * max(1.0, abs(rc)) * 10, (rc, rg)
    for i, (a, b) in enumerate(zip(c, g)):
        assert b.dtype == dtype and np.all(np.isfinite(b) == np.isfinite(a)), f"output {outs[i]}"
        finite = np.isfinite(a)          # planes an op leaves alone keep their inf prefill
        scale = max(1.0, float(np.max(np.abs(a[finite]), initial=0)))
        err = float(np.max(np.abs(b[finite] - a[finite]), initial=0))
        assert err <= tol * scale, f"output {outs[i]}: max|gpu-cpu| = {err} > {tol} * {scale}"


def _r(rng, *shape):
    return rng.standard_normal(shape)


@cuda_test
@pytest.mark.parametrize("src_shape", [(3, 4, 5, 6), (1, 4, 1, 1), (1, 4, 5, 6), (3, 1, 1, 1), (1, 1, 1, 1)])
@pytest.mark.parametrize("beta,alpha", [(0, 1), (0, -2.5), (1, 1), (0.5, 2)])
@DTYPES
def test_add_scaled(rng, src_shape, beta, alpha, dtype):
    _twin(lambda d, s: tt.add(beta, d, alpha, s), [_r(rng, 3, 4, 5, 6), _r(rng, *src_shape)], [0],
          dtype, prefill={0: np.inf} if beta == 0 else None)


@cuda_test
@pytest.mark.parametrize("shapes", [
    ((2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (1, 3, 4, 5), (2, 2, 6, 3)),
    ((1, 2, 3, 3), (2, 3, 4, 5), (3, 1, 2, 7)),
    ((4, 5, 1, 1), (4, 3, 1, 1), (2, 5, 1, 1)),
])
@DTYPES
def test_add_zero_padded(rng, shapes, dtype):
    arrays = [_r(rng, *s) for s in shapes]
    _twin(lambda d, a, b: tt.add(d, a, b), arrays, [0], dtype, prefill={0: np.inf})
    if shapes[0] == shapes[1]:   # dest is src1
        _twin(lambda a, b: tt.add(a, a, b), arrays[1:], [0], dtype)


@cuda_test
@pytest.mark.parametrize("nsrc,constant", [(1, False), (1, True), (2, False), (2, True), (3, False), (3, True)])
@DTYPES
def test_affine_transform(rng, nsrc, constant, dtype):
    coeffs = [1.5, -0.25, 3.0][:nsrc] + ([0.75] if constant else [])
    arrays = [_r(rng, 2, 3, 4, 5) for _ in range(nsrc + 1)]
    _twin(lambda d, *s: tt.affine_transform(d, *s, *coeffs), arrays, [0], dtype, prefill={0: np.inf})
    _twin(lambda *s: tt.affine_transform(s[0], *s, *coeffs), arrays[1:], [0], dtype)   # in place


@cuda_test
@pytest.mark.parametrize("trans_lhs,trans_rhs", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("beta,alpha", [(0, 1), (0, 2), (1, 1), (0.5, -1)])
@DTYPES
def test_gemm_channel_wise(rng, trans_lhs, trans_rhs, beta, alpha, dtype):
    m, k, n = 7, 12, 5
    lhs = _r(rng, k, m, 1, 1) if trans_lhs else _r(rng, m, 3, 2, 2)
    rhs = _r(rng, n, 4, 3, 1) if trans_rhs else _r(rng, k, n, 1, 1)
    _twin(lambda d, a, b: tt.gemm(beta, d, alpha, a, trans_lhs, b, trans_rhs),
          [_r(rng, m, n, 1, 1), lhs, rhs], [0], dtype, prefill={0: np.inf} if beta == 0 else None)


@cuda_test
@pytest.mark.parametrize("case", [
    ((2, 3, 4, 5), False, (2, 3, 5, 6), False, (2, 3, 4, 6)),
    ((2, 3, 5, 4), True, (2, 3, 6, 5), True, (2, 3, 4, 6)),
    ((1, 1, 4, 5), False, (2, 3, 5, 6), False, (2, 3, 4, 6)),     # a matrix broadcast over planes
    ((4, 5, 1, 1), False, (2, 3, 5, 6), False, (2, 3, 4, 6)),     # an n x k matrix tensor
    ((3, 3, 4, 5), False, (2, 4, 5, 6), False, (2, 3, 4, 6)),     # only min(n) x min(k) planes
    ((4, 5, 1, 1), False, (5, 6, 1, 1), False, (4, 6, 1, 1)),     # all matrices: one product
])
@pytest.mark.parametrize("beta,alpha", [(0, 1), (0, 0.5), (1, 2)])
@DTYPES
def test_gemm_plane_wise(rng, case, beta, alpha, dtype):
    ls, tl, rs, tr, ds = case
    _twin(lambda d, a, b: tt.gemm(beta, d, alpha, a, tl, b, tr, tt.PLANE_WISE),
          [_r(rng, *ds), _r(rng, *ls), _r(rng, *rs)], [0], dtype, prefill={0: np.inf} if beta == 0 else None)


@cuda_test
@DTYPES
def test_bias_gradients_and_dot(rng, dtype):
    gi = _r(rng, 5, 4, 3, 6)
    _twin(tt.assign_bias_gradient, [_r(rng, 1, 4, 3, 6), gi], [0], dtype, prefill={0: np.inf})
    _twin(tt.assign_conv_bias_gradient, [_r(rng, 1, 4, 1, 1), gi], [0], dtype, prefill={0: np.inf})
    _twin(tt.dot, [_r(rng, 300, 7, 1, 1), _r(rng, 21, 100, 1, 1)], [], dtype)


@cuda_test
@DTYPES
def test_relu_and_gradient(rng, dtype):
    x = _r(rng, 3, 4, 5, 6)
    _twin(tt.relu, [_r(rng, 3, 4, 5, 6), x], [0], dtype, prefill={0: np.inf})
    _twin(lambda a: tt.relu(a, a), [x], [0], dtype)
    y = np.maximum(x, 0)
    _twin(lambda g, d, gi: tt.relu_gradient(g, d, gi), [_r(rng, 3, 4, 5, 6), y, _r(rng, 3, 4, 5, 6)], [0], dtype)
    _twin(lambda d, gi: tt.relu_gradient(gi, d, gi), [y, _r(rng, 3, 4, 5, 6)], [1], dtype)
    _twin(lambda g, d, gi: tt.relu_gradient(g, d, gi, add_to=False),
          [_r(rng, 3, 4, 5, 6), y, _r(rng, 3, 4, 5, 6)], [0], dtype, prefill={0: np.nan})


@cuda_test
@pytest.mark.parametrize("begin,end", [(0, 120), (7, 93), (50, 50)])
@DTYPES
def test_solver_ops(rng, begin, end, dtype):
    a = [_r(rng, 2, 3, 4, 5) for _ in range(4)]
    _twin(lambda d, s1, s2, s3: tt.affine_transform_range(begin, end, d, s1, s2, s3, 0.9, -0.01, 1.5),
          a, [0], dtype)
    _twin(lambda d, s2, s3: tt.affine_transform_range(begin, end, d, d, s2, s3, 0.9, -0.01, 1.5),
          a[:3], [0], dtype)
    m, v = _r(rng, 2, 3, 4, 5), np.abs(_r(rng, 2, 3, 4, 5))
    _twin(lambda s, m, v, p, g: tt.compute_adam_update(begin, end, s, m, v, 3, 0.001, 0.0005, 0.9, 0.999, p, g),
          [_r(rng, 2, 3, 4, 5), m, v, _r(rng, 2, 3, 4, 5), _r(rng, 2, 3, 4, 5)], [0, 1, 2], dtype)


@cuda_test
@pytest.mark.parametrize("src,dst", [((2, 3, 7, 9), (2, 3, 13, 5)), ((1, 2, 1, 6), (1, 2, 4, 11)),
                                     ((2, 1, 30, 40), (2, 1, 17, 23)), ((1, 1, 5, 5), (1, 1, 5, 5))])
@DTYPES
def test_resize_bilinear(rng, src, dst, dtype):
    tol = 2e-5 if dtype is np.float32 else 1e-12
    _twin(lambda d, s: tt.resize_bilinear(d, s), [_r(rng, *dst), _r(rng, *src)], [0], dtype, tol,
          prefill={0: np.inf})
    _twin(lambda g, gi: tt.resize_bilinear_gradient(g, gi), [_r(rng, *src), _r(rng, *dst)], [0], dtype, tol)


@cuda_test
@DTYPES
def test_resize_bilinear_strided(rng, dtype):
    """Planes that are windows of larger images (dlib's strided overload): 4x5 planes in
    6x8 images for the source, 3x7 planes in 5x9 images for dest; what lies outside the
    windows must be left alone."""
    tol = 2e-5 if dtype is np.float32 else 1e-12
    src_img, dst_img = _r(rng, 2, 3, 6, 8), _r(rng, 2, 3, 5, 9)
    src_view = dnnpy.alias_tensor(2, 3, 4, 5)
    dst_view = dnnpy.alias_tensor(2, 3, 3, 7)

    def fwd(d, s):
        tt.resize_bilinear(dst_view(d, 10), src_view(s, 9), 9, 45, 8, 48)

    def bwd(g, gi):
        tt.resize_bilinear_gradient(src_view(g, 9), dst_view(gi, 10), 8, 48, 9, 45)

    _twin(fwd, [dst_img, src_img], [0, 1], dtype, tol)
    _twin(bwd, [src_img, dst_img], [0, 1], dtype, tol)

@cuda_test

def test_ops_on_a_non_blocking_stream(rng):
    """Everything runs on CuPy's current stream: the same results inside a non-blocking
    stream as on the default one."""
    import cupy
    x, b = _r(rng, 4, 3, 5, 5), _r(rng, 1, 3, 1, 1)
    out = []
    for stream in (None, cupy.cuda.Stream(non_blocking=True)):
        d, s, bias = resizable_tensor(x.copy()), resizable_tensor(x.copy()), resizable_tensor(b.copy())
        w = resizable_tensor(_r(np.random.default_rng(5), 75, 6, 1, 1))
        y = resizable_tensor(4, 6)
        with (stream if stream is not None else cupy.cuda.Stream.null):
            tt.add(1, d, 1, bias)
            tt.relu(d, d)
            tt.gemm(0, y, 1, d, False, w, False)
            tt.resize_bilinear(resizable_tensor(4, 3, 9, 9), s)
            result = np.array(y.host_read(), copy=True)
        out.append(result)
    np.testing.assert_array_equal(out[0], out[1])



def test_device_out_of_memory_names_the_bytes(monkeypatch):
    """A device copy that does not fit fails with MemoryError naming the bytes asked for
    (CuPy's allocator is replaced by one that always fails, so this runs without a GPU)."""
    cupy = pytest.importorskip("cupy")
    tensor_module = importlib.import_module("dnnpy.tensor")   # the module, not the class

    freed = []

    def fail(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1024, 0)

    monkeypatch.setattr(cupy, "empty", fail)
    monkeypatch.setattr(cupy, "get_default_memory_pool",
                        lambda: type("P", (), {"free_all_blocks": lambda self: freed.append(1)})())
    with pytest.raises(MemoryError, match=r"8 float32 values = 32 bytes"):
        tensor_module._device_empty(8, np.float32)
    assert freed == [1]
