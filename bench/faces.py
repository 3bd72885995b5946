"""dlib's shape predictor in dnnpy and in dlib (dlib-bin): load time and landmarks per face.

Each library runs in its own process (``--side``), in alternating rounds; the parent prints
the min and median per measure and the ratio dlib / dnnpy (above 1: dnnpy is faster). A
process times each per-face measure as the fastest of 5 passes over all faces:

    load      reading the model file
    single    ``sp(img, box)`` per face, box after box
    batch     dnnpy's ``sp.batch(images, boxes)`` per face, all photos in one call (dlib has
              no batched form: its single-box time is the peer)

The faces are the HOG detections (upsampled once) in dlib's photos (``--faces DIR``); the
landmarks of both libraries are compared first, and a difference makes the script exit
with 1, so it cannot time a wrong computation.

How to run (repository root; needs ``pip install -e '.[dlib]'``)
    python bench/faces.py [--model 5|68] [--rounds N] [--faces DIR]
    About a minute for the 68-point model on 2 cores.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FACES = os.path.join(HERE, os.pardir, os.pardir, "shared", "testdata", "faces")
MODELS = {"5": "shape_predictor_5_face_landmarks.dat", "68": "shape_predictor_68_face_landmarks.dat"}


def _child(args):
    """One side's timings, as JSON on stdout."""
    import dlib   # the HOG boxes and the photos come from dlib on both sides
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, os.pardir))
    from dnnpy import models, rectangle, shape_predictor
    path = models.dlib_model_path(MODELS[args.model])
    photos = sorted(glob.glob(os.path.join(args.faces, "*.jpg")))
    hog = dlib.get_frontal_face_detector()
    work = [(img, list(hog(img, 1))) for img in (dlib.load_rgb_image(p) for p in photos)]
    faces = sum(len(d) for _, d in work)
    t = time.perf_counter()
    sp = dlib.shape_predictor(path) if args.side == "dlib" else shape_predictor(path)
    out = {"load": time.perf_counter() - t, "faces": faces}
    if args.side == "dlib":
        def single():
            return [[[(p.x, p.y) for p in sp(img, d).parts()] for d in dets] for img, dets in work]
        batch = None
    else:
        boxes = [[rectangle(d.left(), d.top(), d.right(), d.bottom()) for d in dets] for _, dets in work]

        def single():
            return [[list(sp(img, b).parts) for b in bs] for (img, _), bs in zip(work, boxes)]

        def batch():
            return [[list(s.parts) for s in r] for r in sp.batch([img for img, _ in work], boxes)]
    def best(run, passes=5):
        """The fastest of ``passes`` passes over all faces, per face (after one warm-up pass)."""
        run()
        times = []
        for _ in range(passes):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        return min(times) / faces

    result = single()
    out["single"] = best(single)
    if batch is not None:
        out["batch"] = best(batch)
    out["landmarks"] = np.asarray([p for r in result for s in r for p in s], np.int64).tolist()
    print(json.dumps(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="68")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--faces", default=DEFAULT_FACES)
    ap.add_argument("--side", choices=["dlib", "dnnpy"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        return _child(args)
    runs = {"dlib": [], "dnnpy": []}
    for _ in range(args.rounds):
        for side in ("dlib", "dnnpy"):
            cmd = [sys.executable, __file__, "--side", side, "--model", args.model, "--faces", args.faces]
            runs[side].append(json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                        text=True).stdout.strip().splitlines()[-1]))
    if runs["dlib"][0]["landmarks"] != runs["dnnpy"][0]["landmarks"]:
        print("landmarks differ between dlib and dnnpy: not timing a wrong computation")
        return 1
    faces = runs["dlib"][0]["faces"]
    print(f"{MODELS[args.model]}: {faces} faces, landmarks equal; {args.rounds} alternating rounds "
          f"(min / median)")
    for key, unit, scale in (("load", "s", 1), ("single", "ms/face", 1e3), ("batch", "ms/face", 1e3)):
        d = [r["load" if key == "load" else "single"] * scale for r in runs["dlib"]]
        n = [r[key] * scale for r in runs["dnnpy"]]
        print(f"  {key:7s} dlib {min(d):7.3f} / {statistics.median(d):7.3f} {unit:8s}  dnnpy "
              f"{min(n):7.3f} / {statistics.median(n):7.3f}   ratio dlib/dnnpy {min(d) / min(n):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
