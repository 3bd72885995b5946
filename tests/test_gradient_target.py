"""The "assign, the target is stale" path (``get_gradient_input_target``): a layer that is
the first writer of its subnet's gradient in a backward pass assigns every element instead
of dlib's zero-fill + ADD. It must give exactly the add path's results, never read the
uninitialised buffer, and leave later writers (a tag read by two layers) adding."""

import numpy as np
import pytest

from dnnpy import (add_prev1, add_prev2, avg_pool, bn_con, bn_fc, con, cont, fc, input_tensor,
                   max_pool, relu, repeat, resizable_tensor, skip1, tag1, tag2)
from dnnpy.core import computational_nodes
from dnnpy.core.add_layer import add_layer
from dnnpy.core.nodes import input_node, net_node
from dnnpy.core.repeat import repeat_layer
from dnnpy.layers import avg_pool_, bn_, con_, cont_, fc_, max_pool_, relu_
from dnnpy.layers.norm import CONV_MODE, FC_MODE


def _add_path(monkeypatch):
    """Every node answers ``(get_gradient_input(), True)``: dlib's zero-fill + ADD."""
    base = net_node._private_get_gradient_input_target
    monkeypatch.setattr(add_layer, "_private_get_gradient_input_target", base)
    monkeypatch.setattr(input_node, "_private_get_gradient_input_target", base)


def _fill_gradient_buffers(net, value):
    """Size every gradient buffer of the net and fill it with ``value`` (what a stale
    target holds is undefined: NaN shows any read)."""
    for node in computational_nodes(net):
        st = node.wrapper_state()
        if st.cached_output.size():
            st.x_grad.copy_size(st.cached_output)
            st.x_grad.fill(value)
    bottoms = [net.input_node()]
    if isinstance(net, repeat_layer):
        bottoms += [c.input_node() for c in net.copies]
    for bottom in bottoms:
        x, grad_final = bottom.input_state()[:2]
        if x is not None:
            grad_final.copy_size(x)
            grad_final.fill(value)


def _gradients(net):
    out = [np.array(net.get_final_data_gradient())]
    out += [np.array(n.get_parameter_gradient()) for n in computational_nodes(net)]
    return out


NETS = {
    # a tag written first by add_prev (zero-fill + ADD), then by max_pool (target not stale:
    # adds); strided/padded con, cont, bn in both modes, relu in and out of place
    "add_prev": lambda: fc[3, relu[bn_fc[fc[5, avg_pool[2, 2, 2, 2, add_prev1[
        cont[6, 4, 4, 2, 2, relu[max_pool[3, 3, 2, 2, tag1[relu[bn_con[
            con[6, 3, 3, 1, 1, input_tensor]]]]]]]]]]]]],
    # tag1 written first through the skip by the upper con (stale: it assigns), then by the
    # con directly above it (whose gradient add_prev2 wrote: it adds a non-zero gradient)
    "skip": lambda: fc[3, relu[add_prev2[con[5, 3, 3, 1, 1, skip1[tag2[con[5, 3, 3, 1, 1, tag1[
        relu[bn_con[con[6, 3, 3, 1, 1, input_tensor]]]]]]]]]]],
    # repeat hands each copy's input gradient down through input_node._backward
    "repeat": lambda: repeat[2, lambda s: relu[bn_con[con[4, 3, 3, 1, 1, s]]],
                             tag1[con[4, 3, 3, 1, 1, input_tensor]]],
}


@pytest.mark.parametrize("name", sorted(NETS))
def test_assign_path_equals_the_add_path(name, rng, monkeypatch):
    net = NETS[name]()()
    x = net.to_tensor([rng.standard_normal((4, 3, 8, 8)).astype(np.float32)])
    out = net.forward(x)
    g = resizable_tensor(rng.standard_normal(out.shape).astype(np.float32))

    _fill_gradient_buffers(net, np.nan)
    net.back_propagate_error(x, g)
    first = _gradients(net)
    assert all(np.all(np.isfinite(a)) for a in first), "a layer read its stale target"
    assert np.any(first[0] != 0)

    # a second pass: the buffers now hold the first pass's values (stale, not zero)
    net.forward(x)
    net.back_propagate_error(x, g)
    for a, b in zip(_gradients(net), first):
        np.testing.assert_array_equal(a, b)

    with monkeypatch.context() as m:
        _add_path(m)
        net.forward(x)
        net.back_propagate_error(x, g)
        reference = _gradients(net)
    for a, b in zip(first, reference):
        np.testing.assert_array_equal(a, b)


class _stale_sub:
    """A subnet whose gradient target is stale: filled with ``fill``, add_to False (or a
    zeroed gradient to ADD to, for the reference)."""

    def __init__(self, x, fill, add_to):
        self.output = resizable_tensor(x)
        self.grad = resizable_tensor()
        self.grad.copy_size(self.output)
        self.grad.fill(fill)
        self.add_to = add_to

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.grad

    def get_gradient_input_target(self):
        return self.grad, self.add_to

    def sample_expansion_factor(self):
        return 1


LAYERS = {
    "con strided padded": (lambda: con_(5, 3, 3, 2, 2, 1, 1), (3, 4, 9, 9)),
    "con large": (lambda: con_(8, 3, 3, 1, 1), (4, 8, 16, 16)),   # im2col+GEMM path
    "cont": (lambda: cont_(4, 3, 3, 2, 2, 1, 1), (3, 5, 5, 5)),
    "bn_con": (lambda: bn_(CONV_MODE), (4, 3, 5, 5)),
    "bn_fc": (lambda: bn_(FC_MODE), (4, 3, 2, 2)),
    "max_pool overlapping padded": (lambda: max_pool_(3, 3, 2, 2, 1, 1), (2, 3, 7, 7)),
    "max_pool tiles": (lambda: max_pool_(2, 2, 2, 2, 0, 0), (2, 3, 8, 8)),
    "max_pool gaps": (lambda: max_pool_(2, 2, 3, 3, 0, 0), (2, 3, 8, 8)),
    "max_pool whole": (lambda: max_pool_(0, 0, 1, 1, 0, 0), (2, 3, 5, 5)),
    "avg_pool overlapping padded": (lambda: avg_pool_(3, 3, 2, 2, 1, 1), (2, 3, 7, 7)),
    "avg_pool gaps": (lambda: avg_pool_(2, 2, 3, 3, 0, 0), (2, 3, 8, 8)),
    "fc": (lambda: fc_(6), (4, 3, 2, 2)),
}


def _run_layer(make, shape, fill, add_to, seed, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    if ties:
        x = np.round(x)   # many equal maxima: the first-maximum rule decides
    sub = _stale_sub(x, fill, add_to)
    details = make()
    details.setup(sub)
    details.get_layer_params().assign(
        rng.standard_normal(details.get_layer_params().shape).astype(np.float32))
    out = resizable_tensor()
    details.forward(sub, out)
    gi = resizable_tensor(rng.standard_normal(out.shape).astype(np.float32))
    params_grad = resizable_tensor()
    params_grad.copy_size(details.get_layer_params())
    params_grad.fill(np.inf)
    if getattr(details, "backward_needs_output", False):
        details.backward(out, gi, sub, params_grad)
    else:
        details.backward(gi, sub, params_grad)
    return np.array(sub.grad), np.array(params_grad)


@pytest.mark.parametrize("case", sorted(LAYERS))
def test_layer_assigns_its_stale_target_fully(case):
    make, shape = LAYERS[case]
    ties = case.startswith("max_pool")
    grad, pgrad = _run_layer(make, shape, np.nan, False, 7, ties)
    assert np.all(np.isfinite(grad)), "the layer read (or left) part of its stale target"
    ref, pref = _run_layer(make, shape, 0.0, True, 7, ties)
    np.testing.assert_array_equal(grad, ref)
    np.testing.assert_array_equal(pgrad, pref)
    # and the add path still adds
    added, _ = _run_layer(make, shape, 1.0, True, 7, ties)
    np.testing.assert_allclose(added, ref + 1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("add_to", [False, True])
def test_relu_backward_inplace_assigns_when_stale(add_to, rng):
    x = resizable_tensor(rng.standard_normal((3, 4, 3, 3)).astype(np.float32))
    out = resizable_tensor()
    out.copy_size(x)
    r = relu_()
    r.forward_inplace(x, out)
    gi = resizable_tensor(rng.standard_normal(x.shape).astype(np.float32))
    data_grad = resizable_tensor()
    data_grad.copy_size(x)
    data_grad.fill(np.nan if not add_to else 2.0)
    r.backward_inplace(out, gi, data_grad, resizable_tensor(), add_to=add_to)
    want = np.where(np.asarray(out) > 0, np.asarray(gi), 0) + (2.0 if add_to else 0.0)
    np.testing.assert_array_equal(np.asarray(data_grad), want.astype(np.float32))
