"""Visitors for normalisation and inference fusion (dlib's visitors.h):
``set_all_bn_running_stats_window_sizes``, ``disable_duplicative_biases``,
``fuse_layers`` (``copy_net_as``, dlib's converting copy ``affine_net_type net2(net)``, is in
transfer.py).

Typical inference pipeline, as in dlib::

    disable_duplicative_biases(net)     # before training: bn makes a con's bias redundant
    ... train ...
    inference = copy_net_as(net, net_type_with_affine_instead_of_bn)
    fuse_layers(inference)              # affine folded into con, relu fused into con
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..core import add_layer, computational_nodes, repeat_layer
from ..layers.affine import affine_
from ..layers.conv import con_
from ..layers.activations import relu_
from ..layers.norm import bn_, layer_norm_, rms_norm_
from ..tensor import alias_tensor
from .walk import count_parameters

__all__ = ["set_all_bn_running_stats_window_sizes", "disable_duplicative_biases", "fuse_layers"]


def _details_below(node):
    """The layer details directly under ``node``, or None when that is a tag, skip or the
    input (dlib leaves those alone). Under a ``repeat``, the top of its first copy."""
    sub = node.subnet()
    if isinstance(sub, repeat_layer):
        sub = sub.get_repeated_layer(0)
    return sub.layer_details() if isinstance(sub, add_layer) else None


def set_all_bn_running_stats_window_sizes(net, new_window_size):
    """``set_running_stats_window_size(new_window_size)`` on every ``bn_`` layer of net."""
    for node in computational_nodes(net):
        d = node.layer_details()
        if isinstance(d, bn_):
            d.set_running_stats_window_size(new_window_size)


def disable_duplicative_biases(net):
    """For every ``bn_``, ``layer_norm_`` and ``rms_norm_`` whose input is a computational
    layer (directly, or the first copy of a ``repeat``): ``disable_bias()`` on that layer and
    its bias learning-rate and weight-decay multipliers set to 0 (each where the layer has
    it). Layers on a tag, skip or the input are left alone, as in dlib."""
    for node in computational_nodes(net):
        if not isinstance(node.layer_details(), (bn_, layer_norm_, rms_norm_)):
            continue
        below = _details_below(node)
        if below is None:
            continue
        for method, args in (("disable_bias", ()), ("set_bias_learning_rate_multiplier", (0,)),
                             ("set_bias_weight_decay_multiplier", (0,))):
            f = getattr(below, method, None)
            if f is not None:
                f(*args)


def _con_under(node):
    """The ``con_`` details directly under node (an add_layer), or None."""
    sub = node.subnet()
    if isinstance(sub, add_layer) and isinstance(sub.layer_details(), con_):
        return sub.layer_details()
    return None


def _fold_affine(node):
    """An affine_ over a con_: scale each filter by gamma[n], add beta to the biases (after
    enabling them), disable the affine.

    As dlib's code does, the existing biases are NOT scaled by gamma: the fused net equals
    the original only when the con's bias is zero (e.g. disabled by
    ``disable_duplicative_biases``, the usual con/bn pairing).
    """
    aff = node.layer_details()
    conv = _con_under(node)
    if aff.is_disabled() or conv is None:
        return
    gamma, beta = aff.get_gamma(), aff.get_beta()
    nf = conv.num_filters()
    if gamma.size() != nf:
        # dlib only asserts gamma.k() == num_filters and would then read the wrong values
        # for an FC-mode affine over a multi-pixel output; refuse instead
        raise ValueError(f"fuse_layers: the affine over con has gamma{gamma.shape}; folding needs "
                         f"one value per filter ({nf})")
    if conv.bias_is_disabled():
        conv.enable_bias()
    params = conv.get_layer_params()
    per_filter = (params.size() - nf) // nf
    tt.add(1, alias_tensor(1, nf)(params, params.size() - nf), 1, beta)
    # the filters seen as one sample of nf channels: multiply_conv scales channel n by gamma[n]
    filters = alias_tensor(1, nf, per_filter)(params, 0)
    tt.multiply_conv(False, filters, filters, gamma)
    aff.disable()
    _now_newest(conv, aff)


def _fuse_relu(node):
    """relu over con, or relu over affine over con: fold the affine (if any), fuse the ReLU
    into the con and disable the relu layer."""
    relu = node.layer_details()
    if relu.is_disabled():
        return
    conv = _con_under(node)
    if conv is None:
        sub = node.subnet()
        if not (isinstance(sub, add_layer) and isinstance(sub.layer_details(), affine_)):
            return
        conv = _con_under(sub)
        if conv is None:
            return
        _fold_affine(sub)
    conv.enable_relu()
    relu.disable()
    _now_newest(conv, relu)


def _now_newest(*layers):
    """Fused layers no longer fit the old record versions a dlib file may have given them
    (con_4 has no use_relu, relu_ no disabled flag): save them in dlib's newest versions."""
    for layer in layers:
        layer._dlib_version = None


def fuse_layers(net):
    """Inference-time fusion (dlib's ``fuse_layers``), visiting layers from the top:

    * ``affine`` directly over ``con``: gamma folded into the filters, beta added to the
      biases (enabled if they were disabled), the affine disabled;
    * ``relu`` over ``con``, or over ``affine`` over ``con``: the affine folded first, then
      ``con.enable_relu()`` and the relu disabled.

    Requires: the net's parameters are allocated (run one forward pass first): ValueError
    otherwise. Disabled layers are skipped, so fusing twice changes nothing.
    """
    if count_parameters(net) == 0:
        raise ValueError("fuse_layers: the network has to be allocated before fusing the layers "
                         "(run a forward pass first)")
    for node in computational_nodes(net):
        d = node.layer_details()
        if isinstance(d, relu_):
            _fuse_relu(node)
        elif isinstance(d, affine_):
            _fold_affine(node)
