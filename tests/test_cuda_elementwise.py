"""CUDA twins of the activation, softmax, row, dropout, normalisation, merge, embedding and
ACT ops (``tensor_tools/cuda/``, the modules of ``MODULES``) against the CPU twin.

No GPU needed (names and signatures: tests/test_twins.py):
* every kernel's CUDA code compiles with NVRTC, for float and double, when libnvrtc can be
  loaded (a stand-in harness declares the parameters as CuPy does: a syntax or type error
  in a kernel string fails here instead of on the GPU).

GPU (``@pytest.mark.cuda``, skipped without a usable CUDA backend): every op through the
dispatcher on the GPU and, with ``force_cpu()``, on the CPU, from identical tensors, on
random shapes, in assign and add modes, in place and through alias views at an offset into
a larger storage. Every tensor argument is compared afterwards (outputs, and inputs that
must be unchanged). Assign-mode destinations start as NaN/inf, so an op that reads what it
should overwrite fails.

Tolerances: ``|gpu - cpu| <= rtol*|cpu| + rtol*max|cpu|`` with rtol 1e-5 (float32) and 1e-12
(float64). The max-scaled term is there because the transcendental functions (exp, tanh,
erf) differ in their last bits between CUDA and numpy and some formulas cancel (mish near
-5, gelu far left, 1 - d*d): the difference is then small against the tensor's scale, not
against the tiny element. Looser, each with its reason at the call: the normalisation
gradients and sums over many terms in float32 (the CPU twin sums in float32, the GPU in
double: the difference is the CPU's own rounding, ~log2(n)*sqrt(n)*6e-8 relative).
"""

import ctypes
import glob
import os

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor

# the modules whose kernels are built with --fmad=false (_kernels.py's factories)
MODULES = ("_kernels", "activations", "softmax_family", "rows", "dropout", "norm", "merge",
           "embedding_table", "adaptive_computation_time")
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
RTOL = {np.float32: 1e-5, np.float64: 1e-12}


cuda_test = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)


# ----------------------------------------------------------------------------------------
# no GPU needed: every kernel compiles (NVRTC, when libnvrtc is loadable)

def _nvrtc():
    """ctypes handle on libnvrtc: $DNNPY_NVRTC_LIBRARY, the nvidia-cuda-nvrtc wheel, or the
    system library; None when there is none."""
    candidates = [os.environ.get("DNNPY_NVRTC_LIBRARY", "")]
    try:
        import nvidia
        for base in nvidia.__path__:
            candidates += sorted(glob.glob(os.path.join(base, "cu*", "lib", "libnvrtc.so*")))
            candidates += sorted(glob.glob(os.path.join(base, "cuda_nvrtc", "lib", "libnvrtc.so*")))
    except ImportError:
        pass
    candidates += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for path in candidates:
        if not path or "builtins" in path or ".alt." in path:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _compile(lib, source, options):
    """Compile with NVRTC; returns (ok, log). compute_60 or later: atomicAdd on double (CuPy
    compiles for the device's own architecture)."""
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                       ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_void_p]
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    status = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return status == 0, log.value.decode(errors="replace")


_CTYPES = {"float64": "double", "float32": "float", "int64": "long long", "int32": "int",
           "int8": "signed char", "uint64": "unsigned long long", "bool": "bool"}

_HARNESS = """
template <typename X> struct Raw {
    X* p;
    __device__ X& operator[](long long i) const { return p[i]; }
};
typedef %s T;
"""


def _ctype(p, T):
    return T if p.ctype == "T" else _CTYPES[str(np.dtype(p.dtype))]


def _params(in_params, out_params, T):
    """Kernel parameters and per-element declarations, as CuPy declares them: element
    references for arrays and scalars, an indexable object for ``raw`` ones."""
    sig, decl = [], []
    for p, is_out in [(p, False) for p in in_params] + [(p, True) for p in out_params]:
        c = _ctype(p, T)
        if p.raw:
            sig.append(f"Raw<{c}> {p.name}")
        else:
            sig.append(f"{'' if is_out else 'const '}{c}* _{p.name}")
            decl.append(f"{c}& {p.name} = (({c}*)_{p.name})[i];" if is_out
                        else f"const {c} {p.name} = _{p.name}[i];")
    return ", ".join(sig), " ".join(decl)


def _kernel_source(kernel, T):
    """A compilable stand-in for the code CuPy generates. Reductions follow CuPy's
    template (``_reduction.pyx``): ``REDUCE(a, b)`` and ``POST_MAP(a)`` are macros, so
    ``a``/``b`` in the reduce and post-map expressions never clash with input names."""
    import cupy

    macros = ""
    if isinstance(kernel, cupy.ElementwiseKernel):
        sig, decl = _params(kernel.in_params, kernel.out_params, T)
        body = kernel.operation + ";"  # CuPy's template: ``${operation};``
    else:
        sig, decl = _params(kernel.in_params, kernel.out_params, T)
        macros = (f"#define REDUCE(a, b) ({kernel.reduce_expr})\n"
                  f"#define POST_MAP(a) ({kernel.post_map_expr})\n"
                  f"typedef {kernel.reduce_type} _type_reduce;\n")
        body = (f"_type_reduce _s = _type_reduce({kernel.identity});"
                f" _type_reduce _a = static_cast<_type_reduce>({kernel.map_expr});"
                f" _s = REDUCE(_s, _a); _s = REDUCE(_s, _s); POST_MAP(_s);")
    return (_HARNESS % T + kernel.preamble + macros +
            f'\nextern "C" __global__ void k({sig}, long long n) {{\n'
            f"  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;"
            f" i += blockDim.x * gridDim.x) {{ {decl}\n {body}\n }}\n}}\n")


def _all_kernels(modules=MODULES):
    import importlib

    import cupy

    found, seen = [], set()
    for module in modules:
        mod = importlib.import_module(f"dnnpy.tensor_tools.cuda.{module}")
        for name, obj in sorted(vars(mod).items()):
            if id(obj) in seen:          # a shared kernel imported from _kernels.py
                continue
            seen.add(id(obj))
            if isinstance(obj, (cupy.ElementwiseKernel, cupy.ReductionKernel)):
                found.append((f"{module}.{name}", obj))
            elif hasattr(obj, "assign") and hasattr(obj, "add"):       # a _grad_kernel pair
                found += [(f"{module}.{name}.assign", obj.assign), (f"{module}.{name}.add", obj.add)]
    return found


def test_cuda_kernels_compile_with_nvrtc():
    pytest.importorskip("cupy")
    lib = _nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (set DNNPY_NVRTC_LIBRARY or install nvidia-cuda-nvrtc)")
    kernels = _all_kernels()
    assert len(kernels) > 40
    failures = []
    for name, kernel in kernels:
        for T in ("float", "double"):
            ok, log = _compile(lib, _kernel_source(kernel, T), ["--fmad=false", "-std=c++17", "--gpu-architecture=compute_60"])
            if not ok:
                failures.append(f"{name} [{T}]:\n{log}")
    assert not failures, "\n".join(failures)


# The kernels of the other CUDA modules (core ops, solver, resize; spatial has none: pure
# CuPy copies), compiled as CuPy does by default (FMA contraction on: only the modules of
# MODULES ask for --fmad=false).
CORE_MODULES = ("ops", "solver", "resize", "spatial")


def test_cuda_core_kernels_compile_with_nvrtc():
    pytest.importorskip("cupy")
    lib = _nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (set DNNPY_NVRTC_LIBRARY or install nvidia-cuda-nvrtc)")
    kernels = _all_kernels(CORE_MODULES)
    names = {name for name, _ in kernels}
    for expected in ("ops._add_zero_padded_kernel", "ops._dot64", "solver._adam",
                     "resize._resize_gradient_kernel"):
        assert expected in names
    failures = []
    for name, kernel in kernels:
        for T in ("float", "double"):
            ok, log = _compile(lib, _kernel_source(kernel, T),
                               ["-std=c++17", "--gpu-architecture=compute_60"])
            if not ok:
                failures.append(f"{name} [{T}]:\n{log}")
    assert not failures, "\n".join(failures)


# ----------------------------------------------------------------------------------------
# GPU: the harness

class _Maker:
    """Builds the same tensors (values and alias layout) afresh for each backend."""

    def __init__(self, dtype, seed):
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.tensors = []

    def _keep(self, t):
        self.tensors.append(t)
        return t

    def t(self, shape, lo=-3.0, hi=3.0, alias=False, values=None):
        """A tensor of uniform(lo, hi) numbers (or ``values``); with ``alias``, a view at an
        offset into a larger storage whose other elements hold -7."""
        a = self.rng.uniform(lo, hi, shape) if values is None else np.asarray(values, np.float64)
        if not alias:
            return self._keep(resizable_tensor(a.reshape(shape)))
        offset = int(self.rng.integers(1, 7))
        size = int(np.prod(shape))
        big = resizable_tensor(np.full(size + offset + 3, -7.0))
        view = alias_tensor(*shape)(big, offset)
        view.assign(a.reshape(shape))
        self._keep(big)
        return view

    def poisoned(self, shape, alias=False):
        """An assign-mode destination: NaN and inf everywhere."""
        vals = np.where(self.rng.random(shape) < 0.5, np.nan, np.inf)
        return self.t(shape, values=vals, alias=alias)

    def empty(self):
        return self._keep(resizable_tensor())

    def shape(self, n=(1, 4), k=(1, 5), nr=(1, 6), nc=(1, 7)):
        return tuple(int(self.rng.integers(lo, hi + 1)) for lo, hi in (n, k, nr, nc))


def _run(op, build, dtype, seed):
    """``build(maker) -> args``; runs ``op(*args)`` on each backend from identical tensors
    and returns the host copies of every tensor made, CPU and GPU."""
    results = []
    for cpu in (True, False):
        with default_dtype(dtype):
            m = _Maker(dtype, seed)
            args = build(m)
            if cpu:
                with tt.force_cpu():
                    op(*args)
            else:
                op(*args)
            results.append([np.array(t.host_read(), dtype=np.float64) for t in m.tensors])
    return results


def _check(op, build, dtype, seed=0, rtol=None, why=""):
    rtol = RTOL[dtype] if rtol is None else rtol
    cpu, gpu = _run(op, build, dtype, seed)
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, f"tensor {i}: {c.shape} vs {g.shape}"
        scale = np.nanmax(np.abs(np.where(np.isfinite(c), c, 0))) if c.size else 0.0
        np.testing.assert_allclose(g, c, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"tensor {i} after {getattr(op, '__name__', op)} {why}")


SEEDS = pytest.mark.parametrize("seed", [0, 1, 2])
LAYOUT = pytest.mark.parametrize("layout", ["separate", "inplace", "alias"])
GRAD_MODE = pytest.mark.parametrize("mode", ["add", "assign", "alias"])


# ----------------------------------------------------------------------------------------
# GPU: pointwise activations

_FORWARD = {
    "sigmoid": (tt.sigmoid, (), (-10, 10)),
    "mish": (tt.mish, (), (-10, 10)),
    "tanh": (tt.tanh, (), (-5, 5)),
    "gelu": (tt.gelu, (), (-6, 6)),
    "silu": (tt.silu, (), (-10, 10)),
    "leaky_relu": (tt.leaky_relu, (0.1,), (-3, 3)),
    "clipped_relu": (tt.clipped_relu, (1.5,), (-3, 3)),
    "elu": (tt.elu, (0.7,), (-3, 3)),
    "smelu": (tt.smelu, (0.8,), (-3, 3)),
}

# (op, extra args, range of the second argument: the op's output or its input)
_GRADIENT = {
    "sigmoid_gradient": (tt.sigmoid_gradient, (), (0, 1)),
    "mish_gradient": (tt.mish_gradient, (), (-10, 10)),
    "tanh_gradient": (tt.tanh_gradient, (), (-1, 1)),
    "gelu_gradient": (tt.gelu_gradient, (), (-6, 6)),
    "silu_gradient": (tt.silu_gradient, (), (-10, 10)),
    "leaky_relu_gradient": (tt.leaky_relu_gradient, (0.1,), (-1, 3)),
    "clipped_relu_gradient": (tt.clipped_relu_gradient, (1.5,), (0, 2)),
    "elu_gradient": (tt.elu_gradient, (0.7,), (-0.7, 3)),
    "smelu_gradient": (tt.smelu_gradient, (0.8,), (0, 2)),
}


@cuda_test
@DTYPES
@LAYOUT
@SEEDS
@pytest.mark.parametrize("name", sorted(_FORWARD))
def test_activation_forward(name, seed, layout, dtype):
    op, extra, (lo, hi) = _FORWARD[name]

    def build(m):
        shape = m.shape()
        src = m.t(shape, lo, hi, alias=layout == "alias")
        if layout == "inplace":
            return (src, src) + extra
        return (m.poisoned(shape, alias=layout == "alias"), src) + extra

    _check(op, build, dtype, seed)


@cuda_test
@DTYPES
@GRAD_MODE
@SEEDS
@pytest.mark.parametrize("name", sorted(_GRADIENT))
def test_activation_gradient(name, seed, mode, dtype):
    op, extra, (lo, hi) = _GRADIENT[name]

    def build(m):
        shape = m.shape()
        alias = mode == "alias"
        x = m.t(shape, lo, hi, alias=alias)
        if name in ("smelu_gradient", "clipped_relu_gradient"):
            x.host().reshape(-1)[::3] = 0         # the boundary cases (output exactly 0)
        gi = m.t(shape, alias=alias)
        grad = gi if mode == "assign" else m.t(shape, alias=alias)
        return (grad, x, gi) + extra

    _check(op, build, dtype, seed)


@cuda_test
@DTYPES
@LAYOUT
@SEEDS
def test_prelu(seed, layout, dtype):
    def build(m):
        shape = m.shape()
        src = m.t(shape, alias=layout == "alias")
        param = m.t((1, 1, 1, 1), 0.1, 0.4)
        dest = src if layout == "inplace" else m.poisoned(shape, alias=layout == "alias")
        return dest, src, param

    _check(tt.prelu, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("alias", [False, True], ids=["plain", "alias"])
def test_prelu_gradient(seed, alias, dtype):
    def build(m):
        shape = m.shape()
        src, gi, grad = (m.t(shape, alias=alias) for _ in range(3))
        param = m.t((1, 1, 1, 1), 0.1, 0.4)
        return grad, src, gi, param, m.poisoned((1, 1, 1, 1), alias=alias)

    # params_grad sums up to a few hundred products: float32 summation order (CPU pairwise
    # in float32, GPU in double) -> 1e-5 of the max is enough here (n <= 840)
    _check(tt.prelu_gradient, build, dtype, seed)


# ----------------------------------------------------------------------------------------
# GPU: softmax family

@cuda_test
@DTYPES
@LAYOUT
@SEEDS
@pytest.mark.parametrize("mode", [tt.CHANNEL_WISE, tt.PLANE_WISE], ids=["channel", "plane"])
def test_softmax(mode, seed, layout, dtype):
    def build(m):
        shape = m.shape(k=(1, 9), nc=(1, 9))
        src = m.t(shape, -8, 8, alias=layout == "alias")
        if mode == tt.PLANE_WISE:
            h = src.host()
            h[0, 0, 0, :] = -np.inf               # an all -inf row: zeros (dlib's CPU rule)
            h[-1, -1, -1, 0] = -np.inf            # one masked element
        dest = src if layout == "inplace" else m.poisoned(shape, alias=layout == "alias")
        return dest, src, mode

    _check(tt.softmax, build, dtype, seed)


def _softmax_grad_build(mode_arg, grad_mode):
    def build(m):
        shape = m.shape(k=(1, 9), nc=(1, 9))
        alias = grad_mode == "alias"
        d = m.t(shape, 0, 1, alias=alias)
        gi = m.t(shape, alias=alias)
        grad = gi if grad_mode == "assign" else m.t(shape, alias=alias)
        return (grad, d, gi) + mode_arg
    return build


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("grad_mode", ["add", "assign", "alias"])
@pytest.mark.parametrize("case", ["channel", "plane", "all"])
def test_softmax_gradients(case, grad_mode, seed, dtype):
    if case == "all":
        _check(tt.softmax_all_gradient, _softmax_grad_build((), grad_mode),
               dtype, seed)
    else:
        mode = tt.CHANNEL_WISE if case == "channel" else tt.PLANE_WISE
        _check(tt.softmax_gradient, _softmax_grad_build((mode,), grad_mode),
               dtype, seed)


@cuda_test
@DTYPES
@LAYOUT
@SEEDS
def test_softmax_all(seed, layout, dtype):
    def build(m):
        shape = m.shape()
        src = m.t(shape, -8, 8, alias=layout == "alias")
        dest = src if layout == "inplace" else m.poisoned(shape, alias=layout == "alias")
        return dest, src

    _check(tt.softmax_all, build, dtype, seed)


# ----------------------------------------------------------------------------------------
# GPU: row norms and scaling, multiply, threshold

@cuda_test
@DTYPES
@SEEDS
def test_inverse_norms(seed, dtype):
    _check(tt.inverse_norms, lambda m: (m.empty(), m.t(m.shape(), alias=True), 1e-5), dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("form", ["resize", "assign", "add"])
def test_dot_prods(form, seed, dtype):
    def build(m):
        shape = m.shape()
        lhs, rhs = m.t(shape, alias=True), m.t(shape)
        if form == "resize":
            return m.empty(), lhs, rhs
        out = m.poisoned((shape[0], 1, 1, 1)) if form == "assign" else m.t((shape[0], 1, 1, 1))
        return form == "add", out, lhs, rhs

    _check(tt.dot_prods, build, dtype, seed)


@cuda_test
@DTYPES
@LAYOUT
@SEEDS
@pytest.mark.parametrize("which", ["rows", "columns"])
def test_scale_rows_columns(which, seed, layout, dtype):
    def build(m):
        shape = m.shape()
        mat = m.t(shape, alias=layout == "alias")
        n = shape[0] if which == "rows" else int(np.prod(shape[1:]))
        v = m.t((n, 1, 1, 1), alias=layout == "alias")
        out = mat if layout == "inplace" else m.poisoned(shape, alias=layout == "alias")
        return out, mat, v

    _check(tt.scale_rows if which == "rows" else tt.scale_columns, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
@pytest.mark.parametrize("layout", ["separate", "inplace", "alias"])
def test_scale_rows2(layout, beta, seed, dtype):
    def build(m):
        shape = m.shape()
        alias = layout == "alias"
        m1, m2 = m.t(shape, alias=alias), m.t(shape, alias=alias)
        v1, v2 = m.t((shape[0], 1, 1, 1), alias=alias), m.t((shape[0], 1, 1, 1))
        if layout == "inplace":
            out = m1                        # dlib's l2normalize_ backward runs out == m1
        else:
            out = m.poisoned(shape, alias=alias) if beta == 0 else m.t(shape, alias=alias)
        return beta, out, m1, m2, v1, v2

    _check(tt.scale_rows2, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])
@pytest.mark.parametrize("samples", [(3, 3, 3), (3, 1, 3), (3, 3, 1), (1, 3, 3), (1, 1, 3),
                                     (1, 3, 1), (1, 1, 1)], ids=lambda s: "dest%d_s%d_s%d" % s)
def test_multiply(samples, add_to, seed, dtype):
    def build(m):
        _, k, nr, nc = m.shape()
        nd, n1, n2 = samples
        dest = m.t((nd, k, nr, nc), alias=True) if add_to else m.poisoned((nd, k, nr, nc), alias=True)
        return add_to, dest, m.t((n1, k, nr, nc), alias=True), m.t((n2, k, nr, nc))

    _check(tt.multiply, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
def test_threshold(seed, dtype):
    def build(m):
        data = m.t(m.shape(), alias=True)
        data.host().reshape(-1)[::4] = 0.3       # exactly at the threshold -> 0
        return data, 0.3

    _check(tt.threshold, build, dtype, seed)


@cuda_test
@DTYPES
def test_tensor_rand_on_gpu(dtype):
    """GPU streams differ from the CPU's (documented); check the distributions, the (0, 1]
    range and that a seed reproduces its stream."""
    with default_dtype(dtype):
        a, b = resizable_tensor(1000, 10, 10), resizable_tensor(1000, 10, 10)
        tt.tensor_rand(7).fill_uniform(a)
        tt.tensor_rand(7).fill_uniform(b)
        u = np.array(a.host_read())
        assert np.array_equal(u, np.array(b.host_read()))
        assert u.min() > 0 and u.max() <= 1
        assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - np.sqrt(1 / 12)) < 0.01
        view = alias_tensor(500, 10, 10)(a, 1000)
        before = np.array(a.host_read()).reshape(-1)[:1000].copy()
        tt.tensor_rand(3).fill_gaussian(view, 2.0, 3.0)
        g = np.array(view.host_read())
        assert abs(g.mean() - 2.0) < 0.06 and abs(g.std() - 3.0) < 0.05   # > 4 standard errors
        assert np.array_equal(np.array(a.host_read()).reshape(-1)[:1000], before)


# ----------------------------------------------------------------------------------------
# GPU: normalisation. Statistics accumulate in float64 on both sides (rtol as above); the
# gradients' sums are float32 on the CPU and double on the GPU, over up to ~800 terms:
# float32 uses 1e-4 (the CPU's own summation error, see the module docstring).
NORM_RTOL = {np.float32: 1e-4, np.float64: 1e-12}


def _bn_shapes(m, conv):
    shape = m.shape(n=(2, 5), k=(1, 4), nr=(1, 6), nc=(1, 6))
    return shape, ((1, shape[1], 1, 1) if conv else (1,) + shape[1:])


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
@pytest.mark.parametrize("inplace", [False, True], ids=["separate", "inplace"])
def test_batch_normalize_inference(inplace, conv, seed, dtype):
    def build(m):
        shape, p = _bn_shapes(m, conv)
        src = m.t(shape)
        dest = src if inplace else m.empty()
        return 1e-5, dest, src, m.t(p), m.t(p), m.t(p), m.t(p, 0.1, 2)

    op = tt.batch_normalize_conv_inference if conv else tt.batch_normalize_inference
    _check(op, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
@pytest.mark.parametrize("factor", [1.0, 0.3])
def test_batch_normalize(factor, conv, seed, dtype):
    def build(m):
        shape, p = _bn_shapes(m, conv)
        rm, rv = (m.empty(), m.empty()) if factor == 1 else (m.t(p), m.t(p, 0.1, 2))
        return 1e-5, m.empty(), m.empty(), m.empty(), factor, rm, rv, m.t(shape), m.t(p), m.t(p)

    op = tt.batch_normalize_conv if conv else tt.batch_normalize
    _check(op, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
def test_batch_normalize_gradient(conv, seed, dtype):
    def build(m):
        shape, p = _bn_shapes(m, conv)
        return (1e-5, m.t(shape), m.t(p, -0.5, 0.5), m.t(p, 0.5, 2), m.t(shape), m.t(p),
                m.t(shape, alias=True), m.poisoned(p), m.poisoned(p))

    op = tt.batch_normalize_conv_gradient if conv else tt.batch_normalize_gradient
    _check(op, build, dtype, seed, rtol=NORM_RTOL[dtype])


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("inplace", [False, True], ids=["separate", "inplace"])
def test_layer_and_rms_normalize(inplace, seed, dtype):
    def build_ln(m):
        shape = m.shape(k=(1, 4))
        src = m.t(shape, -2, 4)
        p = (1, shape[1], 1, 1)
        return 1e-5, src if inplace else m.empty(), m.empty(), m.empty(), src, m.t(p), m.t(p)

    def build_rms(m):
        shape = m.shape(k=(1, 4))
        src = m.t(shape, -2, 4)
        return 1e-5, src if inplace else m.empty(), m.empty(), src, m.t((1, shape[1], 1, 1))

    _check(tt.layer_normalize, build_ln, dtype, seed)
    _check(tt.rms_normalize, build_rms, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
def test_layer_and_rms_normalize_gradient(seed, dtype):
    def build_ln(m):
        shape = m.shape(k=(1, 4))
        n, p = (shape[0], 1, 1, 1), (1, shape[1], 1, 1)
        return (1e-5, m.t(shape), m.t(n, -0.5, 0.5), m.t(n, 0.5, 2), m.t(shape), m.t(p),
                m.t(shape, alias=True), m.poisoned(p), m.poisoned(p), m.empty(), m.empty())

    def build_rms(m):
        shape = m.shape(k=(1, 4))
        p = (1, shape[1], 1, 1)
        return (m.t(shape), m.t((shape[0], 1, 1, 1), 0.5, 2), m.t(shape), m.t(p),
                m.t(shape, alias=True), m.poisoned(p), m.empty())

    _check(tt.layer_normalize_gradient, build_ln, dtype, seed, rtol=NORM_RTOL[dtype])
    _check(tt.rms_normalize_gradient, build_rms, dtype, seed, rtol=NORM_RTOL[dtype])


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("layout", ["separate", "inplace", "alias"])
@pytest.mark.parametrize("which", ["conv", "tensors_1", "tensors_n"])
def test_affine_transforms(which, layout, seed, dtype):
    def build(m):
        shape = m.shape()
        alias = layout == "alias"
        src = m.t(shape, alias=alias)
        dest = src if layout == "inplace" else m.poisoned(shape, alias=alias)
        p = {"conv": (1, shape[1], 1, 1), "tensors_1": (1,) + shape[1:], "tensors_n": shape}[which]
        return dest, src, m.t(p, alias=alias), m.t(p)

    op = tt.affine_transform_conv if which == "conv" else tt.affine_transform_tensors
    _check(op, build, dtype, seed)


@cuda_test
@DTYPES
@LAYOUT
@SEEDS
@pytest.mark.parametrize("name", ["exp", "log", "log10"])
def test_exp_log_log10(name, layout, seed, dtype):
    def build(m):
        shape = m.shape()
        src = m.t(shape, 0.1, 3.0, alias=layout == "alias")
        if layout == "inplace":
            return src, src
        return m.poisoned(shape, alias=layout == "alias"), src

    _check(getattr(tt, name), build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
def test_affine_transform_rect(seed, dtype):
    from dnnpy import rectangle

    def build(m):
        shape = m.shape()
        cols = int(np.prod(shape[1:]))
        left, right = sorted(int(v) for v in m.rng.integers(0, cols, 2))
        top, bottom = sorted(int(v) for v in m.rng.integers(0, shape[0], 2))
        srcs = [m.t(shape, alias=True) for _ in range(3)]
        return (rectangle(left, top, right, bottom), m.t(shape, alias=True), *srcs, 2.0, -3.0, 0.5)

    _check(tt.affine_transform, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])
@pytest.mark.parametrize("form", ["scale", "sum"])
def test_multiply_conv(form, add_to, seed, dtype):
    def build(m):
        shape = m.shape()
        p = (1, shape[1], 1, 1)
        if form == "scale":
            dest = m.t(shape, alias=True) if add_to else m.poisoned(shape, alias=True)
            return add_to, dest, m.t(shape, alias=True), m.t(p)
        dest = m.t(p) if add_to else m.poisoned(p)
        return add_to, dest, m.t(shape, alias=True), m.t(shape)

    # the "sum" form sums up to ~170 float32 products on the CPU
    _check(tt.multiply_conv, build, dtype, seed, rtol=NORM_RTOL[dtype] if form == "sum" else None)


# ----------------------------------------------------------------------------------------
# GPU: merge, embeddings, ACT

@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])
def test_multiply_zero_padded(add_to, seed, dtype):
    def build(m):
        d, s1, s2 = m.shape(), m.shape(), m.shape()
        dest = m.t(d, alias=True) if add_to else m.poisoned(d, alias=True)
        return add_to, dest, m.t(s1, alias=True), m.t(s2)

    _check(tt.multiply_zero_padded, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("add_to", [False, True], ids=["assign", "add"])
@pytest.mark.parametrize("inplace", [False, True], ids=["separate", "inplace"])
def test_scale_channels(inplace, add_to, seed, dtype):
    def build(m):
        shape = m.shape()
        src = m.t(shape, alias=True)
        dest = src if inplace else (m.t(shape) if add_to else m.poisoned(shape))
        return add_to, dest, src, m.t((shape[0], shape[1], 1, 1))

    _check(tt.scale_channels, build, dtype, seed)


def _token_tensor(m, shape, num):
    """Tokens in column 0: in range, fractional (truncated), negative, too large, NaN."""
    vals = m.rng.uniform(-3, 3, shape)
    choices = np.array([0, 1, num - 1, num, num + 5, -1, -0.5, 0.7, 2.9, np.nan])
    col = m.rng.choice(choices, shape[:3])
    col = np.where(m.rng.random(shape[:3]) < 0.5, m.rng.integers(0, num, shape[:3]), col)
    vals[..., 0] = col
    return m.t(shape, values=vals)


@cuda_test
@DTYPES
@SEEDS
def test_embeddings_and_token_freqs(seed, dtype):
    def build_emb(m):
        shape, num, dim = m.shape(nc=(1, 3)), int(m.rng.integers(3, 8)), int(m.rng.integers(1, 6))
        src = _token_tensor(m, shape, num)
        return m.poisoned(shape[:3] + (dim,), alias=True), src, m.t((num, dim, 1, 1))

    def build_freqs(m):
        shape, num = m.shape(nc=(1, 3)), int(m.rng.integers(3, 8))
        return m.poisoned((num, 1, 1, 1)), _token_tensor(m, shape, num)

    _check(tt.embeddings, build_emb, dtype, seed)
    _check(tt.calc_token_freqs, build_freqs, dtype, seed, rtol=0)   # counts: exact


@cuda_test
@DTYPES
@SEEDS
@pytest.mark.parametrize("scale", [False, True])
def test_embeddings_gradient(scale, seed, dtype):
    def build(m):
        shape, num, dim = m.shape(nc=(1, 3)), int(m.rng.integers(3, 8)), int(m.rng.integers(1, 6))
        prev = _token_tensor(m, shape, num)
        freqs = m.t((num, 1, 1, 1), values=m.rng.integers(0, 4, num))   # includes zero counts
        return prev, m.t(shape[:3] + (dim,)), m.t((num, dim, 1, 1), alias=True), freqs, 0.1, scale

    # repeated tokens accumulate through atomics in any order: rounding-level differences
    _check(tt.embeddings_gradient, build, dtype, seed)


def _act_dims(m):
    return tuple(int(m.rng.integers(1, 5)) for _ in range(4))   # batch, channels, seq, d_model


@cuda_test
@DTYPES
@SEEDS
def test_act_halt_probabilities(seed, dtype):
    def build(m):
        n, c, s, d = _act_dims(m)
        return (m.poisoned((n * s, 1, 1, 1)), m.poisoned((n, s, 1, 1)), m.t((n, c, s, d), alias=True),
                m.t((c * d + 1, 1, 1, 1), -0.5, 0.5), n, s, c * d)

    _check(tt.compute_act_halt_probabilities, build, dtype, seed)


@cuda_test
@DTYPES
@SEEDS
def test_act_state_and_output(seed, dtype):
    def state(m, n, s):
        cum = m.t((n * s, 1, 1, 1), 0, 1.3)                      # some positions halted
        rem = m.t((n * s, 1, 1, 1), 0, 1)
        rem.host().reshape(-1)[::3] = 1e-7                       # below finalize's 1e-6
        steps = m.t((n, s, 1, 1), values=m.rng.integers(0, 4, n * s))
        return cum, rem, steps, m.t((n * s, 1, 1, 1), 0, 1)

    def build_update(m):
        n, c, s, d = _act_dims(m)
        cum, rem, steps, eff = state(m, n, s)
        x = m.t((n, c, s, d), alias=True)
        x.host()[0, 0, 0, 0] = np.inf                            # halted rows must stay finite
        return (m.t((n, c, s, d)), x, m.t((n * s, 1, 1, 1), 0, 1), cum, rem, steps, eff,
                n, s, d, c, 0.99, 2)

    def build_finalize(m):
        n, c, s, d = _act_dims(m)
        _, rem, _, eff = state(m, n, s)
        return m.t((n, c, s, d)), m.t((n, c, s, d), alias=True), rem, eff, n, s, d, c

    def build_scale(m):
        n, c, s, d = _act_dims(m)
        steps = m.t((n * s, 1, 1, 1), values=m.rng.integers(0, 4, n * s))
        return m.t((n, c, s, d), alias=True), steps, n, s, d, c, 3.0, 0.25

    def build_data_grad(m):
        n, c, s, d = _act_dims(m)
        return m.t((n, c, s, d), alias=True), m.t((n, c, s, d)), m.t((n * s, 1, 1, 1), 0, 1)

    _check(tt.update_act_state, build_update, dtype, seed)
    _check(tt.finalize_act_output, build_finalize, dtype, seed)
    _check(tt.apply_act_depth_scaling, build_scale, dtype, seed)
    _check(tt.act_data_gradient, build_data_grad, dtype, seed)
