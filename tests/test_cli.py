"""The command line: ``dnnpy info`` and ``dnnpy test-layer`` (and ``python -m dnnpy``)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dnnpy
from dnnpy import con, fc, input, loss_multiclass_log, relu, sgd
from dnnpy.cli import main, parse_layer_expression

NET = loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[np.float32]]]]]


@pytest.fixture
def files(tmp_path):
    net = NET()
    net([np.zeros((4, 4), np.float32)])
    dnnpy.serialize(net, tmp_path / "n.dnnpy")
    dnnpy.serialize(net, tmp_path / "n.dat", format="dlib")
    dnnpy.serialize(dnnpy.make_solvers(net, sgd()), tmp_path / "s.dnnpy")
    return tmp_path


def test_info_dnnpy_file(files, capsys):
    assert main(["info", str(files / "n.dnnpy")]) == 0
    out = capsys.readouterr().out
    assert f"net type: {NET!r}" in out
    assert "layer<3>" in out and "con\t (num_filters=2" in out
    assert "parameters: 119" in out      # con 2*9+2, fc 33*3


def test_info_dlib_file_needs_type(files, capsys):
    assert main(["info", str(files / "n.dat")]) == 1
    assert "--type" in capsys.readouterr().err
    assert main(["info", str(files / "n.dat"), "--type", repr(NET)]) == 0
    assert "parameters: 119" in capsys.readouterr().out
    bad = "loss_multiclass_log[fc[3, relu[con[2, 5, 5, 1, 1, input[float32]]]]]"
    assert main(["info", str(files / "n.dat"), "--type", bad]) == 1
    assert "con_" in capsys.readouterr().err


def test_info_solvers_and_corrupt_file(files, capsys):
    assert main(["info", str(files / "s.dnnpy")]) == 0
    assert "solvers: 3" in capsys.readouterr().out
    data = (files / "n.dnnpy").read_bytes()
    (files / "cut.dnnpy").write_bytes(data[:len(data) // 2])
    assert main(["info", str(files / "cut.dnnpy")]) == 1
    assert "byte offset" in capsys.readouterr().err


def test_test_layer_command(capsys):
    assert main(["test-layer", "fc_(3)", "--dtype", "float64", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "float64" in out


def test_layer_expression_parsing_never_evaluates():
    layer = parse_layer_expression("con_(4, 3, 3, 1, 1)")
    assert isinstance(layer, dnnpy.con_) and layer.num_filters() == 4
    assert isinstance(parse_layer_expression("add_prev_(tag1)"), dnnpy.add_prev_)
    assert isinstance(parse_layer_expression("leaky_relu_(-0.5)"), dnnpy.leaky_relu_)
    for bad, msg in [("__import__('os').system('x')", "expected a call"),
                     ("open('x')", "unknown layer class"),
                     ("con_(os.sep)", "literal"),
                     ("con_(x)", "unknown name"),
                     ("con_(*a)", "literal"),
                     ("con_(", "not a layer expression")]:
        with pytest.raises(ValueError, match=msg):
            parse_layer_expression(bad)


def test_python_m_dnnpy(files):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dnnpy.__file__)))
    r = subprocess.run([sys.executable, "-m", "dnnpy", "test-layer", "bogus_(1)"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and "unknown layer class" in r.stderr
    r = subprocess.run([sys.executable, "-m", "dnnpy", "info", str(files / "n.dnnpy")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "parameters: 119" in r.stdout
