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
    r = subprocess.run([sys.executable, "-m", "dnnpy", "--version"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"dnnpy {dnnpy.__version__}"


# ----------------------------------------------------------------------------------------
# --version, sync files, bytes, user layers (newcomer findings 11 and 17)

def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"dnnpy {dnnpy.__version__}"


def test_info_says_where_the_bytes_go(tmp_path, capsys):
    net = NET()
    net([np.zeros((4, 4), np.float32)] * 4)
    dnnpy.serialize(net, tmp_path / "raw.dnnpy", clean=False)
    dnnpy.serialize(net, tmp_path / "clean.dnnpy")
    assert main(["info", str(tmp_path / "raw.dnnpy")]) == 0
    out = capsys.readouterr().out
    assert "476 bytes of parameters" in out          # 119 parameters
    assert "of cached outputs and gradients" in out and "net.clean()" in out
    assert main(["info", str(tmp_path / "clean.dnnpy")]) == 0
    assert "0 bytes of cached outputs and gradients" in capsys.readouterr().out


def test_info_of_a_trainer_sync_file(tmp_path, capsys):
    from dnnpy import adam, dnn_trainer

    sync = str(tmp_path / "run_sync")
    x = [np.random.default_rng(i).standard_normal((4, 4)).astype(np.float32) for i in range(4)]
    t = dnn_trainer(NET(), adam())
    t.be_quiet()
    t.set_learning_rate(0.005)
    t.set_mini_batch_size(2)
    t.set_max_num_epochs(3)
    t.set_synchronization_file(sync, 1000)
    t.train(x, [0, 1, 2, 0])
    name = sync if os.path.exists(sync) else sync + "_"
    assert main(["info", name]) == 0
    out = capsys.readouterr().out
    assert "trainer synchronization file" in out and f"net type: {NET!r}" in out
    assert "epoch: 3" in out and "solver updates: 6" in out
    assert "learning rate: 0.005" in out and "average loss:" in out
    assert "solver: adam" in out and "parameters: 119" in out


# a user's own module: a layer class (tests/helpers.py's swish_, under the user's name) and
# its template
USER_MODULE = '''
from helpers import swish_
from dnnpy.templates import layer_template

BETA = 0.3


class cli_swish_(swish_):
    pass


cli_swish = layer_template("cli_swish", cli_swish_)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "cli_user_layers.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "cli_user_layers"
    sys.modules.pop("cli_user_layers", None)


def test_test_layer_of_a_user_layer(user_module, capsys):
    assert main(["test-layer", f"{user_module}:cli_swish_(BETA)", "--dtype", "float64"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert main(["test-layer", "cli_swish_(0.5)", "--import", user_module]) == 0
    assert main(["test-layer", "cli_swish_(0.5)"]) == 1
    assert "MODULE:EXPR" in capsys.readouterr().err
    assert main(["test-layer", "no_such_module_xyz:relu_()"]) == 1
    assert "cannot import the module 'no_such_module_xyz'" in capsys.readouterr().err


def test_info_of_a_net_with_user_layers(user_module, tmp_path, capsys):
    path = tmp_path / "mine.dnnpy"
    expr = "loss_multiclass_log[fc[3, cli_swish[input[float32]]]]"
    subprocess_code = (f"import numpy as np, dnnpy, {user_module}\n"
                       f"net = dnnpy.net_type_from_string({expr!r})()\n"
                       f"net([np.ones((2, 2), np.float32)])\n"
                       f"dnnpy.serialize(net, {str(path)!r})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(__file__),
                                                       os.path.dirname(os.path.dirname(dnnpy.__file__))]))
    subprocess.run([sys.executable, "-c", subprocess_code], env=env, check=True, timeout=120)
    if "cli_swish" not in dnnpy.templates._REGISTRY:        # not yet imported in this process
        assert main(["info", str(path)]) == 1
        err = capsys.readouterr().err
        assert "unknown template" in err and "import the module that defines it" in err
    assert main(["info", str(path), "--import", user_module]) == 0
    assert "cli_swish" in capsys.readouterr().out


def test_test_layer_of_random_layers_is_honest(capsys):
    assert main(["test-layer", "dropout_(0.5)"]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "random draws frozen" in out


@pytest.mark.parametrize("expr, shape, tagged", [
    ("scale_(tag1)", "2,3,1,1", "2,3,4,4"),
    ("scale_prev_(tag1)", "2,3,4,4", "2,3,1,1"),
    ("multm_prev_(tag1)", "2,3,4,3", "2,3,3,5"),
])
def test_test_layer_with_shapes(expr, shape, tagged, capsys):
    assert main(["test-layer", expr, "--input-shape", shape, "--tagged-shape", tagged]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "input shape (" in out and "tagged shape (" in out


def test_test_layer_shape_errors_suggest_the_options(capsys):
    assert main(["test-layer", "scale_(tag1)"]) == 1
    assert "--input-shape" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["test-layer", "relu_()", "--input-shape", "2,3"])
    assert "N,K,R,C" in capsys.readouterr().err


def test_info_of_files_that_are_not_nets(tmp_path, capsys):
    (tmp_path / "e").write_bytes(b"")
    assert main(["info", str(tmp_path / "e")]) == 1
    assert "empty" in capsys.readouterr().err
    (tmp_path / "p.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(30))
    assert main(["info", str(tmp_path / "p.png")]) == 1
    assert "PNG image" in capsys.readouterr().err
