"""Train the seed network, a convolutional autoencoder, save it, reload it, and draw what it does.

    python -m dnnpy.examples.autoencoder [--epochs 30] [--out dnnpy_example_output]

The net (dlib: ``loss_mean_squared_per_channel_and_pixel<3, relu<cont<3,4,4,2,2,
relu<con<16,4,4,2,2, input_rgb_image>>>>>``) squeezes a 64x64x3 image into 16 channels of
32x32 and rebuilds the image from them. It learns on images the package generates (smooth
coloured blobs on gradients, :func:`dnnpy.data.datasets.synthetic_images`), so nothing is
downloaded. The example

1. prints the mean squared reconstruction error on held-out images, before and after training
   with ``dnn_trainer`` and ``adam`` (``train(..., shuffle=True)``: a new sample order each epoch);
2. saves the trained net (``dnnpy.serialize``), loads it back with no code (``dnnpy.load``) and
   checks that the reloaded net's outputs are bit-identical;
3. writes ``autoencoder_reconstructions.png``: held-out inputs (top row) above their
   reconstructions (bottom row).
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import con, cont, input_rgb_image, loss_mean_squared_per_channel_and_pixel, relu
from dnnpy.data.datasets import synthetic_images
from dnnpy.examples._util import Timer, base_parser, make_trainer, out_dir
from dnnpy.image import tile_image_grid
from dnnpy.image.png import write_png

# dlib: loss_mean_squared_per_channel_and_pixel<3, relu<cont<3,4,4,2,2, relu<con<16,4,4,2,2, input_rgb_image>>>>>
net_type = loss_mean_squared_per_channel_and_pixel[3,
               relu[cont[3, 4, 4, 2, 2,
               relu[con[16, 4, 4, 2, 2,
               input_rgb_image]]]]]


def targets_for(images):
    """What the net should output for each image: the image itself, planar (3 x H x W) and
    scaled to [0, 1]. (The top relu makes outputs >= 0, so [0, 1] is reachable, unlike
    input_rgb_image's mean-subtracted scale.)"""
    return [img.transpose(2, 0, 1).astype(np.float32) / 255.0 for img in images]


def reconstruct(net, images) -> np.ndarray:
    """The net's output for ``images``: float32 ``(n, 3, H, W)``, in the targets' [0, 1] scale."""
    return np.array(net.subnet()(images), copy=True)


def reconstruction_error(net, images) -> float:
    """Mean squared error per channel and pixel against the targets (what the loss computes)."""
    return float(np.mean((reconstruct(net, images) - np.stack(targets_for(images))) ** 2))


def to_uint8_images(planar) -> list:
    return [np.clip(np.rint(p.transpose(1, 2, 0) * 255.0), 0, 255).astype(np.uint8) for p in planar]


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--epochs", type=int, default=30, help="training epochs")
    parser.add_argument("--train-images", type=int, default=256, help="generated training images")
    parser.add_argument("--test-images", type=int, default=32, help="generated held-out images")
    parser.add_argument("--batch", type=int, default=16, help="mini-batch size")
    parser.add_argument("--learning-rate", type=float, default=0.003, help="adam's learning rate")
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs, args.train_images, args.test_images = 3, 32, 8
    out = out_dir(args.out)
    timer = Timer()

    print(f"net type: {net_type!r}")
    train = synthetic_images(args.train_images, seed=1)
    test = synthetic_images(args.test_images, seed=2)
    print(f"data: {len(train)} generated training images and {len(test)} held-out images, "
          f"each {train.shape[1]}x{train.shape[2]}x3 uint8")

    net = net_type()
    before = reconstruction_error(net, test)
    print(net)
    print(f"reconstruction error (mean squared, held-out images) before training: {before:.6f}")

    trainer = make_trainer(net, dnnpy.adam(), args.learning_rate, args.batch, args.epochs,
                           verbose=not args.quiet)
    print(trainer)
    train_timer = Timer()
    trainer.train(list(train), targets_for(train), shuffle=True)   # a new order every epoch
    train_seconds = train_timer()
    net = trainer.get_net()
    after = reconstruction_error(net, test)
    print(f"reconstruction error (mean squared, held-out images) after training:  {after:.6f} "
          f"({before / max(after, 1e-30):.0f}x lower; {args.epochs} epochs in {train_seconds:.1f} s)")

    # save, reload with no code, and prove the reloaded net computes exactly the same thing
    net.clean()
    net_path = out / "autoencoder_net.dnnpy"
    dnnpy.serialize(net, net_path)
    loaded = dnnpy.load(net_path)
    outputs, reloaded_outputs = reconstruct(net, test), reconstruct(loaded, test)
    identical = (loaded.net_type is net.net_type
                 and np.array_equal(outputs.view(np.uint32), reloaded_outputs.view(np.uint32)))
    print(f"saved the net to {net_path} ({net_path.stat().st_size} bytes); reloaded with "
          f"dnnpy.load: type {loaded.net_type!r}; outputs bit-identical: {identical}")
    if not identical:
        raise SystemExit("autoencoder: the reloaded net's outputs differ from the saved net's")

    shown = min(8, len(test))
    grid = tile_image_grid([list(test[:shown]), to_uint8_images(outputs[:shown])])
    png_path = out / "autoencoder_reconstructions.png"
    write_png(png_path, grid)
    print(f"wrote {png_path}: {shown} held-out inputs (top) above their reconstructions (bottom)")
    print(f"done in {timer():.1f} s")
    return {"error_before": before, "error_after": after, "net_path": net_path,
            "png_path": png_path, "train_seconds": train_seconds, "identical": identical}


if __name__ == "__main__":
    main()
