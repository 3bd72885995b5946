"""dlib's dnn_mmod_train_find_cars_ex: an MMOD vehicle detector with 3 aspect-ratio windows,
ignore boxes, random crops, colour jitter and test-loss early stopping.

    python -m dnnpy.examples.dnn_mmod_train_find_cars [--xml-dir DIR] [--out dnnpy_example_output]

dlib's example trains the rear-end vehicle detector (``mmod_rear_end_vehicle_detector.dat``)
on its downloaded vehicle dataset (2217 + 135 photos, ``training.xml`` / ``testing.xml``):

- the boxes of one vehicle labelled twice are found with the example's own
  ``ignore_overlapped_boxes`` (``test_box_overlap(0.50, 0.95)``: the smaller one is ignored),
  and boxes smaller than 35x35 are ignored too (the net cannot see them);
- ``mmod_options(boxes, 70, 30)`` clusters the boxes' aspect ratios into detector windows
  (3 for the vehicles: wide, square and tall); the last con layer gets one filter per window;
- training runs on ``random_cropper`` crops (350x350, ``min_object_size(69, 28)``, rotation
  up to 2 degrees) with ``disturb_colors``, sgd(0.0001, 0.9) at learning rate 0.1, and every
  30th step a ``test_one_step`` on crops of the test set: the learning rate shrinks when the
  test loss stops improving, and training stops when it falls below 1e-4;
- the net is saved (dlib's format) and ``test_object_detection_function`` (precision, recall,
  average precision, with ``overlaps_ignore``) is printed for both sets, as they are and after
  ``upsample_image_dataset<pyramid_down<2>>`` (small vehicles become visible to the net).

dnnpy runs the same steps, with no download, on generated generated road scenes
(``dnnpy.data.make_scenes``): rear views of cars (wide boxes), trucks (tall) and vans (square),
all labelled ``rear`` as dlib's dataset labels every vehicle; far vehicles below a size are
marked ignore by the generator, a few scenes have a big ignore region (clutter under one
ignore box), and one box per set is labelled twice (a labelling slip, so that
``ignore_overlapped_boxes`` has something to do). The scenes are written as PNG + imglab XML
and read back with ``load_image_dataset``, as dlib's example reads its dataset.

What is changed (to train in well under a minute on 2 cores instead of a day on a GPU),
and why: plain scenes (``clutter=0``, noise 6, vehicles 24..44 px, ignore boxes below 26),
16 training + 8 testing scenes, target window 32 px (min 16) instead of 70 (min 30), chips
80x80 instead of 350x350, batches of 16 crops instead of 87, the widths (``--filters``: 8, 16,
16 and 16 instead of 16, 32, 32 and 55) with dlib's /8 downsampler, two 3x3 rcon layers
instead of three rcon5 and a 5x5 detection con instead of 9x9 (the 32-px window is 4 output
cells wide; 3x3 rcon learnt faster in dnn_mmod), and a step cap (``--steps`` 200). Three more
changes let it learn in 200 steps:

- adam(0.0001, 0.9, 0.999) at 0.002 instead of sgd at 0.1: loss_mmod scales each position's
  gradient by 1 / (output size), which counts the 3 windows, and with 3 windows the net must
  also learn which window wins at each vehicle (the wrong one is a false alarm that
  suppresses the right one); sgd learns far too slowly for a 200-step run;
- ``loss_per_missed_target`` 2 (dlib: 1): with 1 the net trades recall for precision;
- the bn_con layers average their running statistics over 10 steps (dlib: 100, via
  ``set_all_bn_running_stats_window_sizes``, ``--bn-window``): in a run of 200 steps a
  100-step window still holds the statistics of the untrained net's first steps, and the
  detections of one image at a time (running statistics) fall far below those of a batch.

dlib shrinks the rate after 50000 training steps or 1000 test steps (30000 iterations) without
progress, in a run of many thousands of steps; here the thresholds are 100 training steps and
10 test steps (300 iterations, longer than the run), so that the schedule does not cut the
rate before the net has learnt.
``--solver sgd``, ``--lr``, ``--wd``, ``--miss-loss``, ``--bn-window``, ``--num-rcon``,
``--rcon-size`` and ``--det-size`` are tuning options. ``--xml-dir DIR`` trains on dlib's
dataset folder instead (with these scaled settings: use a GPU and dlib's own numbers for a
real run).
"""

from __future__ import annotations


import dnnpy
from dnnpy import con, input_rgb_image_pyramid, loss_mmod, relu, test_box_overlap
from dnnpy.data import (load_image_dataset, make_scenes, test_object_detection_function,
                        write_scene_dataset, dlib_rand)
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.geometry import mmod_rect
from dnnpy.image import disturb_colors, random_cropper, upsample_image_dataset
from dnnpy.inputs import pyramid_down
from dnnpy.layers import bn_con
from dnnpy.layers.base import seeded_initialisation
from dnnpy.loss import mmod_options
from dnnpy.visitors.fuse import set_all_bn_running_stats_window_sizes

MODEL_NAME = "mmod_rear_end_vehicle_detector.dat"
VEHICLE_KINDS = ("car", "truck", "van")


# dlib's templates, with the widths as arguments (dlib: 16, 32, 32 and 55)
def con5d(n, SUBNET): return con[n, 5, 5, 2, 2, SUBNET]                                        # noqa: E704
def con5(n, SUBNET): return con[n, 5, 5, 1, 1, SUBNET]                                         # noqa: E704


def make_net_type(filters=(8, 16, 16, 16), num_rcon=2, norm=bn_con, rcon_size=3, det_size=5):
    """dlib's ``net_type``, scaled: ``loss_mmod<con<1,9,9,1,1, rcon5<rcon5<rcon5<downsampler<
    input_rgb_image_pyramid<pyramid_down<6>>>>>>>>``, with the widths of the three stride-2
    convs of the downsampler and of the rcon layers as ``filters`` (dlib: 16, 32, 32 and 55),
    ``num_rcon`` rcon layers (dlib: 3) of ``rcon_size`` x ``rcon_size`` convs (dlib: 5) and a
    ``det_size`` x ``det_size`` detection con (dlib: 9, for its 70-pixel window). ``norm`` is
    ``bn_con`` for training and ``affine`` for running (dlib's dnn_mmod_find_cars_ex: an
    affine layer reads a trained bn_con)."""
    f1, f2, f3, f4 = filters
    x = input_rgb_image_pyramid[pyramid_down(6)]
    x = relu[norm[con5d(f1, x)]]
    x = relu[norm[con5d(f2, x)]]
    x = relu[norm[con5d(f3, x)]]
    for _ in range(num_rcon):
        x = relu[norm[con[f4, rcon_size, rcon_size, 1, 1, x]]]
    return loss_mmod[con[1, det_size, det_size, 1, 1, x]]


def ignore_overlapped_boxes(boxes, overlaps) -> int:
    """dlib's example-local helper: whenever two non-ignored boxes overlap (``overlaps``), the
    smaller one is set to ignore. Returns the number of newly ignored boxes."""
    num_ignored = 0
    for i, a in enumerate(boxes):
        if a.ignore:
            continue
        for b in boxes[i + 1:]:
            if b.ignore:
                continue
            if overlaps(a.rect, b.rect):
                num_ignored += 1
                # as dlib: once a is ignored the inner loop still goes on comparing it
                if a.rect.area() < b.rect.area():
                    a.ignore = True
                else:
                    b.ignore = True
    return num_ignored


def make_dataset(folder, num_train, num_test, seed, rows=120, cols=160, size=(24, 44),
                 ignore_below=26, noise=6, clutter=0.0, num_objects=(2, 4)):
    """Write generated road scenes as ``training.xml`` / ``testing.xml`` + PNGs in ``folder``; returns
    the two XML paths. Every vehicle is labelled ``rear``; the first scene of each set gets one
    box labelled twice (a copy 1 px larger)."""
    common = dict(rows=rows, cols=cols, kinds=VEHICLE_KINDS, num_objects=num_objects, size=size,
                  ignore_below=ignore_below, noise=noise, clutter=clutter)
    paths = []
    for name, n, s in (("training.xml", num_train, seed), ("testing.xml", num_test, seed + 1)):
        n_regions = max(1, n // 6)
        scenes = (make_scenes(n - n_regions, seed=s, **common)
                  + make_scenes(n_regions, seed=s + 100, ignore_regions=1, **common))
        for sc in scenes:
            for b in sc.boxes:
                b.label = "rear"
        first = next((b for b in scenes[0].boxes if not b.ignore), None)
        if first is not None:
            r = first.rect
            scenes[0].boxes.append(mmod_rect(type(r)(r.l, r.t, r.r + 1, r.b + 1), label="rear"))
        paths.append(write_scene_dataset(folder, scenes, xml_name=name))
    return paths


def print_results(what, net, images, boxes, overlaps_ignore):
    res = test_object_detection_function(net, images, boxes, test_box_overlap(), 0, overlaps_ignore)
    p, r, ap = (float(v) for v in res[0])
    print(f"{what} results: {p:g} {r:g} {ap:g} ")
    return p, r, ap


def train(args, out, verbose=True, model_name=MODEL_NAME) -> dict:
    """The whole of dlib's example; returns the metrics and paths. The net is saved as
    ``out / model_name`` (dnn_mmod_find_cars2 saves its front + rear detector under dlib's
    name for that one)."""
    timer = Timer()
    if args.xml_dir:
        train_xml, test_xml = f"{args.xml_dir}/training.xml", f"{args.xml_dir}/testing.xml"
    else:
        train_xml, test_xml = make_dataset(out / "cars_dataset", args.num_train, args.num_test,
                                           args.seed, size=tuple(args.size),
                                           ignore_below=args.ignore_below, noise=args.noise,
                                           clutter=args.clutter)
        print(f"wrote {args.num_train} training and {args.num_test} testing generated road scenes to "
              f"{out / 'cars_dataset'}")
    images_train, boxes_train = load_image_dataset(train_xml)
    images_test, boxes_test = load_image_dataset(test_xml)

    overlaps = test_box_overlap(0.50, 0.95)
    num_overlapped_ignored_test = sum(ignore_overlapped_boxes(v, overlaps) for v in boxes_test)
    num_overlapped_ignored = num_additional_ignored = 0
    small = args.target // 2            # dlib: 35 for its 70 px window
    for v in boxes_train:
        num_overlapped_ignored += ignore_overlapped_boxes(v, overlaps)
        for bb in v:
            if bb.rect.width() < small and bb.rect.height() < small and not bb.ignore:
                bb.ignore = True
                num_additional_ignored += 1
    print(f"num_overlapped_ignored: {num_overlapped_ignored}")
    print(f"num_additional_ignored: {num_additional_ignored}")
    print(f"num_overlapped_ignored_test: {num_overlapped_ignored_test}")
    print(f"num training images: {len(images_train)}")
    print(f"num testing images: {len(images_test)}")

    options = mmod_options(boxes_train, args.target, args.min_target)
    options.overlaps_ignore = test_box_overlap(0.5, 0.95)
    options.loss_per_missed_target = args.miss_loss
    print(f"detector windows: {[(w.width, w.height) for w in options.detector_windows]}")
    net_type = make_net_type(tuple(args.filters), args.num_rcon, rcon_size=args.rcon_size,
                             det_size=args.det_size)
    net = net_type(dnnpy.loss.loss_mmod_(options))
    net.subnet().layer_details().set_num_filters(len(options.detector_windows))
    # dlib's bn_con averages its running statistics over the last 100 steps, fine in a run of
    # thousands; in a run of 150 they would still hold the first steps' statistics
    set_all_bn_running_stats_window_sizes(net, args.bn_window)

    solver = (dnnpy.adam(0.0001, 0.9, 0.999) if args.solver == "adam" else dnnpy.sgd(args.wd, 0.9))
    trainer = dnnpy.dnn_trainer(net, solver)
    trainer.set_learning_rate(args.lr)
    if verbose:
        trainer.be_verbose()
    trainer.set_iterations_without_progress_threshold(args.train_patience)
    trainer.set_test_iterations_without_progress_threshold(args.test_patience)

    cropper = random_cropper(seed=args.seed)
    cropper.set_chip_dims(args.chip, args.chip)
    cropper.set_min_object_size(args.target - 1, args.min_target - 1)   # dlib: 69, 28 for 70, 30
    cropper.set_max_rotation_degrees(2)
    rnd = dlib_rand()
    print(trainer)
    print(cropper)

    train_timer = Timer()
    cnt = 1
    steps = 0
    with seeded_initialisation(args.seed):
        while trainer.get_learning_rate() >= 1e-4 and steps < args.steps:
            test = cnt % args.test_every == 0 and len(images_test) > 0
            imgs, labels = cropper(args.batch, images_test if test else images_train,
                                   boxes_test if test else boxes_train)
            for img in imgs:
                disturb_colors(img, rnd)
            if test:
                trainer.test_one_step(imgs, labels)
            else:
                trainer.train_one_step(imgs, labels)
                steps += 1
            cnt += 1
    trainer.get_net()
    train_seconds = train_timer()
    print(f"done training ({steps} steps, {cnt - 1 - steps} test steps, learning rate "
          f"{trainer.get_learning_rate():g}, {train_seconds:.1f} s)")
    net.clean()
    net_path = out / model_name
    dnnpy.serialize(net, net_path, format="dlib")
    print(f"saved the net to {net_path} in dlib's format")
    print(trainer)
    print(cropper)

    results = {"net_path": net_path, "train_seconds": train_seconds, "train_steps": steps,
               "num_overlapped_ignored": num_overlapped_ignored,
               "num_additional_ignored": num_additional_ignored,
               "num_overlapped_ignored_test": num_overlapped_ignored_test,
               "num_windows": len(options.detector_windows)}
    print(f"num training images: {len(images_train)}")
    results["training"] = print_results("training", net, images_train, boxes_train, options.overlaps_ignore)
    if not args.no_upsample:
        upsample_image_dataset(images_train, boxes_train, pyramid_down(2), 1800 * 1800)
        results["training_upsampled"] = print_results("training upsampled", net, images_train,
                                                      boxes_train, options.overlaps_ignore)
    print(f"num testing images: {len(images_test)}")
    results["testing"] = print_results("testing", net, images_test, boxes_test, options.overlaps_ignore)
    if not args.no_upsample:
        upsample_image_dataset(images_test, boxes_test, pyramid_down(2), 1800 * 1800)
        results["testing_upsampled"] = print_results("testing upsampled", net, images_test,
                                                     boxes_test, options.overlaps_ignore)
    results["test_ap"] = results["testing"][2]
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


def add_training_arguments(parser):
    """The training options (shared with dnn_mmod_find_cars, which trains when the net is
    missing)."""
    parser.add_argument("--xml-dir", metavar="DIR", default=None,
                        help="train on DIR/training.xml and DIR/testing.xml (dlib's vehicle dataset "
                             "layout) instead of generated generated road scenes")
    parser.add_argument("--num-train", type=int, default=16, help="generated training scenes")
    parser.add_argument("--num-test", type=int, default=8, help="generated testing scenes")
    parser.add_argument("--size", type=int, nargs=2, default=[24, 44],
                        help="range of the vehicles' sizes (square root of the box area, pixels)")
    parser.add_argument("--ignore-below", type=int, default=26,
                        help="vehicles smaller than this get an ignore box")
    parser.add_argument("--noise", type=float, default=6, help="pixel noise of the scenes")
    parser.add_argument("--clutter", type=float, default=0.0,
                        help="background colourfulness of the scenes (0 = plain grey)")
    parser.add_argument("--solver", choices=("sgd", "adam"), default="adam",
                        help="adam(0.0001, 0.9, 0.999), or sgd(WD, 0.9) as dlib (dlib: sgd)")
    parser.add_argument("--wd", type=float, default=0.0005, help="weight decay of --solver sgd (dlib: 0.0001)")
    parser.add_argument("--lr", type=float, default=0.002, help="initial learning rate (dlib: 0.1 with sgd)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes, crops and weights")
    parser.add_argument("--steps", type=int, default=200,
                        help="most training steps (dlib: until the learning rate falls below 1e-4)")
    parser.add_argument("--batch", type=int, default=16, help="crops per step (dlib: 87)")
    parser.add_argument("--chip", type=int, default=80, help="crop size (dlib: 350)")
    parser.add_argument("--target", type=int, default=32,
                        help="mmod_options target window size (dlib: 70)")
    parser.add_argument("--min-target", type=int, default=16,
                        help="mmod_options min target size (dlib: 30)")
    parser.add_argument("--filters", type=int, nargs=4, default=[8, 16, 16, 16],
                        help="widths of the three downsampler convs and of the rcon layers "
                             "(dlib: 16, 32, 32 and 55)")
    parser.add_argument("--num-rcon", type=int, default=2, help="rcon layers (dlib: 3)")
    parser.add_argument("--rcon-size", type=int, default=3, help="kernel size of the rcon layers (dlib: 5)")
    parser.add_argument("--det-size", type=int, default=5, help="kernel size of the detection con (dlib: 9)")
    parser.add_argument("--bn-window", type=int, default=10,
                        help="running_stats_window_size of the bn_con layers (dlib: 100)")
    parser.add_argument("--test-every", type=int, default=30,
                        help="a test_one_step every this many loop iterations (dlib: 30)")
    parser.add_argument("--miss-loss", type=float, default=2.0,
                        help="mmod_options loss_per_missed_target (dlib: 1)")
    parser.add_argument("--train-patience", type=int, default=100,
                        help="iterations_without_progress_threshold (dlib: 50000)")
    parser.add_argument("--test-patience", type=int, default=10,
                        help="test_iterations_without_progress_threshold (dlib: 1000)")
    parser.add_argument("--no-upsample", action="store_true",
                        help="skip the upsampled evaluations")


def quick_settings(args):
    args.num_train, args.num_test = min(args.num_train, 3), min(args.num_test, 2)
    args.steps, args.batch, args.chip = 3, 4, 64
    args.filters, args.num_rcon = [4, 4, 4, 4], 1
    args.no_upsample = True


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    add_training_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        quick_settings(args)
    return train(args, out_dir(args.out), verbose=not args.quiet)


if __name__ == "__main__":
    main()
