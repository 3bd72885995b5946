"""dlib's dnn_semantic_segmentation_ex: runs the trained segmentation net on images.

    python -m dnnpy.examples.dnn_semantic_segmentation [--net FILE] [--images 50] [--out dnnpy_example_output]

dlib's example reads ``semantic_segmentation_voc2012net_v2.dnn`` into ``anet_type`` (the
U-Net of ``dnn_semantic_segmentation_ex.h`` with ``affine`` for ``bn_con``: dlib's ``affine_``
reads ``bn_con`` records), runs it on every image of a folder, cuts the net's label image
(which may differ in size from the input) to the input's size with a centred
nearest-neighbour chip, colours the labels with PASCAL VOC's colour table, shows the input and
the colours side by side (``join_rows``) and prints the most prominent non-background class of
each image.

Here: it reads the net that ``dnn_semantic_segmentation_train`` saved (``--net``; when the file
is missing it trains one first, with that example's defaults, and says so), into the
``affine`` net type, runs it on freshly generated scenes (another seed than the training data's), writes
``input | colour labels | true colour labels`` PNGs (``dlib's window'' → files), prints dlib's
line per image with the true most prominent class beside it, and the pixel accuracy and mean
IoU over all the images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import dnnpy
from dnnpy.examples import dnn_semantic_segmentation_train as seg_train
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.examples.semantic_segmentation_net import NET_FILENAME, make_net_type, segment
from dnnpy.image import join_rows, save_png

# PASCAL VOC's colour table (its first entries): background black, then the bit-interleaved
# colours VOC uses; label_to_ignore is VOC's border colour (224, 224, 192)
VOC_COLORS = np.array([(0, 0, 0), (128, 0, 0), (0, 128, 0), (128, 128, 0), (0, 0, 128),
                       (128, 0, 128), (0, 128, 128), (128, 128, 128), (64, 0, 0), (192, 0, 0),
                       (64, 128, 0), (192, 128, 0), (64, 0, 128), (192, 0, 128), (64, 128, 128),
                       (192, 128, 128), (0, 64, 0), (128, 64, 0), (0, 192, 0), (128, 192, 0),
                       (0, 64, 128)], np.uint8)
IGNORE_COLOR = np.array((224, 224, 192), np.uint8)


def index_label_image_to_rgb_label_image(index_label_image):
    """dlib's example helper: each label's VOC colour (``label_to_ignore``: the border colour)."""
    lab = np.asarray(index_label_image)
    bad = (lab >= len(VOC_COLORS)) & (lab != dnnpy.label_to_ignore)
    if bad.any():
        raise ValueError(f"index_label_image_to_rgb_label_image: label {int(lab[bad][0])} has no "
                         f"colour (the table has {len(VOC_COLORS)})")
    rgb = VOC_COLORS[np.minimum(lab, len(VOC_COLORS) - 1)]
    rgb[lab == dnnpy.label_to_ignore] = IGNORE_COLOR
    return rgb


def get_most_prominent_non_background_classlabel(index_label_image, class_names):
    """dlib's example helper: the non-background class with the most pixels (the first such
    class on ties, and "background"'s neighbour class 1 when there are none, as dlib's
    ``max_element`` over counters[1:])."""
    lab = np.asarray(index_label_image).ravel()
    counts = np.bincount(lab[lab < len(class_names)], minlength=len(class_names))
    return class_names[1 + int(np.argmax(counts[1:]))]


def load_or_train(net_path, class_count, args):
    """The ``affine`` net read from ``net_path``; trained first (and saved there) when missing."""
    net_path = Path(net_path)
    if not net_path.exists():
        print(f"{net_path} is missing: training it first with dnn_semantic_segmentation_train "
              f"(python -m dnnpy.examples.dnn_semantic_segmentation_train)")
        train_argv = ["--out", str(net_path.parent), "--quiet"] + (["--quick"] if args.quick else [])
        trained = seg_train.main(train_argv)
        if Path(trained["net_path"]) != net_path:
            Path(trained["net_path"]).replace(net_path)
    net = make_net_type(class_count, testing=True, levels=args.levels, repeats=args.repeats)()
    dnnpy.deserialize(net_path, net)   # affine_ reads bn_con's records, as dlib's
    return net


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--net", default=None,
                        help=f"the trained net (default: OUT/{NET_FILENAME}, trained if missing)")
    parser.add_argument("--images", type=int, default=50, help="freshly generated scenes to segment")
    parser.add_argument("--pngs", type=int, default=8, help="how many of them to write as PNG")
    parser.add_argument("--levels", type=int, default=2, help="the net's U-Net levels")
    parser.add_argument("--repeats", type=int, default=0, help="the net's residual repeats")
    parser.add_argument("--seed", type=int, default=7, help="seed of the scenes")
    parser.add_argument("--threads", type=int, default=1,
                        help="dnnpy.set_num_threads for the run, undone at the end (0: leave as is)")
    args = parser.parse_args(argv)
    if args.quick:
        args.images, args.pngs = 4, 2
    before = dnnpy.get_num_threads()
    if args.threads:
        dnnpy.set_num_threads(args.threads)   # the net's ops are tiny: see the train example
    try:
        return run(args)
    finally:
        if args.threads and before != args.threads:
            dnnpy.set_num_threads(before)


def run(args) -> dict:
    """``main``'s work, with its parsed arguments (the thread count already set)."""
    out = out_dir(args.out)
    timer = Timer()

    scenes = seg_train.make_data(args.images, seed=10_000 + args.seed)
    class_names = scenes[0].class_names
    net_path = Path(args.net) if args.net else out / NET_FILENAME
    net = load_or_train(net_path, len(class_names), args)
    print(f"Found {len(scenes)} images, processing...")

    predicted = segment(net, [s.image for s in scenes])
    right, pngs = 0, []
    for i, (s, labels) in enumerate(zip(scenes, predicted)):
        classlabel = get_most_prominent_non_background_classlabel(labels, class_names)
        truth = get_most_prominent_non_background_classlabel(s.class_labels, class_names)
        right += classlabel == truth
        print(f"scene_{i:03d}.png : {classlabel}" + ("" if args.quiet else f"  (truth: {truth})"))
        if i < args.pngs:
            # dlib shows join_rows(input, rgb labels) in a window; we add the true labels
            row = join_rows(join_rows(s.image, index_label_image_to_rgb_label_image(labels)),
                            index_label_image_to_rgb_label_image(s.class_labels))
            pngs.append(save_png(row, out / f"semantic_segmentation_{i:03d}.png"))
    acc, miou, iou = seg_train.pixel_metrics(scenes, predicted, len(class_names))
    results = {"prominent_class_accuracy": right / len(scenes), "pixel_accuracy": acc,
               "mean_iou": miou, "iou": iou, "pngs": pngs, "net_path": net_path,
               "class_names": class_names, "labels": predicted}
    print(f"most prominent class right on {right} of {len(scenes)} images")
    print(f"pixel accuracy: {acc:.4f}, mean IoU: {miou:.4f}")
    print(f"wrote {len(pngs)} PNGs (input | net's labels | true labels) to {out}")
    print(f"done in {timer():.1f} s")
    return results


if __name__ == "__main__":
    main()
