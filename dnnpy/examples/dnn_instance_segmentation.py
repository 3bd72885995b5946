"""dlib's dnn_instance_segmentation_ex: runs the detector and the per-class mask nets on images
and paints each instance's mask.

    python -m dnnpy.examples.dnn_instance_segmentation [--net FILE] [--images 12] [--out dnnpy_example_output]

dlib's example reads ``instance_segmentation_voc2012net_v2.dnn`` (``deserialize(file) >>
det_net >> seg_nets_by_class``: the detector into ``det_anet_type``, with ``affine`` for
``bn_con``, and a ``std::map<string, seg_bnet_type>``), and for every image of a folder: runs the
detector; for each detection cuts the ``get_cropping_rect`` chip (227x227, bilinear), runs the
mask net of the detection's label on it, resizes the score map to the chip's rectangle
(bilinear ``resize_image``) and paints the pixels with a score > 0 in a random colour
(``dlib::rand``), dimmed where the score is below 5, keeping the most confident instance per
pixel; draws each box in its class's colour; prints ``Found car, cat in FILE`` and shows the
input and the painted labels side by side (``join_rows``) in a window.

Here: it reads the file ``dnn_instance_segmentation_train`` saved (``--net``; when missing it
trains it first, with that example's defaults, and says so) with
``deserialize_objects(path, det_net_type(testing=True), dict[str, seg_net_type()])``, runs on
freshly generated scenes (another seed than the training and testing scenes), paints as dlib does, and
writes ``input with masks overlaid (dnnpy.image.overlay) and boxes | dlib's painted labels``
for every scene, tiled into one PNG (dlib's window -> a file). It also prints the detection
average precision and the mean mask IoU on those scenes (the train example's ``evaluate``).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from dnnpy import FileOverrideWarning, deserialize_objects
from dnnpy.data import dlib_rand
from dnnpy.examples import dnn_instance_segmentation_train as inst_train
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, num_threads, out_dir
from dnnpy.examples.instance_segmentation_net import (NET_FILENAME, det_net_type, predict_mask,
                                                      seg_net_type)
from dnnpy.image import draw_rectangle, join_rows, overlay, save_png, tile_images

CLASS_COLORS = {"smiley": (255, 0, 255), "car": (0, 255, 0)}   # dlib: VOC's class colours


def load_or_train(net_path, args):
    """``(det_net, seg_nets_by_class)`` read from ``net_path``; trained first when missing."""
    net_path = Path(net_path)
    if not net_path.exists():
        print(f"{net_path} is missing: training it first with dnn_instance_segmentation_train "
              f"(python -m dnnpy.examples.dnn_instance_segmentation_train)")
        trained = inst_train.main(["--out", str(net_path.parent), "--quiet"]
                                  + (["--quick"] if args.quick else []))
        if Path(trained["net_path"]) != net_path:
            Path(trained["net_path"]).replace(net_path)
    # dlib: det_anet_type det_net; std::map<std::string, seg_bnet_type> seg_nets_by_class;
    # affine_ reads bn_con's records; the mask nets run on one chip at a time, so their
    # bn_con layers use the running statistics. As in dlib, the detector's last con takes its
    # filter count (one per detector window) from the file: an override this reader expects
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FileOverrideWarning)
        return deserialize_objects(net_path, det_net_type(testing=True), dict[str, seg_net_type()])


def paint_instances(image, instances, seg_nets, rnd):
    """dlib's runner loop for one image: ``(rgb_label_image, masks)`` where ``masks[i]`` is the
    boolean mask of ``instances[i]`` (its score > 0). A detection whose label has no mask net
    uses the only net when there is exactly one (dlib's ``""`` key), else it is an error."""
    rows, cols = image.shape[:2]
    rgb = np.zeros((rows, cols, 3), np.uint8)
    confidence = np.zeros((rows, cols), np.float32)
    masks = []
    for det in instances:
        net = seg_nets.get(det.label)
        if net is None:
            if len(seg_nets) != 1:
                raise KeyError(f"dnn_instance_segmentation: no mask net for the label {det.label!r} "
                               f"(nets for: {sorted(seg_nets)})")
            net = next(iter(seg_nets.values()))
        scores = predict_mask(net, image, det.rect)
        color = np.array([rnd.get_random_8bit_number() for _ in range(3)], np.float32)
        better = (scores > 0) & (scores > confidence)
        # dlib: scale the colour's intensity where the confidence is below 5
        scale = np.minimum(scores[better], 5.0) / 5.0
        rgb[better] = (color[None, :] * scale[:, None]).astype(np.uint8)
        confidence[better] = scores[better]
        masks.append(scores > 0)
        draw_rectangle(rgb, det.rect, CLASS_COLORS.get(det.label, (255, 255, 255)))
    return rgb, masks


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--net", default=None,
                        help=f"the trained nets (default: OUT/{NET_FILENAME}, trained if missing)")
    parser.add_argument("--images", type=int, default=12, help="freshly generated scenes to run on")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes (10000 + seed)")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.images = 2
    with num_threads(args.threads):
        return run(args)


def run(args) -> dict:
    """``main``'s work, with its parsed arguments (the thread count already set)."""
    out = out_dir(args.out)
    net_path = Path(args.net) if args.net else out / NET_FILENAME
    det_net, seg_nets = load_or_train(net_path, args)
    timer, cpu0 = Timer(), time.process_time()

    scenes = inst_train.make_data(args.images, 10_000 + args.seed)
    print(f"Found {len(scenes)} images, processing...")
    rnd = dlib_rand()
    tiles = []
    for n, s in enumerate(scenes):
        instances = det_net([s.image])[0]
        rgb, masks = paint_instances(s.image, instances, seg_nets, rnd)
        shown = s.image.copy()
        for det, mask in zip(instances, masks):
            overlay(shown, mask, CLASS_COLORS.get(det.label, (255, 255, 255)), alpha=0.5)
            draw_rectangle(shown, det.rect, (255, 0, 0))
        tiles.append(join_rows(shown, rgb))
        if instances:
            print(f"Found {', '.join(d.label for d in instances)} in scene_{n:03d}")
    png_path = save_png(tile_images(tiles), out / "instance_segmentation.png")
    print(f"wrote the scenes with their masks to {png_path}")
    results = inst_train.evaluate(det_net, seg_nets, scenes, "scenes")
    results.update(png_path=png_path, net_path=net_path, seconds=timer(),
                   cpu_seconds=time.process_time() - cpu0, num_images=len(scenes))
    print(f"done in {results['seconds']:.1f} s ({results['cpu_seconds']:.1f} s CPU)")
    return results


if __name__ == "__main__":
    main()
