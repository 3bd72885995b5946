"""The merge group: tag merges (add_prev_, mult_prev_, multm_prev_, scale_, scale_prev_),
linear_, tril_, positional_encodings_, embeddings_, adaptive_computation_time_, and their
ops (zero-padded add / multiply, PLANE_WISE gemm, scale_channels, embeddings, ACT).

References are small float64 loops written from dlib's definitions (layers.h, cpu_dlib.cpp).
"""

import itertools

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import (LINEAR_NO_BIAS, act, act4, act16, adaptive_computation_time,
                   adaptive_computation_time_, add_prev, add_prev_, add_prev1, add_prev10, embeddings,
                   embeddings_, input_tensor, layer, linear, linear_, linear_no_bias, mult_prev_,
                   mult_prev2, multm_prev_, multm_prev3, neg_infinity_tag, positional_encodings,
                   positional_encodings_, resizable_tensor, scale_, scale1, scale_prev_, scale_prev2,
                   tag1, tag2, tag3, tril, tril_, tril_diag, tril_mask, zero_tag)
from dnnpy.core import add_layer


def T(a, dtype=np.float32):
    a = np.asarray(a, dtype)
    return resizable_tensor(a.reshape(a.shape + (1,) * (4 - a.ndim)))


def A(t):
    return np.asarray(t, np.float64)


def randn(rng, shape):
    """Normal values already rounded to float32, so float64 references see the same inputs."""
    return rng.standard_normal(shape).astype(np.float32).astype(np.float64)


# ----------------------------------------------------------------------------------------
# a hand-made subnet: output, gradient input, and tagged levels answering layer(sub, tagN)

class Sub:
    def __init__(self, out, template=None, grad=None):
        self.output = T(out)
        self.gradient_input = T(np.zeros(np.shape(out)) if grad is None else grad)
        self.template = template
        self.tagged = []

    def with_tag(self, template, out, grad=None):
        level = Sub(out, template, grad)
        self.tagged.append(level)
        return level

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.gradient_input

    def _find(self, match):
        if match(self):
            return self
        return next((lv for lv in self.tagged if match(lv)), None)


def run(layer_details, sub, gradient=None):
    """setup + forward (+ backward with ``gradient``); returns (output, params_grad)."""
    layer_details.setup(sub)
    out = resizable_tensor()
    layer_details.forward(sub, out)
    pg = resizable_tensor()
    if gradient is not None:
        pg.copy_size(layer_details.get_layer_params())
        pg.fill(np.inf)
        layer_details.backward(T(gradient), sub, pg)
    return out, pg


def padded(a, shape):
    """a zero-padded / cropped to shape (the reference for dlib's zero-padded ops)."""
    out = np.zeros(shape)
    region = tuple(slice(0, min(s, d)) for s, d in zip(a.shape, shape))
    out[region] = a[region]
    return out


# ----------------------------------------------------------------------------------------
# ops

SHAPES = [((2, 3, 2, 4), (1, 4, 3, 2), (2, 4, 3, 4)), ((2, 3, 2, 2), (2, 3, 2, 2), (2, 3, 2, 2)),
          ((3, 2, 4, 1), (1, 1, 1, 5), (2, 2, 2, 2))]


@pytest.mark.parametrize("s1, s2, sd", SHAPES)
def test_add_zero_padded(s1, s2, sd, rng):
    a, b = randn(rng, s1), randn(rng, s2)
    dest = T(np.full(sd, np.inf))
    tt.add(dest, T(a), T(b))
    np.testing.assert_allclose(A(dest), padded(a, sd) + padded(b, sd), rtol=1e-6)
    # dest aliasing src1 (how add_prev_ accumulates gradients)
    g0 = randn(rng, s1)
    g = T(g0)
    tt.add(g, g, T(b))
    np.testing.assert_allclose(A(g), g0 + padded(b, s1), rtol=1e-6)


def test_add_keeps_the_four_argument_form_and_rejects_other_arities(rng):
    dest = T(np.ones((2, 3)))
    tt.add(2, dest, 1, T(np.ones((1, 3))))
    np.testing.assert_array_equal(A(dest), 3 * np.ones((2, 3, 1, 1)))
    with pytest.raises(TypeError, match="add takes"):
        tt.add(dest, dest)
    with pytest.raises(TypeError, match="add: src2 must be a dnnpy tensor"):
        tt.add(dest, dest, np.ones(3))


@pytest.mark.parametrize("s1, s2, sd", SHAPES)
def test_multiply_zero_padded(s1, s2, sd, rng):
    a, b = randn(rng, s1), randn(rng, s2)
    dest = T(np.full(sd, np.inf))
    tt.multiply_zero_padded(False, dest, T(a), T(b))
    ref = padded(a, sd) * padded(b, sd)
    np.testing.assert_allclose(A(dest), ref, rtol=1e-6)
    d0 = randn(rng, sd)
    dest = T(d0)
    tt.multiply_zero_padded(True, dest, T(a), T(b))
    np.testing.assert_allclose(A(dest), d0 + ref, rtol=1e-5, atol=1e-6)


def test_scale_channels(rng):
    x, s = randn(rng, (2, 3, 2, 4)), randn(rng, (2, 3, 1, 1))
    dest = T(np.full(x.shape, np.inf))
    tt.scale_channels(False, dest, T(x), T(s))
    np.testing.assert_allclose(A(dest), x * s, rtol=1e-6)
    tt.scale_channels(True, dest, T(x), T(s))
    np.testing.assert_allclose(A(dest), 2 * x * s, rtol=1e-6)
    with pytest.raises(ValueError, match=r"scale_channels: scales\(2, 2, 1, 1\)"):
        tt.scale_channels(False, dest, T(x), T(s[:, :2]))


def _plane_ref(a, b, ta, tb):
    out = np.zeros(a.shape[:2] + ((a.shape[3] if ta else a.shape[2]), (b.shape[2] if tb else b.shape[3])))
    for n, k in itertools.product(range(a.shape[0]), range(a.shape[1])):
        x = a[n, k].T if ta else a[n, k]
        y = b[n, k].T if tb else b[n, k]
        out[n, k] = x @ y
    return out


@pytest.mark.parametrize("ta, tb", list(itertools.product([False, True], repeat=2)))
def test_gemm_plane_wise(ta, tb, rng):
    a = randn(rng, (2, 3, 4, 5) if not ta else (2, 3, 5, 4))
    b = randn(rng, (2, 3, 5, 2) if not tb else (2, 3, 2, 5))
    ref = _plane_ref(a, b, ta, tb)
    dest = T(np.full(ref.shape, np.inf))
    tt.gemm(0, dest, 2, T(a), ta, T(b), tb, tt.PLANE_WISE)
    np.testing.assert_allclose(A(dest), 2 * ref, rtol=1e-5, atol=1e-5)
    tt.gemm(1, dest, 1, T(a), ta, T(b), tb, mode=tt.PLANE_WISE)
    np.testing.assert_allclose(A(dest), 3 * ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="gemm: op.*PLANE_WISE"):
        tt.gemm(0, T(np.zeros((2, 3, 4, 4))), 1, T(a), ta, T(b), tb, tt.PLANE_WISE)


def test_gemm_plane_wise_matrix_rules(rng):
    # dlib: an (N, K, 1, 1) tensor with N*K > 1 is one N x K matrix, used for every plane
    m = randn(rng, (3, 4, 1, 1))
    planes = randn(rng, (2, 2, 4, 2))
    dest = T(np.zeros((2, 2, 3, 2)))
    tt.gemm(0, dest, 1, T(m), False, T(planes), False, tt.PLANE_WISE)
    ref = np.stack([np.stack([m[:, :, 0, 0] @ planes[n, k] for k in range(2)]) for n in range(2)])
    np.testing.assert_allclose(A(dest), ref, rtol=1e-5, atol=1e-6)
    # all three matrices: one product
    x, y = randn(rng, (2, 3, 1, 1)), randn(rng, (3, 4, 1, 1))
    d = T(np.zeros((2, 4, 1, 1)))
    tt.gemm(0, d, 1, T(x), False, T(y), False, tt.PLANE_WISE)
    np.testing.assert_allclose(A(d)[:, :, 0, 0], x[:, :, 0, 0] @ y[:, :, 0, 0], rtol=1e-5)
    with pytest.raises(ValueError, match="gemm: mode"):
        tt.gemm(0, d, 1, T(x), False, T(y), False, 7)


def _tokens_ref(v, n):
    t = int(v) if np.isfinite(v) else -1  # C++ truncation toward zero
    return t if 0 <= t < n else None


def test_embeddings_lookup_and_update(rng):
    table = randn(rng, (4, 3))
    src = np.array([0.0, 3.9, -0.5, 4.0, -1.5, 2.2, np.nan, 1.0]).reshape(2, 2, 2, 1)
    dest = T(np.full((2, 2, 2, 3), np.inf))
    tt.embeddings(dest, T(src), T(table))
    for n, k, r in itertools.product(range(2), range(2), range(2)):
        tok = _tokens_ref(src[n, k, r, 0], 4)
        want = np.zeros(3) if tok is None else table[tok]
        np.testing.assert_allclose(A(dest)[n, k, r], want, rtol=1e-6)
    freqs = T(np.full(4, np.inf))
    tt.calc_token_freqs(freqs, T(src))
    np.testing.assert_array_equal(A(freqs).ravel(), [2, 1, 1, 1])  # -0.5 truncates to token 0
    gi = randn(rng, (2, 2, 2, 3))
    for scale in (True, False):
        embs = T(table)
        tt.embeddings_gradient(T(src), T(gi), embs, freqs, 0.5, scale)
        ref = table.copy()
        for n, k, r in itertools.product(range(2), range(2), range(2)):
            tok = _tokens_ref(src[n, k, r, 0], 4)
            if tok is not None:
                ref[tok] -= gi[n, k, r] * 0.5 * (0.15 if scale else 1.0)
        np.testing.assert_allclose(A(embs).reshape(4, 3), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="embeddings: dest"):
        tt.embeddings(T(np.zeros((2, 2, 2, 2))), T(src), T(table))


def _act_reference(x, w, b, max_steps, thr):
    """dlib's ACT forward, written as loops (float64)."""
    n, c, s, d = x.shape
    out = np.zeros_like(x)
    cum, rem, steps, eff = np.zeros((n, s)), np.ones((n, s)), np.zeros((n, s)), np.zeros((n, s))
    p = 1 / (1 + np.exp(-(np.einsum("ncsd,cd->ns", x, w.reshape(c, d)) + b)))
    for step in range(max_steps):
        for i, j in itertools.product(range(n), range(s)):
            if cum[i, j] < thr:
                e = min(p[i, j] * rem[i, j], thr - cum[i, j])
                cum[i, j] += e
                rem[i, j] -= e
                steps[i, j] = step + 1
                eff[i, j] += e
                out[i, :, j, :] += e * x[i, :, j, :]
        if np.all(cum >= thr):
            break
    for i, j in itertools.product(range(n), range(s)):
        if rem[i, j] > 1e-6:
            eff[i, j] += rem[i, j]
            out[i, :, j, :] += rem[i, j] * x[i, :, j, :]
    return out, eff, steps


def test_act_layer_forward_backward_and_stats(rng):
    x = randn(rng, (3, 2, 4, 3))
    layer_ = adaptive_computation_time_(5)
    sub = Sub(x, grad=np.full(x.shape, 0.25))
    layer_.setup(sub)
    p = A(layer_.get_layer_params()).ravel()
    assert p.shape == (2 * 3 + 1,) and p[-1] == 0 and np.std(p[:-1]) > 0
    p[:-1] *= 3  # sharper halting probabilities: positions halt at different steps
    layer_.get_layer_params().assign(p.reshape(1, 1, 7, 1))
    out = resizable_tensor()
    layer_.forward(sub, out)
    ref_out, ref_eff, ref_steps = _act_reference(x, p[:-1], p[-1], 5, np.float32(0.99))
    np.testing.assert_allclose(A(out), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(A(out), x, rtol=1e-5, atol=1e-6)  # weights sum to 1
    np.testing.assert_allclose(A(layer_.true_effective_weights_).reshape(3, 4), ref_eff, rtol=1e-5)
    np.testing.assert_array_equal(A(layer_.n_steps_).reshape(3, 4), ref_steps)
    assert layer_.get_average_steps() == pytest.approx(ref_steps.mean(), rel=1e-6)
    assert layer_.get_ponder_cost() == pytest.approx(ref_steps.mean() / 5, rel=1e-6)
    gi = randn(rng, x.shape)
    pg = resizable_tensor()
    pg.copy_size(layer_.get_layer_params())
    pg.fill(np.inf)
    layer_.backward(T(gi), sub, pg)
    assert np.all(A(pg) == 0)  # dlib: params_grad = 0
    np.testing.assert_allclose(A(sub.gradient_input), 0.25 + ref_eff[:, None, :, None] * gi, rtol=1e-5)
    # depth scaling multiplies the WHOLE gradient (the 0.25 it held too)
    layer_.enable_depth_scaling()
    sub.gradient_input.fill(0.25)
    layer_.backward(T(gi), sub, pg)
    scale = 1 + 0.1 * ref_steps / 5
    want = (0.25 + ref_eff[:, None, :, None] * gi) * scale[:, None, :, None]
    np.testing.assert_allclose(A(sub.gradient_input), want, rtol=1e-5)


def test_act_repr_setters_and_templates():
    a = adaptive_computation_time_()
    assert a.get_max_steps() == 8 and a.get_halt_threshold() == pytest.approx(0.99)
    a.set_halt_threshold(1.5)  # ignored, as dlib
    a.set_ponder_penalty(-1)   # ignored
    assert repr(a) == "act (steps=8, dim=0, threshold=0.99, penalty=0.01)"
    a.set_halt_threshold(0.5)
    assert repr(a) == "act (steps=8, dim=0, threshold=0.5, penalty=0.01)"
    # dlib prints its float members at precision 9: 0.01f is 0.00999999978
    assert a.to_xml() == ("<act steps='8' dim='0' threshold='0.5' penalty='0.00999999978' "
                          "depth_scaling='false'>\n</act>\n")
    for tmpl, steps in ((act, 8), (act4, 4), (act16, 16)):
        assert tmpl[input_tensor]().layer_details().get_max_steps() == steps
    assert adaptive_computation_time[6, input_tensor]().layer_details().get_max_steps() == 6
    with pytest.raises(ValueError, match="adaptive_computation_time_: max_steps"):
        adaptive_computation_time_(0)


def test_act_net_like_dlibs_test(rng):
    net = tag1[act[input_tensor]]()
    x = randn(rng, (10, 1, 4, 3)).astype(np.float32)
    out = net([x])
    assert out.shape == (10, 1, 4, 3)
    details = layer(net, tag1).subnet().layer_details()
    assert 0 <= details.get_ponder_cost() <= 1 and details.get_average_steps() >= 1
    with pytest.raises(ValueError, match="adaptive_computation_time_: input"):
        net([x[:, :, :3]])


# ----------------------------------------------------------------------------------------
# tag merges

def test_add_prev_and_mult_prev_zero_pad_every_dimension(rng):
    a, b = randn(rng, (2, 3, 2, 4)), randn(rng, (3, 2, 3, 1))
    shape = (3, 3, 3, 4)
    for cls, ref in ((add_prev_, padded(a, shape) + padded(b, shape)),
                     (mult_prev_, padded(a, shape) * padded(b, shape))):
        sub = Sub(a, grad=np.ones(a.shape))
        tagged = sub.with_tag(tag2, b, grad=np.ones(b.shape))
        gi = randn(rng, shape)
        out, _ = run(cls(tag2), sub, gi)
        np.testing.assert_allclose(A(out), ref, rtol=1e-6)
        if cls is add_prev_:
            da, db = padded(gi, a.shape), padded(gi, b.shape)
        else:
            da, db = padded(padded(b, shape) * gi, a.shape), padded(padded(a, shape) * gi, b.shape)
        np.testing.assert_allclose(A(sub.gradient_input), 1 + da, rtol=1e-5)       # ADDED
        np.testing.assert_allclose(A(tagged.gradient_input), 1 + db, rtol=1e-5)


def test_multm_prev_forward_backward(rng):
    a, b = randn(rng, (2, 3, 4, 5)), randn(rng, (2, 3, 5, 2))
    sub = Sub(a, grad=np.ones(a.shape))
    tagged = sub.with_tag(tag3, b, grad=np.ones(b.shape))
    gi = randn(rng, (2, 3, 4, 2))
    out, _ = run(multm_prev_(tag3), sub, gi)
    np.testing.assert_allclose(A(out), _plane_ref(a, b, False, False), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(A(sub.gradient_input), 1 + _plane_ref(gi, b, False, True), rtol=1e-5)
    np.testing.assert_allclose(A(tagged.gradient_input), 1 + _plane_ref(a, gi, True, False), rtol=1e-5)
    bad = Sub(a)
    bad.with_tag(tag3, randn(rng, (2, 3, 4, 2)))
    with pytest.raises(ValueError, match="multm_prev_: .*tag3"):
        run(multm_prev_(tag3), bad)


@pytest.mark.parametrize("cls", [scale_, scale_prev_])
def test_scale_layers(cls, rng):
    x, s = randn(rng, (2, 3, 2, 4)), randn(rng, (2, 3, 1, 1))
    # scale_: the tagged layer is scaled by the subnet; scale_prev_: the other way round
    sub_out, tag_out = (s, x) if cls is scale_ else (x, s)
    sub = Sub(sub_out, grad=np.ones(sub_out.shape))
    tagged = sub.with_tag(tag1, tag_out, grad=np.ones(tag_out.shape))
    gi = randn(rng, x.shape)
    out, _ = run(cls(tag1), sub, gi)
    np.testing.assert_allclose(A(out), x * s, rtol=1e-6)
    gx, gs = gi * s, (gi * x).sum(axis=(2, 3), keepdims=True)
    g_sub, g_tag = (gs, gx) if cls is scale_ else (gx, gs)
    np.testing.assert_allclose(A(sub.gradient_input), 1 + g_sub, rtol=1e-5)
    np.testing.assert_allclose(A(tagged.gradient_input), 1 + g_tag, rtol=1e-5)
    bad = Sub(s[:, :2]) if cls is scale_ else Sub(x)
    bad.with_tag(tag1, x if cls is scale_ else s[:, :2])
    with pytest.raises(ValueError, match=f"{cls.__name__}: the scales"):
        run(cls(tag1), bad)


def test_merge_reprs_templates_and_validation():
    assert [repr(c(tag3)) for c in (add_prev_, mult_prev_, multm_prev_, scale_, scale_prev_)] == \
        ["add_prev3", "mult_prev3", "multm_prev3", "scale3", "scale_prev3"]
    assert scale_(tag2).to_xml() == "<scale tag='2'/>\n"
    assert add_prev_(tag1).to_xml() == "<add_prev tag='1'/>\n"
    assert add_prev_(tag1).map_input_to_output((1.5, 2.0)) == (1.5, 2.0)
    assert not hasattr(scale_(tag1), "map_input_to_output")  # dlib's scale_ has none
    t = add_prev[tag1, input_tensor]
    assert repr(t) == "add_prev[tag1, input_tensor]"
    assert dnnpy.net_type_from_string(repr(t)) is t
    for tmpl, cls, tag_id in ((add_prev1, add_prev_, 1), (add_prev10, add_prev_, 10),
                              (mult_prev2, mult_prev_, 2), (multm_prev3, multm_prev_, 3),
                              (scale1, scale_, 1), (scale_prev2, scale_prev_, 2)):
        d = tmpl[input_tensor]().layer_details()
        assert type(d) is cls and d.id == tag_id and d.tag is dnnpy.templates.tag_templates[tag_id - 1]
    for bad in (1, "tag1", dnnpy.skip1, None):
        with pytest.raises(TypeError, match="add_prev_: expected a tag template"):
            add_prev_(bad)
    with pytest.raises(TypeError, match="add_prev"):
        add_prev[3, input_tensor]


def test_residual_net_gradients(rng):
    """add_prev1 in a real net: the gradient reaches the input through both paths."""
    net = add_prev1[linear[4, tag1[input_tensor]]]()
    x = randn(rng, (2, 3, 2, 4)).astype(np.float32)
    out = net([x])
    w = A(layer(net, 1).layer_details().get_weights()).reshape(4, 4)
    np.testing.assert_allclose(A(out), x + x @ w, rtol=1e-5, atol=1e-6)
    gi = T(np.ones(out.shape))
    net.back_propagate_error(net.to_tensor([x]), gi)
    want = 1 + np.ones(out.shape) @ w.T
    # float32 sums of terms of size ~1: an entry that cancels to ~0.003 keeps only the
    # absolute accuracy of the terms (a few ulps of 1, ~1e-7), not 1e-5 of itself
    np.testing.assert_allclose(A(net.get_final_data_gradient()), want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------
# linear_

def test_linear_forward_backward_and_lr_quirk(rng):
    x = randn(rng, (2, 3, 2, 5))
    lin = linear_(4)
    sub = Sub(x, grad=np.ones(x.shape))
    lin.setup(sub)
    p = A(lin.get_layer_params())
    assert p.shape == (6, 4, 1, 1) and np.all(p[5] == 0)
    lin.get_layer_params().assign(randn(rng, (6, 4, 1, 1)))
    lin.set_learning_rate_multiplier(0.5)
    w, b = A(lin.get_weights()).reshape(5, 4), A(lin.get_biases()).reshape(4)
    out = resizable_tensor()
    lin.forward(sub, out)
    np.testing.assert_allclose(A(out), x @ w + b, rtol=1e-5, atol=1e-6)
    gi = randn(rng, (2, 3, 2, 4))
    pg = resizable_tensor()
    pg.copy_size(lin.get_layer_params())
    pg.fill(np.inf)
    lin.backward(T(gi), sub, pg)
    g = A(pg).reshape(6, 4)
    xr, gr = x.reshape(-1, 5), gi.reshape(-1, 4)
    np.testing.assert_allclose(g[:5], 0.5 * xr.T @ gr, rtol=1e-5, atol=1e-6)  # scaled by lr mult
    np.testing.assert_allclose(g[5], gr.sum(axis=0), rtol=1e-5, atol=1e-6)    # not scaled
    np.testing.assert_allclose(A(sub.gradient_input), 1 + gi @ w.T, rtol=1e-5)
    assert repr(lin) == "linear\t (num_outputs=4, bias=true) learning_rate_mult=0.5"
    assert lin.to_xml().startswith("<linear num_outputs='4' bias='true' learning_rate_mult='0.5'>\n")
    assert lin.to_xml().count("\n") == 6 + 2
    with pytest.raises(ValueError, match=r"linear_: input\(2, 3, 2, 4\) has nc=4"):
        lin.forward(Sub(np.zeros((2, 3, 2, 4))), out)


def test_linear_no_bias_templates_and_validation():
    d = linear_no_bias[3, input_tensor]().layer_details()
    assert d.get_bias_mode() == LINEAR_NO_BIAS and d.get_num_outputs() == 3
    assert repr(d) == "linear\t (num_outputs=3, bias=false) learning_rate_mult=1"
    assert not hasattr(d, "get_weight_decay_multiplier")  # dlib's linear_ has only the lr one
    with pytest.raises(ValueError, match="linear_: this layer has no bias"):
        d.get_biases()
    assert linear[2, input_tensor]().layer_details().get_bias_mode() == 0
    with pytest.raises(ValueError, match="linear_: num_outputs must be >= 1"):
        linear_(0)
    with pytest.raises(ValueError, match="linear_: bias_mode"):
        linear_(2, 5)
    with pytest.raises(TypeError, match="linear_: num_outputs must be an integer"):
        linear_(2.5)


# ----------------------------------------------------------------------------------------
# tril_, positional_encodings_, embeddings_

def _tril_ref(x, diag, value):
    out = x.copy()
    for r, c in itertools.product(range(x.shape[2]), range(x.shape[3])):
        if c > r + diag:
            out[:, :, r, c] = value
    return out


def test_tril_values_and_dlibs_zero_quirk(rng):
    x = randn(rng, (2, 2, 4, 5))
    gi = randn(rng, x.shape)
    for details, diag, value in ((tril_(0, neg_infinity_tag), 0, -np.inf), (tril_(1, None, 3, 2), 1, 1.5),
                                 (tril_(-2, None, -1, 4), -2, -0.25)):
        sub = Sub(x, grad=np.ones(x.shape))
        out, _ = run(details, sub, gi)
        np.testing.assert_allclose(A(out), _tril_ref(x, diag, value), rtol=1e-6)
        keep = _tril_ref(np.ones(x.shape), diag, 0)
        np.testing.assert_allclose(A(sub.gradient_input), 1 + gi * keep, rtol=1e-6)
    # dlib's implementation only builds its mask for a non-zero fill value: tril is the identity
    for details in (tril_(0, zero_tag), tril_(-1, None, 0, 3)):
        sub = Sub(x, grad=np.zeros(x.shape))
        out, _ = run(details, sub, gi)
        np.testing.assert_array_equal(A(out), A(T(x)))
        np.testing.assert_allclose(A(sub.gradient_input), gi, rtol=1e-6)


def test_tril_reprs_templates_and_validation():
    assert repr(tril[input_tensor]().layer_details()) == "tril (diag=0, diag_value=0)"
    assert repr(tril_mask[input_tensor]().layer_details()) == "tril (diag=0, diag_value=-inf)"
    d = tril_diag[-1, 1, 2, input_tensor]().layer_details()
    assert type(d) is tril_ and repr(d) == "tril (diag=-1, diag_value=0.5)"
    assert d.to_xml() == "<tril diag='-1' diag_value='0.5'/>\n"
    assert d.map_output_to_input((3.0, 4.0)) == (3.0, 4.0)
    with pytest.raises(TypeError, match="tril_: tag"):
        tril_(0, "zero")
    with pytest.raises(ValueError, match="tril_: den"):
        tril_(0, None, 1, 0)
    with pytest.raises(TypeError, match="tril_: diag"):
        tril_(0.5)


def test_positional_encodings_use_the_column_index(rng):
    x = randn(rng, (2, 3, 4, 6))
    sub = Sub(x, grad=np.ones(x.shape))
    pe_layer = positional_encodings_()
    gi = randn(rng, x.shape)
    out, _ = run(pe_layer, sub, gi)
    pe = np.zeros((4, 6))
    for r, c in itertools.product(range(4), range(6)):
        theta = r / 10000 ** (c / 6)  # dlib's code: c itself, not 2*(c//2)
        pe[r, c] = np.sin(theta) if c % 2 == 0 else np.cos(theta)
    np.testing.assert_allclose(A(out), x + pe, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(A(sub.gradient_input), 1 + gi, rtol=1e-6)
    assert (pe_layer.sequence_dim, pe_layer.embedding_dim) == (4, 6)
    # a new input shape rebuilds PE
    y = randn(rng, (1, 1, 2, 3))
    out2 = resizable_tensor()
    pe_layer.forward(Sub(y), out2)
    assert out2.shape == (1, 1, 2, 3) and pe_layer.get_positional_encodings().shape == (1, 1, 2, 3)
    assert repr(pe_layer) == "positional_encodings" and pe_layer.to_xml() == "<positional_encodings />\n"
    assert type(positional_encodings[input_tensor]().layer_details()) is positional_encodings_


def test_embeddings_layer_updates_its_table_in_backward(rng):
    tokens = np.array([[0, 2, 2], [5, 1, 2]], float).reshape(2, 1, 3, 1)  # 5 is out of range
    emb = embeddings_(4, 3)
    sub = Sub(tokens, grad=np.full(tokens.shape, 7.0))
    emb.setup(sub)
    table = A(emb.get_embeddings()).reshape(4, 3).copy()
    assert emb.get_layer_params().size() == 0 and np.std(table) > 0
    out = resizable_tensor()
    emb.forward(sub, out)
    want = np.stack([table[int(t)] if t < 4 else np.zeros(3) for t in tokens.ravel()]).reshape(2, 1, 3, 3)
    np.testing.assert_allclose(A(out), want, rtol=1e-6)
    gi = randn(rng, (2, 1, 3, 3))
    emb.set_learning_rate_multiplier(2)
    emb.backward(T(gi), sub, resizable_tensor())
    ref = table.copy()
    flat_t, flat_g = tokens.ravel(), gi.reshape(6, 3)
    for t, g in zip(flat_t, flat_g):
        if t < 4:
            ref[int(t)] -= g * 2 * 0.15  # freq scale min(0.15, max(1/f, 1)) = 0.15
    np.testing.assert_allclose(A(emb.get_embeddings()).reshape(4, 3), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(A(emb.freqs).ravel(), [1, 1, 3, 0])
    np.testing.assert_array_equal(A(sub.gradient_input), 7.0)  # no gradient to the input
    emb.set_scale_by_freq(False)
    before = A(emb.get_embeddings()).reshape(4, 3).copy()
    emb.backward(T(gi), sub, resizable_tensor())
    np.testing.assert_allclose(before - A(emb.get_embeddings()).reshape(4, 3),
                               np.stack([2 * flat_g[flat_t == i].sum(axis=0) for i in range(4)]),
                               rtol=1e-5, atol=1e-6)
    emb.set_learning_rate_multiplier(0)
    before = A(emb.get_embeddings()).copy()
    emb.backward(T(gi), sub, resizable_tensor())
    np.testing.assert_array_equal(A(emb.get_embeddings()), before)
    assert repr(emb) == "embeddings (num_embeddings=4, embedding_dim=3) learning_rate_mult=0"
    assert emb.to_xml().startswith("<embeddings num_embeddings='4' embedding_dim='3' learning_rate_mult='0'>\n")
    assert type(embeddings[4, 3, input_tensor]().layer_details()) is embeddings_
    with pytest.raises(ValueError, match="embeddings_: embedding_dim must be >= 1"):
        embeddings_(3, 0)
    with pytest.raises(ValueError, match="embeddings_: can't change"):
        emb.set_num_embeddings(9)


def test_linear_and_embeddings_in_a_net(rng):
    """A small transformer-style stack trains end to end through the net API."""
    net = linear[2, positional_encodings[embeddings[5, 4, input_tensor]]]()
    tokens = rng.integers(0, 5, (3, 1, 6, 1)).astype(np.float32)
    out = net([tokens])
    assert out.shape == (3, 1, 6, 2)
    emb = layer(net, 2).layer_details()
    before = A(emb.get_embeddings()).copy()
    net.back_propagate_error(net.to_tensor([tokens]), T(np.ones(out.shape)))
    assert np.any(A(emb.get_embeddings()) != before)  # updated during backward
    assert layer(net, 0).get_parameter_gradient().shape == (5, 2, 1, 1)
    assert isinstance(layer(net, 1), add_layer)


def test_merge_layers_take_dlibs_itags():
    """dlib's ``add_prev<itag3, ...>`` / ``mult_prev<itag1, ...>`` (slm_advanced's mixture of
    experts): any tag template works, printed with its id as dlib does."""
    import copy
    from dnnpy import add_prev, input_tensor, iskip, itag0, itag1, itag3, mult_prev, relu
    net = add_prev[itag3, itag3[mult_prev[itag1, iskip[itag1[relu[itag0[input_tensor]]]]]]]()
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2)).astype(np.float32)
    out = net(x)
    r = np.maximum(x, 0)
    np.testing.assert_allclose(np.asarray(out), 2 * r * x, rtol=1e-6)
    d = copy.deepcopy(net.layer_details())
    assert d.tag is itag3 and repr(d) == "add_prev1003"
