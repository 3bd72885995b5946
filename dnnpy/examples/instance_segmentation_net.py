"""The nets and helpers shared by ``dnn_instance_segmentation_train`` and its runner
``dnn_instance_segmentation``: dlib's ``dnn_instance_segmentation_ex.h``, scaled down.

dlib's header declares two nets: an MMOD detector (``det_bnet_type`` / ``det_anet_type``: three
stride-2 5x5 ``con`` layers, three 5x5 ``rcon5`` layers of 256 filters, a 9x9 detection
``con``, ``input_rgb_image_pyramid<pyramid_down<6>>``) and a U-Net mask predictor
(``seg_bnet_type``: dnn_semantic_segmentation_ex.h's U-Net, narrower, with
``loss_binary_log_per_pixel`` and one output channel), and ``get_cropping_rect``: the square
around a box, 1.5 times its larger side, that is cut out as a ``seg_dim`` x ``seg_dim`` chip
(227) for the mask net.

Here: the detector is ``dnn_mmod_train_find_cars``'s scaled one (widths 8, 16, 16, 16; two 3x3
rcon layers; 5x5 detection con), the mask net ``semantic_segmentation_net``'s U-Net with two
levels of widths 8 and 16 and ``loss_binary_log_per_pixel``, and the chip is ``SEG_DIM`` = 49
pixels (odd, so that the net's output has the chip's size; the objects are 26..44 pixels).
"""

from __future__ import annotations

import numpy as np

from dnnpy import affine, bn_con, loss_binary_log_per_pixel
from dnnpy.examples.dnn_mmod_train_find_cars import make_net_type as make_det_net_type
from dnnpy.examples.semantic_segmentation_net import make_net_type as make_unet_type
from dnnpy.geometry import center, rectangle
from dnnpy.image import chip_details, chip_dims, extract_image_chip, interpolate_bilinear, resize_image

__all__ = ["SEG_DIM", "NET_FILENAME", "get_cropping_rect", "det_net_type", "seg_net_type",
           "predict_mask"]

SEG_DIM = 49                                     # dlib: 227
NET_FILENAME = "instance_segmentation_g2net.dnn"   # dlib: instance_segmentation_voc2012net_v2.dnn
DET_FILTERS = (8, 16, 16, 16)                      # dlib: 32, 128, 128 and 256
SEG_WIDTHS = (8, 16)                               # dlib: 16, 24, 32, 48 (four levels)


def get_cropping_rect(rect):
    """dlib's ``get_cropping_rect``: the square centred on ``rect`` with half-side
    ``round(max(width, height) / 2 * 1.5)`` (50% added)."""
    if rect.is_empty():
        raise ValueError(f"get_cropping_rect: the rectangle {rect} is empty")
    cx, cy = center(rect)
    d = int(np.floor(max(rect.width(), rect.height()) / 2.0 * 1.5 + 0.5))   # std::round, >= 0
    return rectangle(cx - d, cy - d, cx + d, cy + d)


def det_net_type(testing=False):
    """dlib's ``det_bnet_type`` (``testing=False``) or ``det_anet_type`` (``affine``), scaled."""
    return make_det_net_type(DET_FILTERS, num_rcon=2, norm=affine if testing else bn_con,
                             rcon_size=3, det_size=5)


def seg_net_type(testing=False):
    """dlib's ``seg_bnet_type`` (``testing=False``) or ``seg_anet_type``, scaled."""
    return make_unet_type(1, testing=testing, levels=len(SEG_WIDTHS), loss=loss_binary_log_per_pixel,
                          widths=SEG_WIDTHS)


def predict_mask(seg_net, image, rect):
    """The mask net's scores for the object in ``rect`` of ``image``, as dlib's runner does it:
    the ``get_cropping_rect`` chip (``SEG_DIM`` square, bilinear), the net's score map resized
    (bilinear) to the chip's rectangle and placed there. Returns an ``H x W`` float32 image of
    scores (> 0: the object), 0 outside the chip. The net is run on the one chip, so a bn_con
    net uses its running statistics, as dlib's runner does."""
    crop = get_cropping_rect(rect)
    chip = extract_image_chip(image, chip_details(crop, chip_dims(SEG_DIM, SEG_DIM)),
                              interpolate_bilinear())
    scores = np.asarray(seg_net([chip])[0], np.float32)
    resized = resize_image(scores, crop.height(), crop.width())
    rows, cols = image.shape[:2]
    out = np.zeros((rows, cols), np.float32)
    t, b = max(crop.t, 0), min(crop.b, rows - 1)
    left, r = max(crop.l, 0), min(crop.r, cols - 1)
    if t <= b and left <= r:
        out[t:b + 1, left:r + 1] = resized[t - crop.t:b + 1 - crop.t, left - crop.l:r + 1 - crop.l]
    return out
