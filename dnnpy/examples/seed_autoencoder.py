"""The seed network: a convolutional autoencoder, 64x64x3 image -> con -> relu -> cont ->
relu -> 64x64x3, declared with templates, run forward and backward on the CPU, and its two
convolution layers proven by ``test_layer``.

    python -m dnnpy.examples.seed_autoencoder

(Training it comes with the training issue; this checks the pieces it is made of.)
"""

import time

import numpy as np

import dnnpy
from dnnpy import (con, con_, cont, cont_, input_rgb_image, loss_mean_squared_per_channel_and_pixel,
                   relu, test_layer)

autoencoder = loss_mean_squared_per_channel_and_pixel[3,
                  relu[cont[3, 4, 4, 2, 2,
                  relu[con[16, 4, 4, 2, 2,
                  input_rgb_image]]]]]


def synthetic_images(n, size=64, seed=0):
    """Smooth random colour blobs on a gradient background, HxWx3 uint8."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    images = np.empty((n, size, size, 3), np.uint8)
    for i in range(n):
        img = np.stack([xx, yy, 1 - xx], axis=-1) * rng.uniform(40, 120, 3)
        for _ in range(3):
            cy, cx, rad = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.08, 0.25)
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * rad ** 2))
            img += blob[..., None] * rng.uniform(0, 135, 3)
        images[i] = np.clip(img, 0, 255).astype(np.uint8)
    return images


def main():
    print(f"net type: {autoencoder!r}")
    assert dnnpy.net_type_from_string(repr(autoencoder)) is autoencoder

    net = autoencoder()
    images = synthetic_images(8)
    targets = [(img.transpose(2, 0, 1).astype(np.float32) - 128) / 256 for img in images]

    t = time.perf_counter()
    loss = net.compute_parameter_gradients(images, targets)
    elapsed = time.perf_counter() - t
    out = net.subnet().get_output()
    print(net)
    print(f"input batch {images.shape} uint8 -> output {out.shape}; loss {loss:.6f}; "
          f"forward+backward {elapsed * 1e3:.1f} ms")
    assert out.shape == (8, 3, 64, 64)
    for i in (2, 4):  # the cont and con layers
        grad = dnnpy.layer(net, i).get_parameter_gradient()
        print(f"layer<{i}> parameter gradient: {grad.size()} values, "
              f"norm {np.linalg.norm(np.asarray(grad)):.4g}")
    print(f"gradient w.r.t. the input tensor: {net.get_final_data_gradient().shape}")

    # the fake subnet's inputs: large enough for 4x4 filters with stride 2
    for details, shape in ((con_(16, 4, 4, 2, 2), (2, 3, 8, 8)), (cont_(3, 4, 4, 2, 2), (2, 4, 4, 4))):
        for dtype in (np.float32, np.float64):
            result = test_layer(details, dtype=dtype, input_shape=shape)
            name = repr(details).split("\t")[0]
            print(f"test_layer({name}_, {np.dtype(dtype).name}): {'ok' if result else 'FAILED'} "
                  f"(max relative error {result.max_relative_error:.2e})")
            if not result:
                print(result.log)
                raise SystemExit(1)


if __name__ == "__main__":
    main()
