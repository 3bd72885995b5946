"""dlib's point transforms (geometry/point_transforms.h) and the image sampling built on them
(image_transforms/interpolation.h): ``point_transform_affine`` and ``inv``, ``rotate_point``,
``rotation_matrix``, ``find_affine_transform``, ``find_similarity_transform``,
``rectangle_transform``, the interpolators and ``transform_image``.

Points are ``(x, y)`` with y pointing down the image. Maps are evaluated in float64 in dlib's
order of operations (``m @ p + b`` summed left to right), because a sample that lands exactly
on a pixel boundary goes to ``floor`` and a different rounding would pick the neighbouring
pixel. Images are numpy arrays ``HxW`` or ``HxWxC``; sampling maps the whole output grid at
once and gathers, there is no loop over pixels.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import rectangle_base, centered_drect, centered_rect, dcenter, drectangle, lround, rectangle
from .matrix_la import pinv, svd3
from .resize import _check_hw as _check_image

__all__ = ["point_transform_affine", "inv", "rotation_matrix", "rotate_point", "find_affine_transform",
           "find_similarity_transform", "rectangle_transform", "interpolate_bilinear",
           "interpolate_nearest_neighbor", "interpolate_quadratic", "transform_image"]


def _points(pts, what, name):
    a = np.asarray(pts, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"{name}: {what} must be a list of (x, y) points, got shape {a.shape}")
    return a


class point_transform_affine:
    """dlib's ``point_transform_affine``: ``p -> m @ p + b`` (``m`` 2x2, ``b`` 2-vector;
    default the identity). Call it on an ``(x, y)`` point (returns a tuple of floats), or use
    ``map_arrays(x, y)`` for whole coordinate arrays."""

    __slots__ = ("m", "b")

    def __init__(self, m=None, b=None):
        self.m = np.eye(2) if m is None else np.array(m, dtype=np.float64).reshape(2, 2)
        self.b = np.zeros(2) if b is None else np.array(b, dtype=np.float64).reshape(2)

    def get_m(self):
        return self.m.copy()

    def get_b(self):
        return self.b.copy()

    def map_arrays(self, x, y):
        """The map on coordinate arrays ``x``, ``y`` (any equal shapes), in dlib's order."""
        m, b = self.m, self.b
        return m[0, 0] * x + m[0, 1] * y + b[0], m[1, 0] * x + m[1, 1] * y + b[1]

    def __call__(self, p):
        x, y = float(p[0]), float(p[1])
        m, b = self.m, self.b
        return (m[0, 0] * x + m[0, 1] * y + b[0], m[1, 0] * x + m[1, 1] * y + b[1])

    def __mul__(self, other):
        """Composition: ``(self * other)(p) == self(other(p))``, as dlib's ``operator*``."""
        if not isinstance(other, point_transform_affine):
            return NotImplemented
        return point_transform_affine(self.m @ other.m, self.m @ other.b + self.b)

    def __eq__(self, other):
        return (isinstance(other, point_transform_affine) and np.array_equal(self.m, other.m)
                and np.array_equal(self.b, other.b))

    def __repr__(self):
        return f"point_transform_affine(m={self.m.tolist()}, b={self.b.tolist()})"


def inv(tform):
    """dlib's ``inv`` of a ``point_transform_affine``: ``p -> m^-1 @ p - m^-1 @ b``, with
    dlib's closed-form 2x2 inverse (``d = 1/det``, then ``m11*d, m01*-d, ...``) so the result
    matches dlib's to the last bit. A singular ``m`` is a ``ValueError``."""
    if not isinstance(tform, point_transform_affine):
        raise TypeError(f"inv: expected a point_transform_affine, got {type(tform).__name__}")
    (a, b), (c, d) = tform.m.tolist()
    det = a * d - b * c
    if det == 0:
        raise ValueError(f"inv: the transform's matrix is singular: {tform.m.tolist()}")
    r = 1.0 / det
    im = np.array([[d * r, b * -r], [c * -r, a * r]])
    b0, b1 = tform.b.tolist()
    return point_transform_affine(im, (-im[0, 0] * b0 + -im[0, 1] * b1, -im[1, 0] * b0 + -im[1, 1] * b1))


def rotation_matrix(angle):
    """``[[cos, -sin], [sin, cos]]`` of ``angle`` radians."""
    ca, sa = math.cos(angle), math.sin(angle)
    return np.array([[ca, -sa], [sa, ca]])


def rotate_point(center, p, angle):
    """dlib's ``rotate_point``: ``p`` turned by ``angle`` radians about ``center``. Image y
    points down, so a positive angle turns clockwise on screen."""
    sa, ca = math.sin(angle), math.cos(angle)
    x, y = p[0] - center[0], p[1] - center[1]
    return (ca * x - sa * y + center[0], sa * x + ca * y + center[1])


def find_affine_transform(from_points, to_points):
    """dlib's ``find_affine_transform``: the least-squares affine map taking ``from_points``
    to ``to_points`` (``Q @ pinv(P)`` with columns ``(x, y, 1)``), at least 3 pairs; exact
    for 3 points in general position. Computed as dlib computes it (``matrix_la.pinv``, dlib's
    own SVD), so the result equals dlib's bit for bit."""
    f = _points(from_points, "from_points", "find_affine_transform")
    t = _points(to_points, "to_points", "find_affine_transform")
    if len(f) != len(t) or len(f) < 3:
        raise ValueError(f"find_affine_transform: needs equally many (>= 3) from and to points, got "
                         f"{len(f)} and {len(t)}")
    # dlib's own SVD-based pinv and its summation order: the map must equal dlib's to the bit
    pi = pinv([f[:, 0].tolist(), f[:, 1].tolist(), [1.0] * len(f)])
    m = []
    for row in (t[:, 0].tolist(), t[:, 1].tolist()):
        out = []
        for c in range(3):
            acc = row[0] * pi[0][c]
            for i in range(1, len(row)):
                acc += row[i] * pi[i][c]
            out.append(acc)
        m.append(out)
    return point_transform_affine([m[0][:2], m[1][:2]], [m[0][2], m[1][2]])


def find_similarity_transform(from_points, to_points):
    """dlib's ``find_similarity_transform``: the least-squares rotation + uniform scale +
    translation taking ``from_points`` to ``to_points`` (Umeyama 1991, eqs. 34-43), at least 2
    pairs. Computed as dlib computes it (``matrix_la.svd3``, dlib's own SVD), bit for bit."""
    f = _points(from_points, "from_points", "find_similarity_transform")
    t = _points(to_points, "to_points", "find_similarity_transform")
    if len(f) != len(t) or len(f) < 2:
        raise ValueError(f"find_similarity_transform: needs equally many (>= 2) from and to points, got "
                         f"{len(f)} and {len(t)}")
    # dlib's operations in dlib's order (its 2x2 SVD included), so the map equals dlib's
    fl, tl = f.tolist(), t.tolist()
    nf = float(len(fl))
    mfx = mfy = mtx = mty = 0.0
    for (fx, fy), (tx, ty) in zip(fl, tl):
        mfx, mfy, mtx, mty = mfx + fx, mfy + fy, mtx + tx, mty + ty
    mfx, mfy, mtx, mty = mfx / nf, mfy / nf, mtx / nf, mty / nf
    sigma_from = c00 = c01 = c10 = c11 = 0.0
    for (fx, fy), (tx, ty) in zip(fl, tl):
        dfx, dfy, dtx, dty = fx - mfx, fy - mfy, tx - mtx, ty - mty
        sigma_from += dfx * dfx + dfy * dfy
        c00, c01, c10, c11 = c00 + dtx * dfx, c01 + dtx * dfy, c10 + dty * dfx, c11 + dty * dfy
    sigma_from /= nf
    rn = 1.0 / nf  # dlib divides a matrix by a scalar as a multiply by its reciprocal
    cov = [[c00 * rn, c01 * rn], [c10 * rn, c11 * rn]]
    u, d, v = svd3(cov)
    s0 = s1 = 1.0
    det_cov = cov[0][0] * cov[1][1] - cov[0][1] * cov[1][0]
    if det_cov < 0 or (det_cov == 0 and (u[0][0] * u[1][1] - u[0][1] * u[1][0])
                       * (v[0][0] * v[1][1] - v[0][1] * v[1][0]) < 0):
        if d[1] < d[0]:
            s1 = -1.0
        else:
            s0 = -1.0
    r = [[u[i][0] * s0 * v[j][0] + u[i][1] * s1 * v[j][1] for j in range(2)] for i in range(2)]
    c = 1.0
    if sigma_from != 0:
        c = 1.0 / sigma_from * (d[0] * s0 + d[1] * s1)
    b = [(mtx, mty)[i] - c * (r[i][0] * mfx + r[i][1] * mfy) for i in range(2)]
    return point_transform_affine([[c * r[i][j] for j in range(2)] for i in range(2)], b)


def _length(x, y):
    return math.sqrt(x * x + y * y)  # dlib's length(); math.hypot can differ in the last bit


class rectangle_transform:
    """dlib's ``rectangle_transform``: maps a box through an affine map. The result is centred
    on the bounding box of the 4 mapped corners and scaled so that its area is that of the
    mapped (possibly rotated) box, ``(1 + |T(tl) - T(tr)|) * (1 + |T(tl) - T(bl)|)``. A
    ``drectangle`` gives a ``drectangle``; a ``rectangle`` gives the ``rectangle`` of dlib's
    integer overload (centre and rounded sides)."""

    __slots__ = ("tform",)

    def __init__(self, tform=None):
        self.tform = point_transform_affine() if tform is None else tform

    def get_tform(self):
        return self.tform

    def _drect(self, r):
        T = self.tform
        tl, tr, bl, br = T(r.tl_corner()), T(r.tr_corner()), T(r.bl_corner()), T(r.br_corner())
        new_area = (1 + _length(tl[0] - tr[0], tl[1] - tr[1])) * (1 + _length(tl[0] - bl[0], tl[1] - bl[1]))
        box = drectangle()
        for p in (tl, tr, bl, br):
            box = box + drectangle(*p, *p)
        scale = math.sqrt(new_area / box.area())
        return centered_drect(dcenter(box), box.width() * scale, box.height() * scale)

    def __call__(self, r):
        if isinstance(r, drectangle):
            return self._drect(r)
        if not isinstance(r, rectangle_base):
            r = rectangle._coerce(r)
        d = self._drect(drectangle._coerce(r))
        return centered_rect(dcenter(d), lround(d.width()), lround(d.height()))


# ----------------------------------------------------------------------------------------
# interpolation (vectorised: each interpolator samples whole coordinate arrays)

def _to_dtype(v, dtype):
    """dlib's ``vector_to_pixel``/``static_cast``: integers are truncated toward zero."""
    if np.issubdtype(dtype, np.integer):
        return np.trunc(v).astype(dtype)
    return v.astype(dtype)


def _gather(img, yi, xi):
    return img[yi, xi]  # (H, W) -> same shape as the index arrays, (H, W, C) -> (..., C)


class interpolate_nearest_neighbor:
    """dlib's ``interpolate_nearest_neighbor``: the pixel at ``floor(p + 0.5)``; a point
    outside the image fails (background)."""

    def sample(self, img, x, y):
        """``(values, ok)``: values of ``img``'s dtype (shape of ``x`` plus channels) and the
        mask of the points that could be sampled."""
        with np.errstate(invalid="ignore"):
            xr, yr = np.floor(x + 0.5), np.floor(y + 0.5)
            ok = (xr >= 0) & (yr >= 0) & (xr <= img.shape[1] - 1) & (yr <= img.shape[0] - 1)
        xi = np.where(ok, xr, 0).astype(np.intp)
        yi = np.where(ok, yr, 0).astype(np.intp)
        if img.shape[0] == 0 or img.shape[1] == 0:
            return np.zeros(x.shape + img.shape[2:], img.dtype), ok
        return _gather(img, yi, xi), ok


class interpolate_bilinear:
    """dlib's ``interpolate_bilinear``: ``left = floor(x)``, ``top = floor(y)``; the 2x2
    neighbourhood must lie inside the image (else background); the value is computed in
    float64 as ``(1-ty)((1-tx) tl + tx tr) + ty((1-tx) bl + tx br)`` and truncated for integer
    images (a static_cast in dlib, not rounding)."""

    def sample(self, img, x, y):
        nr, nc = img.shape[:2]
        with np.errstate(invalid="ignore"):
            left, top = np.floor(x), np.floor(y)
            ok = (left >= 0) & (top >= 0) & (left + 1 < nc) & (top + 1 < nr)
        if not ok.any():
            return np.zeros(x.shape + img.shape[2:], img.dtype), ok
        li = np.where(ok, left, 0).astype(np.intp)
        ti = np.where(ok, top, 0).astype(np.intp)
        lr = np.where(ok, x - left, 0.0)
        tb = np.where(ok, y - top, 0.0)
        if img.ndim == 3:
            lr, tb = lr[..., None], tb[..., None]
        ri, bi = np.minimum(li + 1, nc - 1), np.minimum(ti + 1, nr - 1)
        tl, tr = _gather(img, ti, li).astype(np.float64), _gather(img, ti, ri).astype(np.float64)
        bl, br = _gather(img, bi, li).astype(np.float64), _gather(img, bi, ri).astype(np.float64)
        v = (1 - tb) * ((1 - lr) * tl + lr * tr) + tb * ((1 - lr) * bl + lr * br)
        return _to_dtype(v, img.dtype), ok


class interpolate_quadratic:
    """dlib's ``interpolate_quadratic``: a quadratic fitted to the 3x3 neighbourhood of
    ``floor(p + 0.5)`` (which must lie inside the image), clamped to the pixel type's range
    and truncated for integer images."""

    def sample(self, img, x, y):
        nr, nc = img.shape[:2]
        with np.errstate(invalid="ignore"):
            cx, cy = np.floor(x + 0.5), np.floor(y + 0.5)
            ok = (cx >= 1) & (cy >= 1) & (cx + 1 <= nc - 1) & (cy + 1 <= nr - 1)
        if not ok.any():
            return np.zeros(x.shape + img.shape[2:], img.dtype), ok
        c = np.where(ok, cx, 1).astype(np.intp)
        r = np.where(ok, cy, 1).astype(np.intp)
        px, py = np.where(ok, x - cx, 0.0), np.where(ok, y - cy, 0.0)
        if img.ndim == 3:
            px, py = px[..., None], py[..., None]

        def g(dr, dc):
            return _gather(img, r + dr, c + dc).astype(np.float64)

        tl, tm, tr = g(-1, -1), g(-1, 0), g(-1, 1)
        ml, mm, mr = g(0, -1), g(0, 0), g(0, 1)
        bl, bm, br = g(1, -1), g(1, 0), g(1, 1)
        # dlib's fitted coefficients, with its decimal constants (parity needs the same ones)
        w0 = (tr + mr + br - tl - ml - bl) * 0.16666666666
        w1 = (bl + bm + br - tl - tm - tr) * 0.16666666666
        w2 = (tl + tr + ml + mr + bl + br) * 0.16666666666 - (tm + mm + bm) * 0.333333333
        w3 = (tl - tr - bl + br) * 0.25
        w4 = (tl + tm + tr + bl + bm + br) * 0.16666666666 - (ml + mm + mr) * 0.333333333
        w5 = (tm + ml + mr + bm) * 0.222222222 - (tl + tr + bl + br) * 0.11111111 + mm * 0.55555556
        v = w0 * px + w1 * py + w2 * (px * px) + w3 * (px * py) + w4 * (py * py) + w5
        if np.issubdtype(img.dtype, np.integer):
            info = np.iinfo(img.dtype)
            v = np.clip(v, info.min, info.max)
        return _to_dtype(v, img.dtype), ok


def _map_grid(map_point, rows, cols, top=0, left=0):
    c, r = np.meshgrid(np.arange(left, left + cols, dtype=np.float64),
                       np.arange(top, top + rows, dtype=np.float64))
    if hasattr(map_point, "map_arrays"):
        return map_point.map_arrays(c, r)
    x, y = map_point(c, r)
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def transform_image(img, map_point, rows, cols, interp=None, background=0):
    """dlib's ``transform_image``: a ``rows x cols`` image whose pixel ``(c, r)`` samples
    ``img`` at ``map_point((c, r))`` with ``interp`` (default ``interpolate_bilinear()``);
    pixels whose sample fails get ``background`` (dlib's ``black_background``: 0).

    ``map_point`` is a ``point_transform_affine`` (or anything with ``map_arrays(x, y)``), or
    a callable ``f(x, y) -> (x', y')`` on float64 coordinate arrays."""
    img = _check_image(img, "transform_image")
    rows, cols = int(rows), int(cols)
    if rows < 0 or cols < 0:
        raise ValueError(f"transform_image: the output size must be >= 0, got {rows}x{cols}")
    interp = interpolate_bilinear() if interp is None else interp
    x, y = _map_grid(map_point, rows, cols)
    v, ok = interp.sample(img, x, y)
    if not ok.all():
        v[~ok] = background
    return v
