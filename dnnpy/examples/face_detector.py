"""dlib's python_examples/face_detector.py, with ``import dnnpy as dlib``: find frontal faces
with dlib's HOG face detector.

    python -m dnnpy.examples.face_detector photo.jpg ...

As dlib's script: each image is loaded as RGB and searched upsampled once (faces down to
about 40x40 pixels are found); every face is printed as ``Detection i: Left: .. Top: ..
Right: .. Bottom: ..``. Then, for the first image, ``detector.run(img, 1, -1)`` lists the
boxes down to a score of -1 with each one's score and filter (``face_type``: 0 front, 1
left, 2 right, 3 front rotated left, 4 front rotated right). dlib shows the boxes in an
``image_window``; here each image is written with its boxes as ``<out>/<name>_faces.png``.
The boxes are dlib-bin's (``docs/faces.md``).
"""

from __future__ import annotations

from pathlib import Path

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import base_parser, out_dir
from dnnpy.image import draw_rectangle


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("images", nargs="+", metavar="IMAGE", help="photos to find faces in")
    args = parser.parse_args(argv)
    out = out_dir(args.out)
    detector = dlib.get_frontal_face_detector()
    results = {}
    for f in args.images:
        print(f"Processing file: {f}")
        img = dlib.load_rgb_image(f)
        dets = detector(img, 1)
        print(f"Number of faces detected: {len(dets)}")
        for i, d in enumerate(dets):
            print(f"Detection {i}: Left: {d.left()} Top: {d.top()} Right: {d.right()} Bottom: {d.bottom()}")
        shown = img.copy()
        for d in dets:
            draw_rectangle(shown, d, (255, 0, 0), 2)
        dlib.save_image(shown, out / f"{Path(f).stem}_faces.png")
        results[f] = dets
    # the detector's scores and filters, down to a score of -1, on the first image
    img = dlib.load_rgb_image(args.images[0])
    dets, scores, idx = detector.run(img, 1, -1)
    for i, d in enumerate(dets):
        print(f"Detection {d}, score: {scores[i]}, face_type:{idx[i]}")
    results["run"] = (dets, scores, idx)
    return results


if __name__ == "__main__":
    main()
