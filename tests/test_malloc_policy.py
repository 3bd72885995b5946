"""dnnpy's malloc default (dnnpy/tensor_tools/malloc_policy.py): glibc's mmap and trim
thresholds raised at import unless the user chose otherwise; what is in force is reported."""

import os
import subprocess
import sys

import numpy as np
import pytest

from dnnpy.tensor_tools import malloc_policy as mp


class _Mallopt:
    def __init__(self, answer=1):
        self.calls, self.answer = [], answer

    def __call__(self, param, value):
        self.calls.append((param, value))
        return self.answer


def test_default_is_applied_on_glibc_when_nothing_is_set():
    f = _Mallopt()
    state = mp.apply_default({}, glibc="glibc 2.36", mallopt=f)
    assert state["applied"] and state["chosen_by"] == "dnnpy's default" and state["reason"] is None
    assert sorted(f.calls) == sorted([(-3, 32 << 20), (-1, 256 << 20)])    # M_MMAP, M_TRIM


@pytest.mark.parametrize("environ", [{"MALLOC_TRIM_THRESHOLD_": "131072"}, {"MALLOC_MMAP_THRESHOLD_": "1"},
                                     {"MALLOC_TOP_PAD_": "0"}, {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"},
                                     {"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, {"DNNPY_MALLOC": "glibc"}])
def test_a_users_choice_is_left_alone(environ):
    f = _Mallopt()
    state = mp.apply_default(environ, glibc="glibc 2.36", mallopt=f)
    assert not f.calls and not state["applied"] and state["reason"] is None
    assert "environment" in state["chosen_by"]


def test_other_c_libraries_and_a_refusal_say_why():
    f = _Mallopt()
    state = mp.apply_default({}, glibc="", mallopt=f)
    assert not f.calls and not state["applied"] and "not glibc" in state["reason"]
    state = mp.apply_default({}, glibc="glibc 2.36", mallopt=_Mallopt(answer=0))
    assert not state["applied"] and "refused" in state["reason"] and state["setting"] == "glibc's default"

    def mmap_only(param, value):
        return 1 if param == -3 else 0
    state = mp.apply_default({}, glibc="glibc 2.36", mallopt=mmap_only)
    assert not state["applied"] and state["setting"] == "M_MMAP_THRESHOLD=32 MiB only"


def test_an_unknown_choice_warns_and_keeps_dnnpys():
    f = _Mallopt()
    with pytest.warns(RuntimeWarning, match="DNNPY_MALLOC='off' is not a malloc policy"):
        state = mp.apply_default({"DNNPY_MALLOC": "off"}, glibc="glibc 2.36", mallopt=f)
    assert state["applied"] and len(f.calls) == 2


def test_backend_info_reports_it(capsys):
    import dnnpy
    info = dnnpy.backend_info()
    assert set(info["malloc"]) == {"setting", "chosen_by", "applied", "reason"}
    assert "malloc: " in capsys.readouterr().out


@pytest.mark.skipif(not mp._glibc(), reason="glibc's mallopt")
def test_freed_arrays_come_back_without_page_faults():
    """The point of it: temporaries of a MB made and freed again and again (a band of an
    image: 8 of them alive at once) reuse the same memory; with glibc's default the freed
    heap top is trimmed each time and their pages are faulted in again."""
    code = ("import resource, numpy as np, dnnpy\n"
            "def churn():\n"
            "    for _ in range(30):\n"
            "        temporaries = [np.ones(1 << 20, np.uint8) for _ in range(8)]\n"
            "        del temporaries\n"
            "churn()\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "churn()\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "DNNPY_MALLOC"}

    def faults(**extra):
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True,
                             text=True, check=True)
        return int(out.stdout.split()[-1])

    kept, default = faults(), faults(DNNPY_MALLOC="glibc")
    # 240 MB of temporaries: glibc's default faults most of them in again; kept: a few pages
    assert kept < 2000 < default, (kept, default)
    assert np.isfinite(kept)
