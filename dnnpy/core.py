"""Network composition: dlib's ``add_layer``, ``add_tag_layer``, ``add_skip_layer``,
``repeat`` and ``add_loss_layer``, plus ``layer(net, i | template)``.

A net is a chain of nodes, top (output) first; every chain ends in an ``_input_node``
holding the input layer, the input tensor ``x`` and the gradient with respect to it.
Nodes share one protocol: ``forward(x)``, ``back_propagate_error(x, gradient_input=None,
zero_grads=True)``, public ``get_output()`` / ``get_gradient_input()``, and the private
getters an in-place layer uses to work on its subnet's tensors.

Gradient buffers are zero-filled lazily: a node's gradient input is marked stale by
``forward`` (and by ``back_propagate_error`` when ``zero_grads``) and zeroed at its next
access, so layers can always ADD into their subnet's gradient (dlib core.h's scheme).

In place: a layer with ``forward_inplace`` runs in place iff the node below does not
need its own output for its backward pass (``backward_needs_output``); tags, skips and the
input always need it. When in place, the layer reads and writes the subnet's output and
gradient tensors and the subnet's public getters are disabled (they would return data
the layer has overwritten).
"""

from __future__ import annotations

from .tensor import resizable_tensor, tensor
from . import tensor_tools as tt

__all__ = ["add_layer", "add_tag_layer", "add_skip_layer", "add_loss_layer", "repeat_layer",
           "layer", "input_layer"]


def _tensor_to_str(t, min_length):
    """dlib's ``tensor_to_str``: padded ``output size=(...)`` column (empty for no output)."""
    if t is None or t.size() == 0:
        return ""
    n, k, nr, nc = t.shape
    s = f"output size=(num:{n}, k:{k},".ljust(28) + f"nr:{nr},"
    s = s.ljust(36) + f"nc:{nc})"
    s = s.ljust(min_length[0])
    min_length[0] = len(s)
    return s + "\t"


class _node:
    """What every network node shares."""

    _template = None     # the bracket template that built this node (for layer(net, relu))
    net_type = None      # the NetType this node is the top of (set by templates)

    def subnet(self):
        """The node below; for the bottom layer, the input layer object (as in dlib)."""
        s = self._subnet
        return s._input_layer if isinstance(s, _input_node) else s

    def input_layer(self):
        return self._subnet.input_layer()

    def sample_expansion_factor(self) -> int:
        return self._subnet.sample_expansion_factor()

    def get_final_data_gradient(self) -> tensor:
        """Gradient of the last ``back_propagate_error`` with respect to the network input."""
        return self._subnet.get_final_data_gradient()

    def to_tensor(self, batch, data=None) -> resizable_tensor:
        """Convert a batch of input objects into a tensor (the input layer's ``to_tensor``)."""
        return self._subnet.to_tensor(batch, data)

    def __call__(self, batch) -> tensor:
        """``forward(to_tensor(batch))``."""
        return self.forward(self.to_tensor(batch))

    def set_gradient_inputs_to_zero(self):
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        self._subnet.clean()

    def update_parameters(self, solvers, learning_rate):
        """Apply one solver step to every computational layer (dlib's ``update_parameters``).

        ``solvers``: one solver per computational layer, index 0 nearest the output (see
        ``dnnpy.make_solvers``). Layers with no parameter gradient or a zero learning-rate
        multiplier are skipped. Requires ``0 < learning_rate``.
        """
        from .layers.base import get_learning_rate_multiplier
        from .visitors.walk import net_layers

        if not learning_rate > 0:
            raise ValueError(f"update_parameters: learning_rate must be > 0, got {learning_rate}")
        layers = [n for n in net_layers(self) if isinstance(n, add_layer)]
        if len(solvers) != len(layers):
            raise ValueError(f"update_parameters: the net has {len(layers)} computational layers "
                             f"but {len(solvers)} solvers were given")
        for node, solver in zip(layers, solvers):
            grad = node._params_grad
            if grad.size() != 0 and get_learning_rate_multiplier(node._details) != 0:
                step = solver(learning_rate, node._details, grad)
                params = node._details.get_layer_params()
                tt.add(1, params, 1, step)

    def get_parameter_gradient(self) -> tensor:
        return _EMPTY

    def _requires_forward_output(self):
        # tags, skips and the input: a layer above them never runs in place
        return True

    def _find(self, match):
        """The first node from here down (self included) for which ``match`` is true."""
        return self if match(self) else self._subnet._find(match)

    def num_layers(self) -> int:
        return 1 + self._subnet.num_layers()

    def num_computational_layers(self) -> int:
        return self._subnet.num_computational_layers()

    def _print(self, lines, idx, min_length):
        """dlib's ``print``: this node's line, then the nodes below it."""
        out = _tensor_to_str(self._private_get_output(), min_length)
        lines.append(f"layer<{idx}>\t{out}{self._label()}")
        self._subnet._print(lines, idx + 1, min_length)

    def __str__(self):
        lines = []
        self._print(lines, 0, [0])
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return f"<net {self.net_type!r}>" if self.net_type is not None else object.__repr__(self)


_EMPTY = resizable_tensor()


class _subnet_wrapper:
    """What a layer's ``setup/forward/backward`` see as ``sub``: the node below, with its
    private getters (an in-place layer may have disabled the public ones) at this first
    level only, as dlib's ``subnet_wrapper``."""

    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    def get_output(self) -> tensor:
        return self._node._private_get_output()

    def get_gradient_input(self) -> tensor:
        return self._node._private_get_gradient_input()

    def subnet(self):
        return self._node.subnet()

    def layer_details(self):
        return self._node.layer_details()

    def input_layer(self):
        return self._node.input_layer()

    def sample_expansion_factor(self) -> int:
        return self._node.sample_expansion_factor()

    def _find(self, match):
        return self._node._find(match)


class _input_node(_node):
    """Bottom of every chain: the input layer, the current input ``x`` and ``grad_final``."""

    def __init__(self, input_layer):
        self._input_layer = input_layer
        self._x = None
        self.grad_final = resizable_tensor()
        self._grad_stale = True
        self._sample_expansion_factor = 0
        # True under a tag: dlib's add_tag_layer on the input layer owns grad_final, and its
        # back_propagate_error does nothing, so the gradient stays readable after a backward
        # pass (layer(net, tag).get_gradient_input(), get_final_data_gradient()) and its
        # stale flag (written to files) stays false (set by add_tag_layer)
        self._tagged = False
        # a tag on repeat's input writes this as its cached_output (serialization/net.py)
        self._tag_file_output = None

    def input_layer(self):
        return self._input_layer

    def sample_expansion_factor(self) -> int:
        return self._sample_expansion_factor

    def num_layers(self) -> int:
        return 1

    def num_computational_layers(self) -> int:
        return 0

    def to_tensor(self, batch, data=None):
        data = resizable_tensor() if data is None else data
        items = list(batch) if not hasattr(batch, "shape") else batch
        count = len(items)
        self._input_layer.to_tensor(items, data)
        if count == 0 or data.num_samples() % count != 0:
            raise ValueError(f"{self._input_layer!r}.to_tensor produced {data.num_samples()} samples "
                             f"for {count} inputs; expected a positive multiple")
        self._sample_expansion_factor = data.num_samples() // count
        return data

    def forward(self, x):
        if not isinstance(x, tensor):
            raise TypeError(f"forward expects a dnnpy tensor (use net.to_tensor(batch) or net(batch)), "
                            f"got {type(x).__name__}")
        sef = self._sample_expansion_factor or 1
        if x.num_samples() % sef != 0:
            raise ValueError(f"forward: x{x.shape} has a number of samples that is not a multiple "
                             f"of the sample expansion factor {sef}")
        self._x = x
        self._grad_stale = True
        return x

    def get_output(self):
        return self._x

    _private_get_output = get_output

    def _private_get_gradient_input(self):
        if self._grad_stale or (self._x is not None and self.grad_final.shape != self._x.shape):
            self.grad_final.copy_size(self._x)
            self.grad_final.fill(0)
            self._grad_stale = False
        return self.grad_final

    get_gradient_input = _private_get_gradient_input

    def get_final_data_gradient(self):
        return self.grad_final

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        if gradient_input is not None:
            tt.add(1, self._private_get_gradient_input(), 1, gradient_input)
        if self._tagged:
            return  # dlib's tag on the input: nothing to do
        # dlib's bottom add_layer zeroes grad_final (shaped as x) at the start of every
        # backward pass, whatever zero_grads says: a layer that sends no gradient to its
        # input (embeddings_) leaves zeros of x's shape
        if self._grad_stale and self._x is not None:
            self._private_get_gradient_input()
        self._grad_stale = True

    def _disable_getters(self):
        raise AssertionError("an in-place layer never runs in place on the input")

    def set_gradient_inputs_to_zero(self):
        if not self._tagged:  # dlib's tag on the input does nothing here
            self._grad_stale = True

    def clean(self):
        self.grad_final.clear()
        self._x = None
        self._tag_file_output = None
        if not self._tagged:  # dlib's tag on the input keeps its stale flag
            self._grad_stale = True

    def _find(self, match):
        return None

    def _print(self, lines, idx, min_length):
        lines.append(f"layer<{idx}>\t{self._input_layer!r}")


class add_layer(_node):
    """One computational layer (``details``) stacked on ``subnet``."""

    def __init__(self, details, subnet):
        self._details = details
        self._subnet = subnet
        self._setup_called = False
        self._gradient_input_is_stale = True
        self._getters_disabled = False
        self._x_grad = resizable_tensor()
        self._cached_output = resizable_tensor()
        self._params_grad = resizable_tensor()
        self._wsub = _subnet_wrapper(subnet)
        self._inplace_capable = hasattr(details, "forward_inplace")
        self._needs_output = bool(getattr(details, "backward_needs_output", False))
        self._inplace = self._inplace_capable and not subnet._requires_forward_output()
        if self._inplace:
            subnet._disable_getters()

    # -- structure -----------------------------------------------------------------------
    def layer_details(self):
        return self._details

    def num_computational_layers(self) -> int:
        return 1 + self._subnet.num_computational_layers()

    def _requires_forward_output(self):
        return self._needs_output

    def _disable_getters(self):
        self._getters_disabled = True

    # -- tensors -------------------------------------------------------------------------
    def _private_get_output(self):
        return self._subnet._private_get_output() if self._inplace else self._cached_output

    def _private_get_gradient_input(self):
        if self._inplace:
            return self._subnet._private_get_gradient_input()
        if self._gradient_input_is_stale:
            self._gradient_input_is_stale = False
            self._x_grad.copy_size(self._private_get_output())
            self._x_grad.fill(0)
        return self._x_grad

    def _check_getters(self, what):
        if self._getters_disabled:
            raise RuntimeError(
                f"Accessing this layer's {what}() is disabled because an in-place layer has been "
                f"stacked on top of it ({self._details!r})")

    def get_output(self) -> tensor:
        self._check_getters("get_output")
        return self._private_get_output()

    def get_gradient_input(self) -> tensor:
        self._check_getters("get_gradient_input")
        return self._private_get_gradient_input()

    def get_parameter_gradient(self) -> tensor:
        return self._params_grad

    # -- computation ---------------------------------------------------------------------
    def forward(self, x) -> tensor:
        self._subnet.forward(x)
        if not self._setup_called:
            self._details.setup(self._wsub)
            self._setup_called = True
        if self._inplace:
            out = self._subnet._private_get_output()
            self._details.forward_inplace(out, out)
        elif self._inplace_capable:
            src = self._subnet._private_get_output()
            self._cached_output.copy_size(src)
            self._details.forward_inplace(src, self._cached_output)
        else:
            self._details.forward(self._wsub, self._cached_output)
        self._gradient_input_is_stale = True
        return self._private_get_output()

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        """Backpropagate ``gradient_input`` (default: this layer's own gradient input)
        through the whole net below, computing every layer's parameter gradient."""
        gi = self._private_get_gradient_input() if gradient_input is None else gradient_input
        d = self._details
        self._params_grad.copy_size(d.get_layer_params())
        if self._inplace_capable:
            data_grad = self._wsub.get_gradient_input()
            if self._needs_output:
                d.backward_inplace(self._private_get_output(), gi, data_grad, self._params_grad)
            else:
                d.backward_inplace(gi, data_grad, self._params_grad)
        elif self._needs_output:
            d.backward(self._private_get_output(), gi, self._wsub, self._params_grad)
        else:
            d.backward(gi, self._wsub, self._params_grad)
        self._subnet.back_propagate_error(x, zero_grads=zero_grads)
        self._gradient_input_is_stale = zero_grads

    def set_gradient_inputs_to_zero(self):
        self._gradient_input_is_stale = True
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        """Free cached outputs and gradients (outputs are recomputed by the next forward)."""
        self._x_grad.clear()
        self._cached_output.clear()
        self._params_grad.clear()
        self._gradient_input_is_stale = True
        self._subnet.clean()
        clean = getattr(self._details, "clean", None)
        if clean is not None:
            clean()

    def _label(self):
        return repr(self._details)


class _marker_node(_node):
    """Tags and skips: no layer of their own, printed as ``tagN`` / ``skipN``."""

    kind = ""

    def __init__(self, tag_id, subnet):
        self.id = int(tag_id)
        self._subnet = subnet

    def _label(self):
        return f"{self.kind}{self.id}"


class add_tag_layer(_marker_node):
    """Identity that marks a place in the net for ``layer(net, tagN)``, skips and merges."""

    kind = "tag"

    def __init__(self, tag_id, subnet):
        super().__init__(tag_id, subnet)
        if isinstance(subnet, _input_node):
            subnet._tagged = True

    def forward(self, x):
        return self._subnet.forward(x)

    def get_output(self):
        return self._subnet.get_output()

    def get_gradient_input(self):
        return self._subnet.get_gradient_input()

    def _private_get_output(self):
        return self._subnet._private_get_output()

    def _private_get_gradient_input(self):
        return self._subnet._private_get_gradient_input()

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        self._subnet.back_propagate_error(x, gradient_input, zero_grads)


class add_skip_layer(_marker_node):
    """Outputs the output of the nearest ``tag<tag_id>`` below it; its gradient input is
    that tag's gradient input."""

    kind = "skip"

    def _tagged(self):
        found = self._subnet._find(lambda n: isinstance(n, add_tag_layer) and n.id == self.id)
        if found is None:
            raise ValueError(f"skip{self.id}: there is no tag{self.id} below this layer")
        return found

    def forward(self, x):
        self._subnet.forward(x)
        return self.get_output()

    def get_output(self):
        return self._tagged().get_output()

    def get_gradient_input(self):
        return self._tagged().get_gradient_input()

    _private_get_output = get_output
    _private_get_gradient_input = get_gradient_input

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        if gradient_input is not None:
            tt.add(1, self.get_gradient_input(), 1, gradient_input)
        self._subnet.back_propagate_error(x, zero_grads=zero_grads)


class repeat_layer(_node):
    """``repeat[N, block, SUBNET]``: N copies of ``block`` stacked on ``subnet``.

    ``copies[0]`` is nearest the output. Each copy is a full net whose bottom is an input
    node fed with the output of the copy (or subnet) below it, as in dlib, so tags inside a
    block resolve within that copy.
    """

    def __init__(self, copies, subnet):
        if not copies:
            raise ValueError("repeat: the number of repetitions must be > 0")
        self.copies = list(copies)
        self._subnet = subnet

    def num_repetitions(self) -> int:
        return len(self.copies)

    def get_repeated_layer(self, i):
        return self.copies[i]

    def layers_in_each_group(self) -> int:
        return self.copies[0].num_layers() - 1

    def num_layers(self) -> int:
        return len(self.copies) * self.layers_in_each_group() + self._subnet.num_layers()

    def num_computational_layers(self) -> int:
        return (len(self.copies) * self.copies[0].num_computational_layers()
                + self._subnet.num_computational_layers())

    def to_tensor(self, batch, data=None) -> resizable_tensor:
        """The subnet's ``to_tensor``; then, as dlib's ``repeat::to_tensor`` (which runs each
        copy's ``to_tensor`` on the converted data), every copy records the net's sample
        expansion factor (written in each copy's bottom record in files)."""
        data = self._subnet.to_tensor(batch, data)
        self._set_copies_sample_expansion_factor(self._subnet.sample_expansion_factor())
        return data

    def _set_copies_sample_expansion_factor(self, sef):
        for c in self.copies:
            node = c
            while not isinstance(node, _input_node):
                if isinstance(node, repeat_layer):  # a repeat inside the repeated block
                    node._set_copies_sample_expansion_factor(sef)
                node = node._subnet
            node._sample_expansion_factor = sef

    def forward(self, x):
        out = self._subnet.forward(x)
        for block in reversed(self.copies):
            out = block.forward(out)
        return self._private_get_output()

    def get_output(self):
        return self.copies[0].get_output()

    def get_gradient_input(self):
        return self.copies[0].get_gradient_input()

    def _private_get_output(self):
        return self.copies[0]._private_get_output()

    def _private_get_gradient_input(self):
        return self.copies[0]._private_get_gradient_input()

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        copies = self.copies
        below = [c.get_output() for c in copies[1:]] + [self._subnet.get_output()]
        gi = gradient_input
        for block, block_input in zip(copies, below):
            block.back_propagate_error(block_input, gi, zero_grads)
            gi = block.get_final_data_gradient()
        self._subnet.back_propagate_error(x, gi, zero_grads)

    def _requires_forward_output(self):
        return self.copies[0]._requires_forward_output()

    def _disable_getters(self):
        self.copies[0]._disable_getters()

    def set_gradient_inputs_to_zero(self):
        for c in self.copies:
            c.set_gradient_inputs_to_zero()
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        for c in self.copies:
            c.clean()
        self._subnet.clean()

    def _find(self, match):
        for c in self.copies:
            found = c._find(match)
            if found is not None:
                return found
        return self._subnet._find(match)

    def _print(self, lines, idx, min_length):
        per = self.layers_in_each_group()
        for c in self.copies:
            sub = []
            c._print(sub, idx, min_length)
            lines.extend(sub[:-1])  # the copy's input line is internal to repeat
            idx += per
        self._subnet._print(lines, idx, min_length)

    def _layer(self, i):
        per = self.layers_in_each_group()
        if i < per * len(self.copies):
            return layer(self.copies[i // per], i % per)
        return layer(self._subnet, i - per * len(self.copies))


class add_loss_layer(_node):
    """A loss on top of a net: ``net(batch)`` gives labels, ``compute_loss(batch, labels)``
    the loss, ``compute_parameter_gradients(batch, labels)`` loss and all gradients."""

    def __init__(self, loss_details, subnet):
        self._loss = loss_details
        self._subnet = subnet
        self._wsub = _subnet_wrapper(subnet)
        self._temp = resizable_tensor()

    def loss_details(self):
        return self._loss

    def layer_details(self):
        return self._loss

    def forward(self, x):
        return self._subnet.forward(x)

    def get_output(self):
        return self._subnet.get_output()

    def _as_tensor(self, batch_or_tensor):
        if isinstance(batch_or_tensor, tensor):
            return batch_or_tensor
        return self._subnet.to_tensor(batch_or_tensor, self._temp)

    def __call__(self, batch, *args, **kwargs):
        """Labels for a batch of inputs (or for an already converted tensor)."""
        x = self._as_tensor(batch)
        self._subnet.forward(x)
        return self._loss.to_label(x, self._wsub, *args, **kwargs)

    def process(self, batch, *args, **kwargs):
        return self(batch, *args, **kwargs)

    def compute_loss(self, batch, labels=None) -> float:
        """Forward, then the loss; ASSIGNS the top layer's gradient input."""
        x = self._as_tensor(batch)
        self._subnet.forward(x)
        if labels is None:
            return float(self._loss.compute_loss_value_and_gradient(x, self._wsub))
        return float(self._loss.compute_loss_value_and_gradient(x, labels, self._wsub))

    def compute_parameter_gradients(self, batch, labels=None, zero_grads=True) -> float:
        """``compute_loss`` then backpropagation; returns the loss."""
        x = self._as_tensor(batch)
        loss = self.compute_loss(x, labels)
        self._subnet.back_propagate_error(x, zero_grads=zero_grads)
        return loss

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        self._subnet.back_propagate_error(x, gradient_input, zero_grads)

    def clean(self):
        self._temp.clear()
        self._subnet.clean()

    def _print(self, lines, idx, min_length):
        lines.append(f"layer<{idx}>\t{self._loss!r}")
        self._subnet._print(lines, idx + 1, min_length)


# ----------------------------------------------------------------------------------------

def layer(net, which, steps: int = 0):
    """dlib's ``layer<i>(net)`` and ``layer<T>(net)`` / ``layer<T, i>(net)``.

    ``which`` is an index (``layer(net, 0) is net``; the last index is the input layer)
    or a template (``tag1``, ``relu``, ...): the first layer from the top built by it,
    then ``steps`` more layers down.
    """
    if isinstance(which, int):
        return _layer_at(net, which + steps)
    found = net._find(lambda n: n._template is which)
    if found is None:
        raise ValueError(f"layer(net, {which!r}): no such layer in the net")
    return _layer_at(found, steps) if steps else found


def _layer_at(net, i):
    if i < 0:
        raise ValueError(f"layer index must be >= 0, got {i}")
    node, left = net, i
    while left > 0:
        if isinstance(node, repeat_layer):
            return node._layer(left)
        step = getattr(node, "subnet", None)  # nets, the sub a layer sees, test_layer's fake
        if step is None:
            raise ValueError(f"layer index {i} is past the input layer")
        node = step()
        left -= 1
    if isinstance(node, repeat_layer):  # dlib: layer<0> of a repeat is its first copy
        return node._layer(0)
    return node


def input_layer(net):
    """The input layer object of a net."""
    return net.input_layer()
