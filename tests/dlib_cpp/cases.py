"""The parity cases: one per net type registered in the C++ driver (``nets_*.cpp``), with
the same type in dnnpy's brackets, its inputs and training labels (and their blob encoding
for the driver), how to read dlib's ``to_label`` output, and what it covers.

Together the cases use every computational layer, loss and input layer of dlib's catalogue
(``tests/test_catalogue.py`` lists them; ``test_dlib_parity.py`` checks the coverage).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional

import numpy as np

import dnnpy
from dnnpy import (act4, add_prev1, add_prev5, add_prev7, affine, avg_pool, avg_pool_everything,
                   bn_con, bn_fc, clipped_relu, con, concat2, cont, dropout, dropout_rate, elu,
                   embeddings, extract, fc, fc_no_bias, flatten, gelu, htan, input, input_array,
                   input_array2d, input_rgb_image, input_rgb_image_pair, input_rgb_image_sized,
                   input_tensor, l2normalize, layer_norm, leaky_relu, linear, linear_no_bias,
                   loss_barlow_twins, loss_binary_hinge, loss_binary_log,
                   loss_binary_log_per_pixel, loss_dot, loss_epsilon_insensitive, loss_mean_squared,
                   loss_mean_squared_multioutput, loss_mean_squared_per_channel_and_pixel,
                   loss_mean_squared_per_pixel, loss_metric, loss_multibinary_log,
                   loss_multibinary_log_, loss_multiclass_log, loss_multiclass_log_per_pixel,
                   loss_multiclass_log_per_pixel_weighted, loss_multiclass_log_weighted,
                   loss_mmod, loss_mmod_, loss_multimulticlass_log, loss_ranking, loss_yolo, rgb_pixel,
                   max_pool, max_pool_everything, mish,
                   mult_prev2, multiply, multm_prev2, multm_prev4, positional_encodings, prelu,
                   relu, repeat, reorg, reshape_to, resize_prev_to_tagged, resize_to, rms_norm,
                   scale1, scale_prev2, sig, silu, skip1, skip3, skip4, slice, smelu, softmax,
                   softmax_all, softmaxm, tag1, tag2, tag3, tag4, tag5, tag7, transpose, tril,
                   tril_diag, tril_mask, upsample, weighted_label, input_rgb_image_pyramid,
                   input_grayscale_image_pyramid, pyramid_down, mmod_options, mmod_rect, rectangle,
                   test_box_overlap, yolo_options, yolo_rect, drectangle)

from blob import BlobReader, BlobWriter


# ----------------------------------------------------------------------------------------
# inputs: make(rng) -> (batch for dnnpy, blob bytes for std::vector<input_type>)

def _encode(items, put):
    w = BlobWriter()
    w.count(len(items))
    for item in items:
        put(w, item)
    return w.bytes()


def _put_rgb(w, img):
    w.i64(img.shape[0])
    w.i64(img.shape[1])
    w.parts.append(np.ascontiguousarray(img, np.uint8).tobytes())


def gray_u8(n, nr, nc):
    def make(rng):
        items = [rng.integers(0, 256, (nr, nc), dtype=np.uint8) for _ in range(n)]
        return items, _encode(items, lambda w, a: w.matrix(a, np.uint8))
    return make


def gray_f32(n, nr, nc, scale=1.0):
    def make(rng):
        items = [(scale * rng.standard_normal((nr, nc))).astype(np.float32) for _ in range(n)]
        return items, _encode(items, lambda w, a: w.matrix(a, np.float32))
    return make


def tokens(n, length, vocabulary, extra=()):
    """Token ids as a length x 1 float matrix (for embeddings_); ``extra`` replaces the last
    tokens of the first sample (an out-of-range id gives a zero embedding)."""
    def make(rng):
        items = [rng.integers(0, vocabulary, (length, 1)).astype(np.float32) for _ in range(n)]
        for i, t in enumerate(extra):
            items[0][length - 1 - i, 0] = t
        return items, _encode(items, lambda w, a: w.matrix(a, np.float32))
    return make


def rgb(n, nr, nc):
    def make(rng):
        items = [rng.integers(0, 256, (nr, nc, 3), dtype=np.uint8) for _ in range(n)]
        return items, _encode(items, _put_rgb)
    return make


def rgb_pairs(n, nr, nc):
    def make(rng):
        items = [(rng.integers(0, 256, (nr, nc, 3), dtype=np.uint8),
                  rng.integers(0, 256, (nr, nc, 3), dtype=np.uint8)) for _ in range(n)]

        def put(w, pair):
            _put_rgb(w, pair[0])
            _put_rgb(w, pair[1])
        return items, _encode(items, put)
    return make


def arrays_f32(n, k, nr, nc):
    def make(rng):
        items = [tuple(rng.standard_normal((nr, nc)).astype(np.float32) for _ in range(k))
                 for _ in range(n)]

        def put(w, item):
            for m in item:
                w.matrix(m, np.float32)
        return items, _encode(items, put)
    return make


def tensors(n, k, nr, nc, scale=1.0):
    def make(rng):
        items = [(scale * rng.standard_normal((1, k, nr, nc))).astype(np.float32) for _ in range(n)]
        return items, _encode(items, lambda w, a: w.tensor(a))
    return make


# ----------------------------------------------------------------------------------------
# labels: the kind of a loss's training and output labels

@dataclasses.dataclass
class LabelKind:
    """``put(w, label)`` encodes one training label for the driver; ``get(r)`` reads one
    output label of dlib's ``to_label``; ``norm(label)`` turns a dnnpy output label into the
    same plain form as ``get`` returns (lists, floats, ints, strings, numpy arrays)."""
    put: Optional[Callable]
    get: Optional[Callable]
    norm: Optional[Callable]
    argmax: bool = False  # labels are argmaxes of the output: near ties may flip


def _f(x):
    return float(x)


def _mat_f32_get(r):
    return r.matrix(np.float32)


def _column(a):
    return np.asarray(a, np.float32).reshape(-1, 1)


FLOAT = LabelKind(lambda w, y: w.f32(y), lambda r: r.f32(), _f)
ULONG = LabelKind(lambda w, y: w.i64(y), lambda r: r.i64(), int, argmax=True)
WEIGHTED = LabelKind(lambda w, y: (w.i64(y.label), w.f32(y.weight)), lambda r: r.i64(), int, argmax=True)
VECTOR_F32 = LabelKind(lambda w, y: (w.count(len(y)), [w.f32(v) for v in y]),
                       lambda r: np.array([r.f32() for _ in range(r.count())], np.float32),
                       lambda y: np.asarray(y, np.float32))
COLUMN_F32 = LabelKind(lambda w, y: w.matrix(_column(y), np.float32), _mat_f32_get, _column)
MATRIX_F32 = LabelKind(lambda w, y: w.matrix(y, np.float32), _mat_f32_get,
                       lambda y: np.asarray(y, np.float32))
MATRIX_U16 = LabelKind(lambda w, y: w.matrix(y, np.uint16), lambda r: r.matrix(np.uint16),
                       lambda y: np.asarray(y, np.uint16), argmax=True)


def _put_weighted_matrix(w, m):
    w.i64(len(m))
    w.i64(len(m[0]))
    for row in m:
        for v in row:
            w.i64(v.label)
            w.f32(v.weight)


WEIGHTED_MATRIX = LabelKind(_put_weighted_matrix, lambda r: r.matrix(np.uint16),
                            lambda y: np.asarray(y, np.uint16), argmax=True)


def channels_f32(c):
    return LabelKind(lambda w, y: [w.matrix(m, np.float32) for m in y],
                     lambda r: np.stack([r.matrix(np.float32) for _ in range(c)]),
                     lambda y: np.stack([np.asarray(m, np.float32) for m in y]))


def _put_map(w, d):
    w.count(len(d))
    for k in sorted(d):
        w.string(k)
        w.string(d[k])


def _get_classifiers(r):
    out = {}
    for _ in range(r.count()):
        name = r.string()
        best = r.string()
        probs = []
        for _ in range(r.count()):
            label = r.string()
            probs.append((label, r.f64()))
        out[name] = (best, probs)
    return out


def _norm_classifiers(d):
    return {name: (str(c), [(c.label(i), c.probability_of_class(i)) for i in range(c.num_classes())])
            for name, c in d.items()}


CLASSIFIERS = LabelKind(_put_map, _get_classifiers, _norm_classifiers, argmax=True)


def _put_mmod(w, rects):
    w.count(len(rects))
    for m in rects:
        w.rect(m.rect.left(), m.rect.top(), m.rect.right(), m.rect.bottom())
        w.f64(m.detection_confidence)
        w.bool(m.ignore)
        w.string(m.label)


def _get_mmod(r):
    out = []
    for _ in range(r.count()):
        rect = r.rect()
        out.append((rect, r.f64(), r.bool(), r.string()))
    return out


def _norm_mmod(rects):
    return [((m.rect.left(), m.rect.top(), m.rect.right(), m.rect.bottom()), m.detection_confidence,
             m.ignore, m.label) for m in rects]


MMOD = LabelKind(_put_mmod, _get_mmod, _norm_mmod)


def _put_yolo(w, rects):
    w.count(len(rects))
    for y in rects:
        for v in (y.rect.left(), y.rect.top(), y.rect.right(), y.rect.bottom()):
            w.f64(v)
        w.f64(y.detection_confidence)
        w.bool(y.ignore)
        w.string(y.label)


def _get_yolo(r):
    out = []
    for _ in range(r.count()):
        rect = tuple(r.f64() for _ in range(4))
        conf, ignore, label = r.f64(), r.bool(), r.string()
        labels = [(r.f64(), r.string()) for _ in range(r.count())]
        out.append((rect, conf, ignore, label, labels))
    return out


def _norm_yolo(rects):
    return [((y.rect.left(), y.rect.top(), y.rect.right(), y.rect.bottom()), y.detection_confidence,
             y.ignore, y.label, [(float(c), s) for c, s in y.labels]) for y in rects]


YOLO = LabelKind(_put_yolo, _get_yolo, _norm_yolo)
NONE = LabelKind(None, None, None)


# ----------------------------------------------------------------------------------------
# the cases

@dataclasses.dataclass
class Case:
    name: str
    net_type: object                  # dnnpy NetType, the same type as the C++ one
    inputs: Callable                  # rng -> (batch, blob)
    labels: Optional[Callable]        # rng -> (labels, blob) (None: unsupervised)
    kind: LabelKind
    covers: str
    make: Callable = None             # net_type -> a fresh configured net (dlib's configure)
    prepare: Callable = None          # (net, rng) -> None, after the first forward
    random: bool = False              # forward draws random numbers (dropout_ with rate > 0)
    twin: object = None               # the type py.dat is also read into
    steps: bool = True                # False: forward only
    score_channels: int = 0           # loss_mmod_: detector scores (the first channels) ...
    distinct_above: tuple = ()        # ... must have no ties above these thresholds
                                      #     (dnnpy's file: the loss's, dlib's own: to_label's)
    seed: int = 0

    def new_net(self):
        return self.make(self.net_type) if self.make is not None else self.net_type()


def _labels(values, kind):
    def make(rng):
        return values, _encode(values, kind.put)
    return make


def _set(index, **fields):
    """make(): a fresh net whose layer<index> details get ``fields`` (dlib's configure)."""
    def make(net_type):
        net = net_type()
        d = dnnpy.layer(net, index).layer_details()
        for k, v in fields.items():
            setattr(d, k, v)
        return net
    return make


def _pm1(rng, shape, ignore=0.0):
    """A matrix of +1/-1 labels with a fraction ``ignore`` of 0 (ignored) entries."""
    m = np.where(rng.random(shape) < 0.5, 1.0, -1.0).astype(np.float32)
    m[rng.random(shape) < ignore] = 0.0
    return m


def _cases():
    C = []
    F32 = np.float32
    U8 = np.uint8

    C.append(Case(
        "multiclass",
        loss_multiclass_log[fc[3, relu[fc[8, max_pool[2, 2, 2, 2, relu[con[4, 3, 3, 1, 1, input[U8]]]]]]]],
        gray_u8(3, 8, 8), _labels([0, 2, 1], ULONG), ULONG,
        "input<matrix<uchar>>, con_, relu_ (in place), max_pool_, fc_, loss_multiclass_log_"))
    C.append(Case(
        "multiclass_rgb_matrix",
        loss_multiclass_log[fc[3, relu[con[2, 3, 3, 1, 1, input[rgb_pixel]]]]],
        rgb(3, 5, 6), _labels([2, 0, 1], ULONG), ULONG,
        "input<matrix<rgb_pixel>> (channels / 256, no means), con_ over 3 channels"))
    C.append(Case(
        "multiclass_weighted",
        loss_multiclass_log_weighted[fc_no_bias[3, avg_pool[2, 2, 2, 2, prelu[con[3, 3, 3, 1, 1, input[F32]]]]]],
        gray_f32(3, 6, 6),
        _labels([weighted_label(0, 1.0), weighted_label(2, 0.5), weighted_label(1, 2.0)], WEIGHTED),
        WEIGHTED, "input<matrix<float>>, prelu_, avg_pool_, fc_ (no bias), loss_multiclass_log_weighted_"))
    C.append(Case(
        "binary_hinge",
        loss_binary_hinge[fc[1, htan[bn_fc[fc[6, input_array[F32, 2]]]]]],
        arrays_f32(4, 2, 3, 3), _labels([1.0, -1.0, 1.0, -1.0], FLOAT), FLOAT,
        "input<std::array<matrix<float>,2>>, bn_ (FC_MODE, training), htan_, loss_binary_hinge_"))
    binary_log = loss_binary_log[fc[1, sig[bn_con[con[3, 3, 3, 1, 1, input_array2d[U8]]]]]]
    C.append(Case(
        "binary_log", binary_log, gray_u8(3, 6, 6), _labels([1.0, -0.5, 2.0], FLOAT), FLOAT,
        "input<array2d<uchar>>, bn_ (CONV_MODE, training), sig_, loss_binary_log_"))
    C.append(Case(
        "binary_log_one_sample", binary_log, gray_u8(1, 6, 6), _labels([-1.5], FLOAT), FLOAT,
        "bn_ (CONV_MODE) on one sample: inference with the running statistics (forward only: "
        "dlib's bn_ cannot back-propagate one sample)",
        prepare=_bn_statistics(gray_u8(4, 6, 6)), steps=False))
    C.append(Case(
        "multimulticlass",
        loss_multimulticlass_log[{"color": ["red", "green", "blue"], "size": ["small", "large"]},
                                 fc[5, leaky_relu[fc[6, input_rgb_image]]]],
        rgb(3, 4, 5),
        _labels([{"color": "red", "size": "large"}, {"color": "blue", "size": "small"},
                 {"color": "green", "size": "large"}], CLASSIFIERS),
        CLASSIFIERS, "input_rgb_image, leaky_relu_, loss_multimulticlass_log_"))
    C.append(Case(
        "multibinary",
        loss_multibinary_log[fc[3, mish[con[2, 3, 3, 2, 2, input_rgb_image_sized[7]]]]],
        rgb(3, 7, 7), _labels([[1.0, -1.0, 2.0], [-1.0, -1.0, 1.0], [0.5, 1.0, -2.0]], VECTOR_F32),
        VECTOR_F32, "input_rgb_image_sized, con_ (stride 2), mish_, loss_multibinary_log_ (gamma 1.5)",
        make=lambda t: t(loss_multibinary_log_(1.5))))
    C.append(Case(
        "metric",
        loss_metric[l2normalize[fc[4, gelu[con[3, 3, 3, 1, 1, input[F32]]]]]],
        gray_f32(4, 5, 5), _labels([0, 0, 1, 1], ULONG), COLUMN_F32,
        "gelu_, l2normalize_, loss_metric_"))
    C.append(Case(
        "ranking",
        loss_ranking[fc[1, silu[cont[2, 3, 3, 2, 2, input[F32]]]]],
        gray_f32(4, 3, 3), _labels([1.0, -1.0, 2.0, -0.5], FLOAT), FLOAT,
        "cont_ (stride 2), silu_, loss_ranking_"))
    C.append(Case(
        "epsilon_insensitive",
        loss_epsilon_insensitive[fc[1, elu[layer_norm[con[3, 3, 3, 1, 1, input[F32]]]]]],
        gray_f32(3, 4, 4), _labels([0.5, -1.0, 2.0], FLOAT), FLOAT,
        "layer_norm_, elu_, loss_epsilon_insensitive_ (eps 0.1)",
        make=lambda t: t(dnnpy.loss_epsilon_insensitive_(0.1))))
    C.append(Case(
        "mean_squared",
        loss_mean_squared[fc[1, clipped_relu[rms_norm[fc[5, input_tensor]]]]],
        tensors(3, 2, 3, 3, scale=3.0), _labels([0.3, -0.2, 1.0], FLOAT), FLOAT,
        "input_tensor, rms_norm_, clipped_relu_ (ceiling 0.5), loss_mean_squared_",
        make=_set(2, ceiling=0.5)))
    C.append(Case(
        "multioutput",
        loss_mean_squared_multioutput[fc[3, smelu[upsample[2, con[2, 3, 3, 1, 1, input[F32]]]]]],
        gray_f32(3, 3, 4), _labels([[0.1, -0.2, 0.3], [1.0, 0.0, -1.0], [0.5, 0.5, 0.5]], COLUMN_F32),
        COLUMN_F32, "upsample_, smelu_, loss_mean_squared_multioutput_"))
    C.append(Case(
        "dot",
        loss_dot[fc[4, leaky_relu[con[2, 3, 3, 1, 1, input[U8]]]]],
        gray_u8(3, 4, 4), _labels([[1.0, 0.0, -1.0, 0.5], [0.0, 1.0, 0.0, 0.0], [0.2, 0.2, 0.2, -0.6]],
                                  COLUMN_F32),
        COLUMN_F32, "loss_dot_"))

    # -- part B: per-pixel losses, merges, rearranging, attention ------------------------
    C.append(Case(
        "binary_per_pixel",
        loss_binary_log_per_pixel[con[1, 1, 1, 1, 1, resize_to[6, 6, relu[con[2, 3, 3, 2, 2, input[F32]]]]]],
        gray_f32(2, 7, 7), lambda rng: _encoded([_pm1(rng, (6, 6), 0.2) for _ in range(2)], MATRIX_F32),
        MATRIX_F32, "resize_to_, loss_binary_log_per_pixel_ (with ignored pixels)"))
    C.append(Case(
        "multiclass_per_pixel",
        loss_multiclass_log_per_pixel[con[3, 1, 1, 1, 1, add_prev1[relu[con[3, 3, 3, 1, 1,
                                      tag1[con[3, 3, 3, 1, 1, input_rgb_image]]]]]]],
        rgb(2, 5, 5), lambda rng: _encoded([_u16_labels(rng, (5, 5), 3) for _ in range(2)], MATRIX_U16),
        MATRIX_U16, "tag, add_prev_, loss_multiclass_log_per_pixel_ (with label_to_ignore)"))
    C.append(Case(
        "multiclass_per_pixel_weighted",
        loss_multiclass_log_per_pixel_weighted[con[3, 1, 1, 1, 1, mult_prev2[htan[con[3, 3, 3, 1, 1,
                                               tag2[sig[con[3, 3, 3, 1, 1, input[F32]]]]]]]]],
        gray_f32(2, 5, 5), lambda rng: _encoded([_weighted_labels(rng, (5, 5), 3) for _ in range(2)],
                                                WEIGHTED_MATRIX),
        WEIGHTED_MATRIX, "mult_prev_, loss_multiclass_log_per_pixel_weighted_"))
    C.append(Case(
        "mean_squared_per_pixel",
        loss_mean_squared_per_pixel[con[1, 1, 1, 1, 1, resize_prev_to_tagged[tag1, con[2, 3, 3, 2, 2,
                                    tag1[con[2, 3, 3, 1, 1, input[F32]]]]]]],
        gray_f32(2, 6, 6),
        lambda rng: _encoded([rng.standard_normal((6, 6)).astype(np.float32) for _ in range(2)], MATRIX_F32),
        MATRIX_F32, "resize_prev_to_tagged_, loss_mean_squared_per_pixel_"))
    C.append(Case(
        "per_channel_and_pixel",
        loss_mean_squared_per_channel_and_pixel[2, con[2, 1, 1, 1, 1, concat2[tag1, tag2, tag2[con[2, 3, 3, 1, 1,
            skip3[tag1[con[2, 3, 3, 1, 1, tag3[input[F32]]]]]]]]]],
        gray_f32(2, 5, 5),
        lambda rng: _encoded([[rng.standard_normal((5, 5)).astype(np.float32) for _ in range(2)]
                              for _ in range(2)], channels_f32(2)),
        channels_f32(2),
        "concat_, skip, a tag directly on the input (its gradient), "
        "loss_mean_squared_per_channel_and_pixel_"))
    C.append(Case(
        "attention",
        loss_multiclass_log[fc[3, rms_norm[add_prev1[
            multm_prev4[skip3[tag4[linear[8, skip1[
            tag3[softmaxm[tril_mask[
            multm_prev2[linear[8, skip1[
            tag2[transpose[linear_no_bias[8,
            tag1[positional_encodings[embeddings[10, 8, input[F32]]]]]]]]]]]]]]]]]]]]]],
        tokens(3, 4, 10, extra=(11,)), _labels([0, 1, 2], ULONG), ULONG,
        "embeddings_ (on the input; an out-of-range token), positional_encodings_, linear_, "
        "linear_ (no bias), transpose_, multm_prev_, tril_ (-inf mask), softmax_ (PLANE_WISE), "
        "rms_norm_"))
    C.append(Case(
        "act_tril",
        loss_mean_squared_multioutput[fc[2, tril_diag[1, 1, 2, tril[act4[con[2, 3, 3, 1, 1, input[F32]]]]]]],
        gray_f32(2, 4, 6), _labels([[0.5, -0.5], [1.0, 0.25]], COLUMN_F32), COLUMN_F32,
        "adaptive_computation_time_, tril_ (zero and num/den fill values)"))
    C.append(Case(
        "rearrange",
        loss_mean_squared_multioutput[fc[4, flatten[2, 2, 2, extract[3, 2, 2, 2,
            slice[0, 1, 1, 4, 2, 2, reorg[con[2, 3, 3, 1, 1, input[F32]]]]]]]],
        gray_f32(2, 8, 8), _labels([[0.1, 0.2, 0.3, 0.4], [-1.0, 0.0, 1.0, 2.0]], COLUMN_F32), COLUMN_F32,
        "reorg_, slice_, extract_, reshape_to_ (flatten)"))
    C.append(Case(
        "scale_se",
        loss_multiclass_log[fc[3,
            scale_prev2[con[4, 1, 1, 1, 1, skip4[
            tag2[htan[fc[4, max_pool_everything[
            tag4[scale1[sig[fc[4, avg_pool_everything[
            tag1[relu[con[4, 3, 3, 1, 1, input[F32]]]]]]]]]]]]]]]]]],
        gray_f32(3, 5, 5), _labels([2, 0, 1], ULONG), ULONG,
        "scale_, scale_prev_, avg_pool_ and max_pool_ over everything"))
    C.append(Case(
        "softmax_reshape",
        loss_multiclass_log[fc[3, softmax_all[reshape_to[12, 3, 3, reshape_to[-1, 6, 6,
            softmax[con[3, 3, 3, 1, 1, input[F32]]]]]]]],
        gray_f32(3, 4, 4), _labels([1, 1, 0], ULONG), ULONG,
        "softmax_ (CHANNEL_WISE), reshape_to_ (bilinear rescale and plain reshape), softmax_all_"))
    C.append(Case(
        "dropout_multiply",
        loss_mean_squared[fc[1, multiply[dropout_rate[0, affine[fc[4, dropout[input[F32]]]]]]]],
        gray_f32(3, 3, 3), _labels([1.0, 0.0, -1.0], FLOAT), FLOAT,
        "dropout_ and dropout_rate_ with drop rate 0 (deterministic), multiply_, affine_ (FC_MODE)",
        make=_set(6, drop_rate=0.0)))

    # -- part C: repeat and tags on the input, conversions, pairs, detection -------------
    res_block = lambda s: relu[add_prev5[con[2, 3, 3, 1, 1, tag5[s]]]]
    con_block = lambda s: htan[con[2, 3, 3, 1, 1, s]]
    C.append(Case(
        "repeat_tags",
        loss_mean_squared_multioutput[fc[2, repeat[2, con_block, repeat[2, res_block,
            add_prev7[con[2, 3, 3, 1, 1, tag7[input_rgb_image]]]]]]],
        rgb(2, 5, 5), _labels([[0.5, -0.5], [0.0, 1.0]], COLUMN_F32), COLUMN_F32,
        "repeat (copies whose bottom is a tag and copies whose bottom is a layer), a tag on the "
        "input"))
    C.append(Case(
        "bn_to_affine",
        loss_multiclass_log[fc[3, dropout[bn_fc[fc[6, relu[bn_con[con[3, 3, 3, 1, 1, input[F32]]]]]]]]],
        gray_f32(3, 5, 5), _labels([0, 1, 2], ULONG), ULONG,
        "dropout_ (rate 0.5: random, so only bytes), bn_ records read as affine_ and dropout_ "
        "as multiply_",
        random=True, prepare=_bn_statistics(gray_f32(4, 5, 5)),
        twin=loss_multiclass_log[fc[3, multiply[affine[fc[6, relu[affine[con[3, 3, 3, 1, 1, input[F32]]]]]]]]]))
    C.append(Case(
        "barlow_twins",
        loss_barlow_twins[fc[3, relu[bn_fc[fc[4, input_rgb_image_pair]]]]],
        rgb_pairs(3, 4, 4), None, NONE,
        "input_rgb_image_pair (sample expansion factor 2), loss_barlow_twins_"))
    mmod_rgb_type = loss_mmod[con[3, 3, 3, 1, 1, relu[con[4, 3, 3, 1, 1,
                              input_rgb_image_pyramid[pyramid_down(2)]]]]]
    C.append(Case(
        "mmod_rgb", mmod_rgb_type, _corners(rgb(2, 24, 24), 128), _labels(MMOD_BOXES, MMOD), MMOD,
        "input_rgb_image_pyramid (channel means 128), loss_mmod_ (windows clustered from boxes, "
        "an ignored box)",
        make=_mmod_rgb_net, prepare=_mmod_scores(),
        score_channels=3, distinct_above=(-1.0, 0.0)))
    mmod_gray_type = loss_mmod[con[15, 3, 3, 1, 1, leaky_relu[con[4, 5, 5, 1, 1,
                               input_grayscale_image_pyramid[pyramid_down(3)]]]]]
    C.append(Case(
        "mmod_gray_bbr", mmod_gray_type, _corners(_distinct_border(gray_u8(2, 24, 24)), 0),
        _labels(MMOD_BOXES, MMOD), MMOD,
        "input_grayscale_image_pyramid, loss_mmod_ with bounding box regression",
        make=lambda t: t(loss_mmod_(_mmod_options(bbr=True))), prepare=_mmod_scores(),
        score_channels=3, distinct_above=(-1.0, 0.0)))
    C.append(Case(
        "yolo",
        loss_yolo[tag1, tag2, tag2[sig[con[7, 1, 1, 1, 1, max_pool[2, 2, 2, 2, skip3[
            tag1[sig[con[7, 1, 1, 1, 1, tag3[relu[con[4, 3, 3, 2, 2, input_rgb_image]]]]]]]]]]]],
        rgb(2, 24, 24),
        _labels([[yolo_rect(drectangle(2, 3, 9, 10), 1.0, "cat"), yolo_rect(drectangle(10, 8, 21, 17), 1.0, "dog")],
                 [yolo_rect(drectangle(4, 12, 15, 21), 1.0, "dog")]], YOLO),
        YOLO, "loss_yolo_ (two heads, two classes)",
        make=lambda t: t(yolo_options(labels=["cat", "dog"], anchors={tag1: [(6, 6)], tag2: [(12, 10)]}))))
    # DNNPY_PARITY_SEED varies every case's data and dnnpy's initialisation (default 0)
    base = 1000 + 100 * int(os.environ.get("DNNPY_PARITY_SEED", "0"))
    for i, c in enumerate(C):
        c.seed = base + i
    return C


# the truth boxes of the mmod cases (nets_c.cpp's mmod_boxes()): 6x6 and 12x12 boxes fit the
# 6-pixel windows at two pyramid levels; the last box is ignored
MMOD_BOXES = [[mmod_rect(rectangle(2, 3, 7, 8)), mmod_rect(rectangle(12, 2, 23, 13))],
              [mmod_rect(rectangle(4, 4, 9, 7)), mmod_rect(rectangle(14, 14, 17, 19)),
               mmod_rect(rectangle(1, 14, 8, 21), ignore=True)]]


def _corners(make_inputs, value):
    """The images of ``make_inputs`` with their four corner pixels set to ``value``, which
    the input layer maps to 0. Why: a pyramid level is a bilinear (align-corners) resize, so
    every level has the image's corner pixels, and a detector position that sees only a
    corner (and the zero padding) scores the same on every level: tied scores, which dlib's
    std::sort orders in an unspecified way. With zero corners such positions score exactly
    the last con's bias, which the cases keep below the thresholds (_mmod_scores)."""
    def make(rng):
        items, _ = make_inputs(rng)
        for a in items:
            a[0, 0] = a[0, -1] = a[-1, 0] = a[-1, -1] = value
        put = _put_rgb if items[0].ndim == 3 else (lambda w, m: w.matrix(m, np.uint8))
        return items, _encode(items, put)
    return make


def _distinct_border(make_inputs, depth=3):
    """Gray images whose outer ``depth`` rows and columns hold distinct values (a random
    permutation of 1..255; 24x24 images have 252 such pixels). A detector position near the
    image's edge sees only a few border pixels; if two such positions saw equal pixels at the
    same places they would tie."""
    def make(rng):
        items, _ = make_inputs(rng)
        for a in items:
            border = np.ones(a.shape, bool)
            border[depth:-depth, depth:-depth] = False
            a[border] = rng.permutation(np.arange(1, 256, dtype=np.uint8))[:int(border.sum())]
        return items, _encode(items, lambda w, m: w.matrix(m, np.uint8))
    return make


def _mmod_rgb_net(net_type):
    net = net_type(loss_mmod_(_mmod_options()))
    inp = net.input_layer()
    inp.avg_red = inp.avg_green = inp.avg_blue = 128.0
    return net


def _mmod_options(bbr=False):
    opts = mmod_options(MMOD_BOXES, 6, 4)
    opts.be_quiet = True
    if bbr:
        opts.use_bounding_box_regression = True
        opts.bbr_lambda = 50.0
        opts.overlaps_ignore = test_box_overlap(0.5, 0.95)
    return opts


def _mmod_scores():
    """prepare(): detector scores with few candidates and no ties (dlib's std::sort orders
    tied detections in an unspecified way, and two scores that differ by rounding may swap
    places): the last con's filters are scaled so the score channels of the forwarded batch
    have a standard deviation of 1.5 (over the positions not exactly 0: the pyramid's padding)
    and its score biases are set to -3.5, so a few percent of the positions pass the loss's
    threshold (-loss_per_false_alarm = -1) and about 1% to_label's (0); a position whose
    features are all zero (the padding, an image corner: _corners) scores exactly -3.5. The
    driver does the same to dlib's own net (nets_c.cpp's mmod_scores)."""
    def prepare(net, rng):
        top = net.subnet().layer_details()
        nw = len(net.loss_details().options.detector_windows)
        out = np.asarray(net.subnet().get_output().host_read())[:, :nw].astype(np.float64)
        z = out[out != 0]
        sd = np.sqrt(np.mean(z * z) - np.mean(z) ** 2)
        params = top.get_layer_params().host().reshape(-1)
        nf = top.num_filters()
        params[:-nf] *= np.float32(1.5 / sd)
        params[-nf:] = 0
        params[-nf:][:nw] = np.float32(-3.5)
    return prepare


def _encoded(values, kind):
    return values, _encode(values, kind.put)


def _u16_labels(rng, shape, classes):
    m = rng.integers(0, classes, shape).astype(np.uint16)
    m[rng.random(shape) < 0.2] = 65535  # label_to_ignore
    return m


def _weighted_labels(rng, shape, classes):
    labels = rng.integers(0, classes, shape)
    weights = rng.choice([0.0, 0.5, 1.0, 2.0], shape)
    return [[weighted_label(int(labels[r, c]), float(weights[r, c])) for c in range(shape[1])]
            for r in range(shape[0])]


def _bn_statistics(batches):
    """prepare(): a few more forwards on other batches so bn_'s running statistics are not
    the initial ones."""
    def prepare(net, rng):
        for _ in range(3):
            items, _ = batches(rng)
            net.subnet()(items)
    return prepare


CASES = {c.name: c for c in _cases()}


# the class behind each of tests/test_catalogue.py's input names
INPUT_CLASSES = {"input": "_input_matrix", "input_array": "_input_array",
                 "input_array2d": "_input_array2d", "input_rgb_image_sized": "_input_rgb_image_sized",
                 "input_grayscale_image_pyramid": "_input_grayscale_image_pyramid",
                 "input_rgb_image_pyramid": "_input_rgb_image_pyramid"}


def classes_in(case, names):
    """Which of ``names`` (class names: tests/test_catalogue.py's layers, ``loss_x_`` and
    INPUT_CLASSES' values) the case's net type and its twin use: for each layer, loss and
    input layer object, the most specific of its classes that is in ``names``."""
    from dnnpy.visitors import net_layers

    names = set(names)
    seen = set()
    for t in (case.net_type, case.twin):
        if t is None:
            continue
        net = case.new_net() if t is case.net_type else t()
        for node in net_layers(net):
            obj = node.layer_details() if hasattr(node, "layer_details") else node
            seen.update([c.__name__ for c in type(obj).__mro__ if c.__name__ in names][:1])
    return seen
