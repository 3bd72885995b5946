"""dnnpy.image.extract_fhog_features against dlib's own (``tests/dlib_cpp/fhog_tool.cpp``,
output in ``tests/data/fhog_dlib.txt.gz``): patterned and noise images, grey and RGB, cell
sizes 4 to 8, filter paddings. dlib computes in float32 and prints 9 digits; dnnpy sums the
votes in float64, so the features agree to float32 rounding: 2e-6 absolute (features lie in
[0, 0.4] and the texture ones below 2; measured: 1e-7)."""

import gzip
import os

import numpy as np
import pytest

from dnnpy.image import extract_fhog_features
from helpers import needs_compiled_kernels

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fhog_dlib.txt.gz")


def _pattern(nr, nc, rgb):
    r, c = np.mgrid[0:nr, 0:nc]
    if not rgb:
        return ((r * 37 + c * 11 + (r * c) % 13) & 255).astype(np.uint8)
    return np.stack([(r * 37 + c * 11 + k * 71 + (r * c * (k + 1)) % 17) & 255 for k in range(3)],
                    axis=-1).astype(np.uint8)


def _lcg(count, state):
    """The tool's generator: state = state * 1103515245 + 12345 mod 2**31, byte (state >> 16)."""
    out = np.empty(count, np.uint8)
    for i in range(count):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = (state >> 16) & 255
    return out, state


def _images():
    noise, state = _lcg(71 * 53, 12345)
    noise_rgb, _ = _lcg(64 * 80 * 3, state)
    return {"gray": _pattern(37, 45, False), "rgb": _pattern(50, 61, True),
            "gray_big": _pattern(90, 123, False), "noise_gray": noise.reshape(71, 53),
            "noise_rgb": noise_rgb.reshape(64, 80, 3)}


def _cases():
    with gzip.open(DATA, "rt") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines) and lines[i].strip():
        name, cell, pr, pc, rows, cols = lines[i].split()
        rows, cols = int(rows), int(cols)
        values = np.array([[float(v) for v in lines[i + 1 + k].split()] for k in range(rows * cols)])
        yield name, int(cell), int(pr), int(pc), values.reshape(rows, cols, 31)
        i += 1 + rows * cols


def test_fhog_equals_dlib(kernels):
    images = _images()
    cases = list(_cases())
    assert len(cases) == 9
    for name, cell, pr, pc, want in cases:
        got = extract_fhog_features(images[name], cell, pr, pc)
        assert got.shape == want.shape and got.dtype == np.float32, (name, cell, got.shape, want.shape)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=2e-6, err_msg=f"{name} {cell}")


@pytest.mark.parametrize("cell", [8, 5])
def test_fhog_bands_change_nothing(monkeypatch, cell, kernels):
    """The histograms are summed a band of pixel rows at a time: bands of one cell row (the
    first padded, the last shorter) give the features one band gives (float64 sums of the
    same votes, in another order: 1e-6)."""
    import dnnpy.image.fhog as fhog
    img = _images()["noise_rgb"]
    whole = extract_fhog_features(img, cell)
    monkeypatch.setattr(fhog, "_BAND_PIXELS", 1)
    np.testing.assert_allclose(extract_fhog_features(img, cell), whole, rtol=0, atol=1e-6)


def test_compiled_fhog_equals_numpys():
    """The compiled histograms (dnnpy/kernels/fhog.py) against the numpy ones: grey and RGB
    (ties between channels included: equal channels), strided views, widths with and
    without a tail after dlib's 8-pixel SIMD blocks, cell sizes 3 to 8. The two sum the
    same float64 votes in different orders: 1e-6 absolute on float32 features, as above
    (measured: 0 on these)."""
    jit = needs_compiled_kernels()
    rng = np.random.default_rng(5)
    noise = rng.integers(0, 256, (67, 93, 3), dtype=np.uint8)
    tied = np.repeat(rng.integers(0, 256, (40, 52, 1), dtype=np.uint8), 3, axis=2)
    for img in (noise, noise[:, :, 0], noise[::2, 1:], tied, _pattern(58, 81, True),
                noise[:, ::-1, ::-1]):
        for cell in (8, 5, 3):
            got = extract_fhog_features(img, cell, 2, 3)
            with jit.force_numpy():
                want = extract_fhog_features(img, cell, 2, 3)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=f"{img.shape} {cell}")


def test_fhog_edges_and_bad_input(kernels):
    assert extract_fhog_features(np.zeros((10, 10), np.uint8)).shape == (0, 0, 31)   # < 3 cells
    flat = extract_fhog_features(np.full((40, 40, 3), 7, np.uint8))
    assert flat.shape == (3, 3, 31) and not flat.any()          # no gradient: all zero
    with pytest.raises(TypeError, match="uint8"):
        extract_fhog_features(np.zeros((40, 40), np.float32))
    with pytest.raises(ValueError, match="cell_size >= 2"):
        extract_fhog_features(np.zeros((40, 40), np.uint8), 1)
