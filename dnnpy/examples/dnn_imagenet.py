"""dlib's dnn_imagenet_ex: classify images with a trained ResNet classifier, averaging its
softmax over 16 random crops of each image, and print the five best labels with their
probabilities.

    python -m dnnpy.examples.dnn_imagenet [--model FILE] [--crop 48] [IMAGE ...]

As dlib's example: the file holds the net and its labels (dlib's ``deserialize(file) >> net
>> labels``: ``dnnpy.deserialize_objects(file, anet_type, list[str])``); the net that runs is
``softmax<anet_type::subnet_type>`` with the file's subnet copied in (``copy_subnet``); every
image gets ``randomly_crop_images`` (16 rectangles of dlib's
``make_random_cropping_rect_resnet``, ``extract_image_chips``, ``fliplr`` with probability 1/2,
``apply_random_color_offset``) from one ``dlib_rand``, the crop probabilities are averaged,
and the top 5 are printed as dlib's ``p: label`` lines.

The default model is the one ``python -m dnnpy.examples.dnn_imagenet_train`` saves
(``resnet34_g4_classifier.dnn`` in ``--out``, trained first when missing) and the default
images are new shape-class images (``dnnpy.data.make_shape_classes``, seed 2: never trained on); then
the example also prints the top-1 and top-5 accuracy over them (dlib's example has no labels
for its command-line photos). With ``--model resnet34_1000_imagenet_classifier.dnn`` (dlib's
released file, from http://dlib.net/files/) it runs dlib's own ResNet-34 (crops of 227x227;
``--crop`` sets the size for other files) on the IMAGE files given. What differs: no
``image_window`` and no "Hit enter" pause; the numbers and labels are printed only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import dnnpy
from dnnpy import softmax
from dnnpy.data import dlib_rand, make_shape_classes
from dnnpy.examples import dnn_imagenet_train
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.examples.dnn_imagenet_train import (CROP, NET_FILE, make_dlib_net_type, make_net_type,
                                               randomly_crop_images, top_k_accuracies)
from dnnpy.image import load_image

DLIB_MODEL = "resnet34_1000_imagenet_classifier.dnn"


def load_classifier(path, net_type):
    """dlib's ``deserialize(path) >> net >> labels`` then ``softmax<anet_type::subnet_type>
    snet; snet.subnet() = net.subnet();``: returns ``(snet, labels)``."""
    net, labels = dnnpy.deserialize_objects(path, net_type, list[str])
    snet = softmax[net.net_type.subnet]()
    dnnpy.copy_subnet(snet.subnet(), net.subnet())
    return snet, labels


def classify(snet, img, rnd, num_crops=16, crop=CROP):
    """``sum_rows(mat(snet(crops))) / num_crops`` for one image: the averaged probabilities."""
    p = np.asarray(snet(randomly_crop_images(img, rnd, num_crops, crop)))
    return p.reshape(num_crops, -1).mean(0)


def print_top5(p, labels):
    """dlib's loop: five times, print ``p(best): labels[best]`` and zero that entry."""
    p = p.copy()
    for _ in range(min(5, len(p))):
        k = int(np.argmax(p))                  # index_of_max: the first of equal maxima
        print(f"{p[k]:g}: {labels[k]}")
        p[k] = 0


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("images", nargs="*", help="image files (default: new shape-class images)")
    parser.add_argument("--model", help=f"a net + labels file (dlib's {DLIB_MODEL}, or one "
                        f"saved by dnn_imagenet_train; default: --out/{NET_FILE})")
    parser.add_argument("--crop", type=int, help=f"crop size (default: 227 for dlib's "
                        f"file, else {CROP})")
    parser.add_argument("--crops", type=int, default=16, help="random crops per image")
    parser.add_argument("--test-per-class", type=int, default=20,
                        help="shape-class test images per class when no IMAGE is given")
    parser.add_argument("--width", type=int, default=8,
                        help="first-level filters of the dnn_imagenet_train net in --model")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.crops, args.test_per_class = 2, 1
    out = out_dir(args.out)
    timer = Timer()
    results = {}
    model = Path(args.model) if args.model else out / NET_FILE
    dlib_file = model.name == DLIB_MODEL
    if not model.exists() and not args.model:
        print(f"{model} is missing: training it first (dnn_imagenet_train)")
        dnn_imagenet_train.main((["--quick"] if args.quick else []) + ["--quiet", "--out", str(out)]
                                + ["--threads", str(args.threads)])
    crop = args.crop or (227 if dlib_file else CROP)
    net_type = (dnnpy.inference_type(make_dlib_net_type()) if dlib_file else
                dnnpy.inference_type(make_net_type(10, args.width, crop)))
    with num_threads(args.threads):
        snet, labels = load_classifier(model, net_type)
        results.update(model=model, labels=labels)
        rnd = dlib_rand()
        if args.images:
            results["probabilities"] = []
            for f in args.images:
                print(f"{f}:")
                results["probabilities"].append(classify(snet, load_image(f), rnd, args.crops, crop))
                print_top5(results["probabilities"][-1], labels)
        else:
            images, y = make_shape_classes(args.test_per_class, size=64, seed=2)
            p = np.stack([classify(snet, img, rnd, args.crops, crop) for img in images])
            for i in range(min(3, len(images))):
                print(f"test image {i} (a {labels[y[i]]}):")
                print_top5(p[i], labels)
            top1, top5 = top_k_accuracies(p, y)
            print(f"test top5 accuracy:  {top5:.4f}")
            print(f"test top1 accuracy:  {top1:.4f}")
            results.update(top1=top1, top5=top5)
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
