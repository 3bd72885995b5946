"""dlib's released model files: read into the declared types, written back byte for byte,
kept through dnnpy's own format, and refused (untouched net, named layer, byte offset) by a
type they do not match. Plus synthetic old-version records that need no model file.

The file tests skip, with a reason, when the PyPI package ``face_recognition_models`` (which
ships dlib_face_recognition_resnet_model_v1.dat and mmod_human_face_detector.dat) is absent.
"""

from __future__ import annotations

import importlib.util
import os
import re

import numpy as np
import pytest

import dnnpy
import dnnpy.models  # a submodule: not imported by dnnpy itself
from dnnpy import (CONV_MODE, SerializationError, affine_, con, con_, detector_window_details, fc,
                   fc_, input_rgb_image_pyramid, loss_metric_, loss_mmod_, loss_multiclass_log,
                   mmod_options, pyramid_down, relu, relu_)
from dnnpy.serialization import from_bytes, to_bytes
from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.visitors import net_layers


def _model_dir():
    try:
        spec = importlib.util.find_spec("face_recognition_models")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    # the package's __init__ needs pkg_resources; only its files are needed here
    return os.path.join(list(spec.submodule_search_locations)[0], "models")


def _model_file(name):
    folder = _model_dir()
    if folder is None:
        pytest.skip("face_recognition_models is not installed (pip install face_recognition_models)")
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        pytest.skip(f"face_recognition_models has no {name}")
    return path


FACE = "dlib_face_recognition_resnet_model_v1.dat"
DETECTOR = "mmod_human_face_detector.dat"


@pytest.fixture(scope="module")
def face_file():
    path = _model_file(FACE)
    with open(path, "rb") as f:
        return path, f.read()


@pytest.fixture(scope="module")
def detector_file():
    path = _model_file(DETECTOR)
    with open(path, "rb") as f:
        return path, f.read()


def _face_net(path=None):
    net = dnnpy.models.face_recognition_resnet_v1()()
    if path is not None:
        dnnpy.deserialize(path, net)
    return net


def _detector(path=None):
    net = dnnpy.models.mmod_face_detector()()
    if path is not None:
        dnnpy.deserialize(path, net)
    return net


def _chip(seed=0):
    return np.random.default_rng(seed).integers(0, 256, (150, 150, 3), dtype=np.uint8)


def _image(seed=1):
    return np.random.default_rng(seed).integers(0, 256, (120, 160, 3), dtype=np.uint8)


def _dets(net, img):
    # a low threshold so that a random image gives detections to compare
    return [(d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom(), d.detection_confidence)
            for d in net.process([img], -2.0)[0]]


# -- reading and writing back ------------------------------------------------------------

def test_models_is_a_submodule_not_top_level_names():
    import dnnpy.models as models
    assert models.face_recognition_resnet_v1 and models.mmod_face_detector
    assert not hasattr(dnnpy, "face_recognition_resnet_v1")


@pytest.mark.parametrize("which", ["face", "detector"])
def test_file_read_whole_and_written_back(which, face_file, detector_file, tmp_path):
    """The face file is written back byte for byte (its old record versions are kept). The
    detector file's bn_con2 records were read into the type's affine_ layers, which write
    themselves as dlib's affine_ does ("affine_2"); every other byte is the file's."""
    (path, data), make = (face_file, _face_net) if which == "face" else (detector_file, _detector)
    net = make(path)                        # deserialize consumes every byte or raises
    expected = data if which == "face" else _bn_records_as_affine(data, net)
    assert to_bytes(net, "dlib", clean=False) == expected
    out = tmp_path / "again.dat"
    dnnpy.serialize(net, str(out), format="dlib", clean=False)
    assert out.read_bytes() == expected
    again = make(str(out))                  # and that file reads back to the same net
    assert to_bytes(again, "dlib", clean=False) == expected
    # a trailing byte is refused: the whole file must be the net
    with pytest.raises(SerializationError):
        from_bytes(data + b"\0", make())


def _bn_records_as_affine(data, net):
    """``data`` with each bn_con2 record replaced by the affine_2 record of the affine_ layer
    read from it (in file order: the net's affine_ layers from the input up)."""
    details = [n.layer_details() for n in reversed(net_layers(net)) if hasattr(n, "layer_details")]
    affines = [d for d in details if isinstance(d, affine_)]
    marker = _s("bn_con2")
    out, pos = bytearray(), 0
    for layer in affines:
        start = data.index(marker, pos)
        r = Reader(data, "detector", start)
        dnnpy.bn_(CONV_MODE).deserialize(r)       # skip the record
        out += data[pos:start] + _ser(layer)
        pos = r.pos
    assert data.find(marker, pos) < 0, "more bn_con2 records than affine_ layers"
    out += data[pos:]
    assert out.count(_s("affine_2")) == data.count(marker) and len(affines) == data.count(marker)
    return bytes(out)


def test_face_file_through_dnnpy_format(face_file, tmp_path):
    path, data = face_file
    net = _face_net(path)
    dnnpy.serialize(net, str(tmp_path / "face.dnnpy"))
    back = dnnpy.load(str(tmp_path / "face.dnnpy"))
    assert to_bytes(back, "dlib", clean=False) == data   # the old record versions survive dnnpy's format
    chips = [_chip(0), _chip(1)]
    want, got = net(chips), back(chips)
    assert len(got) == 2 and got[0].shape == (128,) and got[0].dtype == np.float32
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_detector_file_through_dnnpy_format(detector_file, tmp_path):
    path, data = detector_file
    net = _detector(path)
    dnnpy.serialize(net, str(tmp_path / "det.dnnpy"))
    back = dnnpy.load(str(tmp_path / "det.dnnpy"))
    assert to_bytes(back, "dlib", clean=False) == to_bytes(net, "dlib", clean=False)
    img = _image()
    want = _dets(net, img)
    raw = net.subnet().get_output().host_read().copy()
    got = _dets(back, img)
    assert want and got == want
    np.testing.assert_array_equal(back.subnet().get_output().host_read(), raw)


# -- mismatched files ----------------------------------------------------------------------

def _refused(path, net, *patterns):
    """Reading ``path`` into ``net`` fails with a message matching every pattern, and
    ``net`` is bit-for-bit what it was (its dlib bytes are unchanged)."""
    before = to_bytes(net, "dlib", clean=False)
    with pytest.raises(SerializationError) as e:
        dnnpy.deserialize(path, net)
    msg = str(e.value)
    for p in patterns:
        assert re.search(p, msg), (p, msg)
    assert to_bytes(net, "dlib", clean=False) == before
    return msg


def test_face_file_into_the_detector_type(face_file, detector_file):
    net = _detector(detector_file[0])       # a net with parameters, to see they stay
    _refused(face_file[0], net, re.escape(FACE), r"layer<0>", r"expected 'loss_mmod_'",
             r"found 'loss_metric_2'", r"at byte offset 2\)")
    assert to_bytes(net, "dlib", clean=False) == to_bytes(_detector(detector_file[0]), "dlib", clean=False)


def test_detector_file_into_the_face_type(face_file, detector_file):
    net = _face_net(face_file[0])
    _refused(detector_file[0], net, re.escape(DETECTOR), r"layer<0>",
             r"expected 'loss_metric_' or 'loss_metric_2'", r"found 'loss_mmod_'",
             r"at byte offset 2\)")
    assert to_bytes(net, "dlib", clean=False) == face_file[1]


def test_face_file_into_a_face_type_with_another_filter_count(face_file):
    """As dlib, num_filters comes from the file: a type whose con has another count reads the
    file and computes the released net's descriptors. A different window is refused."""
    path, _ = face_file
    text = repr(dnnpy.models.face_recognition_resnet_v1())
    assert "con[128, 3, 3, 2, 2" in text
    changed = dnnpy.net_type_from_string(text.replace("con[128, 3, 3, 2, 2", "con[96, 3, 3, 2, 2"))
    net = changed()
    dnnpy.deserialize(path, net)
    ref = dnnpy.models.face_recognition_resnet_v1()()
    dnnpy.deserialize(path, ref)
    chip = _chip()
    np.testing.assert_array_equal(np.asarray(net([chip])), np.asarray(ref([chip])))

    other = dnnpy.net_type_from_string(text.replace("con[128, 3, 3, 2, 2", "con[128, 5, 5, 2, 2"))()
    other([chip])                          # set up: random parameters that must stay
    index = next(i for i, n in enumerate(net_layers(other))
                 if isinstance(n, dnnpy.add_layer) and isinstance(n.layer_details(), con_)
                 and n.layer_details().nr() == 5)
    _refused(path, other, re.escape(FACE), rf"layer<{index}>: con_:", r"nr", r"byte offset \d+\)")


# -- synthetic records: old versions written back (no model file needed) -------------------

def _ser(obj):
    w = Writer()
    obj.serialize(w)
    return w.bytes()


def _read(obj, data):
    r = Reader(data, "test")
    obj.deserialize(r)
    assert r.at_end()
    return obj


def _s(text):
    w = Writer()
    w.string(text)
    return w.bytes()


def _ints(*values):
    w = Writer()
    for v in values:
        w.int(v)
    return w.bytes()


def _tensor(arr):
    w = Writer()
    arr = np.asarray(arr, dtype=np.float32)
    w.int(2)
    for d in (arr.shape + (1, 1, 1, 1))[:4]:
        w.int(d)
    w.raw(arr.astype("<f4").tobytes())
    return w.bytes()


def _mults(*values):
    w = Writer()
    for v in values:
        w.float64(v)
    return w.bytes()


def _con_4_record(num_filters=2, k=1, n=3):
    """A con_4 record built by hand: params, num_filters, nr, nc, strides, paddings, filter
    and bias alias shapes, 4 multipliers; no use_bias, no use_relu."""
    size = num_filters * k * n * n
    params = np.arange(size + num_filters, dtype=np.float32).reshape(-1, 1, 1, 1) / 7
    return (_s("con_4") + _tensor(params) + _ints(num_filters, n, n, 1, 1, n // 2, n // 2)
            + _ints(1, num_filters, k, n, n) + _ints(1, 1, num_filters, 1, 1)
            + _mults(1, 1, 1, 0))


def test_con_4_written_back_and_refused_when_it_cannot_hold_the_state():
    data = _con_4_record()
    layer = _read(con_(2, 3, 3, 1, 1), data)
    assert _ser(layer) == data
    fused = _read(con_(2, 3, 3, 1, 1), data)
    fused.enable_relu()
    with pytest.raises(SerializationError, match=r"con_: cannot write the 'con_4' record.*use_relu"):
        _ser(fused)
    no_bias = _read(con_(2, 3, 3, 1, 1), data)
    no_bias.disable_bias()
    with pytest.raises(SerializationError, match=r"'con_4'.*use_bias.*'con_6'"):
        _ser(no_bias)
    no_bias._dlib_version = None            # what the message offers: dlib's newest record
    assert _ser(no_bias).startswith(_s("con_6"))
    # a con_5 record: use_bias kept, no use_relu
    five = _s("con_5") + data[len(_s("con_4")):] + b"1"
    assert _ser(_read(con_(2, 3, 3, 1, 1), five)) == five


def test_new_layers_write_dlibs_newest_versions():
    assert _ser(con_(2, 3, 3, 1, 1)).startswith(_s("con_6"))
    assert _ser(fc_(3)).startswith(_s("fc_3"))
    assert _ser(relu_()) == _s("relu_2") + b"0"
    assert _ser(affine_(CONV_MODE)).startswith(_s("affine_2"))
    assert _ser(input_rgb_image_pyramid[pyramid_down(6)]()).startswith(_s("input_rgb_image_pyramid2"))
    assert _ser(loss_metric_()).startswith(_s("loss_metric_2"))
    assert _ser(loss_mmod_(mmod_options(detector_windows=[detector_window_details(40, 40)])))[
        len(_s("loss_mmod_")):].startswith(_ints(4))


def test_fc_2_relu_affine_written_back():
    fc2 = (_s("fc_2") + _ints(2, 3) + _tensor(np.arange(6).reshape(3, 2)) + _ints(1, 3, 2, 1, 1)
           + _ints(1, 0, 0, 0, 0) + _ints(1) + _mults(1, 1, 1, 0))
    layer = _read(fc_(2, 1), fc2)
    assert _ser(layer) == fc2
    layer.disable_bias()
    with pytest.raises(SerializationError, match=r"'fc_2'.*use_bias"):
        _ser(layer)
    r = _read(relu_(), _s("relu_"))
    assert _ser(r) == _s("relu_")
    r.disable()
    with pytest.raises(SerializationError, match=r"relu_: cannot write the 'relu_' record"):
        _ser(r)
    aff = (_s("affine_") + _tensor(np.array([2, 3, 0.5, -1]).reshape(4, 1))
           + _ints(1, 1, 2, 1, 1) + _ints(1, 1, 2, 1, 1) + _ints(CONV_MODE))
    a = _read(affine_(), aff)
    assert _ser(a) == aff
    a.disable()
    with pytest.raises(SerializationError, match=r"affine_: cannot write the 'affine_' record"):
        _ser(a)


def test_pyramid_v1_mmod_options_v1_and_loss_metric_v1_written_back():
    pyr = input_rgb_image_pyramid[pyramid_down(6)]
    w = Writer()
    for v in (122.782, 117.001, 104.298):
        w.float32(v)
    v1 = _s("input_rgb_image_pyramid") + w.bytes()
    layer = _read(pyr(), v1)
    assert (layer.pyramid_padding, layer.pyramid_outer_padding) == (10, 11)
    assert _ser(layer) == v1
    layer.set_pyramid_padding(4)
    with pytest.raises(SerializationError, match=r"no paddings"):
        _ser(layer)

    opts = (_ints(1, 80, 80) + _mults(1, 1, 0.5) + _mults(0.33828, 1) + _mults(0.5, 1))
    loss = _read(loss_mmod_(), _s("loss_mmod_") + opts)
    assert _ser(loss) == _s("loss_mmod_") + opts
    loss.options.detector_windows.append(detector_window_details(40, 40))
    with pytest.raises(SerializationError, match=r"version 1 holds one unlabeled detector window"):
        _ser(loss)
    # v2 windows of record version 1 (no label) stay version 1
    opts2 = (_ints(2, 1, 1, 80, 80) + _mults(1, 1, 0.5) + _mults(0.33828, 1) + _mults(0.5, 1))
    assert _ser(_read(loss_mmod_(), _s("loss_mmod_") + opts2)) == _s("loss_mmod_") + opts2

    m = _read(loss_metric_(0.04, 0.6), _s("loss_metric_"))
    assert _ser(m) == _s("loss_metric_")
    m.margin = 0.2
    with pytest.raises(SerializationError, match=r"margin 0.1"):
        _ser(m)


def test_net_read_error_names_the_layer_and_leaves_the_net_untouched():
    net_type = loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, dnnpy.input[np.float32]]]]]
    src = net_type()
    x = np.random.default_rng(0).standard_normal((5, 5)).astype(np.float32)
    src([x])
    data = to_bytes(src, "dlib", clean=False)
    other = loss_multiclass_log[fc[3, relu[con[2, 5, 5, 1, 1, dnnpy.input[np.float32]]]]]()
    other([x])
    before = to_bytes(other, "dlib", clean=False)
    with pytest.raises(SerializationError, match=r"layer<3>: con_: .*nr.*byte offset \d+\)"):
        from_bytes(data, other)
    assert to_bytes(other, "dlib", clean=False) == before



def test_net_write_error_names_the_layer():
    net = loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, dnnpy.input[np.float32]]]]]()
    net([np.zeros((5, 5), np.float32)])
    details = net_layers(net)[3].layer_details()
    details._dlib_version = "con_4"         # as if read from a con_4 record
    details.enable_relu()
    with pytest.raises(SerializationError, match=r"^layer<3>: con_: cannot write the 'con_4' record"):
        to_bytes(net, "dlib")
