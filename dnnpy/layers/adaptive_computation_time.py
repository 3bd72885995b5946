"""``adaptive_computation_time_``: Graves' adaptive computation time, as dlib implements it.

The input is read as ``(batch, num_channels, seq_len, d_model)``; each (n, s) row is a
position. Every step computes the halting probability ``p = sigmoid(W . x + b)`` of each
position from its (unchanged) input row, and accumulates ``e = min(p * remainder,
threshold - cumulative)`` of the input into the output until the cumulative halting
reaches ``halt_threshold`` or ``max_steps`` steps ran; the remainder is added at the end.

Implementation facts kept from dlib (layers.h):

* the effective weights of a position sum to ``cumulative + remainder == 1`` whenever the
  remainder exceeds 1e-6, so the output equals the input up to rounding;
* backward ADDS ``effective_weight * gradient_input`` to the input gradient and sets the
  parameter gradient to 0 (the halting parameters are never trained by gradient);
* with depth scaling enabled, backward then multiplies the WHOLE input gradient (including
  what it held before) by ``1 + 0.1 * n_steps / max_steps`` per position.
"""

from __future__ import annotations

import numpy as np

from .. import tensor_tools as tt
from ..tensor import resizable_tensor
from ..templates import layer_template
from . import base
from ._serial import assign_tensor
from .base import check_int, computational_layer
from ..printing import cpp_num, xml_matrix, xml_num

__all__ = ["adaptive_computation_time_", "adaptive_computation_time", "act", "act4", "act16"]


def _f32(x):
    """A value as dlib's ``float`` member holds it."""
    return float(np.float32(x))


class adaptive_computation_time_(computational_layer):
    def __init__(self, max_steps=8):
        super().__init__()
        self.max_steps_ = check_int("adaptive_computation_time_", "max_steps", max_steps, 1)
        self.halt_threshold_ = _f32(0.99)   # theta
        self.ponder_penalty_ = _f32(0.01)   # lambda
        self.enable_depth_scaling_ = False
        self.batch_size_ = 0
        self.seq_len_ = 0
        self.d_model_ = 0
        self.num_channels_ = 0
        self.feature_dim_ = 0
        self.ponder_cost_ = 0.0
        self.avg_steps_ = 0.0
        self.halting_probs_ = resizable_tensor()
        self.cumulative_halting_ = resizable_tensor()
        self.remainders_ = resizable_tensor()
        self.n_steps_ = resizable_tensor()
        self.logits_ = resizable_tensor()
        self.grad_logits_ = resizable_tensor()
        self.input_cache_ = resizable_tensor()
        self.true_effective_weights_ = resizable_tensor()

    # dlib's accessors
    def template_args(self):
        """The template arguments this layer holds (dlib keeps ``max_steps_``): how
        ``add_layer[adaptive_computation_time_(4), SUBNET]`` finds ``act4``."""
        return {"max_steps": self.max_steps_}

    def get_max_steps(self):
        return self.max_steps_

    def get_halt_threshold(self):
        return self.halt_threshold_

    def get_ponder_penalty(self):
        return self.ponder_penalty_

    def set_halt_threshold(self, threshold):
        if 0 < threshold <= 1:  # dlib ignores values outside (0, 1]
            self.halt_threshold_ = _f32(threshold)

    def set_ponder_penalty(self, penalty):
        if penalty >= 0:  # dlib ignores negative values
            self.ponder_penalty_ = _f32(penalty)

    def get_ponder_cost(self):
        return self.ponder_cost_

    def get_average_steps(self):
        return self.avg_steps_

    def enable_depth_scaling(self):
        self.enable_depth_scaling_ = True

    def disable_depth_scaling(self):
        self.enable_depth_scaling_ = False

    def depth_scaling_enabled(self):
        return self.enable_depth_scaling_

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    # -----------------------------------------------------------------------------------
    def setup(self, sub):
        x = sub.get_output()
        self.batch_size_, self.num_channels_, self.seq_len_, self.d_model_ = x.shape
        self.feature_dim_ = self.d_model_ * self.num_channels_
        self.params.set_size(1, 1, self.feature_dim_ + 1, 1)
        # He initialisation of W, zero bias (dlib)
        p = self.params.host_write_only().reshape(-1)
        p[:-1] = base._rng.standard_normal(self.feature_dim_) * np.sqrt(2.0 / self.feature_dim_)
        p[-1] = 0
        self._allocate_workspace()

    def _allocate_workspace(self):
        positions = self.batch_size_ * self.seq_len_
        for t in (self.halting_probs_, self.cumulative_halting_, self.remainders_, self.n_steps_,
                  self.logits_, self.grad_logits_, self.true_effective_weights_):
            t.set_size(positions, 1, 1, 1)
        self.input_cache_.set_size(self.batch_size_, self.num_channels_, self.seq_len_, self.d_model_)

    def forward(self, sub, output):
        x = sub.get_output()
        if x.shape[1:] != (self.num_channels_, self.seq_len_, self.d_model_):
            raise ValueError(f"adaptive_computation_time_: input{x.shape} does not match the (k, nr, nc) = "
                             f"({self.num_channels_}, {self.seq_len_}, {self.d_model_}) it was set up for")
        output.copy_size(x)
        if (x.num_samples() != self.batch_size_
                or self.halting_probs_.size() != self.batch_size_ * self.seq_len_):
            # (the second test: a deserialized layer allocates its workspace here, lazily)
            self.batch_size_ = x.num_samples()
            self._allocate_workspace()
        output.fill(0)
        self.cumulative_halting_.fill(0)
        self.remainders_.fill(1)
        self.n_steps_.fill(0)
        self.input_cache_.copy_size(x)
        tt.add(0, self.input_cache_, 1, x)
        self.true_effective_weights_.set_size(self.batch_size_ * self.seq_len_, 1, 1, 1)
        self.true_effective_weights_.fill(0)

        dims = (self.batch_size_, self.seq_len_, self.d_model_, self.num_channels_)
        for step in range(self.max_steps_):
            tt.compute_act_halt_probabilities(self.halting_probs_, self.logits_, x, self.params,
                                              self.batch_size_, self.seq_len_, self.feature_dim_)
            tt.update_act_state(output, x, self.halting_probs_, self.cumulative_halting_, self.remainders_,
                                self.n_steps_, self.true_effective_weights_, *dims, self.halt_threshold_, step)
            if self._all_positions_halted():
                break
        tt.finalize_act_output(output, x, self.remainders_, self.true_effective_weights_, *dims)
        self._compute_ponder_stats()

    def _all_positions_halted(self):
        cum = self.cumulative_halting_.host_read()
        return bool(np.all(cum >= cum.dtype.type(self.halt_threshold_)))

    def _compute_ponder_stats(self):
        steps = self.n_steps_.host_read()
        self.avg_steps_ = _f32(steps.astype(np.float32).sum(dtype=np.float32) / np.float32(steps.size))
        self.ponder_cost_ = _f32(np.float32(self.avg_steps_) / np.float32(self.max_steps_))

    def backward(self, gradient_input, sub, params_grad):
        data_grad = sub.get_gradient_input()
        tt.act_data_gradient(data_grad, gradient_input, self.true_effective_weights_)
        params_grad.fill(0)  # dlib: the halting parameters get no gradient
        if self.enable_depth_scaling_:
            tt.apply_act_depth_scaling(data_grad, self.n_steps_, self.batch_size_, self.seq_len_,
                                       self.d_model_, self.num_channels_, float(self.max_steps_), 0.1)

    _SER_DIMS = ("batch_size_", "seq_len_", "d_model_", "num_channels_", "feature_dim_")

    def serialize(self, w):
        """dlib's "act_": max_steps_ (long), halt_threshold_, ponder_penalty_ (floats),
        enable_depth_scaling_ (bool), batch_size_, seq_len_, d_model_, num_channels_,
        feature_dim_ (longs), params (tensor)."""
        w.string("act_")
        w.int(self.max_steps_)
        w.float32(self.halt_threshold_)
        w.float32(self.ponder_penalty_)
        w.bool(self.enable_depth_scaling_)
        for f in self._SER_DIMS:
            w.int(getattr(self, f))
        w.tensor(self.params)

    def deserialize(self, r):
        """max_steps_ must be the type's; the rest is restored. dlib reallocates the workspace
        here; dnnpy empties it and the next forward allocates it (so corrupted batch or
        sequence sizes in a file never cause a giant allocation). The dims must be >= 0, feature_dim_ = d_model_ *
        num_channels_, and params empty or ``feature_dim_ + 1`` values."""
        who = "adaptive_computation_time_ (act_)"
        r.expect_string("act_")
        at = r.pos
        max_steps = r.int("act_'s max_steps_")
        if max_steps != self.max_steps_:
            raise r.error(f"{who}: the file has max_steps={max_steps} but the net type has "
                          f"max_steps={self.max_steps_}", at)
        threshold = r.float32("act_'s halt_threshold_")
        penalty = r.float32("act_'s ponder_penalty_")
        depth_scaling = r.bool("act_'s enable_depth_scaling_")
        dims_at = r.pos
        dims = [r.int(f"act_'s {f}") for f in self._SER_DIMS]
        params_at = r.pos
        params = r.tensor("act_'s params")
        batch, seq, d_model, channels, feature_dim = dims
        if min(dims) < 0 or feature_dim != d_model * channels:
            raise r.error(f"{who}: the file's dims {dict(zip(self._SER_DIMS, dims))} are inconsistent",
                          dims_at)
        if params.size() not in (0, feature_dim + 1):
            raise r.error(f"{who}: the file's params {params.shape} must hold feature_dim + 1 = "
                          f"{feature_dim + 1} values", params_at)
        self.halt_threshold_, self.ponder_penalty_ = threshold, penalty
        self.enable_depth_scaling_ = depth_scaling
        (self.batch_size_, self.seq_len_, self.d_model_, self.num_channels_,
         self.feature_dim_) = dims
        assign_tensor(self.params, params)
        for t in (self.halting_probs_, self.cumulative_halting_, self.remainders_, self.n_steps_,
                  self.logits_, self.grad_logits_, self.true_effective_weights_, self.input_cache_):
            t.set_size(0, 0, 0, 0)

    def __repr__(self):
        return (f"act (steps={self.max_steps_}, dim={self.feature_dim_}, "
                f"threshold={cpp_num(self.halt_threshold_)}, penalty={cpp_num(self.ponder_penalty_)})")

    def to_xml(self):
        return (f"<act steps='{self.max_steps_}' dim='{self.feature_dim_}' threshold='{xml_num(self.halt_threshold_)}'"
                f" penalty='{xml_num(self.ponder_penalty_)}'"
                f" depth_scaling='{'true' if self.enable_depth_scaling_ else 'false'}'>\n"
                + xml_matrix(self.params) + "</act>\n")

    def to_onnx(self, g, x):
        """``Identity``: every position's effective weights sum to 1, so the output is the
        input up to rounding (see the module docstring)."""
        return x


adaptive_computation_time = layer_template("adaptive_computation_time", adaptive_computation_time_)
act = layer_template("act", adaptive_computation_time_, max_steps=8)
act4 = layer_template("act4", adaptive_computation_time_, max_steps=4)
act16 = layer_template("act16", adaptive_computation_time_, max_steps=16)
