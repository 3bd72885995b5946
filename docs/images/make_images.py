"""Draws the pictures of docs/data.md with dnnpy's own tools (numpy only).

    python docs/images/make_images.py

Every picture is made from generated data with fixed seeds, so running this again gives the
same files. Pixel noise is kept low so that the PNGs stay small."""

from pathlib import Path

import numpy as np

from dnnpy.data import SCENE_KINDS, dlib_rand, make_scene, make_scenes
from dnnpy.geometry import rectangle
from dnnpy.image import (chip_details, chip_dims, disturb_colors, draw_rectangle, extract_image_chip,
                         jitter_image, overlay, random_cropper, resize_image, rotate_image,
                         save_png, tile_image_grid)

HERE = Path(__file__).resolve().parent
RED, YELLOW = (255, 0, 0), (255, 255, 0)


def boxed(img, boxes):
    for b in boxes:
        img = draw_rectangle(img, b.rect, YELLOW if b.ignore else RED)
    return img


def scenes_picture():
    """Four scenes of every kind with their boxes (ignored in yellow), and the class labels
    below (grey levels per class, white = label_to_ignore)."""
    scenes = make_scenes(4, seed=1, kinds=SCENE_KINDS, num_objects=(4, 6), size=(18, 40),
                         distractors=(1, 2), ignore_below=22, ignore_regions=1, noise=4)
    top = [boxed(s.image, s.boxes) for s in scenes]
    labels = []
    for s in scenes:
        grey = np.where(s.class_labels == 65535, 255, s.class_labels * 25).astype(np.uint8)
        labels.append(np.repeat(grey[..., None], 3, -1))
    save_png(tile_image_grid([top, labels], pad=2), HERE / "scenes.png")


def random_crops_picture():
    """random_cropper on two smiley scenes: 12 crops of 80x80, kept boxes red, ignored yellow."""
    scenes = make_scenes(2, seed=2, kinds=("smiley",), num_objects=(3, 5), size=(16, 36),
                         ignore_below=20, noise=4)
    cropper = random_cropper(chip_dims=(80, 80), min_object_length_long_dim=18,
                             min_object_length_short_dim=18, max_rotation_degrees=30, seed=0)
    crops, crop_boxes = cropper(12, [s.image for s in scenes], [s.boxes for s in scenes])
    tiles = [boxed(c, b) for c, b in zip(crops, crop_boxes)]
    save_png(tile_image_grid([tiles[:6], tiles[6:]], pad=2), HERE / "random_crops.png")


def chips_and_jitter_picture():
    """Top: chips of a smiley (straight, turned 0.4 and -0.8 rad) and rotate_image; middle:
    four jitter_image copies; bottom: three disturb_colors draws and an overlay mask."""
    sc = make_scene(5, kinds=("smiley",), num_objects=1, size=60, noise=4)
    r = sc.boxes[0].rect
    big = rectangle(r.l - 10, r.t - 10, r.r + 10, r.b + 10)
    chips = [extract_image_chip(sc.image, chip_details(big, chip_dims(64, 64), angle)) for angle in (0, 0.4, -0.8)]
    chips.append(resize_image(rotate_image(chips[0], 0.3)[0], 64, 64))
    rnd = dlib_rand(0)
    jitters = [jitter_image(chips[0], rnd) for _ in range(4)]
    colours = [chips[0].copy() for _ in range(3)]
    for i, c in enumerate(colours):
        disturb_colors(c, dlib_rand(i))                                     # in place, as dlib
    face = chips[0][..., 0].astype(int) - chips[0][..., 2] > 120          # yellow: red >> blue
    painted = overlay(chips[0].copy(), face, (0, 0, 255), 0.5)
    save_png(tile_image_grid([chips, jitters, colours + [painted]], pad=2), HERE / "chips_jitter.png")


if __name__ == "__main__":
    scenes_picture()
    random_crops_picture()
    chips_and_jitter_picture()
    for p in sorted(HERE.glob("*.png")):
        print(p.name, p.stat().st_size, "bytes")
