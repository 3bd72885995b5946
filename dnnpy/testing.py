"""``test_layer``: dlib's numerical gradient checker for computational layers, ported.

For 10 random fake subnets it runs ``setup``, ``forward`` and ``backward`` and checks, with
``f = dot(output, input_grad)``:

* every parameter gradient against central differences (``params_grad`` is pre-filled
  with +inf, so an entry the layer forgets to ASSIGN fails);
* every data gradient against central differences, after subtracting the random values
  the subnet's gradient inputs held before ``backward`` (so a layer that overwrites instead
  of ADDING fails);
* for in-place layers, that in-place and out-of-place runs agree (forward, and backward
  in its assign and add modes).

A step fails when ``|relative error| > 0.05 and |absolute error| > 0.006``; the whole run
fails if the mean relative error over parameters or data exceeds 0.003 (dlib's numbers).
The relative step ``base_eps`` is swept 1e-4, 2e-4, ... 0.0512 and the first passing run
returns. Derivatives are accumulated in float64. As in dlib, the float32 check is noisy for
large layers: the step is relative to each parameter, so a parameter near zero gets a step
that float32 rounding swamps, and a layer with thousands of parameters can fail for some
initialisations; the float64 mode has no such noise and is the check to rely on there.

Beyond dlib: the fake subnet answers ``layer(sub, tagN)`` with an extra random input of
the top level's num_samples, nr and nc (so merge layers can be checked), and
``dtype=np.float64`` runs the layer in float64 with tolerances 1e-4 relative / 1e-6
absolute / 1e-6 mean, where finite differences are exact enough to catch gradients that
are only almost right.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import numpy as np

from . import tensor_tools as tt
from .tensor import default_dtype, resizable_tensor

__all__ = ["test_layer", "layer_test_results"]


@dataclass
class layer_test_results:
    """Truthy when the layer passed; ``log`` says what failed (empty when good)."""

    was_good: bool = True
    log: str = ""
    max_relative_error: float = 0.0
    details: dict = field(default_factory=dict)

    def __bool__(self):
        return self.was_good

    def __str__(self):
        return self.log if self.log else "test_layer: all gradients agree"


class _tolerances:
    def __init__(self, dtype):
        if np.dtype(dtype) == np.float64:
            self.rel, self.abs, self.mean, self.inplace = 1e-4, 1e-6, 1e-6, 1e-12
        else:
            self.rel, self.abs, self.mean, self.inplace = 0.05, 0.006, 0.003, 1e-5


class _fake_subnet:
    """A random stand-in for a layer's SUBNET (dlib's ``test_layer_subnet``).

    Output ~ N(0, 1); gradient input ~ N(0, 0.01), deliberately non-zero. ``subnet()``
    lazily creates a deeper level; ``layer(sub, tagN)`` lazily creates a tagged level with
    this level's num_samples, nr and nc. Every level created is a data input of the test.
    """

    def __init__(self, rnd, levels, shape=None, tagged_shape=None):
        self._tagged_shape = tagged_shape
        if shape is None:
            n = int(rnd.integers(3, 7))
            shape = (n, int(rnd.integers(2, 6)), int(rnd.choice([2, 4])), int(rnd.choice([2, 4])))
        self._rnd = rnd
        self._levels = levels
        levels.append(self)
        self.output = resizable_tensor(*shape)
        self.output.assign(rnd.standard_normal(shape))
        self.gradient_input = resizable_tensor(*shape)
        self.gradient_input.assign(rnd.standard_normal(shape) * 0.01)
        self._sub = None
        self._tagged = {}
        self._template = None

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.gradient_input

    _private_get_output = get_output
    _private_get_gradient_input = get_gradient_input

    def subnet(self):
        if self._sub is None:
            self._sub = _fake_subnet(self._rnd, self._levels)
        return self._sub

    def sample_expansion_factor(self):
        return 1

    def layer_details(self):
        return None

    def input_layer(self):
        return None

    def _find(self, match):
        from .templates import tag_templates

        if match(self):
            return self
        for i, tag in enumerate(tag_templates):
            probe = _fake_probe(tag)
            if match(probe):
                if i not in self._tagged:
                    n, _, nr, nc = self.output.shape
                    if self._tagged_shape is not None:
                        shape = tuple(self._tagged_shape(self.output.shape))
                    else:
                        shape = (n, int(self._rnd.integers(2, 6)), nr, nc)
                    level = _fake_subnet(self._rnd, self._levels, shape)
                    level._template = tag
                    self._tagged[i] = level
                return self._tagged[i]
        return None


class _fake_probe:
    __slots__ = ("_template",)

    def __init__(self, template):
        self._template = template


def _is_inplace(layer):
    return hasattr(layer, "forward_inplace")


def _forward(layer, sub, output):
    """dlib's call_layer_forward: in-place layers run out of place into ``output``."""
    if _is_inplace(layer):
        output.copy_size(sub.get_output())
        layer.forward_inplace(sub.get_output(), output)
    else:
        layer.forward(sub, output)


def _backward(layer, computed_output, gradient_input, sub, params_grad):
    needs = getattr(layer, "backward_needs_output", False)
    if _is_inplace(layer):
        args = (gradient_input, sub.get_gradient_input(), params_grad)
        layer.backward_inplace(*((computed_output,) + args if needs else args))
    elif needs:
        layer.backward(computed_output, gradient_input, sub, params_grad)
    else:
        layer.backward(gradient_input, sub, params_grad)


def _like(t, values):
    out = resizable_tensor()
    out.copy_size(t)
    out.assign(values)
    return out


def _fail(log):
    return layer_test_results(False, log)


def _error_line(kind, i, ref, out, it):
    rel = (ref - out) / ref if ref * out != 0 else ref - out
    return (f"Gradient error in {kind} #{i}.  Relative error: {rel:.6g}\n"
            f"expected derivative: {ref:.9g}\n"
            f"output derivative:   {out:.9g}\n"
            f"iteration:           {it}\n")


def _impl_test_layer(layer, base_eps, tol, seed, input_shape, tagged_shape):
    rnd = np.random.default_rng(seed)
    rs_params, rs_data = [], []
    max_rel = 0.0
    for it in range(10):
        levels = []
        sub = _fake_subnet(rnd, levels, input_shape, tagged_shape)
        layer.setup(sub)
        output = resizable_tensor()
        _forward(layer, sub, output)
        input_grad = _like(output, rnd.standard_normal(output.shape))

        inputs = list(levels)  # every level created by setup/forward is a data input
        initial = [lv.gradient_input.host_read().copy() for lv in inputs]

        params = layer.get_layer_params()
        params_grad = resizable_tensor()
        params_grad.copy_size(params)
        params_grad.fill(np.inf)
        _backward(layer, output, input_grad, sub, params_grad)

        if _is_inplace(layer):
            bad = _check_inplace(layer, rnd, tol)
            if bad:
                return _fail(bad)

        def f(out):
            return tt.dot(out, input_grad)

        # parameter gradients
        out2, out3 = resizable_tensor(), resizable_tensor()
        pg = params_grad.host_read().reshape(-1)
        for i in range(params.size()):
            l1 = copy.deepcopy(layer)
            p = l1.get_layer_params().host().reshape(-1)
            old = p[i]
            eps = old * base_eps if old * base_eps != 0 else base_eps
            eps = p.dtype.type(eps)
            p[i] = old + eps
            _forward(l1, sub, out2)
            p = l1.get_layer_params().host().reshape(-1)
            p[i] = old - eps
            _forward(l1, sub, out3)
            ref = (f(out2) - f(out3)) / (2 * float(eps))
            got = float(pg[i])
            rel = (ref - got) / ref if ref * got != 0 else ref - got
            rs_params.append(abs(rel))
            max_rel = max(max_rel, abs(rel)) if np.isfinite(rel) else np.inf
            if not (abs(rel) <= tol.rel or abs(ref - got) <= tol.abs):
                return _fail(_error_line("parameter", i, ref, got, it))

        # data gradients (outputs of every fake level), net of the initial gradient inputs
        index = 0
        for lv, init in zip(inputs, initial):
            flat_grad = lv.gradient_input.host_read().reshape(-1)
            for j in range(lv.output.size()):
                x = lv.output.host().reshape(-1)
                old = x[j]
                eps = x.dtype.type(old * base_eps if old * base_eps != 0 else base_eps)
                x[j] = old + eps
                _forward(layer, sub, out2)
                x = lv.output.host().reshape(-1)
                x[j] = old - eps
                _forward(layer, sub, out3)
                x = lv.output.host().reshape(-1)
                x[j] = old
                ref = (f(out2) - f(out3)) / (2 * float(eps))
                got = float(flat_grad[j]) - float(init.reshape(-1)[j])
                rel = (ref - got) / ref if ref * got != 0 else ref - got
                rs_data.append(abs(rel))
                max_rel = max(max_rel, abs(rel)) if np.isfinite(rel) else np.inf
                if not (abs(rel) <= tol.rel or abs(ref - got) <= tol.abs):
                    return _fail(_error_line("data variable", index, ref, got, it))
                index += 1

    if rs_params and np.mean(rs_params) > tol.mean:
        return _fail(f"Average parameter gradient error is somewhat large at: {np.mean(rs_params):.6g}\n")
    if rs_data and np.mean(rs_data) > tol.mean:
        return _fail(f"Average data gradient error is somewhat large at: {np.mean(rs_data):.6g}\n")
    return layer_test_results(True, "", max_rel)


def _check_inplace(layer, rnd, tol):
    """In-place and out-of-place runs of an in-place layer must agree (dlib's check)."""
    sub2 = _fake_subnet(rnd, [])
    ll = copy.deepcopy(layer)
    ll.setup(sub2)
    ip_out = resizable_tensor()
    _forward(ll, sub2, ip_out)
    ll.forward_inplace(sub2.output, sub2.output)
    err = float(np.max(np.abs(np.asarray(ip_out, np.float64) - np.asarray(sub2.output, np.float64))))
    if err > tol.inplace:
        return ("This layer is supposed to support in-place computations but the output of "
                f"forward_inplace()\nchanges when invoked in-place vs. out-of-place. The error was: {err:.6g}\n")
    params_grad1 = resizable_tensor()
    params_grad1.copy_size(ll.get_layer_params())
    params_grad1.fill(np.inf)
    params_grad2 = params_grad1.copy()
    input_grad = _like(ip_out, rnd.standard_normal(ip_out.shape))
    sub2.gradient_input.fill(9)
    _backward(ll, ip_out, input_grad, sub2, params_grad1)        # distinct tensors: must add
    data_grad1 = np.asarray(sub2.gradient_input, np.float64).copy()
    sub2.gradient_input.assign(input_grad)
    _backward(ll, ip_out, sub2.gradient_input, sub2, params_grad2)  # aliased: must assign
    data_grad2 = np.asarray(sub2.gradient_input, np.float64)
    if params_grad1.size():
        perr = float(np.max(np.abs(np.asarray(params_grad1, np.float64) - np.asarray(params_grad2, np.float64))))
        if not perr <= tol.inplace:
            return ("This layer is supposed to support in-place computations but the output of "
                    f"backward_inplace()\nchanges when invoked in-place vs. out-of-place. The error was: {perr:.6g}\n")
    derr = float(np.max(np.abs(data_grad1 - 9 - data_grad2)))
    if not derr <= tol.inplace:
        return ("This layer is supposed to support in-place computations but the output of "
                f"backward_inplace()\nchanges when invoked in-place vs. out-of-place (it must add to "
                f"data_grad unless data_grad is gradient_input). The error was: {derr:.6g}\n")
    return None


@contextlib.contextmanager
def _parameter_seed(seed):
    """Parameters drawn by ``setup`` come from a generator seeded with ``seed`` (the global
    one is restored after), so a test_layer result does not depend on what ran before."""
    from .layers import base

    saved = base._rng
    base._rng = np.random.default_rng(seed)
    try:
        yield
    finally:
        base._rng = saved


def test_layer(layer, dtype=np.float32, seed=0, input_shape=None, tagged_shape=None) -> layer_test_results:
    """Check ``layer``'s gradients numerically (dlib's ``test_layer``, see module doc).

    ``layer`` is a details object (``con_(3,3,3,1,1)``); it is copied, never modified.
    ``input_shape=(n, k, nr, nc)`` fixes the fake subnet's output shape (dlib draws n in
    3..6, k in 2..5, nr and nc in {2, 4}); ``seed`` seeds the random subnets and the
    parameters ``setup`` draws (so results do not depend on what ran before).
    ``tagged_shape``: a function from the fake subnet's shape to the shape of the level
    that ``layer(sub, tagN)`` returns (default: same n, nr, nc and a random k in 2..5), for
    merge layers that need a particular tagged shape (``scale_``, ``multm_prev_``).
    Returns a ``layer_test_results``: truthy when good, ``.log`` naming the failing
    variable with the expected and actual derivative otherwise.
    """
    tol = _tolerances(dtype)
    layer = copy.deepcopy(layer)
    with default_dtype(dtype), _parameter_seed(seed):
        base_eps = 1e-4
        while base_eps < 0.1:
            result = _impl_test_layer(copy.deepcopy(layer), base_eps, tol, seed, input_shape, tagged_shape)
            if result:
                return result
            base_eps *= 2
        return _impl_test_layer(copy.deepcopy(layer), 0.01, tol, seed, input_shape, tagged_shape)


test_layer.__test__ = False  # keep pytest from collecting it when imported into a test module
