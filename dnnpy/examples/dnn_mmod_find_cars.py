"""dlib's dnn_mmod_find_cars_ex: run the vehicle detector and look inside it (tiled pyramid,
score maps, scores collapsed back onto the image).

    python -m dnnpy.examples.dnn_mmod_find_cars [--net FILE | --model mmod_rear_end_vehicle_detector.dat]

dlib's example loads ``mmod_rear_end_vehicle_detector.dat`` (the net trained by
dnn_mmod_train_find_cars_ex, with ``affine`` layers in place of ``bn_con``, followed by a
``shape_predictor`` that refines each box), runs it on ``mmod_cars_test_image.jpg`` and shows
six windows: the detections; the tiled image pyramid the input layer builds; the net's output
(the maximum over the detector windows' score maps, resized by ``image width / output
width``); those scores painted over the pyramid (jet colours, lower -2.5, upper 0, alpha 120);
and the scores collapsed back onto the image (per pixel the best score over the scales 1,
5/6, (5/6)^2, ... > 0.2), alone and painted over the image.

dnnpy does the same on a fresh generated road scene (``dnnpy.data.make_scene``; no download): it
loads the net saved by ``dnn_mmod_train_find_cars`` (and trains it first, saying so, when the
file is missing), prints the detections and the detector's precision, recall and average
precision against the scene's truth, and writes the windows as PNGs (``cars_*.png``; plus the
score map of each detector window side by side). ``--model FILE`` reads dlib's released
detector instead: its net and the ``shape_predictor`` after it (``dnnpy.shape_predictor``), which
refines each box to the box around its landmarks, drawn in green as dlib's example does; dlib's
detector looks for photographed cars, not for generated drawings, so its metric on a generated
scene means little.

The collapsed maps are computed for all pixels at once (the input layer's pyramid geometry and
``input_tensor_to_output_tensor`` take arrays of points), not per pixel as in dlib.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy.data import make_scene, test_object_detection_function
from dnnpy.examples import dnn_mmod_train_find_cars as train_ex
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.image import (colormap_jet, create_tiled_pyramid, draw_rectangle, image_to_tiled_pyramid, jet,
                         join_rows, pyramid_down, resize_image, save_png)
from dnnpy.inputs import input_rgb_image_pyramid
from dnnpy.layers import affine, con, relu
from dnnpy.loss import loss_mmod
from dnnpy.rand import dlib_rand
from dnnpy.serialization import Reader, read_net
from dnnpy.tensor import image_plane, resizable_tensor
from dnnpy.visitors.maps import input_tensor_to_output_tensor

LOWER, UPPER = -2.5, 0.0       # dlib's jet range for the scores


def dlib_net_type():
    """The type of dlib's released ``mmod_rear_end_vehicle_detector.dat`` (affine layers)."""
    def con5d(n, s): return con[n, 5, 5, 2, 2, s]                                                # noqa: E704
    def con5(n, s): return con[n, 5, 5, 1, 1, s]                                                 # noqa: E704
    x = input_rgb_image_pyramid[pyramid_down(6)]
    x = relu[affine[con5d(32, relu[affine[con5d(32, relu[affine[con5d(16, x)]])]])]]
    for _ in range(3):
        x = relu[affine[con5(55, x)]]
    return loss_mmod[con[1, 9, 9, 1, 1, x]]


def read_mmod_net(path, net_type):
    """dlib's ``deserialize(path) >> net``: ``(net, number of bytes left after it)``. As in
    dlib, the last con takes its filter count (one per detector window) from the file, and
    the bytes after the net (dlib's shape_predictor) are left unread."""
    net, _, r = read_mmod_file(path, net_type, with_shape_predictor=False)
    return net, r.remaining()


def read_mmod_file(path, net_type, with_shape_predictor=True):
    """dlib's ``deserialize(path) >> net >> sp``: ``(net, shape_predictor or None, reader)``,
    the reader left after what was read (dlib's dog hipsterizer file goes on with two
    images). The shape predictor is read when bytes follow the net."""
    with open(path, "rb") as f:
        data = f.read()
    net = net_type()
    r = Reader(data, str(path))
    read_net(r, net)
    sp = None
    if with_shape_predictor and not r.at_end():
        sp = dnnpy.shape_predictor()
        sp.deserialize(r)
    return net, sp, r


def refine_boxes(sp, img, dets):
    """dlib's example: each detection's box replaced by the box around the landmarks the
    shape predictor finds in it (``rect += fd.part(j)`` from an empty rectangle)."""
    out = []
    for shape in sp.batch(img, [d.rect for d in dets]):
        xs, ys = [p.x for p in shape.parts()], [p.y for p in shape.parts()]
        out.append(dnnpy.rectangle(min(xs), min(ys), max(xs), max(ys)))
    return out


def blend(img, colors, alpha=120):
    """dlib's ``assign_pixel(rgb, rgb_alpha_pixel(color, alpha))``: ``img`` where no colour,
    else ``img + (color - img) * alpha / 255`` (dlib's integer alpha blending)."""
    img = img.astype(np.int32)
    return (img + ((colors.astype(np.int32) - img) * alpha) // 255).astype(np.uint8)


def scale_points(scale, xs, ys):
    """dlib's ``point(scale * dpoint)``: round half up each coordinate."""
    return np.floor(scale * xs + 0.5).astype(np.int64), np.floor(scale * ys + 0.5).astype(np.int64)


def lookup(network_output, px, py):
    """Values of ``network_output`` at integer points, NaN where outside."""
    nr, nc = network_output.shape
    inside = (px >= 0) & (px < nc) & (py >= 0) & (py < nr)
    vals = np.full(px.shape, np.nan, np.float32)
    vals[inside] = network_output[py[inside], px[inside]]
    return vals


def run(net, img, truth, out, quiet=False, sp=None):
    """Runs the detector on ``img`` and writes dlib's windows; returns the results dict. With
    ``sp`` (the shape predictor of dlib's file), each box is refined by its landmarks, as
    dlib's example draws them."""
    results = {}
    dets = net([img])[0]
    print(f"{len(dets)} detections:")
    for d in dets:
        print(f"  {d.rect}  confidence {d.detection_confidence:.3f}")
    shown = img.copy()
    for d in dets:
        draw_rectangle(shown, d.rect, (255, 0, 0), 2)
    if sp is not None:
        results["refined"] = refine_boxes(sp, img, dets)
        for rect in results["refined"]:
            draw_rectangle(shown, rect, (0, 255, 0), 2)
        print(f"boxes refined by the shape predictor ({sp.num_parts()} landmarks): "
              f"{[str(r) for r in results['refined']]}")
    paths = {"detections": save_png(shown, out / "cars_detections.png")}
    options = net.loss_details().options
    res = test_object_detection_function(net, [img], [truth], dnnpy.test_box_overlap(), 0,
                                         options.overlaps_ignore)
    results["precision"], results["recall"], results["ap"] = (float(v) for v in res[0])
    print(f"results against the scene's truth (precision, recall, AP): {res[0][0]:g} "
          f"{res[0][1]:g} {res[0][2]:g}")
    results["detections"] = dets

    print(f"jet color mapping range:  lower={LOWER:g}  upper={UPPER:g}")
    layer = net.input_layer()
    input_tensor = resizable_tensor()
    layer.to_tensor([img], input_tensor)          # dlib: input_layer(net).to_tensor(&img, &img+1, ...)
    # dlib: create_tiled_pyramid<pyramid_type>(img, tiled_img, rects, padding, outer_padding);
    # its levels are pyramid_down's own resampling, the layer's tensor a bilinear one (as dlib)
    tiled, rects = create_tiled_pyramid(img, layer.pyramid_type, layer.get_pyramid_padding(),
                                        layer.get_pyramid_outer_padding())
    if rects != list(input_tensor.annotation):
        raise AssertionError("create_tiled_pyramid and the input layer disagree on the layout")
    paths["tiled_pyramid"] = save_png(tiled, out / "cars_tiled_pyramid.png")

    net.subnet().forward(input_tensor)            # the output tensor for this image
    output = net.subnet().get_output()
    num_planes = output.k()
    print(f"Number of channels in final tensor image: {num_planes}")
    planes = [image_plane(output, 0, k) for k in range(num_planes)]
    maps = [jet(p, UPPER, LOWER) for p in planes]
    row = maps[0]
    for m in maps[1:]:
        row = join_rows(row, np.pad(m, ((0, 0), (2, 0), (0, 0))))
    paths["score_maps"] = save_png(row, out / "cars_score_maps.png")
    network_output = planes[0]                    # dlib: max_pointwise over the other planes
    for p in planes[1:]:
        network_output = np.maximum(network_output, p)
    scale = img.shape[1] / network_output.shape[1]
    network_output = resize_image(scale, network_output.astype(np.float32))
    paths["network_output"] = save_png(jet(network_output, UPPER, LOWER), out / "cars_network_output.png")

    # the scores over the tiled pyramid: each tiled pixel's output position, scaled
    rows, cols = tiled.shape[:2]
    ys, xs = np.mgrid[0:rows, 0:cols].astype(np.float64)
    ox, oy = input_tensor_to_output_tensor(net, (xs.ravel(), ys.ravel()))
    vals = lookup(network_output, *scale_points(scale, np.asarray(ox), np.asarray(oy))).reshape(rows, cols)
    has = ~np.isnan(vals)
    overlay = tiled.copy()
    overlay[has] = blend(tiled[has], colormap_jet(vals[has], LOWER, UPPER))
    paths["pyramid_overlay"] = save_png(overlay, out / "cars_pyramid_scores.png")

    # collapse: per image pixel, the best score over the scales 1, 5/6, ... > 0.2
    nr, nc = img.shape[:2]
    ys, xs = np.mgrid[0:nr, 0:nc].astype(np.float64)
    collapsed = np.full((nr, nc), -1e30, np.float32)
    s = 1.0
    while s > 0.2:
        tx, ty = image_to_tiled_pyramid(layer.pyramid_type, rects, s, (xs, ys))
        ox, oy = input_tensor_to_output_tensor(net, (np.asarray(tx, np.float64), np.asarray(ty, np.float64)))
        vals = lookup(network_output, *scale_points(scale, np.asarray(ox), np.asarray(oy)))
        np.fmax(collapsed, vals, out=collapsed)
        s *= 5.0 / 6.0
    paths["collapsed"] = save_png(jet(collapsed, UPPER, LOWER), out / "cars_collapsed_scores.png")
    paths["collapsed_overlay"] = save_png(blend(img, colormap_jet(collapsed, LOWER, UPPER)),
                                          out / "cars_collapsed_on_image.png")
    results["collapsed_max"] = float(collapsed.max())
    results["paths"] = paths
    for name, p in paths.items():
        print(f"wrote {p} ({name})")
    return results


def road_scene(seed, rows, cols, size=(24, 44), ignore_below=26, noise=6, clutter=0.0):
    """A fresh generated road scene (the training example's kinds and scene settings), boxes
    labelled rear."""
    sc = make_scene(dlib_rand(seed), rows=rows, cols=cols, kinds=train_ex.VEHICLE_KINDS,
                    num_objects=(3, 5), size=tuple(size), ignore_below=ignore_below, noise=noise,
                    clutter=clutter)
    for b in sc.boxes:
        b.label = "rear"
    return sc.image, sc.boxes


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--net", metavar="FILE", default=None,
                        help=f"the net saved by dnn_mmod_train_find_cars (default: OUT/{train_ex.MODEL_NAME}; "
                             f"trained first when missing)")
    parser.add_argument("--model", metavar="FILE", default=None,
                        help="dlib's released mmod_rear_end_vehicle_detector.dat (its net, and the "
                             "shape predictor that refines the boxes)")
    parser.add_argument("--scene-seed", type=int, default=1000, help="seed of the road scene")
    parser.add_argument("--rows", type=int, default=150, help="scene height")
    parser.add_argument("--cols", type=int, default=200, help="scene width")
    train_ex.add_training_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        train_ex.quick_settings(args)
        args.rows, args.cols = 90, 120
    out = out_dir(args.out)
    timer = Timer()
    results = {}
    if args.model:
        net, sp, _ = read_mmod_file(args.model, dlib_net_type())
        print(f"read the net and the shape predictor of {args.model}: {sp!r}")
    else:
        path = out / train_ex.MODEL_NAME if args.net is None else args.net
        path = Path(path)
        if not path.exists():
            print(f"no trained net at {path}: training one first (dnn_mmod_train_find_cars)")
            train_args = argparse.Namespace(**vars(args))
            results["training"] = train_ex.train(train_args, out, verbose=not args.quiet)
            path = out / train_ex.MODEL_NAME
        net_type = train_ex.make_net_type(tuple(args.filters), args.num_rcon, norm=affine,
                                          rcon_size=args.rcon_size, det_size=args.det_size)
        net, rest = read_mmod_net(path, net_type)
        if rest:
            raise ValueError(f"{path}: {rest} bytes after the net (expected a net only)")
        print(f"loaded {path} (bn_con layers read as affine, as dlib's example does)")
    img, truth = road_scene(args.scene_seed, args.rows, args.cols, args.size, args.ignore_below,
                            args.noise, args.clutter)
    save_png(img, out / "cars_scene.png")
    results.update(run(net, img, truth, out, args.quiet, sp if args.model else None))
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
