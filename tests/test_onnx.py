"""dnnpy.onnx.export against onnxruntime: every row of the layer test table
(tests/layer_cases) exported inside a small net over ``input_tensor``, the model checked
with ``onnx.checker`` (full check) and run by onnxruntime, whose output must equal dnnpy's.

Tolerance: |ort - dnnpy| <= 1e-5 * max(1, max|dnnpy|). Both compute in float32 but in a
different order (oneDNN/numpy vs ORT's kernels; erf, exp, resize weights), so results
differ by a few float32 ulps of the largest value (observed <= ~2e-6 on N(0,1) inputs):
1e-5 relative to the output's scale leaves room for rounding and none for a wrong mapping
(the wrong resize, softmaxm or pooling mappings are off by 0.4 or more).

Rows that must not export as they are (dropout, bn) are checked as refusals, and in the
forms the exporter offers (dropout="multiply", bn="running_stats") against what dnnpy
computes for that form. Skipped without onnx / onnxruntime (the ``onnx`` test extra)."""

import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import dnnpy
from dnnpy.core import add_layer, add_loss_layer, add_tag_layer, input_node
from dnnpy.layers.base import computational_layer, seeded_initialisation
from dnnpy.layers.dropout import dropout_
from dnnpy.layers.norm import bn_
from dnnpy.onnx import export, export_bytes, onnx_export_error
from helpers import ort_session

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

RTOL = 1e-5


def _cases():
    cases = {}
    folder = Path(__file__).parent / "layer_cases"
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
        module = importlib.import_module(f"layer_cases.{info.name}")
        cases.update(module.CASES)
    return cases


CASES = _cases()
DEFAULT_SHAPE = (2, 3, 5, 6)


def _on(details, sub):
    return add_layer(details, sub)


def _input():
    return input_node(dnnpy.input_tensor())


def _tag(tag, sub):
    """A tag node of template ``tag`` (``dnnpy.layer(sub, tag)`` finds nodes by template)."""
    node = add_tag_layer(tag.id, sub)
    node.template = tag
    return node


def _build(name, details, shape):
    """(net, input shape): the row's layer over input_tensor, with what its tags need below."""
    tags = list(getattr(details, "tags", ())) or (
        [details.tag] if hasattr(details, "tag") and hasattr(details.tag, "id") else [])
    n, k, h, w = shape
    if not tags:
        return _on(details, _input()), shape
    if type(details).__name__ == "concat_":
        # each tag at its own level, all the same nr x nc, different k
        sub = _input()
        for i, t in enumerate(sorted(set(tags), key=lambda t: t.id)):
            sub = _tag(t, _on(dnnpy.con_(2 + i, 1, 1, 1, 1), sub))
        return _on(details, sub), shape
    tid = tags[0]
    kind = type(details).__name__
    if kind == "resize_prev_to_tagged_":
        return _on(details, _on(dnnpy.max_pool_(2, 2, 2, 2), _tag(tid, _input()))), shape
    if kind == "scale_":        # tagged: the input; subnet: (N, k, 1, 1) scales
        return _on(details, _on(dnnpy.sig_(), _on(dnnpy.avg_pool_(0, 0, 1, 1), _tag(tid, _input())))), shape
    if kind == "scale_prev_":   # tagged: (N, k, 1, 1) scales; subnet: (N, k, h, w)
        sub = _tag(tid, _on(dnnpy.avg_pool_(0, 0, 1, 1), _input()))
        return _on(details, _on(dnnpy.resize_to_(h, w), sub)), shape
    if kind == "multm_prev_":   # tagged (N, k, L, P); subnet (N, k, M, L)
        return _on(details, _on(dnnpy.resize_to_(4, h), _tag(tid, _input()))), shape
    # add_prev / mult_prev: the tagged level has its own k (zero padding along k)
    return _on(details, _on(dnnpy.con_(k + 1, 1, 1, 1, 1), _tag(tid, _input()))), shape


def _data(name, shape, seed=0):
    rnd = np.random.default_rng(seed)
    if name.startswith("embeddings"):
        # tokens in and out of range, fractions, negatives above -1 (token 0)
        return rnd.uniform(-2.5, 14.5, shape).astype(np.float32)
    return rnd.standard_normal(shape).astype(np.float32)


def _run_ort(data, x):
    sess = ort_session(data)
    return sess.run(None, {"input": x})


def _check(model_bytes):
    m = onnx.load_from_string(model_bytes)
    onnx.checker.check_model(m, full_check=True)
    return m


def _close(got, want):
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL * scale)


REFUSED = {"dropout": dropout_, "bn": bn_}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_table_row(name):
    _check_row(name, 17)


def test_layer_table_opset_21():
    """The whole table again at opset 21 (single Mish / Gelu nodes, IR version 10), in one
    test: a row costs ~4 ms, a parametrized test more than that in pytest's bookkeeping."""
    failed = []
    for name in CASES:
        try:
            _check_row(name, 21)
        except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001 - reported with the row's name
            failed.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
    assert not failed, "\n".join(failed)


def _check_row(name, opset):
    make, shape, *_ = CASES[name]
    shape = shape or DEFAULT_SHAPE
    with seeded_initialisation(1):
        net, shape = _build(name, make(), shape)
        x = _data(name, shape)
        net.forward(x)                       # sets the layer up (lazy parameters)
    details = net.layer_details()
    options = {}
    for option, cls in REFUSED.items():
        if isinstance(details, cls):
            with pytest.raises(onnx_export_error, match=r"layer<0> \(\w+\) cannot be exported.*inference_copy"):
                export_bytes(net, shape, opset=opset)
            options[option] = "multiply" if option == "dropout" else "running_stats"
    data = export_bytes(net, shape, opset=opset, **options)
    m = _check(data)
    assert m.opset_import[0].version == opset
    if isinstance(details, dropout_):
        want = x * (np.float32(1) - np.float32(details.get_drop_rate()))
    elif isinstance(details, bn_):
        # the running-statistics form is what dnnpy computes for one sample at a time
        want = np.concatenate([net.forward(x[i:i + 1]).numpy() for i in range(len(x))])
    else:
        want = net.forward(x).numpy()
    _close(_run_ort(data, x)[0], want)


def test_opset_21_and_fixed_batch():
    """Opset 21 (Mish, Gelu as single ops) and a fixed batch dimension."""
    net = _on(dnnpy.gelu_(), _on(dnnpy.mish_(), _on(dnnpy.con_(4, 3, 3, 1, 1), _input())))
    x = _data("", (3, 2, 6, 5))
    want = net.forward(x).numpy()
    data = export_bytes(net, x.shape, opset=21, batch=None)
    m = _check(data)
    assert {"Mish", "Gelu"} <= {n.op_type for n in m.graph.node}
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 3
    _close(_run_ort(data, x)[0], want)


def test_symbolic_batch_runs_other_batch_sizes():
    net = _on(dnnpy.fc_(3), _on(dnnpy.upsample_(2), _on(dnnpy.con_(2, 3, 3, 2, 2), _input())))
    x = _data("", (4, 3, 7, 6))
    want = net.forward(x).numpy()
    data = export_bytes(net, (3, 7, 6))
    m = _check(data)
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    _close(_run_ort(data, x)[0], want)
    _close(_run_ort(data, x[:1])[0], net.forward(x[:1]).numpy())


def test_classifier_input_layer_mode_labels_and_probabilities(tmp_path):
    """A trained-style classifier over input_rgb_image: uint8 NHWC images in the graph,
    mean subtraction and /256 inside, ArgMax labels equal to dnnpy's to_label."""
    net_type = dnnpy.loss_multiclass_log[dnnpy.fc[5, dnnpy.relu[dnnpy.affine[dnnpy.max_pool[
        3, 3, 2, 2, dnnpy.con[6, 3, 3, 1, 1, dnnpy.input_rgb_image]]]]]]
    net = net_type()
    imgs = np.random.default_rng(3).integers(0, 256, (6, 12, 10, 3), dtype=np.uint8)
    labels = net(imgs)
    scores = net.subnet()(imgs)
    path = tmp_path / "clf.onnx"
    export(net, path, (3, 12, 10), input_mode="input_layer", outputs=("scores", "labels", "probabilities"))
    m = _check(path.read_bytes())
    assert {p.key: p.value for p in m.metadata_props}["dnnpy.loss"] == "loss_multiclass_log_"
    s, lab, prob = ort_session(path).run(
        None, {"input": imgs})
    _close(s, scores)
    assert lab.dtype == np.int64 and list(lab) == list(labels)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    _close(prob, e / e.sum(axis=1, keepdims=True))


def test_residual_repeat_skip_and_inference_copy():
    """repeat (unrolled), tags, skips and add_prev; a bn net converted by inference_copy."""
    from dnnpy import add_prev1, bn_con, con, input_rgb_image, loss_metric, relu, repeat, skip1, tag1, tag2, avg_pool

    def block(sub):
        return relu[add_prev1[bn_con[con[4, 3, 3, 1, 1, relu[bn_con[con[4, 3, 3, 1, 1, tag1[sub]]]]]]]]

    net_type = loss_metric[dnnpy.fc_no_bias[8, avg_pool[2, 2, 2, 2, skip1[tag2[repeat[2, block, tag1[
        con[4, 3, 3, 1, 1, input_rgb_image]]]]]]]]
    train = net_type()
    imgs = np.random.default_rng(4).integers(0, 256, (3, 9, 8, 3), dtype=np.uint8)
    train(imgs)
    net = dnnpy.inference_copy(train)
    want = net(imgs)
    with pytest.raises(onnx_export_error, match=r"layer<\d+> \(bn_\).*inference_copy"):
        export_bytes(train, (3, 9, 8))
    data = export_bytes(net, (3, 9, 8), input_mode="input_layer")
    _check(data)
    _close(_run_ort(data, imgs)[0], np.stack(want).reshape(3, 8, 1, 1))


def test_refusals_name_the_layer_and_leave_no_file(tmp_path):
    path = tmp_path / "x.onnx"
    net = _on(dnnpy.relu_(), _on(dnnpy.dropout_(0.3), _on(dnnpy.con_(2, 3, 3, 1, 1), _input())))
    net.forward(_data("", (2, 3, 4, 4)))
    with pytest.raises(onnx_export_error, match=r"layer<1> \(dropout_\).*random mask"):
        export(net, path, (3, 4, 4))
    assert not path.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(onnx_export_error, match="input_shape is required"):
        export(net, path)
    fresh = _on(dnnpy.fc_(3), _on(dnnpy.relu_(), _on(dnnpy.con_(2, 3, 3, 1, 1), _input())))
    with pytest.raises(onnx_export_error, match=r"layer<0> \(fc_\) has never run"):
        export(fresh, path, (3, 4, 4))
    with pytest.raises(onnx_export_error, match="opset"):
        export_bytes(net, (3, 4, 4), opset=12)

    class custom_(computational_layer):
        def forward(self, sub, output):
            output.copy_size(sub.get_output())
            output.assign(sub.get_output())

    odd = _on(custom_(), _input())
    odd.forward(_data("", (1, 1, 2, 2)))
    with pytest.raises(onnx_export_error, match=r"layer<0> \(custom_\).*no ONNX converter"):
        export(odd, path, (1, 2, 2))
    pyr = _on(dnnpy.con_(1, 3, 3, 1, 1), input_node(dnnpy.input_rgb_image_pyramid[dnnpy.pyramid_down[6]]()))
    pyr.forward(_data("", (1, 3, 8, 8)))
    with pytest.raises(onnx_export_error, match=r"layer<1> .*input layer.*pyramid.*input_mode='tensor'"):
        export(pyr, path, (3, 8, 8), input_mode="input_layer")
    export(pyr, path, (3, 8, 8))            # the tiled tensor itself is fine
    assert [p.name for p in tmp_path.iterdir()] == ["x.onnx"]
    path.unlink()
    assert list(tmp_path.iterdir()) == []


def test_input_rgb_image_pair_tensor_mode_only():
    """The pair input refuses in-graph preprocessing (2N samples from N pairs), naming the
    layer; its (2N, 3, H, W) tensor exports and runs with any even batch."""
    net = _on(dnnpy.fc_(3), _on(dnnpy.con_(2, 3, 3, 1, 1), input_node(dnnpy.input_rgb_image_pair())))
    rnd = np.random.default_rng(9)
    pairs = [(rnd.integers(0, 256, (5, 6, 3), dtype=np.uint8), rnd.integers(0, 256, (5, 6, 3), dtype=np.uint8))
             for _ in range(2)]
    x = net.to_tensor(pairs).numpy()
    assert x.shape == (4, 3, 5, 6)
    want = net.forward(x).numpy()
    with pytest.raises(onnx_export_error, match=r"layer<2> \(input_rgb_image_pair\).*2N samples.*input_mode='tensor'"):
        export_bytes(net, (3, 5, 6), input_mode="input_layer")
    data = export_bytes(net, (3, 5, 6))
    _check(data)
    _close(_run_ort(data, x)[0], want)


def test_loss_without_labels_head_refuses():
    net = add_loss_layer(dnnpy.loss_mean_squared_multioutput_(), _on(dnnpy.fc_(2), _input()))
    net.forward(_data("", (1, 3, 2, 2)))
    with pytest.raises(onnx_export_error, match="no in-graph 'labels'"):
        export_bytes(net, (3, 2, 2), outputs=("scores", "labels"))


def test_cli_export(tmp_path, capsys):
    """``dnnpy export``: a dnnpy-format file, and a dlib-format one with --type."""
    from dnnpy.cli import main
    net_type = dnnpy.loss_multiclass_log[dnnpy.fc[3, dnnpy.relu[dnnpy.con[2, 3, 3, 1, 1, dnnpy.input[np.uint8]]]]]
    net = net_type()
    imgs = np.random.default_rng(8).integers(0, 256, (2, 6, 5), dtype=np.uint8)
    labels = net(imgs)
    dnnpy.serialize(net, str(tmp_path / "n.dnnpy"))
    dnnpy.serialize(net, str(tmp_path / "n.dat"))          # dlib's bytes: no type in the file
    out = tmp_path / "n.onnx"
    assert main(["export", str(tmp_path / "n.dnnpy"), "-o", str(out), "--input-shape", "1,6,5",
                 "--input-mode", "input_layer", "--outputs", "scores,labels"]) == 0
    assert "wrote" in capsys.readouterr().out
    lab = ort_session(out).run(["labels"], {"input": imgs})[0]
    assert list(lab) == list(labels)
    assert main(["export", str(tmp_path / "n.dat"), "-o", str(out), "--type", repr(net_type),
                 "--input-shape", "1,6,5"]) == 0
    scores = ort_session(out).run(
        None, {"input": net.to_tensor(imgs).numpy()})[0]
    _close(scores, net.subnet()(imgs))
    assert main(["export", str(tmp_path / "n.dat"), "-o", str(tmp_path / "m.onnx")]) == 1
    assert "--type" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "n.dnnpy"), "-o", str(tmp_path / "m.onnx")]) == 1
    assert "input_shape is required" in capsys.readouterr().err
    assert not (tmp_path / "m.onnx").exists()


def test_input_shape_that_does_not_fit_the_parameters_is_refused():
    """An input_shape other than the one the net was set up with: a refusal naming the layer
    and both shapes, not a model that onnxruntime rejects (or runs) later."""
    net = _on(dnnpy.fc_(3), _on(dnnpy.con_(2, 3, 3, 1, 1), _input()))
    net.forward(_data("", (2, 3, 6, 5)))
    with pytest.raises(onnx_export_error, match=r"layer<0> \(fc_\).*set up for 60 inputs.*\(2, 7, 6\)"):
        export_bytes(net, (3, 7, 6))
    with pytest.raises(onnx_export_error, match=r"layer<1> \(con_\).*3 input channels.*\(4, 6, 5\)"):
        export_bytes(net, (4, 6, 5))
    lin = _on(dnnpy.linear_(2), _input())
    lin.forward(_data("", (1, 2, 3, 4)))
    with pytest.raises(onnx_export_error, match=r"layer<0> \(linear_\).*set up for 4 inputs"):
        export_bytes(lin, (2, 3, 5))
    up = _on(dnnpy.cont_(2, 3, 3, 2, 2), _input())
    up.forward(_data("", (1, 2, 3, 3)))
    with pytest.raises(onnx_export_error, match=r"layer<0> \(cont_\).*2 input channels"):
        export_bytes(up, (3, 3, 3))
    # a whole-input filter keeps its set-up size on a larger input, as forward does
    whole = _on(dnnpy.con_(2, 0, 0, 1, 1), _input())
    whole.forward(_data("", (1, 1, 3, 4)))
    x = _data("", (2, 1, 5, 6))
    want = whole.forward(x).numpy()
    assert want.shape == (2, 2, 3, 3)
    _close(_run_ort(export_bytes(whole, (1, 5, 6)), x)[0], want)
