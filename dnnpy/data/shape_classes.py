"""Generated shape classes: ten image classes made of a shape and a texture, for the ImageNet
and self-supervised examples without a download (dlib's use ImageNet and CIFAR-10).

Class ``k`` is the pair ``SHAPE_CLASS_NAMES[k]`` = ``"<shape>_<texture>"``. The shapes are
disc, square, triangle, star and ring; the textures solid, stripes, checker and dots. Every
shape occurs in two classes and every texture in two or three, with different partners, so
neither the outline alone nor the texture alone tells the class: a classifier has to see
both (as ImageNet needs shape and texture cues).

Every image draws its own: object centre (the whole object stays inside the image), radius
(0.22..0.38 of the size), rotation (any angle; the texture turns with the object), texture
period (about half the radius, at least 4 pixels), object colour (anywhere in the RGB cube;
the texture's second colour is a darker or lighter version of it), background colour (each
channel 78..128 levels away from the object's, so the object always stands out), a linear
background shading of up to +-25 levels in a random direction, and pixel noise (sigma 6).

The drawing is vectorised numpy over chunks of images: per image the pixel grid is mapped
to object coordinates, and the shape is a soft-edged (one-pixel anti-aliased) mask from an
approximate signed distance.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["make_shape_classes", "SHAPE_CLASS_NAMES"]

_CLASSES = (("disc", "solid"), ("square", "stripes"), ("triangle", "checker"), ("star", "dots"),
            ("ring", "solid"), ("disc", "stripes"), ("square", "checker"),
            ("triangle", "dots"), ("star", "solid"), ("ring", "stripes"))
SHAPE_CLASS_NAMES = tuple(f"{s}_{t}" for s, t in _CLASSES)
_SHAPES = ("disc", "square", "triangle", "star", "ring")
_TEXTURES = ("solid", "stripes", "checker", "dots")
_CHUNK = 256                     # images drawn at once (bounds the float32 work arrays)


def _positive_int(value, what, minimum=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise ValueError(f"make_shape_classes: {what} must be an integer >= {minimum}, "
                         f"got {value!r}")
    return int(value)


def _star_boundary(phi):
    """Radius of a five-pointed star polygon (outer radius 1.05, inner 0.45) along the ray at
    angle ``phi``: the ray is folded into the half-sector [0, pi/5] between an outer and an
    inner vertex, and meets the edge line n.x = c there at c / (n . ray)."""
    half = np.pi / 5
    psi = np.mod(phi, 2 * half)
    psi = np.where(psi > half, 2 * half - psi, psi)
    p0 = np.array([1.05, 0.0])
    p1 = 0.45 * np.array([np.cos(half), np.sin(half)])
    normal = np.array([p1[1] - p0[1], p0[0] - p1[0]])
    c = normal @ p0
    return c / (normal[0] * np.cos(psi) + normal[1] * np.sin(psi))


def _signed_distance(shape_id, u, v):
    """Approximate signed distance (object units, radius 1) of the points (u, v) to the outline
    of each image's shape; ``shape_id`` is (N, 1, 1). Negative inside."""
    rho = np.hypot(u, v)
    out = rho - 1.0                                                        # disc
    square = np.maximum(np.abs(u), np.abs(v)) - 0.82
    # equilateral triangle, circumradius 1.15: the three edge normals at 90 + k*120 degrees
    tri = np.full_like(u, -np.inf)
    for k in range(3):
        a = np.pi / 2 + k * 2 * np.pi / 3
        tri = np.maximum(tri, u * np.cos(a) + v * np.sin(a))
    tri = tri - 0.575
    star = rho - _star_boundary(np.arctan2(v, u))
    ring = np.abs(rho - 0.72) - 0.28
    for k, d in enumerate((square, tri, star, ring), start=1):
        out = np.where(shape_id == k, d, out)
    return out


def _texture(texture_id, a, b, period):
    """Weight (0..1) of the texture's second colour at pattern coordinates (a, b) in pixels;
    ``texture_id``/``period`` are (N, 1, 1). Edges are soft over about a pixel."""
    ca = np.cos(2 * np.pi * a / period)
    cb = np.cos(2 * np.pi * b / period)
    sharp = period / np.pi                          # slope of the cosine -> about 1 pixel edges
    stripes = np.clip(0.5 + sharp * ca, 0, 1)
    checker = np.clip(0.5 + sharp * ca * cb, 0, 1)
    fa = a / period - np.round(a / period)
    fb = b / period - np.round(b / period)
    dots = np.clip(0.5 + (0.3 - np.hypot(fa, fb)) * period, 0, 1)
    out = np.zeros_like(a)
    for k, t in enumerate((stripes, checker, dots), start=1):
        out = np.where(texture_id == k, t, out)
    return out


def _draw(p, size):
    """Images (N, size, size, 3) uint8 for the per-image parameters ``p`` (dict of arrays)."""
    n = len(p["shape"])
    col = lambda x: np.asarray(x, np.float32).reshape(n, 1, 1)        # noqa: E731
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    dx, dy = xs[None] - col(p["cx"]), ys[None] - col(p["cy"])
    cos, sin, radius = col(np.cos(p["angle"])), col(np.sin(p["angle"])), col(p["radius"])
    a = cos * dx + sin * dy                                   # object frame, pixels
    b = -sin * dx + cos * dy
    inside = np.clip(0.5 - _signed_distance(col(p["shape"]), a / radius, b / radius) * radius,
                     0, 1)[..., None]
    t = _texture(col(p["texture"]), a, b, col(p["period"]))[..., None]
    c1 = p["color"].astype(np.float32)[:, None, None]
    c2 = p["color2"].astype(np.float32)[:, None, None]
    obj = c1 + (c2 - c1) * t
    g = col(p["grad_x"]) * (xs[None] / size - 0.5) + col(p["grad_y"]) * (ys[None] / size - 0.5)
    bg = p["background"].astype(np.float32)[:, None, None] + g[..., None]
    img = bg + (obj - bg) * inside + p["noise"]
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def make_shape_classes(n_per_class, size=32, seed=0):
    """``n_per_class`` images of each of the 10 classes of ``SHAPE_CLASS_NAMES``, shuffled.

    Returns ``(images, labels)``: a list of ``size x size x 3`` uint8 RGB arrays and a list of
    ints in 0..9 (``SHAPE_CLASS_NAMES[label]`` names the class). ``size`` is any integer
    >= 16 (32 is CIFAR-like, 64 ImageNet-like). Deterministic in ``(n_per_class, size, seed)``.
    Raises ``ValueError`` for a non-integer or too small ``n_per_class`` or ``size``.
    """
    per = _positive_int(n_per_class, "n_per_class")
    size = _positive_int(size, "size", minimum=16)
    g = np.random.default_rng([int(seed), per, size, 0x64])
    n = per * len(_CLASSES)
    labels = g.permutation(np.repeat(np.arange(len(_CLASSES)), per))
    shape = np.array([_SHAPES.index(_CLASSES[k][0]) for k in labels])
    texture = np.array([_TEXTURES.index(_CLASSES[k][1]) for k in labels])
    radius = g.uniform(0.22, 0.38, n) * size
    reach = 1.16 * radius + 0.5                    # the farthest outline point (triangle, star)
    p = {
        "shape": shape, "texture": texture, "radius": radius,
        "cx": g.uniform(reach, size - reach), "cy": g.uniform(reach, size - reach),
        "angle": g.uniform(0, 2 * np.pi, n),
        "period": np.maximum(4.0, radius * g.uniform(0.4, 0.6, n)),
        "color": g.uniform(0, 255, (n, 3)),
        "grad_x": g.uniform(-25, 25, n), "grad_y": g.uniform(-25, 25, n),
    }
    # the background differs from the object in every channel by 78..128 levels (mod 256)
    p["background"] = np.mod(p["color"] + 128 + g.uniform(-50, 50, (n, 3)), 256)
    lum = p["color"] @ np.array([0.299, 0.587, 0.114])
    p["color2"] = np.where((lum > 128)[:, None], p["color"] * 0.3,
                           p["color"] + (255 - p["color"]) * 0.7)
    images = np.empty((n, size, size, 3), np.uint8)
    for s in range(0, n, _CHUNK):
        part = {k: v[s:s + _CHUNK] for k, v in p.items()}
        part["noise"] = g.normal(0, 6, (len(part["shape"]), size, size, 3)).astype(np.float32)
        images[s:s + _CHUNK] = _draw(part, size)
    return list(images), [int(k) for k in labels]
