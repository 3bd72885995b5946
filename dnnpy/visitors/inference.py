"""Evaluating a trained net: ``inference_copy`` and ``recompute_bn_running_stats``.

A dlib net trains and evaluates with the same layers: ``bn_`` normalises with the batch's
statistics whenever a batch holds more than one sample (and updates its running statistics
while doing so), and ``dropout_`` draws a fresh mask at every forward. dlib's answer is a
second, "testing" net type with ``affine`` for ``bn_con``/``bn_fc`` and ``multiply`` for
``dropout``, filled by a converting copy (``test_net_type tnet = net;``). Here:

* ``inference_type(net_type)`` derives that testing type from the training type, so nobody
  writes the twin by hand;
* ``inference_copy(net)`` is the converting copy into it (``copy_net_as``): the bn running
  statistics are folded into affine scales and shifts, dropout becomes ``multiply`` by
  ``1 - drop_rate``. Its outputs depend on each sample alone, and evaluating changes nothing;
* ``recompute_bn_running_stats(net, data)`` replaces every bn's running statistics by their
  average over ``data`` computed with the trained weights. bn's running statistics are an
  average over the last ``running_stats_window_size`` mini-batches (100 by default), most of
  them taken while the weights were still moving, so after a short training they lag behind
  the final weights; recompute them before ``inference_copy``.
"""

from __future__ import annotations

from ..core import computational_nodes
from ..core.calls import split
from ..layers.affine import affine
from ..layers.dropout import dropout_, multiply, multiply_
from ..layers.norm import bn_
from ..templates import NetType, layer_template
from ..core.transfer import copy_net_as

__all__ = ["inference_type", "inference_copy", "recompute_bn_running_stats"]


def _details_class(template):
    # a template's details_cls may be a factory function (concat2..concat5): not a class
    cls = template.details_cls if isinstance(template, layer_template) else None
    return cls if isinstance(cls, type) else None


def inference_type(net_type: NetType) -> NetType:
    """``net_type`` with every ``bn_con``/``bn_fc`` replaced by ``affine`` and every dropout
    (``dropout``, ``dropout_rate``, ``dropout_10``) by ``multiply``, everywhere (inside
    ``repeat`` blocks too). Other layers are kept as they are."""
    if not isinstance(net_type, NetType):
        return net_type                        # an input layer class, SUBNET
    sub = inference_type(net_type.subnet)
    cls = _details_class(net_type.template)
    if cls is not None and issubclass(cls, bn_):
        return affine[sub]
    if cls is not None and issubclass(cls, dropout_):
        return multiply[sub]
    args = tuple(inference_type(a) if isinstance(a, NetType) else a for a in net_type.args)
    return net_type.template[args + (sub,)]


def inference_copy(net):
    """A copy of ``net`` for evaluation: ``copy_net_as(net, inference_type(net.net_type))``
    (bn -> affine with the running statistics folded in, dropout -> multiply). ``net`` is not
    changed. Run ``recompute_bn_running_stats(net, training_data)`` first when the net was
    trained briefly; ``dnnpy.fuse_layers`` on the copy then folds affines into convolutions."""
    net_type = getattr(net, "net_type", None)
    if net_type is None:
        raise TypeError(f"inference_copy: expected a net built from a net type (net_type()), got "
                        f"{type(net).__name__}")
    return copy_net_as(net, inference_type(net_type))


def recompute_bn_running_stats(net, data, batch_size=64):
    """Recompute every ``bn_`` layer's running mean and variance from ``data`` (input
    objects, as ``net(data)`` takes them) with the current weights.

    Runs the net forward over ``data`` in mini-batches of ``batch_size`` with each bn's
    running statistics restarted, so that they end as the plain average of the per-batch
    statistics (dlib's running update with ``decay = 1/(num_updates + 1)``; variances are
    the unbiased batch variances, as in training). While it runs, dropout layers act as
    their expectation (``multiply`` by ``1 - drop_rate``), as they will in the inference
    copy. A final batch of one sample is not counted (bn treats one sample as inference).
    Parameters are not changed; the window sizes are restored. Returns the number of
    mini-batches used.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 2:
        raise ValueError(f"recompute_bn_running_stats: batch_size must be an integer >= 2 (bn "
                         f"needs two samples for batch statistics), got {batch_size!r}")
    pieces = [p for p in split(data, batch_size) if len(p) > 1]
    if not pieces:
        raise ValueError(f"recompute_bn_running_stats: need at least 2 input objects, got {len(data)}")
    nodes = computational_nodes(net)
    bns = [node.layer_details() for node in nodes if isinstance(node.layer_details(), bn_)]
    if not bns:
        raise ValueError("recompute_bn_running_stats: the net has no bn_ layer")
    windows = [b.get_running_stats_window_size() for b in bns]
    dropouts = [(node, node.layer_details()) for node in nodes
                if isinstance(node.layer_details(), dropout_)]
    try:
        for node, d in dropouts:
            node.set_layer_details(multiply_(d))
        for b in bns:
            b.set_running_stats_window_size(len(pieces))
            b.num_updates = 0          # the next forward's decay is 1: the stats restart
        for piece in pieces:
            net.forward(net.to_tensor(piece))
    finally:
        for node, d in dropouts:
            node.set_layer_details(d)
        for b, w in zip(bns, windows):
            b.set_running_stats_window_size(w)
            b.num_updates = min(b.num_updates, w)
    return len(pieces)
