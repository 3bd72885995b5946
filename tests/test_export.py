"""Each layer's export, exactly as dlib writes it: ``to_xml()`` (what ``net_to_xml`` puts in a
layer's element) and ``dot_label()`` (its ``net_to_dot`` node).

The expected XML is dlib's own output: a small C++ program built against dlib's source
(layers.h ``to_xml`` friends under ``net_to_xml``'s ``precision(9)``) gave every string
below, with the parameters filled with the values ``PATTERN`` cycles through. Those values
exercise dlib's matrix printer: it right-aligns every value to the widest value printed at
the default precision 6 (``1.23457e+06``: 11 characters), then prints at precision 9, so
``9.99999975e-06`` overflows the column and ``0.100000001`` exactly fills it. C++ floats
print from their float32 value (``0.3f`` is ``0.300000012``); doubles do not. The DOT labels
are dlib's visitor_net_to_dot text (visitors.h), read from its source.
"""

import io

import numpy as np
import pytest

from dnnpy import (CONV_MODE, FC_MODE, FC_NO_BIAS, fc_no_bias, LINEAR_NO_BIAS, PLANE_WISE, add_prev_,
                   adaptive_computation_time_, affine_, avg_pool_, bn_, clipped_relu_, con_,
                   concat_, cont_, dropout_, dropout_rate_, elu_, embeddings_, extract_, fc_,
                   gelu_, htan_, input_tensor, l2normalize_, layer_norm_, leaky_relu_, linear_,
                   loss_mean_squared, max_pool_, mish_, mult_prev_, multiply_, multm_prev_, net_to_dot,
                   net_to_xml, positional_encodings_, prelu_, relu, relu_, reorg_, reshape_to_,
                   resize_prev_to_tagged_, resize_to_, rms_norm_, scale_, scale_prev_, sig_,
                   silu_, slice_, smelu_, softmax_, softmax_all_, tag1, tag2, tag3, tag4, tag5,
                   tag6, transpose_, tril_, upsample_)
from dnnpy.layers.base import computational_layer
from dnnpy.layers.transformer import neg_infinity_tag, zero_tag
from dnnpy.printing import cpp_num, xml_matrix
from dnnpy.tensor import resizable_tensor
from dnnpy.templates import layer_template

PATTERN = np.float32([0.1, -0.25, 1234567, 1e-5, 0, -3])

# dlib's rows for 1, 2, 4, 5 and 6 values in one column, and 2 or 3 rows of two
COL = ["0.100000001 \n", "      -0.25 \n", "    1234567 \n", "9.99999975e-06 \n",
       "          0 \n", "         -3 \n"]
ROWS2 = ["0.100000001       -0.25 \n", "    1234567 9.99999975e-06 \n", "          0          -3 \n"]


class _sub:
    """What ``setup`` reads of the layer below: its output."""

    def __init__(self, *shape):
        self.out = resizable_tensor(*shape)

    def get_output(self):
        return self.out


def _set_up(d, *shape, params="params"):
    """``d`` set up on an input of ``shape``, its parameters then filled from PATTERN."""
    d.setup(_sub(*shape))
    t = getattr(d, params)
    t.assign(np.resize(PATTERN, t.size()).reshape(t.shape))
    return d


def _multipliers(d, lr=None, wd=None, bias_wd=None):
    for value, setter in ((lr, "set_learning_rate_multiplier"), (wd, "set_weight_decay_multiplier"),
                          (bias_wd, "set_bias_weight_decay_multiplier")):
        if value is not None:
            getattr(d, setter)(value)
    return d


def _no_bias(d):
    d.disable_bias()
    return d


def _act():
    a = adaptive_computation_time_(4)
    a.set_halt_threshold(0.9)
    return a


# (id, a function building the layer, dlib's to_xml text, dlib's net_to_dot label or None
# when dlib's visitor has no overload for the layer: "unhandled layer")
CASES = [
    ("con", lambda: _set_up(_multipliers(con_(1, 2, 2, 2, 1), lr=0.123456789, bias_wd=0.01), 1, 1, 3, 3),
     "<con num_filters='1' nr='2' nc='2' stride_y='2' stride_x='1' padding_y='0' padding_x='1' "
     "learning_rate_mult='0.123456789' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0.01' use_bias='true' use_relu='false'>\n" + "".join(COL[:5]) + "</con>\n",
     "con | {filters|{1}} | {size|{2,2}} | {stride|{2,1}} | {pad|{0,1}}"),
    ("con_no_bias", lambda: _set_up(_no_bias(con_(1, 2, 2, 2, 1, 1, 0)), 1, 1, 3, 3),
     "<con num_filters='1' nr='2' nc='2' stride_y='2' stride_x='1' padding_y='1' padding_x='0' "
     "learning_rate_mult='1' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='false' use_relu='false'>\n" + "".join(COL[:4]) + "</con>\n",
     "con | {filters|{1}} | {size|{2,2}} | {stride|{2,1}} | {pad|{1,0}}"),
    ("con_whole_input_unset", lambda: con_(2, 0, 0, 1, 1, 0, 0),
     "<con num_filters='2' nr='0' nc='0' stride_y='1' stride_x='1' padding_y='0' padding_x='0' "
     "learning_rate_mult='1' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='true' use_relu='false'>\n</con>\n",
     "con | {filters|{2}} | {size|{0,0}}"),
    # set up, dlib prints the filter's size (nr()); its DOT label keeps the template's 0
    ("con_whole_input", lambda: _set_up(con_(2, 0, 0, 1, 1, 0, 0), 1, 1, 2, 1),
     "<con num_filters='2' nr='2' nc='1' stride_y='1' stride_x='1' padding_y='0' padding_x='0' "
     "learning_rate_mult='1' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='true' use_relu='false'>\n" + "".join(COL) + "</con>\n",
     "con | {filters|{2}} | {size|{0,0}}"),
    ("cont", lambda: _set_up(cont_(1, 2, 2, 2, 1, 1, 0), 1, 1, 2, 2),
     "<cont num_filters='1' nr='2' nc='2' stride_y='2' stride_x='1' padding_y='1' padding_x='0' "
     "learning_rate_mult='1' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='true'>\n" + "".join(COL[:5]) + "</cont>\n",
     "cont | {filters|{1}} | {size|{2,2}} | {stride|{2,1}} | {pad|{1,0}}"),
    ("fc", lambda: _set_up(_multipliers(fc_(2), wd=1e-5), 1, 2, 1, 1),
     "<fc num_outputs='2' learning_rate_mult='1' weight_decay_mult='1e-05' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='true'>\n" + "".join(ROWS2) + "</fc>\n",
     "fc | { outputs |{2}}"),
    ("fc_no_bias", lambda: _set_up(fc_(2, FC_NO_BIAS), 1, 2, 1, 1),
     "<fc_no_bias num_outputs='2' learning_rate_mult='1' weight_decay_mult='1'>\n"
     + "".join(ROWS2[:2]) + "</fc_no_bias>\n",
     "fc | { outputs |{2}}"),
    ("fc_bias_disabled", lambda: _set_up(_no_bias(fc_(2)), 1, 2, 1, 1),
     "<fc num_outputs='2' learning_rate_mult='1' weight_decay_mult='1' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='0' use_bias='false'>\n" + "".join(ROWS2[:2]) + "</fc>\n",
     "fc | { outputs |{2}}"),
    ("linear", lambda: _set_up(_multipliers(linear_(2), lr=0.1), 1, 1, 1, 2),
     "<linear num_outputs='2' bias='true' learning_rate_mult='0.1'>\n" + "".join(ROWS2) + "</linear>\n",
     "linear | { outputs |{2}}"),
    ("linear_no_bias", lambda: _set_up(linear_(2, LINEAR_NO_BIAS), 1, 1, 1, 2),
     "<linear num_outputs='2' bias='false' learning_rate_mult='1'>\n" + "".join(ROWS2[:2]) + "</linear>\n",
     "linear | { outputs |{2}}"),
    ("bn_con", lambda: _set_up(bn_(CONV_MODE), 1, 2, 1, 1),
     "<bn_con eps='0.0001' running_stats_window_size='100' learning_rate_mult='1' weight_decay_mult='0' "
     "bias_learning_rate_mult='1' bias_weight_decay_mult='1'>\n" + "".join(COL[:4]) + "</bn_con>\n",
     "batch_norm"),
    ("bn_fc", lambda: _set_up(bn_(FC_MODE), 1, 1, 1, 2),
     "<bn_fc eps='0.0001' running_stats_window_size='100' learning_rate_mult='1' weight_decay_mult='0' "
     "bias_learning_rate_mult='1' bias_weight_decay_mult='1'>\n" + "".join(COL[:4]) + "</bn_fc>\n",
     "batch_norm"),
    ("bn_con_unset", lambda: _multipliers(bn_(CONV_MODE, 100, 1e-5), lr=0.3),
     "<bn_con eps='1e-05' running_stats_window_size='100' learning_rate_mult='0.3' weight_decay_mult='0' "
     "bias_learning_rate_mult='1' bias_weight_decay_mult='1'>\n</bn_con>\n",
     "batch_norm"),
    ("layer_norm", lambda: _set_up(layer_norm_(), 1, 1, 1, 2),
     "<layer_norm eps='1e-05' learning_rate_mult='1' weight_decay_mult='0' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='1'>\n0.100000001 \n-0.25 \n</layer_norm>\n",
     "layer_norm"),
    ("layer_norm_eps", lambda: layer_norm_(1e-7),
     "<layer_norm eps='1e-07' learning_rate_mult='1' weight_decay_mult='0' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='1'>\n</layer_norm>\n",
     "layer_norm"),
    ("rms_norm", lambda: _set_up(rms_norm_(), 1, 2, 1, 1),
     "<rms_norm eps='1e-05' learning_rate_mult='1' weight_decay_mult='0' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='1'>\n0.100000001 \n-0.25 \n</rms_norm>\n",
     "rms_norm"),
    ("rms_norm_eps", lambda: rms_norm_(1e-3),
     "<rms_norm eps='0.001' learning_rate_mult='1' weight_decay_mult='0' bias_learning_rate_mult='1' "
     "bias_weight_decay_mult='1'>\n</rms_norm>\n",
     "rms_norm"),
    ("prelu", lambda: _set_up(prelu_(0.3), 1, 1, 1, 1),
     "<prelu initial_param_value='0.300000012'>\n0.100000001 \n</prelu>\n", "prelu"),
    ("prelu_unset", lambda: prelu_(),
     "<prelu initial_param_value='0.25'>\n</prelu>\n", "prelu"),
    ("affine", lambda: _set_up(affine_(), 1, 1, 1, 2),
     "<affine_fc>\n" + "".join(COL[:4]) + "</affine_fc>\n", "affine"),
    ("act", lambda: _set_up(adaptive_computation_time_(), 1, 1, 1, 1),
     "<act steps='8' dim='1' threshold='0.99000001' penalty='0.00999999978' depth_scaling='false'>\n"
     "0.100000001 -0.25 \n</act>\n", None),
    ("act_unset", _act,
     "<act steps='4' dim='0' threshold='0.899999976' penalty='0.00999999978' depth_scaling='false'>\n"
     "</act>\n", None),
    ("tril", lambda: tril_(1, None, 1, 3), "<tril diag='1' diag_value='0.333333343'/>\n",
     "tril | {diag|{1}} | {diag_value|{0.333333}}"),
    ("tril_neg_inf", lambda: tril_(0, neg_infinity_tag), "<tril diag='0' diag_value='-inf'/>\n",
     "tril | {diag|{0}} | {diag_value|{-inf}}"),
    ("tril_zero", lambda: tril_(-2, zero_tag), "<tril diag='-2' diag_value='0'/>\n",
     "tril | {diag|{-2}} | {diag_value|{0}}"),
    ("multiply", lambda: multiply_(0.7), "<multiply val='0.699999988'/>\n", "multiply"),
    ("dropout", lambda: dropout_(0.3), "<dropout drop_rate='0.300000012'/>\n", "dropout"),
    # dlib's visitor overload is for dropout_ itself: dropout_rate_ is an unhandled layer
    ("dropout_rate", lambda: dropout_rate_(20), "<dropout drop_rate='0.200000003'/>\n", None),
    ("leaky_relu", lambda: leaky_relu_(0.2), "<leaky_relu alpha='0.200000003'/>\n",
     "leaky_relu | { alpha |{0.2}}"),
    ("clipped_relu", lambda: clipped_relu_(5.5), "<clipped_relu ceiling='5.5'/>\n", "clipped_relu"),
    ("elu", lambda: elu_(0.3), "<elu alpha='0.300000012'/>\n", "elu"),
    ("smelu", lambda: smelu_(0.7), "<smelu beta='0.699999988'/>\n", "smelu | { beta |{0.7}}"),
    ("l2normalize", lambda: l2normalize_(1e-7), "<l2normalize eps='1e-07'/>\n", "l2normalize"),
    ("relu", relu_, "<relu/>\n", "relu"),
    ("embeddings", lambda: _multipliers(embeddings_(3, 2), lr=0.3),
     "<embeddings num_embeddings='3' embedding_dim='2' learning_rate_mult='0.3'>\n</embeddings>\n",
     "embeddings | {num_embeddings|{3}} | {embedding_dim|{2}}"),
    ("max_pool", lambda: max_pool_(3, 3, 1, 1, 1, 1),
     "<max_pool nr='3' nc='3' stride_y='1' stride_x='1' padding_y='1' padding_x='1'/>\n",
     "max_pool | {size|{3,3}} | {pad|{1,1}}"),
    ("avg_pool", lambda: avg_pool_(0, 0, 1, 1, 0, 0),
     "<avg_pool nr='0' nc='0' stride_y='1' stride_x='1' padding_y='0' padding_x='0'/>\n",
     "avg_pool | {size|{0,0}}"),
    ("upsample", lambda: upsample_(2, 3), "<upsample scale_y='2' scale_x='3'/>\n",
     "upsample | {scale|{2,3}}"),
    ("resize_to", lambda: resize_to_(5, 2), "<resize_to nr='5' nc='2'/>\n", "resize_to | {size|{5,2}}"),
    ("reshape_to", lambda: reshape_to_(-1, 2, 3),
     "<reshape_to k='-1' nr='2' nc='3' mode='pure_reshape'/>\n",
     "reshape_to | {k|{unchanged}} | {nr|{2}} | {nc|{3}}"),
    ("extract", lambda: extract_(1, 2, 1, 1), "<extract offset='1' k='2' nr='1' nc='1'/>\n",
     "extract | {offset|{1}} | {k|{2}} | {nr|{1}} | {nc|{1}}"),
    # dlib labels offset_nc as a second offset_nr; its visitor has no slice_ overload
    ("slice", lambda: slice_(1, 0, 1, 2, 2, 1),
     "<slice offset_k='1' offset_nr='0' offset_nr='1' k='2' nr='2' nc='1'/>\n", None),
    ("reorg", lambda: reorg_(2, 2), "<reorg row_stride='2' col_stride='2'/>\n", "reorg | {stride|{2,2}}"),
    ("transpose", transpose_, "<transpose />\n", "transpose"),
    ("positional_encodings", positional_encodings_, "<positional_encodings />\n", "positional_encodings"),
    ("softmax", lambda: softmax_(PLANE_WISE), "<softmax mode='plane_wise'/>\n", "softmax"),
    ("softmax_all", softmax_all_, "<softmax_all/>\n", "softmax_all"),
    ("sig", sig_, "<sig/>\n", "sigmoid"),
    ("mish", mish_, "<mish/>\n", "mish"),
    ("htan", htan_, "<htan/>\n", "htan"),
    ("gelu", gelu_, "<gelu/>\n", "gelu"),
    ("silu", silu_, "<silu/>\n", "silu"),
    ("add_prev", lambda: add_prev_(tag3), "<add_prev tag='3'/>\n", "add"),
    ("mult_prev", lambda: mult_prev_(tag1), "<mult_prev tag='1'/>\n", "mult"),
    ("multm_prev", lambda: multm_prev_(tag2), "<multm_prev tag='2'/>\n", "multm"),
    ("resize_prev_to_tagged", lambda: resize_prev_to_tagged_(tag4),
     "<resize_prev_to_tagged tag='4'/>\n", "resize_as"),
    ("scale", lambda: scale_(tag5), "<scale tag='5'/>\n", "scale"),
    ("scale_prev", lambda: scale_prev_(tag6), "<scale_prev tag='6'/>\n", "scale"),
    ("concat", lambda: concat_(tag1, tag3), "<concat tags='1,3'/>\n", "concat"),
]


@pytest.mark.parametrize("make,xml,dot", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_layer_exports_as_dlib(make, xml, dot):
    layer = make()
    assert layer.to_xml() == xml
    assert layer.dot_label() == dot


def test_every_dlib_layer_has_an_export_case():
    from test_catalogue import COMPUTATIONAL

    built = {type(c[1]()).__name__ for c in CASES}
    assert sorted(set(COMPUTATIONAL) - built) == []


def test_matrix_printer_pads_to_the_precision_6_width():
    # widths measured at precision 6 ("-inf", " inf": 4), values printed at precision 9
    t = resizable_tensor(2, 2)
    t.assign(np.float32([[np.inf, -np.inf], [np.nan, 0.99]]))
    assert xml_matrix(t) == " inf -inf \n nan 0.99000001 \n"
    assert xml_matrix(resizable_tensor()) == ""


def test_cpp_num_prints_as_a_cpp_stream():
    assert [cpp_num(v) for v in (1.0, 0.0, -0.0, 1e-5, 1234567.0, 100000.0, 3, True)] == \
        ["1", "0", "-0", "1e-05", "1.23457e+06", "100000", "3", "1"]
    assert cpp_num(-np.float64("nan")) == "-nan" and cpp_num(np.float64("nan")) == "nan"
    assert [cpp_num(v, 9) for v in (0.123456789012, 1e8, 1234567890.0)] == \
        ["0.123456789", "100000000", "1.23456789e+09"]


class no_export_(computational_layer):
    """A user layer that implements the math but neither to_xml nor dot_label."""

    def forward_inplace(self, inp, out):
        out.assign(inp.host_read())

    def backward_inplace(self, gradient_input, data_grad, params_grad):
        pass

    def __repr__(self):
        return "no_export"


no_export = layer_template("no_export", no_export_)


def test_a_layer_without_to_xml_is_refused_by_name():
    net = loss_mean_squared[no_export[relu[input_tensor]]]()
    with pytest.raises(NotImplementedError, match=r"net_to_xml: layer<1> \(no_export_\) has no to_xml"):
        net_to_xml(net, io.StringIO())
    # net_to_dot draws it as dlib draws any layer it does not know
    buf = io.StringIO()
    net_to_dot(net, buf)
    assert '1 [shape=record, label="{layer|{1}} | unhandled layer2 -> 1\n' in buf.getvalue()


def test_net_to_xml_writes_the_weights():
    net = loss_mean_squared[fc_no_bias[2, input_tensor]]()
    _set_up(net.subnet().layer_details(), 1, 2, 1, 1)
    buf = io.StringIO()
    net_to_xml(net, buf)
    assert buf.getvalue() == (
        "<net>\n<layer idx='0' type='loss'>\n<loss_mean_squared/>\n</layer>\n"
        "<layer idx='1' type='comp'>\n<fc_no_bias num_outputs='2' learning_rate_mult='1' "
        "weight_decay_mult='1'>\n" + "".join(ROWS2[:2]) + "</fc_no_bias>\n</layer>\n"
        "<layer idx='2' type='input'>\n<input_tensor/>\n</layer>\n</net>\n")
