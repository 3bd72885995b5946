"""Time dlib's released face models in dnnpy and in dlib (dlib-bin), on the CPU, in one run.

What is measured (median wall time of several calls after warm-up, per library)
    chip      one 150x150 aligned chip -> descriptor: ``net([chip])`` vs dlib's
              ``face_recognition_model_v1.compute_face_descriptor(chip)``
    batch8    8 chips in one call: ``net(chips)`` vs ``compute_face_descriptor(chips)``
    detector  one 640x480 image, no upsampling: ``detector([img])`` vs
              ``cnn_face_detection_model_v1(img, 0)``
    speedup = dlib ms / dnnpy ms (above 1: dnnpy is faster). The issue's target is >= 3.

Before timing, the outputs are compared (descriptor max abs difference, detections equal) so
the benchmark cannot time a wrong computation; a mismatch makes the script exit with 1.

Inputs: chips are cut by dlib (HOG detector, 5-point shape predictor, ``get_face_chip``) from
the photos in ``../shared/testdata/faces/`` (``--faces DIR``); the 640x480 image is
2008_002506.jpg (500x375, three faces) resized to 640x480 by dlib. Without the photos,
random pixels are used (the timing is the same: neither library's work depends on the
content, apart from the detections' NMS).

BLAS threads: dlib-bin runs single-threaded without BLAS; numpy's OpenBLAS uses all cores by
default. The script times dnnpy both ways: ``--threads`` lists the numpy BLAS thread counts
(``0`` = OpenBLAS's default), set with threadpoolctl when it is installed; otherwise run
with ``OPENBLAS_NUM_THREADS=1`` in the environment to pin it. dlib is not affected.

How to run (repository root; needs ``pip install -e '.[dlib]'``)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/dlib_models.py [--repeat N]
        [--threads 1,0] [--markdown] [--faces DIR]
    About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import statistics
import sys
import time

os.environ.setdefault("DNNPY_DISABLE_CUDA", "1")   # the peer is dlib on the CPU

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from dnnpy import models  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FACES = os.path.join(HERE, os.pardir, os.pardir, "shared", "testdata", "faces")


def _median_ms(fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def _blas_threads(n):
    """A context pinning numpy's BLAS to n threads (0: leave the default)."""
    if n == 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print(f"  (threadpoolctl not installed: cannot set {n} BLAS threads; "
              f"run with OPENBLAS_NUM_THREADS={n} instead)")
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def _inputs(dlib, faces_dir):
    """(chips, 640x480 image): real ones from the photos when available."""
    rng = np.random.default_rng(0)
    photos = sorted(glob.glob(os.path.join(faces_dir, "*.jpg")))
    if not photos:
        print(f"no photos in {faces_dir}: timing random pixels")
        chips = [rng.integers(0, 256, (150, 150, 3), dtype=np.uint8) for _ in range(8)]
        return chips, rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    sp = dlib.shape_predictor(models.dlib_model_path("shape_predictor_5_face_landmarks.dat"))
    hog = dlib.get_frontal_face_detector()
    chips = []
    for p in photos:
        img = dlib.load_rgb_image(p)
        chips += [dlib.get_face_chip(img, sp(img, r), 150, 0.25) for r in hog(img, 1)]
    chips = (chips * 8)[:8]
    pick = [p for p in photos if p.endswith("2008_002506.jpg")] or photos
    big = dlib.resize_image(dlib.load_rgb_image(pick[0]), 480, 640)
    return chips, np.ascontiguousarray(big)


def _check(net, det, ref_net, ref_det, chips, img):
    ours = net(chips)
    theirs = ref_net.compute_face_descriptor(chips)
    diff = max(float(np.abs(a - np.array(b)).max()) for a, b in zip(ours, theirs))
    a = sorted((d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()) for d in det([img])[0])
    b = sorted((d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()) for d in ref_det(img, 0))
    print(f"check: descriptor max abs diff {diff:.2e}; detections {'equal' if a == b else 'DIFFER'} "
          f"({len(a)} vs {len(b)} faces)")
    return diff <= 1e-5 and a == b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", default="1,0", help="numpy BLAS thread counts to time dnnpy with "
                                                     "(0 = OpenBLAS default)")
    ap.add_argument("--faces", default=DEFAULT_FACES)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var} is set; it can slow numpy's BLAS (see bench/README.md)")
    try:
        import dlib
    except ImportError:
        sys.exit("dlib's Python bindings are needed: pip install -e '.[dlib]'")

    net = models.load_face_recognition_model()
    det = models.load_face_detector()
    ref_net = dlib.face_recognition_model_v1(models.dlib_model_path(models.FACE_RECOGNITION_MODEL))
    ref_det = dlib.cnn_face_detection_model_v1(models.dlib_model_path(models.FACE_DETECTOR_MODEL))
    chips, img = _inputs(dlib, args.faces)
    ok = _check(net, det, ref_net, ref_det, chips, img)

    r = args.repeat
    dlib_ms = {
        "chip": _median_ms(lambda: ref_net.compute_face_descriptor(chips[0]), r),
        "batch8": _median_ms(lambda: ref_net.compute_face_descriptor(chips), max(3, r // 2)),
        "detector 640x480": _median_ms(lambda: ref_det(img, 0), max(3, r // 2)),
    }
    rows = []
    for n in (int(t) for t in args.threads.split(",")):
        with _blas_threads(n):
            ours = {
                "chip": _median_ms(lambda: net([chips[0]]), r),
                "batch8": _median_ms(lambda: net(chips), r),
                "detector 640x480": _median_ms(lambda: det([img]), r),
            }
        for case, ms in ours.items():
            rows.append((case, n or "default", ms, dlib_ms[case], dlib_ms[case] / ms))

    if args.markdown:
        print("| case | numpy BLAS threads | dnnpy ms | dlib-bin ms | speedup |\n|---|---|--:|--:|--:|")
        for case, n, a, b, s in rows:
            print(f"| {case} | {n} | {a:.1f} | {b:.1f} | {s:.2f}x |")
    else:
        print(f"{'case':18} {'BLAS thr':>8} {'dnnpy ms':>9} {'dlib ms':>9} {'speedup':>8}")
        for case, n, a, b, s in rows:
            print(f"{case:18} {str(n):>8} {a:9.1f} {b:9.1f} {s:7.2f}x")
    print("per chip in batch8: " + ", ".join(f"dnnpy {a / 8:.1f} ms ({n} thr)" for case, n, a, b, s in rows
                                             if case == "batch8") + f", dlib {dlib_ms['batch8'] / 8:.1f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
