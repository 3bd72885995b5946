"""What computational layers share: the base class, parameter initialisation, the
learning-rate / weight-decay multipliers, and argument checks.

The layer contract (dlib's EXAMPLE_COMPUTATIONAL_LAYER_, see docs/layer_interface.md):
``setup(sub)``, then either ``forward(sub, output)`` + ``backward([computed_output,]
gradient_input, sub, params_grad)`` or ``forward_inplace(input, output)`` +
``backward_inplace([computed_output,] gradient_input, data_grad, params_grad)``;
``backward_needs_output`` says whether backward takes ``computed_output``.
``params_grad`` is ASSIGNED; the subnet's gradient is ADDED to (in place: assigned iff
``data_grad is gradient_input``).
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np

from ..printing import cpp_num, xml_num
from ..tensor import resizable_tensor

__all__ = ["gradient_input_target", "computational_layer", "with_multipliers", "randomize_parameters", "set_random_seed",
           "seeded_initialisation",
           "get_learning_rate_multiplier", "get_weight_decay_multiplier",
           "get_bias_learning_rate_multiplier", "get_bias_weight_decay_multiplier"]

# dlib seeds its initialisers from std::rand(), deterministic unless srand() is called;
# likewise a fresh process here initialises identically until set_random_seed().
_rng = np.random.default_rng(0)


def set_random_seed(seed):
    """Reseed the generator used to initialise layer parameters."""
    global _rng
    _rng = np.random.default_rng(seed)


@contextlib.contextmanager
def seeded_initialisation(seed):
    """Inside the block, parameters are initialised from a generator seeded with ``seed``;
    the generator in use before is restored after (test_layer's reproducible setups)."""
    global _rng
    saved, _rng = _rng, np.random.default_rng(seed)
    try:
        yield
    finally:
        _rng = saved


def randomize_parameters(params, fan_in_plus_fan_out):
    """Glorot/Xavier uniform (dlib's ``randomize_parameters``): every value uniform in
    ``[-sqrt(6/fan), sqrt(6/fan)]`` with ``fan = inputs + outputs``."""
    bound = np.sqrt(6.0 / fan_in_plus_fan_out)
    a = params.host_write_only()
    a[...] = (_rng.random(a.shape, dtype=np.float32) * 2 - 1) * np.float32(bound)


def gradient_input_target(sub):
    """``(tensor, add_to)`` for writing the data gradient into ``sub``: the subnet's
    ``get_gradient_input_target()`` (with ``add_to`` False the tensor is sized but not zeroed
    and every element must be assigned); a stand-in without it (a user's) gives
    ``(sub.get_gradient_input(), True)``: ADD, as dlib's layers do."""
    get = getattr(sub, "get_gradient_input_target", None)
    return get() if get is not None else (sub.get_gradient_input(), True)


def data_gradient_wanted(sub):
    """Whether anything reads the data gradient a layer would write into ``sub``: False only
    on the input of a net whose final data gradient is not wanted (``dnn_trainer``'s steps,
    ``set_final_data_gradient_wanted``); a stand-in without ``gradient_wanted`` (a user's,
    ``test_layer``'s) wants it."""
    wanted = getattr(sub, "gradient_wanted", None)
    return wanted is None or wanted()


def check_int(layer_name, name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{layer_name}: {name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{layer_name}: {name} must be >= {minimum}, got {value}")
    return value


class computational_layer:
    """Base class of computational layer details.

    Export is part of the contract (docs/layer_interface.md): ``to_xml()`` returns the
    layer's element as dlib's ``to_xml`` writes it (``net_to_xml`` refuses a layer without
    one), and ``dot_label()`` / ``dot_edges`` say how ``net_to_dot`` draws it."""

    backward_needs_output = False

    # net_to_dot: how edges reach this layer's node. "chain": from the layer below; "tag":
    # from the tagged layer, then from the layer below (add_prev_); "tags": from each tagged
    # layer only (concat_); "resize_as": a dashed edge to the tagged layer, then from below.
    dot_edges = "chain"
    dot_name = None  # the node's name, for layers drawn without fields

    def dot_label(self):
        """The node's label after ``{layer|{i}} | ``: dlib's visitor_net_to_dot text for this
        layer, e.g. ``"relu"`` or ``"fc | { outputs |{10}}"``. None (``dot_name``'s default)
        writes dlib's catch-all for layers it does not know: an unterminated ``unhandled
        layer`` label, which is invalid Graphviz, as in dlib."""
        return self.dot_name

    def __init__(self):
        self.params = resizable_tensor()

    def setup(self, sub):
        pass

    def bias_offset(self, size):
        """Where the bias block starts in this layer's ``size`` parameters, for the solvers,
        which give it the bias multipliers (dlib's solver overloads for ``fc_``, ``con_``,
        ``cont_`` and ``bn_``); None: no separate bias block (the default)."""
        return None

    def get_layer_params(self):
        return self.params

    def __str__(self):
        return repr(self)


class with_multipliers:
    """dlib's four per-layer multipliers (read by the solvers): learning rate and weight
    decay for the weights, and separately for the biases."""

    learning_rate_multiplier = 1.0
    weight_decay_multiplier = 1.0
    bias_learning_rate_multiplier = 1.0
    bias_weight_decay_multiplier = 0.0

    def get_learning_rate_multiplier(self):
        return self.learning_rate_multiplier

    def set_learning_rate_multiplier(self, val):
        self.learning_rate_multiplier = float(val)

    def get_weight_decay_multiplier(self):
        return self.weight_decay_multiplier

    def set_weight_decay_multiplier(self, val):
        self.weight_decay_multiplier = float(val)

    def get_bias_learning_rate_multiplier(self):
        return self.bias_learning_rate_multiplier

    def set_bias_learning_rate_multiplier(self, val):
        self.bias_learning_rate_multiplier = float(val)

    def get_bias_weight_decay_multiplier(self):
        return self.bias_weight_decay_multiplier

    def set_bias_weight_decay_multiplier(self, val):
        self.bias_weight_decay_multiplier = float(val)

    def _multipliers(self, use_bias):
        """``[(name, value)]`` of the multipliers dlib prints (the bias ones when in use)."""
        pairs = [("learning_rate_mult", self.learning_rate_multiplier),
                 ("weight_decay_mult", self.weight_decay_multiplier)]
        if use_bias:
            pairs += [("bias_learning_rate_mult", self.bias_learning_rate_multiplier),
                      ("bias_weight_decay_mult", self.bias_weight_decay_multiplier)]
        return pairs

    def _multipliers_str(self, use_bias=True):
        """The multipliers as dlib's ``operator<<`` prints them."""
        s = "".join(f" {name}={cpp_num(v)}" for name, v in self._multipliers(use_bias))
        return s if use_bias else s + " use_bias=false"

    def _multipliers_xml(self, use_bias=True):
        """The multipliers as dlib's ``to_xml`` writes them (precision 9)."""
        return "".join(f" {name}='{xml_num(v)}'" for name, v in self._multipliers(use_bias))


def _multiplier_getter(name):
    def get(layer):
        # a layer's details, or the add_layer node holding them (dlib's free functions take both)
        details = layer.layer_details() if hasattr(layer, "layer_details") else layer
        f = getattr(details, "get_" + name, None)
        return float(f()) if f is not None else 1.0
    get.__name__ = "get_" + name
    get.__doc__ = (f"``details.get_{name}()`` of a layer's details or its ``add_layer`` node, or 1 "
                   f"for layers without that multiplier (as in dlib).")
    return get


get_learning_rate_multiplier = _multiplier_getter("learning_rate_multiplier")
get_weight_decay_multiplier = _multiplier_getter("weight_decay_multiplier")
get_bias_learning_rate_multiplier = _multiplier_getter("bias_learning_rate_multiplier")
get_bias_weight_decay_multiplier = _multiplier_getter("bias_weight_decay_multiplier")
