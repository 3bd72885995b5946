"""Normalisation group: bn_, affine_, layer_norm_, rms_norm_, their ops, and the visitors
set_all_bn_running_stats_window_sizes / disable_duplicative_biases / fuse_layers /
copy_net_as. Forward values are checked against small float64 loop references;
gradients are checked by tests/test_layers.py (layer_cases/norm.py)."""

import numpy as np
import pytest

import dnnpy.tensor_tools as tt
from dnnpy import (CONV_MODE, FC_MODE, affine, affine_, bn_, bn_con, bn_fc, con, copy_net_as,
                   disable_duplicative_biases, fc, fuse_layers, input_tensor, layer, layer_norm,
                   layer_norm_, relu, rms_norm, rms_norm_, set_all_bn_running_stats_window_sizes,
                   tag1)
from dnnpy.tensor import alias_tensor, default_dtype, resizable_tensor

RND = np.random.default_rng(1234)


def T(a):
    return resizable_tensor(np.asarray(a, dtype=np.float64))


# ----------------------------------------------------------------------------------------
# float64 loop references (obvious code)

def ref_bn(x, gamma, beta, eps, conv):
    n, k, nr, nc = x.shape
    out = np.empty_like(x)
    means, variances = {}, {}
    for kk in range(k):
        for r in range(nr):
            for c in range(nc):
                if conv:
                    vals = x[:, kk, :, :].ravel()
                    key, gk = (kk, 0, 0), (0, kk, 0, 0)
                else:
                    vals = x[:, kk, r, c]
                    key, gk = (kk, r, c), (0, kk, r, c)
                m = sum(vals) / len(vals)
                v = sum((val - m) ** 2 for val in vals) / len(vals)
                means[key], variances[key] = m, v
                for s in range(n):
                    out[s, kk, r, c] = (x[s, kk, r, c] - m) / np.sqrt(v + eps) * gamma[gk] + beta[gk]
    return out, means, variances


def ref_layer_norm(x, gamma, beta, eps):
    out = np.empty_like(x)
    for s in range(x.shape[0]):
        vals = x[s].ravel()
        m = sum(vals) / len(vals)
        v = sum(val * val for val in vals) / len(vals) - m * m
        for kk in range(x.shape[1]):
            out[s, kk] = (x[s, kk] - m) / np.sqrt(v + eps) * gamma[0, kk, 0, 0] + beta[0, kk, 0, 0]
    return out


def ref_rms_norm(x, gamma, eps):
    out = np.empty_like(x)
    for s in range(x.shape[0]):
        ms = sum(val * val for val in x[s].ravel()) / x[s].size
        for kk in range(x.shape[1]):
            out[s, kk] = x[s, kk] / np.sqrt(ms + eps) * gamma[0, kk, 0, 0]
    return out


# ----------------------------------------------------------------------------------------
# ops

@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
def test_batch_norm_float32_is_as_close_to_float64_as_rounding_allows(conv):
    """The numpy twin in float32 (row sums in float32, the rest in float64) against the same
    ops in float64, on data whose mean (20) is large against its spread (0.5), where a
    cancelling variance or gradient formula loses most digits. The float32 inputs themselves
    carry 20 * 6e-8 = 1.2e-6 of rounding, 2.4e-6 relative to the spread that normalisation
    divides by (measured: up to 3.3e-6 in FC mode, 16 samples per statistic); 1e-5 is four
    times that."""
    rng = np.random.default_rng(21)
    shape = (16, 8, 24, 24)
    x = rng.standard_normal(shape) * 0.5 + 20
    g = rng.standard_normal(shape)
    pshape = (1, 8, 1, 1) if conv else (1, 8, 24, 24)
    gamma, beta = rng.uniform(0.5, 2, pshape), rng.standard_normal(pshape)
    op = tt.batch_normalize_conv if conv else tt.batch_normalize
    grad = tt.batch_normalize_conv_gradient if conv else tt.batch_normalize_gradient

    def run(dtype):
        with default_dtype(dtype), tt.force_numpy():
            dest, means, invstds, rm, rv = (resizable_tensor() for _ in range(5))
            xs = T(x)
            op(1e-5, dest, means, invstds, 1, rm, rv, xs, T(gamma), T(beta))
            sg, gg, bg = T(np.zeros(shape)), T(np.zeros(pshape)), T(np.zeros(pshape))
            grad(1e-5, T(g), means, invstds, xs, T(gamma), sg, gg, bg)
            return [np.asarray(t, dtype=np.float64) for t in (dest, rv, sg, gg, bg)]

    for got, want in zip(run(np.float32), run(np.float64)):
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
def test_batch_normalize_values_and_running_stats(conv):
    x = RND.standard_normal((4, 3, 2, 3)) * 2 + 1
    pshape = (1, 3, 1, 1) if conv else (1, 3, 2, 3)
    gamma, beta = RND.uniform(0.5, 2, pshape), RND.standard_normal(pshape)
    eps = 1e-3
    with default_dtype(np.float64):
        dest, means, invstds = resizable_tensor(), resizable_tensor(), resizable_tensor()
        rm, rv = resizable_tensor(), resizable_tensor()
        op = tt.batch_normalize_conv if conv else tt.batch_normalize
        op(eps, dest, means, invstds, 1, rm, rv, T(x), T(gamma), T(beta))
        want, m, v = ref_bn(x, gamma, beta, eps, conv)
        np.testing.assert_allclose(np.asarray(dest), want, rtol=1e-12, atol=1e-12)
        assert means.shape == invstds.shape == rm.shape == rv.shape == pshape
        count = x.size // gamma.size
        key = (1, 0, 0) if conv else (1, 1, 2)
        idx = (0, 1, 0, 0) if conv else (0, 1, 1, 2)
        assert means[idx] == pytest.approx(m[key])
        assert invstds[idx] == pytest.approx(1 / np.sqrt(v[key] + eps))
        # averaging factor 1: running stats = batch mean and UNBIASED variance
        assert rm[idx] == pytest.approx(m[key])
        assert rv[idx] == pytest.approx(v[key] * count / (count - 1))
        # averaging factor 0.25 blends
        old_m, old_v = np.asarray(rm).copy(), np.asarray(rv).copy()
        x2 = RND.standard_normal(x.shape)
        op(eps, dest, means, invstds, 0.25, rm, rv, T(x2), T(gamma), T(beta))
        _, m2, v2 = ref_bn(x2, gamma, beta, eps, conv)
        assert rm[idx] == pytest.approx(0.75 * old_m[idx] + 0.25 * m2[key])
        assert rv[idx] == pytest.approx(0.75 * old_v[idx] + 0.25 * v2[key] * count / (count - 1))


@pytest.mark.parametrize("conv", [False, True], ids=["fc", "conv"])
def test_batch_normalize_inference(conv):
    x = RND.standard_normal((2, 2, 3, 2))
    pshape = (1, 2, 1, 1) if conv else (1, 2, 3, 2)
    g, b, m = (RND.standard_normal(pshape) for _ in range(3))
    v = RND.uniform(0.1, 2, pshape)
    with default_dtype(np.float64):
        dest = resizable_tensor()
        op = tt.batch_normalize_conv_inference if conv else tt.batch_normalize_inference
        op(1e-4, dest, T(x), T(g), T(b), T(m), T(v))
    np.testing.assert_allclose(np.asarray(dest), g * (x - m) / np.sqrt(v + 1e-4) + b, rtol=1e-12)


def test_batch_normalize_float32_stays_float32():
    dest, means, invstds, rm, rv = (resizable_tensor() for _ in range(5))
    x = resizable_tensor(RND.standard_normal((3, 2, 2, 2)).astype(np.float32))
    g = resizable_tensor(np.ones((1, 2, 1, 1), np.float32))
    tt.batch_normalize_conv(1e-4, dest, means, invstds, 1, rm, rv, x, g, g)
    assert np.asarray(dest).dtype == np.float32 and np.asarray(rv).dtype == np.float32


def test_layer_normalize_is_per_sample_with_per_channel_gamma():
    x = RND.standard_normal((3, 4, 2, 3)) + 2
    gamma, beta = RND.uniform(0.5, 2, (1, 4, 1, 1)), RND.standard_normal((1, 4, 1, 1))
    with default_dtype(np.float64):
        dest, means, invstds = resizable_tensor(), resizable_tensor(), resizable_tensor()
        tt.layer_normalize(1e-5, dest, means, invstds, T(x), T(gamma), T(beta))
    np.testing.assert_allclose(np.asarray(dest), ref_layer_norm(x, gamma, beta, 1e-5), rtol=1e-10, atol=1e-12)
    assert means.shape == invstds.shape == (3, 1, 1, 1)
    np.testing.assert_allclose(np.asarray(means).ravel(), x.reshape(3, -1).mean(axis=1))


def test_layer_normalize_matches_torch_layer_norm():
    torch = pytest.importorskip("torch")
    x = RND.standard_normal((2, 3, 4, 5))
    with default_dtype(np.float64):
        dest, means, invstds = resizable_tensor(), resizable_tensor(), resizable_tensor()
        ones = T(np.ones((1, 3, 1, 1)))
        tt.layer_normalize(1e-5, dest, means, invstds, T(x), ones, T(np.zeros((1, 3, 1, 1))))
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (3, 4, 5), eps=1e-5).numpy()
    np.testing.assert_allclose(np.asarray(dest), want, rtol=1e-9, atol=1e-10)


def test_rms_normalize_stores_the_inverse_rms():
    x = RND.standard_normal((2, 3, 2, 2))
    gamma = RND.uniform(0.5, 2, (1, 3, 1, 1))
    with default_dtype(np.float64):
        dest, scale = resizable_tensor(), resizable_tensor()
        tt.rms_normalize(1e-5, dest, scale, T(x), T(gamma))
    np.testing.assert_allclose(np.asarray(dest), ref_rms_norm(x, gamma, 1e-5), rtol=1e-12)
    assert scale.shape == (2, 1, 1, 1)
    np.testing.assert_allclose(np.asarray(scale).ravel(),
                               1 / np.sqrt((x.reshape(2, -1) ** 2).mean(axis=1) + 1e-5))


def test_normalize_gradients_add_to_src_grad_and_assign_param_grads():
    x = RND.standard_normal((3, 2, 2, 2))
    gi = RND.standard_normal(x.shape)
    with default_dtype(np.float64):
        dest, means, invstds, dm, dv = (resizable_tensor() for _ in range(5))
        g, b = T(RND.uniform(0.5, 2, (1, 2, 1, 1))), T(np.zeros((1, 2, 1, 1)))
        tt.layer_normalize(1e-5, dest, means, invstds, T(x), g, b)
        fresh = T(np.zeros(x.shape))
        gg, bg = T(np.full((1, 2, 1, 1), np.inf)), T(np.full((1, 2, 1, 1), np.inf))
        tt.layer_normalize_gradient(1e-5, T(gi), means, invstds, T(x), g, fresh, gg, bg, dm, dv)
        prefilled = T(np.full(x.shape, 5.0))
        tt.layer_normalize_gradient(1e-5, T(gi), means, invstds, T(x), g, prefilled, gg, bg, dm, dv)
    assert np.isfinite(np.asarray(gg)).all() and np.isfinite(np.asarray(bg)).all()
    np.testing.assert_allclose(np.asarray(bg).ravel(), gi.sum(axis=(0, 2, 3)))
    np.testing.assert_allclose(np.asarray(prefilled), np.asarray(fresh) + 5.0)
    assert dm.shape == dv.shape == (3, 1, 1, 1)


def test_affine_transform_conv_and_tensors():
    x = RND.standard_normal((2, 3, 2, 2))
    a, b = RND.standard_normal((1, 3, 1, 1)), RND.standard_normal((1, 3, 1, 1))
    with default_dtype(np.float64):
        out = resizable_tensor(2, 3, 2, 2)
        tt.affine_transform_conv(out, T(x), T(a), T(b))
        np.testing.assert_allclose(np.asarray(out), a * x + b)
        a2, b2 = RND.standard_normal((1, 3, 2, 2)), RND.standard_normal((1, 3, 2, 2))
        tt.affine_transform_tensors(out, T(x), T(a2), T(b2))   # A, B shared by the samples
        np.testing.assert_allclose(np.asarray(out), a2 * x + b2)
        a3, b3 = RND.standard_normal(x.shape), RND.standard_normal(x.shape)
        xt = T(x)
        tt.affine_transform_tensors(xt, xt, T(a3), T(b3))      # per element, in place
        np.testing.assert_allclose(np.asarray(xt), a3 * x + b3)
        # the scalar affine_transform still works
        tt.affine_transform(out, T(x), 2.0, 1.0)
        np.testing.assert_allclose(np.asarray(out), 2 * x + 1)


def test_multiply_conv_both_forms():
    x = RND.standard_normal((2, 3, 2, 2))
    y = RND.standard_normal(x.shape)
    s = RND.standard_normal((1, 3, 1, 1))
    with default_dtype(np.float64):
        out = T(np.full(x.shape, np.inf))
        tt.multiply_conv(False, out, T(x), T(s))
        np.testing.assert_allclose(np.asarray(out), x * s)
        tt.multiply_conv(True, out, T(x), T(s))
        np.testing.assert_allclose(np.asarray(out), 2 * x * s)
        red = T(np.full((1, 3, 1, 1), np.inf))
        tt.multiply_conv(False, red, T(x), T(y))
        np.testing.assert_allclose(np.asarray(red).ravel(), (x * y).sum(axis=(0, 2, 3)))


@pytest.mark.parametrize("call, op", [
    (lambda: tt.batch_normalize_conv(1e-4, resizable_tensor(), resizable_tensor(), resizable_tensor(), 1,
                                     resizable_tensor(), resizable_tensor(), T(np.zeros((2, 3, 2, 2))),
                                     T(np.ones((1, 4, 1, 1))), T(np.ones((1, 4, 1, 1)))), "batch_normalize_conv"),
    (lambda: tt.batch_normalize(1e-4, resizable_tensor(), resizable_tensor(), resizable_tensor(), 1,
                                resizable_tensor(), resizable_tensor(), T(np.zeros((1, 2, 1, 1))),
                                T(np.ones((1, 2, 1, 1))), T(np.ones((1, 2, 1, 1)))), "batch_normalize"),
    (lambda: tt.batch_normalize_inference(0, resizable_tensor(), T(np.zeros((1, 2, 1, 1))),
                                          *[T(np.ones((1, 2, 1, 1)))] * 4), "batch_normalize_inference"),
    (lambda: tt.layer_normalize(1e-5, resizable_tensor(), resizable_tensor(), resizable_tensor(),
                                T(np.zeros((2, 3, 1, 1))), T(np.ones((1, 2, 1, 1))),
                                T(np.ones((1, 2, 1, 1)))), "layer_normalize"),
    (lambda: tt.rms_normalize(1e-5, resizable_tensor(), resizable_tensor(), T(np.zeros((2, 3, 1, 1))),
                              T(np.ones((1, 3, 2, 1)))), "rms_normalize"),
    (lambda: tt.affine_transform_conv(T(np.zeros((2, 3, 1, 1))), T(np.zeros((2, 3, 1, 1))),
                                      T(np.ones((1, 2, 1, 1))), T(np.ones((1, 2, 1, 1)))), "affine_transform_conv"),
    (lambda: tt.affine_transform_tensors(T(np.zeros((2, 3, 1, 1))), T(np.zeros((2, 3, 1, 1))),
                                         T(np.ones((1, 3, 2, 1))), T(np.ones((1, 3, 2, 1)))), "affine_transform_tensors"),
    (lambda: tt.multiply_conv(False, T(np.zeros((2, 3, 1, 1))), T(np.zeros((2, 3, 1, 1))),
                              T(np.ones((1, 2, 1, 1)))), "multiply_conv"),
])
def test_ops_reject_bad_shapes_naming_the_op(call, op):
    with pytest.raises(ValueError, match=op):
        call()


def test_ops_want_resizable_outputs():
    t = T(np.zeros((2, 3, 1, 1)))
    view = alias_tensor(2, 3, 1, 1)(t, 0)       # a plain tensor cannot be resized
    with pytest.raises(TypeError, match="layer_normalize: dest"):
        tt.layer_normalize(1e-5, view, resizable_tensor(), resizable_tensor(), t,
                           T(np.ones((1, 3, 1, 1))), T(np.ones((1, 3, 1, 1))))


# ----------------------------------------------------------------------------------------
# layers

def _run(net, x):
    return np.asarray(net([x])).copy()


def test_bn_running_average_schedule_and_window():
    with default_dtype(np.float64):
        net = bn_con[input_tensor]()
        bn = net.layer_details()
        bn.set_running_stats_window_size(2)
        batches = [RND.standard_normal((3, 2, 2, 2)) + i for i in range(4)]
        expected = None
        # decay = 1 - u/(u+1) with u = min(updates so far, window): 1, 1/2, 1/3, 1/3
        for x, decay in zip(batches, [1, 1 / 2, 1 / 3, 1 / 3]):
            _run(net, x)
            m = x.mean(axis=(0, 2, 3))
            expected = m if expected is None else (1 - decay) * expected + decay * m
        assert bn.num_updates == 2
        np.testing.assert_allclose(np.asarray(bn.running_means).ravel(), expected, rtol=1e-12)


@pytest.mark.parametrize("template, mode", [(bn_con, CONV_MODE), (bn_fc, FC_MODE)])
def test_bn_one_sample_uses_running_stats(template, mode):
    with default_dtype(np.float64):
        net = template[input_tensor]()
        x = RND.standard_normal((4, 2, 3, 3))
        train_out = _run(net, x)
        want, _, _ = ref_bn(x, np.ones((1, 2, 1, 1) if mode == CONV_MODE else (1, 2, 3, 3)),
                            np.zeros((1, 2, 1, 1) if mode == CONV_MODE else (1, 2, 3, 3)), 1e-4,
                            mode == CONV_MODE)
        np.testing.assert_allclose(train_out, want, rtol=1e-10, atol=1e-12)
        bn = net.layer_details()
        assert bn.params.size() == 2 * (2 if mode == CONV_MODE else 18)
        rm, rv = np.asarray(bn.running_means), np.asarray(bn.running_variances)
        x1 = x[:1]
        out = _run(net, x1)
        np.testing.assert_allclose(out, (x1 - rm) / np.sqrt(rv + 1e-4), rtol=1e-12)
        assert bn.num_updates == 1      # inference does not update the statistics


def test_bn_repr_xml_multipliers_and_getters():
    b = bn_(CONV_MODE)
    assert repr(b) == ("bn_con   eps=0.0001 running_stats_window_size=100 learning_rate_mult=1 "
                       "weight_decay_mult=0 bias_learning_rate_mult=1 bias_weight_decay_mult=1")
    f = bn_(FC_MODE, 50, 1e-5)
    assert repr(f).startswith("bn_fc    eps=1e-05 running_stats_window_size=50 ")
    assert (f.get_mode(), f.get_running_stats_window_size(), f.get_eps()) == (FC_MODE, 50, 1e-5)
    assert (b.get_learning_rate_multiplier(), b.get_weight_decay_multiplier(),
            b.get_bias_learning_rate_multiplier(), b.get_bias_weight_decay_multiplier()) == (1, 0, 1, 1)
    net = bn_con[input_tensor]()
    _run(net, RND.standard_normal((2, 2, 1, 1)))
    assert net.layer_details().to_xml() == (
        "<bn_con eps='0.0001' running_stats_window_size='100' learning_rate_mult='1' "
        "weight_decay_mult='0' bias_learning_rate_mult='1' bias_weight_decay_mult='1'>\n"
        "1 \n1 \n0 \n0 \n</bn_con>\n")


def test_norm_layer_reprs_and_maps():
    assert repr(layer_norm_()) == ("layer_norm eps=1e-05 learning_rate_mult=1 weight_decay_mult=0 "
                                   "bias_learning_rate_mult=1 bias_weight_decay_mult=1")
    assert repr(rms_norm_(1e-6)) == ("rms_norm (eps=1e-06) learning_rate_mult=1 weight_decay_mult=0 "
                                     "bias_learning_rate_mult=1 bias_weight_decay_mult=1")
    assert repr(affine_()) == "affine"
    for l in (bn_(0), layer_norm_(), rms_norm_(), affine_()):
        assert l.map_input_to_output((1.5, 2.0)) == (1.5, 2.0)
        assert l.map_output_to_input((3.0, 0.5)) == (3.0, 0.5)


@pytest.mark.parametrize("make, match", [
    (lambda: bn_(2), "bn_: mode"),
    (lambda: bn_(CONV_MODE, 0), "bn_: running_stats_window_size"),
    (lambda: bn_(CONV_MODE, 10, 0.0), "bn_: eps"),
    (lambda: bn_(FC_MODE).set_running_stats_window_size(0), "bn_: running_stats_window_size"),
    (lambda: layer_norm_(-1e-5), "layer_norm_: eps"),
    (lambda: rms_norm_("x"), "rms_norm_: eps"),
    (lambda: affine_(5), "affine_: mode"),
])
def test_constructor_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_affine_rejects_other_layers_and_unset_bn():
    with pytest.raises(TypeError, match="affine_"):
        affine_(layer_norm_())
    fresh = affine_(bn_(CONV_MODE))     # from a bn_ not yet set up: a fresh CONV_MODE affine_
    assert fresh.get_mode() == CONV_MODE and fresh.params.size() == 0


def test_layer_input_mismatch_names_the_layer():
    net = bn_con[input_tensor]()
    _run(net, RND.standard_normal((2, 3, 2, 2)))
    with pytest.raises(ValueError, match="bn_: input"):
        _run(net, RND.standard_normal((2, 4, 2, 2)))
    net = layer_norm[input_tensor]()
    _run(net, RND.standard_normal((2, 3, 2, 2)))
    with pytest.raises(ValueError, match="layer_norm_: input"):
        _run(net, RND.standard_normal((2, 4, 2, 2)))


def test_layer_norm_and_rms_norm_layers_forward():
    with default_dtype(np.float64):
        x = RND.standard_normal((3, 2, 3, 2)) * 3
        net = layer_norm[input_tensor]()
        _run(net, x)
        ln = net.layer_details()
        assert ln.params.shape == (4, 1, 1, 1)
        ln.params.assign(np.array([2.0, -1.0, 0.5, 0.25]))
        out = _run(net, x)
        np.testing.assert_allclose(out, ref_layer_norm(x, np.array([2.0, -1.0]).reshape(1, 2, 1, 1),
                                                       np.array([0.5, 0.25]).reshape(1, 2, 1, 1), 1e-5),
                                   rtol=1e-10)
        # statistics are per sample over all channels: scaling one sample leaves it unchanged
        x2 = x.copy()
        x2[1] *= 10
        out2 = _run(net, x2)
        np.testing.assert_allclose(out2[1], out[1], rtol=1e-4, atol=1e-6)
        net = rms_norm[input_tensor]()
        out = _run(net, x)
        assert net.layer_details().params.shape == (2, 1, 1, 1)
        np.testing.assert_allclose(out, ref_rms_norm(x, np.ones((1, 2, 1, 1)), 1e-5), rtol=1e-12)


def test_affine_from_bn_and_in_place():
    with default_dtype(np.float64):
        net = bn_fc[input_tensor]()
        for _ in range(3):
            _run(net, RND.standard_normal((5, 2, 2, 1)) * 2 + 1)
        bn = net.layer_details()
        bn.params.assign(RND.standard_normal(bn.params.shape))
        a = affine_(bn)
        g, b = np.asarray(bn.params).reshape(2, 1, 2, 2, 1)
        rm, rv = np.asarray(bn.running_means), np.asarray(bn.running_variances)
        gp = g / np.sqrt(rv + bn.get_eps())
        np.testing.assert_allclose(np.asarray(a.get_gamma()), gp, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(a.get_beta()), b - gp * rm, rtol=1e-12)
        assert a.get_mode() == FC_MODE and a.get_layer_params().size() == 0
        x = RND.standard_normal((1, 2, 2, 1))
        bn_out = _run(net, x)
        anet = copy_net_as(net, affine[input_tensor])
        np.testing.assert_allclose(_run(anet, x), bn_out, rtol=1e-12, atol=1e-12)
        assert anet.layer_details().get_layer_params().size() == 0
        # in place on a layer that does not need its output (con); identity once disabled
        cnet = affine[con[2, 1, 1, 1, 1, input_tensor]]()
        xs = RND.standard_normal((2, 3, 2, 2))
        con_out = np.asarray(cnet.subnet().forward(T(xs)))
        assert cnet._inplace
        out = _run(cnet, xs)
        np.testing.assert_allclose(out, np.asarray(cnet.subnet()._private_get_output()))
        cnet.layer_details().disable()
        assert repr(cnet.layer_details()) == "affine\t (disabled)"
        assert cnet.layer_details().params.size() == 0
        np.testing.assert_allclose(_run(cnet, xs), con_out)


def test_affine_to_xml():
    net = affine[input_tensor]()
    _run(net, RND.standard_normal((1, 1, 1, 2)))
    assert net.layer_details().to_xml() == "<affine_fc>\n1 \n1 \n0 \n0 \n</affine_fc>\n"
    net.layer_details().disable()
    assert net.layer_details().to_xml() == "<affine_fc disabled='true'>\n</affine_fc>\n"


# ----------------------------------------------------------------------------------------
# visitors

def test_set_all_bn_running_stats_window_sizes():
    net = relu[bn_fc[fc[3, bn_con[con[2, 3, 3, 1, 1, input_tensor]]]]]()
    set_all_bn_running_stats_window_sizes(net, 7)
    assert layer(net, 1).layer_details().get_running_stats_window_size() == 7
    assert layer(net, 3).layer_details().get_running_stats_window_size() == 7


def test_disable_duplicative_biases():
    net = layer_norm[fc[3, bn_con[con[2, 3, 3, 1, 1, rms_norm[tag1[fc[4, input_tensor]]]]]]]()
    disable_duplicative_biases(net)
    f, c, bottom_fc = (layer(net, i).layer_details() for i in (1, 3, 6))
    assert f.bias_is_disabled() and c.bias_is_disabled()
    assert (f.get_bias_learning_rate_multiplier(), f.get_bias_weight_decay_multiplier()) == (0, 0)
    assert (c.get_bias_learning_rate_multiplier(), c.get_bias_weight_decay_multiplier()) == (0, 0)
    # rms_norm sits on a tag: the fc below the tag keeps its bias, as in dlib
    assert not bottom_fc.bias_is_disabled()
    assert bottom_fc.get_bias_learning_rate_multiplier() == 1


def _train_bn_net(net, shape, steps=4):
    for _ in range(steps):
        _run(net, RND.standard_normal(shape))
    for i in range(net.num_layers()):
        node = layer(net, i)
        d = getattr(node, "layer_details", lambda: None)()
        if isinstance(d, bn_):   # non-trivial gamma/beta as after training
            d.params.assign(RND.standard_normal(d.params.shape))


def test_fuse_layers_end_to_end_float64():
    with default_dtype(np.float64):
        bn_type = relu[bn_con[con[4, 3, 3, 1, 1, relu[bn_con[con[3, 3, 3, 2, 2, input_tensor]]]]]]
        affine_type = relu[affine[con[4, 3, 3, 1, 1, relu[affine[con[3, 3, 3, 2, 2, input_tensor]]]]]]
        net = bn_type()
        disable_duplicative_biases(net)
        _train_bn_net(net, (6, 2, 7, 7))
        x = RND.standard_normal((1, 2, 7, 7))
        want = _run(net, x)
        inference = copy_net_as(net, affine_type)
        np.testing.assert_allclose(_run(inference, x), want, rtol=0, atol=1e-12)
        fuse_layers(inference)
        for i in (0, 1, 3, 4):
            assert layer(inference, i).layer_details().is_disabled()
        for i in (2, 5):
            c = layer(inference, i).layer_details()
            assert not c.relu_is_disabled() and not c.bias_is_disabled()
        got = _run(inference, x)
        assert np.abs(got - want).max() < 1e-10
        fuse_layers(inference)      # a second fuse changes nothing
        assert np.abs(_run(inference, x) - want).max() < 1e-10


def test_fuse_layers_relu_over_con_and_needs_parameters():
    net = relu[con[2, 3, 3, 1, 1, input_tensor]]()
    with pytest.raises(ValueError, match="fuse_layers: the network has to be allocated"):
        fuse_layers(net)
    x = RND.standard_normal((2, 1, 4, 4)).astype(np.float32)
    want = _run(net, x)
    fuse_layers(net)
    assert net.layer_details().is_disabled() and not net.subnet().layer_details().relu_is_disabled()
    np.testing.assert_allclose(_run(net, x), want, rtol=1e-6, atol=1e-6)


def test_fuse_layers_keeps_dlibs_unscaled_bias():
    """dlib adds beta to the con's bias without scaling the bias by gamma."""
    with default_dtype(np.float64):
        net = affine[con[2, 1, 1, 1, 1, input_tensor]]()
        _run(net, RND.standard_normal((1, 1, 1, 1)))
        c, a = net.subnet().layer_details(), net.layer_details()
        c.get_biases().assign(np.array([1.0, 2.0]))
        filt = np.asarray(c.get_filters()).copy()
        a.get_gamma().assign(np.array([3.0, -2.0]).reshape(1, 2, 1, 1))
        a.get_beta().assign(np.array([0.5, 0.25]).reshape(1, 2, 1, 1))
        fuse_layers(net)
        np.testing.assert_allclose(np.asarray(c.get_biases()).ravel(), [1.5, 2.25])
        np.testing.assert_allclose(np.asarray(c.get_filters()).ravel(), filt.ravel() * [3.0, -2.0])


def test_fuse_layers_refuses_a_per_pixel_affine():
    net = affine[con[2, 1, 1, 1, 1, input_tensor]]()
    _run(net, RND.standard_normal((1, 1, 2, 2)))      # FC-mode gamma is (1, 2, 2, 2)
    with pytest.raises(ValueError, match="fuse_layers: the affine over con"):
        fuse_layers(net)


def test_copy_net_as_rejects_different_structures():
    net = bn_con[con[2, 3, 3, 1, 1, input_tensor]]()
    with pytest.raises(TypeError, match="copy_net_as"):
        copy_net_as(net, affine[fc[2, input_tensor]])
    with pytest.raises(TypeError, match="copy_net_as"):
        copy_net_as(net, relu[affine[con[2, 3, 3, 1, 1, input_tensor]]])


def test_disable_duplicative_biases_over_a_repeat_uses_its_first_copy():
    from dnnpy import repeat

    net = bn_con[repeat[2, lambda s: con[2, 3, 3, 1, 1, s], input_tensor]]()
    disable_duplicative_biases(net)
    rep = net.subnet()
    assert rep.get_repeated_layer(0).layer_details().bias_is_disabled()
    assert not rep.get_repeated_layer(1).layer_details().bias_is_disabled()
