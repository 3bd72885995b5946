"""``test_layer``: dlib's numerical gradient checker for computational layers, ported.

For 10 random fake subnets it runs ``setup``, ``forward`` and ``backward`` and checks, with
``f = dot(output, input_grad)``:

* every parameter gradient against central differences (``params_grad`` is pre-filled
  with +inf, so an entry the layer forgets to ASSIGN fails; a backward that resizes
  ``params_grad`` fails);
* every data gradient against central differences, after subtracting the random values
  the subnet's gradient inputs held before ``backward`` (so a layer that overwrites instead
  of ADDING fails);
* that ``forward`` leaves its subnet's outputs as they were ("forward changed the subnet's
  output");
* for in-place layers, that in-place and out-of-place runs agree (forward, and backward
  in its assign and add modes);
* for a layer that asks ``sub.get_gradient_input_target()`` (the optional "assign when the
  target is stale" path, docs/layer_interface.md), that with ``add_to=False`` it assigns
  every element of a NaN-filled gradient and gets what the add path adds.

A step fails when ``|relative error| > 0.05 and |absolute error| > 0.006``; the whole run
fails if the mean relative error over parameters or data exceeds 0.003 (dlib's numbers).
Derivatives are accumulated in float64.

Step sizes. dlib sweeps the relative step ``base_eps`` over 1e-4, 2e-4, ... 0.0512 and then
0.01, and the layer passes iff one of these runs passes. Here the same eleven values are
tried best-first (in float32 the values that pass most often come first), which gives the
same verdict with fewer runs: every run is independent of the others (reseeded for each: as
in dlib, every run sees the same fake subnets and the parameters ``setup`` draws are fresh
for each step size), so the order cannot change which values pass. When none passes, the
report is that of 0.01, as in dlib. As in dlib, the float32
check is noisy for large layers: the step is relative to each parameter, so a parameter near
zero gets a step that float32 rounding swamps; the float64 mode has no such noise and is the
check to rely on there.

Beyond dlib:

* ``randomize_params`` (default on): after every ``setup`` the learnable parameters
  (``get_layer_params()``) are redrawn, seeded: each is scaled by a random factor in
  [0.5, 1.5] with a random sign, and those at or near 0 start from half the tensor's typical
  size (``_redraw``), so a gradient that is only right at the initial values (a scale that
  starts at 1, a shift that starts at 0) fails while the layer keeps its usual scale.
  ``randomize_params=False`` checks the values ``setup`` writes, as dlib does; a callable
  ``draw(values, rng) -> new values`` draws them for layers whose parameters have
  constraints (say, a variance that must stay positive).
* Random layers: every attribute of the layer that holds a ``tt.tensor_rand`` (as
  ``dropout_.rnd`` does) is replaced, in the copy under test, by a ``replaying_rand``: every
  fill restarts from the seed, so every forward of a given shape draws the same numbers and
  finite differences can follow the layer. The result says which attributes were frozen.
  A user layer that draws its randomness from a ``tt.tensor_rand`` attribute gets this for
  free (docs/layer_interface.md).
* The fake subnet answers ``layer(sub, tagN)`` with an extra random input of the top
  level's num_samples, nr and nc (so merge layers can be checked), or of ``tagged_shape``.
* ``dtype=np.float64`` runs the layer in float64 with tolerances 1e-4 relative / 1e-6
  absolute / 1e-6 mean, where finite differences are exact enough to catch gradients that
  are only almost right.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import numpy as np

from . import tensor_tools as tt
from .core import backward_inplace_takes_add_to
from .layers.base import computational_layer, seeded_initialisation
from .templates import tag_templates
from .tensor import default_dtype, resizable_tensor

__all__ = ["test_layer", "layer_test_results", "replaying_rand", "EPS_VALUES"]

# dlib's sweep: base_eps = 1e-4, doubled while < 0.1 (ten values), then a last run at 0.01
EPS_VALUES = tuple(1e-4 * 2.0 ** i for i in range(10)) + (0.01,)

# The order the values are tried in: the verdict is the same in any order (runs are
# independent); the order only decides how many runs a passing layer costs. float32, measured
# on the layer table (tests/layer_cases, 124 rows, parameters redrawn): smooth layers pass with
# a large step (float32 rounding swamps a small one), piecewise ones (max_pool, clipped_relu,
# embeddings) only with a small one (a large one crosses their kinks), so 0.0256 first, then
# 1e-4, then 0.0512, then the rest ascending: 132 runs instead of dlib's 418. float64: dlib's
# order (1e-4 nearly always passes).
_EPS_ORDER = {
    np.dtype(np.float32): (0.0256, 0.0001, 0.0512, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064,
                           0.01, 0.0128),
    np.dtype(np.float64): EPS_VALUES,
}


@dataclass
class layer_test_results:
    """Truthy when the layer passed; ``log`` says what failed (empty when good).

    ``max_relative_error``: over the checked derivatives of the reported run, the largest
    ``|relative error|`` among those whose absolute error exceeded the absolute tolerance,
    i.e. the ones the relative tolerance decided (a derivative within the absolute tolerance
    passed outright and counts as 0). A passing layer has it <= the relative tolerance.
    ``eps``: the relative step of the reported run; ``runs``: how many runs were made.
    ``frozen_random``: the attributes whose ``tensor_rand`` was replaced by a
    ``replaying_rand``; ``randomized_params``: whether parameters were redrawn after ``setup``
    (False for a layer without learnable parameters).
    """

    was_good: bool = True
    log: str = ""
    max_relative_error: float = 0.0
    details: dict = field(default_factory=dict)
    eps: float | None = None
    runs: int = 0
    frozen_random: tuple = ()
    randomized_params: bool = False

    def __bool__(self):
        return self.was_good

    def notes(self) -> str:
        """What test_layer did beyond dlib's algorithm, in words (empty when nothing)."""
        out = []
        if self.frozen_random:
            out.append(f"random draws frozen: {', '.join(self.frozen_random)} replayed the same "
                       f"numbers at every forward (test_layer's replaying_rand)")
        return "\n".join(out)

    def __str__(self):
        text = self.log if self.log else "test_layer: all gradients agree"
        notes = self.notes()
        return f"{text.rstrip()}\n({notes})" if notes else text


class _tolerances:
    def __init__(self, dtype):
        if np.dtype(dtype) == np.float64:
            self.rel, self.abs, self.mean, self.inplace = 1e-4, 1e-6, 1e-6, 1e-12
        else:
            self.rel, self.abs, self.mean, self.inplace = 0.05, 0.006, 0.003, 1e-5


class replaying_rand(tt.tensor_rand):
    """A ``tt.tensor_rand`` whose every fill starts over from its seed: two fills of the same
    shape give the same numbers. ``test_layer`` puts one in place of each ``tensor_rand``
    attribute of a layer, so that a random layer (dropout) draws the same mask at every
    forward and finite differences can follow it."""

    def fill_uniform(self, data):
        self._generators = {}
        super().fill_uniform(data)

    def fill_gaussian(self, data, mean=0.0, stddev=1.0):
        self._generators = {}
        super().fill_gaussian(data, mean, stddev)


def _freeze_random(layer, seed):
    """Replace each ``tensor_rand`` attribute of ``layer`` by a ``replaying_rand`` (one
    already replaying is kept). Returns the attribute names, sorted."""
    names = []
    for name, value in list(vars(layer).items()):
        if isinstance(value, tt.tensor_rand):
            if not isinstance(value, replaying_rand):
                setattr(layer, name, replaying_rand(seed))
            names.append(name)
    return tuple(sorted(names))


def _redraw(values, rng):
    """The default draw: each parameter keeps the scale ``setup`` gave it (so a layer's
    outputs keep their usual size and float32 rounding its usual weight) but moves by a random
    factor in [0.5, 1.5] with a random sign. A parameter below half the tensor's
    root-mean-square s (over its non-zero values; 1 when all are 0), such as a bias or shift
    that ``setup`` set to 0, starts from s/2 instead: a gamma of 1 becomes +-0.5..1.5, a beta of
    0 next to gammas of 1 +-0.25..0.75, a lone parameter of 0 +-0.25..0.75."""
    mag = np.abs(values)
    nonzero = mag[mag > 0]
    scale = float(np.sqrt(np.mean(nonzero ** 2))) if nonzero.size else 1.0
    base = np.maximum(mag, 0.5 * scale)
    return base * rng.uniform(0.5, 1.5, values.shape) * rng.choice([-1.0, 1.0], values.shape)


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
        self.drawn = rnd.standard_normal(shape)      # what the output must still hold
        self.output.assign(self.drawn)
        self.gradient_input = resizable_tensor(*shape)
        self.gradient_input.assign(rnd.standard_normal(shape) * 0.01)
        self._sub = None
        self._tagged = {}
        self.template = None
        self.stale = False        # a fresh backward pass (see _run._check_assign)
        self.assigned = False     # the layer took this gradient as a stale target

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        if self.stale:            # dlib's lazy zeroing
            self.stale = False
            self.gradient_input.fill(0)
        return self.gradient_input

    def get_gradient_input_target(self):
        """``(gradient, add_to)``: while stale, the gradient filled with NaN and False (the
        layer must assign every element); otherwise the gradient and True."""
        if self.stale:
            self.stale, self.assigned = False, True
            self.gradient_input.fill(np.nan)
            return self.gradient_input, False
        return self.gradient_input, True

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
                    level.template = tag
                    self._tagged[i] = level
                return self._tagged[i]
        return None


class _fake_probe:
    __slots__ = ("template",)

    def __init__(self, template):
        self.template = template


def _is_inplace(layer):
    return hasattr(layer, "forward_inplace")


def _forward(layer, sub, output):
    """dlib's call_layer_forward: in-place layers run out of place into ``output``.
    Returns what the layer's forward returned (it should return nothing)."""
    if _is_inplace(layer):
        output.copy_size(sub.get_output())
        return layer.forward_inplace(sub.get_output(), output)
    return layer.forward(sub, output)


def _backward(layer, computed_output, gradient_input, sub, params_grad):
    needs = getattr(layer, "backward_needs_output", False)
    if _is_inplace(layer):
        kw = {}
        if backward_inplace_takes_add_to(layer) and sub.gradient_input is not gradient_input:
            data_grad, kw["add_to"] = sub.get_gradient_input_target()
        else:
            data_grad = sub.get_gradient_input()
        args = (gradient_input, data_grad, params_grad)
        layer.backward_inplace(*((computed_output,) + args if needs else args), **kw)
    elif needs:
        layer.backward(computed_output, gradient_input, sub, params_grad)
    else:
        layer.backward(gradient_input, sub, params_grad)


def _check_inputs_kept(levels):
    """dlib's layers only read ``sub.get_output()``: a forward that writes into it changes
    what the layer below (and every finite difference) sees."""
    for i, lv in enumerate(levels):
        now = lv.output.host_read()
        same_shape = now.shape == lv.drawn.shape
        differs = now != lv.drawn.astype(now.dtype) if same_shape else None
        if same_shape and not differs.any():
            continue
        changed = int(np.sum(differs)) if same_shape else f"its shape to {now.shape}, all"
        raise _failed(
            f"forward changed the subnet's output (subnet level {i}{tuple(lv.drawn.shape)}: "
            f"{changed} of {lv.drawn.size} values): a layer reads sub.get_output() and writes "
            "only its `output` (in-place layers write through forward_inplace(input, output), "
            "which the network calls with output as input when it can)\n")


def _like(t, values):
    out = resizable_tensor()
    out.copy_size(t)
    out.assign(values)
    return out


class _failed(Exception):
    """A contract violation found by a check: its message is the result's log."""


def _error_line(kind, i, ref, out, it):
    rel = (ref - out) / ref if ref * out != 0 else ref - out
    return (f"Gradient error in {kind} #{i}.  Relative error: {rel:.6g}\n"
            f"expected derivative: {ref:.9g}\n"
            f"output derivative:   {out:.9g}\n"
            f"iteration:           {it}\n")


class _run:
    """One run of dlib's ``impl_test_layer`` at one relative step ``base_eps``."""

    def __init__(self, layer, base_eps, tol, seed, input_shape, tagged_shape, draw):
        self.layer = layer
        self.base_eps = base_eps
        self.step = EPS_VALUES.index(base_eps)
        self.tol = tol
        self.seed = seed
        self.input_shape = input_shape
        self.tagged_shape = tagged_shape
        self.draw = draw
        self.rs_params, self.rs_data = [], []
        self.max_rel = 0.0
        self.redrawn = False

    def setup(self, layer, sub):
        """``layer.setup(sub)``, then freeze its random sources and redraw its parameters."""
        layer.setup(sub)
        _freeze_random(layer, self.seed)
        if self.draw is None:
            return
        params = layer.get_layer_params()
        if params.size() == 0:
            return
        new = np.asarray(self.draw(np.array(params.host_read(), dtype=np.float64), self.prng),
                         dtype=np.float64)
        if new.size != params.size():
            raise ValueError(f"test_layer: randomize_params returned {new.shape} values for "
                             f"parameters of shape {params.shape}")
        params.assign(new.reshape(params.shape))
        self.redrawn = True

    def judge(self, kind, i, ref, got, it, rs):
        rel = (ref - got) / ref if ref * got != 0 else ref - got
        rs.append(abs(rel))
        if abs(ref - got) <= self.tol.abs:
            return  # passed on the absolute tolerance
        if not np.isfinite(rel):
            self.max_rel = np.inf
        else:
            self.max_rel = max(self.max_rel, abs(rel))
        if not abs(rel) <= self.tol.rel:
            raise _failed(_error_line(kind, i, ref, got, it))

    def __call__(self):
        try:
            self._iterations()
        except _failed as e:
            return layer_test_results(False, str(e), self.max_rel, eps=self.base_eps)
        if self.rs_params and np.mean(self.rs_params) > self.tol.mean:
            return layer_test_results(
                False, f"Average parameter gradient error is somewhat large at: {np.mean(self.rs_params):.6g}\n",
                self.max_rel, eps=self.base_eps)
        if self.rs_data and np.mean(self.rs_data) > self.tol.mean:
            return layer_test_results(
                False, f"Average data gradient error is somewhat large at: {np.mean(self.rs_data):.6g}\n",
                self.max_rel, eps=self.base_eps)
        return layer_test_results(True, "", self.max_rel, eps=self.base_eps)

    def _iterations(self):
        layer, base_eps = self.layer, self.base_eps
        rnd = np.random.default_rng(self.seed)
        self.prng = np.random.default_rng([self.seed, 0x7e57, self.step])   # redrawn parameters
        for it in range(10):
            levels = []
            sub = _fake_subnet(rnd, levels, self.input_shape, self.tagged_shape)
            self.setup(layer, sub)
            output = resizable_tensor()
            returned = _forward(layer, sub, output)
            _check_inputs_kept(levels)
            if output.size() == 0:
                got = "" if returned is None else f" (it returned a {type(returned).__name__} instead)"
                raise _failed(f"forward left `output` empty{got}: size it with "
                              f"`output.copy_size(...)` (or `output.set_size(...)`) and write into it\n")
            input_grad = _like(output, rnd.standard_normal(output.shape))

            inputs = list(levels)  # every level created by setup/forward is a data input
            initial = [lv.gradient_input.host_read().copy() for lv in inputs]

            params = layer.get_layer_params()
            params_grad = resizable_tensor()
            params_grad.copy_size(params)
            params_grad.fill(np.inf)
            _backward(layer, output, input_grad, sub, params_grad)
            if params_grad.shape != params.shape:
                raise _failed(f"backward resized params_grad from {params.shape} to "
                              f"{params_grad.shape}: it arrives with the shape of "
                              f"get_layer_params(); assign into it, never resize it\n")

            if _is_inplace(layer):
                self._check_inplace(rnd)

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
                self.judge("parameter", i, ref, float(pg[i]), it, self.rs_params)

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
                    self.judge("data variable", index, ref, got, it, self.rs_data)
                    index += 1
            if it == 0:   # its own random numbers: the iterations' draws stay dlib's
                self._check_assign(np.random.default_rng([self.seed, 0xa55]), sub, inputs)

    def _check_assign(self, rnd, sub, levels):
        """A layer that takes its subnet's gradient with ``get_gradient_input_target()``
        (docs/layer_interface.md) must, when told ``add_to=False``, ASSIGN every element: the
        stale gradient is handed over filled with NaN, and the backward must give what the
        add path adds to a zeroed gradient."""
        layer, tol = self.layer, self.tol
        output = resizable_tensor()
        _forward(layer, sub, output)           # the numerical checks left perturbed state
        input_grad = _like(output, rnd.standard_normal(output.shape))

        def backward(stale):
            for lv in levels:
                lv.gradient_input.fill(0)
                lv.stale, lv.assigned = stale, False
            params_grad = resizable_tensor()
            params_grad.copy_size(layer.get_layer_params())
            params_grad.fill(np.inf)
            _backward(layer, output, input_grad, sub, params_grad)
            for lv in levels:
                lv.stale = False
            return params_grad

        backward(False)
        want = [np.asarray(lv.gradient_input, np.float64).copy() for lv in levels]
        backward(True)
        for i, (lv, w) in enumerate(zip(levels, want)):
            if not lv.assigned:
                continue
            got = np.asarray(lv.gradient_input, np.float64)
            unwritten = int(np.isnan(got).sum() - np.isnan(w).sum())
            err = float(np.nanmax(np.abs(got - w))) if got.size else 0.0
            if unwritten > 0 or not err <= tol.inplace * max(1.0, float(np.abs(w).max())):
                raise _failed(
                    "backward() took the gradient of subnet level "
                    f"{i}{tuple(lv.gradient_input.shape)} with get_gradient_input_target() and was "
                    "told add_to=False (the gradient is stale: it must ASSIGN every element), but "
                    + (f"left {unwritten} of {got.size} elements unwritten (NaN)"
                       if unwritten > 0 else
                       f"its result differs from the add path's by up to {err:.6g}")
                    + ".\n")

    def _check_inplace(self, rnd):
        """In-place and out-of-place runs of an in-place layer must agree (dlib's check)."""
        tol = self.tol
        sub2 = _fake_subnet(rnd, [])
        ll = copy.deepcopy(self.layer)
        self.setup(ll, sub2)
        ip_out = resizable_tensor()
        _forward(ll, sub2, ip_out)
        ll.forward_inplace(sub2.output, sub2.output)
        err = float(np.max(np.abs(np.asarray(ip_out, np.float64) - np.asarray(sub2.output, np.float64))))
        if not err <= tol.inplace:
            raise _failed(
                "This layer is supposed to support in-place computations but the output of "
                "forward_inplace()\nchanges when invoked in-place vs. out-of-place. The largest "
                f"difference between the two outputs was {err:.6g} (allowed: {tol.inplace:g}).\n")
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
                raise _failed(
                    "This layer is supposed to support in-place computations but the output of "
                    "backward_inplace()\nchanges when invoked in-place vs. out-of-place. The largest "
                    f"difference between the two params_grad was {perr:.6g} (allowed: {tol.inplace:g}).\n")
        derr = float(np.max(np.abs(data_grad1 - 9 - data_grad2)))
        if not derr <= tol.inplace:
            raise _failed(
                "This layer is supposed to support in-place computations but the output of "
                "backward_inplace()\nchanges when invoked in-place vs. out-of-place (it must add to "
                "data_grad unless data_grad is gradient_input). data_grad held 9 everywhere before "
                "the out-of-place backward; the largest |(its result - 9) - the in-place result| "
                f"was {derr:.6g} (allowed: {tol.inplace:g}; exactly 9 means it assigned where it "
                "must add).\n")


@contextlib.contextmanager
def _parameter_seed(seed):
    """Parameters drawn by ``setup`` come from a generator seeded with ``seed`` (the global
    one is restored after), so a test_layer result does not depend on what ran before."""
    with seeded_initialisation(seed):
        yield


def _tagged_shape_function(tagged_shape):
    if tagged_shape is None or callable(tagged_shape):
        return tagged_shape
    fixed = tuple(int(v) for v in tagged_shape)
    if len(fixed) != 4:
        raise ValueError(f"test_layer: tagged_shape must be (n, k, nr, nc) or a function, got {tagged_shape!r}")
    return lambda shape: fixed


def _contract_problem(layer):
    """A message when ``layer`` cannot be a computational layer at all, else None."""
    if isinstance(layer, computational_layer) and "params" not in vars(layer) \
            and type(layer).get_layer_params is computational_layer.get_layer_params:
        return (f"{type(layer).__name__} has no `params`: its __init__ must call "
                f"super().__init__() (computational_layer.__init__ creates the params tensor)\n")
    if not (hasattr(layer, "forward") or hasattr(layer, "forward_inplace")):
        return (f"{type(layer).__name__} is not a computational layer: it needs forward + backward "
                f"or forward_inplace + backward_inplace (docs/layer_interface.md)\n")
    return None


def test_layer(layer, dtype=np.float32, seed=0, input_shape=None, tagged_shape=None,
               randomize_params=True) -> layer_test_results:
    """Check ``layer``'s gradients numerically (dlib's ``test_layer``, see module doc).

    ``layer`` is a details object (``con_(3,3,3,1,1)``); it is copied, never modified.
    ``input_shape=(n, k, nr, nc)`` fixes the fake subnet's output shape (dlib draws n in
    3..6, k in 2..5, nr and nc in {2, 4}); ``seed`` seeds the random subnets, the
    parameters ``setup`` draws and their redrawn values (so results do not depend on what
    ran before).
    ``tagged_shape``: the shape ``(n, k, nr, nc)`` of the level that ``layer(sub, tagN)``
    returns, or a function from the fake subnet's shape to it (default: same n, nr, nc and a
    random k in 2..5), for merge layers that need a particular tagged shape (``scale_``,
    ``multm_prev_``).
    ``randomize_params``: ``True`` (default) redraws the learnable parameters after every
    ``setup`` (seeded; each scaled by a random factor in [0.5, 1.5] with a random sign, those
    at or near 0 moved to half the tensor's typical size), so a gradient hidden by an initial
    value (a scale of 1, a shift of 0) fails; ``False`` checks the values ``setup`` wrote
    (dlib's behaviour); a function ``draw(values, rng) -> new values`` (numpy float64 arrays
    of the parameters' shape, ``rng`` a ``numpy.random.Generator``) for parameters with
    constraints.
    Random layers: each ``tt.tensor_rand`` attribute is replaced by a ``replaying_rand``
    (``result.frozen_random`` names them).
    Returns a ``layer_test_results``: truthy when good, ``.log`` naming the failing
    variable with the expected and actual derivative otherwise.
    """
    tol = _tolerances(dtype)
    problem = _contract_problem(layer)
    if problem:
        return layer_test_results(False, problem)
    layer = copy.deepcopy(layer)
    frozen = _freeze_random(layer, seed)
    if randomize_params is True:
        draw = _redraw
    elif randomize_params is False or randomize_params is None:
        draw = None
    elif callable(randomize_params):
        draw = randomize_params
    else:
        raise TypeError(f"test_layer: randomize_params must be True, False or a function "
                        f"draw(values, rng), got {randomize_params!r}")
    tagged_shape = _tagged_shape_function(tagged_shape)
    order = _EPS_ORDER.get(np.dtype(dtype), EPS_VALUES)
    runs = 0
    with default_dtype(dtype):
        for base_eps in order:
            # each run is reseeded (its verdict does not depend on the order of the runs), with
            # the same subnets and fresh parameters per step size, as dlib's runs
            with _parameter_seed([seed, EPS_VALUES.index(base_eps)]):
                run = _run(copy.deepcopy(layer), base_eps, tol, seed, input_shape, tagged_shape, draw)
                result = run()
            runs += 1
            redrawn = run.redrawn
            if result:
                break
            if base_eps == 0.01:
                last = result
        else:
            result = last  # none passed: report dlib's last run (0.01)
    result.runs = runs
    result.frozen_random = frozen
    result.randomized_params = redrawn
    return result


test_layer.__test__ = False  # keep pytest from collecting it when imported into a test module
