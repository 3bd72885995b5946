"""Solvers: dlib's ``sgd`` and ``adam`` (``dlib/dnn/solvers.h``).

A solver is called as ``step = solver(learning_rate, layer_details, params_grad)`` and returns
the tensor to ADD to the layer's parameters; ``net.update_parameters(solvers,
learning_rate)`` does that for every computational layer, one solver each (index 0 is the
layer nearest the output, as in dlib). The layer's learning-rate and weight-decay
multipliers scale the step; a layer with a bias block (its ``bias_offset``: ``fc_`` with bias,
``con_``, ``cont_``, ``bn_``) gets the bias multipliers there instead, unless both are 1
(dlib's special cases).
"""

from __future__ import annotations

import copy

import numpy as np

from . import tensor_tools as tt
from .core import check_net
from .layers.base import get_learning_rate_multiplier, get_weight_decay_multiplier
from .tensor import resizable_tensor

__all__ = ["sgd", "adam", "make_solvers"]


def _ranges(details, size, lr, wd):
    """``(begin, end, lr, wd)`` pieces of one update (dlib's ``update_considering_bias``)."""
    # the layer says where its bias block is (dlib's solver overloads; a user's layer without
    # the method has none)
    bias_offset = getattr(details, "bias_offset", None)
    offset = bias_offset(size) if bias_offset is not None else None
    if offset is None:
        return [(0, size, lr, wd)]
    blr = details.get_bias_learning_rate_multiplier()
    bwd = details.get_bias_weight_decay_multiplier()
    if blr == 1 and bwd == 1:
        return [(0, size, lr, wd)]
    return [(0, offset, lr, wd), (offset, size, lr * blr, wd * bwd)]


def _check_call(name, learning_rate, details, params_grad):
    params = details.get_layer_params()
    if params.size() == 0:
        raise ValueError(f"{name}: {type(details).__name__} has no parameters to update")
    if params_grad.size() != params.size():
        raise ValueError(f"{name}: params_grad{params_grad.shape} does not match the parameters "
                         f"{params.shape} of {type(details).__name__}")
    return params


class sgd:
    """Stochastic gradient descent with momentum and L2 weight decay:
    ``v = momentum*v - wd*lr*params - lr*params_grad``, returned as the step."""

    def __init__(self, weight_decay=0.0005, momentum=0.9):
        if not weight_decay >= 0 or not momentum >= 0:
            raise ValueError(f"sgd: weight_decay and momentum must be >= 0, got {weight_decay}, {momentum}")
        self.weight_decay = float(np.float32(weight_decay))  # dlib stores floats
        self.momentum = float(np.float32(momentum))
        self.v = resizable_tensor()

    def get_weight_decay(self):
        return self.weight_decay

    def get_momentum(self):
        return self.momentum

    def __call__(self, learning_rate, details, params_grad):
        params = _check_call("sgd", learning_rate, details, params_grad)
        if self.v.size() == 0:
            self.v.copy_size(params_grad)
            self.v.fill(0)
        lr = learning_rate * get_learning_rate_multiplier(details)
        wd = self.weight_decay * get_weight_decay_multiplier(details)
        for begin, end, r_lr, r_wd in _ranges(details, params.size(), lr, wd):
            tt.affine_transform_range(begin, end, self.v, self.v, params, params_grad,
                                      self.momentum, -r_wd * r_lr, -r_lr)
        return self.v

    def __repr__(self):
        return f"sgd: weight_decay={self.weight_decay:g}, momentum={self.momentum:g}"

    # dlib: "sgd2", v, weight_decay (float), momentum (float)
    def serialize(self, w):
        w.string("sgd2")
        w.tensor(self.v)
        w.float32(self.weight_decay)
        w.float32(self.momentum)

    def deserialize(self, r):
        r.expect_string("sgd2", what="the sgd version string 'sgd2'")
        self.v = r.tensor("sgd's v tensor")
        self.weight_decay = r.float32("sgd's weight_decay")
        self.momentum = r.float32("sgd's momentum")


class adam:
    """Adam (Kingma & Ba) with L2 weight decay folded into the gradient, as dlib's."""

    def __init__(self, weight_decay=0.0005, momentum1=0.9, momentum2=0.999):
        for name, val in (("weight_decay", weight_decay), ("momentum1", momentum1), ("momentum2", momentum2)):
            if not 0 <= val < 1 and not (name == "weight_decay" and val >= 0):
                raise ValueError(f"adam: {name} must be in [0, 1), got {val}")
        self.weight_decay = float(np.float32(weight_decay))
        self.momentum1 = float(np.float32(momentum1))
        self.momentum2 = float(np.float32(momentum2))
        self.t = 0.0
        self.m, self.v, self.s = resizable_tensor(), resizable_tensor(), resizable_tensor()

    def get_weight_decay(self):
        return self.weight_decay

    def get_momentum1(self):
        return self.momentum1

    def get_momentum2(self):
        return self.momentum2

    def __call__(self, learning_rate, details, params_grad):
        params = _check_call("adam", learning_rate, details, params_grad)
        if self.v.size() == 0:
            for t in (self.m, self.v):
                t.copy_size(params_grad)
                t.fill(0)
            self.s.copy_size(params_grad)
        self.t += 1
        lr = learning_rate * get_learning_rate_multiplier(details)
        wd = self.weight_decay * get_weight_decay_multiplier(details)
        for begin, end, r_lr, r_wd in _ranges(details, params.size(), lr, wd):
            tt.compute_adam_update(begin, end, self.s, self.m, self.v, self.t, r_lr, r_wd,
                                   self.momentum1, self.momentum2, params, params_grad)
        return self.s

    def __repr__(self):
        return (f"adam: weight_decay={self.weight_decay:g}, momentum1={self.momentum1:g}, "
                f"momentum2={self.momentum2:g}")

    # dlib: "adam2", m, v, s, then weight_decay, momentum1, momentum2, t (all C++ floats)
    def serialize(self, w):
        w.string("adam2")
        for t in (self.m, self.v, self.s):
            w.tensor(t)
        for x in (self.weight_decay, self.momentum1, self.momentum2, self.t):
            w.float32(x)

    def deserialize(self, r):
        r.expect_string("adam2", what="the adam version string 'adam2'")
        self.m = r.tensor("adam's m tensor")
        self.v = r.tensor("adam's v tensor")
        self.s = r.tensor("adam's s tensor")
        self.weight_decay = r.float32("adam's weight_decay")
        self.momentum1 = r.float32("adam's momentum1")
        self.momentum2 = r.float32("adam's momentum2")
        self.t = r.float32("adam's t")


def make_solvers(net, solver):
    """One independent copy of ``solver`` per computational layer of ``net`` (what
    ``dnn_trainer`` keeps), index 0 nearest the output."""
    return [copy.deepcopy(solver) for _ in range(check_net(net, "make_solvers").num_computational_layers())]
