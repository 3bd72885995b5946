"""dnn_mmod_dog_hipsterizer (dlib's example, on generated smileys with a landmark regression net) in
--quick mode (one shared run; it trains dnn_mmod --quick first, the detector file being
missing), its pasting helpers, and the scene generator's smiley parts it is trained on."""

import contextlib
import io

import numpy as np
import pytest

import dnnpy
from dnnpy.data import SMILEY_PARTS, load_image_dataset_metadata, make_scene, write_scene_dataset
from dnnpy.examples import dnn_mmod_dog_hipsterizer as ex
from dnnpy.geometry import rectangle
from dnnpy.image import find_similarity_transform, get_mapping_to_chip, load_image


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hips")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = ex.main(["--quick", "--quiet", "--out", str(out)])
    return out, r, buf.getvalue()


def test_quick_run(quick_run):
    out, r, text = quick_run
    assert r["training_run"] is not None and "training one first with dnn_mmod --quick" in text
    assert "mean landmark error" in text
    net = dnnpy.deserialize(r["landmark_net_path"], ex.landmark_net_type()())
    chip = np.zeros((ex.CHIP, ex.CHIP, 3), np.uint8)
    assert np.asarray(net([chip])).shape == (1, 6)
    png = load_image(r["png_path"])
    assert png.shape[0] >= 120 and png.shape[1] >= 2 * 160
    g = load_image(r["glasses_png"], mode="RGBA")
    assert g.shape[2] == 4 and (g[..., 3] == 0).any() and (g[..., 3] == 255).any()


def test_scene_parts_lie_on_the_smileys_features(tmp_path):
    sc = make_scene(3, kinds=("smiley", "disc"), num_objects=(4, 4), noise=0, clutter=0)
    assert len(sc.parts) == len(sc.boxes)
    smileys = [(b, p) for b, p in zip(sc.boxes, sc.parts) if b.label == "smiley"]
    assert smileys and all(not p for b, p in zip(sc.boxes, sc.parts) if b.label != "smiley")
    for b, p in smileys:
        assert set(p) == set(SMILEY_PARTS)
        for x, y in p.values():
            assert b.rect.contains(int(round(x)), int(round(y)))
            assert sc.image[int(round(y)), int(round(x))].max() < 80      # the dark eyes and mouth
        assert p["left_eye"][0] < p["right_eye"][0] and p["mouth"][1] > p["left_eye"][1]
    # written as imglab parts (whole pixels), with boxes added after make_scene kept
    sc.boxes.append(dnnpy.mmod_rect(rectangle(0, 0, 9, 9), label="extra"))
    meta = load_image_dataset_metadata(write_scene_dataset(tmp_path, [sc]))
    boxes = meta.images[0].boxes
    assert len(boxes) == len(sc.boxes) and not boxes[-1].parts
    for box, (b, p) in zip(boxes, zip(sc.boxes, sc.parts)):
        assert box.parts == {k: (int(np.floor(x + 0.5)), int(np.floor(y + 0.5))) for k, (x, y) in p.items()}


def test_encode_decode_round_trip():
    rect = rectangle(10, 20, 45, 55)
    parts = ex.box_parts(rect)
    to_chip = get_mapping_to_chip(ex._chip(rect))
    back = ex.decode(ex.encode(parts, to_chip), to_chip)
    assert max(ex.part_errors(back, parts)) < 1e-4
    assert np.abs(ex.encode(parts, to_chip)).max() < 1


def test_paste_blends_by_alpha_where_the_transform_puts_it():
    img = np.full((20, 20, 3), 200, np.uint8)
    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[..., :3] = 0
    rgba[:2, ..., 3] = 255                                     # top half opaque black
    tform = find_similarity_transform([(0, 0), (3, 0)], [(10, 10), (13, 10)])   # a shift
    ex.paste(img, rgba, tform)
    # bilinear sampling (dlib's) needs the next column too: the last one falls outside
    assert (img[10:12, 10:13] == 0).all() and (img[10:12, 13] == 200).all()
    assert (img[13:, :] == 200).all() and (img[:10] == 200).all()


def test_help():
    with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(io.StringIO()):
        ex.main(["--help"])
    assert e.value.code == 0


def test_dlibs_hipsterizer_file_is_read_whole_and_used(tmp_path):
    """``mmod_dog_hipsterizer.dat`` holds a net, a shape predictor and two RGBA images
    (dlib's ``matrix<rgb_alpha_pixel>``): all four are read, and the landmarks place the
    glasses and the moustache."""
    import numpy as np

    import dnnpy
    from dnnpy.examples import dnn_mmod_dog_hipsterizer as hip
    from dnnpy.serialization import Writer
    from test_shape_predictor import _synthetic

    net_type = dnnpy.loss_mean_squared[dnnpy.fc[1, dnnpy.input[np.float32]]]
    net = net_type()
    net([np.zeros((1, 2), np.float32)])
    rng = np.random.default_rng(0)
    glasses = rng.integers(0, 256, (6, 9, 4), dtype=np.uint8)
    mustache = rng.integers(0, 256, (3, 8, 4), dtype=np.uint8)
    w = Writer()
    for img in (glasses, mustache):
        w.int(-img.shape[0]), w.int(-img.shape[1])
        w.raw(img.tobytes())
    path = tmp_path / "hipster.dat"
    path.write_bytes(dnnpy.to_bytes(net, "dlib") + _synthetic(parts=6) + w.bytes())
    got_net, sp, g, m = hip.read_hipsterizer_file(path, net_type)
    assert sp.num_parts() == 6 and np.array_equal(g, glasses) and np.array_equal(m, mustache)
    photo = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    shape = sp(photo, dnnpy.rectangle(10, 10, 60, 50))
    out = hip.hipsterize_dog(photo.copy(), shape, dnnpy.image.pyramid_up(g), dnnpy.image.pyramid_up(m))
    assert out.shape == photo.shape and not np.array_equal(out, photo)
    path.write_bytes(dnnpy.to_bytes(net, "dlib") + _synthetic(parts=6))
    with pytest.raises(dnnpy.SerializationError, match="glasses"):
        hip.read_hipsterizer_file(path, net_type)
