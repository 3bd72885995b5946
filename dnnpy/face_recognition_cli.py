"""The ``face_recognition`` package's two command lines, as ``dnnpy face-recognition`` and
``dnnpy face-detection`` (the same arguments and output lines):

``dnnpy face-recognition KNOWN_PEOPLE_FOLDER IMAGE_TO_CHECK [--cpus N] [--tolerance 0.6] [--show-distance true]``
    Each image in KNOWN_PEOPLE_FOLDER is one known person, named by its file name (its first
    face is used). For IMAGE_TO_CHECK (an image or a folder of them), prints one line per face
    found: ``file,name`` for every known person within the tolerance (``file,name,distance``
    with ``--show-distance true``), ``file,unknown_person`` when none is, and
    ``file,no_persons_found`` for an image without faces. Images larger than 1600 pixels are
    scaled down first.

``dnnpy face-detection IMAGE_TO_CHECK [--cpus N] [--model hog|cnn] [--upsample 0]``
    Prints ``file,top,right,bottom,left`` for every face found.

``--cpus N`` runs N processes (-1: one per core). Images are the ``.jpg``, ``.jpeg`` and ``.png``
files of a folder; one that cannot be read is reported on stderr and skipped.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import re
import sys

import numpy as np
from PIL import Image

from . import face_recognition

__all__ = ["add_commands", "face_recognition_command", "face_detection_command"]

_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


def _bool(text):
    """A boolean option's value, spelt as click accepts it."""
    v = str(text).strip().lower()
    if v in _TRUE | _FALSE:
        return v in _TRUE
    raise argparse.ArgumentTypeError(f"{text!r} is not a valid boolean (true/false, yes/no, 1/0)")


def add_commands(sub):
    """Adds ``face-recognition`` and ``face-detection`` to the ``dnnpy`` command's subparsers."""
    r = sub.add_parser("face-recognition", help="recognise known people in images (face_recognition's CLI)")
    r.add_argument("known_people_folder", help="one image per known person, named by its file name")
    r.add_argument("image_to_check", help="an image, or a folder of images")
    r.add_argument("--cpus", type=int, default=1,
                   help='number of CPU cores to use in parallel; -1 means "use all in system"')
    r.add_argument("--tolerance", type=float, default=0.6,
                   help="the largest face distance that is a match (lower: stricter)")
    r.add_argument("--show-distance", type=_bool, default=False, metavar="BOOL",
                   help="also print each match's face distance (true/false)")
    r.set_defaults(run=face_recognition_command)
    d = sub.add_parser("face-detection", help="find faces in images (face_recognition's CLI)")
    d.add_argument("image_to_check", help="an image, or a folder of images")
    d.add_argument("--cpus", type=int, default=1,
                   help='number of CPU cores to use in parallel; -1 means "use all in system"')
    d.add_argument("--model", choices=("hog", "cnn"), default="hog", help="the face detector")
    d.add_argument("--upsample", type=int, default=0,
                   help="times to upsample each image first (finds smaller faces)")
    d.set_defaults(run=face_detection_command)


def image_files_in_folder(folder):
    """The ``.jpg``/``.jpeg``/``.png`` files of ``folder`` (face_recognition's rule), sorted."""
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder))
            if re.match(r".*\.(jpg|jpeg|png)", f, flags=re.I)]


def _load(path):
    """The image at ``path``, or None after a message on stderr when it cannot be read."""
    try:
        return face_recognition.load_image_file(path)
    except (OSError, ValueError) as e:
        print(f"WARNING: cannot read {path}: {e}. Skipping it.", file=sys.stderr)
        return None


def _targets(path):
    return image_files_in_folder(path) if os.path.isdir(path) else [path]


def _run(function, images, cpus):
    """``function`` (image -> its output lines) on every image, here or in a pool of ``cpus``
    processes; the lines are printed here, in the images' order (a worker's own stdout may
    not be this process's)."""
    if cpus == 1 or len(images) <= 1:
        results = map(function, images)
    else:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else None)
        with context.Pool(processes=None if cpus == -1 else cpus) as pool:
            results = pool.map(function, images)
    for lines in results:
        for line in lines:
            print(line, flush=True)


def scan_known_people(known_people_folder):
    known_names, known_face_encodings = [], []
    for file in image_files_in_folder(known_people_folder):
        basename = os.path.splitext(os.path.basename(file))[0]
        img = _load(file)
        if img is None:
            continue
        encodings = face_recognition.face_encodings(img)
        if len(encodings) > 1:
            print(f"WARNING: More than one face found in {file}. Only considering the first face.")
        if len(encodings) == 0:
            print(f"WARNING: No faces found in {file}. Ignoring file.")
        else:
            known_names.append(basename)
            known_face_encodings.append(encodings[0])
    return known_names, known_face_encodings


def _result(filename, name, distance, show_distance=False):
    return f"{filename},{name},{distance}" if show_distance else f"{filename},{name}"


def _test_image(image_to_check, known_names, known_face_encodings, tolerance, show_distance):
    """The output lines for one image to check."""
    unknown_image = _load(image_to_check)
    if unknown_image is None:
        return []
    if max(unknown_image.shape) > 1600:       # scaled down as the package does
        pil_img = Image.fromarray(unknown_image)
        pil_img.thumbnail((1600, 1600), Image.LANCZOS)
        unknown_image = np.array(pil_img)
    lines = []
    unknown_encodings = face_recognition.face_encodings(unknown_image)
    for unknown_encoding in unknown_encodings:
        distances = face_recognition.face_distance(known_face_encodings, unknown_encoding)
        result = list(distances <= tolerance)
        if True in result:
            lines += [_result(image_to_check, name, distance, show_distance)
                      for is_match, name, distance in zip(result, known_names, distances) if is_match]
        else:
            lines.append(_result(image_to_check, "unknown_person", None, show_distance))
    if not unknown_encodings:
        lines.append(_result(image_to_check, "no_persons_found", None, show_distance))
    return lines


def face_recognition_command(args) -> int:
    known_names, known_face_encodings = scan_known_people(args.known_people_folder)
    test = functools.partial(_test_image, known_names=known_names,
                             known_face_encodings=known_face_encodings,
                             tolerance=args.tolerance, show_distance=args.show_distance)
    _run(test, _targets(args.image_to_check), args.cpus)
    return 0


def _detect_image(image_to_check, model, upsample):
    """The output lines for one image: ``file,top,right,bottom,left`` per face."""
    image = _load(image_to_check)
    if image is None:
        return []
    return [f"{image_to_check},{top},{right},{bottom},{left}"
            for top, right, bottom, left in face_recognition.face_locations(image, upsample, model)]


def face_detection_command(args) -> int:
    detect = functools.partial(_detect_image, model=args.model, upsample=args.upsample)
    _run(detect, _targets(args.image_to_check), args.cpus)
    return 0
