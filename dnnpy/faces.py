"""dlib's Python face functions whose Python form is not their C++ form (``dnnpy.image`` has
the C++ ones): ``jitter_image(img, num_jitters=1, disturb_colors=False)`` and
``save_face_chip`` / ``save_face_chips``, so that dlib's face scripts run with ``import dnnpy
as dlib``."""

from __future__ import annotations

import threading

from .geometry import full_object_detection
from .image.chips import get_face_chips
from .image.io import save_jpeg
from .image.jitter import jitter_images
from .rand import dlib_rand

__all__ = ["jitter_image", "save_face_chip", "save_face_chips"]

# dlib's binding draws every call's jitters from one process-wide generator
_RND = dlib_rand()
_RND_LOCK = threading.Lock()


def jitter_image(img, num_jitters=1, disturb_colors=False) -> list:
    """dlib's Python ``jitter_image``: a list of ``num_jitters`` randomly jittered copies of the
    square RGB image ``img`` (moved, scaled and turned slightly, mirrored half the time; with
    ``disturb_colors``, colours disturbed too), drawn from one generator for the process as
    dlib's binding does, so a process's calls give dlib's images in order
    (``dnnpy.image.jitter_images`` takes the generator as an argument)."""
    with _RND_LOCK:
        return jitter_images(img, _RND, num_jitters, disturb_colors)


def save_face_chips(img, faces, chip_filename, size=150, padding=0.25):
    """dlib's ``save_face_chips``: the aligned chip of each face (``full_object_detection``)
    written as JPEG to ``chip_filename + ".jpg"`` for one face, else ``chip_filename + "_1.jpg"``,
    ``"_2.jpg"``, ...; returns the paths written."""
    faces = list(faces)
    chips = get_face_chips(img, faces, size, padding)
    if len(chips) == 1:
        return [save_jpeg(chips[0], f"{chip_filename}.jpg")]
    return [save_jpeg(chip, f"{chip_filename}_{i}.jpg") for i, chip in enumerate(chips, 1)]


def save_face_chip(img, face, chip_filename, size=150, padding=0.25):
    """dlib's ``save_face_chip``: ``save_face_chips(img, [face], ...)``: writes
    ``chip_filename + ".jpg"``; returns its path."""
    if not isinstance(face, full_object_detection):
        raise TypeError(f"save_face_chip: expected a full_object_detection (a shape predictor's "
                        f"result), got {type(face).__name__}")
    return save_face_chips(img, [face], chip_filename, size, padding)[0]
