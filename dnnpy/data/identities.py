"""Procedural "identities": face-like RGB images of made-up people, for metric learning
and face clustering without a download (dlib's examples use photos of real people, which
cannot be shipped).

Every identity gets fixed random parameters: skin colour (a palette entry, perturbed), hair
colour (anywhere in the RGB cube), eye colour, face width and height, hairline, fringe slant
and hair volume, eye spacing, height and size, mouth width, height and colour, nose length, eyebrow thickness, hair length (short, medium or long, behind
the face), a beard (one in three) and glasses (one in three, with a frame colour).
Every image of an identity is drawn with its own jitter: head rotation (+-6 degrees), scale
(0.94..1.06), shift (+-5% of the size), lighting (brightness 0.9..1.1 and a linear shading
gradient of up to 15% in a random direction), a random greyish background (grey level
70..190, each channel +-25) and pixel noise (sigma 3). So two images of one identity differ
in pose and light, and two identities in their features. (The jitter was stronger, the hair
drawn from a palette and the background any colour until the face-clustering example showed
identities that a person could hardly tell apart: two faces of similar skin and palette hair
on differently coloured backgrounds.)

The drawing is vectorised numpy over all images at once: per image an inverse similarity
transform maps the pixel grid to face coordinates, and every face part is a soft-edged
(one-pixel anti-aliased) mask blended over the layers below.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["make_identities", "identity_parameters"]

# face parameters per identity: name -> (low, high) of a uniform draw (face units: the face
# spans about [-1, 1] on both axes at scale 1)
_RANGES = {
    "face_w": (0.55, 0.75), "face_h": (0.72, 0.9),
    "hairline": (-0.75, -0.35), "hair_volume": (0.04, 0.2),
    "eye_dx": (0.2, 0.34), "eye_y": (-0.25, -0.05), "eye_r": (0.07, 0.12),
    "mouth_w": (0.15, 0.38), "mouth_y": (0.38, 0.58), "mouth_h": (0.035, 0.09),
    "nose_len": (0.1, 0.3), "fringe_tilt": (-0.5, 0.5),
    "brow": (0.03, 0.07),
}
# discrete features, drawn after the ranges above: hair length (one of three) and beard (1/3)
_HAIR_LENGTHS = np.array([0.1, 0.45, 0.8])    # where the hair behind the face ends (face y)
# skin and eye colours are drawn from palettes (far apart) and then perturbed a little
_SKIN = np.array([[255, 219, 172], [241, 194, 125], [224, 172, 105], [198, 134, 66],
                  [141, 85, 36], [255, 205, 148], [234, 192, 134], [110, 70, 40]], np.float64)
_EYES = np.array([[60, 40, 20], [40, 90, 160], [50, 130, 60], [120, 120, 120]], np.float64)


def _positive_int(value, what, minimum=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise ValueError(f"make_identities: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def identity_parameters(num_identities, seed=0) -> dict:
    """The fixed parameters of ``num_identities`` identities as a dict of arrays (one row per
    identity): the shape parameters of ``_RANGES``, ``skin``/``hair``/``eyes``/``mouth``/
    ``frame`` colours (``(n, 3)`` float RGB), ``glasses`` (bool), ``hair_length`` and ``beard``
    (0 or 1). Deterministic in ``seed``; identity ``i`` is the same for any
    ``num_identities > i``."""
    n = _positive_int(num_identities, "num_identities")
    out = {k: [] for k in [*_RANGES, "skin", "hair", "eyes", "mouth", "frame", "glasses",
                           "hair_length", "beard"]}
    for i in range(n):  # one small generator per identity, so identity i never depends on n
        g = np.random.default_rng([int(seed), i])
        for k, (lo, hi) in _RANGES.items():
            out[k].append(g.uniform(lo, hi))
        out["skin"].append(_SKIN[g.integers(len(_SKIN))] + g.normal(0, 20, 3))
        out["hair"].append(g.uniform(0, 255, 3))
        out["eyes"].append(_EYES[g.integers(len(_EYES))] + g.normal(0, 30, 3))
        out["mouth"].append(np.array([150, 40, 50]) + g.normal(0, 40, 3))
        out["frame"].append(g.uniform(0, 255, 3) * np.array([1, 0.6, 0.6]))
        out["glasses"].append(g.random() < 1 / 3)
        out["hair_length"].append(_HAIR_LENGTHS[g.integers(3)])
        out["beard"].append(float(g.random() < 1 / 3))
    return {k: np.clip(np.asarray(v, np.float64), 0, 255) if k in
            ("skin", "hair", "eyes", "mouth", "frame") else np.asarray(v) for k, v in out.items()}


def _soft(d, pixel):
    """Coverage of a region given a signed distance ``d`` (negative inside), anti-aliased
    over one pixel (``pixel`` = one pixel in face units)."""
    return np.clip(0.5 - d / pixel, 0.0, 1.0)


def _blend(img, mask, color):
    """img = img*(1-mask) + color*mask; img (N,H,W,3), mask (N,H,W), color (N,3)."""
    m = mask[..., None]
    img *= 1 - m
    img += m * color[:, None, None, :]


def make_identities(num_identities, images_per_identity, size=32, seed=0):
    """``(images, labels)``: ``images_per_identity`` images of each of ``num_identities``
    procedural identities (identity-major order: identity 0's images first), as a list of
    ``size x size x 3`` uint8 RGB arrays and a list of int labels ``0 .. num_identities-1``.

    Deterministic in ``seed`` (the identities come from :func:`identity_parameters` with the
    same seed; the per-image jitter from a generator seeded with ``seed`` and the counts).
    ``size``: 16 or more (32 by default; 64 or 150 work too, the drawing scales). Raises
    ``ValueError`` on a non-integer or non-positive count or a size below 16."""
    n_id = _positive_int(num_identities, "num_identities")
    per = _positive_int(images_per_identity, "images_per_identity")
    size = _positive_int(size, "size", 16)
    p = identity_parameters(n_id, seed)
    ids = np.repeat(np.arange(n_id), per)
    n = len(ids)
    g = np.random.default_rng([int(seed), n_id, per, size, 0x63])

    # per-image jitter
    angle = np.radians(g.uniform(-6, 6, n))
    scale = g.uniform(0.94, 1.06, n)
    shift = g.uniform(-0.05, 0.05, (n, 2)) * 2          # in face units (image spans [-1, 1])
    bright = g.uniform(0.9, 1.1, n)
    light_dir = g.uniform(0, 2 * np.pi, n)
    light_amount = g.uniform(0.0, 0.15, n)
    background = g.uniform(70, 190, (n, 1)) + g.uniform(-25, 25, (n, 3))

    # the pixel grid in image units [-1, 1], then face coordinates by the inverse transform
    t = (np.arange(size) + 0.5) / size * 2 - 1
    yy, xx = np.meshgrid(t, t, indexing="ij")            # (H, W)
    c, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    k = scale[:, None, None]
    dx, dy = xx[None] - shift[:, 0, None, None], yy[None] - shift[:, 1, None, None]
    u = (c * dx + s * dy) / k                            # (N, H, W), face x
    v = (-s * dx + c * dy) / k                           # face y (down)
    pixel = 2.0 / size / scale[:, None, None]

    def per_id(name):                                   # (N, 1, 1) view of a scalar parameter
        return p[name][ids][:, None, None]

    img = np.empty((n, size, size, 3), np.float64)
    img[...] = background[:, None, None, :]
    fw, fh = per_id("face_w"), per_id("face_h")
    face_r = np.sqrt((u / fw) ** 2 + (v / fh) ** 2)
    # hair: a bigger ellipse behind the face, above the hairline (and a fringe over the face)
    hv = per_id("hair_volume")
    hair_r = np.sqrt((u / (fw + hv)) ** 2 + ((v + hv * 0.5) / (fh + hv)) ** 2)
    hair_back = _soft((hair_r - 1) * fw, pixel) * _soft(v - per_id("hair_length"), pixel)
    _blend(img, hair_back, p["hair"][ids])
    _blend(img, _soft((face_r - 1) * fw, pixel), p["skin"][ids])
    fringe = _soft((face_r - 1) * fw, pixel) * _soft(v - per_id("hairline") - per_id("fringe_tilt") * u,
                                                      pixel)
    _blend(img, fringe, p["hair"][ids])
    # eyes: white, then the iris, at (+-eye_dx, eye_y)
    ex, ey, er = per_id("eye_dx"), per_id("eye_y"), per_id("eye_r")
    for side in (-1, 1):
        d = np.sqrt((u - side * ex) ** 2 + (v - ey) ** 2)
        _blend(img, _soft(d - er, pixel), np.full((n, 3), 245.0))
        _blend(img, _soft(d - er * 0.55, pixel), p["eyes"][ids])
        ring = _soft(np.abs(d - er * 1.6) - max(0.035, 1.0 / size), pixel)
        _blend(img, ring * p["glasses"][ids][:, None, None], p["frame"][ids])
    bridge = _soft(np.maximum(np.abs(u) - (ex - er * 1.6), np.abs(v - ey) - 0.03), pixel)
    _blend(img, bridge * p["glasses"][ids][:, None, None], p["frame"][ids])
    # eyebrows (hair colour) above the eyes
    for side in (-1, 1):
        brow = _soft(np.maximum(np.abs(u - side * ex) - er * 1.2,
                                np.abs(v - (ey - er * 1.9)) - per_id("brow")), pixel)
        _blend(img, brow, p["hair"][ids])
    # beard: the lower face in hair colour, up to the mouth
    beard = _soft((face_r - 1) * fw, pixel) * _soft(per_id("mouth_y") + 0.02 - v, pixel)
    _blend(img, beard * per_id("beard"), p["hair"][ids])
    # nose: a darker skin line down the middle; mouth: an ellipse
    nose = _soft(np.maximum(np.abs(u) - 0.035, np.abs(v - (ey + per_id("nose_len") / 2 + 0.05))
                            - per_id("nose_len") / 2), pixel)
    _blend(img, nose * 0.5, p["skin"][ids] * 0.6)
    mouth_r = np.sqrt((u / per_id("mouth_w")) ** 2 + ((v - per_id("mouth_y")) / per_id("mouth_h")) ** 2)
    _blend(img, _soft((mouth_r - 1) * per_id("mouth_h"), pixel), p["mouth"][ids])

    # lighting: brightness times a linear gradient across the image, then noise
    gx, gy = np.cos(light_dir)[:, None, None], np.sin(light_dir)[:, None, None]
    light = bright[:, None, None] * (1 + light_amount[:, None, None] * (gx * xx + gy * yy))
    img *= light[..., None]
    img += g.normal(0, 3, img.shape)
    images = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return list(images), [int(i) for i in ids]
