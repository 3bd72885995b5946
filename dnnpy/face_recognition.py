"""The ``face_recognition`` package's API (https://github.com/ageitgey/face_recognition), on
dnnpy instead of dlib: nothing to compile.

    from dnnpy import face_recognition
    image = face_recognition.load_image_file("photo.jpg")
    boxes = face_recognition.face_locations(image)            # [(top, right, bottom, left), ...]
    encodings = face_recognition.face_encodings(image, boxes)  # [(128,) float64 arrays]
    face_recognition.compare_faces(known_encodings, encodings[0], tolerance=0.6)

The functions, arguments, defaults and return values are the package's: boxes are ``(top,
right, bottom, left)`` tuples clipped to the image, landmarks dicts of named ``(x, y)`` lists,
encodings 128-number arrays (two faces are one person when less than 0.6 apart). The models
are dlib's: the HOG face detector (shipped with dnnpy), the CNN face detector, the 68- and
5-point shape predictors and the face ResNet from the PyPI package ``face_recognition_models``
(found without importing it: its ``__init__`` needs ``pkg_resources``, which setuptools 81
removed). Each model is read on first use, once per process. The command lines are ``dnnpy
face-recognition`` and ``dnnpy face-detection``.
"""

from __future__ import annotations

import threading

import numpy as np

from .geometry import rectangle
from .image.io import load_image
from .landmarks import shape_predictor
from .models import (FACE_DETECTOR_MODEL, FACE_RECOGNITION_MODEL, cnn_face_detection_model_v1,
                     dlib_model_path, face_recognition_model_v1)
from .object_detector import get_frontal_face_detector

__all__ = ["load_image_file", "face_locations", "batch_face_locations", "face_landmarks",
           "face_encodings", "compare_faces", "face_distance"]

_MODEL_FILES = {"pose_predictor_68_point": "shape_predictor_68_face_landmarks.dat",
                "pose_predictor_5_point": "shape_predictor_5_face_landmarks.dat",
                "cnn_face_detector": FACE_DETECTOR_MODEL,
                "face_encoder": FACE_RECOGNITION_MODEL}
_loaded = {}
_lock = threading.Lock()


def _model(name):
    """The model ``name`` (face_recognition's names), read on first use."""
    with _lock:
        m = _loaded.get(name)
        if m is None:
            if name == "face_detector":
                m = get_frontal_face_detector()
            else:
                path = dlib_model_path(_MODEL_FILES[name])
                m = {"cnn_face_detector": cnn_face_detection_model_v1,
                     "face_encoder": face_recognition_model_v1}.get(name, shape_predictor)(path)
            _loaded[name] = m
        return m


def load_image_file(file, mode="RGB"):
    """An image file (a path or a binary file object) as a uint8 array: ``mode`` ``"RGB"``
    (H x W x 3) or ``"L"`` (H x W grey). As the package, the EXIF orientation is not applied."""
    if mode not in ("RGB", "L"):
        raise ValueError(f"load_image_file: mode must be 'RGB' or 'L', got {mode!r}")
    return load_image(file, mode, respect_exif=False)


def _rect_to_css(rect):
    return rect.top(), rect.right(), rect.bottom(), rect.left()


def _css_to_rect(css):
    top, right, bottom, left = (int(v) for v in css)
    return rectangle(left, top, right, bottom)


def _trim_css_to_bounds(css, image_shape):
    return max(css[0], 0), min(css[1], image_shape[1]), min(css[2], image_shape[0]), max(css[3], 0)


def _check_model(model, allowed, what):
    if model not in allowed:
        raise ValueError(f"{what}: model must be one of {list(allowed)}, got {model!r}")


def _raw_face_locations(img, number_of_times_to_upsample=1, model="hog"):
    if model == "cnn":
        return [d.rect for d in _model("cnn_face_detector")(img, number_of_times_to_upsample)]
    return list(_model("face_detector")(img, number_of_times_to_upsample))


def face_locations(img, number_of_times_to_upsample=1, model="hog"):
    """The faces in ``img`` as ``(top, right, bottom, left)`` tuples, clipped to the image:
    ``model="hog"`` (dlib's HOG detector, the default) or ``"cnn"`` (dlib's CNN detector, more
    accurate, slower). Upsampling finds smaller faces."""
    _check_model(model, ("hog", "cnn"), "face_locations")
    img = np.asarray(img)
    return [_trim_css_to_bounds(_rect_to_css(r), img.shape)
            for r in _raw_face_locations(img, number_of_times_to_upsample, model)]


def batch_face_locations(images, number_of_times_to_upsample=1, batch_size=128):
    """``face_locations(img, ..., model="cnn")`` for a list of images of one size, run as
    batches of ``batch_size``: a list of lists of boxes."""
    images = [np.asarray(i) for i in images]
    found = _model("cnn_face_detector")(images, number_of_times_to_upsample, batch_size=batch_size)
    return [[_trim_css_to_bounds(_rect_to_css(d.rect), img.shape) for d in dets]
            for img, dets in zip(images, found)]


def _raw_face_landmarks(face_image, face_locations=None, model="large"):
    if face_locations is None:
        rects = _raw_face_locations(face_image)
    else:
        rects = [_css_to_rect(loc) for loc in face_locations]
    if not rects:                        # no face: no model needed
        return []
    predictor = _model("pose_predictor_5_point" if model == "small" else "pose_predictor_68_point")
    return predictor.batch(np.asarray(face_image), rects)


def face_landmarks(face_image, face_locations=None, model="large"):
    """For each face (found with the HOG detector, or the ``(top, right, bottom, left)`` boxes
    given), a dict of named landmark lists of ``(x, y)``: ``model="large"`` (68 points: chin,
    eyebrows, nose bridge and tip, eyes, lips) or ``"small"`` (5 points: nose tip, eyes)."""
    _check_model(model, ("large", "small"), "face_landmarks")
    shapes = _raw_face_landmarks(face_image, face_locations, model)
    points = [[(int(p.x), int(p.y)) for p in s.parts()] for s in shapes]
    if model == "large":
        return [{
            "chin": p[0:17],
            "left_eyebrow": p[17:22],
            "right_eyebrow": p[22:27],
            "nose_bridge": p[27:31],
            "nose_tip": p[31:36],
            "left_eye": p[36:42],
            "right_eye": p[42:48],
            "top_lip": p[48:55] + [p[64], p[63], p[62], p[61], p[60]],
            "bottom_lip": p[54:60] + [p[48], p[60], p[67], p[66], p[65], p[64]],
        } for p in points]
    return [{"nose_tip": [p[4]], "left_eye": p[2:4], "right_eye": p[0:2]} for p in points]


def face_encodings(face_image, known_face_locations=None, num_jitters=1, model="small"):
    """The 128-number encoding (dlib's face descriptor, float64) of each face (found with the
    HOG detector, or the boxes given), aligned with the ``"small"`` (5-point, the default) or
    ``"large"`` landmarks; ``num_jitters`` > 1 averages that many jittered copies (slower)."""
    _check_model(model, ("large", "small"), "face_encodings")
    img = np.asarray(face_image)
    shapes = _raw_face_landmarks(img, known_face_locations, model)
    if not shapes:
        return []
    return list(_model("face_encoder").compute_face_descriptor(img, shapes, num_jitters))


def face_distance(face_encodings, face_to_compare):
    """The Euclidean distance from each of ``face_encodings`` to ``face_to_compare`` (an
    array; empty for no encodings)."""
    if len(face_encodings) == 0:
        return np.empty((0))
    return np.linalg.norm(np.asarray(face_encodings) - np.asarray(face_to_compare), axis=1)


def compare_faces(known_face_encodings, face_encoding_to_check, tolerance=0.6):
    """For each known encoding, whether it is within ``tolerance`` of the one to check (a
    list of bools)."""
    return list(face_distance(known_face_encodings, face_encoding_to_check) <= tolerance)
