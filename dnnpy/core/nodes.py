"""What every node of a net is (``net_node``), the bottom of every chain (``input_node``:
the input layer, ``x`` and its gradient), tags and skips, the ``subnet_wrapper`` a layer
sees as ``sub``, and walking a net (``layer``, ``net_layers``, ``computational_nodes``).
Computational layers are in ``add_layer.py``, ``repeat`` in ``repeat.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import tensor_tools as tt
from ..tensor import read_only_view, resizable_tensor, tensor
from .calls import as_gradient, as_input_tensor, check_solvers, hint_if_training_net, net_lock, running, split

__all__ = ["net_node", "subnet_wrapper", "wrapper_state", "input_node", "add_tag_layer",
           "add_skip_layer", "layer", "input_layer", "net_layers", "computational_nodes",
           "layer_count", "check_net"]


class layer_count(int):
    """A layer count that reads as dlib's static member and calls as a method: ``net.num_layers``
    prints 131, and ``net.num_layers()`` is 131 too."""

    def __call__(self) -> int:
        return int(self)


def check_net(net, who=None):
    """``net`` as a node of a net (a ``subnet_wrapper`` unwrapped), or TypeError naming
    ``who`` (when given) and what was given (a failed type declaration often leaves ``None``)."""
    if isinstance(net, subnet_wrapper):
        return net.node()
    if not isinstance(net, net_node):
        hint = (" (a net TYPE: build the net first, net = net_type())"
                if type(net).__name__ == "NetType" else "")
        raise TypeError(f"{who + ': ' if who else ''}expected a net (net_type(), net.subnet() or layer(net, i)), got "
                        f"{'None' if net is None else type(net).__name__}{hint}")
    return net


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
    computational = False   # an add_layer: it has layer details with parameters and solvers
    net_type = None      # the NetType this node is the top of (set by templates)
    # dlib's add_layer<DETAILS, SUBNET> (and add_tag_layer<ID, SUBNET>, ...) as
    # add_layer[details, SUBNET]: supplied by dnnpy.templates, which sits above core
    bracket_form = None

    def __class_getitem__(cls, items):
        if cls.bracket_form is None:
            raise TypeError(f"{cls.__name__}[...] is not a template: write the net type with the "
                            f"layer templates, e.g. con[16, 5, 5, 1, 1, SUBNET]")
        return cls.bracket_form(items)

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

    @property
    def num_layers(self) -> layer_count:
        """Layers in the net, this one and the input layer included (dlib's static
        ``num_layers``: read as ``net.num_layers``, or called, ``net.num_layers()``)."""
        return layer_count(self._count_layers())

    @property
    def num_computational_layers(self) -> layer_count:
        """``add_layer`` nodes in the net (dlib's ``num_computational_layers``; read or called
        as ``num_layers``)."""
        return layer_count(self._count_computational())

    def _count_layers(self):
        return 1 + self._subnet._count_layers()

    def _count_computational(self):
        return self._subnet._count_computational()

    def __len__(self):
        return self._count_layers()

    def __getitem__(self, i):
        """``net[i]`` is ``layer(net, i)``."""
        return layer(self, i)

    def __iter__(self):
        """The layers, top first, the input layer last (``net_layers(net)``)."""
        return iter(self.layers())

    def layers(self) -> list:
        """Every layer from this node down in dlib's index order: ``layers()[i]`` is
        ``layer<i>(net)`` (nodes, then the input layer object)."""
        out, node = [], self
        while node is not None:
            out.extend(node._own_layers())
            node = node.subnet_node()
        return out

    def _own_layers(self):
        """The entries this node contributes to ``layers()`` (itself; a repeat its copies')."""
        return [self]

    def index_of(self, node):
        """``i`` such that ``layer(self, i)`` is ``node`` (a node or the input layer object),
        or None when ``node`` is not in this net."""
        return next((i for i, n in enumerate(self.layers()) if n is node), None)

    # -- running -------------------------------------------------------------------------
    def to_tensor(self, batch, data=None) -> resizable_tensor:
        """Convert a batch of input objects into a tensor (the input layer's ``to_tensor``)."""
        return self._subnet.to_tensor(batch, data)

    def forward(self, x) -> tensor:
        """Run the net on the input tensor ``x`` (a dnnpy tensor or a 4-D numpy array);
        returns this node's output as a ``read_only_view`` (valid until the next pass;
        ``.numpy()`` copies it)."""
        x = as_input_tensor(x, "forward")
        with running(self):
            self._forward(x)
        return read_only_view(self._private_get_output(), f"the output of {self._name()}")

    def __call__(self, batch, batch_size=None) -> np.ndarray:
        """Forward a batch of input objects (a list, or a stacked array), dlib's
        ``net(data, batch_size)``; returns the output as a NEW numpy array ``(num_samples, k,
        nr, nc)``. With ``batch_size``, runs the batch in pieces of that many objects (memory
        stays bounded) and concatenates. One input object (an image, a matrix: see
        ``input_layer.is_one_input``) runs as a batch of one, dlib's ``net(x)``."""
        hint_if_training_net(self)
        if self.input_layer().is_one_input(batch):
            batch = [batch]
        pieces = [batch] if batch_size is None else split(batch, batch_size)
        outs = []
        with running(self):
            for piece in pieces:
                x = self.to_tensor(piece, getattr(self, "_batch_tensor", None))
                self._batch_tensor = x
                self._forward(x)
                outs.append(self._private_get_output().numpy())
        return outs[0] if len(outs) == 1 else np.concatenate(outs, axis=0)

    def back_propagate_error(self, x, gradient_input=None, zero_grads=True):
        """Backpropagate ``gradient_input`` (default: this node's own gradient input, as a
        loss writes it) through the net, computing every layer's parameter gradient and the
        gradient with respect to the input. ``x`` is the tensor given to the last
        ``forward``; ``gradient_input`` a tensor or numpy array of the output's shape."""
        with running(self):
            self._check_backward(x)
            if gradient_input is not None:
                gradient_input = as_gradient(gradient_input, self._private_get_output().shape,
                                              "back_propagate_error")
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

    def set_final_data_gradient_wanted(self, wanted: bool):
        """Whether backward passes compute the gradient with respect to the net's input
        (default True, as dlib). ``dnn_trainer`` turns it off during its steps, which never
        read it (PyTorch likewise skips the gradient of an input that requires none): the
        layers on the input (con, cont, fc, linear) then skip their data gradient, and
        ``get_final_data_gradient()`` says it was not computed."""
        self.input_node().set_final_data_gradient_wanted(wanted)

    def final_data_gradient_wanted(self) -> bool:
        """See ``set_final_data_gradient_wanted``."""
        return self.input_node().final_data_gradient_wanted()

    def _gradient_wanted(self):
        """Whether a layer above this node must write its data gradient here."""
        return True

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
        with self.input_node().lock:
            for node, solver in zip(nodes, solvers):
                grad, details = node.get_parameter_gradient(), node.layer_details()
                lr_mult = getattr(details, "get_learning_rate_multiplier", None)
                if grad.size() != 0 and (lr_mult is None or lr_mult() != 0):
                    step = solver(learning_rate, details, grad)
                    tt.add(1, details.get_layer_params(), 1, step)

    def get_parameter_gradient(self) -> tensor:
        """This layer's parameter gradient from the last backward pass (empty for nodes
        without parameters)."""
        return _EMPTY

    def get_gradient_input_target(self):
        """``(tensor, add_to)``: the gradient input, and whether the caller must ADD into it
        (True) or may ASSIGN every element (False: this pass has not written it yet; it is
        sized but its contents are undefined). A node that cannot tell returns
        ``(get_gradient_input(), True)``."""
        return self._private_get_gradient_input_target()

    def _private_get_gradient_input_target(self):
        return self._private_get_gradient_input(), True

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

    def get_gradient_input_target(self):
        """``(tensor, add_to)``: see ``add_layer.get_gradient_input_target``; with add_to
        False the layer must assign every element of the tensor (it is not zeroed)."""
        return self._node._private_get_gradient_input_target()

    def gradient_wanted(self) -> bool:
        """Whether anything reads the data gradient the layer would write here: False only
        for a net's input whose final data gradient is not wanted
        (``set_final_data_gradient_wanted``)."""
        return self._node._gradient_wanted()

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
        self.lock = net_lock()      # the whole net's: every node reaches this one (calls.py)
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
        # set_final_data_gradient_wanted(False) (dnn_trainer's steps): the layers on the input
        # skip their data gradient; _grad_missing says the last backward pass left none
        self._wants_gradient = True
        self._grad_missing = False

    def input_layer(self):
        return self._input_layer

    def set_input_layer(self, input_layer):
        """Replace the input layer object (copy_net_as, reading a file)."""
        self._input_layer = input_layer

    def input_node(self):
        return self

    def subnet_node(self):
        return None

    def _own_layers(self):
        return [self._input_layer]

    def sample_expansion_factor(self) -> int:
        return self._sample_expansion_factor

    def _count_layers(self):
        return 1

    def _count_computational(self):
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

    def set_sample_expansion_factor(self, sef):
        """Record the samples per input object (dlib's ``to_tensor`` does; ``repeat`` sets its
        copies' this way)."""
        self._sample_expansion_factor = int(sef)

    def to_tensor(self, batch, data=None):
        if batch is None:
            raise TypeError(f"{self._input_layer!r}.to_tensor: expected a batch of input objects (a "
                            f"list, or a stacked array), got None")
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

    def _private_get_gradient_input_target(self):
        if self._grad_stale or (self._x is not None and self.grad_final.shape != self._x.shape):
            self.grad_final.copy_size(self._x)
            self._grad_stale = False
            return self.grad_final, False
        return self.grad_final, True

    def get_gradient_input(self):
        """The gradient with respect to the input tensor (``grad_final``), zeroed lazily."""
        return self._private_get_gradient_input()

    def get_final_data_gradient(self):
        if self._grad_missing:
            raise ValueError("get_final_data_gradient: the last backward pass did not compute the "
                             "gradient with respect to the input: dnn_trainer's steps skip it (they "
                             "never read it), as does a net with set_final_data_gradient_wanted("
                             "False). For it, run net.forward(x) then net.back_propagate_error(x) "
                             "yourself, with set_final_data_gradient_wanted(True) (the default)")
        return read_only_view(self.grad_final, "the data gradient (get_final_data_gradient)")

    def set_final_data_gradient_wanted(self, wanted):
        self._wants_gradient = bool(wanted)

    def final_data_gradient_wanted(self):
        return self._wants_gradient

    def _gradient_wanted(self):
        return self._wants_gradient

    def _backward(self, x, gradient_input=None, zero_grads=True):
        if gradient_input is not None:
            target, add_to = self._private_get_gradient_input_target()
            tt.add(1 if add_to else 0, target, 1, gradient_input)
        if self._tagged:
            return  # dlib's tag on the input: nothing to do
        # dlib's bottom add_layer zeroes grad_final (shaped as x) at the start of every
        # backward pass, whatever zero_grads says: a layer that sends no gradient to its
        # input (embeddings_) leaves zeros of x's shape
        wrote = not self._grad_stale
        if self._grad_stale and self._x is not None and self._wants_gradient:
            self._private_get_gradient_input()
            wrote = True
        self._grad_missing = not wrote
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
        self._grad_missing = False
        if not self._tagged:  # dlib's tag on the input keeps its stale flag
            self._grad_stale = True

    def _find(self, match):
        return None

    def _print(self, lines, idx, min_length):
        lines.append(f"layer<{idx}>\t{self._input_layer!r}")


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

    def _private_get_gradient_input_target(self):
        return self._subnet._private_get_gradient_input_target()

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

    def _private_get_gradient_input_target(self):
        return self.tagged_node()._private_get_gradient_input_target()

    def _backward(self, x, gradient_input=None, zero_grads=True):
        if gradient_input is not None:
            target, add_to = self._private_get_gradient_input_target()
            tt.add(1 if add_to else 0, target, 1, gradient_input)
        self._subnet._backward(x, zero_grads=zero_grads)


# ----------------------------------------------------------------------------------------
# walking a net

def net_layers(net) -> list:
    """Every layer of ``net`` in dlib's index order: ``net_layers(net)[i]`` is ``layer<i>(net)``
    (nodes, and the input layer object last). A ``repeat`` contributes the layers of its
    copies (top copy first, each without its repeat-internal input)."""
    if isinstance(net, subnet_wrapper):
        net = net.node()
    if isinstance(net, net_node):
        return net.layers()
    if net is None or not hasattr(net, "get_output") and not hasattr(net, "to_tensor"):
        check_net(net)
    return [net]   # an input layer object given directly, or a test_layer/test_loss stand-in


def computational_nodes(net) -> list:
    """The ``add_layer`` nodes of ``net``, top first (the order solvers are stored in)."""
    return [n for n in net_layers(net) if getattr(n, "computational", False)]


def layer(net, which, steps: int = 0):
    """dlib's ``layer<i>(net)`` and ``layer<T>(net)`` / ``layer<T, i>(net)``.

    ``which`` is an index (``layer(net, 0) is net``; the last index is the input layer)
    or a template (``tag1``, ``relu``, ...): the first layer from the top built by it,
    then ``steps`` more layers down.
    """
    if not isinstance(net, net_node) and not hasattr(net, "get_output"):
        check_net(net, f"layer(net, {which!r})")   # (a layer's sub and test stand-ins pass)
    if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
        return _layer_at(net, int(which) + steps)
    found = net._find(lambda n: _built_by(n, which))
    if found is None:
        raise ValueError(f"layer(net, {which!r}): no such layer in the net")
    return _layer_at(found, steps) if steps else found


def _built_by(node, template):
    """Whether ``template`` built ``node``; a tag (or skip) template matches any tag of its
    id, as dlib's ``layer<tag1>`` matches ``add_tag_layer<1, ...>`` however it was spelled."""
    if node.template is template:
        return True
    node_cls, tag_id = getattr(template, "node_cls", None), getattr(template, "id", None)
    return (node_cls is not None and type(node) is node_cls and getattr(node, "id", None) == tag_id)


def _layer_at(net, i):
    if i < 0:
        raise ValueError(f"layer index must be >= 0, got {i}")
    if isinstance(net, net_node):
        layers = net.layers()
        if i >= len(layers):
            raise IndexError(f"layer index {i} is past the input layer")
        return layers[i]
    node = net          # the sub a layer sees, test_layer's fake subnet: step down subnet()
    for _ in range(i):
        step = getattr(node, "subnet", None)
        if step is None:
            raise IndexError(f"layer index {i} is past the input layer")
        node = step()
    return node


def input_layer(net):
    """The input layer object of a net."""
    return check_net(net, "input_layer").input_layer()
