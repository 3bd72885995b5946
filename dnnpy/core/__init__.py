"""Network composition (the four rules every layer follows, on one page:
docs/core_in_one_page.md): dlib's ``add_layer``, ``add_tag_layer``, ``add_skip_layer``,
``repeat`` and ``add_loss_layer``, plus ``layer(net, i | template)`` and ``net_layers``.

A net is a chain of nodes, top (output) first; every chain ends in an ``input_node``
holding the input layer, the input tensor ``x`` and the gradient with respect to it.

Two faces per node:

* the public one, for users, visitors and serialization: ``forward(x)``, ``__call__``,
  ``back_propagate_error``, the getters, ``subnet_node()`` (the node below) and, on
  ``add_layer`` and ``input_node``, ``wrapper_state()`` / ``set_wrapper_state()`` (the
  bookkeeping dlib's files hold). Public calls check their arguments, name the layer
  (``layer<i>``) in any error raised inside a layer, and hand out read-only views that
  refuse to be read once a later pass overwrote them (``tensor.read_only_view``);
* the private recursion, ``_forward`` / ``_backward``, and the private getters an
  in-place layer uses to work on its subnet's tensors.

Gradient buffers are zero-filled lazily: a node's gradient input is marked stale by a
forward (and by a backward when ``zero_grads``) and zeroed at its next access, so layers
can always ADD into their subnet's gradient (dlib core.h's scheme). A layer may instead ask
``sub.get_gradient_input_target()``: while the buffer is stale it comes back sized but not
zeroed, with ``add_to`` False, and the layer assigns every element (one write, no
zero-fill); the buffer then counts as written, so later writers add.

In place: a layer with ``forward_inplace`` runs in place iff the node below does not
need its own output for its backward pass (``backward_needs_output``); tags, skips and the
input always need it. When in place, the layer reads and writes the subnet's output and
gradient tensors and the subnet's public getters are disabled (they would return data
the layer has overwritten).

Modules:

- ``add_layer.py``: ``add_layer``, one computational layer stacked on a subnet, and the
  in-place rule
- ``calls.py``: what the public calls share: argument checks, errors renamed to name the layer
- ``loss_node.py``: ``add_loss_layer``, a loss on top of a net, with dlib's net-level calls
- ``nodes.py``: ``net_node``, ``input_node``, tags and skips, the ``subnet_wrapper`` a layer
  sees as ``sub``, and walking a net (``layer``, ``net_layers``)
- ``repeat.py``: ``repeat[N, block, SUBNET]``, N copies of a block
- ``transfer.py``: transfer learning: ``copy_subnet`` and the converting copy ``copy_net_as``
"""

from .nodes import *  # noqa: F401,F403
from .nodes import __all__ as _nodes_all
from .add_layer import add_layer, backward_inplace_takes_add_to
from .repeat import repeat_layer
from .loss_node import add_loss_layer
from .transfer import converts, copy_net_as, copy_subnet

__all__ = [*_nodes_all, "add_layer", "backward_inplace_takes_add_to", "repeat_layer", "add_loss_layer",
           "converts", "copy_net_as", "copy_subnet"]
