"""dlib's dnn_introduction3_ex: transfer learning, a pretrained ResNet backbone under a new top.

    python -m dnnpy.examples.dnn_introduction3 [--steps 150] [--size 56] [--resnet50 FILE] [--out dnnpy_example_output]

dlib's example loads ResNet-50 trained on ImageNet (``resnet50_1000_imagenet_classifier.dnn``:
the net, then its ``vector<string>`` of class names), assigns its backbone under a
``loss_metric<fc_no_bias<128, ...>>`` top (``net.subnet().subnet() = backbone``), freezes it
with visitors (weight decay and learning-rate multipliers), prints the net with its tensor
shapes and ``count_parameters``. It stops there: "fine-tune the new network ... on another
task". dlib's ``resnet.h`` declares the ResNet families as alias templates in
``resnet::def<BN>``; here :class:`resnet_def` has them as methods that build net types (the
same layers, the same order; ``width_divisor`` divides every width, 1 is dlib's)::

    template<long N, int stride, typename SUBNET>
    using basicblock = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,SUBNET>>>>>;
    using residual      = add_prev1<BLOCK<N,1,tag1<SUBNET>>>;
    using residual_down = add_prev2<avg_pool<2,2,2,2,skip1<tag2<BLOCK<N,2,tag1<SUBNET>>>>>>;
    using input_processing = max_pool<3,3,2,2,relu<BN<con<64,7,7,2,2,INPUT>>>>;
    backbone_18 = backbone_basicblock<1,1,1,2>, backbone_50 = backbone_bottleneck<2,5,3,3>, ...
    model::net_type = loss_metric<fc_no_bias<128,avg_pool_everything<backbone_50<input_rgb_image>>>>

With no download, the default run does the whole transfer on the shipped digits (8x8,
upsampled to ``--size`` 56, the smallest size the ResNet layout's 5 halvings (and dlib's unpadded strided
convolutions) leave valid; grey replicated into RGB for ``input_rgb_image``):

1. pretrain ``n18`` (``backbone_18``, widths /8: 8..64 filters) as a 5-class classifier on the
   digits 0-4, and save it as dlib's file is laid out (net, then the labels ``["0", ..., "4"]``);
2. read that file back (``deserialize_objects(path, net_type, list[str])``: dlib's
   ``>> net >> labels``), graft its backbone under ``loss_metric[fc_no_bias[128, ...]]``
   (``copy_subnet(net.subnet().subnet(), clf.subnet().subnet())``), apply dlib's visitor
   sequence (weight decay 0.001 everywhere, lr 0.5, then backbone frozen: lr and weight decay 0,
   top layers ``[0, 2)`` back to 1), print the net with shapes and ``count_parameters``;
3. fine-tune the top on the digits 5-9 (classes the backbone never saw), and the same top over a
   randomly initialised frozen backbone;
4. score both: 1-nearest-neighbour accuracy of the embeddings of held-out 5-9 digits against
   the training 5-9 digits (and nearest class centre).

The default run is seeded, so it repeats. ``--resnet50 FILE`` runs dlib's own steps on dlib's
file instead (a 224x224 forward through ResNet-50; dlib's layer ranges ``[2, 38)``,
``[38, 107)``, ... for its per-stage learning rates).
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (add_prev1, add_prev2, avg_pool, avg_pool_everything, bn_con, con, copy_subnet,
                   count_parameters, fc, fc_no_bias, input_rgb_image, loss_metric,
                   loss_multiclass_log, max_pool, relu, repeat, set_all_learning_rate_multipliers,
                   set_learning_rate_multipliers_range, set_weight_decay_multiplier, skip1, tag1, tag2,
                   visit_computational_layers, visit_computational_layers_range)
from dnnpy.data.datasets import load_digits, resize_bilinear
from dnnpy.errors import SerializationError
from dnnpy.examples._util import Timer, base_parser, make_trainer, out_dir
from dnnpy.layers.base import seeded_initialisation


class resnet_def:
    """dlib's ``resnet::def<BN>`` (examples/resnet.h): the ResNet blocks and backbones as net
    types, ``BN`` being ``bn_con`` (training) or ``affine`` (inference). Every width (64, 128,
    256, 512) is divided by ``width_divisor`` (1: dlib's nets)."""

    def __init__(self, BN, width_divisor=1):
        if not isinstance(width_divisor, int) or not 1 <= width_divisor <= 64:
            raise ValueError(f"resnet_def: width_divisor must be an integer in [1, 64], got {width_divisor!r}")
        self.BN, self.width_divisor = BN, width_divisor

    def width(self, n):
        return n // self.width_divisor

    def basicblock(self, N, stride, SUBNET):
        BN = self.BN
        return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]

    def bottleneck(self, N, stride, SUBNET):
        BN = self.BN
        return BN[con[4 * N, 1, 1, 1, 1, relu[BN[con[N, 3, 3, stride, stride,
                  relu[BN[con[N, 1, 1, 1, 1, SUBNET]]]]]]]]

    def residual(self, BLOCK, N, SUBNET):
        return add_prev1[BLOCK(N, 1, tag1[SUBNET])]

    def residual_down(self, BLOCK, N, SUBNET):
        return add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[BLOCK(N, 2, tag1[SUBNET])]]]]

    def residual_block(self, RESIDUAL, BLOCK, N, SUBNET):
        return relu[RESIDUAL(BLOCK, N, SUBNET)]

    def input_processing(self, INPUT):
        return max_pool[3, 3, 2, 2, relu[self.BN[con[self.width(64), 7, 7, 2, 2, INPUT]]]]

    def _backbone(self, BLOCK, nb_512, nb_256, nb_128, nb_64, INPUT):
        def res(N):        # dlib's resbasicblock_N / resbottleneck_N, for repeat
            return lambda SUBNET: self.residual_block(self.residual, BLOCK, N, SUBNET)

        def down(N, SUBNET):
            return self.residual_block(self.residual_down, BLOCK, N, SUBNET)
        w = self.width
        return repeat[nb_512, res(w(512)), down(w(512),
               repeat[nb_256, res(w(256)), down(w(256),
               repeat[nb_128, res(w(128)), down(w(128),
               repeat[nb_64, res(w(64)), self.input_processing(INPUT)])])])]

    def backbone_basicblock(self, nb_512, nb_256, nb_128, nb_64, INPUT):
        return self._backbone(self.basicblock, nb_512, nb_256, nb_128, nb_64, INPUT)

    def backbone_bottleneck(self, nb_512, nb_256, nb_128, nb_64, INPUT):
        return self._backbone(self.bottleneck, nb_512, nb_256, nb_128, nb_64, INPUT)

    def backbone_18(self, INPUT):  return self.backbone_basicblock(1, 1, 1, 2, INPUT)     # noqa: E704
    def backbone_34(self, INPUT):  return self.backbone_basicblock(2, 5, 3, 3, INPUT)     # noqa: E704
    def backbone_50(self, INPUT):  return self.backbone_bottleneck(2, 5, 3, 3, INPUT)     # noqa: E704
    def backbone_101(self, INPUT): return self.backbone_bottleneck(2, 22, 3, 3, INPUT)    # noqa: E704
    def backbone_152(self, INPUT): return self.backbone_bottleneck(2, 35, 7, 3, INPUT)    # noqa: E704

    def classifier(self, depth, num_classes=1000, INPUT=input_rgb_image):
        """dlib's ``n18`` ... ``n152``: ``loss_multiclass_log<fc<1000, avg_pool_everything<
        backbone_<depth><input_rgb_image>>>>`` (with ``num_classes`` outputs)."""
        backbone = getattr(self, f"backbone_{depth}", None)
        if backbone is None:
            raise ValueError(f"resnet_def.classifier: depth must be 18, 34, 50, 101 or 152, got {depth!r}")
        return loss_multiclass_log[fc[num_classes, avg_pool_everything[backbone(INPUT)]]]


def metric_net_type(depth=50, width_divisor=1, dims=128, BN=bn_con):
    """dlib's ``model::net_type<BN>``: ``loss_metric<fc_no_bias<128, avg_pool_everything<
    backbone_50<input_rgb_image>>>>`` (``depth`` picks the backbone)."""
    backbone = getattr(resnet_def(BN, width_divisor), f"backbone_{depth}")
    return loss_metric[fc_no_bias[dims, avg_pool_everything[backbone(input_rgb_image)]]]


class visitor_weight_decay_multiplier:
    """dlib's example visitor: ``set_weight_decay_multiplier(l, m)`` on every layer visited."""

    def __init__(self, new_weight_decay_multiplier):
        self.new_weight_decay_multiplier = new_weight_decay_multiplier

    def __call__(self, layer):
        set_weight_decay_multiplier(layer, self.new_weight_decay_multiplier)


def freeze_backbone(net):
    """dlib's visitor sequence: weight decay 0.001 and lr 0.5 everywhere, then the backbone
    (``net.subnet().subnet()``) frozen (lr 0, weight decay 0), then layers ``[0, 2)`` (loss and
    fc_no_bias) back to weight decay 1 and lr 1."""
    visit_computational_layers(net, visitor_weight_decay_multiplier(0.001))
    set_all_learning_rate_multipliers(net, 0.5)
    visit_computational_layers(net.subnet().subnet(), visitor_weight_decay_multiplier(0))
    set_all_learning_rate_multipliers(net.subnet().subnet(), 0)
    visit_computational_layers_range(net, 0, 2, visitor_weight_decay_multiplier(1))
    set_learning_rate_multipliers_range(net, 0, 2, 1)


# dlib's per-stage learning rates for its ResNet-50 metric net (193 layers)
RESNET50_STAGE_RATES = [(0, 2, 1), (2, 38, 0.1), (38, 107, 0.01), (107, 154, 0.001), (154, 193, 0.0001)]


def print_net_and_sizes(net, input_tensor):
    """dlib's closing lines: the net (with each layer's output size, after a forward), the
    input size and the parameter count."""
    print(net)
    n, k, nr, nc = input_tensor.num_samples(), input_tensor.k(), input_tensor.nr(), input_tensor.nc()
    print(f"input size=(num:{n}, k:{k}, nr:{nr}, nc:{nc})")
    print(f"number of network parameters: {count_parameters(net)}")


def forward_black_image(net, size):
    """dlib: ``net.to_tensor`` of one black ``size x size`` RGB image, then ``net.forward``."""
    x = net.to_tensor([np.zeros((size, size, 3), np.uint8)])
    net.forward(x)
    return x


def resnet50_transfer(path, width_divisor=1, image_size=224, quiet=False):
    """dlib's example, step for step, on its file: read ResNet-50 (``train_50``) and its
    labels, graft the backbone under the metric top, set the multipliers, print. Returns
    ``(net, labels)``. ``width_divisor`` reads a narrow file of the same layout (for tests)."""
    train_50 = resnet_def(bn_con, width_divisor).classifier(50, num_classes=1000)
    net = metric_net_type(50, width_divisor)()
    resnet50, labels = dnnpy.deserialize_objects(path, train_50, list[str])
    print(f"read {path}: ResNet-50 and {len(labels)} labels ({', '.join(labels[:3])}, ...)")
    backbone = resnet50.subnet().subnet()
    copy_subnet(net.subnet().subnet(), backbone)
    freeze_backbone(net)
    for begin, end, rate in RESNET50_STAGE_RATES:
        set_learning_rate_multipliers_range(net, begin, end, rate)
    x = forward_black_image(net, image_size)
    if not quiet:
        print_net_and_sizes(net, x)
    else:
        print(f"number of network parameters: {count_parameters(net)}")
    return net, labels


def backbone_parameters(net):
    """Every parameter of the backbone (``net.subnet().subnet()``), as one float array copy."""
    parts = []
    dnnpy.visit_layer_parameters(net.subnet().subnet(), lambda p: parts.append(p.host_read().ravel().copy()))
    return np.concatenate(parts)


def upsample(images, size):
    """The 8x8 digits bilinearly resized to ``size x size`` uint8."""
    return np.clip(np.rint(resize_bilinear(images, size, size)), 0, 255).astype(np.uint8)


def rgb(images):
    """Grey HxW uint8 images as HxWx3 (``input_rgb_image``)."""
    return list(np.repeat(np.asarray(images)[..., None], 3, axis=-1))


def balanced_batches(labels, per_class, rng):
    """Endless index batches with ``per_class`` samples of every class (loss_metric needs
    pairs of the same class in each mini-batch, as dlib's metric-learning examples build them)."""
    by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    while True:
        yield np.concatenate([rng.choice(ix, per_class, replace=False) for ix in by_class])


def train_steps(trainer, images, labels, steps, batches):
    for _ in range(steps):
        idx = next(batches)
        trainer.train_one_step([images[i] for i in idx], [int(labels[i]) for i in idx])
    trainer.get_net()      # wait for the last step (dlib: sync the trainer)


def knn_scores(net, gallery_x, gallery_y, query_x, query_y, batch_size=128):
    """``(1-NN accuracy, nearest-centre accuracy)`` of the query embeddings against the gallery's,
    embedded by ``net``'s inference copy (bn_con -> affine with the running statistics)."""
    infer = dnnpy.inference_copy(net)
    g = np.asarray(infer(gallery_x, batch_size=batch_size))
    q = np.asarray(infer(query_x, batch_size=batch_size))
    d = ((q[:, None, :] - g[None, :, :]) ** 2).sum(-1)
    nn = np.mean(gallery_y[np.argmin(d, axis=1)] == query_y)
    classes = np.unique(gallery_y)
    centres = np.stack([g[gallery_y == c].mean(0) for c in classes])
    dc = ((q[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    return float(nn), float(np.mean(classes[np.argmin(dc, axis=1)] == query_y))


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--steps", type=int, default=150,
                        help="train_one_step calls, for the pretraining and for each fine-tuning")
    parser.add_argument("--size", type=int, default=56,
                        help="digit image size (>= 55: the ResNet layout halves it 5 times)")
    parser.add_argument("--width-divisor", type=int, default=8,
                        help="divides the ResNet widths 64..512 (1: dlib's widths)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation and batch seed")
    parser.add_argument("--resnet50", metavar="FILE", default=None,
                        help="dlib's resnet50_1000_imagenet_classifier.dnn: run dlib's steps on it")
    args = parser.parse_args(argv)
    timer = Timer()
    if args.resnet50:
        try:
            with seeded_initialisation(args.seed):
                net, labels = resnet50_transfer(args.resnet50, quiet=args.quiet)
        except (SerializationError, OSError) as e:
            print(e)
            print("You need a copy of the file resnet50_1000_imagenet_classifier.dnn, available at "
                  "http://dlib.net/files/resnet50_1000_imagenet_classifier.dnn.bz2")
            raise SystemExit(1) from e
        return {"num_labels": len(labels), "num_parameters": count_parameters(net),
                "seconds": timer()}
    if args.size < 55:
        parser.error(f"--size must be >= 55 for the ResNet layout, got {args.size}")
    if args.quick:
        args.steps = 2
    out = out_dir(args.out)
    rng = np.random.default_rng(args.seed)
    train_x, train_y, test_x, test_y = load_digits(size=8, test_fraction=0.2)
    lo_tr, lo_te, hi_tr, hi_te = train_y < 5, test_y < 5, train_y >= 5, test_y >= 5
    if args.quick:   # a few images per split, enough to run every step
        keep = lambda m, n: m & (np.cumsum(m) <= n)        # noqa: E731
        lo_tr, lo_te, hi_tr, hi_te = keep(lo_tr, 20), keep(lo_te, 10), keep(hi_tr, 20), keep(hi_te, 10)
    train_x, test_x = upsample(train_x, args.size), upsample(test_x, args.size)
    print(f"data: the shipped digits at {args.size}x{args.size} (grey in RGB): pretraining on "
          f"{lo_tr.sum()} images of 0-4; fine-tuning on {hi_tr.sum()} of 5-9, scored on "
          f"{hi_te.sum()} held-out 5-9")
    per_class = 2 if args.quick else 8
    eval_batch = 10 if args.quick else 128    # --quick: one batch shape for every net
    results = {}

    # 1. pretrain the backbone as a classifier of 0-4 and save it as dlib's file is laid out
    resnet = resnet_def(bn_con, args.width_divisor)
    clf_type = resnet.classifier(18, num_classes=5)
    clf = clf_type()
    trainer = make_trainer(clf, dnnpy.adam(0.0005, 0.9, 0.999), 0.001, 5 * per_class, 1,
                           verbose=False)
    t = Timer()
    with seeded_initialisation(args.seed):
        train_steps(trainer, rgb(train_x[lo_tr]), train_y[lo_tr], args.steps,
                    balanced_batches(train_y[lo_tr], per_class, rng))
    clf.clean()
    pred = np.asarray(dnnpy.inference_copy(clf)(rgb(test_x[lo_te]), batch_size=eval_batch))
    results["pretrain_accuracy"] = float(np.mean(pred == test_y[lo_te]))
    print(f"pretrained resnet-18 (widths /{args.width_divisor}) on 0-4: {args.steps} steps in "
          f"{t():.1f} s, held-out 0-4 accuracy {results['pretrain_accuracy']:.4f}")
    clf_path = out / "digits_resnet18_classifier.dnn"
    dnnpy.serialize_objects(clf_path, clf, [str(c) for c in range(5)], format="dlib")
    print(f"saved the classifier and its labels to {clf_path} (dlib's layout: net, then labels)")

    # 2. dlib's steps: read net + labels, graft the backbone under the metric top, freeze
    pretrained, labels = dnnpy.deserialize_objects(clf_path, clf_type, list[str])
    net_type = metric_net_type(18, args.width_divisor)
    with seeded_initialisation(args.seed + 1):
        net = net_type()
        copy_subnet(net.subnet().subnet(), pretrained.subnet().subnet())
        freeze_backbone(net)
        x = forward_black_image(net, args.size)
    if not args.quiet:
        print_net_and_sizes(net, x)
    else:
        print(f"number of network parameters: {count_parameters(net)}")
    results["num_parameters"] = count_parameters(net)
    results["labels"] = labels

    # 3. fine-tune the top on 5-9: over the pretrained backbone, and over a random one
    hx_tr, hy_tr, hx_te, hy_te = rgb(train_x[hi_tr]), train_y[hi_tr], rgb(test_x[hi_te]), test_y[hi_te]
    random_net = net_type()
    with seeded_initialisation(args.seed + 1):
        forward_black_image(random_net, args.size)      # same top init, random backbone
        freeze_backbone(random_net)
    frozen_before = backbone_parameters(net)
    for name, n in (("pretrained", net), ("random", random_net)):
        t = Timer()
        tr = make_trainer(n, dnnpy.adam(0.0005, 0.9, 0.999), 0.001, 5 * per_class, 1, verbose=False)
        train_steps(tr, hx_tr, hy_tr, args.steps, balanced_batches(hy_tr, per_class, rng))
        nn, centre = knn_scores(n, hx_tr, hy_tr, hx_te, hy_te, eval_batch)
        results[f"{name}_knn_accuracy"], results[f"{name}_centre_accuracy"] = nn, centre
        print(f"{name:>10} frozen backbone: fine-tuned the top in {t():.1f} s; held-out 5-9: "
              f"1-NN accuracy {nn:.4f}, nearest-centre accuracy {centre:.4f}")
    # lr multiplier 0: the solvers leave the backbone's parameters exactly as they were (its
    # bn_con running statistics do move: they are state, not parameters, as in dlib)
    results["backbone_unchanged"] = bool(np.array_equal(frozen_before, backbone_parameters(net)))
    print(f"the frozen backbone's parameters are unchanged by fine-tuning: {results['backbone_unchanged']}")
    results["knn_gain"] = results["pretrained_knn_accuracy"] - results["random_knn_accuracy"]
    print(f"transfer gain (1-NN accuracy, pretrained - random backbone): {results['knn_gain']:+.4f}")

    net.clean()
    net_path = out / "digits_metric_transfer.dnn"
    dnnpy.serialize(net, net_path, format="dlib")
    results.update(classifier_path=clf_path, net_path=net_path, seconds=timer())
    print(f"saved the fine-tuned metric net to {net_path}; done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
