"""test_layer must reject layers that break the contract, and say why."""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import layer_test_results, relu_, test_layer
from dnnpy.layers.base import computational_layer, randomize_parameters


class _scale_by_two_(computational_layer):
    """out = 2*x. ``mode`` selects a correct or a broken backward."""

    def __init__(self, mode="add"):
        super().__init__()
        self.mode = mode

    def forward(self, sub, output):
        output.copy_size(sub.get_output())
        tt.add(0, output, 2, sub.get_output())

    def backward(self, gradient_input, sub, params_grad):
        if self.mode == "add":
            tt.add(1, sub.get_gradient_input(), 2, gradient_input)
        elif self.mode == "assign":  # overwrites the subnet's gradient: breaks the ADD rule
            tt.add(0, sub.get_gradient_input(), 2, gradient_input)
        elif self.mode == "almost":  # 0.1% off: passes dlib's float32 tolerance, not float64's
            tt.add(1, sub.get_gradient_input(), 2.002, gradient_input)


class _channel_scale_(computational_layer):
    """out[n,k,r,c] = x[n,k,r,c] * gamma[k]; ``incomplete`` forgets half of params_grad."""

    def __init__(self, incomplete=False):
        super().__init__()
        self.incomplete = incomplete

    def setup(self, sub):
        self.params.set_size(1, sub.get_output().k())
        randomize_parameters(self.params, 2)

    def forward(self, sub, output):
        x = sub.get_output().host_read()
        output.copy_size(sub.get_output())
        output.assign(x * self.params.host_read().reshape(1, -1, 1, 1))

    def backward(self, gradient_input, sub, params_grad):
        x = sub.get_output().host_read()
        g = gradient_input.host_read()
        gamma = self.params.host_read().reshape(1, -1, 1, 1)
        sub.get_gradient_input().host()[...] += g * gamma
        pg = (g * x).sum(axis=(0, 2, 3))
        if self.incomplete:
            params_grad.host()[0, : pg.size // 2, 0, 0] = pg[: pg.size // 2]
        else:
            params_grad.assign(pg.reshape(params_grad.shape))


class _relu_always_adds_(relu_):
    """In place, ``data_grad is gradient_input`` must be assigned; this one always adds."""

    def backward_inplace(self, computed_output, gradient_input, data_grad, params_grad):
        d = computed_output.host_read()
        data_grad.host()[...] += np.where(d > 0, gradient_input.host_read(), 0)


DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])


@DTYPES
def test_correct_layers_pass(dtype):
    assert test_layer(_scale_by_two_("add"), dtype=dtype)
    assert test_layer(_channel_scale_(), dtype=dtype)


@DTYPES
def test_assigning_data_gradient_is_rejected(dtype):
    result = test_layer(_scale_by_two_("assign"), dtype=dtype)
    assert not result
    assert isinstance(result, layer_test_results)
    assert "data" in result.log


@DTYPES
def test_incomplete_parameter_gradient_is_rejected(dtype):
    result = test_layer(_channel_scale_(incomplete=True), dtype=dtype)
    assert not result
    assert "parameter" in result.log
    assert "inf" in result.log  # the un-assigned entries still hold test_layer's prefill


def test_almost_right_gradient_needs_float64():
    # dlib's float32 tolerances (5% relative) let a 0.1% error through; float64 mode does not
    assert test_layer(_scale_by_two_("almost"), dtype=np.float32)
    result = test_layer(_scale_by_two_("almost"), dtype=np.float64)
    assert not result
    assert "expected derivative" in result.log and "output derivative" in result.log


def test_inplace_assign_rule_is_checked():
    result = test_layer(_relu_always_adds_())
    assert not result
    assert "in-place" in result.log


def test_log_is_empty_and_truthy_when_good():
    result = test_layer(relu_())
    assert result and result.log == ""


def test_test_layer_does_not_modify_its_argument():
    layer = _channel_scale_()
    test_layer(layer)
    assert layer.params.size() == 0
