"""dnnpy's OpenMP wait policy (dnnpy/tensor_tools/wait_policy.py): OMP_WAIT_POLICY=PASSIVE set
at import when the user set none and libgomp is not loaded yet; a user's value never changed;
libgomp loaded first gives one ThreadSettingWarning at the first oneDNN use; backend_info says
what is in force and who chose it. The subprocess checks read libgomp's own report of its
settings (OMP_DISPLAY_ENV=VERBOSE), so they prove what libgomp runs with, not what dnnpy
meant. libgomp displays an unset policy as 'PASSIVE' too; the spin count tells them apart:
0 for the passive policy, 300000 for libgomp's default."""

import os
import subprocess
import sys

import pytest

import dnnpy
from dnnpy.tensor_tools import wait_policy
from dnnpy.tensor_tools.cpu import onednn

_CLEAN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DISPLAY_ENV")


def _run(code, **env):
    """Run ``code`` in a fresh interpreter whose environment has no wait setting but ``env``;
    returns (stdout, stderr)."""
    base = {k: v for k, v in os.environ.items() if k not in _CLEAN}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout, out.stderr


needs_onednn = pytest.mark.skipif(not onednn.available(), reason="oneDNN is not usable here")

# loads oneDNN (and with it libgomp), running one op through it
_FIRST_OP = ("import numpy as np, warnings\n"
             "warnings.simplefilter('always')\n"
             "import dnnpy\n"
             "from dnnpy.tensor_tools.cpu import onednn\n"
             "assert onednn.available()\n"
             "print(dnnpy.backend_info(print_report=False)['threads']['wait_policy'])\n")


def test_default_is_set_when_nothing_is():
    env = {}
    state = wait_policy.apply_default(env, loaded=False)
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert state["applied"] and state["setting"] == "OMP_WAIT_POLICY=PASSIVE"
    assert "dnnpy's default" in state["chosen_by"]


@pytest.mark.parametrize("user", [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "10000"},
                                  {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "0"}])
def test_a_users_value_is_never_changed(user):
    env = dict(user)
    state = wait_policy.apply_default(env, loaded=False)
    assert env == user
    assert state["applied"] and "environment" in state["chosen_by"]
    assert all(f"{k}={v}" in state["setting"] for k, v in user.items())


def test_libgomp_loaded_first_is_not_applied_and_says_why():
    env = {}
    state = wait_policy.apply_default(env, loaded="/x/torch/lib/libgomp.so.1")
    assert env == {}
    assert not state["applied"] and "/x/torch/lib/libgomp.so.1" in state["reason"]
    assert "GOMP_SPINCOUNT=300000" in state["setting"]


def test_loaded_openmp_reads_the_process_map(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n"
                    "7f02-7f03 r-xp 00000000 08:01 2 /opt/torch/lib/libgomp-a34b3233.so.1\n")
    assert wait_policy.loaded_openmp(str(maps)) == "/opt/torch/lib/libgomp-a34b3233.so.1"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n")
    assert wait_policy.loaded_openmp(str(maps)) is None
    assert wait_policy.loaded_openmp(str(tmp_path / "missing")) is None


def test_backend_info_reports_the_policy_and_the_thread_counts(capsys):
    threads = dnnpy.backend_info(print_report=False)["threads"]
    wait = threads["wait_policy"]
    assert set(wait) == {"setting", "chosen_by", "applied", "reason"}
    assert threads["chosen_by"]
    dnnpy.backend_info()
    assert "OpenMP wait: " in capsys.readouterr().out


@needs_onednn
def test_libgomp_runs_passive_by_default():
    out, err = _run(_FIRST_OP, OMP_DISPLAY_ENV="VERBOSE")
    assert "GOMP_SPINCOUNT = '0'" in err                 # libgomp's own report: no spinning
    assert "'applied': True" in out and "dnnpy's default" in out
    assert "ThreadSettingWarning" not in err


@needs_onednn
def test_libgomp_keeps_a_users_policy():
    out, err = _run(_FIRST_OP, OMP_DISPLAY_ENV="VERBOSE", OMP_WAIT_POLICY="ACTIVE")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in err
    assert "the environment" in out and "ThreadSettingWarning" not in err


@needs_onednn
def test_libgomp_loaded_before_dnnpy_warns_once():
    code = "import ctypes\nctypes.CDLL('libgomp.so.1')\n" + _FIRST_OP + (
        "from dnnpy.tensor_tools import cpu\n"
        "import numpy as np\n"
        "t = dnnpy.resizable_tensor(2, 3, 4, 4); t.assign(np.ones((2, 3, 4, 4)))\n"
        "dnnpy.tensor_tools.relu(t, t)\n")
    out, err = _run(code, OMP_DISPLAY_ENV="VERBOSE")
    assert "GOMP_SPINCOUNT = '300000'" in err             # libgomp started spinning
    assert err.count("ThreadSettingWarning") == 1
    assert "OMP_WAIT_POLICY=PASSIVE" in err and "GOMP_SPINCOUNT=300000" in err
    assert "Import dnnpy before torch" in err
    assert "'applied': False" in out


@pytest.fixture
def quiet_machine(monkeypatch):
    from dnnpy.tensor_tools.cpu.onednn import _primitive as P
    monkeypatch.setattr(P, "machine_busy", lambda: False)


@needs_onednn
@pytest.mark.parametrize("scale, serial", [(0.25, True), (2, False)])
def test_small_primitives_run_on_one_thread(scale, serial, quiet_machine):
    """Under SERIAL_WORK a primitive is created and run with one OpenMP thread (no parallel
    region to wake the sleeping pool for); the pool's size is restored after each call and
    the result is the same."""
    import numpy as np
    import dnnpy.tensor_tools as tt
    from dnnpy.tensor_tools.cpu.onednn import _primitive as P
    from dnnpy.tensor_tools.cpu.onednn import eltwise
    n = int(P.SERIAL_WORK * scale)
    rng = np.random.default_rng(0)
    d, gi = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    dest, grad_in, grad = (dnnpy.resizable_tensor(n) for _ in range(3))
    dest.assign(d)
    grad_in.assign(gi)
    grad.assign(np.ones(n, np.float32))
    before = P.gomp().omp_get_max_threads()
    tt.relu_gradient(grad, dest, grad_in)
    assert P.gomp().omp_get_max_threads() == before
    prim = eltwise._cache.get(("relu_gradient", n), None, serial)
    assert prim is not None and prim.serial is serial
    np.testing.assert_array_equal(grad.numpy().ravel(), 1 + gi * (d > 0))


def test_busy_machine_reading(tmp_path):
    """/proc/loadavg's running count, less the reading thread; busy when the others and the
    pool outnumber the CPUs; a missing file reads as quiet."""
    from dnnpy.tensor_tools.cpu.onednn import _primitive as P
    assert P.others_running("0.50 0.40 0.30 3/250 12345\n") == 2
    assert P.others_running("0.00 0.00 0.00 1/90 7\n") == 0
    assert P.is_serial(None) is False
    assert P.is_serial(P.SERIAL_WORK - 1) is True


@needs_onednn
def test_mid_sized_primitives_go_serial_on_a_busy_machine(monkeypatch):
    """Between SERIAL_WORK and BUSY_SERIAL_WORK an op is serial only while the machine is busy;
    each mode keeps its own primitive, and both compute the same."""
    import numpy as np
    import dnnpy.tensor_tools as tt
    from dnnpy.tensor_tools.cpu.onednn import _primitive as P
    from dnnpy.tensor_tools.cpu.onednn import eltwise
    n = 2 * P.SERIAL_WORK
    assert n < P.BUSY_SERIAL_WORK
    rng = np.random.default_rng(1)
    dest, grad_in = (dnnpy.resizable_tensor(n) for _ in range(2))
    dest.assign(rng.standard_normal(n).astype(np.float32))
    grad_in.assign(rng.standard_normal(n).astype(np.float32))
    results = {}
    for busy in (True, False):
        monkeypatch.setattr(P, "machine_busy", lambda busy=busy: busy)
        assert P.is_serial(n) is busy
        grad = dnnpy.resizable_tensor(n)
        grad.assign(np.zeros(n, np.float32))
        tt.relu_gradient(grad, dest, grad_in)
        results[busy] = grad.numpy().copy()
        assert eltwise._cache.get(("relu_gradient", n), None, busy).serial is busy
    np.testing.assert_array_equal(results[True], results[False])
