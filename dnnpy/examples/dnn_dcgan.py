"""dlib's dnn_dcgan_train_ex: a DCGAN (Radford et al., 2015) learns to draw digits.

    python -m dnnpy.examples.dnn_dcgan [--iterations 1500] [--out dnnpy_example_output]

Two nets train against each other: the *generator* turns a noise vector into an image, the
*discriminator* tells real images from generated ones. Each iteration, as in dlib's example:

1. the discriminator takes one adam step on a mini-batch of real digits (label +1) and one on
   a mini-batch of generated digits (label -1): ``to_tensor``, ``compute_loss``,
   ``back_propagate_error``, ``update_parameters`` (what ``train_one_step`` does inside);
2. the generator is trained *through* the discriminator: the generated mini-batch is scored
   with the "real" labels, the error is propagated back to the discriminator's input
   (``get_final_data_gradient()``), and that gradient is back-propagated through the generator
   (``generator.back_propagate_error(noises_tensor, d_grad)``), which then takes its step.

The noise is dlib's: ``input_array[np.float32, 100]`` (dlib's
``input<std::array<matrix<float,1,1>,100>>``) filled with ``dlib_rand.get_random_gaussian()``,
as is the choice of real digits (``get_random_32bit_number() % n``). The layers are dlib's
(``cont_`` with custom padding, ``bn_con``, ``relu``, ``sig`` in the generator; ``con_``,
``bn_con``, ``leaky_relu`` with alpha 0.2 in the discriminator; ``disable_duplicative_biases``;
adam(0, 0.5, 0.999)), **adapted to the shipped 16x16 digits** (the 8x8 UCI digits upsampled;
dlib's nets are for 28x28 MNIST): one transposed convolution fewer and fewer filters::

    generator:     loss_binary_log_per_pixel<sig<contp<1,4,2,1, relu<bn_con<contp<32,4,2,1,
                   relu<bn_con<contp<64,4,1,0, input<noise_t>>>>>>>>>>      1x1 -> 4x4 -> 8x8 -> 16x16
    discriminator: loss_binary_log<conp<1,4,1,0, leaky_relu<bn_con<conp<64,4,2,1,
                   leaky_relu<conp<32,4,2,1, input<matrix<unsigned char>>>>>>>>>  16 -> 8 -> 4 -> 1

dlib runs 50000 iterations at learning rate 2e-4 on MNIST; this example runs ``--iterations``
(600) at 1e-3 on the 1438 training digits of the shipped set's 80/20 split, which draws
recognisable (blurry) digits in about half a minute on 2 CPU cores.

It writes a PNG tiling 64 generated digits (dlib shows them in an ``image_window``), and saves
as dlib does, in dlib's format: the generator, the discriminator and the iteration count in
one sync file (``dnnpy.serialize_objects``), and the generator alone.

The printed metric compares 256 generated digits with real ones, in pixels:

- *distance*: the mean RMS distance from a generated digit to its nearest real training digit,
  as a multiple of the same for the 359 held-out real digits (random noise: about 4.7x);
- *classes*: how many of the 10 classes those nearest real digits cover (a generator that
  collapsed to one digit covers few);
- *variety*: how much the generated digits differ from each other, as a multiple of how much
  real digits do (one image drawn again and again: 0).

The run counts as digits-like when distance <= 2x, classes >= 8 and variety >= 0.5. Each part
can fail (noise fails the first, the mean digit, which is close in pixels, the last two).
Pixel distances favour blur over sharp but shifted strokes, so this is a floor, not a
perceptual score; look at the PNG.
"""

from __future__ import annotations

import numpy as np

import dnnpy
from dnnpy import (bn_con, con, cont, input, input_array, leaky_relu, leaky_relu_,
                   loss_binary_log, loss_binary_log_per_pixel, relu, sig)
from dnnpy.data import dlib_rand
from dnnpy.data.datasets import load_digits
from dnnpy.examples._util import Timer, base_parser, out_dir
from dnnpy.image import save_png, tile_images
from dnnpy.layers.base import seeded_initialisation

NOISE_SIZE = 100


def conp(num_filters, kernel_size, stride, padding, SUBNET):
    """dlib's ``conp``: a square convolution with the given padding."""
    return con[num_filters, kernel_size, kernel_size, stride, stride, padding, padding, SUBNET]


def contp(num_filters, kernel_size, stride, padding, SUBNET):
    """dlib's ``contp``: a square transposed convolution with the given padding."""
    return cont[num_filters, kernel_size, kernel_size, stride, stride, padding, padding, SUBNET]


generator_type = loss_binary_log_per_pixel[
                     sig[contp(1, 4, 2, 1,
                     relu[bn_con[contp(32, 4, 2, 1,
                     relu[bn_con[contp(64, 4, 1, 0,
                     input_array[np.float32, NOISE_SIZE])]])]])]]

discriminator_type = loss_binary_log[
                         conp(1, 4, 1, 0,
                         leaky_relu[bn_con[conp(64, 4, 2, 1,
                         leaky_relu[conp(32, 4, 2, 1,
                         input[np.uint8])])]])]

def make_noise(rnd, n):
    """``n`` noise vectors as dlib's ``make_noise``: ``(n, NOISE_SIZE, 1, 1)`` float32 of
    ``rnd.get_random_gaussian()`` draws, in dlib's order (drawn at once)."""
    return rnd.get_random_gaussians(n * NOISE_SIZE).astype(np.float32).reshape(n, NOISE_SIZE, 1, 1)


def get_generated_images(out) -> np.ndarray:
    """dlib's ``get_generated_images``: the generator's output ``(n, 1, r, c)`` in [0, 1] as
    uint8 images ``(n, r, c)``, ``255 * output`` (clamped, truncated as C++ casts)."""
    return np.clip(255.0 * np.asarray(out)[:, 0], 0, 255).astype(np.uint8)


def parameters_of(net) -> np.ndarray:
    """Every computational layer's parameters, concatenated (a copy)."""
    params = []
    dnnpy.visit_computational_layers(net, lambda layer: params.append(
        np.asarray(layer.get_layer_params().numpy(), np.float64).ravel()))
    return np.concatenate(params)


def nearest_real(samples, real_images, real_labels):
    """For each sample, the RMS pixel distance (pixels in [0, 1]) to the nearest real image
    and that image's label: ``(distances, labels)``."""
    a = np.asarray(samples, np.float64).reshape(len(samples), -1) / 255.0
    b = np.asarray(real_images, np.float64).reshape(len(real_images), -1) / 255.0
    d2 = (a * a).sum(1)[:, None] - 2.0 * a @ b.T + (b * b).sum(1)[None, :]
    nearest = d2.argmin(axis=1)
    dist = np.sqrt(np.maximum(d2[np.arange(len(a)), nearest], 0.0) / a.shape[1])
    return dist, np.asarray(real_labels)[nearest]


def mean_pairwise_distance(images) -> float:
    """The mean RMS pixel distance (pixels in [0, 1]) between two different images of the set:
    how varied it is (0 for a generator that draws one image)."""
    a = np.asarray(images, np.float64).reshape(len(images), -1) / 255.0
    sq = (a * a).sum(1)
    d2 = np.maximum(sq[:, None] - 2.0 * a @ a.T + sq[None, :], 0.0)
    n = len(a)
    return float(np.sqrt(d2 / a.shape[1]).sum() / (n * (n - 1)))


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--iterations", type=int, default=600,
                        help="training iterations (dlib's example: 50000)")
    parser.add_argument("--batch", type=int, default=64, help="mini-batch size (dlib's: 64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3,
                        help="adam's learning rate for both nets (dlib's: 2e-4, for 50000 iterations)")
    parser.add_argument("--seed", type=int, default=1234, help="dlib_rand seed for the noise and batches")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.batch = 5, 16
    out = out_dir(args.out)
    timer = Timer()

    train_x, train_y, test_x, test_y = load_digits(size=16, test_fraction=0.2)
    print(f"data: the shipped UCI optical digits (8x8 upsampled to 16x16): {len(train_x)} to train on, "
          f"{len(test_x)} held out for the metric")

    rnd = dlib_rand(args.seed)
    generator, discriminator = generator_type(), discriminator_type()

    def set_alpha(layer):   # dlib: visit_computational_layers(d, [](leaky_relu_& l){ l = leaky_relu_(0.2); })
        if isinstance(layer, leaky_relu_):
            layer.alpha = leaky_relu_(0.2).get_alpha()
    dnnpy.visit_computational_layers(discriminator, set_alpha)
    dnnpy.disable_duplicative_biases(generator)
    dnnpy.disable_duplicative_biases(discriminator)

    # forward some noise so that the printed nets show every tensor size; the parameters are
    # drawn now, from dnnpy's initialisation stream, which every net made earlier in the
    # process advances (as dlib's std::rand() does): seeded, so every run trains the same nets
    with seeded_initialisation(args.seed):
        discriminator(get_generated_images(generator.subnet()(make_noise(rnd, 1))))
    print(f"generator ({dnnpy.count_parameters(generator)} parameters)")
    print(generator)
    print(f"discriminator ({dnnpy.count_parameters(discriminator)} parameters)")
    print(discriminator)

    generator_before = parameters_of(generator)
    g_solvers = dnnpy.make_solvers(generator, dnnpy.adam(0, 0.5, 0.999))
    d_solvers = dnnpy.make_solvers(discriminator, dnnpy.adam(0, 0.5, 0.999))
    real_labels = [1.0] * args.batch
    fake_labels = [-1.0] * args.batch
    g_loss, d_loss = dnnpy.running_stats(), dnnpy.running_stats()
    report_every = max(1, min(250, args.iterations // 6))

    train_timer = Timer()
    for iteration in range(1, args.iterations + 1):
        # the discriminator on real digits (= train_one_step(real_samples, real_labels))
        idx = [rnd.get_random_32bit_number() % len(train_x) for _ in range(args.batch)]
        real_tensor = discriminator.to_tensor(train_x[idx])
        d_loss.add(discriminator.compute_loss(real_tensor, real_labels))
        discriminator.back_propagate_error(real_tensor)
        discriminator.update_parameters(d_solvers, args.learning_rate)

        # ... and on generated ones
        noises_tensor = generator.to_tensor(make_noise(rnd, args.batch))
        fake_samples = get_generated_images(generator.forward(noises_tensor))
        fake_tensor = discriminator.to_tensor(fake_samples)
        d_loss.add(discriminator.compute_loss(fake_tensor, fake_labels))
        discriminator.back_propagate_error(fake_tensor)
        discriminator.update_parameters(d_solvers, args.learning_rate)

        # the generator, through the discriminator: score the fakes as "real", take the
        # gradient at the discriminator's input and push it back through the generator
        g_loss.add(discriminator.compute_loss(fake_tensor, real_labels))
        discriminator.back_propagate_error(fake_tensor)
        d_grad = discriminator.get_final_data_gradient()
        generator.back_propagate_error(noises_tensor, d_grad)
        generator.update_parameters(g_solvers, args.learning_rate)

        if iteration % report_every == 0 or iteration == args.iterations:
            if not args.quiet:
                print(f"step#: {iteration}\tdiscriminator loss: {d_loss.mean() * 2:.4f}"
                      f"\tgenerator loss: {g_loss.mean():.4f}")
            last_d, last_g = d_loss.mean() * 2, g_loss.mean()
            d_loss.clear()
            g_loss.clear()
    train_seconds = train_timer()
    generator_moved = not np.array_equal(parameters_of(generator), generator_before)
    print(f"{args.iterations} iterations of {args.batch} real and {args.batch} generated digits "
          f"in {train_seconds:.1f} s")

    # 64 new digits, tiled into one picture (dlib: win.set_image(tile_images(fake_samples)))
    samples = get_generated_images(generator.subnet()(make_noise(rnd, 256)))
    png_path = out / "dcgan_digits.png"
    # tiled as dlib tiles them (no gaps), then enlarged 4x (nearest) to be seen on a screen
    save_png(np.kron(tile_images(list(samples[:64])), np.ones((4, 4), np.uint8)), png_path)
    print(f"wrote 64 generated digits to {png_path} (8 x 8 tiles, enlarged 4x)")
    thinks_real = float(np.mean(np.asarray(discriminator(samples)) > 0))
    print(f"the discriminator thinks {thinks_real:.2f} of 256 new generated digits are real")

    generator.clean()
    discriminator.clean()
    # dlib: serialize("dcgan_sync") << generator << discriminator << iteration, and the
    # generator alone for use
    sync_path, gen_path = out / "dcgan_sync.dat", out / "dcgan_digits_generator.dat"
    dnnpy.serialize_objects(sync_path, generator, discriminator, args.iterations, format="dlib")
    dnnpy.serialize(generator, gen_path, format="dlib")
    print(f"saved the generator, the discriminator and the iteration count to {sync_path}, and "
          f"the generator alone to {gen_path} (dlib's format)")

    # the metric: how far generated digits are from the nearest real training digit, next to
    # the same distance for real digits the GAN never saw (the floor) and for two images that
    # are not digits (random noise; the mean digit, what a generator stuck on "average ink"
    # draws); and how many classes the nearest real digits cover (a collapsed generator
    # covers few)
    noise = np.random.default_rng(0).integers(0, 256, (256, 16, 16), dtype=np.uint8)
    mean_digit = np.broadcast_to(train_x.mean(axis=0).astype(np.uint8), (1, 16, 16))
    d_gen, nn_labels = nearest_real(samples, train_x, train_y)
    d_real = nearest_real(test_x, train_x, train_y)[0]
    d_noise = nearest_real(noise, train_x, train_y)[0]
    d_mean = nearest_real(mean_digit, train_x, train_y)[0]
    classes = int(np.unique(nn_labels).size)
    ratio = float(d_gen.mean() / d_real.mean())
    print("mean RMS distance to the nearest of the real training digits (pixels in [0, 1]):")
    print(f"  real test digits (never trained on): {d_real.mean():.3f}")
    print(f"  256 generated digits:                {d_gen.mean():.3f}  ({ratio:.2f} x the real digits'; "
          f"nearest digits cover {classes} of 10 classes)")
    print(f"  the mean digit:                      {d_mean.mean():.3f}")
    print(f"  random noise:                        {d_noise.mean():.3f}  "
          f"({d_noise.mean() / d_real.mean():.2f} x the real digits')")
    variety = mean_pairwise_distance(samples) / mean_pairwise_distance(test_x)
    print(f"variety: generated digits differ from each other {variety:.2f} x as much as real digits do")
    good = ratio <= 2.0 and classes >= 8 and variety >= 0.5
    print(f"digits-like (distance <= 2 x the real digits', >= 8 classes, variety >= 0.5): "
          f"{'yes' if good else 'NO'}")
    print(f"done in {timer():.1f} s")
    return {"train_seconds": train_seconds, "d_loss": last_d, "g_loss": last_g,
            "distance_ratio": ratio, "nearest_classes": classes, "generated_distance": float(d_gen.mean()),
            "real_distance": float(d_real.mean()), "noise_distance": float(d_noise.mean()),
            "mean_digit_distance": float(d_mean.mean()),
            "variety": variety, "digits_like": good,
            "discriminator_thinks_real": thinks_real, "generator_moved": generator_moved, "png_path": png_path,
            "generator_path": gen_path, "sync_path": sync_path}


if __name__ == "__main__":
    main()
