"""dlib's catalogue (layers_abstract.h, loss_abstract.h, input_abstract.h, visitors): every
name must exist in dnnpy, and every computational layer must have at least two
configurations in the test_layer table."""

import collections

import pytest

import dnnpy
from dnnpy.layers.base import computational_layer
from dnnpy.loss.base import loss_layer
from dnnpy.templates import layer_template, loss_template

# the 45 computational layer classes of layers_abstract.h
COMPUTATIONAL = """
fc_ linear_ con_ cont_ upsample_ resize_to_ reshape_to_ dropout_ dropout_rate_ multiply_
layer_norm_ rms_norm_ bn_ affine_ max_pool_ avg_pool_ relu_ prelu_ leaky_relu_ sig_ mish_
htan_ clipped_relu_ elu_ gelu_ smelu_ silu_ softmax_ softmax_all_ add_prev_ mult_prev_
multm_prev_ resize_prev_to_tagged_ scale_ scale_prev_ concat_ l2normalize_ extract_ slice_
reorg_ transpose_ positional_encodings_ embeddings_ tril_ adaptive_computation_time_
""".split()

# their templates and dlib's generated aliases
LAYER_TEMPLATES = """
fc fc_no_bias linear linear_no_bias con cont upsample resize_to reshape_to flatten dropout
dropout_rate dropout_10 multiply layer_norm rms_norm bn_con bn_fc affine max_pool avg_pool
max_pool_everything avg_pool_everything relu prelu leaky_relu sig mish htan clipped_relu elu
gelu smelu silu softmax softmaxm softmax_all add_prev mult_prev multm_prev
resize_prev_to_tagged scale scale_prev concat2 concat3 concat4 concat5 l2normalize extract
slice reorg transpose positional_encodings embeddings tril tril_mask tril_diag
adaptive_computation_time act act4 act16
""".split() + [f"{base}{i}" for base in ("add_prev", "mult_prev", "multm_prev", "scale", "scale_prev")
               for i in range(1, 11)]

# the 20 losses of loss_abstract.h
LOSSES = """
loss_binary_hinge loss_binary_log loss_multiclass_log loss_multiclass_log_weighted
loss_multimulticlass_log loss_multibinary_log loss_mmod loss_metric loss_ranking
loss_epsilon_insensitive loss_mean_squared loss_mean_squared_multioutput
loss_binary_log_per_pixel loss_multiclass_log_per_pixel loss_multiclass_log_per_pixel_weighted
loss_mean_squared_per_pixel loss_mean_squared_per_channel_and_pixel loss_dot loss_yolo
loss_barlow_twins
""".split()

# the 9 input layers of input_abstract.h (dnnpy names; input<matrix<T>> is input[dtype])
INPUTS = """
input input_array input_array2d input_rgb_image input_rgb_image_sized input_rgb_image_pair
input_grayscale_image_pyramid input_rgb_image_pyramid input_tensor
""".split()

UTILITIES = """
count_parameters visit_layers visit_layers_backwards visit_layers_range
visit_layers_backwards_range visit_layers_until_tag visit_computational_layers
visit_computational_layers_range visit_layer_parameters visit_layer_parameter_gradients
set_all_learning_rate_multipliers set_learning_rate_multipliers_range
set_all_bn_running_stats_window_sizes disable_duplicative_biases fuse_layers net_to_xml
net_to_dot input_tensor_to_output_tensor output_tensor_to_input_tensor test_layer layer
input_layer repeat mmod_options mmod_rect rectangle pyramid_down yolo_options yolo_rect
weighted_label
""".split() + [f"tag{i}" for i in range(1, 11)] + [f"skip{i}" for i in range(1, 11)]


def test_counts_match_dlib():
    assert len(COMPUTATIONAL) == 45
    assert len(LOSSES) == 20
    assert len(INPUTS) == 9


@pytest.mark.parametrize("name", COMPUTATIONAL)
def test_computational_layer_exists(name):
    cls = getattr(dnnpy, name, None)
    assert cls is not None, f"dnnpy has no {name}"
    assert isinstance(cls, type) and issubclass(cls, computational_layer), name


@pytest.mark.parametrize("name", LAYER_TEMPLATES)
def test_layer_template_exists(name):
    t = getattr(dnnpy, name, None)
    assert t is not None, f"dnnpy has no template {name}"
    assert callable(getattr(t, "__getitem__", None)), f"{name} is not a bracket template"


@pytest.mark.parametrize("name", LOSSES)
def test_loss_exists(name):
    t = getattr(dnnpy, name, None)
    assert isinstance(t, loss_template), f"dnnpy has no loss template {name}"
    cls = getattr(dnnpy, name + "_", None)
    assert isinstance(cls, type) and issubclass(cls, loss_layer), f"dnnpy has no loss class {name}_"


@pytest.mark.parametrize("name", INPUTS)
def test_input_exists(name):
    assert getattr(dnnpy, name, None) is not None, f"dnnpy has no input layer {name}"


@pytest.mark.parametrize("name", UTILITIES)
def test_utility_exists(name):
    assert getattr(dnnpy, name, None) is not None, f"dnnpy has no {name}"


def test_every_computational_layer_has_two_test_layer_configurations():
    from test_layers import LAYERS

    counts = collections.Counter(type(case[0]()).__name__ for case in LAYERS.values())
    missing = {name: counts.get(name, 0) for name in COMPUTATIONAL if counts.get(name, 0) < 2}
    assert not missing, f"layers with fewer than two test_layer configurations: {missing}"


def test_every_exported_template_is_registered_for_parsing():
    from dnnpy.parsing import _REGISTRY, _ensure_registered

    _ensure_registered()
    for name in LAYER_TEMPLATES + LOSSES:
        t = getattr(dnnpy, name)
        if isinstance(t, layer_template):
            assert _REGISTRY.get(t.name) is t, name
