"""Every layer of the layer table (``tests/test_layers.py`` ``LAYERS``) on the GPU.

1. The backend is really on: with a CUDA device visible to CuPy, ``tt.use_cuda()`` must be
   true (otherwise every other GPU test would skip "cleanly" and hide a broken CUDA twin).
2. Host/device mirrors across ``force_cpu``: a tensor last written on one backend and read
   by the other's op gives the current values, also for alias views sharing a storage.
3. CPU/GPU parity: each row's layer runs setup, forward and backward once on the CPU (inside
   ``dnnpy.force_cpu()``) and once on the GPU, from the same parameters and the same fake
   subnet. The output, the parameters, the parameter gradient and every fake level's
   gradient input must agree within ``max|gpu - cpu| <= tol * max(1, max|cpu|)``, with
   tol = 2e-4 in float32 and 1e-9 in float64 (cuDNN and cuBLAS sum in other orders than numpy;
   no TF32). Each side builds its own tensors from the same numbers, so no mirror is shared
   between the two runs. dropout's ``tensor_rand`` differs between backends (as in dlib),
   so its masks are drawn on the host from a fixed seed for both.
4. ``test_layer`` passes on the GPU for every row, float64 rows first (the tight check),
   then float32.

Everything here is ``@pytest.mark.cuda`` and skips without a usable CUDA backend.
"""

import contextlib
import importlib

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import test_layer
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor
from dnnpy.testing import _backward, _fake_subnet, _forward, _parameter_seed
from test_layers import LAYERS

pytestmark = pytest.mark.cuda  # skipped without the CUDA backend (conftest.py)

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
PARITY_TOL = {np.float32: 2e-4, np.float64: 1e-9}


def _cupy_sees_a_device():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


# ----------------------------------------------------------------------------------------
# 1. the backend is on

@pytest.mark.cuda(guard=True)  # runs, and fails, when the backend is off despite a device
@pytest.mark.skipif(not _cupy_sees_a_device() or tt.backend._env_disables_cuda(),
                    reason="no CUDA device visible to CuPy (or DNNPY_DISABLE_CUDA set)")
def test_cuda_backend_is_used_when_a_device_exists():
    if not tt.use_cuda():
        reason = getattr(tt.backend, "unusable_reason", lambda: None)()
        if reason is None:  # say why: import the twin again to show its error
            importlib.import_module("dnnpy.tensor_tools.cuda")
        pytest.fail(f"CuPy sees a device but tt.use_cuda() is False: {reason}")
    assert tt.backend_name() == "cuda"
    with dnnpy.force_cpu():
        assert tt.backend_name() == "cpu"


# ----------------------------------------------------------------------------------------
# 2. mirrors across force_cpu

def _device_current(t):
    return t.is_device_current() and not t.is_host_current()


@DTYPES
def test_gpu_result_read_by_cpu_op_and_back(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    with default_dtype(dtype):
        src, y, z = resizable_tensor(x), resizable_tensor(2, 3, 4, 5), resizable_tensor(2, 3, 4, 5)
    tt.affine_transform(y, src, 2.0, 1.0)                 # GPU: y = 2x + 1
    assert _device_current(y)
    with dnnpy.force_cpu():
        tt.affine_transform(z, y, 3.0, 0.0)               # CPU reads y: must see the GPU values
        assert not z.is_device_current()
    want = 3 * (2 * x.astype(dtype) + 1)
    np.testing.assert_allclose(np.asarray(z), want, rtol=1e-6 if dtype == np.float32 else 1e-14)
    tt.affine_transform(y, z, 1.0, -1.0)                  # GPU reads z, written on the CPU
    np.testing.assert_allclose(np.asarray(y), want - 1, rtol=1e-6 if dtype == np.float32 else 1e-14)
    with dnnpy.force_cpu():
        assert tt.dot(y, y) == pytest.approx(float(np.sum((want - 1) ** 2)), rel=1e-5)


def test_alias_views_written_on_both_backends():
    """Two aliases of one storage (a layer's filters and biases): one written on the GPU,
    the other then written on the CPU; both must hold their new values on either side."""
    base = resizable_tensor(np.zeros(30, np.float32))
    a, b = alias_tensor(2, 3, 2, 2)(base, 0), alias_tensor(1, 6, 1, 1)(base, 24)
    src = resizable_tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2))
    tt.affine_transform(a, src, 1.0, 5.0)                 # GPU writes a
    with dnnpy.force_cpu():
        tt.affine_transform(b, resizable_tensor(np.ones((1, 6, 1, 1), np.float32)), 2.0, 0.0)
    want = np.concatenate([np.arange(24) + 5.0, np.full(6, 2.0)]).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(base).reshape(-1), want)
    out = resizable_tensor(30)
    tt.affine_transform(out, base, 1.0, 0.0)              # GPU reads the whole storage
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), want)


# ----------------------------------------------------------------------------------------
# 3. CPU/GPU parity of every layer

class _host_rand(tt.tensor_rand):
    """Draws on the host from a fixed seed, restarting at every fill: the same numbers on
    both backends (the backends' own generators differ, as dlib's do)."""

    def fill_uniform(self, data):
        data.assign(1.0 - np.random.default_rng(self.seed).random(data.shape))   # (0, 1]

    def fill_gaussian(self, data, mean=0.0, stddev=1.0):
        data.assign(np.random.default_rng(self.seed).normal(mean, stddev, data.shape))


def _same_random_source(obj, seen=None):
    """Replace every ``tensor_rand`` reachable from the layer's attributes."""
    seen = set() if seen is None else seen
    if id(obj) in seen or not hasattr(obj, "__dict__"):
        return
    seen.add(id(obj))
    for name, value in vars(obj).items():
        if isinstance(value, tt.tensor_rand) and not isinstance(value, _host_rand):
            setattr(obj, name, _host_rand(value.seed))
        elif hasattr(value, "__dict__") and type(value).__module__.startswith("dnnpy.layers"):
            _same_random_source(value, seen)


def _run_layer(case, dtype, seed, on_cpu):
    make, shape, *tagged = case
    ctx = dnnpy.force_cpu() if on_cpu else contextlib.nullcontext()
    with ctx, default_dtype(dtype), _parameter_seed(seed):
        rnd = np.random.default_rng(seed)
        layer = make()
        _same_random_source(layer)
        levels = []
        sub = _fake_subnet(rnd, levels, shape, tagged[0] if tagged else None)
        layer.setup(sub)
        _same_random_source(layer)            # setup may create the random source
        output = resizable_tensor()
        _forward(layer, sub, output)
        got = {"output": np.array(output, dtype=np.float64)}
        input_grad = resizable_tensor(*output.shape)
        input_grad.assign(rnd.standard_normal(output.shape))
        params = layer.get_layer_params()
        params_grad = resizable_tensor()
        params_grad.copy_size(params)
        params_grad.fill(np.inf)
        _backward(layer, output, input_grad, sub, params_grad)
        got["params"] = np.array(params, dtype=np.float64)
        got["params_grad"] = np.array(params_grad, dtype=np.float64)
        for i, lv in enumerate(levels):
            got[f"gradient_input of level {i}"] = np.array(lv.gradient_input, dtype=np.float64)
        got["backend"] = tt.backend_name()
    return got


@DTYPES
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_cpu_gpu_parity(name, dtype):
    cpu = _run_layer(LAYERS[name], dtype, 0, on_cpu=True)
    gpu = _run_layer(LAYERS[name], dtype, 0, on_cpu=False)
    assert (cpu.pop("backend"), gpu.pop("backend")) == ("cpu", "cuda")
    assert cpu.keys() == gpu.keys()
    tol = PARITY_TOL[dtype]
    bad = []
    for key, want in cpu.items():
        have = gpu[key]
        if have.shape != want.shape:
            bad.append(f"{key}: shape {have.shape} on the GPU, {want.shape} on the CPU")
            continue
        if want.size == 0:
            continue
        # inf where the CPU has inf (an unassigned params_grad) is compared as such
        same_nonfinite = np.array_equal(~np.isfinite(have), ~np.isfinite(want)) and \
            np.array_equal(have[~np.isfinite(have)], want[~np.isfinite(want)], equal_nan=True)
        finite = np.isfinite(want)
        err = float(np.max(np.abs(have[finite] - want[finite]), initial=0.0))
        scale = max(1.0, float(np.max(np.abs(want[finite]), initial=0.0)))
        if not same_nonfinite or not err <= tol * scale:
            bad.append(f"{key}: max|gpu - cpu| = {err:.3g} (allowed {tol * scale:.3g}); "
                       f"non-finite entries {'agree' if same_nonfinite else 'DIFFER'}")
    assert not bad, f"{name} ({np.dtype(dtype).name}):\n  " + "\n  ".join(bad)


# ----------------------------------------------------------------------------------------
# 4. test_layer on the GPU: float64 (the tight check) for every row first, then float32

_ORDER = [(dtype, name) for dtype in (np.float64, np.float32) for name in LAYERS]


@pytest.mark.parametrize("dtype, name", _ORDER,
                         ids=[f"{np.dtype(d).name}-{n}" for d, n in _ORDER])
def test_layer_on_gpu(dtype, name):
    make, shape, *tagged = LAYERS[name]
    assert tt.backend_name() == "cuda"
    result = test_layer(make(), dtype=dtype, input_shape=shape, tagged_shape=tagged[0] if tagged else None)
    assert result, f"{name} on the GPU:\n{result.log}"

