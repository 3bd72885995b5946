"""Transfer learning: dlib's subnet assignment ``layer<N>(net2) = layer<M>(net1)`` (e.g.
``net2.subnet().subnet() = net1.subnet().subnet()`` in dnn_introduction3: a pretrained
backbone under a new top) as ``copy_subnet(dst, src)``, and the converting copy
``copy_net_as(net, net_type)`` (dlib's ``net_type net2(net)``) built on the same walk.

dlib checks at compile time that the two subnets have the same structure: the same layer
templates with the same template arguments (``con_<16,5,5,1,1>``), or layer pairs that one
can be constructed from the other (``affine_(bn_)``, ``multiply_(dropout_)``). Here the
check runs before anything is changed and names the first layer that differs.

Which pairs convert is declared by the classes themselves, as dlib's converting constructors
are: a layer or input layer class lists in ``converts_from`` the classes its constructor
builds it from (``affine_.converts_from = (bn_,)``: ``affine_(a_bn)``), so this module
knows no layer by name and sits in ``core``, below the templates that use it for
``net_type(net)``.
"""

from __future__ import annotations

import copy

from ..tensor import resizable_tensor
from .add_layer import add_layer
from .loss_node import add_loss_layer
from .nodes import input_node, net_node, subnet_wrapper, wrapper_state
from .repeat import repeat_layer

__all__ = ["copy_subnet", "copy_net_as", "converts"]


def converts(src_cls, dst_cls) -> bool:
    """Whether a ``dst_cls`` layer (or input layer) is built from a ``src_cls`` one: the
    same class, or a class listed in ``dst_cls.converts_from`` (dlib's converting
    constructors: ``affine_(const bn_&)``, ``multiply_(const dropout_&)``, the RGB input
    layers from one another). Only the exact class of a layer counts as "the same": a
    subclass may hold other settings."""
    return src_cls is dst_cls or issubclass(src_cls, tuple(getattr(dst_cls, "converts_from", ())))


def _input_convertible(src_layer, dst_layer) -> bool:
    return converts(type(src_layer), type(dst_layer))


def _convert_details(src, dst_example):
    """A copy of details ``src`` as the class of ``dst_example``: a deep copy, or the
    converting constructor (``affine_(bn)``, ``multiply_(dropout)``)."""
    if type(src) is type(dst_example):
        return copy.deepcopy(src)
    return type(dst_example)(src)


def _signature(node):
    """``(details class, template's fixed arguments, template arguments)``: what makes the
    layer's dlib type (the arguments are None for a node not built from a net type)."""
    details = node.layer_details()
    nt = getattr(node, "net_type", None)
    fixed = getattr(getattr(nt, "template", None), "fixed", None)   # a layer template's
    if fixed is None:
        return type(details), None, None
    return type(details), tuple(sorted(fixed.items())), nt.args


def _describe(node):
    cls, _, args = _signature(node)
    if args is None:
        return cls.__name__
    name = node.net_type.template.name
    return f"{cls.__name__} ({name}[{', '.join(map(repr, args))}])" if args else \
        f"{cls.__name__} ({name})"


def _kind(node):
    if isinstance(node, input_node):
        return f"the input layer {node.input_layer()!r}"
    if isinstance(node, (add_layer, add_loss_layer)):
        return _describe(node)
    if isinstance(node, repeat_layer):
        return f"repeat[{node.num_repetitions()}, ...]"
    return node._label()       # tags and skips


def _pairs(who, src, dst, index, out):
    """Check that ``src`` and ``dst`` (nodes) have the same structure from here down and
    append the ``(src, dst)`` node pairs to copy; ``index`` is dlib's layer index of
    ``dst`` relative to the node being copied. Raises TypeError naming the first mismatch."""
    while True:
        def differ(reason=""):
            return TypeError(f"{who}: the nets differ at layer<{index}>: {_kind(src)} (source) vs "
                             f"{_kind(dst)} (destination){reason}")
        if type(src) is not type(dst):
            raise differ()
        if isinstance(dst, input_node):
            if not _input_convertible(src.input_layer(), dst.input_layer()):
                raise differ()
            out.append((src, dst))
            return
        if isinstance(dst, (add_layer, add_loss_layer)):
            (sc, sf, sa), (dc, df, da) = _signature(src), _signature(dst)
            if not converts(sc, dc):
                raise differ()
            if sc is dc and None not in (sa, da) and (sf, sa) != (df, da):
                raise differ(": different layer arguments")
            out.append((src, dst))
            index += 1
        elif isinstance(dst, repeat_layer):
            if src.num_repetitions() != dst.num_repetitions():
                raise differ(": different repeat counts")
            for a, b in zip(src.copies, dst.copies):
                _pairs(who, a, b, index, out)
                index += b.num_layers() - 1
        else:                               # tags and skips
            if getattr(src, "id", None) != getattr(dst, "id", None):
                raise differ()
            index += 1
        src, dst = src.subnet_node(), dst.subnet_node()


def _as_node(who, role, x):
    if isinstance(x, subnet_wrapper):
        x = x.node()
    if not isinstance(x, net_node):
        raise TypeError(f"{who}: the {role} must be a node of a net (net, net.subnet(), layer(net, "
                        f"i) above the input layer), got {type(x).__name__}; an input layer object "
                        f"is copied with the node above it")
    return x


def _copy_pair(src, dst):
    if isinstance(dst, input_node):
        if src is not dst:
            if type(src.input_layer()) is type(dst.input_layer()):
                dst.set_input_layer(copy.deepcopy(src.input_layer()))
                factor = src.sample_expansion_factor()
            else:                 # an RGB input converted: the means travel, the kind stays
                dst.set_input_layer(type(dst.input_layer())(src.input_layer()))
                factor = dst.sample_expansion_factor()
            # the input settings travel; the last batch and its gradient do not
            dst.set_input_state(None, resizable_tensor(), True, factor)
        return
    if isinstance(dst, add_loss_layer):
        dst.set_loss_details(_convert_details(src.loss_details(), dst.loss_details()))
        return
    state = src.wrapper_state()
    details = _convert_details(src.layer_details(), dst.layer_details())
    dst.set_layer_details(details)
    # setup state travels (the parameters are set up: a forward must not re-initialise them);
    # cached outputs and gradients belong to the source's last batch and are not copied, and
    # whether the getters are disabled depends on the layer above, which is dst's own
    dst.set_wrapper_state(wrapper_state(
        setup_called=state.setup_called, gradient_input_is_stale=True,
        getters_disabled=dst.wrapper_state().getters_disabled, x_grad=resizable_tensor(),
        cached_output=resizable_tensor(), params_grad=resizable_tensor()))


def _copy(who, dst, src):
    pairs = []
    _pairs(who, src, dst, 0, pairs)
    for s, d in pairs:            # every check passed: nothing below can fail half-way
        _copy_pair(s, d)
    return dst


def copy_subnet(dst, src):
    """dlib's ``layer<N>(net2) = layer<M>(net1)``: make the subnet ``dst`` (a node of one
    net: ``layer(net2, N)``, ``net2.subnet().subnet()``) a deep copy of ``src`` (a node of
    another), everything below it included, down to the input layer. Returns ``dst``.

    Copied, as dlib's assignment does: every layer's parameters and state (bn running
    statistics, learning-rate and weight-decay multipliers), whether it is set up, loss
    details when ``dst`` is a whole net, and the input layer (its settings: mean, size,
    pyramid). Not copied: cached outputs and gradients (run a forward), and the layers above
    ``dst``, which keep their own parameters (the new top). A layer may be converted as dlib
    converts it: ``bn_con``/``bn_fc`` into ``affine`` (running statistics folded in),
    ``dropout`` into ``multiply``, and one RGB input layer into another (``input_rgb_image_pair``
    into ``input_rgb_image``: the channel means travel).

    Requires: the same structure from ``dst`` and ``src`` down (node kinds, layer templates
    and their arguments, tag ids, repeat counts, input layer types), else TypeError naming
    the first ``layer<i>`` (counted from ``dst``) that differs, before anything is changed.
    The copy is deep: training either net afterwards does not change the other. A trainer
    already made for the destination net keeps its solvers' state; make it after the copy.
    """
    return _copy("copy_subnet", _as_node("copy_subnet", "destination", dst),
                 _as_node("copy_subnet", "source", src))


def copy_net_as(net, net_type):
    """dlib's converting copy ``net_type(net)``: a new net of ``net_type`` holding copies of
    net's layers (parameters, running statistics, multipliers, setup state), where each
    ``bn_`` may become an ``affine_`` (``affine_(bn)``: running statistics folded in) and each
    dropout a ``multiply_`` (``1 - drop_rate``). ``dnnpy.inference_copy(net)`` derives that
    target type for you.

    Requires: both nets have the same structure layer for layer (as ``copy_subnet``);
    convertible layer pairs are equal classes, bn_ -> affine_ or dropout_ -> multiply_.
    Raises TypeError naming the first ``layer<i>`` that differs.
    """
    return _copy("copy_net_as", net_type(), _as_node("copy_net_as", "source", net))
