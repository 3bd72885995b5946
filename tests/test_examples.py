"""The runnable examples (python -m dnnpy.examples.NAME) in --quick mode: each runs, prints
what it does, and writes its files."""

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dnnpy
from dnnpy.image.png import read_png

REPO = Path(__file__).resolve().parents[1]


def test_autoencoder_quick(tmp_path, capsys):
    from dnnpy.examples import autoencoder

    r = autoencoder.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "reconstruction error" in text and "bit-identical: True" in text
    assert r["identical"]
    assert r["error_after"] < r["error_before"]          # even 3 tiny epochs help
    # the saved net loads with no code into the same type
    net = dnnpy.load(r["net_path"])
    assert net.net_type is autoencoder.net_type
    # the PNG: a valid file of 2 rows of 8 64x64 RGB tiles (2 px padding)
    data = Path(r["png_path"]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (width, height, depth, colour) == (2 + 8 * 66, 2 + 2 * 66, 8, 2)
    img = read_png(r["png_path"])
    assert img.shape == (height, width, 3)
    # the top row holds the held-out inputs unchanged
    from dnnpy.data.datasets import synthetic_images
    assert np.array_equal(img[2:66, 2:66], synthetic_images(8, seed=2)[0])


def test_dnn_introduction_quick(tmp_path, capsys):
    from dnnpy.examples import dnn_introduction

    r = dnn_introduction.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "testing accuracy" in text and "training num_right" in text
    assert Path(r["net_path"]).is_file()
    assert r["testing_accuracy"] > 0.3                 # 2 epochs on 256 digits; chance is 0.1
    net = dnnpy.load(r["net_path"])
    assert net.net_type is dnn_introduction.net_type


def test_dnn_introduction_mnist_option(tmp_path, capsys):
    """--mnist DIR reads MNIST's idx files (here tiny fake ones)."""
    from dnnpy.examples import dnn_introduction

    rng = np.random.default_rng(0)
    mnist = tmp_path / "mnist"
    mnist.mkdir()
    for prefix, n in (("train", 40), ("t10k", 20)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, n).astype(np.uint8)
        (mnist / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 2051, n, 28, 28) + x.tobytes())
        (mnist / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, n) + y.tobytes())
    r = dnn_introduction.main(["--quick", "--quiet", "--mnist", str(mnist), "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "MNIST from" in text and "40 training and 20 testing" in text
    assert 0 <= r["testing_accuracy"] <= 1


def test_dnn_introduction2_quick(tmp_path, capsys):
    from dnnpy.examples import dnn_introduction2

    r = dnn_introduction2.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "testing accuracy" in text and "bn_con -> affine" in text
    assert Path(r["net_path"]).is_file()
    assert 0 <= r["testing_accuracy"] <= 1
    assert r["file_matches_copy"]          # dlib's file route gives the inference copy
    # the testing type is the training type with every bn_con replaced by affine
    train_t = dnn_introduction2.make_net_type(1)
    test_t = dnn_introduction2.make_net_type(1, testing=True)
    assert repr(test_t) == repr(train_t).replace("bn_con[", "affine[")
    assert dnnpy.inference_type(train_t) is test_t
    assert "repeat[1, " in repr(train_t) and "add_prev2[" in repr(train_t)


def test_dnn_inception_quick(tmp_path, capsys):
    from dnnpy.examples import dnn_inception

    r = dnn_inception.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "testing accuracy" in text and "concat4" in text
    assert r["testing_accuracy"] >= 0.5                # 3 epochs on 256 digits; chance is 0.1
    # the file is dlib's bytes of the inception net: it reads back into the same type
    net = dnn_inception.net_type()
    dnnpy.deserialize(r["net_path"], net)
    assert "concat4" in repr(dnn_inception.net_type) and "concat3" in repr(dnn_inception.net_type)


def test_dnn_dcgan_quick(tmp_path, capsys):
    """A few iterations of dlib's manual GAN loop: finite losses, the generator's parameters
    move (its gradient came through the discriminator), the PNG tiles 64 16x16 digits."""
    from dnnpy.examples import dnn_dcgan

    r = dnn_dcgan.main(["--quick", "--quiet", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert "digits-like" in text and "256 generated digits:" in text
    assert np.isfinite(r["d_loss"]) and np.isfinite(r["g_loss"]) and r["d_loss"] > 0
    assert r["generator_moved"]
    img = read_png(r["png_path"])
    assert img.shape[:2] == (4 * 8 * 16, 4 * 8 * 16)  # tile_images: 64 -> 8 x 8 cells, 4x
    # the metric can fail: 5 iterations draw no digits yet, and noise is far from the digits
    assert not r["digits_like"]
    assert r["noise_distance"] > 3 * r["real_distance"] > 0
    dnnpy.deserialize(r["generator_path"], dnn_dcgan.generator_type())
    gen, disc, iteration = dnnpy.deserialize_objects(
        r["sync_path"], dnn_dcgan.generator_type, dnn_dcgan.discriminator_type, int)
    assert iteration == 5


def test_examples_run_as_modules(tmp_path):
    """``python -m dnnpy.examples.autoencoder --quick`` exits 0 (the README's command)."""
    env_path = str(REPO)
    proc = subprocess.run([sys.executable, "-m", "dnnpy.examples.autoencoder", "--quick", "--quiet",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": env_path})
    assert proc.returncode == 0, proc.stderr
    assert "outputs bit-identical: True" in proc.stdout
    assert (tmp_path / "autoencoder_reconstructions.png").is_file()


@pytest.mark.parametrize("module", ["autoencoder", "dnn_introduction", "dnn_introduction2",
                                    "dnn_inception", "dnn_dcgan"])
def test_examples_help(module, capsys):
    mod = __import__(f"dnnpy.examples.{module}", fromlist=["main"])
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--out" in out


def test_dnn_introduction_sync_file_resumes(tmp_path, capsys):
    """--sync FILE: a second run resumes from the file (here: training is already done, so it
    trains no more and ends with the same net)."""
    from dnnpy.examples import dnn_introduction

    sync = tmp_path / "digits_sync"
    args = ["--quick", "--quiet", "--sync", str(sync), "--out", str(tmp_path)]
    first = dnn_introduction.main(args)
    assert sync.is_file() and not first["resumed"]
    first_bytes = first["net_path"].read_bytes()
    second = dnn_introduction.main(args)
    assert second["resumed"] and "resumed from the synchronization file" in capsys.readouterr().out
    assert second["testing_accuracy"] == first["testing_accuracy"]
    assert second["net_path"].read_bytes() == first_bytes


@pytest.mark.slow
def test_dnn_introduction_learns_the_digits(tmp_path):
    """A shortened real run (4 of the default 15 epochs, all the data): LeNet already
    generalises. (The full run reaches ~0.98 test accuracy: docs/examples.md.)"""
    from dnnpy.examples import dnn_introduction

    r = dnn_introduction.main(["--quiet", "--epochs", "4", "--out", str(tmp_path)])
    assert r["testing_accuracy"] >= 0.93
    assert r["training_accuracy"] >= 0.93


def test_every_example_is_in_the_index_and_takes_the_common_options(capsys):
    """Each runnable example module (one with ``main``) is listed in docs/examples.md's index
    with its command, and takes --quick and --out."""
    import importlib
    import pkgutil

    import dnnpy.examples as pkg

    index = (REPO / "docs" / "examples.md").read_text()
    names = [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    runnable = [n for n in names if hasattr(importlib.import_module(f"dnnpy.examples.{n}"), "main")]
    assert len(runnable) >= 16                     # autoencoder + 15 of dlib's examples
    for name in runnable:
        assert f"`python -m dnnpy.examples.{name}`" in index, name
        mod = importlib.import_module(f"dnnpy.examples.{name}")
        with pytest.raises(SystemExit) as e:
            mod.main(["--help"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert "--quick" in out and "--out" in out, name
