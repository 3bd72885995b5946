"""The nodes a net is made of: ``net_node`` (what they share), ``input_node`` (the bottom:
the input layer, ``x`` and its gradient), ``add_layer`` (a computational layer),
``add_tag_layer`` / ``add_skip_layer``, ``repeat_layer``; the ``subnet_wrapper`` a layer sees
as ``sub``; and walking a net (``layer``, ``net_layers``, ``computational_nodes``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import tensor_tools as tt
from ..tensor import read_only_view, resizable_tensor, tensor
from .calls import as_gradient, as_input_tensor, blame, check_solvers, naming_layers, split

__all__ = ["net_node", "subnet_wrapper", "wrapper_state", "input_node", "add_layer",
           "add_tag_layer", "add_skip_layer", "repeat_layer", "layer", "input_layer",
           "net_layers", "computational_nodes"]


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


class net_node:
    """What every network node shares."""

    template = None      # the bracket template that built this node (for layer(net, relu))
    net_type = None      # the NetType this node is the top of (set by templates)

    # -- structure -----------------------------------------------------------------------
    def subnet(self):
        """The node below; for the bottom layer, the input layer object (as in dlib)."""
        s = self._subnet
        return s._input_layer if isinstance(s, input_node) else s

    def subnet_node(self):
        """The node directly below, ending in the ``input_node`` (unlike ``subnet()``, which
        gives the input layer object at the bottom, as dlib does)."""
        return self._subnet

    def input_layer(self):
        """The input layer object at the bottom of the net."""
        return self._subnet.input_layer()

    def sample_expansion_factor(self) -> int:
        """Samples in the input tensor per input object (set by ``to_tensor``; 0 before)."""
        return self._subnet.sample_expansion_factor()

    def num_layers(self) -> int:
        """Layers in the net, this one and the input layer included (dlib's ``num_layers``)."""
        return 1 + self._subnet.num_layers()

    def num_computational_layers(self) -> int:
        """``add_layer`` nodes in the net (dlib's ``num_computational_layers``)."""
        return self._subnet.num_computational_layers()

    def __len__(self):
        return self.num_layers()

    def __getitem__(self, i):
        """``net[i]`` is ``layer(net, i)``."""
        return layer(self, i)

    def __iter__(self):
        """The layers, top first, the input layer last (``net_layers(net)``)."""
        return iter(net_layers(self))

    def index_of(self, node):
        """``i`` such that ``layer(self, i)`` is ``node`` (a node or the input layer object),
        or None when ``node`` is not in this net."""
        return next((i for i, n in enumerate(net_layers(self)) if n is node), None)

    # -- running -------------------------------------------------------------------------
    def to_tensor(self, batch, data=None) -> resizable_tensor:
        """Convert a batch of input objects into a tensor (the input layer's ``to_tensor``)."""
        return self._subnet.to_tensor(batch, data)

    def forward(self, x) -> tensor:
        """Run the net on the input tensor ``x`` (a dnnpy tensor or a 4-D numpy array);
        returns this node's output as a ``read_only_view`` (valid until the next pass;
        ``.numpy()`` copies it)."""
        x = as_input_tensor(x, "forward")
        with naming_layers(self):
            self._forward(x)
        return read_only_view(self._private_get_output(), f"the output of {self._name()}")

    def __call__(self, batch, batch_size=None) -> np.ndarray:
        """Forward a batch of input objects (a list, or a stacked array); returns the output
        as a NEW numpy array ``(num_samples, k, nr, nc)``. With ``batch_size``, runs the
        batch in pieces of that many objects (memory stays bounded) and concatenates."""
        pieces = [batch] if batch_size is None else split(batch, batch_size)
        outs = []
        for piece in pieces:
            x = self.to_tensor(piece, getattr(self, "_batch_tensor", None))
            self._batch_tensor = x
            with naming_layers(self):
                self._forward(x)
            outs.append(self._private_get_output().numpy())
        return outs[0] if len(outs) == 1 else np.concatenate(outs, axis=0)

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        """Backpropagate ``gradient_input`` (default: this node's own gradient input, as a
        loss writes it) through the net, computing every layer's parameter gradient and the
        gradient with respect to the input. ``x`` is the tensor given to the last
        ``forward``; ``gradient_input`` a tensor or numpy array of the output's shape."""
        self._check_backward(x)
        if gradient_input is not None:
            gradient_input = as_gradient(gradient_input, self._private_get_output().shape,
                                          "back_propagate_error")
        with naming_layers(self):
            self._backward(x, gradient_input, zero_grads)

    def _check_backward(self, x):
        fed = self.input_node().get_output()
        if fed is None:
            raise RuntimeError("back_propagate_error: run forward(x) (or compute_loss) first")
        if x is not fed and getattr(x, "shape", None) != fed.shape:
            got = getattr(x, "shape", type(x).__name__)
            raise ValueError(f"back_propagate_error: x must be the input tensor of the last forward "
                             f"(shape {fed.shape}), got {got}")

    def input_node(self):
        """The ``input_node`` at the bottom of this chain."""
        return self._subnet.input_node()

    def get_final_data_gradient(self) -> tensor:
        """Gradient of the last ``back_propagate_error`` with respect to the network input
        (a ``read_only_view``, valid until the next backward pass)."""
        return self._subnet.get_final_data_gradient()

    def set_gradient_inputs_to_zero(self):
        """Mark every gradient input of the net stale (zeroed at its next use)."""
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        """Free cached outputs and gradients (outputs are recomputed by the next forward)."""
        self._subnet.clean()

    def update_parameters(self, solvers, learning_rate):
        """Apply one solver step to every computational layer (dlib's ``update_parameters``).

        ``solvers``: a list with one solver per computational layer, index 0 nearest the
        output (``dnnpy.make_solvers(net, solver)`` builds it). Layers with no parameter
        gradient or a zero learning-rate multiplier are skipped. Requires ``0 < learning_rate``.
        """
        if not learning_rate > 0:
            raise ValueError(f"update_parameters: learning_rate must be > 0, got {learning_rate}")
        nodes = computational_nodes(self)
        check_solvers(solvers, len(nodes))
        for node, solver in zip(nodes, solvers):
            grad, details = node._params_grad, node._details
            lr_mult = getattr(details, "get_learning_rate_multiplier", None)
            if grad.size() != 0 and (lr_mult is None or lr_mult() != 0):
                step = solver(learning_rate, details, grad)
                tt.add(1, details.get_layer_params(), 1, step)

    def get_parameter_gradient(self) -> tensor:
        """This layer's parameter gradient from the last backward pass (empty for nodes
        without parameters)."""
        return _EMPTY

    def _requires_forward_output(self):
        # tags, skips and the input: a layer above them never runs in place
        return True

    def _find(self, match):
        """The first node from here down (self included) for which ``match`` is true."""
        return self if match(self) else self._subnet._find(match)

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

    def _name(self):
        """A short name for messages: the layer class, or tagN/skipN."""
        return self._label()


_EMPTY = resizable_tensor()


class subnet_wrapper:
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

    def node(self):
        """The node this wrapper stands for."""
        return self._node

    def _find(self, match):
        return self._node._find(match)


@dataclass
class wrapper_state:
    """The bookkeeping dlib's files hold for an ``add_layer`` (and, for the fields that
    apply, for the input it sits on): see ``dnnpy/serialization/net.py``."""

    setup_called: bool = False
    gradient_input_is_stale: bool = True
    getters_disabled: bool = False
    x_grad: resizable_tensor = None
    cached_output: resizable_tensor = None
    params_grad: resizable_tensor = None


class input_node(net_node):
    """Bottom of every chain: the input layer, the current input ``x`` and ``grad_final``
    (the gradient with respect to ``x``)."""

    def __init__(self, input_layer):
        self._input_layer = input_layer
        self._x = None
        self.grad_final = resizable_tensor()
        self._grad_stale = True
        self._sample_expansion_factor = 0
        # True under a tag: dlib's add_tag_layer on the input layer owns grad_final, and its
        # back_propagate_error does nothing, so the gradient stays readable after a backward
        # pass (layer(net, tag).get_gradient_input(), get_final_data_gradient()) and its
        # stale flag (written to files) stays false
        self._tagged = False
        # what a tag on repeat's input writes as its cached_output (dlib keeps there what it
        # last read from a file; serialization/net.py)
        self._file_output = None

    def input_layer(self):
        return self._input_layer

    def set_input_layer(self, input_layer):
        """Replace the input layer object (copy_net_as, reading a file)."""
        self._input_layer = input_layer

    def input_node(self):
        return self

    def subnet_node(self):
        return None

    def sample_expansion_factor(self) -> int:
        return self._sample_expansion_factor

    def num_layers(self) -> int:
        return 1

    def num_computational_layers(self) -> int:
        return 0

    def is_tagged(self) -> bool:
        """Whether a tag sits directly on this input (dlib's ``add_tag_layer<ID, INPUT>``,
        which keeps its gradient across backward passes)."""
        return self._tagged

    def _mark_tagged(self):
        self._tagged = True

    def input_state(self):
        """``(x, grad_final, gradient_is_stale, sample_expansion_factor, file_output)``:
        what dlib's files hold for the bottom of a chain (``file_output``: the cached_output
        a tag on repeat's input read from a file, or None)."""
        return (self._x, self.grad_final, self._grad_stale, self._sample_expansion_factor,
                self._file_output)

    def set_input_state(self, x, grad_final, gradient_is_stale, sample_expansion_factor,
                        file_output=None):
        """Restore what ``input_state()`` returned (reading a file, copying a net)."""
        self._x = x
        self.grad_final = grad_final
        self._grad_stale = bool(gradient_is_stale)
        self._sample_expansion_factor = int(sample_expansion_factor)
        self._file_output = file_output

    def _set_sample_expansion_factor(self, sef):
        self._sample_expansion_factor = int(sef)

    def to_tensor(self, batch, data=None):
        data = resizable_tensor() if data is None else data
        items = list(batch) if not hasattr(batch, "shape") else batch
        self._input_layer.to_tensor(items, data)
        count = len(items)
        if count == 0 or data.num_samples() % count != 0:
            raise ValueError(f"{self._input_layer!r}.to_tensor produced {data.num_samples()} samples "
                             f"for {count} inputs; expected a positive multiple")
        self._sample_expansion_factor = data.num_samples() // count
        return data

    def _forward(self, x):
        if not isinstance(x, tensor):
            raise TypeError(f"forward expects a dnnpy tensor (use net.to_tensor(batch) or net(batch)), "
                            f"got {type(x).__name__}")
        sef = self._sample_expansion_factor or 1
        if x.num_samples() % sef != 0:
            raise ValueError(f"forward: x{x.shape} has a number of samples that is not a multiple "
                             f"of the sample expansion factor {sef}")
        self._x = x
        self._grad_stale = True

    def get_output(self):
        """The input tensor of the last forward (None before one)."""
        return self._x

    _private_get_output = get_output

    def _private_get_gradient_input(self):
        if self._grad_stale or (self._x is not None and self.grad_final.shape != self._x.shape):
            self.grad_final.copy_size(self._x)
            self.grad_final.fill(0)
            self._grad_stale = False
        return self.grad_final

    def get_gradient_input(self):
        """The gradient with respect to the input tensor (``grad_final``), zeroed lazily."""
        return self._private_get_gradient_input()

    def get_final_data_gradient(self):
        return read_only_view(self.grad_final, "the data gradient (get_final_data_gradient)")

    def _backward(self, x, gradient_input=None, zero_grads=True):
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
        self._file_output = None
        if not self._tagged:  # dlib's tag on the input keeps its stale flag
            self._grad_stale = True

    def _find(self, match):
        return None

    def _print(self, lines, idx, min_length):
        lines.append(f"layer<{idx}>\t{self._input_layer!r}")


class add_layer(net_node):
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
        self._wsub = subnet_wrapper(subnet)
        self._inplace_capable = hasattr(details, "forward_inplace")
        self._needs_output = bool(getattr(details, "backward_needs_output", False))
        self._inplace = self._inplace_capable and not subnet._requires_forward_output()
        if self._inplace:
            subnet._disable_getters()

    # -- structure -----------------------------------------------------------------------
    def layer_details(self):
        """The layer object (dlib's ``layer_details()``)."""
        return self._details

    def set_layer_details(self, details, setup_called=None):
        """Replace the layer object by one of the same kind (``copy_net_as``, reading files);
        ``setup_called`` says whether its parameters are already set up."""
        self._details = details
        if setup_called is not None:
            self._setup_called = bool(setup_called)

    def num_computational_layers(self) -> int:
        return 1 + self._subnet.num_computational_layers()

    def wrapper_state(self) -> wrapper_state:
        """The add_layer's own bookkeeping (what dlib writes beside the details)."""
        return wrapper_state(self._setup_called, self._gradient_input_is_stale,
                             self._getters_disabled, self._x_grad, self._cached_output,
                             self._params_grad)

    def set_wrapper_state(self, state: wrapper_state):
        """Restore what ``wrapper_state()`` returned (reading a file, copying a net)."""
        self._setup_called = bool(state.setup_called)
        self._gradient_input_is_stale = bool(state.gradient_input_is_stale)
        self._getters_disabled = bool(state.getters_disabled)
        self._x_grad = state.x_grad
        self._cached_output = state.cached_output
        self._params_grad = state.params_grad

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
        """The output of the last forward pass, as a ``read_only_view`` (valid until the next
        pass writes it; ``.numpy()`` copies)."""
        self._check_getters("get_output")
        return read_only_view(self._private_get_output(), f"the output of {self._name()}")

    def get_gradient_input(self) -> tensor:
        """The gradient with respect to this layer's output: writable, ADD into it to
        backpropagate your own gradient (as in dlib); zeroed lazily by each pass."""
        self._check_getters("get_gradient_input")
        return self._private_get_gradient_input()

    def get_parameter_gradient(self) -> tensor:
        """The gradient of the parameters from the last backward pass, as a
        ``read_only_view`` (valid until the next backward pass; ``.numpy()`` copies)."""
        return read_only_view(self._params_grad, f"the parameter gradient of {self._name()}")

    # -- computation ---------------------------------------------------------------------
    def _forward(self, x):
        self._subnet._forward(x)
        d = self._details
        phase = "setup"
        try:
            if not self._setup_called:
                d.setup(self._wsub)
                self._setup_called = True
            phase = "forward"
            if self._inplace:
                out = self._subnet._private_get_output()
                d.forward_inplace(out, out)
            elif self._inplace_capable:
                src = self._subnet._private_get_output()
                self._cached_output.copy_size(src)
                d.forward_inplace(src, self._cached_output)
            else:
                d.forward(self._wsub, self._cached_output)
        except Exception as e:
            blame(e, self, phase, self._input_shape())
            raise
        self._gradient_input_is_stale = True

    def _input_shape(self):
        try:
            return self._subnet._private_get_output().shape
        except Exception:  # noqa: BLE001 - only for the message
            return None

    def _backward(self, x, gradient_input=None, zero_grads=True):
        gi = self._private_get_gradient_input() if gradient_input is None else gradient_input
        d = self._details
        try:
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
        except Exception as e:
            blame(e, self, "backward", gi.shape)
            raise
        self._subnet._backward(x, zero_grads=zero_grads)
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

    def _name(self):
        return type(self._details).__name__


class _marker_node(net_node):
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
        if isinstance(subnet, input_node):
            subnet._mark_tagged()

    def _forward(self, x):
        self._subnet._forward(x)

    def get_output(self):
        """The output of the layer below (a tag is an identity)."""
        return self._subnet.get_output()

    def get_gradient_input(self):
        """The gradient input of the layer below."""
        return self._subnet.get_gradient_input()

    def _private_get_output(self):
        return self._subnet._private_get_output()

    def _private_get_gradient_input(self):
        return self._subnet._private_get_gradient_input()

    def _backward(self, x, gradient_input=None, zero_grads=True):
        self._subnet._backward(x, gradient_input, zero_grads)


class add_skip_layer(_marker_node):
    """Outputs the output of the nearest ``tag<tag_id>`` below it; its gradient input is
    that tag's gradient input."""

    kind = "skip"

    def is_my_tag(self, node) -> bool:
        """Whether ``node`` is the tag this skip reads (subclasses change the rule)."""
        return isinstance(node, add_tag_layer) and node.id == self.id

    def tagged_node(self):
        """The nearest node below for which ``is_my_tag`` holds."""
        found = self._subnet._find(self.is_my_tag)
        if found is None:
            raise ValueError(f"{self._label()}: there is no tag{self.id} below this layer")
        return found

    def _forward(self, x):
        self._subnet._forward(x)

    def get_output(self):
        """The output of the tag this skip reads."""
        return self.tagged_node().get_output()

    def get_gradient_input(self):
        """The gradient input of the tag this skip reads."""
        return self.tagged_node().get_gradient_input()

    def _private_get_output(self):
        return self.tagged_node()._private_get_output()

    def _private_get_gradient_input(self):
        return self.tagged_node()._private_get_gradient_input()

    def _backward(self, x, gradient_input=None, zero_grads=True):
        if gradient_input is not None:
            tt.add(1, self._private_get_gradient_input(), 1, gradient_input)
        self._subnet._backward(x, zero_grads=zero_grads)


class repeat_layer(net_node):
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
        """N of ``repeat[N, ...]``."""
        return len(self.copies)

    def get_repeated_layer(self, i):
        """Copy ``i`` of the block (0 is nearest the output), a net of its own."""
        return self.copies[i]

    def layers_in_each_group(self) -> int:
        """Layers in one copy of the block."""
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
            while not isinstance(node, input_node):
                if isinstance(node, repeat_layer):  # a repeat inside the repeated block
                    node._set_copies_sample_expansion_factor(sef)
                node = node.subnet_node()
            node._set_sample_expansion_factor(sef)

    def _forward(self, x):
        self._subnet._forward(x)
        out = self._subnet._private_get_output()
        for block in reversed(self.copies):
            block._forward(out)
            out = block._private_get_output()

    def get_output(self):
        """The output of the top copy."""
        return self.copies[0].get_output()

    def get_gradient_input(self):
        """The gradient input of the top copy."""
        return self.copies[0].get_gradient_input()

    def _private_get_output(self):
        return self.copies[0]._private_get_output()

    def _private_get_gradient_input(self):
        return self.copies[0]._private_get_gradient_input()

    def _backward(self, x, gradient_input=None, zero_grads=True):
        copies = self.copies
        below = [c._private_get_output() for c in copies[1:]] + [self._subnet._private_get_output()]
        gi = gradient_input
        for block, block_input in zip(copies, below):
            block._backward(block_input, gi, zero_grads)
            gi = block.input_node().grad_final
        self._subnet._backward(x, gi, zero_grads)

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

    def _label(self):
        return f"repeat({len(self.copies)})"

    def _layer(self, i):
        per = self.layers_in_each_group()
        if i < per * len(self.copies):
            return layer(self.copies[i // per], i % per)
        return layer(self._subnet, i - per * len(self.copies))


# ----------------------------------------------------------------------------------------
# walking a net

def net_layers(net) -> list:
    """Every layer of ``net`` in dlib's index order: ``net_layers(net)[i]`` is ``layer<i>(net)``
    (nodes, and the input layer object last). A ``repeat`` contributes the layers of its
    copies (top copy first, each without its repeat-internal input)."""
    if isinstance(net, subnet_wrapper):
        net = net.node()
    out = []
    node = net
    while True:
        if isinstance(node, repeat_layer):
            for copy in node.copies:
                out.extend(net_layers(copy)[:-1])
            node = node._subnet
        elif isinstance(node, input_node):
            out.append(node.input_layer())
            return out
        elif isinstance(node, net_node):
            out.append(node)
            node = node._subnet
        else:  # an input layer object given directly, or a test_layer/test_loss stand-in
            out.append(node)
            return out


def computational_nodes(net) -> list:
    """The ``add_layer`` nodes of ``net``, top first (the order solvers are stored in)."""
    return [n for n in net_layers(net) if isinstance(n, add_layer)]


def layer(net, which, steps: int = 0):
    """dlib's ``layer<i>(net)`` and ``layer<T>(net)`` / ``layer<T, i>(net)``.

    ``which`` is an index (``layer(net, 0) is net``; the last index is the input layer)
    or a template (``tag1``, ``relu``, ...): the first layer from the top built by it,
    then ``steps`` more layers down.
    """
    if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
        return _layer_at(net, int(which) + steps)
    found = net._find(lambda n: n.template is which)
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
            raise IndexError(f"layer index {i} is past the input layer")
        node = step()
        left -= 1
    if isinstance(node, repeat_layer):  # dlib: layer<0> of a repeat is its first copy
        return node._layer(0)
    return node


def input_layer(net):
    """The input layer object of a net."""
    return net.input_layer()
