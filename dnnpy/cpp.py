"""``dnnpy.cpp_type(net)``: the dlib C++ type of a net, as a declaration that reads its file.

    print(dnnpy.cpp_declaration(net))
    # #include <dlib/dnn.h>
    # using net_type = dlib::loss_multiclass_log<dlib::fc<10,dlib::relu<...dlib::input_tensor>>>;

With the net saved in dlib's format (``dnnpy.serialize(net, "net.dat", format="dlib")``),
``net_type net; dlib::deserialize("net.dat") >> net;`` reads it in C++. A layer's settings
that dlib keeps in the object rather than the type (``leaky_relu``'s alpha, ``affine``'s mode,
``prelu``'s slope) travel in the file. Layers written with dlib's aliases where those mean the
same layer (``con<16,5,5,1,1,...>`` when the padding is dlib's default), else as
``add_layer<con_<16,5,5,1,1,2,2>,...>``. The layers covered are most of those an ONNX import
makes (convolutions, fc, linear, affine, layer and RMS norm, the activations but silu,
pooling, tags, skips, add_prev, concat, and attention's multm_prev, softmaxm, tril,
reshape_to, transpose and slice; not bn_) and the losses without constructor state; another
raises ``ValueError`` naming it.
"""

from __future__ import annotations

from .core import add_layer, add_loss_layer, add_skip_layer, add_tag_layer
from .layers.softmax import CHANNEL_WISE

__all__ = ["cpp_type", "cpp_declaration"]

_NS = "dlib::"
_PLAIN = {"relu_": "relu", "sig_": "sig", "htan_": "htan", "mish_": "mish", "elu_": "elu",
          "leaky_relu_": "leaky_relu", "prelu_": "prelu", "clipped_relu_": "clipped_relu",
          "gelu_": "gelu", "affine_": "affine", "layer_norm_": "layer_norm", "rms_norm_": "rms_norm",
          "transpose_": "transpose"}
_INPUTS = {"input_tensor": "input_tensor", "input_rgb_image": "input_rgb_image",
           "input_float32": f"input<{_NS}matrix<float>>"}
_LOSSES = ("loss_multiclass_log", "loss_binary_log", "loss_binary_hinge", "loss_mean_squared",
           "loss_mean_squared_multioutput", "loss_multiclass_log_per_pixel",
           "loss_binary_log_per_pixel", "loss_mean_squared_per_pixel")


def cpp_declaration(net, name="net_type") -> str:
    """``#include <dlib/dnn.h>`` and ``using name = <cpp_type(net)>;``."""
    return f"#include <dlib/dnn.h>\n\nusing {name} = {cpp_type(net)};\n"


def cpp_type(net) -> str:
    """The dlib C++ type of ``net`` (a net, or a net type: an instance is made)."""
    if isinstance(net, type) or not hasattr(net, "layers"):
        net = net()
    parts = []
    for i, node in enumerate(net.layers()):
        parts.append(_open(node, i))
    return "".join(p for p in parts[:-1]) + parts[-1] + ">" * (len(parts) - 1)


def _open(node, i):
    """The C++ of ``node`` up to its subnet (``dlib::relu<``), or the whole input layer."""
    if isinstance(node, add_loss_layer):
        name = type(node.loss_details()).__name__.rstrip("_")
        if name not in _LOSSES:
            raise ValueError(f"cpp_type: layer<{i}> {name}: no C++ declaration for this loss here "
                             f"(its options are constructor state)")
        return f"{_NS}{name}<"
    if isinstance(node, add_tag_layer):
        return f"{_NS}tag{node.id}<"
    if isinstance(node, add_skip_layer):
        return f"{_NS}skip{node.id}<"
    if isinstance(node, add_layer):
        return _layer(node.layer_details(), i)
    kind = type(node).__name__
    if kind not in _INPUTS:
        raise ValueError(f"cpp_type: layer<{i}> {kind}: no C++ declaration for this input layer here")
    return f"{_NS}{_INPUTS[kind]}"


def _layer(d, i):
    kind = type(d).__name__
    if kind in _PLAIN:
        return f"{_NS}{_PLAIN[kind]}<"
    if kind in ("con_", "cont_"):
        k, nr, nc = d.num_filters(), d.nr(), d.nc()
        sy, sx, py, px = d.stride_y(), d.stride_x(), d.padding_y(), d.padding_x()
        alias = kind[:-1]        # (a disabled bias is in the file: dlib's con_ serializes it)
        if d.has_default_padding():
            return f"{_NS}{alias}<{k},{nr},{nc},{sy},{sx},"
        return f"{_NS}add_layer<{_NS}{kind}<{k},{nr},{nc},{sy},{sx},{py},{px}>,"
    if kind == "fc_":
        alias = "fc" if d.get_bias_mode() == 0 else "fc_no_bias"
        return f"{_NS}{alias}<{d.get_num_outputs()},"
    if kind in ("max_pool_", "avg_pool_"):
        nr, nc = d.nr(), d.nc()
        if nr == 0 and nc == 0:
            return f"{_NS}{kind[:-1]}_everything<"
        sy, sx, py, px = d.stride_y(), d.stride_x(), d.padding_y(), d.padding_x()
        if d.has_default_padding():
            return f"{_NS}{kind[:-1]}<{nr},{nc},{sy},{sx},"
        return f"{_NS}add_layer<{_NS}{kind}<{nr},{nc},{sy},{sx},{py},{px}>,"
    if kind == "upsample_":
        if d.scale_y != d.scale_x:
            return f"{_NS}add_layer<{_NS}upsample_<{d.scale_y},{d.scale_x}>,"
        return f"{_NS}upsample<{d.scale_y},"
    if kind == "resize_to_":
        return f"{_NS}resize_to<{d.NR},{d.NC},"
    if kind == "linear_":
        alias = "linear" if d.get_bias_mode() == 0 else "linear_no_bias"
        return f"{_NS}{alias}<{d.get_num_outputs()},"
    if kind == "softmax_":
        return f"{_NS}softmax<" if d.mode == CHANNEL_WISE else f"{_NS}softmaxm<"
    if kind == "reshape_to_":
        return f"{_NS}reshape_to<{d.k_},{d.nr_},{d.nc_},"
    if kind == "slice_":
        return f"{_NS}slice<{d.offset_k},{d.offset_nr},{d.offset_nc},{d.k},{d.nr},{d.nc},"
    if kind == "tril_":
        tag = {None: "void", "zero_tag": f"{_NS}zero_tag", "neg_infinity_tag": f"{_NS}neg_infinity_tag"}[
            d.tag and d.tag.__name__]
        if d.diag == 0 and d.tag is not None:
            return f"{_NS}{'tril_mask' if d.tag.__name__ == 'neg_infinity_tag' else 'tril'}<"
        return f"{_NS}add_layer<{_NS}tril_<{d.diag},{tag},{d.num},{d.den}>,"
    if kind in ("add_prev_", "multm_prev_"):
        return f"{_NS}{kind[:-1]}{d.tag.id}<"
    if kind == "concat_" and 2 <= len(d.tags) <= 5:
        return f"{_NS}concat{len(d.tags)}<" + "".join(f"{_NS}tag{t.id}," for t in d.tags)
    raise ValueError(f"cpp_type: layer<{i}> {kind}: no C++ declaration for this layer here")
