"""A training process killed with SIGKILL at an arbitrary moment resumes from its last sync
file and finishes (issue: "a crash never costs them their trained state")."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from dnnpy import adam, dnn_trainer, fc, input, loss_mean_squared, relu

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

NET = loss_mean_squared[fc[1, relu[fc[16, input[np.float32]]]]]

SCRIPT = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from dnnpy import adam, dnn_trainer, fc, input, loss_mean_squared, relu

    mode, folder, target, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 1, 3)).astype(np.float32)
    y = (2 * x[:, 0, 0] - x[:, 0, 1] + 0.5 * x[:, 0, 2]).astype(np.float32)
    x, y = list(x), list(y)
    net = loss_mean_squared[fc[1, relu[fc[16, input[np.float32]]]]]()
    t = dnn_trainer(net, adam())
    t.set_mini_batch_size(16)
    t.set_synchronization_file(os.path.join(folder, "state.sync"), 0.02)
    print("START", t.get_train_one_step_calls(), t._epoch_iteration, t._epoch_pos, flush=True)
    if mode == "steps":
        while t.get_train_one_step_calls() < target:
            i = t.get_train_one_step_calls() % 16
            t.train_one_step(x[16 * i:16 * i + 16], y[16 * i:16 * i + 16])
            time.sleep(pause)
    else:
        t.set_max_num_epochs(target)
        if pause:
            orig = t._train_job
            def slow(*a):
                time.sleep(pause)
                return orig(*a)
            t._train_job = slow
        t.train(x, y)
    net = t.get_net()
    print("DONE", t.get_train_one_step_calls(), t._epoch_iteration, net.compute_loss(x, y), flush=True)
""")


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _start(script, *args):
    return subprocess.Popen([sys.executable, str(script), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())


def _kill_after_syncs(proc, sync, extra_s):
    """Wait until the process has synced at least twice (both files exist), let it run a
    little longer, then SIGKILL it."""
    deadline = time.monotonic() + 30
    while not (os.path.exists(sync) and os.path.exists(sync + "_")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no sync file written in 30 s"
        time.sleep(0.01)
    time.sleep(extra_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


def _file_state(sync):
    t = dnn_trainer(NET(), adam())
    t.set_synchronization_file(sync)
    return t


def _run(script, *args):
    p = _start(script, *args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    lines = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()}
    return lines


def test_sigkill_resume_train_one_step(tmp_path):
    script = tmp_path / "train_script.py"
    script.write_text(SCRIPT)
    sync = str(tmp_path / "state.sync")
    # kill twice at different moments (syncs every 20 ms, so likely mid-write at times)
    for extra in (0.13, 0.29):
        _kill_after_syncs(_start(script, "steps", tmp_path, 100000, 0.002), sync, extra)
    held = _file_state(sync).get_train_one_step_calls()
    assert held > 0
    first_loss_lines = _run(script, "steps", tmp_path, held + 40, 0)
    start = first_loss_lines["START"]
    assert int(start[0]) == held                     # resumed from exactly the synced step
    done = first_loss_lines["DONE"]
    assert int(done[0]) == held + 40 and np.isfinite(float(done[2]))
    assert float(done[2]) < 1.0                      # it kept learning (initial loss ~5)
    assert _file_state(sync).get_train_one_step_calls() == held + 40
    leftovers = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(leftovers) <= 2                       # at most a temp file per kill


def test_sigkill_resume_train_epochs(tmp_path):
    script = tmp_path / "train_script.py"
    script.write_text(SCRIPT)
    sync = str(tmp_path / "state.sync")
    _kill_after_syncs(_start(script, "epochs", tmp_path, 1000, 0.002), sync, 0.2)
    t = _file_state(sync)
    epoch, pos = t._epoch_iteration, t._epoch_pos
    assert epoch * 256 + pos > 0
    lines = _run(script, "epochs", tmp_path, epoch + 2, 0)
    assert [int(v) for v in lines["START"][1:]] == [epoch, pos]
    assert int(lines["DONE"][1]) == epoch + 2        # finished the remaining epochs
    assert np.isfinite(float(lines["DONE"][2]))
