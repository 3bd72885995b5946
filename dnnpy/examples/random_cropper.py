"""dlib's random_cropper_ex: what ``random_cropper`` makes of an object detection data set.

    python -m dnnpy.examples.random_cropper [--xml FILE] [--out dnnpy_example_output]

A detector trained with ``loss_mmod`` needs batches of equally sized images; dlib's
``random_cropper`` cuts them from a data set: each crop is centred on a random non-ignored box
(or, a fraction of the time, is a random background patch), randomly scaled, moved, turned and
mirrored, with the boxes mapped into the crop and marked ``ignore`` where the crop shows them
badly (cut off, or too small). dlib's example loads ``examples/faces/training.xml``, makes 1000
crops with::

    cropper.set_chip_dims(400,400);
    cropper.set_max_object_size(0.8);
    cropper.set_min_object_size(80,60);
    cropper.set_randomly_flip(true);
    cropper.set_max_rotation_degrees(50);
    cropper.set_background_crops_fraction(0.2);

and shows them one by one in a window, kept boxes red and ignored boxes yellow.

This example does the same on generated smiley scenes (``dnnpy.data.make_scenes``, 160x120,
objects of 24..48 pixels, some smaller ones ignored) written as imglab XML + PNG and read back
with ``load_image_dataset`` (or on ``--xml FILE``, e.g. dlib's faces, with dlib's settings).
dlib's settings are scaled to the smaller scenes (chip 400 -> 96, min object size 80x60 -> 20x15,
the rest unchanged). It makes ``--crops`` (1000) crops, checks every one (the chip size, every
kept box overlaps the chip, and every non-ignored box lies inside it and is at least the
minimum size), prints the counts, and writes the first 16 as a 4x4 grid PNG with kept boxes in
red and ignored boxes in yellow. The default run takes about 2 s.
"""

from __future__ import annotations

import numpy as np

from dnnpy.data import load_image_dataset, make_scenes, write_scene_dataset
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.geometry import rectangle
from dnnpy.image import draw_rectangle, random_cropper, save_png, tile_image_grid


def make_cropper(chip, min_long, min_short, seed):
    """dlib's example's settings, with the sizes given."""
    cropper = random_cropper(seed=seed)
    cropper.set_chip_dims(chip, chip)
    cropper.set_max_object_size(0.8)
    cropper.set_min_object_size(min_long, min_short)
    cropper.set_randomly_flip(True)
    cropper.set_max_rotation_degrees(50)
    cropper.set_background_crops_fraction(0.2)
    return cropper


def check_crops(crops, crop_boxes, cropper):
    """The invariants of every crop (raises AssertionError naming the crop); returns counts."""
    rows, cols = cropper.get_chip_dims().rows, cropper.get_chip_dims().cols
    chip = rectangle(0, 0, cols - 1, rows - 1)
    lo, sh = cropper.get_min_object_length_long_dim(), cropper.get_min_object_length_short_dim()
    kept = ignored = empty = 0
    for i, (img, boxes) in enumerate(zip(crops, crop_boxes)):
        assert img.shape[:2] == (rows, cols), f"crop {i}: shape {img.shape}, chip is {rows}x{cols}"
        empty += not any(not b.ignore for b in boxes)
        for b in boxes:
            r = b.rect
            assert not chip.intersect(r).is_empty(), f"crop {i}: box {r} is outside the chip"
            if b.ignore:
                ignored += 1
                continue
            kept += 1
            # min_object_coverage is 1: a box partly outside the chip is ignored
            assert chip.contains(r), f"crop {i}: kept box {r} is not inside the {cols}x{rows} chip"
            w, h = r.width(), r.height()
            assert min(w, h) >= sh and max(w, h) >= lo, f"crop {i}: kept box {r} is under {lo}x{sh}"
    return {"crops": len(crops), "kept_boxes": kept, "ignored_boxes": ignored,
            "crops_without_objects": empty}


def draw_crop(img, boxes):
    img = np.array(img, copy=True)
    for b in boxes:
        draw_rectangle(img, b.rect, (255, 255, 0) if b.ignore else (255, 0, 0))
    return img


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--crops", type=int, default=1000, help="crops to make (dlib's: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes and the cropper")
    parser.add_argument("--xml", metavar="FILE", default=None,
                        help="an imglab XML data set (e.g. dlib's examples/faces/training.xml), "
                             "cropped with dlib's sizes (400x400 chips, objects >= 80x60)")
    args = parser.parse_args(argv)
    if args.quick:
        args.crops = 32
    if args.crops < 1:
        parser.error(f"--crops must be at least 1, got {args.crops}")
    out = out_dir(args.out)
    timer = Timer()

    if args.xml:
        xml, chip, min_size = args.xml, 400, (80, 60)
    else:
        scenes = make_scenes(8, seed=args.seed, rows=120, cols=160, kinds=("smiley",),
                             num_objects=(2, 5), size=(16, 48), ignore_below=20, distractors=(0, 2))
        xml = write_scene_dataset(out / "cropper_scenes", scenes, "training.xml")
        print(f"wrote {len(scenes)} scenes to {xml}")
        chip, min_size = 96, (20, 15)
    images, boxes = load_image_dataset(xml)
    print(f"loaded {len(images)} images with {sum(map(len, boxes))} boxes from {xml}")

    cropper = make_cropper(chip, *min_size, seed=args.seed)
    print(cropper)
    crops, crop_boxes = cropper(args.crops, images, boxes)
    counts = check_crops(crops, crop_boxes, cropper)
    print(f"{counts['crops']} crops of {chip}x{chip}: {counts['kept_boxes']} kept boxes (all inside "
          f"the chip and at least {min_size[0]}x{min_size[1]}), {counts['ignored_boxes']} ignored "
          f"boxes (all overlapping the chip), {counts['crops_without_objects']} crops without a "
          f"kept box")

    shown = [draw_crop(img, b) for img, b in zip(crops[:16], crop_boxes[:16])]
    shown += [np.zeros_like(shown[0])] * (-len(shown) % 4)     # a full last row
    grid = [shown[i:i + 4] for i in range(0, len(shown), 4)]
    png_path = save_png(tile_image_grid(grid), out / "random_crops.png")
    print(f"wrote {len(shown)} crops (kept boxes red, ignored yellow) to {png_path}")
    print(f"done in {timer():.1f} s")
    return {**counts, "png_path": png_path, "chip": chip, "xml": xml}


if __name__ == "__main__":
    main()
