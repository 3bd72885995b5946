"""test_layer must reject layers that break the contract, and say why."""

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import layer_test_results, relu_, test_layer
from dnnpy.layers.base import computational_layer, gradient_input_target, randomize_parameters
from dnnpy.testing import EPS_VALUES, replaying_rand
from helpers import swish_


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
        else:  # the stale-target path: right ("target"), or assigning only half ("half")
            grad, add_to = gradient_input_target(sub)
            if add_to:
                tt.add(1, grad, 2, gradient_input)
            else:
                g = 2 * gradient_input.host_read()
                out = grad.host()
                if self.mode == "half":
                    out[:, : out.shape[1] // 2] = g[:, : out.shape[1] // 2]
                else:
                    out[...] = g


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


@DTYPES
def test_the_stale_target_path_must_assign_every_element(dtype):
    assert test_layer(_scale_by_two_("target"), dtype=dtype)
    bad = test_layer(_scale_by_two_("half"), dtype=dtype)
    assert not bad and "add_to=False" in bad.log and "unwritten (NaN)" in bad.log


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


# ----------------------------------------------------------------------------------------
# parameters are redrawn after setup (newcomer finding 4)

_swish_ = swish_   # tests/helpers.py


@DTYPES
def test_gradient_hidden_by_an_initial_parameter_fails(dtype):
    assert test_layer(_swish_(), dtype=dtype)
    assert test_layer(_swish_(0.3), dtype=dtype)
    bad = test_layer(_swish_(forget_beta=True), dtype=dtype)
    assert not bad and "data variable" in bad.log
    assert bad.randomized_params
    # dlib's behaviour (the values setup wrote, beta = 1) misses it
    assert test_layer(_swish_(forget_beta=True), dtype=dtype, randomize_params=False)


def test_randomize_params_takes_a_draw_function():
    seen = []

    def draw(values, rng):
        seen.append(values.copy())
        return rng.uniform(2.0, 3.0, values.shape)   # positive only

    assert test_layer(_swish_(), dtype=np.float64, randomize_params=draw)
    assert seen and all(np.all(v == 1.0) for v in seen)     # it gets what setup wrote
    with pytest.raises(ValueError, match="returned"):
        test_layer(_swish_(), randomize_params=lambda v, rng: np.zeros(3))
    with pytest.raises(TypeError, match="randomize_params"):
        test_layer(_swish_(), randomize_params="yes")


def test_layers_that_are_not_learnable_keep_their_state():
    # affine_ has no learnable parameters (get_layer_params() is empty): nothing is redrawn
    from dnnpy import affine_, bn_
    assert test_layer(affine_())
    assert test_layer(bn_(dnnpy.CONV_MODE), dtype=np.float64)


# ----------------------------------------------------------------------------------------
# random layers

class _random_gate_(computational_layer):
    """out = x * u with u uniform in (0, 1], a new draw at every forward from ``self.rnd``."""

    def __init__(self):
        super().__init__()
        self.rnd = tt.tensor_rand(5)
        self.u = dnnpy.resizable_tensor()

    def forward(self, sub, output):
        self.u.copy_size(sub.get_output())
        self.rnd.fill_uniform(self.u)
        output.copy_size(sub.get_output())
        tt.multiply(False, output, sub.get_output(), self.u)

    def backward(self, gradient_input, sub, params_grad):
        tt.multiply(True, sub.get_gradient_input(), self.u, gradient_input)


def test_dropout_passes_with_its_random_draws_frozen():
    layer = dnnpy.dropout_(0.5)
    result = test_layer(layer)
    assert result, result.log
    assert result.frozen_random == ("rnd",)
    assert "random draws frozen" in str(result)
    assert type(layer.rnd) is tt.tensor_rand          # the caller's layer keeps its source
    assert test_layer(dnnpy.dropout_rate_(30), dtype=np.float64)


def test_a_user_layer_drawing_from_a_tensor_rand_attribute_is_frozen():
    result = test_layer(_random_gate_(), dtype=np.float64)
    assert result and result.frozen_random == ("rnd",)


def test_replaying_rand_repeats_its_draws():
    r = replaying_rand(3)
    a, b = dnnpy.resizable_tensor(2, 3), dnnpy.resizable_tensor(2, 3)
    r.fill_uniform(a)
    r.fill_uniform(b)
    assert np.array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------------------
# contract mistakes get a message naming them

class _returns_its_output_(_scale_by_two_):
    def forward(self, sub, output):
        return sub.get_output().host_read() * 2          # BUG: output never written


class _resizes_params_grad_(_channel_scale_):
    def backward(self, gradient_input, sub, params_grad):
        super().backward(gradient_input, sub, params_grad)
        params_grad.set_size(params_grad.size())          # BUG: (1,k,1,1) -> (k,1,1,1)


class _no_super_init_(computational_layer):
    def __init__(self):                                   # BUG: no super().__init__()
        self.scale = 2.0

    def forward(self, sub, output):
        output.copy_size(sub.get_output())

    def backward(self, gradient_input, sub, params_grad):
        pass


class _writes_its_input_(_scale_by_two_):
    def forward(self, sub, output):
        super().forward(sub, output)
        sub.get_output().host()[0, 0, 0, 0] = 0           # BUG: the subnet's output changed


def test_forward_changing_its_input_is_named():
    result = test_layer(_writes_its_input_())
    assert not result
    assert "forward changed the subnet's output (subnet level 0(" in result.log
    assert ": 1 of " in result.log


class _records_setups_(_channel_scale_):
    """Fails every run at its first parameter check (incomplete params_grad), so each of the
    eleven runs makes one setup; records what each setup saw and drew."""

    def setup(self, sub):
        super().setup(sub)
        type(self).seen.append((sub.get_output().host_read().copy(),
                                self.get_layer_params().host_read().copy()))


def test_parameters_are_fresh_for_each_step_size():
    """dlib's runs share their fake subnets and draw new parameters at every setup (its
    layers seed from std::rand()); so do dnnpy's, per step size, reproducibly."""
    _records_setups_.seen = []
    assert not test_layer(_records_setups_(incomplete=True), randomize_params=False)
    first = _records_setups_.seen
    assert len(first) == 11
    assert all(np.array_equal(x, first[0][0]) for x, _ in first)            # same subnets
    assert len({p.tobytes() for _, p in first}) == 11                         # fresh parameters
    _records_setups_.seen = []
    test_layer(_records_setups_(incomplete=True), randomize_params=False)
    assert all(np.array_equal(p, q) for (_, p), (_, q) in zip(first, _records_setups_.seen))


def test_forward_leaving_output_empty_is_named():
    result = test_layer(_returns_its_output_())
    assert not result
    assert "forward left `output` empty" in result.log and "output.copy_size(...)" in result.log
    assert "returned a ndarray" in result.log


def test_backward_resizing_params_grad_fails():
    result = test_layer(_resizes_params_grad_())
    assert not result and "resized params_grad" in result.log


def test_missing_super_init_is_named():
    result = test_layer(_no_super_init_())
    assert not result and "super().__init__()" in result.log


def test_inplace_message_says_what_it_measured():
    result = test_layer(_relu_always_adds_())
    assert "largest" in result.log and "allowed" in result.log


# ----------------------------------------------------------------------------------------
# step sizes tried best-first; what max_relative_error reports

def test_best_first_order_covers_dlibs_steps():
    from dnnpy.testing import _EPS_ORDER

    for order in _EPS_ORDER.values():
        assert sorted(order) == sorted(EPS_VALUES) and len(EPS_VALUES) == 11


@pytest.mark.parametrize("make", [lambda: relu_(), lambda: dnnpy.max_pool_(2, 2, 2, 2),
                                  lambda: dnnpy.sig_(), lambda: _scale_by_two_("assign")])
def test_best_first_gives_dlibs_verdict(make, monkeypatch):
    import dnnpy.testing as testing

    best_first = test_layer(make())
    monkeypatch.setitem(testing._EPS_ORDER, np.dtype(np.float32), EPS_VALUES)   # dlib's order
    ascending = test_layer(make())
    assert bool(best_first) == bool(ascending)
    if not ascending:   # none passed: both report dlib's last run, at 0.01
        assert best_first.eps == ascending.eps == 0.01 and best_first.log == ascending.log
        assert best_first.runs == 11


@DTYPES
def test_max_relative_error_of_a_passing_layer_is_within_tolerance(dtype):
    rel = 0.05 if dtype == np.float32 else 1e-4
    for layer in (relu_(), _swish_(0.3), dnnpy.fc_(3)):
        result = test_layer(layer, dtype=dtype)
        assert result and result.max_relative_error <= rel and result.eps in EPS_VALUES


def test_tagged_shape_can_be_a_shape():
    assert test_layer(dnnpy.scale_(dnnpy.tag1), input_shape=(2, 3, 1, 1), tagged_shape=(2, 3, 4, 4))
