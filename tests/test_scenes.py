"""dnnpy.data.make_scene (the examples' generated detection/segmentation data)."""

import math

import numpy as np
import pytest

from dnnpy import label_to_ignore
from dnnpy.data import (SCENE_KINDS, dlib_rand, load_image_dataset, make_scene, make_scenes,
                        write_scene_dataset)

ALL = dict(kinds=SCENE_KINDS, num_objects=(4, 6), size=(14, 34), distractors=(1, 2),
           ignore_below=20, ignore_regions=1)


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(6, seed=3, **ALL)


def test_deterministic_per_seed(scenes):
    again = make_scenes(6, seed=3, **ALL)
    for a, b in zip(scenes, again):
        assert np.array_equal(a.image, b.image) and np.array_equal(a.class_labels, b.class_labels)
        assert [(x.rect, x.label, x.ignore) for x in a.boxes] == [(x.rect, x.label, x.ignore) for x in b.boxes]
    other = make_scenes(1, seed=4, **ALL)[0]
    assert not np.array_equal(other.image, scenes[0].image)
    # a dlib_rand is advanced by one draw per scene; an int seed is used as it is
    rnd = dlib_rand(3)
    assert np.array_equal(make_scene(rnd, **ALL).image, scenes[0].image)
    assert np.array_equal(make_scene(rnd, **ALL).image, scenes[1].image)
    assert np.array_equal(make_scene(7).image, make_scene(7).image)


def test_boxes_labels_and_images_agree(scenes):
    kinds_seen = set()
    for sc in scenes:
        rows, cols = sc.image.shape[:2]
        assert sc.image.shape == (120, 160, 3) and sc.image.dtype == np.uint8
        assert sc.class_labels.dtype == sc.instance_labels.dtype == np.uint16
        assert sc.class_names == ("background",) + SCENE_KINDS
        assert set(np.unique(sc.class_labels)) <= set(range(len(SCENE_KINDS) + 1)) | {label_to_ignore}
        taken = np.zeros((rows, cols), int)
        for j, b in enumerate(sc.boxes):
            r = b.rect
            assert 0 <= r.l <= r.r < cols and 0 <= r.t <= r.b < rows
            taken[r.t:r.b + 1, r.l:r.r + 1] += 1
            if b.label == "crowd":
                assert b.ignore and (sc.class_labels[r.t:r.b + 1, r.l:r.r + 1] == label_to_ignore).all()
                continue
            kinds_seen.add(b.label)
            aspect = r.width() / r.height()
            want = {"car": 2, "car_front": 2, "truck": 1 / 1.5}.get(b.label, 1)
            assert abs(math.log(aspect / want)) < 0.15, (b.label, r)
            # the object's pixels: its instance id, its class, only inside its box
            mine = sc.instance_labels == j + 1
            ys, xs = np.nonzero(mine)
            assert len(ys) > 0.3 * r.area()
            assert ys.min() >= r.t and ys.max() <= r.b and xs.min() >= r.l and xs.max() <= r.r
            assert (sc.class_labels[mine] == SCENE_KINDS.index(b.label) + 1).all()
            # the 1-pixel ignore ring: every 4-neighbour of the object outside it is ignored
            grown = mine.copy()
            grown[1:] |= mine[:-1]; grown[:-1] |= mine[1:]; grown[:, 1:] |= mine[:, :-1]; grown[:, :-1] |= mine[:, 1:]
            assert (sc.instance_labels[grown & ~mine] == label_to_ignore).all()
            assert b.ignore == (math.sqrt(r.area()) < ALL["ignore_below"] - 1) or \
                abs(math.sqrt(r.area()) - ALL["ignore_below"]) < 2     # rounding of the box
        assert taken.max() == 1                                       # no two boxes overlap
        # pixels more than one pixel from every box (beyond the rings) are background
        near = np.pad(taken > 0, 1)
        near = near[:-2, 1:-1] | near[2:, 1:-1] | near[1:-1, :-2] | near[1:-1, 2:] | (taken > 0)
        near[:-1, :-1] |= near[1:, 1:]; near[1:, 1:] |= near[:-1, :-1].copy()
        near[:-1, 1:] |= near[1:, :-1]; near[1:, :-1] |= near[:-1, 1:].copy()
        assert (sc.class_labels[~near] == 0).all() and (sc.instance_labels[~near] == 0).all()
    assert kinds_seen >= {"smiley", "car", "truck"}


def test_objects_stand_out_from_the_background():
    """A detector can only learn what is visible: an object's pixels differ from the
    background around it by far more than the noise."""
    sc = make_scene(11, kinds=("disc", "square"), num_objects=3, size=30, noise=12)
    for j, b in enumerate(sc.boxes):
        mine = sc.instance_labels == j + 1
        r = b.rect
        around = np.zeros_like(mine)
        around[max(r.t - 6, 0):r.b + 7, max(r.l - 6, 0):r.r + 7] = True
        around &= sc.instance_labels == 0
        diff = np.abs(sc.image[mine].mean(0) - sc.image[around].mean(0)).max()
        assert diff > 40, diff


def test_clutter_zero_is_a_plain_grey_background():
    sc = make_scene(2, num_objects=0, noise=0, clutter=0)
    assert (sc.image == 120).all() and not sc.boxes
    bold = make_scene(2, num_objects=0, noise=0, clutter=2).image.astype(float)
    assert bold.std() > 1.5 * make_scene(2, num_objects=0, noise=0).image.astype(float).std()


def test_dataset_round_trip(tmp_path, scenes):
    path = write_scene_dataset(tmp_path / "data", scenes[:3], "testing.xml")
    assert path.name == "testing.xml" and (tmp_path / "data" / "testing_000.png").is_file()
    images, boxes = load_image_dataset(path)
    assert len(images) == 3
    for img, bb, sc in zip(images, boxes, scenes):
        assert np.array_equal(img, sc.image)
        assert [(b.rect, b.label, b.ignore) for b in bb] == [(b.rect, b.label, b.ignore) for b in sc.boxes]


@pytest.mark.parametrize("kwargs, match", [
    (dict(kinds=("smiley", "dog")), "unknown kinds"),
    (dict(kinds="smiley"), "sequence of kind names"),
    (dict(rows=10), "at least 16x16"),
    (dict(size=(30, 200)), "larger than"),
    (dict(size=(30, 20)), "min <= max"),
    (dict(num_objects=-1), "num_objects"),
    (dict(noise=-1), "noise"),
    (dict(clutter=-1), "clutter"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_scene(0, **kwargs)
    with pytest.raises(TypeError, match="dlib_rand or an int"):
        make_scene(1.5)
