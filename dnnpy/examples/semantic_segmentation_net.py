"""The segmentation net shared by ``dnn_semantic_segmentation_train`` and its runner
``dnn_semantic_segmentation``: dlib's ``dnn_semantic_segmentation_ex.h``, narrowed.

dlib's header declares a residual U-Net (Ronneberger et al. 2015): a 7x7 stride-2 ``con``
stem, ``max_pool``, four levels of residual blocks that go down (``res_down``: a stride-2
block added to an ``avg_pool`` of its input), four levels that come back up (``res_up``: a
stride-2 ``cont`` block added to a ``cont<N,2,2,2,2>`` of its input), and U-Net skip
connections: the output of each level going down is tagged (``utag1..utag4``, tag ids
2101..2104), and on the way up the output of the matching level is bilinear-resized to the
tagged layer's size (``resize_prev_to_tagged``), tagged again (``utag1_..``, 2111..) and
concatenated with it (``concat_<utagN, utagN_>``). A ``cont<64,7,7,2,2>`` and a 1x1 ``cont``
with one filter per class give the per-pixel scores for ``loss_multiclass_log_per_pixel``.

Here the structure is dlib's, with the widths divided by 8 (64 -> 8, 128 -> 16) and two levels
instead of four (``--levels``; ``repeat<2, res, ...>`` per level shortened to ``repeats``),
so that it trains in seconds on a CPU. ``make_net_type(classes, testing=True)`` is dlib's
``anet_type``: every ``bn_con`` is an ``affine`` layer.

As in dlib, the stride-2 7x7 ``con`` / ``cont`` pair gives back an input of ``n`` pixels only
when ``n`` is odd (``2*((n-7)//2) + 7``): the training crops are 65x65 (dlib: 227x227), and the
runner cuts the net's output of other sizes to the input's with a centred nearest-neighbour
chip (``crop_to_input``).
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (add_prev1, add_prev2, affine, avg_pool, bn_con, con, concat2, cont, input,
                   loss_multiclass_log_per_pixel, max_pool, relu, repeat, resize_prev_to_tagged,
                   rgb_pixel, skip1, tag1, tag2)
from dnnpy.geometry import centered_rect
from dnnpy.image import chip_details, chip_dims, extract_image_chip, interpolate_nearest_neighbor

__all__ = ["make_net_type", "crop_to_input", "segment", "WIDTHS", "NET_FILENAME"]

NET_FILENAME = "semantic_segmentation_g2net.dnn"   # dlib: semantic_segmentation_voc2012net_v2.dnn
WIDTHS = (8, 16, 32, 64)                            # dlib's 64, 128, 256, 512 divided by 8

# dlib's custom tags: utagN marks level N going down, utagN_ the resized level coming up
utags = [dnnpy.tag_template(f"utag{i}", 2100 + i) for i in range(1, 5)]
utags_ = [dnnpy.tag_template(f"utag{i}_", 2110 + i) for i in range(1, 5)]


def block(N, BN, stride, SUBNET):
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


def blockt(N, BN, stride, SUBNET):
    return BN[cont[N, 3, 3, 1, 1, relu[BN[cont[N, 3, 3, stride, stride, SUBNET]]]]]


def residual(block, N, BN, SUBNET):
    return add_prev1[block(N, BN, 1, tag1[SUBNET])]


def residual_down(block, N, BN, SUBNET):
    return add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[block(N, BN, 2, tag1[SUBNET])]]]]


def residual_up(block, N, BN, SUBNET):
    return add_prev2[cont[N, 2, 2, 2, 2, skip1[tag2[blockt(N, BN, 2, tag1[SUBNET])]]]]


def res(N, BN, SUBNET):      return relu[residual(block, N, BN, SUBNET)]        # noqa: E704
def res_down(N, BN, SUBNET): return relu[residual_down(block, N, BN, SUBNET)]   # noqa: E704
def res_up(N, BN, SUBNET):   return relu[residual_up(block, N, BN, SUBNET)]     # noqa: E704


def _level(first, N, BN, repeats, SUBNET):
    """dlib's ``levelN = repeat<2, resN, first<N, SUBNET>>`` with ``repeats`` copies."""
    below = first(N, BN, SUBNET)
    if repeats == 0:
        return below
    return repeat[repeats, (lambda S: res(N, BN, S)), below]


def resize_and_concat(TAGGED, PREV_RESIZED, SUBNET):
    """dlib's ``add_layer<concat_<TAGGED, PREV_RESIZED>, PREV_RESIZED<resize_prev_to_tagged<TAGGED, SUBNET>>>``."""
    return concat2[TAGGED, PREV_RESIZED, PREV_RESIZED[resize_prev_to_tagged[TAGGED, SUBNET]]]


def make_net_type(class_count, testing=False, levels=2, repeats=0,
                  loss=loss_multiclass_log_per_pixel, widths=WIDTHS):
    """dlib's ``bnet_type`` (``testing=False``) or ``anet_type`` (``testing=True``: ``affine``
    for ``bn_con``) with ``levels`` (1..4) levels of widths ``widths`` and ``repeats`` extra
    residual blocks per level (dlib: 4 levels, 2 repeats, widths x8). ``loss``: the loss
    template on top (dlib's instance segmentation header: ``loss_binary_log_per_pixel`` with
    ``class_count`` 1)."""
    if not 1 <= levels <= 4:
        raise ValueError(f"make_net_type: levels must be 1..4, got {levels}")
    if repeats < 0:
        raise ValueError(f"make_net_type: repeats must be >= 0, got {repeats}")
    BN = affine if testing else bn_con
    if len(widths) < levels:
        raise ValueError(f"make_net_type: {levels} levels need {levels} widths, got {widths}")
    w0 = widths[0]
    net = relu[BN[con[w0, 7, 7, 2, 2, input[rgb_pixel]]]]
    net = max_pool[3, 3, 2, 2, utags[0][net]]
    # going down: level1 keeps the resolution, the others halve it; the output of each level
    # but the last is tagged for the way up
    for i in range(levels):
        if i > 0:
            net = utags[i][net]
        net = _level(res if i == 0 else res_down, widths[i], BN, repeats, net)
    # coming up: each level doubles the resolution and is concatenated with the tagged one
    for i in reversed(range(levels)):
        net = _level(res_up, widths[i], BN, repeats, net)
        net = resize_and_concat(utags[i], utags_[i], net)
    return loss[cont[class_count, 1, 1, 1, 1,
                     relu[BN[cont[w0, 7, 7, 2, 2, net]]]]]


def crop_to_input(label_image, rows, cols):
    """The net's label image cut (or padded with label 0) to ``rows x cols`` around its centre,
    as dlib's examples do it: a ``centered_rect`` chip with nearest-neighbour interpolation."""
    lab = np.asarray(label_image)
    if lab.shape == (rows, cols):
        return lab
    rect = centered_rect((lab.shape[1] // 2, lab.shape[0] // 2), cols, rows)
    return extract_image_chip(lab, chip_details(rect, chip_dims(rows, cols)),
                              interpolate_nearest_neighbor())


def segment(net, images, batch_size=16):
    """Per image, the label image the size of the image (``crop_to_input`` of ``net``'s)."""
    out = []
    for i in range(0, len(images), batch_size):
        batch = images[i:i + batch_size]
        if len({im.shape for im in batch}) == 1:
            labels = net(list(batch))
        else:
            labels = [net([im])[0] for im in batch]
        out += [crop_to_input(lab, im.shape[0], im.shape[1]) for lab, im in zip(labels, batch)]
    return out
