"""``affine_``: ``out = gamma*x + beta``, batch norm frozen for inference.

``affine_(mode=FC_MODE)`` keeps one gamma/beta per (k, r, c); ``CONV_MODE`` one per channel.
``affine_(a_bn_layer)`` folds a trained ``bn_``'s running statistics into the transform:
``gamma' = gamma/sqrt(running_variance + eps)``, ``beta' = beta - gamma'*running_mean``.

As in dlib's implementation, gamma and beta are NOT learnable: they live in ``params``
(``[gamma, beta]``, serialized) but ``get_layer_params()`` is an empty tensor, so solvers
and ``count_parameters`` never see them. The layer runs in place (dlib's form D:
backward does not need the forward output). ``disable()`` (used by ``fuse_layers``)
frees the parameters and turns the layer into the identity.
"""

from __future__ import annotations

import numpy as np

from .. import tensor_tools as tt
from ..tensor import alias_tensor, resizable_tensor
from ..templates import layer_template
from ._serial import read_alias, write_alias
from .base import computational_layer
from ..printing import xml_matrix
from .norm import CONV_MODE, FC_MODE, bn_, check_mode

__all__ = ["affine_", "affine"]


class affine_(computational_layer):
    """``affine_(mode=FC_MODE)`` or ``affine_(bn_layer)``; see the module docstring."""

    dot_name = "affine"
    backward_needs_output = False

    # dlib's converting constructor affine_(const bn_&): a trained bn layer becomes an affine
    # one (copy_net_as, inference_copy, net_type(net))
    converts_from = (bn_,)

    def template_args(self):
        return {"mode": self.mode}

    def __init__(self, mode=FC_MODE):
        super().__init__()
        self.empty_params = resizable_tensor()
        self.gamma = alias_tensor()
        self.beta = alias_tensor()
        self.disabled = False
        if isinstance(mode, bn_):
            self._from_bn(mode)
        elif isinstance(mode, computational_layer):
            raise TypeError(f"affine_: can only be built from a bn_ layer or a mode, "
                            f"got {type(mode).__name__}")
        else:
            self.mode = check_mode("affine_", mode)

    def _from_bn(self, bn):
        self.mode = bn.mode
        if bn.params.size() == 0:
            # a bn_ never set up converts to a fresh affine_ of its mode (setup will run)
            return
        self.gamma = bn.gamma
        self.beta = bn.beta
        src = bn.params.host_read()
        n = self.gamma.size()
        g = src.reshape(-1)[:n].reshape(self.gamma.shape)
        b = src.reshape(-1)[n:].reshape(self.gamma.shape)
        rm = bn.running_means.host_read().reshape(self.gamma.shape)
        rv = bn.running_variances.host_read().reshape(self.gamma.shape)
        self.params.copy_size(bn.params)
        new_g = g / np.sqrt(rv + bn.get_eps())
        self.gamma(self.params, 0).assign(new_g)
        # dlib computes beta' from the already rounded gamma'
        rounded = self.gamma(self.params, 0).host_read()
        self.beta(self.params, n).assign(b - rounded * rm)

    def get_mode(self):
        return self.mode

    def disable(self):
        self.params.clear()
        self.disabled = True

    def is_disabled(self):
        return self.disabled

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    def get_gamma(self):
        return self.gamma(self.params, 0)

    def get_beta(self):
        return self.beta(self.params, self.gamma.size())

    def get_layer_params(self):
        return self.empty_params

    def setup(self, sub):
        if self.disabled:
            return
        x = sub.get_output()
        if self.mode == FC_MODE:
            self.gamma = alias_tensor(1, x.k(), x.nr(), x.nc())
        else:
            self.gamma = alias_tensor(1, x.k())
        self.beta = self.gamma
        self.params.set_size(self.gamma.size() + self.beta.size())
        self.gamma(self.params, 0).fill(1)
        self.beta(self.params, self.gamma.size()).fill(0)

    def _check(self, x):
        want = self.gamma.shape[1:]
        got = x.shape[1:] if self.mode == FC_MODE else (x.k(), 1, 1)
        if got != want:
            raise ValueError(f"affine_: input{x.shape} does not match the layer's "
                             f"{'(k, nr, nc)' if self.mode == FC_MODE else 'k'} = {want}")

    def forward_inplace(self, input, output):
        if self.disabled:
            # dlib returns without writing; an out-of-place run must still pass the input on
            if output is not input:
                tt.add(0, output, 1, input)
            return
        self._check(input)
        if self.mode == FC_MODE:
            tt.affine_transform_tensors(output, input, self.get_gamma(), self.get_beta())
        else:
            tt.affine_transform_conv(output, input, self.get_gamma(), self.get_beta())

    def backward_inplace(self, gradient_input, data_grad, params_grad):
        add_to = data_grad is not gradient_input
        if self.disabled:
            # identity: in place there is nothing to do (dlib's case); out of place add
            if add_to:
                tt.add(1, data_grad, 1, gradient_input)
            return
        # the gradient of dot(gradient_input, gamma*x + beta) with respect to x
        if self.mode == FC_MODE:
            tt.multiply(add_to, data_grad, gradient_input, self.get_gamma())
        else:
            tt.multiply_conv(add_to, data_grad, gradient_input, self.get_gamma())

    def serialize(self, w):
        """dlib's "affine_2": params, gamma and beta alias shapes, mode (int), disabled.
        A layer read from an old "affine_" record writes "affine_" back (no ``disabled``;
        refused once disabled), so such a file round-trips byte for byte. One read from a
        "bn_con2"/"bn_fc2" record holds the converted transform, not the bn_ record, and
        writes "affine_2", as dlib's affine_ does."""
        version = w.version_string(self, "affine_2", lambda v: (
            f"{v} has no disabled field and the layer is disabled" if self.disabled else None))
        w.tensor(self.params)
        write_alias(w, self.gamma)
        write_alias(w, self.beta)
        w.int(self.mode)
        if version == "affine_2":
            w.bool(self.disabled)

    def deserialize(self, r):
        """Reads "affine_" (no ``disabled``), "affine_2", or a "bn_con2"/"bn_fc2" record,
        converted as dlib's ``affine_(bn_)`` does, in float32:
        ``gamma' = gamma/sqrt(running_variance + eps)``, ``beta' = beta - gamma'*running_mean``
        (the record itself is not kept: the layer then writes "affine_2", as dlib).
        The mode comes from the file (it is a constructor argument, not part of the type).
        An "affine_" version is kept for ``serialize``."""
        start = r.pos
        version = r.version_string(self, "affine_", "affine_2", "bn_con2", "bn_fc2")
        if version in ("bn_con2", "bn_fc2"):
            r.pos = start
            bn = bn_(CONV_MODE if version == "bn_con2" else FC_MODE)
            bn.deserialize(r)
            self._from_bn_record(r, bn)
            self._dlib_version = None  # written as dlib's affine_ writes itself: "affine_2"
            return
        r.tensor("affine_ params", into=self.params)
        gamma = read_alias(r, "affine_ gamma")
        beta = read_alias(r, "affine_ beta")
        at = r.pos
        mode = r.int("affine_ mode")
        if mode not in (CONV_MODE, FC_MODE):
            raise r.error(f"affine_: the file has mode={mode}; expected 0 (CONV_MODE) or 1 (FC_MODE)", at)
        disabled = r.bool("affine_ disabled") if version == "affine_2" else self.disabled
        n = self.params.size()
        if n and (gamma.size() != beta.size() or gamma.size() + beta.size() != n):
            raise r.error(f"affine_: the file's gamma {gamma.shape} and beta {beta.shape} do not "
                          f"match its parameter tensor of {n} values")
        self.gamma, self.beta, self.mode, self.disabled = gamma, beta, mode, disabled

    def _from_bn_record(self, r, bn):
        self.mode = bn.mode
        self.disabled = False
        self.gamma, self.beta = bn.gamma, bn.beta
        n = self.gamma.size()
        if bn.params.size() and (bn.running_means.size() != n or bn.running_variances.size() != n):
            raise r.error(f"affine_: the bn_ record's running statistics {bn.running_means.shape}, "
                          f"{bn.running_variances.shape} do not match gamma {self.gamma.shape}")
        values = _convert_bn_record(bn)
        if values is None:
            self.params.clear()
            return
        self.params.set_size(*values.shape)
        self.params.host_write_only()[...] = values

    def __repr__(self):
        return "affine\t (disabled)" if self.disabled else "affine"

    def to_xml(self):
        name = "affine_con" if self.mode == CONV_MODE else "affine_fc"
        attr = " disabled='true'" if self.disabled else ""
        return f"<{name}{attr}>\n" + xml_matrix(self.params) + f"</{name}>\n"

    def to_onnx(self, g, x):
        """``Mul`` by gamma, ``Add`` beta: ``(1, k, 1, 1)`` in CONV mode, ``(1, k, nr, nc)``
        in FC mode; disabled: nothing."""
        if self.disabled:
            return x
        shape = self.gamma.shape if self.mode == FC_MODE else (1, self.gamma.shape[1], 1, 1)
        gamma = g.const(self.get_gamma().numpy().reshape(shape), hint="gamma")
        beta = g.const(self.get_beta().numpy().reshape(shape), hint="beta")
        return g.node("Add", [g.node("Mul", [x, gamma]), beta])


def _convert_bn_record(bn):
    """The params dlib's ``affine_(bn_)`` computes from a bn_ record (None when it has none):
    dlib's float matrix expressions, eps cast to float, each step rounded to float32."""
    if bn.params.size() == 0:
        return None
    n = bn.gamma.size()
    src = bn.params.host_read().reshape(-1).astype(np.float32)
    rm = bn.running_means.host_read().reshape(-1).astype(np.float32)
    rv = bn.running_variances.host_read().reshape(-1).astype(np.float32)
    with np.errstate(all="ignore"):
        g = src[:n] / np.sqrt(rv + np.float32(bn.eps))
        b = src[n:] - g * rm
    return np.concatenate([g, b]).reshape(bn.params.shape)


affine = layer_template("affine", affine_)
