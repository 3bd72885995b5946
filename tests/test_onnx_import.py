"""dnnpy.onnx.import_model: ONNX graphs (torch's exporter, dnnpy's own) read as dnnpy nets,
checked against onnxruntime on the same graph.

Tolerance: |dnnpy - ort| <= 1e-5 * max(1, max|ort|): both compute in float32 in a different
order (observed <= 6e-8 here); a wrong mapping (padding, layout, a transposed weight) is off
by far more. Skipped without onnx / onnxruntime; the torch-built models without torch."""

import io
import re

import numpy as np
import pytest

import dnnpy
from dnnpy import cli, cpp
from dnnpy.examples import autoencoder, dnn_introduction
from dnnpy.onnx import export_bytes, import_model, onnx_import_error
from dlib_cpp import onnx_models
from helpers import ort_session

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

RTOL = 1e-5


def _close(ours, ref):
    ours, ref = np.asarray(ours, np.float32).reshape(ref.shape), np.asarray(ref)
    assert np.abs(ours - ref).max() <= RTOL * max(1.0, float(np.abs(ref).max()))


def _run(data, x):
    return ort_session(data).run(None, {ort_session(data).get_inputs()[0].name: x})[0]


def _torch_onnx(model, x, **kwargs):
    torch = pytest.importorskip("torch")
    f = io.BytesIO()
    torch.onnx.export(model.eval(), torch.from_numpy(x), f, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}}, opset_version=17, dynamo=False, **kwargs)
    return f.getvalue()


def test_torch_lenet_equals_onnxruntime():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    lenet = nn.Sequential(nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2),
                          nn.Conv2d(6, 16, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                          nn.Linear(784, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    x = np.random.default_rng(0).standard_normal((3, 1, 28, 28)).astype(np.float32)
    data = _torch_onnx(lenet, x)
    net = import_model(data)
    assert repr(net.net_type) == ("fc[10, relu[fc[84, relu[fc[120, max_pool[2, 2, 2, 2, relu[con[16, 5, 5, 1, 1, "
                                  "max_pool[2, 2, 2, 2, relu[con[6, 5, 5, 1, 1, input_tensor]]]]]]]]]]]")
    _close(net(x), _run(data, x))
    # with a loss on top: the labels are the argmax of the graph's output
    classifier = import_model(data, loss="multiclass_log")
    assert list(classifier(x)) == list(_run(data, x).argmax(axis=1))


def test_torch_chain_with_bn_pools_and_activations_equals_onnxruntime():
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.bn = nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8)
            self.c2, self.fc = nn.Conv2d(8, 4, 3, 1, 1), nn.Linear(4 * 8 * 8, 5)

        def forward(self, x):
            x = torch.relu(self.bn(self.c1(x)))
            x = nn.functional.leaky_relu(self.c2(x), 0.2)
            x = nn.functional.avg_pool2d(x, 2, 2)
            x = x.view(x.size(0), -1)          # exported as Shape/Gather/Unsqueeze/Concat/Reshape
            return torch.softmax(torch.sigmoid(self.fc(x)), dim=1)

    torch.manual_seed(1)
    m = Net()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-1, 1), m.bn.running_var.uniform_(0.5, 2), m.bn.weight.uniform_(0.5, 1.5)
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    for kept in (False, True):          # bn folded into the conv by the exporter, or kept
        data = _torch_onnx(m, x, do_constant_folding=not kept,
                           training=torch.onnx.TrainingMode.PRESERVE if kept else torch.onnx.TrainingMode.EVAL)
        net = import_model(data)
        assert ("affine[" in repr(net.net_type)) == kept
        _close(net(x), _run(data, x))
    # kept as bn_con, with torch's running statistics, for further training: its inference copy
    # computes the graph, and a training step runs on it
    net = import_model(data, bn="bn", loss="multiclass_log")
    assert "bn_con[" in repr(net.net_type)
    bn = next(n.layer_details() for n in net.subnet_node().layers()
              if type(getattr(n, "layer_details", lambda: None)()).__name__ == "bn_")
    np.testing.assert_allclose(np.array(bn.running_variances).reshape(-1), m.bn.running_var.numpy(), rtol=1e-6)
    _close(dnnpy.inference_copy(net).subnet_node().forward(dnnpy.resizable_tensor(x)).host_read(),
           _run(data, x))
    trainer = dnnpy.dnn_trainer(net, dnnpy.sgd())
    trainer.train_one_step(list(x), [0, 1])
    with pytest.raises(ValueError, match="bn must be"):
        import_model(data, bn="batchnorm")


def test_torch_resnet_blocks_equal_onnxruntime():
    """Residual blocks: identity shortcuts (add_prev1 over tag1) and downsampling ones with a
    1x1 convolution and batch norm on the shortcut (add_prev2 over skip1 and tag2), bn kept
    as affine, a global average pool and an fc."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out)
            self.c2, self.b2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out)
            self.down = None if stride == 1 and c_in == c_out else nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x):
            y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(), Block(8, 8, 1),
                          Block(8, 16, 2), Block(16, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(16, 4))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5), m.running_var.uniform_(0.5, 2), m.weight.uniform_(0.5, 1.5)
    x = np.random.default_rng(4).standard_normal((2, 3, 16, 16)).astype(np.float32)
    for kept in (False, True):
        data = _torch_onnx(model, x, do_constant_folding=not kept,
                           training=torch.onnx.TrainingMode.PRESERVE if kept else torch.onnx.TrainingMode.EVAL)
        net = import_model(data)
        text = repr(net.net_type)
        assert text.count("add_prev1[") == 2 and text.count("add_prev2[") == 1 and "skip1[" in text
        _close(net(x), _run(data, x))


def test_torch_concatenated_branches_equal_onnxruntime():
    """Concat over the channels of three branches from one tensor (one of them the tensor
    itself): dlib's concat3 over tags 4-6, the branches after skip3 back to tag3."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.a = nn.Conv2d(3, 6, 3, 1, 1), nn.Conv2d(6, 4, 1)
            self.b1, self.b2 = nn.Conv2d(6, 5, 3, 1, 1), nn.Conv2d(5, 5, 3, 1, 1)
            self.fc = nn.Linear(15 * 8 * 8, 3)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            y = torch.cat([torch.relu(self.a(x)), self.b2(torch.relu(self.b1(x))), x], dim=1)
            return self.fc(nn.functional.max_pool2d(torch.relu(y), 2, 2).flatten(1))

    torch.manual_seed(5)
    x = np.random.default_rng(8).standard_normal((2, 3, 16, 16)).astype(np.float32)
    data = _torch_onnx(Net(), x)
    net = import_model(data)
    assert "concat3[tag4, tag5, tag6, tag6[skip3[tag5[" in repr(net.net_type)
    _close(net(x), _run(data, x))
    assert "dlib::concat3<dlib::tag4,dlib::tag5,dlib::tag6,dlib::tag6<dlib::skip3<" in cpp.cpp_type(net)


def test_torch_bilinear_resizes_equal_onnxruntime():
    """Resize (bilinear, corners aligned) by whole factors and to a size: upsample, resize_to."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(2, 3, 3, 1, 1)

        def forward(self, x):
            x = nn.functional.interpolate(torch.relu(self.c(x)), scale_factor=2, mode="bilinear",
                                          align_corners=True)
            return nn.functional.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)

    torch.manual_seed(6)
    x = np.random.default_rng(9).standard_normal((2, 2, 5, 6)).astype(np.float32)
    data = _torch_onnx(Net(), x)
    net = import_model(data)
    assert repr(net.net_type).startswith("resize_to[7, 9, upsample[2, relu[con[")
    _close(net(x), _run(data, x))
    assert cpp.cpp_type(net).startswith("dlib::resize_to<7,9,dlib::upsample<2,dlib::relu<")
    half_pixel = _torch_onnx(nn.Upsample(scale_factor=2, mode="bilinear"), x)
    with pytest.raises(onnx_import_error, match="corners aligned"):
        import_model(half_pixel)


@pytest.mark.parametrize("make", [dnn_introduction.net_type, autoencoder.net_type], ids=["lenet", "autoencoder"])
def test_dnnpy_exports_read_back(make):
    """dnnpy's own export, imported: the same layers (over input_tensor) and outputs."""
    net = make()
    shape = (1, 28, 28) if make is dnn_introduction.net_type else (3, 64, 64)
    x = np.random.default_rng(2).uniform(0, 1, (2,) + shape).astype(np.float32)
    ours = net.subnet_node().forward(dnnpy.resizable_tensor(x)).host_read().copy()
    data = export_bytes(net, shape)
    back = import_model(data)
    _close(back(x), ours)
    _close(back(x), _run(data, x))
    # the same layers, the input layer now input_tensor (the graph takes the tensor)
    original = re.sub(r"input(\[uint8\]|_rgb_image)", "input_tensor", repr(net.net_type.subnet))
    assert repr(back.net_type) == original


def _model(nodes, inits, in_shape=(1, 2, 6, 6), out="y", opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", *in_shape[1:]])],
        [helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def test_refusals_name_the_node_and_why(tmp_path):
    w = np.ones((3, 2, 3, 3))
    conv = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1])], {"w": w})
    _close(import_model(conv)(np.ones((1, 2, 6, 6), np.float32)), _run(conv, np.ones((1, 2, 6, 6), np.float32)))
    cases = {
        "pads": helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 0, 0, 1]),
        "group": helper.make_node("Conv", ["x", "w1"], ["y"], name="c", group=2),
        "dilations": helper.make_node("Conv", ["x", "w"], ["y"], name="c", dilations=[2, 2]),
        "no dlib layer": helper.make_node("Hardmax", ["x"], ["y"], name="h"),
    }
    for why, node in cases.items():
        with pytest.raises(onnx_import_error, match=rf"node (c|h) \({node.op_type}\).*{why}"):
            import_model(_model([node], {"w": w, "w1": np.ones((2, 1, 3, 3))}))
    residual = _model([helper.make_node("Relu", ["x"], ["a"], name="r"),
                       helper.make_node("Add", ["a", "x"], ["y"], name="add")], {})
    x = np.random.default_rng(3).standard_normal((2, 2, 6, 6)).astype(np.float32)
    assert repr(import_model(residual).net_type) == "add_prev1[relu[tag1[input_tensor]]]"
    _close(import_model(residual)(x), _run(residual, x))
    product = _model([helper.make_node("Relu", ["x"], ["a"], name="r"),
                      helper.make_node("Mul", ["a", "x"], ["y"], name="mul")], {})
    with pytest.raises(onnx_import_error, match=r"node mul \(Mul\): reads 2 tensors"):
        import_model(product)
    with pytest.raises(onnx_import_error, match="opset 9"):
        import_model(_model([helper.make_node("Relu", ["x"], ["y"])], {}, opset=9))
    path = tmp_path / "cut.onnx"
    path.write_bytes(conv[:len(conv) // 2])
    with pytest.raises(onnx_import_error, match=r"cut\.onnx: not a readable ONNX model"):
        import_model(path)
    with pytest.raises(onnx_import_error, match="cannot read"):
        import_model(tmp_path / "missing.onnx")
    with pytest.raises(onnx_import_error, match="no loss named"):
        import_model(conv, loss="nonsense")


def test_import_command_writes_dlibs_file_and_the_cpp_declaration(tmp_path, capsys):
    """``dnnpy import`` writes the net in dlib's format, which dnnpy reads back with the type
    it printed, and the C++ declaration beside it (compiled against dlib in the dlib_cpp
    suite: tests/dlib_cpp/test_onnx_import_in_dlib.py)."""
    w = np.random.default_rng(6).standard_normal((3, 2, 3, 3))
    data = _model([helper.make_node("Conv", ["x", "w"], ["c"], name="c", pads=[1, 1, 1, 1]),
                   helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["r", "c"], ["y"])],
                  {"w": w})
    (tmp_path / "m.onnx").write_bytes(data)
    assert cli.main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.dat")]) == 0
    text = capsys.readouterr().out
    declaration = ("using net_type = dlib::add_prev1<dlib::relu<dlib::tag1<dlib::con<3,3,3,1,1,"
                   "dlib::input_tensor>>>>;")
    assert declaration in text and declaration in (tmp_path / "m.hpp").read_text()
    net = import_model(data)
    back = dnnpy.deserialize(tmp_path / "m.dat", net.net_type())
    x = np.random.default_rng(7).standard_normal((2, 2, 6, 6)).astype(np.float32)
    _close(back(x), _run(data, x))
    assert cpp.cpp_type(import_model(data, loss="multiclass_log")).startswith("dlib::loss_multiclass_log<")
    with pytest.raises(ValueError, match=r"layer<1> bn_: no C\+\+ declaration"):
        cpp.cpp_type(dnnpy.fc[2, dnnpy.bn_con[dnnpy.input_tensor]])


def test_arithmetic_with_constants_is_an_affine_and_pads_before_adds_are_dropped():
    """Mul, Add, Sub, Div of the tensor and a constant (a scalar, one value per channel, or
    one per element of a sample) read as dlib's affine, merged when consecutive; a zero Pad
    that only makes two branches meet at an Add is dropped (add_prev pads so); other Pads
    are refused, naming the node."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    per_channel = rng.uniform(0.5, 2, (1, 2, 1, 1))
    chain = _model([helper.make_node("Mul", ["x", "g"], ["a"], name="mul"),
                    helper.make_node("Add", ["a", "b"], ["s"], name="add"),
                    helper.make_node("Sub", ["s", "half"], ["d"], name="sub"),
                    helper.make_node("Div", ["d", "four"], ["e"], name="div"),
                    helper.make_node("Relu", ["e"], ["f"]),
                    helper.make_node("Mul", ["f", "grid"], ["y"], name="grid")],
                   {"g": per_channel, "b": rng.standard_normal((2, 1, 1)), "half": 0.5, "four": 4.0,
                    "grid": rng.standard_normal((2, 6, 6))})
    net = import_model(chain)
    assert repr(net.net_type) == "affine[relu[affine[0, input_tensor]]]"    # FC_MODE (the default), CONV_MODE
    _close(net(x), _run(chain, x))
    # a block whose shortcut is a strided average, zero-padded to the block's channels
    w = rng.standard_normal((4, 2, 3, 3))
    down = _model([helper.make_node("Conv", ["x", "w", "cb"], ["c"], name="c", pads=[1, 1, 1, 1], strides=[2, 2]),
                   helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("Pad", ["p", "pads"], ["q"], name="pad"),
                   helper.make_node("Add", ["c", "q"], ["y"])],
                  {"w": w, "cb": rng.standard_normal(4)})
    down = onnx.load_from_string(down)
    down.graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 2, 0, 0], np.int64), "pads"))
    data = down.SerializeToString()
    net = import_model(data)
    assert repr(net.net_type) == ("add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[con[4, 3, 3, 2, 2, 1, 1, "
                                  "tag1[input_tensor]]]]]]")
    _close(net(x), _run(data, x))
    alone = _model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], {})
    alone = onnx.load_from_string(alone)
    alone.graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 1, 0, 0], np.int64), "pads"))
    with pytest.raises(onnx_import_error, match=r"node pad \(Pad\).*Add"):
        import_model(alone.SerializeToString())
    with pytest.raises(onnx_import_error, match=r"node div \(Div\): divides a constant by the tensor"):
        import_model(_model([helper.make_node("Div", ["four", "x"], ["y"], name="div")], {"four": 4.0}))


def test_layer_normalization_is_dlibs_layer_norm():
    """LayerNormalization over each sample's (C, H, W) (torch's nn.LayerNorm of that shape)
    is dlib's layer_norm; a per-channel scale and shift after it join its gamma and beta; a
    scale that varies within a channel is refused."""
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self, affine):
            super().__init__()
            self.c = torch.nn.Conv2d(2, 4, 3, 1, 1)
            self.ln = torch.nn.LayerNorm((4, 6, 6), elementwise_affine=affine)
            self.g = torch.nn.Parameter(torch.rand(1, 4, 1, 1) + 0.5)

        def forward(self, x):
            return torch.relu(self.ln(self.c(x)) * self.g + 0.25)

    torch.manual_seed(3)
    x = np.random.default_rng(9).standard_normal((2, 2, 6, 6)).astype(np.float32)
    data = _torch_onnx(Net(False), x)
    net = import_model(data)
    assert repr(net.net_type) == "relu[layer_norm[con[4, 3, 3, 1, 1, input_tensor]]]"
    _close(net(x), _run(data, x))
    varying = Net(True)
    with torch.no_grad():
        varying.ln.weight.uniform_(0.5, 1.5)
    with pytest.raises(onnx_import_error, match=r"LayerNormalization\): a scale or bias that varies within a channel"):
        import_model(_torch_onnx(varying, x))


@pytest.mark.parametrize("name", ["gelu", "silu", "mish"])
def test_activations_written_as_several_nodes_are_recognised(name):
    """torch writes GELU as Div, Erf, Add, Mul, Mul and SiLU as x * Sigmoid(x): a pointwise
    function of one tensor through several nodes that equals one of dlib's activations is that
    layer (tanh-approximated GELU is not dlib's gelu, and x * x is no activation: refused)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    act = {"gelu": F.gelu, "silu": F.silu, "mish": F.mish}[name]

    class Net(torch.nn.Module):
        def __init__(self, f):
            super().__init__()
            self.c, self.f = torch.nn.Conv2d(2, 4, 3, 1, 1), f

        def forward(self, x):
            return self.f(self.c(x))

    torch.manual_seed(4)
    x = np.random.default_rng(10).standard_normal((2, 2, 6, 6)).astype(np.float32)
    data = _torch_onnx(Net(act), x)
    net = import_model(data)
    assert repr(net.net_type) == f"{name}[con[4, 3, 3, 1, 1, input_tensor]]"
    _close(net(x), _run(data, x))
    for other in (lambda t: F.gelu(t, approximate="tanh"), lambda t: t * t):
        with pytest.raises(onnx_import_error, match="reads 2 tensors"):
            import_model(_torch_onnx(Net(other), x))


def test_torch_autoencoder_equals_onnxruntime():
    """The seed autoencoder's shape in torch (a strided convolution, a transposed one back):
    ConvTranspose reads as dlib's cont."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(3, 16, 4, 2), nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2), nn.ReLU())
    x = np.random.default_rng(11).uniform(0, 1, (2, 3, 64, 64)).astype(np.float32)
    data = _torch_onnx(model, x)
    net = import_model(data)
    assert repr(net.net_type) == "relu[cont[3, 4, 4, 2, 2, relu[con[16, 4, 4, 2, 2, input_tensor]]]]"
    _close(net(x), _run(data, x))


def test_nested_branches_equal_onnxruntime():
    """Blocks inside blocks: a residual whose branch holds a residual and an inception-style
    concat, and a U-Net's skips (a concat whose branch holds another concat); the inner
    blocks take tag ids the outer ones do not use, as dlib finds the nearest tagN."""
    torch = pytest.importorskip("torch")
    nn, F = torch.nn, torch.nn.functional

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(4, 4, 3, 1, 1), nn.Conv2d(4, 4, 3, 1, 1)
            self.p, self.q = nn.Conv2d(4, 2, 1), nn.Conv2d(4, 2, 3, 1, 1)
            self.c = nn.Conv2d(4, 4, 3, 1, 1)

        def forward(self, x):
            inner = F.relu(self.a(x))
            inner = inner + F.relu(self.b(inner))                   # a residual in the branch
            inner = torch.cat([self.p(inner), self.q(inner)], 1)    # then an inception block
            return F.relu(x + self.c(inner))                       # the outer residual

    torch.manual_seed(6)
    x = np.random.default_rng(12).standard_normal((2, 4, 8, 8)).astype(np.float32)
    data = _torch_onnx(Nested(), x)
    _close(import_model(data)(x), _run(data, x))
    unet = onnx_models.onnx_bytes(torch, "unet")          # the U-Net dlib's C++ also runs
    xu = np.random.default_rng(13).standard_normal((2,) + onnx_models.MODELS["unet"][1]).astype(np.float32)
    _close(import_model(unet)(xu), _run(unet, xu))
    text = repr(import_model(_torch_onnx(Nested(), x)).net_type)
    # the outer residual tags the input tag1; the inner one, inside its branch, takes tag2
    assert text.startswith("relu[add_prev1[con[4, 3, 3, 1, 1, concat2[tag4, tag5, ") and text.endswith(
        "tag3[add_prev2[relu[con[4, 3, 3, 1, 1, tag2[relu[con[4, 3, 3, 1, 1, tag1[input_tensor]]]]]]]]]]]]]]]]]")


@pytest.mark.parametrize("sdpa", [False, True], ids=["written-out", "sdpa"])
def test_torch_transformer_block_equals_onnxruntime(sdpa):
    """A pre-norm transformer block on (N, T, D) sequences (tests/dlib_cpp/onnx_models.py, which
    dlib's C++ also runs): causal multi-head attention, written out (view, transpose, matmul,
    scale, a -inf mask from a buffer, softmax, matmul) or torch's scaled_dot_product_attention
    (its scale computed from the shape, its mask folded), reads as dlib's multm_prev, softmaxm
    and tril_mask; the heads are split and joined by reshape_to and transpose; the RMS norms,
    written out, are rms_norm; the net takes the sequences as (N, 1, T, D)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(7)
    x = np.random.default_rng(14).standard_normal((3, 8, 16)).astype(np.float32)
    data = _torch_onnx(onnx_models.transformer(torch, sdpa=sdpa), x)
    net = import_model(data)
    text = repr(net.net_type)
    for part in ("multm_prev3[softmaxm[tril_mask[", "multm_prev4[", "rms_norm[", "linear_no_bias[48, ",
                 "slice[0, 0, 32, 1, 8, 16, ", "gelu[linear[64, "):
        assert part in text
    _close(net(x), _run(data, x))


def _transposed(perm, shape, flat=False):
    """A graph of one Transpose of an input of ``shape`` (``flat``: of the input (N, features)
    reshaped to ``shape`` first)."""
    out = tuple(shape[p] for p in perm)
    nodes = [helper.make_node("Transpose", ["r" if flat else "x"], ["y"], perm=list(perm))]
    inits = []
    if flat:
        nodes.insert(0, helper.make_node("Reshape", ["x", "s"], ["r"]))
        inits = [numpy_helper.from_array(np.array(shape, np.int64), "s")]
    given = (shape[0], int(np.prod(shape[1:]))) if flat else shape
    return helper.make_model(helper.make_graph(
        nodes, "t", [helper.make_tensor_value_info("x", 1, given)], [helper.make_tensor_value_info("y", 1, out)],
        inits), opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("flat", [False, True], ids=["alone", "after-reshape"])
@pytest.mark.parametrize("perm", [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2),
                                  (0, 3, 2, 1), (0, 2, 1)])
def test_every_transpose_within_a_sample_is_dlibs_transpose_and_reshape_to(perm, flat):
    """Each order of a sample's axes, alone and after a Reshape (which joins the first
    reshape_to of the way that starts with one: both ways of the orders that have two)."""
    shape = (2, 3, 4, 5)[:len(perm)]
    data = _transposed(perm, shape, flat)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    given = x.reshape(len(x), -1, 1, 1) if flat else x
    if perm == tuple(range(len(perm))) and not flat:
        with pytest.raises(onnx_import_error, match="computes nothing a dlib layer holds"):
            import_model(data)
        return
    net = import_model(data)
    assert set(re.findall(r"[a-z_]+(?=\[)", repr(net.net_type))) <= {"transpose", "reshape_to", "input"}
    want = x.transpose(perm)
    assert np.array_equal(np.asarray(net(given)).reshape(want.shape), want)
    with pytest.raises(onnx_import_error, match="batch axis stays first"):
        import_model(_transposed((1, 0, 2, 3), (2, 2, 4, 5)))


def test_attention_refusals_name_the_node_and_why():
    """What dlib's layers cannot express is refused: torch's nn.MultiheadAttention (its export
    moves the batch axis and folds it into the heads), an RMS norm over each token (dlib's
    rms_norm takes the whole sample), a mask that is not a triangle."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class MHA(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.MultiheadAttention(16, 4, batch_first=True)

        def forward(self, x):
            return self.a(x, x, x, need_weights=False)[0]

    class TokenNorm(nn.Module):
        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class Band(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.ones(8, 8).triu(2) + torch.ones(8, 8).tril(-2))

        def forward(self, x):
            return (x @ x.transpose(1, 2)).masked_fill(self.mask == 1, float("-inf")).softmax(-1)

    x = np.random.default_rng(15).standard_normal((2, 8, 16)).astype(np.float32)
    with pytest.raises(onnx_import_error, match=r"node .*\((Gather|Transpose|Reshape)\)"):
        import_model(_torch_onnx(MHA(), x))
    with pytest.raises(onnx_import_error, match="ReduceMean.*mean over all of a sample's values"):
        import_model(_torch_onnx(TokenNorm(), x))
    with pytest.raises(onnx_import_error, match=r"\(Where\): a mask that is not the part above a diagonal"):
        import_model(_torch_onnx(Band(), x))


def test_an_additive_mask_and_slices_read_as_tril_and_slice():
    """``scores + mask`` with a constant of 0 and -inf above a diagonal is tril_; ``x[..., a:b]``
    (Slice) is slice_."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 32)
            self.register_buffer("mask", torch.full((8, 8), float("-inf")).triu(2))

        def forward(self, x):
            y = self.lin(x)
            return torch.softmax(y[:, :, :16] @ y[:, :, 16:].transpose(1, 2) + self.mask, -1) @ x

    torch.manual_seed(8)
    x = np.random.default_rng(16).standard_normal((2, 8, 16)).astype(np.float32)
    data = _torch_onnx(Net(), x)
    net = import_model(data)
    text = repr(net.net_type)
    assert "tril_ (diag=1, diag_value=-inf), multm_prev" in text    # -inf above the diagonal
    assert "slice[0, 0, 16, 1, 8, 16, " in text and "slice[0, 0, 0, 1, 8, 16, " in text
    _close(net(x), _run(data, x))


def test_dnnpy_attention_exports_read_back():
    """dnnpy's own export of an attention block (dlib's slm_advanced layout: linear_no_bias,
    reshape_to, transpose, multm_prev, tril_mask, softmaxm, rms_norm) reads back to the same
    layers in the same order and equal outputs; the tag ids may differ (ONNX keeps no tags:
    the importer numbers its own)."""
    T, D, H = 6, 8, 2

    def qkv(s):
        return dnnpy.reshape_to[H, T, D // H, dnnpy.linear_no_bias[D, s]]

    inner = dnnpy.tag2[qkv(dnnpy.tag1[dnnpy.rms_norm[dnnpy.tag4[dnnpy.input_tensor]]])]
    inner = dnnpy.tag3[dnnpy.transpose[qkv(dnnpy.skip1[inner])]]
    inner = dnnpy.multm_prev3[qkv(dnnpy.skip1[inner])]
    net = dnnpy.add_prev4[dnnpy.linear[D, dnnpy.reshape_to[1, T, D, dnnpy.multm_prev2[
        dnnpy.softmaxm[dnnpy.tril_mask[inner]]]]]]()
    x = np.random.default_rng(17).standard_normal((2, 1, T, D)).astype(np.float32)
    ours = np.asarray(net(x))
    back = import_model(export_bytes(net, (1, T, D)))
    _close(back(x), ours)

    def layers_of(t):
        return re.sub(r"\b(tag|skip)\d+\[|\b(add_prev|multm_prev)\d+|\]", r"\2", repr(t))

    assert layers_of(back.net_type) == layers_of(net.net_type)


@pytest.mark.parametrize("opset", [17, 20])
def test_gelu_reads_back_at_every_opset(opset):
    """dnnpy writes gelu as erf nodes before opset 20 and as one Gelu node from 20 on; both
    read back as gelu."""
    net = dnnpy.gelu[dnnpy.fc[4, dnnpy.input_tensor]]()
    x = np.random.default_rng(18).standard_normal((2, 3, 1, 1)).astype(np.float32)
    ours = np.asarray(net(x))
    data = export_bytes(net, (3, 1, 1), opset=opset)
    back = import_model(data)
    assert repr(back.net_type) == "gelu[fc[4, input_tensor]]"
    _close(back(x), ours)


def test_dynamic_sizes_and_external_weights_are_refused():
    """An input whose size the graph leaves open (only the batch may be), and weights kept in
    external data files (not in the bytes given), are refused naming what to do."""
    relu = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([relu], "g", [helper.make_tensor_value_info("x", 1, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", 1, None)])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(onnx_import_error,
                       match=r"the input 'x' has shape \(None, 3, None, None\).*every dimension but N fixed"):
        import_model(data)
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    w.external_data.add(key="location", value="weights.bin")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([conv], "g", [helper.make_tensor_value_info("x", 1, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", 1, None)], [w])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(onnx_import_error, match="external data files"):
        import_model(data)


def test_review_cases_sequences():
    """A softmax over a sequence's T axis is refused (dlib's k is 1 there); a Split into equal
    parts follows ONNX's rule (ceil(dim / n) each, the last what is left); a constant added
    after a bias-free MatMul that is not one value per output (a positional table) is an
    affine, not the linear's bias."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    x = np.random.default_rng(19).standard_normal((2, 6, 10)).astype(np.float32)

    class OverT(nn.Module):
        def forward(self, t):
            return torch.softmax(t, dim=1)

    with pytest.raises(onnx_import_error, match=r"\(Softmax\): axis 1 of a rank-3 tensor"):
        import_model(_torch_onnx(OverT(), x))

    split = helper.make_model(helper.make_graph(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=2, num_outputs=3)], "s",
        [helper.make_tensor_value_info("x", 1, [2, 6, 10])], [helper.make_tensor_value_info("c", 1, None)]),
        opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()
    net = import_model(split)
    assert repr(net.net_type) == "slice[0, 0, 8, 1, 6, 2, input[float32]]"
    _close(net(x), _run(split, x))

    class Positional(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(10, 10, bias=False)
            self.pos = nn.Parameter(torch.randn(6, 10))

        def forward(self, t):
            return self.lin(t) + self.pos

    torch.manual_seed(9)
    data = _torch_onnx(Positional(), x)
    net = import_model(data)
    assert repr(net.net_type).startswith("affine[linear_no_bias[10, ")
    _close(net(x), _run(data, x))


def test_a_flatten_read_by_other_than_an_fc_is_a_reshape():
    # a Flatten (or Reshape to 2 axes) is dropped only where an fc reads it (dlib's fc flattens
    # itself); a softmax over the flat values needs them as (C*H*W, 1, 1)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for first in (helper.make_node("Flatten", ["x"], ["f"], name="f", axis=1),
                  helper.make_node("Reshape", ["x", "s"], ["f"], name="f")):
        m = onnx.load_from_string(_model(
            [first, helper.make_node("Softmax", ["f"], ["y"], name="s", axis=1)], {}, in_shape=x.shape))
        if first.op_type == "Reshape":
            m.graph.initializer.append(numpy_helper.from_array(np.array([-1, 60], np.int64), "s"))
        m = m.SerializeToString()
        _close(import_model(m)(x), _run(m, x))


def test_concat_over_a_sequences_t_axis_is_refused():
    # axis 1 of (N, T, D) is T, dlib's nr: concat_ joins k only
    m = _model([helper.make_node("Relu", ["x"], ["a"], name="r"),
                helper.make_node("Sigmoid", ["x"], ["b"], name="g"),
                helper.make_node("Concat", ["a", "b"], ["y"], name="c", axis=1)], {},
               in_shape=(2, 3, 4))
    with pytest.raises(onnx_import_error, match=r"node c \(Concat\).*axis 1 of a rank-3"):
        import_model(m)
