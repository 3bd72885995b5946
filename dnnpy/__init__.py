"""dnnpy: dlib's deep-learning module (``dnn``) in Python.

Networks are nested bracket templates over layers with dlib's names::

    import numpy as np, dnnpy
    from dnnpy import relu, cont, con, input_rgb_image, loss_mean_squared_per_channel_and_pixel

    net_type = loss_mean_squared_per_channel_and_pixel[3,
                   relu[cont[3,4,4,2,2, relu[con[16,4,4,2,2, input_rgb_image]]]]]
    net = net_type()
    out = net.subnet()(images)      # forward a batch of HxWx3 uint8 images

Ops live in ``dnnpy.tensor_tools`` (CPU: numpy; CUDA: CuPy + cuDNN), every layer is checked
by ``dnnpy.test_layer``.

Modules:

- ``__main__.py``: ``python -m dnnpy``, the command line (see ``cli.py``)
- ``_moved.py``: the warning that the old import paths of moved modules give
- ``atomic.py``: atomic file writes, used by every save (nets, sync files, imglab XML)
- ``cli.py``: the ``dnnpy`` command line
- ``constructor_arguments.py``: a net type's constructor arguments (dlib's forwarding
  constructors) and the converting construction ``net_type(net)``
- ``cpp.py``: ``cpp_type(net)``, the dlib C++ type of a net, as a declaration
- ``datasets.py``: old path of ``data/datasets.py`` (still works, with a DeprecationWarning)
- ``errors.py``: dnnpy's exception and warning types, and ``warn``
- ``face_recognition.py``: the ``face_recognition`` package's API, on dnnpy instead of dlib
- ``face_recognition_cli.py``: the ``face_recognition`` package's two command lines
- ``faces.py``: dlib's Python face functions (``jitter_image``, ``save_face_chip(s)``)
- ``geometry.py``: dlib's rectangles (``rectangle``, ``drectangle``, ``mmod_rect``) and
  ``test_box_overlap``
- ``jit.py``: whether the compiled kernels (``kernels/``, the ``jit`` extra) run; ``force_numpy``
- ``landmarks.py``: dlib's ``shape_predictor``: landmarks of a face (or object) in a box
- ``linear_classifier.py``: old path of ``data/linear_classifier.py`` (works, warns)
- ``models.py``: dlib's released networks, declared as dlib's Python tools declare them
- ``numpy_only.py``: per-thread "numpy only" switches (``force_numpy``), handed to ``parallel_for``'s workers
- ``object_detector.py``: dlib's HOG object detectors (the frontal face detector, ``.svm`` files)
- ``parallel.py``: dlib's ``parallel_for`` for dnnpy's numpy code, on kept worker threads
- ``parsing.py``: a net type's bracket expression parsed back into the net type
  (``net_type_from_string``)
- ``png.py``: old path of ``image/png.py`` (works, warns)
- ``printing.py``: numbers and tensors printed as dlib's C++ streams print them
- ``rand.py``: ``dlib::rand``, dlib's random number generator with dlib's exact stream
- ``solvers.py``: dlib's solvers, ``sgd`` and ``adam``
- ``spellings.py``: dlib's other spellings of a net type, beside the bracket templates
- ``statistics.py``: old path of ``training/statistics.py`` (works, warns)
- ``templates.py``: bracket templates: ``con[16,5,5,1,1, SUBNET]`` is dlib's
  ``con<16,5,5,1,1,SUBNET>``
- ``tensor.py``: tensors, dlib's 4-D float32 blocks (NCHW)
- ``testing.py``: ``test_layer``, dlib's numerical gradient checker for computational layers
- ``testing_loss.py``: ``test_loss``, a numerical gradient checker for loss layers
- ``core/``: network composition: ``add_layer``, tags, skips, ``repeat``, ``add_loss_layer``
- ``data/``: data tools: shuffling, clustering, imglab datasets, detection metrics, generated data
- ``distributed/``: data-parallel training on several processes
- ``examples/``: runnable examples, ``python -m dnnpy.examples.NAME``
- ``image/``: image tools: files, drawing, transforms, chips, HOG features, pyramids, crops
- ``inputs/``: input layers: a batch of Python/numpy objects into a net's input tensor
- ``kernels/``: compiled (Numba) twins of the image code's slow loops, loaded by ``jit.py``
- ``layers/``: computational layers, one module per family
- ``loss/``: loss layers, one module per family
- ``onnx/``: ONNX export and import
- ``serialization/``: saving and loading in dlib's byte format
- ``tensor_tools/``: every tensor op, one dispatcher each, over a numpy and a CUDA backend
- ``training/``: training: ``dnn_trainer``, its sync files and its progress display
- ``visitors/``: visitors and whole-net utilities (``count_parameters``, ``net_to_xml``, ...)
"""

import importlib

from . import tensor_tools
from .core import (add_layer, add_loss_layer, add_skip_layer, add_tag_layer, input_layer, layer,
                   computational_nodes, net_layers, repeat_layer)
from .errors import EvaluationWarning, FileOverrideWarning, SerializationError, ThreadSettingWarning
from .data.datasets import load_cifar_10_dataset, load_digits, load_mnist_dataset
from .data.linear_classifier import (auto_train_multiclass_linear_classifier,
                                multiclass_linear_decision_function)
from .solvers import adam, make_solvers, sgd
from .serialization import (deserialize, deserialize_objects, from_bytes, load, serialize,
                            serialize_objects, to_bytes)
from .geometry import (drectangle, full_object_detection, full_object_detections, ignored_mmod_rect, mmod_rect,
                       point, points, rectangle, rectangles, test_box_overlap)
from .inputs import *  # noqa: F401,F403
from .inputs import __all__ as _inputs_all
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers_all
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss_all
from .visitors import *  # noqa: F401,F403
from .visitors import __all__ as _visitors_all
from .parsing import net_type_from_string
from .templates import (NetType, SUBNET, layer_template, loss_template, repeat, repeat_group,
                        skip_template, skip_templates, tag_template, tag_templates)
from .spellings import alias
from .tensor import (StaleTensorError, alias_tensor, default_dtype, have_same_dimensions,
                     image_plane, is_same_object, memcpy, read_only_view, resizable_tensor, tensor)
from .tensor_tools import backend_info, force_cpu, force_numpy, get_num_threads, set_num_threads, use_cuda
from .tensor_tools.algorithms import (dnn_prefer_smallest_algorithms, set_dnn_prefer_fastest_algorithms,
                                      set_dnn_prefer_smallest_algorithms)
from .testing import layer_test_results, test_layer
from .testing_loss import loss_test_results, test_loss
from .training import TrainingDivergedError, dnn_trainer
from .data import (average_precision, bpe_tokenizer, load_image_dataset, randomize_samples,
                   test_object_detection_function)
from .landmarks import shape_predictor
from .object_detector import fhog_object_detector, get_frontal_face_detector, simple_object_detector
from .faces import jitter_image, save_face_chip, save_face_chips
from .cpp import cpp_declaration, cpp_type
from . import face_recognition  # noqa: E402  (the face_recognition package's API)
from .image import get_face_chip, get_face_chips, load_rgb_image, save_image
from .data import chinese_whispers_clustering
from .models import cnn_face_detection_model_v1, face_recognition_model_v1, mmod_rectangle, mmod_rectangles
from .training.statistics import (count_steps_without_decrease, count_steps_without_decrease_robust,
                         count_steps_without_increase, probability_that_sequence_is_increasing,
                         probability_values_are_increasing, probability_values_are_increasing_robust,
                         running_gradient, running_stats, running_stats_decayed)

tag1, tag2, tag3, tag4, tag5, tag6, tag7, tag8, tag9, tag10 = tag_templates
skip1, skip2, skip3, skip4, skip5, skip6, skip7, skip8, skip9, skip10 = skip_templates

__version__ = "0.1.0"

# modules that moved: the old attribute still reaches them, through the old module, which warns
_MOVED = {"datasets", "png", "statistics", "linear_classifier"}


def __getattr__(name):
    if name in _MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "tensor", "resizable_tensor", "alias_tensor", "read_only_view", "StaleTensorError",
    "have_same_dimensions", "is_same_object", "memcpy", "image_plane", "tensor_tools", "net_layers", "computational_nodes",
    "add_layer", "add_loss_layer", "add_tag_layer", "add_skip_layer", "repeat_layer", "layer",
    "input_layer", "repeat", "repeat_group", "alias", "SUBNET", "NetType", "net_type_from_string",
    "layer_template", "loss_template", "tag_template", "skip_template",
    "test_layer", "layer_test_results", "test_loss", "loss_test_results", "force_cpu", "force_numpy", "use_cuda", "backend_info", "set_num_threads",
    "set_dnn_prefer_smallest_algorithms", "set_dnn_prefer_fastest_algorithms",
    "dnn_prefer_smallest_algorithms",
    "get_num_threads", "SerializationError", "EvaluationWarning", "FileOverrideWarning", "ThreadSettingWarning", "sgd", "adam", "make_solvers", "load_mnist_dataset", "load_cifar_10_dataset",
    "auto_train_multiclass_linear_classifier", "multiclass_linear_decision_function",
    "load_digits", "default_dtype",
    "serialize", "deserialize", "load", "serialize_objects", "deserialize_objects", "to_bytes",
    "from_bytes",
    "dnn_trainer", "TrainingDivergedError", "randomize_samples", "load_image_dataset", "shape_predictor",
    "fhog_object_detector", "simple_object_detector", "get_frontal_face_detector",
    "jitter_image", "save_face_chip", "save_face_chips", "cpp_type", "cpp_declaration",
    "get_face_chip", "get_face_chips", "load_rgb_image", "save_image", "chinese_whispers_clustering",
    "cnn_face_detection_model_v1", "face_recognition_model_v1", "mmod_rectangle", "mmod_rectangles",
    "test_object_detection_function", "average_precision", "bpe_tokenizer", "running_stats", "running_stats_decayed", "running_gradient",
    "count_steps_without_decrease", "count_steps_without_decrease_robust",
    "count_steps_without_increase", "probability_values_are_increasing",
    "probability_values_are_increasing_robust", "probability_that_sequence_is_increasing",
    "rectangle", "drectangle", "mmod_rect", "ignored_mmod_rect", "test_box_overlap", "rectangles",
    "point", "points", "full_object_detection", "full_object_detections",
    *[f"tag{i}" for i in range(1, 11)], *[f"skip{i}" for i in range(1, 11)], *_layers_all,
    *_inputs_all, *_loss_all, *_visitors_all,
]
