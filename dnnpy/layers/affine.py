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
from .base import computational_layer
from ..printing import xml_matrix
from .norm import CONV_MODE, FC_MODE, bn_, check_mode

__all__ = ["affine_", "affine"]


class affine_(computational_layer):
    """``affine_(mode=FC_MODE)`` or ``affine_(bn_layer)``; see the module docstring."""

    backward_needs_output = False

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

    def __repr__(self):
        return "affine\t (disabled)" if self.disabled else "affine"

    def to_xml(self):
        name = "affine_con" if self.mode == CONV_MODE else "affine_fc"
        attr = " disabled='true'" if self.disabled else ""
        return f"<{name}{attr}>\n" + xml_matrix(self.params) + f"</{name}>\n"


affine = layer_template("affine", affine_)
