"""dlib's data tools around the nets, one module per tool, re-exported here; ``dlib_rand``
(``dnnpy.rand``, dlib::rand's exact stream) is re-exported here too.

Modules:

- ``bpe_tokenizer.py``: dlib's ``bpe_tokenizer``, byte pair encoding with dlib's training rule
- ``clustering.py``: ``chinese_whispers`` graph clustering (and ``chinese_whispers_clustering``)
- ``datasets.py``: data sets for the examples: the shipped digits, MNIST, CIFAR-10,
  generated images, the language-model text
- ``detection_metrics.py``: detection metrics: ``test_object_detection_function``,
  ``average_precision``
- ``identities.py``: procedural face-like identities (``make_identities``) for metric learning
- ``imglab.py``: imglab XML datasets: ``load_image_dataset``, ``image_dataset_metadata``
- ``kmeans.py``: k-means: ``pick_initial_centers``, ``find_clusters_using_kmeans``
- ``linear_classifier.py``: a linear classifier on fixed feature vectors (e.g. a linear probe)
- ``prefetch.py``: ``prefetch``, training data made in background threads
- ``randomize.py``: ``randomize_samples``, shuffling samples and their labels together
- ``scenes.py``: generated detection and segmentation scenes (``make_scene``,
  ``write_scene_dataset``)
- ``shape_classes.py``: generated shape x texture image classes (``make_shape_classes``)
"""

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
