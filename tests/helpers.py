"""Plumbing shared by the test files: dlib-format records of single objects, and one
tolerance rule for comparing two computations of the same values."""

import numpy as np

from dnnpy.serialization.primitives import Reader, Writer


def ser(obj) -> bytes:
    """``obj.serialize`` into bytes (one layer, loss or input record)."""
    w = Writer()
    obj.serialize(w)
    return w.bytes()


def s(text) -> bytes:
    """dlib's encoding of a string (a version tag)."""
    w = Writer()
    w.string(text)
    return w.bytes()


def read_into(obj, data: bytes):
    """Deserialize ``data`` into ``obj``; it must consume every byte. Returns ``obj``."""
    r = Reader(data, "test")
    obj.deserialize(r)
    assert r.at_end(), f"{r.remaining()} bytes left after {obj!r}"
    return obj


def assert_close_scaled(got, want, tol, what=""):
    """``|got - want| <= tol * (|want| + max(1, max|want|))`` elementwise: a relative
    tolerance, plus an absolute one scaled to the data, so values near zero in a tensor of
    large values are not held to a relative error. Shapes must agree."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shapes {got.shape} and {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)
