"""dlib's ``random_cropper`` (``dlib/image_transforms/random_cropper.h``): random training crops
for object detectors, each centred on a random non-ignored box (or, a fraction of the time, a
random background patch), randomly scaled, moved, turned and mirrored, with the boxes mapped
into the crop and marked ``ignore`` where the crop shows them badly.

A seeded cropper draws the same numbers in the same order as dlib's (dlib makes its crops in a
``parallel_for``, so with several threads its crop order varies; dnnpy makes them in order, as
dlib with one thread), so it gives dlib's crops. The image work is ``extract_image_chip``
(vectorised); the loop is over crops.
"""

from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from ..rand import dlib_rand
from ..geometry import (center, centered_drect, drectangle, get_rect, move_rect, rectangle,
                        round_point)
from .chips import chip_details, chip_dims, extract_image_chip, get_mapping_to_chip
from .interpolation import flip_rect_left_right
from .transforms import rectangle_transform

__all__ = ["random_cropper"]

_SETTINGS = ("chip_dims", "randomly_flip", "max_rotation_degrees", "min_object_length_long_dim",
             "min_object_length_short_dim", "max_object_size", "background_crops_fraction",
             "translate_amount", "min_object_coverage")


class random_cropper:
    """dlib's ``random_cropper``. Settings, with dlib's getters/setters, defaults and checks:

    ==============================  =========  ==========================================
    setting                         default    rule
    ==============================  =========  ==========================================
    ``chip_dims``                   300 x 300  ``set_chip_dims(rows, cols)`` or a chip_dims
    ``randomly_flip``               True
    ``max_rotation_degrees``        30         stored as ``abs``
    ``min_object_length_long_dim``  75         ``set_min_object_size(long, short)``,
    ``min_object_length_short_dim`` 30         ``0 < short <= long``
    ``max_object_size``             0.7        > 0
    ``background_crops_fraction``   0.5        in [0, 1]
    ``translate_amount``            0.10       >= 0
    ``min_object_coverage``         1.0        in (0, 1]
    ==============================  =========  ==========================================

    The constructor takes any of them as keywords (``min_object_length_long_dim`` and
    ``..._short_dim`` together), plus ``seed`` (``set_seed``) or ``rnd`` (a ``dlib_rand`` to
    draw from, shared, not copied). The generator starts as dlib's default ``dlib::rand``.

    Calls (boxes are ``mmod_rect``, ``yolo_rect`` or anything with ``rect`` and ``ignore``;
    copies keep every other field, as dlib's):

    - ``cropper(num_crops, images, boxes) -> (crops, crop_boxes)``: lists of ``num_crops``;
    - ``cropper(images, boxes) -> (crop, crop_boxes)``: one crop from a random image;
    - ``cropper(img) -> crop``: a background crop of one image (no boxes);
    - ``cropper.crop(img, boxes) -> (crop, crop_boxes)``: one crop of the given image
      (dlib's ``operator()(img, rects, crop, crop_rects)``);
    - ``cropper.append(num_crops, images, boxes, crops, crop_boxes)``: extends the lists.

    ``images`` is a list (or tuple) of ``HxW`` / ``HxWxC`` arrays; a single ndarray is one image.
    """

    def __init__(self, **settings):
        self._dims = chip_dims(300, 300)
        self._randomly_flip = True
        self._max_rotation_degrees = 30.0
        self._min_long, self._min_short = 75, 30
        self._max_object_size = 0.7
        self._background_crops_fraction = 0.5
        self._translate_amount = 0.10
        self._min_object_coverage = 1.0
        self._rnd = dlib_rand()
        seed, rnd = settings.pop("seed", None), settings.pop("rnd", None)
        unknown = set(settings) - set(_SETTINGS)
        if unknown:
            raise TypeError(f"random_cropper: unknown settings {sorted(unknown)}; known: "
                            f"{list(_SETTINGS) + ['seed', 'rnd']}")
        if "chip_dims" in settings:
            self.set_chip_dims(settings["chip_dims"])
        for name in ("randomly_flip", "max_rotation_degrees", "max_object_size",
                     "background_crops_fraction", "translate_amount", "min_object_coverage"):
            if name in settings:
                getattr(self, "set_" + name)(settings[name])
        if "min_object_length_long_dim" in settings or "min_object_length_short_dim" in settings:
            self.set_min_object_size(settings.get("min_object_length_long_dim", self._min_long),
                                     settings.get("min_object_length_short_dim", self._min_short))
        if rnd is not None:
            if not isinstance(rnd, dlib_rand):
                raise TypeError(f"random_cropper: rnd must be a dnnpy.data.dlib_rand, got {type(rnd).__name__}")
            if seed is not None:
                raise TypeError("random_cropper: give seed or rnd, not both")
            self._rnd = rnd
        elif seed is not None:
            self.set_seed(seed)

    # -- settings (dlib's names) -------------------------------------------------------------

    def set_seed(self, seed):
        """dlib's ``set_seed(time_t)``: the generator becomes ``dlib_rand(seed)`` (an int seeds
        as dlib's ``rand(time_t)``; a str as ``rand(string)``)."""
        self._rnd = dlib_rand(seed)

    def get_rnd(self):
        """The ``dlib_rand`` the cropper draws from (dnnpy's addition, for replaying)."""
        return self._rnd

    def get_chip_dims(self):
        return self._dims

    def set_chip_dims(self, rows, cols=None):
        dims = rows if cols is None else chip_dims(rows, cols)
        if not isinstance(dims, chip_dims):
            if isinstance(dims, (tuple, list)) and len(dims) == 2:
                dims = chip_dims(*dims)
            else:
                raise TypeError(f"random_cropper.set_chip_dims: expected (rows, cols) or a chip_dims, got {dims!r}")
        if dims.rows == 0 or dims.cols == 0:
            raise ValueError(f"random_cropper.set_chip_dims: rows and cols must be > 0, got {dims}")
        self._dims = dims

    def get_randomly_flip(self):
        return self._randomly_flip

    def set_randomly_flip(self, value):
        self._randomly_flip = bool(value)

    def get_max_rotation_degrees(self):
        return self._max_rotation_degrees

    def set_max_rotation_degrees(self, value):
        self._max_rotation_degrees = abs(float(value))

    def get_min_object_length_long_dim(self):
        return self._min_long

    def get_min_object_length_short_dim(self):
        return self._min_short

    def set_min_object_size(self, long_dim, short_dim):
        if not (isinstance(long_dim, numbers.Integral) and isinstance(short_dim, numbers.Integral)):
            raise TypeError(f"random_cropper.set_min_object_size: lengths are integers (dlib's long), "
                            f"got {long_dim!r}, {short_dim!r}")
        if not 0 < short_dim <= long_dim:
            raise ValueError(f"random_cropper.set_min_object_size: needs 0 < short_dim <= long_dim, got "
                             f"long_dim={long_dim}, short_dim={short_dim}")
        self._min_long, self._min_short = int(long_dim), int(short_dim)

    def get_max_object_size(self):
        return self._max_object_size

    def set_max_object_size(self, value):
        if not float(value) > 0:
            raise ValueError(f"random_cropper.set_max_object_size: needs a value > 0, got {value}")
        self._max_object_size = float(value)

    def get_background_crops_fraction(self):
        return self._background_crops_fraction

    def set_background_crops_fraction(self, value):
        if not 0 <= float(value) <= 1:
            raise ValueError(f"random_cropper.set_background_crops_fraction: needs a value in [0, 1], got {value}")
        self._background_crops_fraction = float(value)

    def get_translate_amount(self):
        return self._translate_amount

    def set_translate_amount(self, value):
        if not float(value) >= 0:
            raise ValueError(f"random_cropper.set_translate_amount: needs a value >= 0, got {value}")
        self._translate_amount = float(value)

    def get_min_object_coverage(self):
        return self._min_object_coverage

    def set_min_object_coverage(self, value):
        if not 0 < float(value) <= 1:
            raise ValueError(f"random_cropper.set_min_object_coverage: needs a value in (0, 1], got {value}")
        self._min_object_coverage = float(value)

    def __str__(self):
        # dlib's operator<< (it prints these 9 lines; min_object_coverage is not among them)
        d = self._dims
        rows = [("chip_dims.rows", d.rows), ("chip_dims.cols", d.cols),
                ("randomly_flip", "true" if self._randomly_flip else "false"),
                ("max_rotation_degrees", f"{self._max_rotation_degrees:g}"),
                ("min_object_length_long_dim", self._min_long),
                ("min_object_length_short_dim", self._min_short),
                ("max_object_size", f"{self._max_object_size:g}"),
                ("background_crops_fraction", f"{self._background_crops_fraction:g}"),
                ("translate_amount", f"{self._translate_amount:g}")]
        return "random_cropper details: \n" + "".join(f"  {k + ':':<29}{v}\n" for k, v in rows)

    def __repr__(self):
        return (f"random_cropper(chip_dims=({self._dims.rows}, {self._dims.cols}), "
                f"randomly_flip={self._randomly_flip}, max_rotation_degrees={self._max_rotation_degrees!r}, "
                f"min_object_length_long_dim={self._min_long}, min_object_length_short_dim={self._min_short}, "
                f"max_object_size={self._max_object_size!r}, "
                f"background_crops_fraction={self._background_crops_fraction!r}, "
                f"translate_amount={self._translate_amount!r}, min_object_coverage={self._min_object_coverage!r})")

    # -- cropping ----------------------------------------------------------------------------

    def __call__(self, *args):
        if len(args) == 1:
            crop, _ = self.crop(args[0], [])
            return crop
        if len(args) == 2:
            images, boxes = self._check_dataset(args[0], args[1])
            idx = self._rnd.get_integer(len(images))
            return self._crop_checked(images[idx], boxes[idx])
        if len(args) == 3:
            crops, crop_boxes = [], []
            self.append(args[0], args[1], args[2], crops, crop_boxes)
            return crops, crop_boxes
        raise TypeError("random_cropper: call as cropper(img), cropper(images, boxes) or "
                        f"cropper(num_crops, images, boxes); got {len(args)} arguments")

    def append(self, num_crops, images, boxes, crops, crop_boxes):
        """dlib's ``append``: add ``num_crops`` crops (and their boxes) to the lists
        ``crops`` and ``crop_boxes``, each from an image picked at random."""
        if not isinstance(num_crops, numbers.Integral) or num_crops < 0:
            raise ValueError(f"random_cropper: num_crops must be an integer >= 0, got {num_crops!r}")
        if len(crops) != len(crop_boxes):
            raise ValueError(f"random_cropper.append: crops and crop_boxes differ in length "
                             f"({len(crops)} and {len(crop_boxes)})")
        images, boxes = self._check_dataset(images, boxes)
        for _ in range(int(num_crops)):
            idx = self._rnd.get_integer(len(images))
            crop, cb = self._crop_checked(images[idx], boxes[idx])
            crops.append(crop)
            crop_boxes.append(cb)

    def crop(self, img, boxes):
        """One crop of ``img`` and its boxes (dlib's ``operator()(img, rects, crop,
        crop_rects)``)."""
        img = self._check_image(img, "the image")
        return self._crop_checked(img, self._check_boxes(boxes, img, "the image"))

    # -- checks ------------------------------------------------------------------------------

    @staticmethod
    def _check_image(img, what):
        img = np.asarray(img)
        if img.ndim not in (2, 3):
            raise ValueError(f"random_cropper: {what} must be HxW or HxWxC, got shape {img.shape}")
        if img.shape[0] * img.shape[1] == 0:
            raise ValueError(f"random_cropper: {what} is empty (shape {img.shape})")
        return img

    @staticmethod
    def _check_boxes(boxes, img, what):
        boxes = list(boxes)
        img_rect = get_rect(img)
        for j, b in enumerate(boxes):
            if not (hasattr(b, "rect") and hasattr(b, "ignore")):
                raise TypeError(f"random_cropper: box {j} of {what} must be an mmod_rect or yolo_rect "
                                f"(with rect and ignore), got {type(b).__name__}")
            r = b.rect
            if r.is_empty():
                raise ValueError(f"random_cropper: box {j} of {what} ({r}) is empty")
            if img_rect.intersect(r).is_empty():
                raise ValueError(f"random_cropper: box {j} of {what} ({r}) lies outside the "
                                 f"{img.shape[1]}x{img.shape[0]} image")
        return boxes

    def _check_dataset(self, images, boxes):
        if isinstance(images, np.ndarray) and images.ndim in (2, 3):
            raise TypeError("random_cropper: images must be a list of images (one ndarray is one "
                            "image: use cropper.crop(img, boxes))")
        images, boxes = list(images), list(boxes)
        if not images:
            raise ValueError("random_cropper: the list of images is empty")
        if len(images) != len(boxes):
            raise ValueError(f"random_cropper: {len(images)} images but {len(boxes)} lists of boxes")
        images = [self._check_image(im, f"image {i}") for i, im in enumerate(images)]
        boxes = [self._check_boxes(b, im, f"image {i}") for i, (im, b) in enumerate(zip(images, boxes))]
        return images, boxes

    # -- dlib's algorithm --------------------------------------------------------------------

    def _crop_checked(self, img, boxes):
        plan, flip = self._make_crop_plan(img, boxes)
        crop = extract_image_chip(img, plan)
        tform = rectangle_transform(get_mapping_to_chip(plan))
        window = get_rect(crop)
        out = []
        for b in boxes:
            r = tform(b.rect)
            inter = float(window.intersect(r).area())
            if inter == 0:
                continue                      # wholly outside the crop: dropped
            h, w = int(r.height()), int(r.width())   # dlib's (long) casts
            ignore = b.ignore or (inter / r.area() < self._min_object_coverage
                                  or (h < self._min_long and w < self._min_long)
                                  or h < self._min_short or w < self._min_short)
            nb = copy.copy(b)
            nb.rect, nb.ignore = r, ignore
            out.append(nb)
        if flip:
            crop = np.ascontiguousarray(crop[:, ::-1])
            for nb in out:
                f = flip_rect_left_right(rectangle._coerce(nb.rect), window)
                nb.rect = drectangle._coerce(f) if isinstance(nb.rect, drectangle) else f
        return crop, out

    def _make_crop_plan(self, img, boxes):
        rnd = self._rnd
        dims = self._dims
        if any(not b.ignore for b in boxes) and rnd.get_random_double() >= self._background_crops_fraction:
            idx = rnd.get_integer(len(boxes))
            while boxes[idx].ignore:
                idx = rnd.get_integer(len(boxes))
            rect = boxes[idx].rect
            m = max(rect.height(), rect.width())
            t = self._translate_amount
            # dlib's dpoint(x_draw, y_draw): GCC evaluates the y draw first
            dy = rnd.get_double_in_range(-t, t) * m
            dx = rnd.get_double_in_range(-t, t) * m
            shift = round_point((dx, dy))
            c = center(rect)
            drect = centered_drect((c[0] + shift[0], c[1] + shift[1]), rect.width() / self._max_object_size,
                                   rect.height() / self._max_object_size)
            # grow the short side to the chip's aspect ratio
            aspect = dims.cols / float(dims.rows)
            if drect.width() / drect.height() < aspect:
                drect = centered_drect(drect, aspect * drect.height(), drect.height())
            else:
                drect = centered_drect(drect, drect.width(), drect.width() / aspect)
            cur_w = dims.cols * rect.width() / drect.width()
            cur_h = dims.rows * rect.height() / drect.height()
            min_scale = max(max(self._min_short / cur_w, self._min_short / cur_h),
                            min(self._min_long / cur_w, self._min_long / cur_h))
            # dlib's get_double_in_range(min_scale, 1) without its debug-only begin <= end check:
            # min_scale > 1 (a small object) enlarges the crop rect
            perturb = 1.0 / (min_scale + rnd.get_random_double() * (1 - min_scale))
            crop_rect = rectangle._coerce(centered_drect(drect, drect.width() * perturb,
                                                         drect.height() * perturb))
        else:
            crop_rect = self._random_cropping_rect(img)
        flip = self._randomly_flip and rnd.get_random_double() > 0.5
        d = self._max_rotation_degrees
        angle = rnd.get_double_in_range(-d, d) * math.pi / 180
        return chip_details(crop_rect, dims, angle), flip

    def _random_cropping_rect(self, img):
        rnd, dims = self._rnd, self._dims
        nr, nc = img.shape[:2]
        maxs = min(nr / float(dims.rows), nc / float(dims.cols))
        mins = min(1.0 / 3.0, maxs)
        scale = rnd.get_double_in_range(mins, maxs)
        w, h = int(scale * dims.cols), int(scale * dims.rows)
        if w == 0 or h == 0:
            raise ValueError(f"random_cropper: a background crop of the {nc}x{nr} image for "
                             f"{dims.rows}x{dims.cols} chips came out {w}x{h} pixels (dlib would crop "
                             f"an empty rect); use chip_dims of at least 3x3")
        # dlib's point(get_integer(x range), get_integer(y range)): the y draw comes first
        oy = rnd.get_integer(1 + nr - h)
        ox = rnd.get_integer(1 + nc - w)
        return move_rect(rectangle.from_size(w, h), (ox, oy))
