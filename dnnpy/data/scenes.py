"""Generated detection and segmentation scenes (the examples' data; no download).

dlib's detection and segmentation examples train on photos (faces, vehicles, PASCAL VOC) that
cannot be shipped. ``make_scene`` draws a stand-in: a smooth, noisy background with objects of a
few kinds, and returns everything those examples read from their data sets:

- the RGB image;
- the boxes as ``mmod_rect`` (label = kind, ``ignore`` for objects too small to count and for
  crowded regions, like the ignore boxes of dlib's vehicle data set);
- a class label image and an instance label image, with a 1-pixel ``label_to_ignore`` ring
  around each object (PASCAL VOC's "void" border, which dlib's segmentation examples skip).

``write_scene_dataset`` writes scenes as PNG files plus an imglab XML file, so an example loads
them with ``load_image_dataset`` exactly as dlib's examples load theirs.

The kinds (``SCENE_KINDS``) and their boxes' shapes (width : height):

=============  =====  ====================================================================
kind           box    drawing
=============  =====  ====================================================================
``smiley``     1:1    a disc with two eyes and a mouth (dnn_mmod_ex's faces)
``car``        2:1    a car from behind: cabin with rear window, body, rear lights, wheels
``car_front``  2:1    a car from the front: windscreen, headlights, grille, wheels
``truck``      1:1.5  a tall cargo box with a door seam, lights and wheels
``van``        1:1    a boxy body with a window band and wheels
``disc``       1:1    a filled disc
``square``     1:1    a filled square
``triangle``   1:1    a filled triangle, apex up
=============  =====  ====================================================================

Distractors are clutter that is none of the kinds (rings, crosses, ellipses, striped patches);
they get no box and stay background in the label images.

Everything is drawn with whole-array numpy operations per object; a scene of 160x120 with a few
objects takes a few milliseconds.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..geometry import mmod_rect, rectangle
from ..image.io import save_png
from ..loss.per_pixel import label_to_ignore
from ..rand import dlib_rand
from . import imglab

__all__ = ["SCENE_KINDS", "SMILEY_PARTS", "scene", "make_scene", "make_scenes", "write_scene_dataset"]

# kind -> box aspect ratio (width / height)
_ASPECT = {"smiley": 1.0, "car": 2.0, "car_front": 2.0, "truck": 1 / 1.5, "van": 1.0,
           "disc": 1.0, "square": 1.0, "triangle": 1.0}
SCENE_KINDS = tuple(_ASPECT)
_DISTRACTORS = ("ring", "cross", "ellipse", "stripes")
_GAP = 3            # pixels kept free between objects (so the ignore rings never touch)


class scene:
    """One generated scene: ``image`` (rows x cols x 3 uint8), ``boxes`` (``mmod_rect`` list,
    label = kind), ``class_labels`` (rows x cols uint16: 0 background, i+1 for ``kinds[i]``,
    ``label_to_ignore`` on the ring around each object and over ignore regions),
    ``instance_labels`` (uint16: 0 background, j+1 for ``boxes[j]``, ``label_to_ignore`` as
    above and over ignore regions), ``class_names`` (``("background",) + kinds``) and
    ``parts`` (one dict per box, ``name -> (x, y)`` float pixel coordinates of the object's
    landmarks; ``SMILEY_PARTS`` for a smiley, empty for the other kinds: the hipsterizer
    example's truth, dlib's imglab ``part`` elements)."""

    __slots__ = ("image", "boxes", "class_labels", "instance_labels", "class_names", "parts")

    def __init__(self, image, boxes, class_labels, instance_labels, class_names, parts=None):
        self.image, self.boxes = image, boxes
        self.class_labels, self.instance_labels = class_labels, instance_labels
        self.class_names = class_names
        self.parts = [{} for _ in boxes] if parts is None else parts

    def __repr__(self):
        rows, cols = self.image.shape[:2]
        kept = sum(not b.ignore for b in self.boxes)
        return (f"scene({rows}x{cols}, {kept} objects, {len(self.boxes) - kept} ignored boxes, "
                f"classes {self.class_names[1:]})")


# ---------------------------------------------------------------------------------------------
# drawing: each function gets the object's local grid (u, v in [-1, 1] across its box) and
# returns a list of (mask, rgb) layers, painted in order; the first mask is the object's extent

def _rgb(gen, lo=40, hi=230):
    return gen.integers(lo, hi, 3).astype(np.float32)


def _saturated(gen):
    """A vivid colour: one channel high, one low, one anywhere (objects stand out)."""
    c = np.array([gen.integers(170, 250), gen.integers(10, 70), gen.integers(10, 250)], np.float32)
    return c[gen.permutation(3)]


def _disc(u, v, r=1.0, cx=0.0, cy=0.0):
    return (u - cx) ** 2 + (v - cy) ** 2 <= r * r


def _rect(u, v, x0, x1, y0, y1):
    return (u >= x0) & (u <= x1) & (v >= y0) & (v <= y1)


def _wheels(u, v, y0=0.55, y1=0.98, x=0.7, half=0.17):
    return _rect(u, v, -x - half, -x + half, y0, y1) | _rect(u, v, x - half, x + half, y0, y1)


# a smiley's landmarks on its (u, v) grid: the eyes' centres (image left and right) and the
# middle of the mouth's arc (its lowest point, between radii 0.45 and 0.62 around (0, -0.05))
SMILEY_PARTS = {"left_eye": (-0.38, -0.3), "right_eye": (0.38, -0.3), "mouth": (0.0, 0.485)}


def _draw_smiley(u, v, gen):
    face = np.array([gen.integers(220, 256), gen.integers(170, 230), gen.integers(0, 60)], np.float32)
    dark = np.float32([40, 25, 10])
    (lx, ly), (rx, ry) = SMILEY_PARTS["left_eye"], SMILEY_PARTS["right_eye"]
    eyes = _disc(u, v, 0.16, lx, ly) | _disc(u, v, 0.16, rx, ry)
    r2 = u * u + (v + 0.05) ** 2
    mouth = (r2 >= 0.45 ** 2) & (r2 <= 0.62 ** 2) & (v > 0.15)
    return [(_disc(u, v, 0.97), face), (eyes | mouth, dark)]


def _draw_car(u, v, gen):
    body = _saturated(gen)
    cabin = _rect(u, v, -0.62, 0.62, -0.95, -0.2)
    hull = _rect(u, v, -0.97, 0.97, -0.25, 0.62)
    window = _rect(u, v, -0.5, 0.5, -0.85, -0.3)
    lights = _rect(u, v, -0.92, -0.7, -0.1, 0.12) | _rect(u, v, 0.7, 0.92, -0.1, 0.12)
    plate = _rect(u, v, -0.18, 0.18, 0.2, 0.4)
    return [(cabin | hull | _wheels(u, v), body), (window, np.float32([70, 90, 110])),
            (lights, np.float32([230, 20, 20])), (plate, np.float32([235, 235, 235])),
            (_wheels(u, v) & ~hull, np.float32([20, 20, 20]))]


def _draw_car_front(u, v, gen):
    body = _saturated(gen)
    cabin = _rect(u, v, -0.6, 0.6, -0.95, -0.2)
    hull = _rect(u, v, -0.97, 0.97, -0.25, 0.62)
    screen = _rect(u, v, -0.52, 0.52, -0.88, -0.28)
    lights = _disc(u * 0.5, v, 0.12, -0.39, 0.05) | _disc(u * 0.5, v, 0.12, 0.39, 0.05)
    grille = _rect(u, v, -0.4, 0.4, 0.0, 0.35) & (np.floor((v + 1) * 12) % 2 == 0)
    return [(cabin | hull | _wheels(u, v), body), (screen, np.float32([150, 190, 220])),
            (lights, np.float32([255, 250, 190])), (grille, np.float32([30, 30, 30])),
            (_wheels(u, v) & ~hull, np.float32([20, 20, 20]))]


def _draw_truck(u, v, gen):
    cargo = _rgb(gen, 90, 240)
    box = _rect(u, v, -0.97, 0.97, -0.97, 0.72)
    seam = _rect(u, v, -0.03, 0.03, -0.9, 0.65)
    lights = _rect(u, v, -0.95, -0.7, 0.5, 0.68) | _rect(u, v, 0.7, 0.95, 0.5, 0.68)
    wheels = _wheels(u, v, 0.72, 0.99, 0.6, 0.25)
    return [(box | wheels, cargo), (seam, cargo * 0.4), (lights, np.float32([230, 30, 20])),
            (wheels, np.float32([20, 20, 20]))]


def _draw_van(u, v, gen):
    body = _saturated(gen)
    hull = _rect(u, v, -0.95, 0.95, -0.9, 0.65)
    band = _rect(u, v, -0.85, 0.85, -0.75, -0.3)
    wheels = _wheels(u, v, 0.62, 0.98, 0.6, 0.2)
    return [(hull | wheels, body), (band, np.float32([60, 80, 100])),
            (wheels, np.float32([20, 20, 20]))]


def _draw_disc(u, v, gen):
    return [(_disc(u, v, 0.97), _saturated(gen))]


def _draw_square(u, v, gen):
    return [(_rect(u, v, -0.95, 0.95, -0.95, 0.95), _saturated(gen))]


def _draw_triangle(u, v, gen):
    return [((v <= 0.95) & (np.abs(u) <= (v + 0.95) / 1.9 * 0.97), _saturated(gen))]


def _draw_ring(u, v, gen):
    r2 = u * u + v * v
    return [((r2 <= 0.95 ** 2) & (r2 >= 0.6 ** 2), _saturated(gen))]


def _draw_cross(u, v, gen):
    return [(_rect(u, v, -0.95, 0.95, -0.2, 0.2) | _rect(u, v, -0.2, 0.2, -0.95, 0.95), _saturated(gen))]


def _draw_ellipse(u, v, gen):
    return [(u * u + (v / 0.45) ** 2 <= 0.9, _saturated(gen))]


def _draw_stripes(u, v, gen):
    c = _saturated(gen)
    return [(_rect(u, v, -0.95, 0.95, -0.95, 0.95) & (np.floor((u + v + 2) * 3) % 2 == 0), c)]


_DRAW = {"smiley": _draw_smiley, "car": _draw_car, "car_front": _draw_car_front,
         "truck": _draw_truck, "van": _draw_van, "disc": _draw_disc, "square": _draw_square,
         "triangle": _draw_triangle, "ring": _draw_ring, "cross": _draw_cross,
         "ellipse": _draw_ellipse, "stripes": _draw_stripes}


def _paint(img, top, left, h, w, kind, gen):
    """Draws ``kind`` into the box (top, left, h, w) of ``img`` (float32, in place); returns
    the object's mask over that box. The lighting scales every colour of the object."""
    v = ((np.arange(h, dtype=np.float32) + 0.5) / h * 2 - 1)[:, None]
    u = ((np.arange(w, dtype=np.float32) + 0.5) / w * 2 - 1)[None, :]
    u, v = np.broadcast_arrays(u, v)
    light = np.float32(gen.uniform(0.8, 1.15))
    region = img[top:top + h, left:left + w]
    layers = _DRAW[kind](u, v, gen)
    for mask, colour in layers:
        region[mask] = np.minimum(colour * light, 255)
    return layers[0][0]


def _parts(kind, top, left, h, w):
    """The landmarks of an object drawn in the box (top, left, h, w): pixel (x, y) of grid
    point (u, v) is ``left + (u + 1) w / 2 - 0.5`` (``_paint``'s grid, inverted)."""
    if kind != "smiley":
        return {}
    return {name: (left + (u + 1) * w / 2 - 0.5, top + (v + 1) * h / 2 - 0.5)
            for name, (u, v) in SMILEY_PARTS.items()}


def _ring(mask):
    """The pixels 8-adjacent to ``mask`` but outside it, over ``mask``'s box padded by 1."""
    p = np.pad(mask, 1)
    grown = p.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            grown |= np.roll(np.roll(p, dy, 0), dx, 1)
    return grown & ~p


def _background(gen, rows, cols, clutter):
    """A smooth colour field: a random base colour plus two low-frequency waves per channel
    (``sin(a y + b x + p)`` expanded into outer products, so no sine per pixel), both scaled
    by ``clutter`` around mid grey."""
    y = 2 * math.pi * np.linspace(0, 1, rows, dtype=np.float32)[:, None, None]
    x = 2 * math.pi * np.linspace(0, 1, cols, dtype=np.float32)[None, :, None]
    base = 120 + clutter * (gen.uniform(70, 170, 3) - 120)
    img = np.broadcast_to(base.astype(np.float32), (rows, cols, 3)).copy()
    for _ in range(2):
        fy, fx = gen.uniform(0.3, 2.0, 2)
        phase = gen.uniform(0, 2 * math.pi, 3).astype(np.float32)
        amp = (clutter * gen.uniform(10, 35, 3)).astype(np.float32)
        ax = fx * x + phase
        img += amp * (np.sin(fy * y) * np.cos(ax) + np.cos(fy * y) * np.sin(ax))
    return img


def _range(value, name, lo):
    a, b = (value, value) if np.isscalar(value) else tuple(value)
    if not (lo <= a <= b):
        raise ValueError(f"make_scene: {name} must be a number or a (min, max) pair with "
                         f"{lo} <= min <= max, got {value!r}")
    return a, b


def _check_args(rows, cols, kinds, size):
    if rows < 16 or cols < 16:
        raise ValueError(f"make_scene: the image must be at least 16x16, got {rows}x{cols}")
    if isinstance(kinds, str) or not kinds:
        raise ValueError(f"make_scene: kinds must be a non-empty sequence of kind names, got {kinds!r}")
    unknown = [k for k in kinds if k not in _ASPECT]
    if unknown:
        raise ValueError(f"make_scene: unknown kinds {unknown}; the kinds are {SCENE_KINDS}")
    for k in kinds:
        a = _ASPECT[k]
        w, h = size[1] * math.sqrt(a), size[1] / math.sqrt(a)
        if w > cols - 2 or h > rows - 2:
            raise ValueError(f"make_scene: a {k} of size {size[1]} needs a {w:.0f}x{h:.0f} box, "
                             f"larger than the {cols}x{rows} image")


class _Placer:
    """Random non-overlapping boxes (with ``_GAP`` pixels between them)."""

    def __init__(self, gen, rows, cols):
        self.gen, self.rows, self.cols = gen, rows, cols
        self.taken = np.zeros((rows, cols), bool)

    def place(self, h, w, tries=60):
        for _ in range(tries):
            top = int(self.gen.integers(0, self.rows - h + 1))
            left = int(self.gen.integers(0, self.cols - w + 1))
            if not self.taken[top:top + h, left:left + w].any():
                self.taken[max(top - _GAP, 0):top + h + _GAP, max(left - _GAP, 0):left + w + _GAP] = True
                return top, left
        return None


def make_scene(rnd, rows=120, cols=160, kinds=("smiley",), num_objects=(2, 4), size=(24, 48),
               distractors=0, ignore_below=0, ignore_regions=0, noise=12, clutter=1.0) -> scene:
    """Draws one scene (see the module docstring).

    ``rnd``: a ``dlib_rand`` (advanced by one draw) or an int seed. ``kinds``: the object kinds
    to draw, each object's kind uniform among them. ``num_objects``, ``size`` (the square root
    of a box's area, in pixels) and ``distractors``: a number or an inclusive ``(min, max)``
    range. Objects whose size is below ``ignore_below`` are drawn with an ignored box.
    ``ignore_regions``: patches of crowded tiny objects, each under one ignored box (labelled
    ``"crowd"``). ``noise``: the standard deviation of the Gaussian pixel noise. ``clutter``:
    how colourful the background is (0: plain grey, 1: the default colour waves, more: bolder).
    Objects never overlap; when the image has no room left, fewer are drawn."""
    rows, cols = int(rows), int(cols)
    kinds = tuple(kinds) if not isinstance(kinds, str) else kinds
    size = _range(size, "size", 4)
    _check_args(rows, cols, kinds, size)
    count = _range(num_objects, "num_objects", 0)
    n_distract = _range(distractors, "distractors", 0)
    if ignore_regions < 0 or noise < 0 or clutter < 0:
        raise ValueError(f"make_scene: ignore_regions ({ignore_regions}), noise ({noise}) and "
                         f"clutter ({clutter}) must be >= 0")
    if isinstance(rnd, dlib_rand):
        seed = rnd.get_random_64bit_number()
    elif isinstance(rnd, (int, np.integer)) and not isinstance(rnd, bool):
        seed = int(rnd)
    else:
        raise TypeError(f"make_scene: rnd must be a dlib_rand or an int seed, got {type(rnd).__name__}")
    gen = np.random.default_rng(seed)

    img = _background(gen, rows, cols, float(clutter))
    cls = np.zeros((rows, cols), np.uint16)
    inst = np.zeros((rows, cols), np.uint16)
    placer = _Placer(gen, rows, cols)
    boxes, parts = [], []

    for _ in range(int(ignore_regions)):
        h = int(gen.integers(rows // 4, rows // 2 + 1))
        w = int(gen.integers(cols // 4, cols // 2 + 1))
        at = placer.place(h, w)
        if at is None:
            continue
        top, left = at
        step = max(6, min(h, w) // 4)
        for y in range(top, top + h - step + 1, step):       # a few dozen tiny objects
            for x in range(left, left + w - step + 1, step):
                _paint(img, y + 1, x + 1, step - 2, step - 2, kinds[int(gen.integers(len(kinds)))], gen)
        cls[top:top + h, left:left + w] = label_to_ignore
        inst[top:top + h, left:left + w] = label_to_ignore
        boxes.append(mmod_rect(rectangle(left, top, left + w - 1, top + h - 1), ignore=True, label="crowd"))
        parts.append({})

    objects = []
    for _ in range(int(gen.integers(count[0], count[1] + 1))):
        kind = kinds[int(gen.integers(len(kinds)))]
        s = float(gen.uniform(size[0], size[1]))
        a = math.sqrt(_ASPECT[kind])
        h, w = max(int(round(s / a)), 4), max(int(round(s * a)), 4)
        at = placer.place(h, w)
        if at is not None:
            objects.append((kind, at[0], at[1], h, w, s))
    for _ in range(int(gen.integers(n_distract[0], n_distract[1] + 1))):
        s = int(gen.uniform(size[0], size[1]))
        at = placer.place(s, s)
        if at is not None:
            _paint(img, at[0], at[1], s, s, _DISTRACTORS[int(gen.integers(len(_DISTRACTORS)))], gen)

    for kind, top, left, h, w, s in objects:
        mask = _paint(img, top, left, h, w, kind, gen)
        ring = _ring(mask)
        y0, x0 = top - 1, left - 1                       # the ring's box, clipped to the image
        ys, xs = slice(max(y0, 0), min(y0 + h + 2, rows)), slice(max(x0, 0), min(x0 + w + 2, cols))
        ring = ring[ys.start - y0:ys.stop - y0, xs.start - x0:xs.stop - x0]
        j = len(boxes) + 1
        cls[top:top + h, left:left + w][mask] = kinds.index(kind) + 1
        inst[top:top + h, left:left + w][mask] = j
        cls[ys, xs][ring] = label_to_ignore
        inst[ys, xs][ring] = label_to_ignore
        boxes.append(mmod_rect(rectangle(left, top, left + w - 1, top + h - 1),
                               ignore=s < ignore_below, label=kind))
        parts.append(_parts(kind, top, left, h, w))

    if noise:
        img += gen.normal(0, noise, img.shape).astype(np.float32)
    image = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return scene(image, boxes, cls, inst, ("background",) + kinds, parts)


def make_scenes(n, seed=0, **kwargs) -> list:
    """``n`` scenes from one ``dlib_rand(seed)`` stream; ``kwargs`` go to ``make_scene``."""
    if int(n) < 0:
        raise ValueError(f"make_scenes: n must be >= 0, got {n}")
    rnd = dlib_rand(seed)
    return [make_scene(rnd, **kwargs) for _ in range(int(n))]


def write_scene_dataset(folder, scenes, xml_name="training.xml", prefix=None) -> Path:
    """Writes each scene's image as a PNG (``<prefix>_000.png``, ...; prefix defaults to the
    XML name's stem) and an imglab XML file listing them with their boxes (label, ignore
    flag, parts rounded to whole pixels as dlib's XML holds them), readable by
    ``load_image_dataset``. The XML is written last and atomically, so a
    file that exists is complete. Returns the XML's path."""
    folder = Path(os.fspath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    prefix = Path(xml_name).stem if prefix is None else prefix
    meta = imglab.dataset(name=f"dnnpy generated scenes ({len(scenes)} images)",
                          comment="made by dnnpy.data.make_scene")
    for i, sc in enumerate(scenes):
        name = f"{prefix}_{i:03d}.png"
        save_png(sc.image, folder / name)
        rows, cols = sc.image.shape[:2]
        # boxes a caller appended after make_scene have no parts entry
        parts = list(sc.parts[:len(sc.boxes)]) + [{}] * (len(sc.boxes) - len(sc.parts))
        meta.images.append(imglab.image(name, [
            imglab.box(b.rect, label=b.label, ignore=b.ignore,
                       parts={k: (int(np.floor(x + 0.5)), int(np.floor(y + 0.5))) for k, (x, y) in p.items()})
            for b, p in zip(sc.boxes, parts)], width=cols, height=rows))
    path = folder / xml_name
    imglab.save_image_dataset_metadata(meta, path)
    return path
