"""dlib's small dense linear algebra (matrix/matrix_la.h) as dlib computes it: ``svd3`` (its
translation of the Handbook's Golub-Reinsch SVD, ``svd4``) and ``pinv``, on plain Python floats.

Why not numpy: dlib's point transforms (``find_affine_transform`` is ``Q @ pinv(P)``) feed
image sampling, where a coordinate that lands exactly on a pixel boundary is floored, so the
last bit of the transform picks the pixel. LAPACK's SVD (numpy's) rounds differently from dlib's
own code, which dlib uses for these sizes (and always in dlib-bin, built without LAPACK or FMA).
So this module repeats dlib's floating-point operations one by one, in dlib's order; the
matrices are tiny (2x2 to n x 3), there is nothing to vectorise.

Matrices are lists of rows of floats.
"""

from __future__ import annotations

import math
import sys

__all__ = ["svd3", "pinv"]

_EPS = sys.float_info.epsilon
_TOL = sys.float_info.min / _EPS


def _householder(u, q, e, m, n):
    """Householder reduction of ``u`` (m x n, in place) to bidiagonal form: diagonal ``q``,
    superdiagonal ``e``. Returns ``(g, l, x)``: the last ``g`` and ``l`` (the accumulation
    of ``v`` starts from them) and the largest ``|q(i)| + |e(i)|``."""
    g = x = 0.0
    l = 0
    for i in range(n):
        e[i] = g
        l = i + 1
        s = 0.0
        for j in range(i, m):
            s += u[j][i] * u[j][i]
        if s < _TOL:
            g = 0.0
        else:
            f = u[i][i]
            g = math.sqrt(s) if f < 0 else -math.sqrt(s)
            h = f * g - s
            u[i][i] = f - g
            for j in range(l, n):
                s = 0.0
                for k in range(i, m):
                    s += u[k][i] * u[k][j]
                f = s / h
                for k in range(i, m):
                    u[k][j] += f * u[k][i]
        q[i] = g
        s = 0.0
        for j in range(l, n):
            s += u[i][j] * u[i][j]
        if s < _TOL:
            g = 0.0
        else:
            f = u[i][i + 1]
            g = math.sqrt(s) if f < 0 else -math.sqrt(s)
            h = f * g - s
            u[i][i + 1] = f - g
            for j in range(l, n):
                e[j] = u[i][j] / h
            for j in range(l, m):
                s = 0.0
                for k in range(l, n):
                    s += u[j][k] * u[i][k]
                for k in range(l, n):
                    u[j][k] += s * e[k]
        y = abs(q[i]) + abs(e[i])
        if y > x:
            x = y
    return g, l, x


def _accumulate_v(u, e, v, n, g, l):
    for i in range(n - 1, -1, -1):
        if g != 0.0:
            h = u[i][i + 1] * g
            for j in range(l, n):
                v[j][i] = u[i][j] / h
            for j in range(l, n):
                s = 0.0
                for k in range(l, n):
                    s += u[i][k] * v[k][j]
                for k in range(l, n):
                    v[k][j] += s * v[k][i]
        for j in range(l, n):
            v[i][j] = v[j][i] = 0.0
        v[i][i] = 1.0
        g = e[i]
        l = i


def _accumulate_u(u, q, m, n):
    """The left-hand transformations, for dlib's SVD_SKINNY_U (``u`` stays m x n)."""
    for i in range(n - 1, -1, -1):
        l = i + 1
        g = q[i]
        for j in range(l, n):
            u[i][j] = 0.0
        if g != 0.0:
            h = u[i][i] * g
            for j in range(l, n):
                s = 0.0
                for k in range(l, m):
                    s += u[k][i] * u[k][j]
                f = s / h
                for k in range(i, m):
                    u[k][j] += f * u[k][i]
            for j in range(i, m):
                u[j][i] /= g
        else:
            for j in range(i, m):
                u[j][i] = 0.0
        u[i][i] += 1.0


def _rotate_cols(a, rows, i0, i1, c, s):
    for j in range(rows):
        y, z = a[j][i0], a[j][i1]
        a[j][i0] = y * c + z * s
        a[j][i1] = -y * s + z * c


def _diagonalise(u, q, e, v, m, n, x):
    """QR iterations on the bidiagonal form (dlib's labels: test_f_splitting, cancellation,
    test_f_convergence, convergence). Returns 0, or k when singular value k did not converge
    in 300 iterations (dlib then stops, as here)."""
    eps = _EPS * x
    for k in range(n - 1, -1, -1):
        iterations = 0
        while True:
            # test_f_splitting: e(0) is always 0, so the scan stops at l >= 0
            cancel = False
            l = k
            while l >= 0:
                if abs(e[l]) <= eps:
                    break
                if abs(q[l - 1]) <= eps:
                    cancel = True
                    break
                l -= 1
            if cancel:  # cancellation of e(l), l > 0
                c, s = 0.0, 1.0
                l1 = l - 1
                for i in range(l, k + 1):
                    f = s * e[i]
                    e[i] *= c
                    if abs(f) <= eps:
                        break
                    g = q[i]
                    h = q[i] = math.sqrt(f * f + g * g)
                    c = g / h
                    s = -f / h
                    _rotate_cols(u, m, l1, i, c, s)
            # test_f_convergence
            z = q[k]
            if l == k:
                break
            iterations += 1
            if iterations > 300:
                return k
            # shift from the bottom 2x2 minor
            x, y, g, h = q[l], q[k - 1], e[k - 1], e[k]
            f = ((y - z) * (y + z) + (g - h) * (g + h)) / (2 * h * y)
            g = math.sqrt(f * f + 1.0)
            f = ((x - z) * (x + z) + h * (y / ((f - g) if f < 0 else (f + g)) - h)) / x
            # next QR transformation
            c = s = 1.0
            for i in range(l + 1, k + 1):
                g, y = e[i], q[i]
                h = s * g
                g *= c
                e[i - 1] = z = math.sqrt(f * f + h * h)
                c = f / z
                s = h / z
                f = x * c + g * s
                g = -x * s + g * c
                h = y * s
                y *= c
                _rotate_cols(v, n, i - 1, i, c, s)
                q[i - 1] = z = math.sqrt(f * f + h * h)
                if z != 0:
                    c = f / z
                    s = h / z
                f = c * g + s * y
                x = -s * g + c * y
                _rotate_cols(u, m, i - 1, i, c, s)
            e[l] = 0.0
            e[k] = f
            q[k] = x
        # convergence: make q(k) non-negative
        if z < 0.0:
            q[k] = -z
            for j in range(n):
                v[j][k] = -v[j][k]
    return 0


def svd3(a):
    """dlib's ``svd3(a, u, w, v)`` for an ``m x n`` matrix with ``m >= n``, as built without
    LAPACK: ``a == u @ diag(w) @ v.T`` with ``u`` m x n, ``w`` the n singular values (not
    sorted) and ``v`` n x n. Returns ``(u, w, v)`` as lists. A failure to converge (dlib
    ignores it) is a ``ValueError`` here."""
    m, n = len(a), len(a[0]) if len(a) else 0
    if n == 0 or m < n:
        raise ValueError(f"svd3: needs an m x n matrix with m >= n >= 1, got {m} x {n}")
    u = [[float(x) for x in row] for row in a]
    if any(len(row) != n for row in u):
        raise ValueError("svd3: the rows of the matrix differ in length")
    q, e = [0.0] * n, [0.0] * n
    v = [[0.0] * n for _ in range(n)]
    g, l, x = _householder(u, q, e, m, n)
    _accumulate_v(u, e, v, n, g, l)
    _accumulate_u(u, q, m, n)
    k = _diagonalise(u, q, e, v, m, n, x)
    if k:
        raise ValueError(f"svd3: singular value {k} did not converge in 300 iterations")
    return u, q, v


def _transpose(a):
    return [list(col) for col in zip(*a)]


def _pinv_tall(a):
    """dlib's ``pinv_helper`` (``a`` has at least as many rows as columns, tol = 0)."""
    m, n = len(a), len(a[0])
    u, w, v = svd3(a)
    wmax = w[0]
    for x in w[1:]:
        if x > wmax:
            wmax = x
    eps = _EPS * max(m, n) * wmax
    rw = [(1.0 / x) if (x >= eps or x <= -eps) and x != 0 else 0.0 for x in w]
    vs = [[v[i][k] * rw[k] for k in range(n)] for i in range(n)]
    out = []
    for i in range(n):
        row = []
        for j in range(m):
            t = vs[i][0] * u[j][0]
            for k in range(1, n):
                t += vs[i][k] * u[j][k]
            row.append(t)
        out.append(row)
    return out


def pinv(a):
    """dlib's ``pinv(a)`` (tol = 0): the Moore-Penrose pseudo-inverse of the ``r x c``
    matrix ``a`` (a list of rows), ``c x r``, through ``svd3`` (of ``a``'s transpose when
    ``c > r``), singular values below ``eps * max(r, c) * max(w)`` treated as 0."""
    a = [[float(x) for x in row] for row in a]
    if not a or not a[0] or any(len(row) != len(a[0]) for row in a):
        raise ValueError("pinv: expected a non-empty matrix with rows of equal length")
    if len(a[0]) > len(a):
        return _transpose(_pinv_tall(_transpose(a)))
    return _pinv_tall(a)
