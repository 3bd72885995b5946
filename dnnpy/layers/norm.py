"""Normalisation layers: batch norm ``bn_`` (templates ``bn_con``, ``bn_fc``), ``layer_norm_``
and ``rms_norm_``.

Each keeps its learnable parameters in one flat tensor, ``[gamma, beta]`` concatenated
(``rms_norm_``: ``[gamma]``), reached through ``alias_tensor`` views (dlib's layout).
Statistics follow dlib's *implementation*:

* ``bn_``: with more than one sample, batch statistics (FC_MODE: per (k, r, c); CONV_MODE:
  per channel) and a running average of them; with one sample, the running statistics
  (inference). gamma/beta have the statistics' shape.
* ``layer_norm_`` / ``rms_norm_``: statistics per sample over all k*nr*nc values, gamma
  (and beta) per channel k (dlib's header describes other shapes; its code does this).
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import tensor_tools as tt
from ..tensor import alias_tensor, resizable_tensor
from ..templates import layer_template
from ..printing import cpp_num, xml_matrix, xml_num
from ._serial import read_alias, read_multipliers, write_alias, write_multipliers
from .base import check_int, computational_layer, gradient_input_target, with_multipliers

__all__ = ["CONV_MODE", "FC_MODE", "bn_", "bn_con", "bn_fc", "layer_norm_", "layer_norm",
           "rms_norm_", "rms_norm", "DEFAULT_BATCH_NORM_EPS", "DEFAULT_LAYER_NORM_EPS",
           "DEFAULT_RMS_NORM_EPS"]

# dlib's layer_mode
CONV_MODE = 0
FC_MODE = 1

DEFAULT_BATCH_NORM_EPS = 0.0001
DEFAULT_LAYER_NORM_EPS = 1e-5
DEFAULT_RMS_NORM_EPS = 1e-5


def check_mode(layer_name, mode):
    if isinstance(mode, bool) or mode not in (CONV_MODE, FC_MODE):
        raise ValueError(f"{layer_name}: mode must be CONV_MODE (0) or FC_MODE (1), got {mode!r}")
    return int(mode)


def check_eps(layer_name, eps):
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
        raise ValueError(f"{layer_name}: eps must be a number > 0, got {eps!r}")
    return float(eps)



class _normalization(computational_layer, with_multipliers):
    """What the three layers share: multipliers (lr 1, wd 0, bias lr 1, bias wd 1), eps,
    identity point mapping."""

    # dlib's defaults for every normalisation layer
    weight_decay_multiplier = 0.0
    bias_weight_decay_multiplier = 1.0

    def template_args(self):
        return {"eps": self.eps}

    def __init__(self, eps):
        super().__init__()
        self.eps = check_eps(type(self).__name__, eps)

    def get_eps(self):
        return self.eps

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    def _xml_attrs(self):
        return self._multipliers_xml()

    def _write_tail(self, w):
        write_multipliers(w, self)
        w.float64(self.eps)

    def _read_tail(self, r):
        name = type(self).__name__
        read_multipliers(r, self, name)
        self.eps = r.float64(f"{name} eps")

    def _check_read(self, r, stats=()):
        """The parameter views must fit the file's params; ``stats`` (name, tensor) must
        each hold one value per gamma value (or be empty)."""
        name = type(self).__name__
        if self.params.size() == 0:
            return
        beta = getattr(self, "beta", None)
        views = [("gamma", self.gamma, 0)] + ([("beta", beta, self.gamma.size())] if beta is not None else [])
        total = sum(a.size() for _, a, _ in views)
        if total != self.params.size() or (beta is not None and beta.size() != self.gamma.size()):
            raise r.error(f"{name}: the file's gamma {self.gamma.shape}"
                          + (f" and beta {beta.shape}" if beta is not None else "")
                          + f" do not match its parameter tensor of {self.params.size()} values")
        for field, t in stats:
            if t.size() not in (0, self.gamma.size()):
                raise r.error(f"{name}: the file's {field} {t.shape} does not match gamma "
                              f"{self.gamma.shape}")

    def _check_input(self, x, want_k):
        if x.k() != want_k:
            raise ValueError(f"{type(self).__name__}: input{x.shape} has {x.k()} channels, but "
                             f"the layer was set up for {want_k}")


class bn_(_normalization):
    """Batch normalisation (dlib's ``bn_<mode>``): ``bn_(mode, running_stats_window_size=100,
    eps=1e-4)``.

    Training (num_samples > 1): normalise with the batch statistics and update the running
    ones with ``decay = 1 - num_updates/(num_updates + 1)``, then ``num_updates =
    min(num_updates + 1, window)`` (an average over the last ~window batches); the running
    variance is unbiased. Inference (num_samples == 1): normalise with the running
    statistics. FC_MODE keeps one gamma/beta/statistic per (k, r, c), CONV_MODE per k.
    """

    dot_name = "batch_norm"
    inference_form = "affine"    # what inference_copy makes of it (net(x) hints at that)

    def bias_offset(self, size):
        """gamma, then beta: beta is the second half of the parameters."""
        return size // 2

    def template_args(self):
        return {"mode": self.mode,
                "running_stats_window_size": self.running_stats_window_size,
                "eps": self.eps}

    def __init__(self, mode, running_stats_window_size=100, eps=DEFAULT_BATCH_NORM_EPS):
        super().__init__(eps)
        self.mode = check_mode("bn_", mode)
        self.running_stats_window_size = check_int(
            "bn_", "running_stats_window_size", running_stats_window_size, 1)
        self.num_updates = 0
        self.gamma = alias_tensor()
        self.beta = alias_tensor()
        self.means = resizable_tensor()
        self.invstds = resizable_tensor()
        self.running_means = resizable_tensor()
        self.running_variances = resizable_tensor()

    def get_mode(self):
        return self.mode

    def get_running_stats_window_size(self):
        return self.running_stats_window_size

    def set_running_stats_window_size(self, new_window_size):
        self.running_stats_window_size = check_int(
            "bn_", "running_stats_window_size", new_window_size, 1)

    def setup(self, sub):
        x = sub.get_output()
        if self.mode == FC_MODE:
            self.gamma = alias_tensor(1, x.k(), x.nr(), x.nc())
        else:
            self.gamma = alias_tensor(1, x.k())
        self.beta = self.gamma
        self.params.set_size(self.gamma.size() + self.beta.size())
        self.gamma(self.params, 0).fill(1)
        self.beta(self.params, self.gamma.size()).fill(0)
        self.running_means.copy_size(self.gamma(self.params, 0)).fill(0)
        self.running_variances.copy_size(self.gamma(self.params, 0)).fill(1)
        self.num_updates = 0

    def _check(self, x):
        want = self.gamma.shape[1:]
        got = x.shape[1:] if self.mode == FC_MODE else (x.k(), 1, 1)
        if got != want:
            raise ValueError(f"bn_: input{x.shape} does not match the layer's "
                             f"{'(k, nr, nc)' if self.mode == FC_MODE else 'k'} = {want} from setup")

    def forward(self, sub, output):
        x = sub.get_output()
        self._check(x)
        g = self.gamma(self.params, 0)
        b = self.beta(self.params, self.gamma.size())
        if x.num_samples() > 1:
            decay = 1.0 - self.num_updates / (self.num_updates + 1.0)
            self.num_updates = min(self.num_updates + 1, self.running_stats_window_size)
            op = tt.batch_normalize if self.mode == FC_MODE else tt.batch_normalize_conv
            op(self.eps, output, self.means, self.invstds, decay, self.running_means,
               self.running_variances, x, g, b)
        else:  # one sample: inference with the running statistics
            op = (tt.batch_normalize_inference if self.mode == FC_MODE
                  else tt.batch_normalize_conv_inference)
            op(self.eps, output, x, g, b, self.running_means, self.running_variances)

    def backward(self, gradient_input, sub, params_grad):
        if sub.get_output().num_samples() < 2:
            # forward used the running statistics (inference); there is no batch to train on
            raise ValueError(f"{self._name()}: backward on a mini-batch of 1 sample: batch "
                             f"normalization trains on the statistics of at least 2 samples (with "
                             f"1, forward normalizes with the running statistics, and dlib's "
                             f"gradient requires 2 too); use mini-batches of 2 or more samples")
        g = self.gamma(self.params, 0)
        g_grad = self.gamma(params_grad, 0)
        b_grad = self.beta(params_grad, self.gamma.size())
        op = (tt.batch_normalize_gradient if self.mode == FC_MODE
              else tt.batch_normalize_conv_gradient)
        data_grad, add_to = gradient_input_target(sub)
        op(self.eps, gradient_input, self.means, self.invstds, sub.get_output(), g,
           data_grad, g_grad, b_grad, add_to)

    def _name(self):
        return "bn_con" if self.mode == CONV_MODE else "bn_fc"

    def serialize(self, w):
        """dlib's "bn_con2" / "bn_fc2" (by mode): params, gamma and beta alias shapes, means,
        invstds, running_means, running_variances, num_updates and
        running_stats_window_size (unsigned), 4 double multipliers, eps (double)."""
        w.string(self._name() + "2")
        w.tensor(self.params)
        write_alias(w, self.gamma)
        write_alias(w, self.beta)
        for t in (self.means, self.invstds, self.running_means, self.running_variances):
            w.tensor(t)
        w.uint(self.num_updates)
        w.uint(self.running_stats_window_size)
        self._write_tail(w)

    def deserialize(self, r):
        """The record must be the net type's mode's ("bn_con2" or "bn_fc2"), as in dlib."""
        r.expect_string(self._name() + "2")
        r.tensor("bn_ params", into=self.params)
        self.gamma = read_alias(r, "bn_ gamma")
        self.beta = read_alias(r, "bn_ beta")
        for field in ("means", "invstds", "running_means", "running_variances"):
            r.tensor(f"bn_ {field}", into=getattr(self, field))
        self.num_updates = r.uint("bn_ num_updates")
        self.running_stats_window_size = r.uint("bn_ running_stats_window_size")
        self._read_tail(r)
        self._check_read(r, (("running_means", self.running_means),
                             ("running_variances", self.running_variances)))

    def __repr__(self):
        # dlib pads the name to 8 characters ("bn_con  " / "bn_fc   ")
        return (f"{self._name():<8} eps={cpp_num(self.eps)}"
                f" running_stats_window_size={self.running_stats_window_size}"
                + self._multipliers_str())

    def to_xml(self):
        return (f"<{self._name()} eps='{xml_num(self.eps)}'"
                f" running_stats_window_size='{self.running_stats_window_size}'"
                + self._xml_attrs() + ">\n" + xml_matrix(self.params) + f"</{self._name()}>\n")

    def to_onnx(self, g, x):
        """Refused by default: for a batch of more than one sample bn normalises with the
        batch's statistics, which no fixed graph reproduces. With the export option
        ``bn="running_stats"``: the inference form (what one sample gets), ``x * s + t`` with
        ``s = gamma / sqrt(running_var + eps)``, ``t = beta - running_mean * s``."""
        if g.option("bn") != "running_stats":
            g.refuse(f"{self._name()} normalises a batch of N > 1 samples with the batch's own statistics "
                     f"(dlib's semantics), which a fixed graph cannot reproduce; convert the net first "
                     f"with dnnpy.inference_copy(net) (bn -> affine), or pass bn='running_stats' to "
                     f"export its one-sample (running statistics) form")
        shape = self.gamma.shape if self.mode == FC_MODE else (1, self.gamma.shape[1], 1, 1)
        p = self.params.numpy().reshape(-1).astype(np.float64)
        gamma, beta = p[:self.gamma.size()], p[self.gamma.size():]
        mean = self.running_means.numpy().reshape(-1).astype(np.float64)
        var = self.running_variances.numpy().reshape(-1).astype(np.float64)
        scale = gamma / np.sqrt(var + self.eps)
        shift = beta - mean * scale
        return g.node("Add", [g.node("Mul", [x, g.const(scale.reshape(shape), hint="scale")]),
                              g.const(shift.reshape(shape), hint="shift")])


class layer_norm_(_normalization):
    """Layer normalisation (dlib's implementation): per sample, mean and variance over all
    k*nr*nc values; ``out = (x - mean)*invstd*gamma[k] + beta[k]``. Params ``[gamma,
    beta]``, each ``(1, k)``, initialised to 1 and 0."""

    dot_name = "layer_norm"

    def __init__(self, eps=DEFAULT_LAYER_NORM_EPS):
        super().__init__(eps)
        self.gamma = alias_tensor()
        self.beta = alias_tensor()
        self.means = resizable_tensor()
        self.invstds = resizable_tensor()
        self.dmeans = resizable_tensor()
        self.dvars = resizable_tensor()

    def setup(self, sub):
        self.gamma = alias_tensor(1, sub.get_output().k())
        self.beta = self.gamma
        self.params.set_size(self.gamma.size() + self.beta.size())
        self.gamma(self.params, 0).fill(1)
        self.beta(self.params, self.gamma.size()).fill(0)

    def forward(self, sub, output):
        x = sub.get_output()
        self._check_input(x, self.gamma.k())
        tt.layer_normalize(self.eps, output, self.means, self.invstds, x,
                           self.gamma(self.params, 0), self.beta(self.params, self.gamma.size()))

    def backward(self, gradient_input, sub, params_grad):
        tt.layer_normalize_gradient(
            self.eps, gradient_input, self.means, self.invstds, sub.get_output(),
            self.gamma(self.params, 0), sub.get_gradient_input(), self.gamma(params_grad, 0),
            self.beta(params_grad, self.gamma.size()), self.dmeans, self.dvars)

    def serialize(self, w):
        """dlib's "layer_norm_": params, gamma and beta alias shapes, means, invstds,
        4 double multipliers, eps (double)."""
        w.string("layer_norm_")
        w.tensor(self.params)
        write_alias(w, self.gamma)
        write_alias(w, self.beta)
        w.tensor(self.means)
        w.tensor(self.invstds)
        self._write_tail(w)

    def deserialize(self, r):
        r.expect_string("layer_norm_")
        r.tensor("layer_norm_ params", into=self.params)
        self.gamma = read_alias(r, "layer_norm_ gamma")
        self.beta = read_alias(r, "layer_norm_ beta")
        r.tensor("layer_norm_ means", into=self.means)
        r.tensor("layer_norm_ invstds", into=self.invstds)
        self._read_tail(r)
        self._check_read(r)

    def __repr__(self):
        return f"layer_norm eps={cpp_num(self.eps)}" + self._multipliers_str()

    def to_xml(self):
        return (f"<layer_norm eps='{xml_num(self.eps)}'" + self._xml_attrs() + ">\n"
                + xml_matrix(self.params) + "</layer_norm>\n")

    def to_onnx(self, g, x):
        """Statistics over each sample's ``k*nr*nc`` values: ``LayerNormalization(axis=1)``
        with unit scale and zero bias, then the per-channel gamma and beta (``Mul``/``Add``
        with ``(1, k, 1, 1)``; the second form of the mapping, which every runtime takes)."""
        _, k, nr, nc = g.shape(x)
        ones = g.const(np.ones((k, nr, nc), np.float32), hint="one")
        zeros = g.const(np.zeros((k, nr, nc), np.float32), hint="zero")
        y = g.node("LayerNormalization", [x, ones, zeros], axis=1, epsilon=float(self.eps))
        p = self.params.numpy().reshape(-1)
        gamma = g.const(p[:k].reshape(1, k, 1, 1), hint="gamma")
        beta = g.const(p[k:2 * k].reshape(1, k, 1, 1), hint="beta")
        return g.node("Add", [g.node("Mul", [y, gamma]), beta])


class rms_norm_(_normalization):
    """RMS normalisation (dlib's implementation): ``scale[n] = 1/sqrt(mean(x[n]**2) + eps)``
    over all k*nr*nc values of a sample; ``out = x*scale[n]*gamma[k]``. Params ``[gamma]``,
    ``(1, k)``, initialised to 1 (the bias multipliers exist, as in dlib, but there is no
    bias)."""

    dot_name = "rms_norm"

    def __init__(self, eps=DEFAULT_RMS_NORM_EPS):
        super().__init__(eps)
        self.gamma = alias_tensor()
        self.scale = resizable_tensor()
        self.dscale = resizable_tensor()

    def setup(self, sub):
        self.gamma = alias_tensor(1, sub.get_output().k())
        self.params.set_size(self.gamma.size())
        self.gamma(self.params, 0).fill(1)

    def forward(self, sub, output):
        x = sub.get_output()
        self._check_input(x, self.gamma.k())
        tt.rms_normalize(self.eps, output, self.scale, x, self.gamma(self.params, 0))

    def backward(self, gradient_input, sub, params_grad):
        tt.rms_normalize_gradient(gradient_input, self.scale, sub.get_output(),
                                  self.gamma(self.params, 0), sub.get_gradient_input(),
                                  self.gamma(params_grad, 0), self.dscale)

    def serialize(self, w):
        """dlib's "rms_norm_": params, gamma alias shape, 4 double multipliers, eps (double)."""
        w.string("rms_norm_")
        w.tensor(self.params)
        write_alias(w, self.gamma)
        self._write_tail(w)

    def deserialize(self, r):
        r.expect_string("rms_norm_")
        r.tensor("rms_norm_ params", into=self.params)
        self.gamma = read_alias(r, "rms_norm_ gamma")
        self._read_tail(r)
        self._check_read(r)

    def __repr__(self):
        return f"rms_norm (eps={cpp_num(self.eps)})" + self._multipliers_str()

    def to_xml(self):
        return (f"<rms_norm eps='{xml_num(self.eps)}'" + self._xml_attrs() + ">\n"
                + xml_matrix(self.params) + "</rms_norm>\n")

    def to_onnx(self, g, x):
        """``x / sqrt(mean(x^2 over k, nr, nc) + eps) * gamma`` (RMSNormalization exists
        only from opset 23)."""
        k = g.shape(x)[1]
        ms = g.reduce("ReduceMean", g.node("Mul", [x, x]), [1, 2, 3])
        rms = g.node("Sqrt", [g.node("Add", [ms, g.scalar(self.eps)])])
        gamma = g.const(self.params.numpy().reshape(-1)[:k].reshape(1, k, 1, 1), hint="gamma")
        return g.node("Mul", [g.node("Div", [x, rms]), gamma])


bn_con = layer_template("bn_con", bn_, mode=CONV_MODE)
bn_fc = layer_template("bn_fc", bn_, mode=FC_MODE)
layer_norm = layer_template("layer_norm", layer_norm_)
rms_norm = layer_template("rms_norm", rms_norm_)
