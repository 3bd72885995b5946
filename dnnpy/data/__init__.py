"""dlib's data tools around the nets: ``randomize_samples`` (randomize.py), ``dlib_rand``
(``dnnpy.rand``, dlib::rand's exact stream), ``chinese_whispers`` (clustering.py), k-means (kmeans.py:
``pick_initial_centers``, ``find_clusters_using_kmeans``), imglab XML
datasets (imglab.py: ``load_image_dataset``, ``image_dataset_metadata``) and detection
metrics (detection_metrics.py: ``test_object_detection_function``, ``average_precision``),
``prefetch`` (prefetch.py: training data made in background threads), generated
detection/segmentation scenes (scenes.py: ``make_scene``, ``write_scene_dataset``) and
procedural face-like identities (identities.py: ``make_identities``) and procedural
shape x texture image classes (shape_classes.py: ``make_shape_classes``)."""

from . import imglab as image_dataset_metadata   # dlib's namespace: .box, .image, .dataset
from .bpe_tokenizer import bpe_tokenizer
from .clustering import chinese_whispers, chinese_whispers_clustering
from .detection_metrics import average_precision, test_object_detection_function
from .identities import identity_parameters, make_identities
from .kmeans import find_clusters_using_kmeans, pick_initial_centers
from .imglab import (ImageDatasetError, image_dataset_file, load_image_dataset,
                     load_image_dataset_metadata, save_image_dataset_metadata)
from .prefetch import prefetch
from ..rand import dlib_rand
from .randomize import randomize_samples
from .scenes import SCENE_KINDS, SMILEY_PARTS, make_scene, make_scenes, scene, write_scene_dataset
from .shape_classes import SHAPE_CLASS_NAMES, make_shape_classes

__all__ = ["randomize_samples", "dlib_rand", "chinese_whispers", "chinese_whispers_clustering",
           "pick_initial_centers", "find_clusters_using_kmeans",
           "image_dataset_metadata", "ImageDatasetError", "image_dataset_file",
           "load_image_dataset", "load_image_dataset_metadata", "save_image_dataset_metadata",
           "average_precision", "test_object_detection_function", "prefetch",
           "SCENE_KINDS", "SMILEY_PARTS", "scene", "make_scene", "make_scenes", "write_scene_dataset",
           "make_identities", "identity_parameters", "make_shape_classes", "SHAPE_CLASS_NAMES",
           "bpe_tokenizer"]
