"""``dropout_`` (random mask, no rescaling), ``dropout_rate_`` and ``multiply_`` (the
inference-time stand-in for dropout: a fixed scale). Both are dlib's form D: in place,
and backward does not read the forward output.

Randomness: each ``dropout_`` owns a ``tt.tensor_rand`` (``self.rnd``) seeded, as dlib's
``rnd(std::rand())``, from a process-wide sequence (``set_dropout_seed`` restarts it). The
mask drawn by a forward pass is kept in ``self.mask`` and used by the next backward.
"""

from __future__ import annotations


import numpy as np

from .. import tensor_tools as tt
from ..printing import cpp_num, xml_num
from ..tensor import resizable_tensor
from ..templates import layer_template
from .activations import _identity_map, as_float32
from .base import check_int, computational_layer

__all__ = ["dropout_", "dropout", "dropout_rate_", "dropout_rate", "dropout_10",
           "multiply_", "multiply", "set_dropout_seed"]

_seeds = np.random.default_rng(0)


def set_dropout_seed(seed):
    """Restart the sequence that seeds the ``tensor_rand`` of each new ``dropout_``."""
    global _seeds
    _seeds = np.random.default_rng(seed)


class dropout_(computational_layer, _identity_map):
    """``out = in * mask`` with ``mask = (uniform(0,1] > drop_rate)``, a fresh mask every
    forward; no ``1/(1-drop_rate)`` rescaling (dlib's behaviour; use ``multiply_`` with
    ``1-drop_rate`` at inference). ``clean()`` frees the mask."""

    dot_name = "dropout"
    inference_form = "multiply"  # what inference_copy makes of it (net(x) hints at that)

    def template_args(self):
        return {"drop_rate": self.drop_rate}

    def __init__(self, drop_rate=0.5):
        super().__init__()
        self.drop_rate = as_float32(type(self).__name__, "drop_rate", drop_rate)
        if not 0 <= self.drop_rate <= 1:
            raise ValueError(f"{type(self).__name__}: drop_rate must be in [0, 1], got {drop_rate!r}")
        self.mask = resizable_tensor()
        self.rnd = tt.tensor_rand(int(_seeds.integers(0, 2**63)))

    def get_drop_rate(self):
        return self.drop_rate

    def forward_inplace(self, input, output):
        self.mask.copy_size(input)
        self.rnd.fill_uniform(self.mask)
        tt.threshold(self.mask, self.drop_rate)
        tt.multiply(False, output, input, self.mask)

    def backward_inplace(self, gradient_input, data_grad, params_grad):
        # assign when running in place (data_grad is gradient_input), else add
        tt.multiply(data_grad is not gradient_input, data_grad, self.mask, gradient_input)

    def clean(self):
        self.mask.clear()

    def serialize(self, w):
        """dlib's "dropout_": drop_rate (a C++ float), mask (written by dropout_rate_ too)."""
        w.string("dropout_")
        w.float32(self.drop_rate)
        w.tensor(self.mask)

    def deserialize(self, r):
        """The file's drop_rate replaces ours, as in dlib (also in a dropout_rate_, whose
        template percent is left as it is)."""
        r.expect_string("dropout_")
        drop_rate = r.float32(f"{type(self).__name__} drop_rate")
        r.tensor(f"{type(self).__name__} mask", into=self.mask)
        self.drop_rate = drop_rate

    def __repr__(self):
        return f"dropout\t (drop_rate={cpp_num(self.drop_rate)})"

    def to_xml(self):
        return f"<dropout drop_rate='{xml_num(self.drop_rate)}'/>\n"

    def to_onnx(self, g, x):
        """Refused by default: dlib's dropout has no inference mode (every forward drops a
        fresh random set of values), so no graph computes what the layer computes. With the
        export option ``dropout="multiply"``: its expectation ``x * (1 - drop_rate)``, which
        is what ``inference_copy`` (dlib's ``multiply_(dropout_)``) turns it into."""
        if g.option("dropout") != "multiply":
            g.refuse(f"dropout (drop_rate={cpp_num(self.drop_rate)}) draws a new random mask at every forward "
                     f"(dlib has no inference mode for it); convert the net first with "
                     f"dnnpy.inference_copy(net) (dropout -> multiply by 1 - drop_rate), or pass "
                     f"dropout='multiply' to export that form")
        return g.node("Mul", [x, g.scalar(np.float32(1) - np.float32(self.drop_rate))])


class dropout_rate_(dropout_):
    """``dropout_(percent/100)``; ``percent`` is an integer in [0, 100] (a template
    argument in dlib). Prints and serializes as a ``dropout_``; net_to_dot draws it as dlib
    does, as an ``unhandled layer`` (dlib's dropout overload matches dropout_ itself only)."""

    dot_name = None

    def template_args(self):
        return {"percent": self.percent}

    def __init__(self, percent):
        percent = check_int("dropout_rate_", "percent", percent, 0)
        if percent > 100:
            raise ValueError(f"dropout_rate_: percent must be between 0 and 100, got {percent}")
        self.percent = percent
        super().__init__(float(np.float32(percent) / np.float32(100)))


class multiply_(computational_layer, _identity_map):
    """``out = val * in``. ``multiply_(a_dropout_)`` takes ``val = 1 - drop_rate`` (dlib's
    converting constructor, for turning a trained dropout net into an inference net)."""

    dot_name = "multiply"

    # dlib's converting constructor multiply_(const dropout_&): val = 1 - drop_rate
    converts_from = (dropout_,)

    def template_args(self):
        return {"val": self.val}

    def __init__(self, val=0.5):
        super().__init__()
        if isinstance(val, dropout_):
            val = float(np.float32(1) - np.float32(val.get_drop_rate()))
        self.val = as_float32("multiply_", "val", val)

    def serialize(self, w):
        """dlib's "multiply_": val (a C++ float)."""
        w.string("multiply_")
        w.float32(self.val)

    def deserialize(self, r):
        """Reads a "multiply_" record, or a "dropout_" record converted as dlib's
        ``multiply_(dropout_)`` does: ``val = 1 - drop_rate``."""
        start = r.pos
        if r.expect_string("multiply_", "dropout_") == "dropout_":
            r.pos = start
            tmp = dropout_.__new__(dropout_)  # no seed drawn: only the record is wanted
            computational_layer.__init__(tmp)
            tmp.mask = resizable_tensor()
            dropout_.deserialize(tmp, r)
            self.val = float(np.float32(1) - np.float32(tmp.drop_rate))
            return
        self.val = r.float32("multiply_ val")

    def get_multiply_value(self):
        return self.val

    def forward_inplace(self, input, output):
        tt.affine_transform(output, input, self.val)

    def backward_inplace(self, gradient_input, data_grad, params_grad):
        if data_grad is gradient_input:
            tt.affine_transform(data_grad, gradient_input, self.val)
        else:
            tt.affine_transform(data_grad, data_grad, gradient_input, 1, self.val)

    def __repr__(self):
        return f"multiply (val={cpp_num(self.val)})"

    def to_xml(self):
        return f"<multiply val='{xml_num(self.val)}'/>\n"

    def to_onnx(self, g, x):
        return g.node("Mul", [x, g.scalar(self.val)])


dropout = layer_template("dropout", dropout_)
dropout_rate = layer_template("dropout_rate", dropout_rate_)
dropout_10 = layer_template("dropout_10", dropout_rate_, percent=10)
multiply = layer_template("multiply", multiply_)
