"""Data sets for the examples: the shipped digits, MNIST's idx files, and a generated image set.

- :func:`load_digits`: the UCI "Optical Recognition of Handwritten Digits" set shipped in the
  package (1797 digits, 8x8; CC BY 4.0, see ``dnnpy/examples/data/DIGITS_LICENSE.txt``),
  optionally upsampled (bilinear) to e.g. 28x28 for LeNet, optionally split into train/test.
- :func:`load_mnist_dataset`: dlib's ``load_mnist_dataset(folder, ...)`` for users who have
  MNIST's four files (raw or ``.gz``).
- :func:`load_cifar_10_dataset`: dlib's ``load_cifar_10_dataset(folder, ...)`` for users who
  have CIFAR-10's six binary files.
- :func:`synthetic_images`: a deterministic set of smooth coloured images (the autoencoder's data).
- :func:`load_shakespeare`: the text and prompt of dlib's small-language-model examples
  (``slm_data.h``; public domain, see ``dnnpy/examples/data/SHAKESPEARE_LICENSE.txt``).

Images come back as one uint8 array ``(n, rows, cols)`` (or ``(n, rows, cols, 3)``), which the
input layers take as a batch (``input[np.uint8]``, ``input_rgb_image``); labels as an int64 array.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

__all__ = ["load_digits", "load_mnist_dataset", "load_cifar_10_dataset", "resize_bilinear", "synthetic_images",
           "load_shakespeare", "DIGITS_PATH"]

_DATA = Path(__file__).resolve().parent.parent / "examples" / "data"
DIGITS_PATH = _DATA / "digits.npz"


def load_shakespeare():
    """``(text, prompt)``: dlib's ``shakespeare_text`` (its four parts concatenated, 15,322
    characters of Richard III) and ``shakespeare_prompt`` (407 characters), byte for byte as
    in dlib's ``examples/slm_data.h``."""
    try:
        return tuple((_DATA / name).read_bytes().decode("utf-8")
                     for name in ("shakespeare.txt", "shakespeare_prompt.txt"))
    except FileNotFoundError as e:
        raise FileNotFoundError(f"load_shakespeare: the shipped file {e.filename} is missing "
                                f"(a broken install? reinstall dnnpy)") from None


# ----------------------------------------------------------------------------------------
# resizing

def resize_bilinear(images, rows: int, cols: int) -> np.ndarray:
    """Bilinear resize of a batch ``(n, r, c)`` or ``(n, r, c, k)`` to ``(n, rows, cols[, k])``.

    Pixel centres are aligned (output pixel ``y`` samples input ``(y + 0.5) * r / rows - 0.5``,
    clamped at the borders), as image libraries do. Returns float64."""
    a = np.asarray(images, np.float64)
    if a.ndim not in (3, 4) or a.shape[1] == 0 or a.shape[2] == 0:
        raise ValueError(f"resize_bilinear: expected a batch (n, rows, cols) or (n, rows, cols, k), "
                         f"got shape {a.shape}")
    if int(rows) < 1 or int(cols) < 1:
        raise ValueError(f"resize_bilinear: the output size must be positive, got {rows}x{cols}")

    def weights(n_in, n_out):
        pos = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(pos).astype(np.intp)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, pos - lo

    y0, y1, wy = weights(a.shape[1], int(rows))
    x0, x1, wx = weights(a.shape[2], int(cols))
    shape_y = (1, -1, 1) + (1,) * (a.ndim - 3)
    shape_x = (1, 1, -1) + (1,) * (a.ndim - 3)
    wy, wx = wy.reshape(shape_y), wx.reshape(shape_x)
    top = a[:, y0][:, :, x0] * (1 - wx) + a[:, y0][:, :, x1] * wx
    bottom = a[:, y1][:, :, x0] * (1 - wx) + a[:, y1][:, :, x1] * wx
    return top * (1 - wy) + bottom * wy


# ----------------------------------------------------------------------------------------
# the shipped digits

def load_digits(size: int = 8, test_fraction: float | None = None, seed: int = 0):
    """The shipped UCI optical digits: 1797 images of the digits 0..9 from 43 writers.

    The stored 8x8 values (0..16: "on" pixels per 4x4 block) are scaled to 0..255 uint8. With
    ``size != 8`` the images are bilinearly resized to ``size x size`` (28 for LeNet).

    Returns ``(images, labels)``: uint8 ``(1797, size, size)`` and int64 ``(1797,)``. With
    ``test_fraction`` (e.g. 0.2), returns ``(train_images, train_labels, test_images,
    test_labels)`` like :func:`load_mnist_dataset`: a split by a fixed permutation (``seed``),
    so every run gets the same split."""
    if not DIGITS_PATH.is_file():
        raise FileNotFoundError(f"load_digits: the shipped data file {DIGITS_PATH} is missing "
                                f"(a broken install? reinstall dnnpy)")
    with np.load(DIGITS_PATH) as f:
        raw, labels = f["images"], f["labels"].astype(np.int64)
    images = raw.astype(np.float64) * (255.0 / 16.0)
    size = int(size)
    if size < 1:
        raise ValueError(f"load_digits: size must be positive, got {size}")
    if size != raw.shape[1]:
        images = resize_bilinear(images, size, size)
    images = np.clip(np.rint(images), 0, 255).astype(np.uint8)
    if test_fraction is None:
        return images, labels
    if not 0 < test_fraction < 1:
        raise ValueError(f"load_digits: test_fraction must be in (0, 1), got {test_fraction}")
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = max(1, int(round(len(labels) * test_fraction)))
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


# ----------------------------------------------------------------------------------------
# MNIST

_MNIST_FILES = (("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
                ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
                ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
                ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"))
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049


def _find(folder: Path, names) -> Path:
    for name in names:
        for candidate in (folder / name, folder / (name + ".gz")):
            if candidate.is_file():
                return candidate
    tried = " or ".join(f"{n}[.gz]" for n in names)
    raise FileNotFoundError(f"load_mnist_dataset: unable to open file {tried} in {folder}")


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    """One idx file (big-endian uint32 magic, ``ndim`` uint32 sizes, then uint8 data)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:  # also gzip's "not a gzipped file" / truncated stream
        raise ValueError(f"load_mnist_dataset: unable to read {path}: {e}") from None
    header = 4 * (1 + ndim)
    if len(data) >= 4 and int(np.frombuffer(data, ">u4", count=1)[0]) != magic:
        found = int(np.frombuffer(data, ">u4", count=1)[0])
        raise ValueError(f"load_mnist_dataset: {path} has magic number {found}, expected "
                         f"{magic} ({'images' if magic == _IMAGES_MAGIC else 'labels'}); "
                         f"the mnist files are corrupted or swapped")
    if len(data) < header:
        raise ValueError(f"load_mnist_dataset: {path} is truncated: {len(data)} bytes, "
                         f"the header alone needs {header}")
    fields = np.frombuffer(data, ">u4", count=1 + ndim)
    dims = tuple(int(d) for d in fields[1:])
    expected = int(np.prod(dims, dtype=np.int64))
    found = len(data) - header
    if found < expected:
        raise ValueError(f"load_mnist_dataset: {path} is truncated: its header says {dims} "
                         f"({expected} bytes of data), the file has {found}")
    if found > expected:
        raise ValueError(f"load_mnist_dataset: unexpected bytes at the end of {path}: its header "
                         f"says {dims} ({expected} bytes of data), the file has {found}")
    return np.frombuffer(data, np.uint8, offset=header).reshape(dims)


def load_mnist_dataset(folder):
    """dlib's ``load_mnist_dataset``: reads MNIST's four idx files from ``folder``.

    File names as dlib accepts them (``train-images-idx3-ubyte`` or ``train-images.idx3-ubyte``,
    likewise ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``),
    each also as ``NAME.gz`` (the files as downloaded).

    Returns ``(training_images, training_labels, testing_images, testing_labels)``: uint8
    ``(n, rows, cols)`` arrays and int64 label arrays. Where dlib insists on exactly 60000/10000
    images of 28x28, this accepts any sizes as long as the files agree with each other (so tiny
    test files work); a missing file raises ``FileNotFoundError``, a bad one ``ValueError``,
    each naming the file."""
    folder = Path(os.fspath(folder))
    if not folder.is_dir():
        raise FileNotFoundError(f"load_mnist_dataset: {folder} is not a directory")
    paths = [_find(folder, names) for names in _MNIST_FILES]
    train_x = _read_idx(paths[0], _IMAGES_MAGIC, 3)
    train_y = _read_idx(paths[1], _LABELS_MAGIC, 1)
    test_x = _read_idx(paths[2], _IMAGES_MAGIC, 3)
    test_y = _read_idx(paths[3], _LABELS_MAGIC, 1)
    for (xp, x), (yp, y) in (((paths[0], train_x), (paths[1], train_y)),
                             ((paths[2], test_x), (paths[3], test_y))):
        if len(x) != len(y):
            raise ValueError(f"load_mnist_dataset: {xp} has {len(x)} images but {yp} has "
                             f"{len(y)} labels")
    if train_x.shape[1:] != test_x.shape[1:]:
        raise ValueError(f"load_mnist_dataset: training images are {train_x.shape[1:]} but "
                         f"testing images are {test_x.shape[1:]} ({paths[0]}, {paths[2]})")
    for p, y in ((paths[1], train_y), (paths[3], test_y)):
        if y.size and int(y.max()) > 9:
            raise ValueError(f"load_mnist_dataset: {p} holds label {int(y.max())}, expected 0..9")
    return (train_x.copy(), train_y.astype(np.int64), test_x.copy(), test_y.astype(np.int64))


# ----------------------------------------------------------------------------------------
# CIFAR-10

CIFAR_10_TRAINING_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
CIFAR_10_TESTING_FILE = "test_batch.bin"
_CIFAR_RECORD = 1 + 3 * 32 * 32       # a label byte, then the R, G and B planes, 32x32 each


def _read_cifar_batch(path: Path):
    """One CIFAR-10 binary batch: ``(images (n, 32, 32, 3) uint8, labels (n,) int64)``."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"load_cifar_10_dataset: unable to read {path}: {e}") from None
    n, extra = divmod(len(data), _CIFAR_RECORD)
    if n == 0 or extra:
        raise ValueError(f"load_cifar_10_dataset: {path} has {len(data)} bytes, not a whole "
                         f"number of {_CIFAR_RECORD}-byte records (1 label byte + 3072 pixel "
                         f"bytes); {n} records and {extra} bytes left over: the file is truncated "
                         f"or not a CIFAR-10 binary batch (the python or matlab version?)")
    records = np.frombuffer(data, np.uint8).reshape(n, _CIFAR_RECORD)
    labels = records[:, 0].astype(np.int64)
    if int(labels.max()) > 9:
        bad = int(np.argmax(labels > 9))
        raise ValueError(f"load_cifar_10_dataset: {path} record {bad} has label {int(labels[bad])}, "
                         f"expected 0..9 (a CIFAR-100 file?)")
    # planes (n, 3, 32, 32) -> interleaved (n, 32, 32, 3), one copy
    images = np.ascontiguousarray(records[:, 1:].reshape(n, 3, 32, 32).transpose(0, 2, 3, 1))
    return images, labels


def load_cifar_10_dataset(folder):
    """dlib's ``load_cifar_10_dataset``: reads CIFAR-10's binary version from ``folder``.

    The files are ``data_batch_1.bin`` .. ``data_batch_5.bin`` (training) and
    ``test_batch.bin`` (testing), as in ``cifar-10-binary.tar.gz``; ``folder`` may also be the
    folder above the unpacked ``cifar-10-batches-bin``. Each record is one label byte (0..9)
    then 3072 bytes: the red, green and blue planes, 32x32 each, row-major.

    Returns ``(training_images, training_labels, testing_images, testing_labels)``: uint8
    ``(n, 32, 32, 3)`` RGB arrays (what ``input_rgb_image`` takes) and int64 label arrays.
    dlib insists on 10000 records per file; this accepts any whole number of records (so tiny
    test files work). A missing file raises ``FileNotFoundError``, a file whose size is not a
    whole number of 3073-byte records or that holds a label above 9 ``ValueError``, each naming
    the file (and the byte counts)."""
    folder = Path(os.fspath(folder))
    if not folder.is_dir():
        raise FileNotFoundError(f"load_cifar_10_dataset: {folder} is not a directory")
    if (not (folder / CIFAR_10_TESTING_FILE).is_file()
            and (folder / "cifar-10-batches-bin" / CIFAR_10_TESTING_FILE).is_file()):
        folder = folder / "cifar-10-batches-bin"
    names = CIFAR_10_TRAINING_FILES + (CIFAR_10_TESTING_FILE,)
    for name in names:                       # all missing files checked before any reading
        if not (folder / name).is_file():
            missing = [n for n in names if not (folder / n).is_file()]
            raise FileNotFoundError(f"load_cifar_10_dataset: unable to open file {name} in "
                                    f"{folder} (missing: {', '.join(missing)}); get the binary "
                                    f"version from https://www.cs.toronto.edu/~kriz/cifar.html")
    train = [_read_cifar_batch(folder / name) for name in CIFAR_10_TRAINING_FILES]
    test_x, test_y = _read_cifar_batch(folder / CIFAR_10_TESTING_FILE)
    return (np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train]),
            test_x, test_y)


# ----------------------------------------------------------------------------------------
# generated images

def synthetic_images(n: int, size: int = 64, seed: int = 0) -> np.ndarray:
    """``n`` deterministic smooth RGB images ``(n, size, size, 3)`` uint8: a colour gradient
    background with three soft coloured blobs, all drawn from ``seed``. Learnable by a small
    convolutional autoencoder (no noise, smooth edges)."""
    n, size = int(n), int(size)
    if n < 1 or size < 1:
        raise ValueError(f"synthetic_images: n and size must be positive, got n={n}, size={size}")
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    base = np.stack([xx, yy, 1 - xx], axis=-1)                       # (size, size, 3)
    gains = rng.uniform(40, 120, (n, 1, 1, 3))
    img = base[None] * gains
    for _ in range(3):
        cy, cx = rng.uniform(0.2, 0.8, (2, n, 1, 1))
        rad = rng.uniform(0.08, 0.25, (n, 1, 1))
        blob = np.exp(-((yy[None] - cy) ** 2 + (xx[None] - cx) ** 2) / (2 * rad ** 2))
        img = img + blob[..., None] * rng.uniform(0, 135, (n, 1, 1, 3))
    return np.clip(img, 0, 255).astype(np.uint8)
