"""dlib's python_examples/cnn_face_detector.py, with ``import dnnpy as dlib``: find faces with
dlib's CNN (MMOD) face detector and report each with its confidence.

    python -m dnnpy.examples.cnn_face_detector [--model mmod_human_face_detector.dat] photo.jpg ...

As dlib's script: each image is loaded as RGB, upsampled once (faces down to about 40x40
pixels are found), and every detection is printed as ``Detection i: Left: .. Top: .. Right:
.. Bottom: .. Confidence: ..``. dlib shows the boxes in an ``image_window``; here each image is
written with its boxes as ``<out>/<name>_faces.png``. The model comes from the PyPI package
``face_recognition_models`` unless ``--model`` names the file (dlib's script takes it as its
first argument). Equal to dlib-bin's boxes and confidences (``docs/faces.md``), several times
faster.
"""

from __future__ import annotations

from pathlib import Path

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import base_parser, out_dir
from dnnpy.image import draw_rectangle


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("images", nargs="+", metavar="IMAGE", help="photos to find faces in")
    parser.add_argument("--model", default=None, metavar="FILE",
                        help="mmod_human_face_detector.dat (default: from face_recognition_models)")
    parser.add_argument("--upsample", type=int, default=1,
                        help="times to upsample each image first (dlib's script: 1)")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    cnn_face_detector = dlib.cnn_face_detection_model_v1(args.model)
    results = {}
    for f in args.images:
        print(f"Processing file: {f}")
        img = dlib.load_rgb_image(f)
        dets = cnn_face_detector(img, args.upsample)
        print(f"Number of faces detected: {len(dets)}")
        for i, d in enumerate(dets):
            print(f"Detection {i}: Left: {d.rect.left()} Top: {d.rect.top()} Right: {d.rect.right()} "
                  f"Bottom: {d.rect.bottom()} Confidence: {d.confidence}")
        shown = img.copy()
        for d in dets:
            draw_rectangle(shown, d.rect, (255, 0, 0), 2)
        dlib.save_image(shown, out / f"{Path(f).stem}_faces.png")
        results[f] = dets
    return results


if __name__ == "__main__":
    main()
