"""dnnpy.data.datasets (shipped digits, MNIST idx reader, generated images) and dnnpy.image.png."""

import gzip
import struct
import zlib

import numpy as np
import pytest

from dnnpy.image import png
from dnnpy.data.datasets import (DIGITS_PATH, load_digits, load_mnist_dataset, resize_bilinear,
                            synthetic_images)


# ---------------------------------------------------------------------------- shipped digits

def test_digits_file_is_small_and_attributed():
    assert DIGITS_PATH.is_file()
    assert DIGITS_PATH.stat().st_size < 200_000
    license_text = (DIGITS_PATH.parent / "DIGITS_LICENSE.txt").read_text()
    assert "CC BY 4.0" in license_text and "Alpaydin" in license_text


def test_load_digits_native():
    images, labels = load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert set(np.unique(labels)) == set(range(10))
    assert np.bincount(labels).min() > 150          # every class is well represented
    assert images.max() == 255 and images.min() == 0  # 0..16 scaled to 0..255
    # the stored values are counts 0..16: every scaled value is a multiple of 255/16, rounded
    assert np.all(np.isin(images, np.rint(np.arange(17) * 255 / 16).astype(np.uint8)))


def test_load_digits_resized_and_split():
    tr_x, tr_y, te_x, te_y = load_digits(size=28, test_fraction=0.2)
    assert tr_x.shape == (1438, 28, 28) and te_x.shape == (359, 28, 28)
    assert tr_x.dtype == te_x.dtype == np.uint8
    assert len(tr_y) == 1438 and len(te_y) == 359
    # deterministic, and train/test are disjoint pieces of the whole set
    again = load_digits(size=28, test_fraction=0.2)
    assert np.array_equal(again[0], tr_x) and np.array_equal(again[3], te_y)
    whole, labels = load_digits(size=28)
    assert sorted(np.concatenate([tr_y, te_y]).tolist()) == sorted(labels.tolist())
    # the upsampled image keeps the digit's mass where the 8x8 one has it
    small, _ = load_digits()
    assert np.corrcoef(resize_bilinear(small[:1], 28, 28)[0].ravel(), whole[0].ravel())[0, 1] > 0.99


def test_load_digits_bad_arguments():
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1.5)
    with pytest.raises(ValueError, match="size"):
        load_digits(size=0)


def test_resize_bilinear_values():
    a = np.array([[[0.0, 10.0], [20.0, 30.0]]])
    same = resize_bilinear(a, 2, 2)
    assert np.allclose(same, a)
    up = resize_bilinear(a, 4, 4)[0]
    # pixel centres: output 0 samples input -0.25 (clamped to 0), output 1 samples 0.25
    assert up[0, 0] == 0 and up[3, 3] == 30
    assert np.isclose(up[0, 1], 2.5) and np.isclose(up[1, 0], 5.0)
    assert np.isclose(up[1, 1], 7.5)
    rgb = resize_bilinear(np.ones((2, 3, 3, 3)), 5, 7)
    assert rgb.shape == (2, 5, 7, 3) and np.allclose(rgb, 1)
    with pytest.raises(ValueError, match="resize_bilinear"):
        resize_bilinear(np.ones((3, 3)), 4, 4)


def test_synthetic_images():
    a = synthetic_images(5, size=32, seed=3)
    assert a.shape == (5, 32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, synthetic_images(5, size=32, seed=3))
    assert not np.array_equal(a, synthetic_images(5, size=32, seed=4))
    # smooth: neighbouring pixels differ little, the images differ a lot from each other
    assert np.abs(np.diff(a.astype(int), axis=1)).mean() < 6
    assert np.abs(a[0].astype(int) - a[1].astype(int)).mean() > 10
    with pytest.raises(ValueError, match="synthetic_images"):
        synthetic_images(0)


# ---------------------------------------------------------------------------- MNIST reader

def _idx_images(x):
    return struct.pack(">IIII", 2051, *x.shape) + x.tobytes()


def _idx_labels(y):
    return struct.pack(">II", 2049, len(y)) + y.astype(np.uint8).tobytes()


def _write_mnist(folder, n_train=5, n_test=3, rows=4, cols=6, gz=False, dotted=False, seed=0):
    rng = np.random.default_rng(seed)
    data = (rng.integers(0, 256, (n_train, rows, cols), dtype=np.uint8),
            rng.integers(0, 10, n_train), rng.integers(0, 256, (n_test, rows, cols), dtype=np.uint8),
            rng.integers(0, 10, n_test))
    names = (["train-images.idx3-ubyte", "train-labels.idx1-ubyte", "t10k-images.idx3-ubyte",
              "t10k-labels.idx1-ubyte"] if dotted else
             ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
              "t10k-labels-idx1-ubyte"])
    blobs = (_idx_images(data[0]), _idx_labels(data[1]), _idx_images(data[2]), _idx_labels(data[3]))
    paths = []
    for name, blob in zip(names, blobs):
        path = folder / (name + ".gz" if gz else name)
        path.write_bytes(gzip.compress(blob) if gz else blob)
        paths.append(path)
    return data, paths


@pytest.mark.parametrize("gz,dotted", [(False, False), (True, False), (False, True), (True, True)])
def test_mnist_reader_round_trip(tmp_path, gz, dotted):
    data, _ = _write_mnist(tmp_path, gz=gz, dotted=dotted)
    got = load_mnist_dataset(tmp_path)
    assert len(got) == 4
    for want, have in zip(data, got):
        assert np.array_equal(want, have)
    assert got[0].dtype == np.uint8 and got[0].shape == (5, 4, 6)
    assert got[1].dtype == np.int64 and got[3].shape == (3,)


def test_mnist_reader_missing_file(tmp_path):
    _, paths = _write_mnist(tmp_path)
    paths[2].unlink()
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        load_mnist_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_mnist_dataset(tmp_path / "nope")


def test_mnist_reader_errors_name_the_file(tmp_path):
    _, paths = _write_mnist(tmp_path)
    good = [p.read_bytes() for p in paths]

    def check(index, blob, pattern):
        paths[index].write_bytes(blob)
        with pytest.raises(ValueError, match=pattern) as e:
            load_mnist_dataset(tmp_path)
        assert paths[index].name in str(e.value)
        paths[index].write_bytes(good[index])

    check(0, good[0][:-1], "truncated")                               # short data
    check(0, good[0][:10], "truncated")                               # short header
    check(1, good[1] + b"\0", "unexpected bytes")                     # trailing bytes
    check(2, good[1], "magic number 2049, expected 2051")             # labels where images go
    check(3, struct.pack(">II", 2049, 2) + b"\0\1", "3 images but")  # count mismatch
    check(1, good[1][:-1] + b"\x0c", "label 12")                      # label out of range
    check(2, _idx_images(np.zeros((3, 5, 6), np.uint8)), r"\(4, 6\) but")  # size mismatch
    # a .gz file that is not gzip data
    paths[0].unlink()
    bad = tmp_path / "train-images-idx3-ubyte.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="unable to read .*train-images-idx3-ubyte.gz"):
        load_mnist_dataset(tmp_path)


# ---------------------------------------------------------------------------- PNG writer

def _chunks(data):
    pos, out = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        out.append((kind, body))
        pos += 12 + length
    return out


@pytest.mark.parametrize("shape", [(5, 7), (4, 9, 3), (1, 1)])
def test_png_is_valid_and_decodes_back(tmp_path, shape):
    img = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    path = tmp_path / "x.png"
    assert png.write_png(path, img) == str(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks = _chunks(data)
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    w, h, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (h, w) == shape[:2] and depth == 8 and ctype == (2 if len(shape) == 3 else 0)
    assert (comp, filt, interlace) == (0, 0, 0)
    zlib.decompress(chunks[1][1])            # a valid zlib stream
    assert np.array_equal(png.read_png(path), img)
    assert not list(tmp_path.glob("*.tmp*")) and not list(tmp_path.glob(".*.tmp"))  # no temporary file left


def test_png_bad_input(tmp_path):
    with pytest.raises(TypeError, match="uint8"):
        png.write_png(tmp_path / "a.png", np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="H x W"):
        png.write_png(tmp_path / "a.png", np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(ValueError, match="empty"):
        png.write_png(tmp_path / "a.png", np.zeros((0, 2), np.uint8))
    assert not (tmp_path / "a.png").exists()
    (tmp_path / "b.png").write_bytes(b"GIF89a....")
    with pytest.raises(ValueError, match="not a PNG"):
        png.read_png(tmp_path / "b.png")


def test_load_shakespeare_is_dlibs_text():
    from dnnpy.data.datasets import load_shakespeare

    text, prompt = load_shakespeare()
    assert (len(text), len(prompt)) == (15322, 407)        # dlib's slm_data.h, as the report counts
    assert text.startswith("QUEEN ELIZABETH:\nSend to her, by the man that slew her brothers,")
    assert prompt.startswith("QUEEN ELIZABETH:\n") and "\r" not in text
