"""dlib's C++ spellings, written in Python, mean what they mean in dlib: ``net(data,
batch_size)`` and ``net(x)`` on every loss, constructor arguments handed down the stack
(``net_type(num_fc_outputs(15))``, ``repeat_group``), the converting construction
``anet_type(net)``, ``add_layer[con_(...), SUBNET]``, subscriptable aliases, ``num_layers`` read
as a static member; and the smaller gaps of the newcomer report (helpers given None, bool
images, string labels, ``move_rect(rect, x, y)``, the linear classifier's files, file
overrides of template arguments, the evaluation hint, the wheel's metadata)."""

import importlib.metadata
import os
import sys
import warnings

import numpy as np
import pytest

import dnnpy
from dnnpy import (add_layer, add_loss_layer, add_prev1, add_skip_layer, add_tag_layer, affine,
                   avg_pool, avg_pool_everything, bn_con, con, con_, fc, fc_, input, input_rgb_image,
                   input_rgb_image_pyramid, layer, loss_metric, loss_mmod, loss_multiclass_log,
                   max_pool, max_pool_, num_con_outputs, num_fc_outputs, prelu, prelu_, pyramid_down,
                   relu, repeat, repeat_group, skip1, tag1, tag2, tag4)
from dnnpy.core import calls

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "dlib_cpp"))
import cases as dlib_cases  # noqa: E402  (the dlib_cpp suite's net per loss; nothing compiles)

LOSS_CASES = [c for c in dlib_cases.CASES.values() if c.net_type.is_loss()]
LABELLED = [c for c in LOSS_CASES if not c.random and hasattr(c.net_type().loss_details(), "to_label")]


def _same(a, b):
    """Labels equal (arrays elementwise, containers item by item, objects by their repr)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b if isinstance(a, (int, float, str)) else repr(a) == repr(b)


def _ready(case):
    """A configured net of the case and its batch, after the case's preparation (MMOD nets get
    weights that detect something)."""
    rng = np.random.default_rng(case.seed)
    net = case.new_net()
    batch = case.inputs(rng)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        net.forward(net.to_tensor(batch))
        if case.prepare is not None:
            case.prepare(net, rng)
    return net, batch


def test_the_cases_cover_every_loss():
    losses = {type(c.net_type().loss_details()).__name__ for c in LOSS_CASES}
    assert len(losses) == 20, sorted(losses)


# ----------------------------------------------------------------------------------------
# item 1: net(data, batch_size) and net(x)

@pytest.mark.parametrize("case", LABELLED, ids=lambda c: c.name)
def test_second_positional_argument_is_the_batch_size_on_every_loss(case):
    """dlib's ``net(data, batch_size)``: before, the number went to ``to_label`` (loss_mmod's
    adjust_threshold: 0 detections instead of 1; a TypeError inside to_label elsewhere)."""
    net, batch = _ready(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        by_keyword = net(batch, batch_size=1)
        positional = net(batch, 1)
    assert len(positional) == len(batch)
    assert _same(positional, by_keyword)
    extra = net._to_label_parameters()
    with pytest.raises(TypeError, match="the second argument is the batch size") as e:
        net(batch, 0.5)
    if extra:      # the old spelling is refused with the new ones
        assert "process_batch(data, batch_size, 0.5)" in str(e.value) and f"{extra[0]}=" in str(e.value)
    with pytest.raises(TypeError, match="one positional argument after the data"):
        net(batch, 1, 2)
    with pytest.raises(TypeError, match="one positional argument after the data"):
        net(batch, 1, batch_size=1)


@pytest.mark.parametrize("case", LABELLED, ids=lambda c: c.name)
def test_one_input_object_gives_its_label(case):
    """dlib's ``net(x)``: one input object (not a list) gives one label, as ``net([x])[0]``."""
    net, batch = _ready(case)
    one = batch[0]
    if not net.input_layer().is_one_input(one):
        pytest.skip(f"{net.input_layer()!r} takes {type(one).__name__} items that are not arrays")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        assert _same(net(one), net([one])[0])
        assert _same(net.process(one), net([one])[0])
        takes = net._to_label_parameters()
        if not takes:     # net(img, 4) meant dlib's net(data, batch_size): say so
            with pytest.raises(TypeError, match=r"x is ONE input object.*takes none.*net\(\[x\], 4\)"):
                net(one, 4)


def test_a_loss_without_labels_says_what_to_run():
    case = next(c for c in LOSS_CASES if c.name.startswith("barlow"))
    net, batch = _ready(case)
    with pytest.raises(TypeError, match=r"gives no labels .* net.subnet\(\)\(batch\)"):
        net(batch, 2)


def test_mmod_thresholds_go_to_process_and_keywords():
    """Where a loss takes to_label arguments, dlib passes them through ``process`` /
    ``process_batch``; one image keeps ``net(img, adjust_threshold)``."""
    case = next(c for c in LOSS_CASES if c.name.startswith("mmod"))
    net, batch = _ready(case)
    img = batch[0]
    everything = net.process_batch(batch, 2, -1e6)
    assert _same(everything, net(batch, adjust_threshold=-1e6))
    assert _same(everything[0], net.process(img, -1e6))
    assert _same(everything[0], net(img, -1e6))          # one sample: dlib's process(x, args...)
    assert len(everything[0]) > len(net(batch, 1)[0])     # 1 is the batch size, not a threshold
    assert _same(net(batch, 1), net(batch, batch_size=1, adjust_threshold=0.0))


def test_one_image_into_a_pyramid_net():
    """dnn_mmod_ex's ``net(img)``: runs as dlib's single-sample call; ``to_tensor(img)`` says to
    pass a list, as the other input layers do."""
    case = next(c for c in LOSS_CASES if isinstance(c.net_type().input_layer(), dnnpy.inputs.pyramid._input_image_pyramid))
    net, batch = _ready(case)
    img = batch[0]
    assert _same(net(img), net([img])[0])
    with pytest.raises(ValueError, match=r"got a single array of shape .* pass a list \[x\]"):
        net.to_tensor(img)


def test_one_input_into_a_net_without_a_loss():
    net = relu[fc[3, input[np.float32]]]()
    x = np.ones((4, 5), np.float32)
    np.testing.assert_array_equal(net(x), net([x]))
    assert net(x).shape == (1, 3, 1, 1)


# ----------------------------------------------------------------------------------------
# item 2: constructor arguments down the stack, repeat_group, the converting construction

def _block(N, BN, stride, SUBNET):
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


def _pres(SUBNET):     # dnn_introduction2_ex's pres
    return prelu[add_prev1[bn_con[con[8, 3, 3, 1, 1, prelu[bn_con[con[8, 3, 3, 1, 1, tag1[SUBNET]]]]]]]]


def _res(SUBNET):
    return relu[add_prev1[_block(8, bn_con, 1, tag1[SUBNET])]]


def _res_down(SUBNET):
    return relu[dnnpy.add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[_block(8, bn_con, 2, tag1[SUBNET])]]]]]


# dlib's net_type2 of dnn_introduction2_ex
NET_TYPE2 = loss_multiclass_log[fc[10, avg_pool_everything[_pres(_res(_res(_res_down(
    tag4[repeat[9, _pres, _res_down(_res(input[np.uint8]))]]))))]]]


def _prelus(net):
    details = [n.layer_details() for n in dnnpy.computational_nodes(net)]
    return [round(float(d.initial_param_value), 6) for d in details if isinstance(d, prelu_)]


def test_net_type2_with_prelu_arguments_and_repeat_group():
    """dnn_introduction2_ex: ``net_type2 pnet(prelu_(0.2), prelu_(0.25),
    repeat_group(prelu_(0.3), prelu_(0.4)))``."""
    pnet = NET_TYPE2(prelu_(0.2), prelu_(0.25), repeat_group(prelu_(0.3), prelu_(0.4)))
    assert pnet.num_layers == 131 and pnet.num_layers() == 131   # dlib's printed count
    assert _prelus(pnet) == [0.2, 0.25] + [0.3, 0.4] * 9
    assert _prelus(NET_TYPE2()) == [0.25] * 20
    assert pnet.net_type is NET_TYPE2        # prelu_'s value is no template argument


def test_num_fc_outputs_and_layer_objects_change_template_arguments():
    """``net_type net2(num_fc_outputs(15))``; the net's type then says what it holds."""
    t = loss_multiclass_log[fc[10, relu[con[8, 5, 5, 1, 1, input[np.uint8]]]]]
    for arg in (num_fc_outputs(15), fc_(15)):
        net = t(arg)
        assert layer(net, 1).layer_details().num_outputs == 15
        assert net.net_type is loss_multiclass_log[fc[15, relu[con[8, 5, 5, 1, 1, input[np.uint8]]]]]
    net = t(num_con_outputs(4))                   # skips fc: the first con takes it
    assert layer(net, 3).layer_details().num_filters() == 4 and layer(net, 1).layer_details().num_outputs == 10
    net = t(fc_(12), con_(6, 5, 5, 1, 1))         # in order, top down
    assert (layer(net, 1).layer_details().num_outputs, layer(net, 3).layer_details().num_filters()) == (12, 6)
    assert t().net_type is t


def test_arguments_no_layer_takes_are_named():
    t = loss_multiclass_log[fc[10, prelu[con[8, 5, 5, 1, 1, input[np.uint8]]]]]
    with pytest.raises(TypeError, match=r"argument 1 \(prelu_ \(initial_param_value=0.3\)\) was not taken "
                                        r"by any layer below layer<2>"):
        t(prelu_(0.2), prelu_(0.3))
    with pytest.raises(TypeError, match=r"argument 0 \(con_ .* declared with other template arguments"):
        t(con_(8, 3, 3, 1, 1))                    # a 3x3 con is not the declared 5x5 one
    assert layer(t(0.2), 2).layer_details().initial_param_value == np.float32(0.2)  # prelu_(float)
    with pytest.raises(TypeError, match="A bare value goes to the first layer whose class is built "
                                        "from such a value in dlib"):
        loss_multiclass_log[fc[10, relu[con[8, 5, 5, 1, 1, input[np.uint8]]]]](0.2)
    with pytest.raises(TypeError, match=r"repeat_group\(prelu_ \(initial_param_value=0.3\), .*\) item 2 .* was not taken"):
        NET_TYPE2(repeat_group(prelu_(0.3), prelu_(0.4), prelu_(0.5)))
    with pytest.raises(TypeError, match="The net has no fc_ layer"):
        relu[con[8, 5, 5, 1, 1, input[np.uint8]]](fc_(3))


def _trained_bn_net():
    t = loss_multiclass_log[fc[3, relu[bn_con[con[4, 3, 3, 1, 1, input[np.uint8]]]]]]
    net = t()
    x = np.random.default_rng(0).integers(0, 256, (6, 8, 8), dtype=np.uint8)
    net.compute_parameter_gradients(x, [0, 1, 2, 0, 1, 2])
    return net, x


def test_converting_construction_anet_type_net2_net():
    """dlib's ``anet_type net2(net)``: bn_con -> affine, parameters copied."""
    net, x = _trained_bn_net()
    anet_type = loss_multiclass_log[fc[3, relu[affine[con[4, 3, 3, 1, 1, input[np.uint8]]]]]]
    anet = anet_type(net)
    want = dnnpy.inference_copy(net)
    assert anet.net_type is want.net_type
    np.testing.assert_array_equal(anet.subnet()(x), want.subnet()(x))


def test_converting_construction_of_a_feature_net_from_a_subnet():
    """dnn_self_supervised_learning_ex's ``model::feats fnet(layer<5>(net))``: a new loss on
    top of a copy (before: "margin must be a number")."""
    net, x = _trained_bn_net()
    feats_type = loss_metric[affine[con[4, 3, 3, 1, 1, input[np.uint8]]]]
    fnet = feats_type(layer(net, 3))
    assert isinstance(fnet.loss_details(), dnnpy.loss_metric_)
    np.testing.assert_array_equal(fnet.subnet()(x), dnnpy.inference_copy(net).subnet().subnet().subnet()(x))
    with pytest.raises(TypeError, match=r"has a loss .* pass the part below the loss"):
        relu[fc[3, relu[affine[con[4, 3, 3, 1, 1, input[np.uint8]]]]]](net)
    with pytest.raises(TypeError, match="differ at layer<0>: relu_"):
        feats_type(layer(net, 2))
    with pytest.raises(TypeError, match="takes that net as its only argument"):
        feats_type(layer(net, 3), fc_(3))


# ----------------------------------------------------------------------------------------
# item 3: add_layer[...] and aliases in brackets

def test_add_layer_with_a_layer_object_is_the_template_type():
    """dnn_self_supervised_learning_ex: ``using conv = add_layer<con_<N,K,K,S,S,K/2,K/2>, SUBNET>``."""
    assert add_layer[con_(8, 3, 3, 1, 1, 1, 1), input_rgb_image] is con[8, 3, 3, 1, 1, input_rgb_image]
    assert add_layer[con_(8, 4, 4, 2, 2, 1, 1), input_rgb_image] is con[8, 4, 4, 2, 2, 1, 1, input_rgb_image]
    assert add_layer[max_pool_(0, 0, 1, 1), input_rgb_image] is dnnpy.max_pool_everything[input_rgb_image]
    assert add_layer[dnnpy.bn_(dnnpy.CONV_MODE), input_rgb_image] is bn_con[input_rgb_image]
    assert add_loss_layer[dnnpy.loss_metric_(), input_rgb_image] is loss_metric[input_rgb_image]
    with pytest.raises(TypeError, match=r"give a layer OBJECT, e.g. add_layer\[con_\(16, 5, 5, 1, 1\), SUBNET\]"):
        add_layer[con_, input_rgb_image]
    with pytest.raises(TypeError, match="is a loss: use add_loss_layer"):
        add_layer[dnnpy.loss_metric_(), input_rgb_image]
    class unregistered_:
        pass
    with pytest.raises(TypeError, match="is not a layer object"):
        add_layer[unregistered_(), input_rgb_image]


class _mine_(dnnpy.relu_):
    """A user's layer class, never registered (dlib's add_layer<my_layer_, SUBNET>)."""


def test_add_layer_takes_any_layer_object():
    """A user's class, or settings no template argument carries: the type's nets hold copies
    of the object; equal objects give the same type; it trains and saves in dlib's format."""
    import os
    import tempfile
    t = add_layer[_mine_(), fc[3, input[np.float32]]]
    assert t is add_layer[_mine_(), fc[3, input[np.float32]]]
    assert repr(t).startswith("add_layer[_mine_") and t.num_layers == 3
    net_type = dnnpy.loss_mean_squared[fc[1, t]]
    net, other = net_type(), net_type()
    assert type(layer(net, 2).layer_details()) is _mine_
    assert layer(net, 2).layer_details() is not layer(other, 2).layer_details()   # copies
    x = [np.random.default_rng(i).random((2, 2)).astype(np.float32) for i in range(4)]
    dnnpy.dnn_trainer(net, dnnpy.sgd()).train_one_step(x, [0.5] * 4)
    with tempfile.TemporaryDirectory() as tmp:
        dnnpy.serialize(net, os.path.join(tmp, "net.dat"))
        dnnpy.deserialize(os.path.join(tmp, "net.dat"), other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        assert net(x) == other(x)
    # settings beyond a template's arguments are kept, not refused
    d = con_(8, 3, 3, 1, 1)
    d.set_learning_rate_multiplier(0)
    held = add_layer[d, input_rgb_image]()
    assert held.layer_details().get_learning_rate_multiplier() == 0
    # a class declaring its template arguments (template_args) finds its template
    assert add_layer[dnnpy.adaptive_computation_time_(max_steps=4), input[np.float32]] \
        is dnnpy.act4[input[np.float32]]
    assert add_layer[dnnpy.adaptive_computation_time_(max_steps=5), input[np.float32]] \
        is dnnpy.adaptive_computation_time[5, input[np.float32]]
    tril = add_layer[dnnpy.tril_(), fc[4, input[np.float32]]]()
    assert type(tril.layer_details()) is dnnpy.tril_



def test_template_arguments_come_from_the_class_declaration():
    """``template_args()`` is the only source of a layer object's template arguments: every
    built-in class that takes constructor arguments declares all of them; a user's class
    declaring them finds its registered template whatever it prints; one that does not
    declare them gets a type holding copies (never a template rebuilt from guessed
    attributes)."""
    from dnnpy import templates as T
    for t in {t for t in T.registered()[0].values() if isinstance(t, T.layer_template)}:
        if (not isinstance(t.details_cls, type) or not T._parameters(t.details_cls)
                or not t.details_cls.__module__.startswith("dnnpy.")):   # other tests' classes
            continue
        held = getattr(t.details_cls, "template_args", None)
        assert callable(held), f"{t.details_cls.__name__} declares no template_args"

    class declared_(dnnpy.relu_):
        def __init__(self, width=3):
            super().__init__()
            self.w = width

        def template_args(self):
            return {"width": self.w}

        def __repr__(self):
            return "declared"          # prints nothing of its arguments

    declared = dnnpy.layer_template("declared_spellings_test", declared_)
    assert add_layer[declared_(5), input[np.float32]] is declared[5, input[np.float32]]
    assert add_layer[declared_(), input[np.float32]] is declared[input[np.float32]]   # a default

    class undeclared_(dnnpy.relu_):
        def __init__(self, width=3):
            super().__init__()
            self.width = width

    dnnpy.layer_template("undeclared_spellings_test", undeclared_)
    t = add_layer[undeclared_(5), input[np.float32]]
    assert repr(t).startswith("add_layer[") and t().layer_details().width == 5

    # tril_ with no tag is dlib's tril_diag; the fill of a tagged one takes no num/den
    assert add_layer[dnnpy.tril_(2, None, 1, 3), input[np.float32]] \
        is dnnpy.tril_diag[2, 1, 3, input[np.float32]]
    assert add_layer[dnnpy.tril_(0, dnnpy.neg_infinity_tag, 4, 5), input[np.float32]] \
        is dnnpy.tril_mask[input[np.float32]]
    assert repr(add_layer[dnnpy.leaky_relu_(0.2), input[np.float32]]) == "leaky_relu[0.2, input[float32]]"
    assert add_layer[dnnpy.reshape_to_(2, 3, 4), input[np.float32]] is dnnpy.reshape_to[2, 3, 4, input[np.float32]]
    # a whole-input filter holds nr = nc = 0 after setup too (its accessors report the size)
    net = con[4, 0, 0, 1, 1, input[np.float32]]()
    net(np.zeros((1, 5, 6), np.float32))
    assert layer(net, 0).layer_details().nr() == 5
    assert T.actual_net_type(net) is con[4, 0, 0, 1, 1, input[np.float32]]

def test_add_tag_layer_and_add_skip_layer():
    assert add_tag_layer[3, input_rgb_image] is dnnpy.tag3[input_rgb_image]
    assert add_skip_layer[tag1, input_rgb_image] is skip1[input_rgb_image]
    utag = dnnpy.tag_template("utag_spellings", 2105)
    net = relu[add_tag_layer[2105, relu[input[np.float32]]]]()
    assert layer(net, utag) is layer(net, 1)          # any spelling of the id finds it
    assert repr(add_tag_layer[2106, input_rgb_image]) == "tag2106[input_rgb_image]"
    with pytest.raises(TypeError, match="ID must be an integer >= 0"):
        add_tag_layer[tag1, input_rgb_image]


def test_an_alias_takes_brackets_as_a_template_does():
    res = dnnpy.alias(_res)
    res_down = dnnpy.alias(_res_down)
    one_style = loss_multiclass_log[fc[10, avg_pool_everything[res[res[res_down[
        repeat[2, res, res_down[res[input[np.uint8]]]]]]]]]]
    assert one_style is loss_multiclass_log[fc[10, avg_pool_everything[_res(_res(_res_down(
        repeat[2, _res, _res_down(_res(input[np.uint8]))])))]]]
    assert res(input[np.uint8]) is res[input[np.uint8]]

    @dnnpy.alias
    def block(N, SUBNET):
        return relu[con[N, 3, 3, 1, 1, SUBNET]]

    assert block[8, input[np.uint8]] is relu[con[8, 3, 3, 1, 1, input[np.uint8]]]
    assert block.__name__ == "block"


def test_num_layers_reads_as_dlib_static_member():
    t = loss_multiclass_log[fc[10, relu[con[8, 5, 5, 1, 1, input[np.uint8]]]]]
    net = t()
    assert f"{net.num_layers}" == "5" and net.num_layers() == 5 and len(net) == 5
    assert net.num_computational_layers == 3 and net.num_computational_layers() == 3
    assert t.num_layers == 5 and t.num_computational_layers == 3     # net_type::num_layers


# ----------------------------------------------------------------------------------------
# item 6: the rest of the newcomer's findings

@pytest.mark.parametrize("call", [
    dnnpy.disable_duplicative_biases, dnnpy.count_parameters, lambda n: layer(n, 1),
    lambda n: dnnpy.make_solvers(n, dnnpy.sgd()), dnnpy.input_layer, dnnpy.net_layers,
    lambda n: dnnpy.visit_layers(n, print), dnnpy.fuse_layers])
@pytest.mark.parametrize("not_a_net", [None, "net", loss_multiclass_log[fc[3, input[np.float32]]]])
def test_net_helpers_given_something_else_say_so(call, not_a_net):
    with pytest.raises(TypeError, match="expected a net"):
        call(not_a_net)


def test_net_called_with_none():
    with pytest.raises(TypeError, match="expected a batch of input objects .* got None"):
        relu[fc[3, input[np.float32]]]()(None)


def test_bool_images_and_string_labels_are_refused_with_the_fix():
    c = loss_multiclass_log[fc[3, input[np.uint8]]]()
    with pytest.raises(ValueError, match=r"bool array .*\(mask.astype\(np.uint8\) \* 255"):
        c(np.zeros((4, 16, 16), bool))
    r = dnnpy.loss_mean_squared[fc[1, input[np.float32]]]()
    x = np.ones((6, 3, 3), np.float32)
    with pytest.raises(TypeError, match=r"labels must be numbers, got strings.*float\(v\)"):
        r.compute_parameter_gradients(x, ["1"] * 6)
    assert np.isfinite(r.compute_parameter_gradients(x, [1.0] * 6))


def test_move_rect_and_translate_rect_take_x_y():
    from dnnpy.geometry import move_rect, rectangle, translate_rect
    r = rectangle(2, 3, 7, 9)
    assert move_rect(r, 10, 20) == move_rect(r, (10, 20)) == rectangle(10, 20, 15, 26)
    assert translate_rect(r, 1, -1) == translate_rect(r, (1, -1)) == rectangle(3, 2, 8, 8)
    with pytest.raises(TypeError, match=r"move_rect\(rect, x, y\)"):
        move_rect(r, 5)


def test_multiclass_linear_classifier_serializes_in_dlibs_layout(tmp_path):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, (20, 4)), rng.normal(3, 1, (20, 4))])
    y = [0] * 20 + [7] * 20
    df = dnnpy.auto_train_multiclass_linear_classifier(x, y)
    dnnpy.serialize(df, tmp_path / "df.dat")
    back = dnnpy.deserialize(tmp_path / "df.dat", dnnpy.multiclass_linear_decision_function())
    np.testing.assert_array_equal(back(x), df(x))
    np.testing.assert_array_equal(back.weights, df.weights)
    np.testing.assert_array_equal(back.b, df.b)
    # dlib's bytes: weights -K,-D then values; -b as a (K, 1) matrix; the labels
    w = dnnpy.serialization.Writer()
    w.int(-2), w.int(-4)
    [w.float64(v) for v in df.weights.reshape(-1)]
    w.int(-2), w.int(-1)
    [w.float64(-v) for v in df.b]
    w.uint(2), w.int(0), w.int(7)
    assert (tmp_path / "df.dat").read_bytes() == w.bytes()
    text = dnnpy.multiclass_linear_decision_function(df.weights, df.b, ["a", "b"])
    back = dnnpy.from_bytes(dnnpy.to_bytes(text), dnnpy.multiclass_linear_decision_function(label_type=str))
    assert list(back(x[[0, 39]])) == ["a", "b"]


def test_a_file_overriding_a_template_argument_warns_and_the_type_follows(tmp_path):
    """dlib loads a ``.dat`` with 32 fc outputs into ``fc<16>`` silently; dnnpy does too, says
    so, and ``net.net_type`` then describes the net."""
    a = loss_multiclass_log[fc[32, relu[fc[8, input[np.float32]]]]]()
    a(np.ones((2, 3, 3), np.float32))
    dnnpy.serialize(a, tmp_path / "a.dat")
    b = loss_multiclass_log[fc[16, relu[fc[8, input[np.float32]]]]]()
    with pytest.warns(dnnpy.FileOverrideWarning, match=r"layer<1> fc: num_outputs=16 declared, 32 in the file"):
        dnnpy.deserialize(tmp_path / "a.dat", b)
    assert b.net_type is a.net_type
    with warnings.catch_warnings():
        warnings.simplefilter("error", dnnpy.FileOverrideWarning)
        dnnpy.deserialize(tmp_path / "a.dat", loss_multiclass_log[fc[32, relu[fc[8, input[np.float32]]]]]())


def test_evaluating_a_training_net_hints_once(monkeypatch):
    monkeypatch.setattr(calls, "_hinted", False)
    net, x = _trained_bn_net()
    with pytest.warns(dnnpy.EvaluationWarning, match=r"inference_copy\(net\)"):
        net(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dnnpy.EvaluationWarning)
        net(x)                                          # once
        monkeypatch.setattr(calls, "_hinted", False)
        dnnpy.inference_copy(net)(x)                    # an inference net: no hint


def test_to_bytes_and_from_bytes_at_the_top_level():
    net = relu[fc[3, input[np.float32]]]()
    net(np.ones((1, 2, 2), np.float32))
    back = dnnpy.from_bytes(dnnpy.to_bytes(net), relu[fc[3, input[np.float32]]]())
    np.testing.assert_array_equal(layer(back, 1).layer_details().get_layer_params().numpy(),
                                  layer(net, 1).layer_details().get_layer_params().numpy())


def test_wheel_metadata():
    meta = importlib.metadata.metadata("dnnpy")
    assert meta["License-Expression"] == "BSL-1.0"
    assert any(u.startswith("dlib source, https://github.com/davisking/dlib") for u in meta.get_all("Project-URL"))
    assert "Typing :: Typed" in meta.get_all("Classifier")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert "Boost Software License - Version 1.0" in open(os.path.join(root, "LICENSE")).read()
    assert os.path.exists(os.path.join(os.path.dirname(dnnpy.__file__), "py.typed"))


def test_prefer_smallest_algorithms():
    """dlib's ``set_dnn_prefer_smallest_algorithms()``: cuDNN's workspace cap drops to 0 (only
    algorithms without a workspace); CPU results do not change."""
    net = relu[con[4, 3, 3, 1, 1, input[np.float32]]]()
    x = np.random.default_rng(0).standard_normal((2, 8, 8)).astype(np.float32)
    before = net(x)
    try:
        dnnpy.set_dnn_prefer_smallest_algorithms()
        assert dnnpy.dnn_prefer_smallest_algorithms()
        if not dnnpy.use_cuda():
            np.testing.assert_array_equal(net(x), before)
        pytest.importorskip("cupy")
        from dnnpy.tensor_tools.cuda import handles
        assert handles.max_workspace() == 0
        dnnpy.set_dnn_prefer_fastest_algorithms()
        assert handles.max_workspace() > 0
    finally:
        dnnpy.set_dnn_prefer_fastest_algorithms()
    assert not dnnpy.dnn_prefer_smallest_algorithms()


def test_the_docs_spellings_block_runs(capsys):
    """docs/index.md's block of dlib spellings, run as written."""
    import re
    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "index.md")).read()
    code = re.search(r"### dlib's spellings, each as a line that runs.*?```python\n(.*?)```", text, re.S).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        exec(compile(code, "docs/index.md", "exec"), {})
    assert "The pnet has" in capsys.readouterr().out


def test_tensor_compound_assignments_change_the_tensor():
    """dlib's ``t += m``, ``t -= m``, ``t *= s``, ``t /= s``; before, ``t += array`` rebound ``t`` to
    a new numpy array and left the tensor unchanged."""
    t = dnnpy.resizable_tensor(2, 3, 1, 1)
    t.fill(1)
    same = t
    t += np.full((2, 3, 1, 1), 2.0)
    t *= 2
    t -= dnnpy.resizable_tensor(np.ones((2, 3, 1, 1)))
    t /= 5
    assert t is same
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3, 1, 1)))
    with pytest.raises(TypeError, match="takes a number"):
        t *= np.ones(6)
    with pytest.raises(ValueError, match=r"the operand has shape \(5,\)"):
        t += np.ones(5)
    with pytest.raises(TypeError, match="read-only"):
        view = dnnpy.read_only_view(t)
        view += 1


def test_memcpy_between_tensors_and_alias_views():
    t = dnnpy.resizable_tensor(2, 3, 1, 1)
    t.fill(0)
    src = dnnpy.resizable_tensor(3)
    src.fill(7)
    dnnpy.memcpy(dnnpy.alias_tensor(3)(t, 3), src)          # dlib: memcpy(alias(t, 3), src)
    np.testing.assert_array_equal(t.numpy().ravel(), [0, 0, 0, 7, 7, 7])
    with pytest.raises(ValueError, match="must hold as many"):
        dnnpy.memcpy(t, src)


def test_resizable_tensor_assign_resizes_as_dlibs_operator_equals():
    """dlib's ``resizable_tensor t; t = matrix_cast<float>(m);``."""
    t = dnnpy.resizable_tensor()
    t.assign(np.arange(10.0).reshape(2, 5))
    assert t.shape == (2, 5, 1, 1) and t.numpy().ravel().tolist() == list(range(10))
    t.assign(np.zeros(10))                      # as many values: kept in the tensor's shape
    assert t.shape == (2, 5, 1, 1)


def test_integer_token_inputs():
    """dlib's ``input<matrix<unsigned long,0,1>>`` (token ids) is ``input[np.uint64]``."""
    t = loss_multiclass_log[fc[3, input[np.uint64]]]
    assert dnnpy.net_type_from_string(repr(t)) is t
    labels = t()([np.arange(6, dtype=np.uint64).reshape(6, 1)] * 2)
    assert len(labels) == 2


def test_is_same_object_sees_two_views_of_one_buffer():
    """dlib's ``&layer<skip1>(net).get_output() == &layer<tag1>(net).get_output()``."""
    net = relu[skip1[tag1[relu[input[np.float32]]]]]()
    net(np.ones((1, 2, 2), np.float32))
    a, b = layer(net, skip1).get_output(), layer(net, tag1).get_output()
    assert a is not b and dnnpy.is_same_object(a, b)
    assert not dnnpy.is_same_object(a, layer(net, 0).get_output())


def test_operation_mode():
    assert dnnpy.operation_mode.PLANE_WISE == dnnpy.tensor_tools.PLANE_WISE
    assert repr(dnnpy.softmax_(dnnpy.operation_mode.PLANE_WISE)) == repr(dnnpy.softmaxm.make_details(()))


# ----------------------------------------------------------------------------------------
# plain values as constructor arguments (dlib's disable_forwarding_constr)

def test_a_plain_value_builds_the_layer_whose_dlib_constructor_takes_it():
    """dlib's tests write ``loss_epsilon_insensitive<fc<1,input<...>>> net(0.01)`` and
    ``net_type net(all_labels)``: a details class constructible from the value takes it."""
    from dnnpy import (fc, input, layer, loss_epsilon_insensitive, loss_mean_squared,
                       loss_multimulticlass_log, prelu)
    net = loss_epsilon_insensitive[fc[1, input[np.float64]]](0.01)
    assert net.loss_details().eps == 0.01
    assert net.net_type is loss_epsilon_insensitive[fc[1, input[np.float64]]]
    labels = {"colour": ["red", "green"], "size": ["s", "m", "l"]}
    mm = loss_multimulticlass_log[fc[5, input[np.float32]]](labels)
    assert "colour" in repr(mm.loss_details()) and "size" in repr(mm.loss_details())
    # two layers could take a number: the first from the top does, the next one the next
    t = loss_epsilon_insensitive[prelu[fc[1, input[np.float32]]]]
    both = t(0.5, np.float32(0.125))
    assert both.loss_details().eps == 0.5
    assert layer(both, 1).layer_details().initial_param_value == np.float32(0.125)
    alone = prelu[fc[1, input[np.float32]]](0.3)
    assert layer(alone, 0).layer_details().initial_param_value == np.float32(0.3)


@pytest.mark.parametrize("value", [0.5, True, {"a": ["x", "y"]}])
def test_a_plain_value_no_layer_takes_is_refused_naming_it(value):
    from dnnpy import fc, input, loss_mean_squared, prelu
    net_type = loss_mean_squared[fc[1, input[np.float32]]] if value is not True else \
        loss_mean_squared[prelu[fc[1, input[np.float32]]]]      # a bool is not a number here
    tried = r"layer<1> prelu_ takes a number" if value is True else "No layer of this net takes a bare value"
    with pytest.raises(TypeError, match=r"argument 0 \(.*\) was not taken by any layer.*" + tried):
        net_type(value)
