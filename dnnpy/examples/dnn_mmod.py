"""dlib's dnn_mmod_ex: train a CNN object detector with the max-margin object detection loss.

    python -m dnnpy.examples.dnn_mmod [--steps 150] [--faces DIR] [--out dnnpy_example_output]

MMOD (King, "Max-Margin Object Detection", 2015) trains a sliding-window detector end to end:
the net outputs one score map per detector window, and the loss (``loss_mmod``) penalises the
false alarms and missed objects of the detections after non-max suppression. dlib's example
trains a face detector on the 4 + 5 photos of ``examples/faces``; its net is::

    template <long N, typename SUBNET> using con5d = con<N,5,5,2,2,SUBNET>;
    template <typename SUBNET> using downsampler = relu<bn_con<con5d<32, relu<bn_con<con5d<32,
                                                   relu<bn_con<con5d<32,SUBNET>>>>>>>>>;
    template <typename SUBNET> using rcon3 = relu<bn_con<con<32,3,3,1,1,SUBNET>>>;
    using net_type = loss_mmod<con<1,6,6,1,1,rcon3<rcon3<rcon3<downsampler<
                     input_rgb_image_pyramid<pyramid_down<6>>>>>>>>;

with ``mmod_options(boxes, 40, 40)``, sgd at 0.1, ``random_cropper`` 200x200 chips with
``min_object_size(40, 40)``, 150 crops per step through ``disturb_colors``, until the
learning rate falls below 1e-4 (300 steps without progress per shrink), and prints
``test_object_detection_function``'s precision, recall and average precision on the training
and the testing images.

This example does the same on generated scenes of smileys (``dnnpy.data.make_scenes``, with
1-3 look-alike distractors each: rings, crosses, ellipses, striped patches), written as imglab
XML + PNG files (16 training and 8 testing scenes of 160x120) and read back with
``load_image_dataset``, as dlib reads its faces. The scenes' backgrounds are half as colourful
as ``make_scene``'s default (``clutter=0.5``; pixel noise 12), which the small net learns
within the time budget. Scaled to those scenes and to about half a minute of CPU: smileys are
24..48 pixels, so the detector window is 24x24
(``mmod_options(boxes, 24, 24)``), the crops are 80x80 with ``min_object_size(22, 22)``, 16 per
step; the net keeps dlib's shape (the three-layer stride-2 ``downsampler``, bn_con, relu, 3x3
``rcon3`` layers, the image pyramid) with 8/16 filters, two ``rcon3`` instead of three, and a
5x5 detection layer (the 24-pixel window is 3 output cells wide after the 8x downsampling);
sgd at 0.2 (dlib: 0.1; it learns faster here); training stops after ``--steps`` (150)
steps or when the learning rate falls below 1e-4. Then the net is cleaned and saved in dlib's
format, tested on the training, testing and pyramid_up-upsampled testing images (dlib shows the
latter in a window; ``test_object_detection_function`` runs one image at a time, so bn_con uses
its running statistics, as dlib's does), and the testing scenes are written to a PNG with
detections (red) and truth (green). ``--faces DIR`` runs on dlib's ``examples/faces``
(training.xml, testing.xml) with dlib's sizes instead (slow: dlib's settings train for hours).
"""

from __future__ import annotations

import warnings

import numpy as np

import dnnpy
from dnnpy import (bn_con, con, input_rgb_image_pyramid, loss_mmod, loss_mmod_, mmod_options,
                   pyramid_down, relu)
from dnnpy.data import dlib_rand, load_image_dataset, make_scenes, test_object_detection_function
from dnnpy.data import write_scene_dataset
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.image import (disturb_colors, draw_rectangle, random_cropper, save_png, tile_images,
                         upsample_image_dataset)
from dnnpy.layers.base import seeded_initialisation

NET_FILE = "mmod_network.dat"


def con5d(N, SUBNET): return con[N, 5, 5, 2, 2, SUBNET]                                  # noqa: E704
def rcon3(SUBNET): return relu[bn_con[con[16, 3, 3, 1, 1, SUBNET]]]                     # noqa: E704


def downsampler(SUBNET):
    return relu[bn_con[con5d(16, relu[bn_con[con5d(16, relu[bn_con[con5d(8, SUBNET)]])]])]]


net_type = loss_mmod[con[1, 5, 5, 1, 1, rcon3(rcon3(downsampler(
               input_rgb_image_pyramid[pyramid_down(6)])))]]


def scene_settings(quick=False):
    """The ``make_scenes`` keywords of this example's data (also used by dnn_mmod_face_detection)."""
    # clutter 0.5: backgrounds half as colourful as make_scene's default; with 16 training
    # scenes this is learnt in 150 steps (at clutter 1.0 and 8 scenes, testing AP stayed < 0.5)
    return dict(rows=120, cols=160, kinds=("smiley",), num_objects=(2, 4), size=(24, 48),
                distractors=(1, 3), clutter=0.5)


def write_scenes(folder, num_train, num_test, seed):
    """Writes ``num_train`` + ``num_test`` smiley scenes to ``folder`` as dlib's faces folder
    is laid out (training.xml, testing.xml and their PNGs); returns the two XML paths."""
    scenes = make_scenes(num_train + num_test, seed=seed, **scene_settings())
    return (write_scene_dataset(folder, scenes[:num_train], "training.xml"),
            write_scene_dataset(folder, scenes[num_train:], "testing.xml"))


def draw_detections(images, truth, dets):
    """Copies of ``images`` with the truth boxes (green; ignored ones yellow) and the
    detections (red), tiled into one picture."""
    drawn = []
    for img, tr, ds in zip(images, truth, dets):
        img = np.array(img, copy=True)
        for b in tr:
            draw_rectangle(img, b.rect, (255, 255, 0) if b.ignore else (0, 255, 0))
        for d in ds:
            draw_rectangle(img, d.rect, (255, 0, 0), thickness=2)
        drawn.append(img)
    return tile_images(drawn)


def print_results(name, row):
    p, r, ap = (float(v) for v in np.asarray(row).ravel())
    print(f"{name:<18}{p:.6g} {r:.6g} {ap:.6g}")
    return p, r, ap


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--steps", type=int, default=150, help="maximum training steps")
    parser.add_argument("--batch", type=int, default=16, help="crops per step (dlib's: 150)")
    parser.add_argument("--train", type=int, default=16, help="generated training scenes")
    parser.add_argument("--test", type=int, default=8, help="generated testing scenes")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes and the crops")
    parser.add_argument("--faces", metavar="DIR", default=None,
                        help="train on DIR/training.xml and test on DIR/testing.xml (dlib's "
                             "examples/faces) with dlib's sizes instead of generated scenes")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.batch, args.train, args.test = 4, 8, 2, 1
    out = out_dir(args.out)
    timer = Timer()

    if args.faces:
        train_xml, test_xml = f"{args.faces}/training.xml", f"{args.faces}/testing.xml"
        window, chip, min_size = 40, 200, (40, 40)          # dlib's settings
    else:
        train_xml, test_xml = write_scenes(out / "mmod_scenes", args.train, args.test, args.seed)
        print(f"wrote {args.train} training and {args.test} testing scenes to {train_xml.parent}")
        window, chip, min_size = 24, 80, (22, 22)
    images_train, boxes_train = load_image_dataset(train_xml)
    images_test, boxes_test = load_image_dataset(test_xml)
    print(f"num training images: {len(images_train)}")
    print(f"num testing images:  {len(images_test)}")

    options = mmod_options(boxes_train, window, window)
    print(f"num detector windows: {len(options.detector_windows)}")
    for w in options.detector_windows:
        print(f"detector window width by height: {w.width} x {w.height}")
    print(f"overlap NMS IOU thresh:             {options.overlaps_nms.get_iou_thresh():g}")
    print(f"overlap NMS percent covered thresh: {options.overlaps_nms.get_percent_covered_thresh():g}")

    net = net_type(loss_mmod_(options))
    net.subnet().layer_details().set_num_filters(len(options.detector_windows))
    trainer = dnnpy.dnn_trainer(net, dnnpy.sgd(0.0005, 0.9))
    trainer.set_learning_rate(0.2)      # dlib: 0.1; measured faster here
    if not args.quiet:
        trainer.be_verbose()
    # dlib: 300 steps without progress per shrink of a run of thousands of steps; scaled
    trainer.set_iterations_without_progress_threshold(100)

    cropper = random_cropper(seed=args.seed)
    cropper.set_chip_dims(chip, chip)
    cropper.set_min_object_size(*min_size)
    rnd = dlib_rand()
    train_timer = Timer()
    steps = 0
    # the parameters are drawn at the first forward pass from dnnpy's initialisation stream:
    # seed it, so that every run trains the same net. Early in training the untrained net
    # meets truth boxes it cannot yet hit; loss_mmod warns about those: not news here.
    with seeded_initialisation(args.seed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while trainer.get_learning_rate() >= 1e-4 and steps < args.steps:
            crops, crop_boxes = cropper(args.batch, images_train, boxes_train)
            for img in crops:
                disturb_colors(img, rnd)
            trainer.train_one_step(crops, crop_boxes)
            steps += 1
    net = trainer.get_net()
    train_seconds = train_timer()
    print(f"done training: {steps} steps in {train_seconds:.1f} s, average loss "
          f"{trainer.get_average_loss():.4g}")

    net.clean()
    net_path = out / NET_FILE
    dnnpy.serialize(net, net_path, format="dlib")
    print(f"saved the net to {net_path} in dlib's format")

    train_res = print_results("training results: ",
                              test_object_detection_function(net, images_train, boxes_train))
    test_res = print_results("testing results:  ",
                             test_object_detection_function(net, images_test, boxes_test))
    # dlib's example looks at the testing images after pyramid_up: the detector finds the
    # objects at twice the size too (the input pyramid brings them back down)
    up_images, up_boxes = list(images_test), [list(b) for b in boxes_test]
    upsample_image_dataset(up_images, up_boxes)
    up_res = print_results("upsampled testing: ",
                           test_object_detection_function(net, up_images, up_boxes))
    print(trainer)
    print(cropper)

    dets = [net([img])[0] for img in images_test]
    png_path = save_png(draw_detections(images_test, boxes_test, dets), out / "mmod_detections.png")
    print(f"wrote the testing images with detections (red) and truth (green) to {png_path}")
    print(f"done in {timer():.1f} s")
    return {"train_seconds": train_seconds, "steps": steps, "net_path": net_path,
            "png_path": png_path, "train_xml": train_xml, "test_xml": test_xml,
            "training": train_res, "testing": test_res, "upsampled_testing": up_res,
            "testing_ap": test_res[2]}


if __name__ == "__main__":
    main()
