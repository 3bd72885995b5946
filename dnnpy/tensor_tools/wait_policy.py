"""How the OpenMP threads under oneDNN wait between parallel regions: dnnpy's default,
``OMP_WAIT_POLICY=PASSIVE``, applied at ``import dnnpy`` before libgomp starts.

Why. libgomp (the OpenMP runtime of oneDNN's gomp build, and of PyTorch's wheels) makes an
idle thread spin about 300,000 iterations at every barrier before it sleeps. On free cores
that saves a wake-up per op; on a machine whose cores other programs also use (a laptop, a
CI runner, a cluster node), the spinning threads take the time slices the working threads
need, and every small op waits for a descheduled peer. Measured on 2 cores beside 2 busy
processes (``bench/load.py``, docs/performance.md "Busy machines"): a ResNet training step
3.4x slower than with the passive policy, the test suite 6.8x slower than on a quiet machine;
on a quiet machine the passive policy costs 0-3% on that step.

The rule. At ``import dnnpy``, when the environment sets neither ``OMP_WAIT_POLICY`` nor
``GOMP_SPINCOUNT`` and no libgomp is loaded in the process yet, dnnpy sets
``os.environ["OMP_WAIT_POLICY"] = "PASSIVE"``; libgomp reads it when it loads (at the first
oneDNN op, or when a library imported later, such as torch, loads its copy; the process
holds one libgomp, which then serves both). The variable stays in the environment, so the
processes this one starts inherit it. A value the user set is never changed: set
``OMP_WAIT_POLICY=ACTIVE`` (or a ``GOMP_SPINCOUNT``) before importing dnnpy to keep libgomp's
spinning. When libgomp was already loaded before dnnpy (torch imported first), the default
cannot take effect: ``wait_policy_info()`` says so, and the first oneDNN use warns once
(``ThreadSettingWarning``) naming the variable, the value in force and the remedy.
"""

from __future__ import annotations

import os

__all__ = ["VARIABLE", "DEFAULT", "apply_default", "wait_policy_info", "warning_for_onednn",
           "loaded_openmp"]

VARIABLE, DEFAULT = "OMP_WAIT_POLICY", "PASSIVE"
_USER_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
LIBGOMP_SPIN = "GOMP_SPINCOUNT=300000 (libgomp's default: threads spin at every barrier)"

_state = {}     # filled by apply_default(): what is in force and who chose it


def loaded_openmp(maps_path="/proc/self/maps"):
    """The path of the libgomp mapped into this process, or None (also where the process
    map cannot be read: then nothing is known to be loaded)."""
    try:
        with open(maps_path) as f:
            for line in f:
                path = line.rstrip("\n").split(" ", 5)[-1].strip()
                if os.path.basename(path).startswith("libgomp"):
                    return path
    except OSError:
        return None
    return None


def apply_default(environ=None, loaded=None):
    """Set ``OMP_WAIT_POLICY=PASSIVE`` in ``environ`` (``os.environ``) unless the user set a
    wait policy or libgomp is already loaded (``loaded``: its path, found when None).
    Records what is in force for ``wait_policy_info()``; returns that dict. Idempotent."""
    environ = os.environ if environ is None else environ
    user = {v: environ[v] for v in _USER_VARIABLES if v in environ}
    if user:
        setting = ", ".join(f"{k}={v}" for k, v in user.items())
        state = {"setting": setting, "chosen_by": "the environment (set before dnnpy was "
                 "imported: by the user or a parent process)", "applied": True, "reason": None}
    else:
        loaded = loaded_openmp() if loaded is None else loaded
        if loaded:
            state = {"setting": LIBGOMP_SPIN, "chosen_by": "libgomp's default",
                     "applied": False,
                     "reason": (f"libgomp ({loaded}) was loaded before dnnpy was imported, so "
                                f"dnnpy's default {VARIABLE}={DEFAULT} could not take effect")}
        else:
            environ[VARIABLE] = DEFAULT
            state = {"setting": f"{VARIABLE}={DEFAULT}", "chosen_by": "dnnpy's default (the "
                     "environment set no wait policy)", "applied": True, "reason": None}
    if environ is os.environ:
        _state.clear()
        _state.update(state)
    return state


def wait_policy_info() -> dict:
    """``{"setting", "chosen_by", "applied", "reason"}``: the OpenMP wait setting in force
    (``"OMP_WAIT_POLICY=PASSIVE"``, the user's variables, or libgomp's default spin), who chose
    it, whether dnnpy's choice took effect, and why not."""
    if not _state:
        apply_default()
    return dict(_state)


def warning_for_onednn():
    """The one warning to give when oneDNN starts running on a libgomp that spins because it
    was loaded before dnnpy could set the policy; None when there is nothing to say."""
    info = wait_policy_info()
    if info["applied"]:
        return None
    return (f"dnnpy: {info['reason']}; oneDNN's threads run with {LIBGOMP_SPIN}, which on a "
            "machine whose cores other programs also use makes each op wait for descheduled "
            "spinning threads (several times slower). Import dnnpy before torch (or any "
            f"library that loads libgomp), or set {VARIABLE}={DEFAULT} in the environment; "
            f"{VARIABLE}=ACTIVE keeps the spinning and silences this warning.")
