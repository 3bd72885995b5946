"""Visitors and whole-net utilities: visit_* (dlib core.h), count_parameters, the learning
rate setters, net_to_xml / net_to_dot (visitors.h), and net.clean()."""

import io

import numpy as np

import dnnpy
import pytest

from dnnpy import (add_layer, add_loss_layer, add_prev1, add_skip_layer, add_tag_layer, con, count_parameters,
                   fc, input_tensor, layer, layer_template, loss_mean_squared_per_channel_and_pixel, skip1,
                   net_layers, net_to_dot, net_to_xml, relu, repeat, set_all_learning_rate_multipliers,
                   set_learning_rate_multipliers_range, skip3, tag1, tag2, tag3, tag4, visit_computational_layers,
                   visit_computational_layers_range, visit_layer_parameter_gradients, visit_layer_parameters,
                   visit_layers, visit_layers_backwards, visit_layers_backwards_range, visit_layers_range,
                   visit_layers_until_tag)
from dnnpy.layers.base import computational_layer

loss_mse = loss_mean_squared_per_channel_and_pixel

# layer indices:    0 loss, 1 con1x1, 2 add_prev1, 3 relu, 4 con, 5 tag1, 6 relu, 7 con, 8 tag2,
#                   9 relu, 10 con, 11 tag2, 12 skip3, 13 tag3, 14 input_tensor
BIG = loss_mse[2, con[2, 1, 1, 1, 1, add_prev1[relu[con[2, 3, 3, 1, 1, tag1[
    repeat[2, lambda s: relu[con[2, 3, 3, 1, 1, tag2[s]]], skip3[tag3[input_tensor]]]]]]]]]
KINDS = ["loss", "comp", "comp", "comp", "comp", "tag", "comp", "comp", "tag", "comp", "comp", "tag",
         "skip", "tag", "input"]


def kind(node):
    for cls, k in ((add_loss_layer, "loss"), (add_layer, "comp"), (add_tag_layer, "tag"), (add_skip_layer, "skip")):
        if isinstance(node, cls):
            return k
    return "input"


def batch(rng, n=2):
    return [rng.standard_normal((1, 2, 5, 5)).astype(np.float32) for _ in range(n)]


def test_net_layers_is_dlibs_layer_indexing():
    net = BIG()
    layers = net_layers(net)
    assert len(layers) == net.num_layers() == 15
    assert [kind(n) for n in layers] == KINDS
    for i in range(1, 15):  # layer 6 lands on the repeat: dlib's layer<6> is its first copy
        assert layers[i] is layer(net, i)
    assert layers[0] is net and layers[-1] is net.input_layer()
    # inside the repeat: layer 6 is the top of the first copy, 8 its tag, 9 the second copy
    rep = layer(net, 5).subnet()
    assert layers[6] is rep.copies[0] and layers[9] is rep.copies[1]


def test_visit_layers_two_and_one_argument_visitors():
    net = BIG()
    seen2, seen1 = [], []
    visit_layers(net, lambda i, n: seen2.append((i, kind(n))))
    visit_layers(net, lambda n: seen1.append(kind(n)))
    assert seen2 == list(enumerate(KINDS))
    assert seen1 == KINDS

    class V:
        def __init__(self):
            self.idx = []

        def __call__(self, i, node):
            self.idx.append(i)

    v = V()
    visit_layers(net, v)
    assert v.idx == list(range(15))
    back = []
    visit_layers_backwards(net, lambda i, n: back.append(i))
    assert back == list(range(14, -1, -1))


def test_visit_ranges():
    net = BIG()
    fwd, back = [], []
    visit_layers_range(net, 3, 7, lambda i, n: fwd.append(i))
    visit_layers_backwards_range(net, 3, 7, lambda i, n: back.append(i))
    assert fwd == [3, 4, 5, 6] and back == [6, 5, 4, 3]
    empty = []
    visit_layers_range(net, 15, 15, lambda i, n: empty.append(i))
    assert empty == []
    with pytest.raises(ValueError, match="visit_layers_range.*15 layers"):
        visit_layers_range(net, 2, 16, lambda n: None)
    with pytest.raises(ValueError, match="visit_layers_backwards_range"):
        visit_layers_backwards_range(net, 5, 4, lambda n: None)
    with pytest.raises(TypeError, match="callable"):
        visit_layers(net, 3)


def test_visit_layers_until_tag():
    net = BIG()
    seen = []
    visit_layers_until_tag(net, tag2, lambda n: seen.append(kind(n)))
    assert seen == KINDS[:9]  # the first tag2 is layer 8, in the top copy of the repeat
    seen.clear()
    visit_layers_until_tag(net, tag3, lambda i, n: seen.append(i))
    assert seen == list(range(14))
    with pytest.raises(ValueError, match="no tag4"):
        visit_layers_until_tag(net, tag4, lambda n: None)
    with pytest.raises(TypeError, match="tag template"):
        visit_layers_until_tag(net, 2, lambda n: None)


def test_visit_computational_layers_use_net_indices():
    net = BIG()
    seen = []
    visit_computational_layers(net, lambda i, d: seen.append((i, type(d).__name__)))
    assert seen == [(1, "con_"), (2, "add_prev_"), (3, "relu_"), (4, "con_"), (6, "relu_"), (7, "con_"),
                    (9, "relu_"), (10, "con_")]
    ranged = []
    visit_computational_layers_range(net, 4, 10, lambda d: ranged.append(type(d).__name__))
    assert ranged == ["con_", "relu_", "con_", "relu_"]


def test_parameters_gradients_and_count(rng):
    net = BIG()
    assert count_parameters(net) == 0  # nothing allocated before the first forward
    x = batch(rng)
    labels = list(rng.standard_normal((2, 2, 5, 5)).astype(np.float32))
    net.compute_parameter_gradients(x, labels)
    # con 1x1 2->2: 4+2; three con 3x3 2->2: 36+2 each
    assert count_parameters(net) == 6 + 3 * 38
    sizes, grads = [], []
    visit_layer_parameters(net, lambda j, p: sizes.append((j, p.size())))
    visit_layer_parameter_gradients(net, lambda j, g: grads.append((j, g.size(), float(np.abs(np.asarray(g)).sum()))))
    assert sizes == [(0, 6), (1, 0), (2, 0), (3, 38), (4, 0), (5, 38), (6, 0), (7, 38)]
    assert [(j, s) for j, s, _ in grads] == sizes
    assert all(total > 0 for _, s, total in grads if s)  # real gradients were computed
    # the visitor sees the very tensors the layers hold
    params = []
    visit_layer_parameters(net, params.append)
    assert params[0] is layer(net, 1).layer_details().get_layer_params()


def test_learning_rate_multipliers_follow_dlibs_implementation():
    net = BIG()
    set_all_learning_rate_multipliers(net, 0.5)
    convs = [layer(net, i).layer_details() for i in (1, 4, 7, 10)]
    assert all(d.get_learning_rate_multiplier() == 0.5 for d in convs)
    # the bias multipliers are untouched (dlib's doc says otherwise; its code does this)
    assert all(d.get_bias_learning_rate_multiplier() == 1.0 for d in convs)
    set_learning_rate_multipliers_range(net, 2, 8, 0.0)
    assert [d.get_learning_rate_multiplier() for d in convs] == [0.5, 0.0, 0.0, 0.5]
    with pytest.raises(ValueError, match="set_all_learning_rate_multipliers.*>= 0"):
        set_all_learning_rate_multipliers(net, -1)
    with pytest.raises(ValueError, match="set_learning_rate_multipliers_range"):
        set_learning_rate_multipliers_range(net, 3, 99, 1.0)


class xml_probe_(computational_layer):
    """An identity layer with a known to_xml (the test does not depend on other layers' XML)."""

    def forward_inplace(self, inp, out):
        out.assign(np.asarray(inp.host_read()))

    def backward_inplace(self, gradient_input, data_grad, params_grad):
        pass

    def __repr__(self):
        return "xml_probe"

    def to_xml(self):
        return "<xml_probe value='1.23456789'/>\n"


xml_probe = layer_template("xml_probe", xml_probe_)


def test_net_to_xml_exact_text(tmp_path):
    net = loss_mse[1, xml_probe[skip1_tag_net()]]()
    buf = io.StringIO()
    net_to_xml(net, buf)
    body = net.loss_details()
    loss_xml = body.to_xml() if hasattr(body, "to_xml") else "<loss_mean_squared_per_channel_and_pixel/>\n"
    input_xml = (net.input_layer().to_xml() if hasattr(net.input_layer(), "to_xml") else "<input_tensor/>\n")
    expected = ("<net>\n"
                f"<layer idx='0' type='loss'>\n{loss_xml}</layer>\n"
                "<layer idx='1' type='comp'>\n<xml_probe value='1.23456789'/>\n</layer>\n"
                "<layer idx='2' type='skip' id='1'/>\n"
                "<layer idx='3' type='tag' id='1'/>\n"
                "<layer idx='4' type='comp'>\n<xml_probe value='1.23456789'/>\n</layer>\n"
                f"<layer idx='5' type='input'>\n{input_xml}</layer>\n"
                "</net>\n")
    assert buf.getvalue() == expected
    path = tmp_path / "net.xml"
    net_to_xml(net, str(path))
    assert path.read_text() == expected
    with pytest.raises(TypeError, match="net_to_xml"):
        net_to_xml(net, 42)


def skip1_tag_net():
    return skip1[tag1[xml_probe[input_tensor]]]


def dot(net):
    buf = io.StringIO()
    net_to_dot(net, buf)
    return buf.getvalue()


def node(i, label):
    return f'{i} [shape=record, label="{{layer|{{{i}}}}} | {label}"]\n'


def test_net_to_dot_residual_block():
    net = loss_mse[2, con[2, 1, 1, 1, 1, add_prev1[relu[con[2, 3, 3, 1, 1, tag1[input_tensor]]]]]]()
    expected = ("digraph G {\nrankdir = BT\n"
                + node(6, "input")
                + node(4, "con | {filters|{2}} | {size|{3,3}} | {pad|{1,1}}") + "6 -> 4\n"
                + node(3, "relu") + "4 -> 3\n"
                + node(2, "add") + "6 -> 2\n3 -> 2\n"
                + node(1, "con | {filters|{2}} | {size|{1,1}}") + "2 -> 1\n"
                + node(0, "loss") + "1 -> 0\n"
                + "}")
    assert dot(net) == expected


def test_net_to_dot_quirks(tmp_path):
    # consecutive tags point past the whole run; a skip jumps back to its tag's layer;
    # an unknown layer gets dlib's unterminated "unhandled layer" label
    net = fc[3, xml_probe[skip1[tag2[tag1[con[2, 2, 2, 2, 2, input_tensor]]]]]]()
    expected = ("digraph G {\nrankdir = BT\n"
                + node(6, "input")
                + node(5, "con | {filters|{2}} | {size|{2,2}} | {stride|{2,2}}") + "6 -> 5\n"
                + node(1, "unhandled layer")[:-3] + "5 -> 1\n"
                + node(0, "fc | { outputs |{3}}") + "1 -> 0\n"
                + "}")
    assert dot(net) == expected
    path = tmp_path / "g.dot"
    net_to_dot(net, path)
    assert path.read_text() == expected


def test_net_to_dot_consecutive_tag_run_counts():
    # tags at 1 and 2 (consecutive): when tag1 is visited the run is [1, 2], so it maps to
    # 1+1+1 = 3, the con below both tags (not layer 2, the tag2 node, which is not drawn)
    net = add_prev1[tag1[tag2[con[2, 1, 1, 1, 1, input_tensor]]]]()
    text = dot(net)
    assert text[text.index("0 [shape"):] == node(0, "add") + "3 -> 0\n3 -> 0\n}"


def test_clean_keeps_parameters_and_reproduces_outputs(rng):
    net = BIG()
    x = batch(rng)
    labels = list(rng.standard_normal((2, 2, 5, 5)).astype(np.float32))
    loss = net.compute_parameter_gradients(x, labels)
    out = np.array(net.subnet().get_output())
    params = []
    visit_layer_parameters(net, lambda p: params.append(np.array(p)))
    net.clean()
    # cached outputs and gradients are gone, parameters are not
    assert layer(net, 1).get_output().size() == 0
    assert all(layer(net, i).get_parameter_gradient().size() == 0 for i in (1, 4, 7, 10))
    assert layer(net, 4)._private_get_output().size() == 0  # relu above runs in place
    after = []
    visit_layer_parameters(net, lambda p: after.append(np.array(p)))
    assert all(np.array_equal(a, b) for a, b in zip(params, after))
    assert net.compute_parameter_gradients(x, labels) == pytest.approx(loss, rel=1e-6)
    np.testing.assert_array_equal(np.array(net.subnet().get_output()), out)


def test_visitors_accept_the_sub_a_layer_sees(rng):
    net = BIG()
    sub_layers = net_layers(net._wsub)
    assert len(sub_layers) == 14
    assert all(a is b for a, b in zip(sub_layers, net_layers(net)[1:]))


def test_net_to_dot_layer_fields():
    """Every field dlib's visitor prints, on layers of many kinds (checked by hand against
    visitors.h): pads only when non-zero, strides only when not 1, concat draws no edge from the
    layer below it, resize_prev_to_tagged a dashed edge to its tag."""
    from dnnpy import (avg_pool, bn_con, concat2, extract, leaky_relu, linear, max_pool, reorg,
                       reshape_to, resize_prev_to_tagged, resize_to, smelu, softmax, upsample)
    inner = tag3[resize_prev_to_tagged[tag1, upsample[2, avg_pool[2, 2, 2, 2, max_pool[3, 3, 1, 1, bn_con[softmax[
        resize_to[4, 4, tag2[tag1[con[4, 3, 3, 1, 1, input_tensor]]]]]]]]]]]
    net = fc[3, linear[4, reshape_to[-1, 2, -1, leaky_relu[smelu[reorg[2, 2, extract[0, 4, 2, 2, concat2[
        tag1, tag2, inner]]]]]]]]()
    expected = "digraph G {\nrankdir = BT\n" + "".join(line + "\n" for line in [
        '19 [shape=record, label="{layer|{19}} | input"]',
        '18 [shape=record, label="{layer|{18}} | con | {filters|{4}} | {size|{3,3}} | {pad|{1,1}}"]',
        '19 -> 18',
        '15 [shape=record, label="{layer|{15}} | resize_to | {size|{4,4}}"]',
        '18 -> 15',
        '14 [shape=record, label="{layer|{14}} | softmax"]',
        '15 -> 14',
        '13 [shape=record, label="{layer|{13}} | batch_norm"]',
        '14 -> 13',
        '12 [shape=record, label="{layer|{12}} | max_pool | {size|{3,3}} | {pad|{1,1}}"]',
        '13 -> 12',
        '11 [shape=record, label="{layer|{11}} | avg_pool | {size|{2,2}} | {stride|{2,2}}"]',
        '12 -> 11',
        '10 [shape=record, label="{layer|{10}} | upsample | {scale|{2,2}}"]',
        '11 -> 10',
        '9 [shape=record, label="{layer|{9}} | resize_as"]',
        '9 -> 18[style=dashed]',
        '10 -> 9',
        '7 [shape=record, label="{layer|{7}} | concat"]',
        '18 -> 7',
        '18 -> 7',
        '6 [shape=record, label="{layer|{6}} | extract | {offset|{0}} | {k|{4}} | {nr|{2}} | {nc|{2}}"]',
        '7 -> 6',
        '5 [shape=record, label="{layer|{5}} | reorg | {stride|{2,2}}"]',
        '6 -> 5',
        '4 [shape=record, label="{layer|{4}} | smelu | { beta |{1}}"]',
        '5 -> 4',
        '3 [shape=record, label="{layer|{3}} | leaky_relu | { alpha |{0.01}}"]',
        '4 -> 3',
        '2 [shape=record, label="{layer|{2}} | reshape_to | {k|{unchanged}} | {nr|{2}} | {nc|{unchanged}}"]',
        '3 -> 2',
        '1 [shape=record, label="{layer|{1}} | linear | { outputs |{4}}"]',
        '2 -> 1',
        '0 [shape=record, label="{layer|{0}} | fc | { outputs |{3}}"]',
        '1 -> 0',
    ]) + "}"
    assert dot(net) == expected


# ----------------------------------------------------------------------------------------
# evaluation: inference_type, inference_copy, recompute_bn_running_stats

def _bn_dropout_net():
    from dnnpy import add_prev1, bn_con, bn_fc, con, dropout, dropout_10, fc, input, loss_multiclass_log, relu, repeat, tag1
    block = lambda S: relu[add_prev1[bn_con[con[4, 3, 3, 1, 1, relu[bn_con[con[4, 3, 3, 1, 1, tag1[S]]]]]]]]
    return loss_multiclass_log[fc[3, dropout_10[relu[bn_fc[dropout[0.25, fc[6, repeat[2, block,
                                                                            relu[con[4, 3, 3, 1, 1, input[np.uint8]]]]]]]]]]]


def test_inference_type_swaps_bn_and_dropout_everywhere():
    t = dnnpy.inference_type(_bn_dropout_net())
    text = repr(t)
    assert "bn_" not in text and "dropout" not in text
    assert text.count("affine[") == 2 + 1 and text.count("multiply[") == 2
    assert dnnpy.inference_type(t) is t


def test_inference_copy_is_deterministic_per_sample_and_leaves_the_net_alone(rng):
    net = _bn_dropout_net()()
    x = rng.integers(0, 256, (6, 6, 6), dtype=np.uint8)
    net.compute_parameter_gradients(x, [0, 1, 2, 0, 1, 2])
    before = [n.layer_details().running_means.numpy() for n in dnnpy.computational_nodes(net)
              if isinstance(n.layer_details(), dnnpy.bn_)]
    inf = dnnpy.inference_copy(net)
    out = inf.subnet()(x)
    np.testing.assert_array_equal(inf.subnet()(x), out)                       # no dropout draws
    np.testing.assert_allclose(np.concatenate([inf.subnet()(x[i:i + 1]) for i in range(6)]), out,
                               rtol=1e-5, atol=1e-6)                           # per sample
    after = [n.layer_details().running_means.numpy() for n in dnnpy.computational_nodes(net)
             if isinstance(n.layer_details(), dnnpy.bn_)]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    mult = [n.layer_details() for n in dnnpy.computational_nodes(inf) if isinstance(n.layer_details(), dnnpy.multiply_)]
    assert sorted(m.get_multiply_value() for m in mult) == [0.75, np.float32(0.9)]


def test_copy_net_as_converts_dropout_to_multiply(rng):
    from dnnpy import dropout, fc, input, loss_multiclass_log, multiply
    net = loss_multiclass_log[fc[3, dropout[0.3, fc[4, input[np.float32]]]]]()
    net(rng.standard_normal((2, 3, 3)))
    twin = dnnpy.copy_net_as(net, loss_multiclass_log[fc[3, multiply[fc[4, input[np.float32]]]]])
    assert dnnpy.layer(twin, 2).layer_details().get_multiply_value() == pytest.approx(0.7)


def test_recompute_bn_running_stats_is_the_average_of_batch_statistics(rng):
    from dnnpy import bn_fc, fc, input_tensor
    net = bn_fc[fc[3, input_tensor]]()
    data = rng.standard_normal((10, 2, 1, 1)) * 3 + 1
    net(data[:2])                                      # set up, one update
    used = dnnpy.recompute_bn_running_stats(net, data, batch_size=4)
    assert used == 3                                   # 4 + 4 + 2 samples
    w = dnnpy.layer(net, 1).layer_details()
    feats = w.get_layer_params().numpy().reshape(3, 3)    # fc: 2 weight rows + the bias row
    z = data.reshape(10, 2) @ feats[:2].astype(np.float64) + feats[2]
    means = np.mean([z[i:i + 4].mean(0) for i in range(0, 10, 4)], axis=0)
    varis = np.mean([z[i:i + 4].var(0, ddof=1) for i in range(0, 10, 4)], axis=0)
    bn = net.layer_details()
    np.testing.assert_allclose(bn.running_means.numpy().reshape(-1), means, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.running_variances.numpy().reshape(-1), varis, rtol=1e-4)
    assert bn.get_running_stats_window_size() == 100
    with pytest.raises(ValueError, match="no bn_ layer"):
        dnnpy.recompute_bn_running_stats(fc[2, input_tensor](), data)
