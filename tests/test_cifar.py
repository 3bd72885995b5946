"""dnnpy.load_cifar_10_dataset on tiny fake CIFAR-10 binary files."""

import numpy as np
import pytest

from dnnpy import load_cifar_10_dataset
from dnnpy.data.datasets import CIFAR_10_TESTING_FILE, CIFAR_10_TRAINING_FILES


def _write_cifar(folder, per_file=(2, 1, 3, 1, 2), n_test=2, seed=0):
    """Fake batches: records of a label byte then R, G, B planes (32x32 row-major). Returns the
    images (n, 32, 32, 3) and labels the reader must give back."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, n in zip(CIFAR_10_TRAINING_FILES + (CIFAR_10_TESTING_FILE,), per_file + (n_test,)):
        images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        planes = images.transpose(0, 3, 1, 2).reshape(n, 3072)      # R plane, G plane, B plane
        (folder / name).write_bytes(np.concatenate([labels[:, None], planes], 1).tobytes())
        out[name] = (images, labels)
    return out


def test_cifar_reader_round_trip(tmp_path):
    data = _write_cifar(tmp_path)
    train_x, train_y, test_x, test_y = load_cifar_10_dataset(tmp_path)
    want_x = np.concatenate([data[n][0] for n in CIFAR_10_TRAINING_FILES])
    want_y = np.concatenate([data[n][1] for n in CIFAR_10_TRAINING_FILES])
    assert train_x.shape == (9, 32, 32, 3) and train_x.dtype == np.uint8
    assert train_y.dtype == np.int64
    np.testing.assert_array_equal(train_x, want_x)
    np.testing.assert_array_equal(train_y, want_y)
    np.testing.assert_array_equal(test_x, data[CIFAR_10_TESTING_FILE][0])
    np.testing.assert_array_equal(test_y, data[CIFAR_10_TESTING_FILE][1])
    # the pixel layout: record byte 1 + k is red at (k // 32, k % 32); 1 + 1024 + k is green
    raw = np.frombuffer((tmp_path / "data_batch_1.bin").read_bytes(), np.uint8)
    assert train_x[0, 1, 2, 0] == raw[1 + 32 + 2] and train_x[0, 1, 2, 1] == raw[1 + 1024 + 34]
    # the folder above the unpacked tarball works too
    sub = tmp_path / "up" / "cifar-10-batches-bin"
    sub.mkdir(parents=True)
    for name in data:
        (sub / name).write_bytes((tmp_path / name).read_bytes())
    np.testing.assert_array_equal(load_cifar_10_dataset(tmp_path / "up")[2], test_x)


def test_cifar_reader_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_cifar_10_dataset(tmp_path / "nope")
    _write_cifar(tmp_path)
    (tmp_path / "data_batch_3.bin").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3.bin"):
        load_cifar_10_dataset(tmp_path)
    _write_cifar(tmp_path)
    path = tmp_path / "data_batch_2.bin"
    path.write_bytes(path.read_bytes()[:-5])             # truncated
    with pytest.raises(ValueError, match=r"data_batch_2\.bin has 3068 bytes.*3073-byte"):
        load_cifar_10_dataset(tmp_path)
    _write_cifar(tmp_path)
    path = tmp_path / "test_batch.bin"
    path.write_bytes(path.read_bytes() + b"\0")          # trailing byte
    with pytest.raises(ValueError, match=r"test_batch\.bin has 6147 bytes.*1 bytes left over"):
        load_cifar_10_dataset(tmp_path)
    _write_cifar(tmp_path)
    raw = bytearray((tmp_path / "data_batch_5.bin").read_bytes())
    raw[3073] = 42                                      # second record's label
    (tmp_path / "data_batch_5.bin").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"data_batch_5\.bin record 1 has label 42"):
        load_cifar_10_dataset(tmp_path)
