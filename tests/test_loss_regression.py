"""Regression, metric, ranking and self-supervised losses: gradients against their own loss
values (test_loss, float64), loss values and gradients against small float64 loop references
written from dlib's loss.h, to_label, printed forms, errors, and use inside nets."""

import numpy as np
import pytest

from dnnpy import (fc, input, input_rgb_image_pair, input_tensor, loss_barlow_twins,
                   loss_barlow_twins_, loss_dot, loss_dot_, loss_epsilon_insensitive,
                   loss_epsilon_insensitive_, loss_mean_squared, loss_mean_squared_,
                   loss_mean_squared_multioutput, loss_mean_squared_multioutput_,
                   loss_mean_squared_per_channel_and_pixel_, loss_metric, loss_metric_,
                   loss_ranking, loss_ranking_, net_type_from_string, test_loss)
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy.testing_loss import _loss_subnet


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def run(loss, output, labels=None, sef=1, prefill=np.inf):
    """Call the loss on a fake subnet (float64 unless output is float32) whose gradient
    buffer is pre-filled with ``prefill``; returns (loss value, gradient written)."""
    dtype = np.asarray(output).dtype
    with default_dtype(dtype):
        sub = _loss_subnet(np.asarray(output, dtype), sef)
        sub.gradient_input.fill(prefill)
        x = resizable_tensor(*sub.output.shape)
        value = (loss.compute_loss_value_and_gradient(x, sub) if labels is None
                 else loss.compute_loss_value_and_gradient(x, labels, sub))
        return value, np.array(sub.gradient_input.host_read())


def labels_of(loss, output, sef=1):
    with default_dtype(np.asarray(output).dtype):
        sub = _loss_subnet(np.asarray(output), sef)
        return loss.to_label(resizable_tensor(*sub.output.shape), sub)


# ----------------------------------------------------------------------------------------
# gradients against the loss values

def _metric_batch(rng):
    return 0.3 * rng.standard_normal((8, 3, 1, 1)), [0, 0, 1, 1, 2, 2, 0, 1]


GRADIENT_CASES = {
    "mean_squared": (lambda: loss_mean_squared_(), lambda r: (r.standard_normal((5, 1, 1, 1)), list(r.standard_normal(5))), 0.5, 1),
    "mean_squared_multioutput": (lambda: loss_mean_squared_multioutput_(), lambda r: (r.standard_normal((4, 3, 1, 1)), list(r.standard_normal((4, 3)))), 0.5, 1),
    "per_channel_and_pixel": (lambda: loss_mean_squared_per_channel_and_pixel_(2), lambda r: (r.standard_normal((3, 2, 2, 3)), list(r.standard_normal((3, 2, 2, 3)))), 0.5, 1),
    "epsilon_insensitive": (lambda: loss_epsilon_insensitive_(0.5), lambda r: (r.standard_normal((6, 1, 1, 1)), list(r.standard_normal(6))), 1.0, 1),
    "dot": (lambda: loss_dot_(), lambda r: (r.standard_normal((4, 2, 2, 1)), list(r.standard_normal((4, 4)))), 1.0, 1),
    "metric": (lambda: loss_metric_(), _metric_batch, 0.5, 1),
    "metric_wide": (lambda: loss_metric_(0.1, 2.0), lambda r: (r.standard_normal((8, 3, 1, 1)), [0, 0, 1, 1, 2, 2, 0, 1]), 0.5, 1),
    "ranking": (lambda: loss_ranking_(), lambda r: (r.standard_normal((7, 1, 1, 1)), [1, -1, 1, 0, -1, -1, 2.0]), 1.0, 1),
    "barlow_twins": (lambda: loss_barlow_twins_(0.1), lambda r: (r.standard_normal((8, 3, 1, 1)), None), 1.0, 2),
    "barlow_twins_default": (lambda: loss_barlow_twins_(), lambda r: (r.standard_normal((6, 4, 1, 1)), None), 1.0, 2),
}


@pytest.mark.parametrize("name", list(GRADIENT_CASES))
def test_gradient_matches_loss_value(name, rng):
    make, data, scale, sef = GRADIENT_CASES[name]
    output, labels = data(rng)
    result = test_loss(make(), output, labels, sample_expansion_factor=sef, gradient_scale=scale)
    assert result, result.log
    assert result.loss != 0


@pytest.mark.parametrize("name", list(GRADIENT_CASES))
def test_float32_outputs_agree_with_float64(name, rng):
    make, data, _, sef = GRADIENT_CASES[name]
    output, labels = data(rng)
    v32, g32 = run(make(), output.astype(np.float32), labels, sef=sef)
    v64, g64 = run(make(), output, labels, sef=sef)
    assert type(v32) is float and g32.dtype == np.float32
    assert v32 == pytest.approx(v64, rel=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-5 * np.abs(g64).max())


# ----------------------------------------------------------------------------------------
# values against loop references

def test_mean_squared_values_and_half_gradient(rng):
    out = rng.standard_normal((4, 1, 1, 1))
    y = rng.standard_normal(4)
    value, g = run(loss_mean_squared_(), out, list(y))
    o = out.reshape(-1)
    assert value == pytest.approx(sum((y[i] - o[i]) ** 2 for i in range(4)) / 4, rel=1e-12)
    np.testing.assert_allclose(g.reshape(-1), [(o[i] - y[i]) / 4 for i in range(4)], rtol=1e-12)


def test_mean_squared_float32_follows_dlibs_rounding(rng):
    out = rng.standard_normal((3, 1, 1, 1)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    value, g = run(loss_mean_squared_(), out, list(y))
    assert g.dtype == np.float32
    temp1 = y - out.reshape(-1)                               # float
    temp2 = (temp1.astype(np.float64) / 3).astype(np.float32)  # double product rounded to float
    np.testing.assert_array_equal(g.reshape(-1), -temp2)
    assert value == pytest.approx(float(np.sum((temp2 * temp1).astype(np.float64))), rel=1e-15)


def test_mean_squared_multioutput_values(rng):
    out = rng.standard_normal((3, 2, 1, 1))
    y = rng.standard_normal((3, 2))
    value, g = run(loss_mean_squared_multioutput_(), out, [y[0], y[1].reshape(2, 1), list(y[2])])
    expect = sum((y[i, j] - out[i, j, 0, 0]) ** 2 for i in range(3) for j in range(2)) / 3
    assert value == pytest.approx(expect, rel=1e-12)
    np.testing.assert_allclose(g[:, :, 0, 0], (out[:, :, 0, 0] - y) / 3, rtol=1e-12)


def test_epsilon_insensitive_values_and_zero_gradient_inside_the_tube():
    out = np.array([0.0, 2.0, -3.0, 0.5]).reshape(4, 1, 1, 1)
    y = [0.2, 0.0, 0.0, 0.0]
    value, g = run(loss_epsilon_insensitive_(1.0), out, y)
    # errors out - y: -0.2 (inside), 2 (above), -3 (below), 0.5 (inside). dlib quirk: below the
    # tube it adds eps - err = eps + |err| (4 here), not |err| - eps; the gradient is -1/N either way
    assert value == pytest.approx(((2 - 1) + (1 - (-3))) / 4, rel=1e-12)
    np.testing.assert_array_equal(g.reshape(-1), [0.0, 0.25, -0.25, 0.0])  # inf prefill overwritten


def test_epsilon_insensitive_compares_the_float_error_in_double():
    # float32(0.1) - 0 is slightly above the double 0.1: dlib counts it as outside the tube
    out = np.array([0.1], np.float32).reshape(1, 1, 1, 1)
    value, g = run(loss_epsilon_insensitive_(0.1), out, [0.0])
    assert g.reshape(-1)[0] == np.float32(1.0)
    assert 0 < value < 1e-8


def test_dot_values(rng):
    out = rng.standard_normal((3, 2, 1, 2))
    t = rng.standard_normal((3, 4))
    value, g = run(loss_dot_(), out, list(t))
    flat = out.reshape(3, 4)
    assert value == pytest.approx(-sum(flat[i] @ t[i] for i in range(3)) / 3, rel=1e-12)
    np.testing.assert_allclose(g.reshape(3, 4), -t / 3, rtol=1e-12)


def metric_reference(x, labels, margin, dist_thresh):
    """dlib's loss_metric_ written out pair by pair (float64)."""
    n = len(labels)
    dist = lambda r, c: np.sqrt(max(np.sum((x[r] - x[c]) ** 2), 0.0))
    pos = [(r, c) for r in range(n) for c in range(r + 1, n) if labels[r] == labels[c]]
    negs = sorted(dist(r, c) ** 2 for r in range(n) for c in range(r + 1, n) if labels[r] != labels[c])
    num_pos = len(pos) + 0.0001
    scale = 0.5 / num_pos
    neg_thresh = np.sqrt(negs[min(len(pos), len(negs)) - 1])
    loss, gm = 0.0, np.zeros((n, n))
    for r in range(n):
        for c in range(n):
            if r == c:
                continue
            d = dist(r, c)
            if labels[r] == labels[c]:
                if d >= dist_thresh - margin:
                    loss += scale * (d - (dist_thresh - margin))
                    gm[r, r] += scale / d
                    gm[r, c] = -scale / d
            elif not (d > dist_thresh + margin or d > neg_thresh):
                loss += scale * ((dist_thresh + margin) - d)
                d = max(d, 0.001)
                gm[r, r] -= scale / d
                gm[r, c] = scale / d
    return loss, gm @ x


def test_metric_matches_the_pairwise_reference_with_hard_negative_mining(rng):
    # 2 positive pairs, 13 negative pairs: only the 2 closest negatives may count
    labels = [0, 0, 1, 1, 2, 3]
    x = 0.2 * rng.standard_normal((6, 3))
    value, g = run(loss_metric_(0.04, 0.6), x.reshape(6, 3, 1, 1), labels)
    # (float64 outputs: the float32 margin and threshold are combined in float64)
    ref_loss, ref_grad = metric_reference(x, labels, float(np.float32(0.04)), float(np.float32(0.6)))
    assert value == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(g.reshape(6, 3), ref_grad, rtol=1e-10, atol=1e-14)
    # the mining mattered: without it more negatives would be inside the margin
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    diff = np.array(labels)[:, None] != np.array(labels)[None]
    assert np.count_nonzero(np.triu(diff & (d <= 0.64), 1)) > 2


def test_metric_to_label_and_getters(rng):
    loss = loss_metric_(0.1, 0.75)
    assert loss.get_margin() == pytest.approx(0.1) and loss.get_distance_threshold() == pytest.approx(0.75)
    assert loss.get_margin() == float(np.float32(0.1))  # dlib stores floats
    out = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    embeddings = labels_of(loss, out)
    assert len(embeddings) == 2 and embeddings[1].dtype == np.float32
    np.testing.assert_array_equal(embeddings[1], out[1, :, 0, 0])


def ranking_reference(o, y):
    rel = [i for i in range(len(y)) if y[i] > 0]
    non = [i for i in range(len(y)) if y[i] < 0]
    total = len(rel) * len(non)
    loss, g = 0.0, np.zeros(len(y))
    for i in rel:
        count = sum(1 for j in non if o[j] - y[j] >= o[i] - y[i])
        loss -= count * (o[i] - y[i])
        g[i] = -count / total
    for j in non:
        count = sum(1 for i in rel if o[i] - y[i] <= o[j] - y[j])
        loss += count * (o[j] - y[j])
        g[j] = count / total
    return loss / total, g


def test_ranking_matches_inversion_counting(rng):
    y = [1.0, -1.0, 2.0, 0.0, -1.0, -0.5, 1.0, -2.0]
    o = rng.standard_normal(8)
    o[0], o[1] = 0.25, 0.25 + 1.0 - (-1.0)  # a tie of the shifted scores o - y: counts as an inversion
    value, g = run(loss_ranking_(), o.reshape(8, 1, 1, 1), y)
    ref_loss, ref_g = ranking_reference(o, y)
    assert value == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(g.reshape(-1), ref_g, rtol=1e-12)
    assert g.reshape(-1)[3] == 0  # label 0: ignored, gradient written as 0


def barlow_reference(z, lam):
    n = z.shape[0] // 2
    def bn(h):
        mean = h.mean(axis=0)
        var = ((h - mean) ** 2).mean(axis=0)
        return (h - mean) / np.sqrt(var + 1e-4)
    a, b = bn(z[:n]), bn(z[n:])
    d = z.shape[1]
    c = np.array([[sum(a[s, i] * b[s, j] for s in range(n)) / n for j in range(d)] for i in range(d)])
    loss = sum((c[i, i] - 1) ** 2 for i in range(d)) + lam * sum(c[i, j] ** 2 for i in range(d) for j in range(d) if i != j)
    return loss, c


def test_barlow_twins_value_and_eccm(rng):
    z = rng.standard_normal((10, 3))
    loss = loss_barlow_twins_(0.25)
    value, g = run(loss, z.reshape(10, 3, 1, 1), sef=2)
    ref, c = barlow_reference(z, 0.25)
    assert value == pytest.approx(ref, rel=1e-10)
    np.testing.assert_allclose(np.asarray(loss.get_eccm()).reshape(3, 3), c, rtol=1e-10, atol=1e-12)
    assert loss.get_lambda() == 0.25


def test_barlow_twins_gradient_matches_torch(rng):
    torch = pytest.importorskip("torch")
    z = rng.standard_normal((8, 5))
    value, g = run(loss_barlow_twins_(), z.reshape(8, 5, 1, 1), sef=2)
    t = torch.tensor(z, requires_grad=True)
    a = torch.nn.functional.batch_norm(t[:4], None, None, training=True, eps=1e-4)
    b = torch.nn.functional.batch_norm(t[4:], None, None, training=True, eps=1e-4)
    c = a.T @ b / 4
    eye = torch.eye(5, dtype=c.dtype)
    lam = float(np.float32(0.0051))
    ref = ((torch.diagonal(c) - 1) ** 2).sum() + lam * ((c * (1 - eye)) ** 2).sum()
    ref.backward()
    assert value == pytest.approx(ref.item(), rel=1e-10)
    np.testing.assert_allclose(g.reshape(8, 5), t.grad.numpy(), rtol=1e-8, atol=1e-12)


# ----------------------------------------------------------------------------------------
# to_label, printed forms

def test_scalar_to_label(rng):
    out = rng.standard_normal((3, 1, 1, 1)).astype(np.float32)
    for loss in (loss_mean_squared_(), loss_epsilon_insensitive_(), loss_ranking_()):
        labels = labels_of(loss, out)
        assert labels == [float(v) for v in out.reshape(-1)]
        assert all(type(v) is float for v in labels)


def test_vector_to_label(rng):
    out = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    for loss in (loss_mean_squared_multioutput_(), loss_dot_()):
        labels = labels_of(loss, out)
        assert len(labels) == 2 and labels[0].shape == (3,) and labels[0].dtype == np.float32
        np.testing.assert_array_equal(labels[0], out[0, :, 0, 0])
    dot_labels = labels_of(loss_dot_(), rng.standard_normal((2, 2, 2, 1)))
    assert dot_labels[0].shape == (4,)


PRINTED = [
    (loss_mean_squared_(), "loss_mean_squared", "<loss_mean_squared/>\n"),
    (loss_mean_squared_multioutput_(), "loss_mean_squared_multioutput", "<loss_mean_squared_multioutput/>\n"),
    (loss_epsilon_insensitive_(), "loss_epsilon_insensitive epsilon: 1", "<loss_epsilon_insensitive_ epsilon='1'/>\n"),
    (loss_epsilon_insensitive_(0.25), "loss_epsilon_insensitive epsilon: 0.25", "<loss_epsilon_insensitive_ epsilon='0.25'/>\n"),
    (loss_dot_(), "loss_dot", "<loss_dot/>\n"),
    (loss_metric_(), "loss_metric (margin=0.04, distance_threshold=0.6)",
     "<loss_metric margin='0.0399999991' distance_threshold='0.600000024'/>\n"),
    (loss_ranking_(), "loss_ranking", "<loss_ranking/>\n"),
    (loss_barlow_twins_(), "loss_barlow_twins (lambda=0.0051)", "<loss_barlow_twins lambda='0.00510000018'/>\n"),
    (loss_mean_squared_per_channel_and_pixel_(3), "loss_mean_squared_per_channel_and_pixel",
     "<loss_mean_squared_per_channel_and_pixel/>\n"),
]


@pytest.mark.parametrize("loss, text, xml", PRINTED, ids=[p[1].split()[0] + str(i) for i, p in enumerate(PRINTED)])
def test_printed_forms(loss, text, xml):
    assert repr(loss) == text
    assert loss.to_xml() == xml  # numbers at net_to_xml's precision 9


def test_epsilon_setter():
    loss = loss_epsilon_insensitive_()
    assert loss.get_epsilon() == 1.0
    loss.set_epsilon(0.5)
    assert loss.get_epsilon() == 0.5
    with pytest.raises(ValueError, match="loss_epsilon_insensitive_.*negative"):
        loss.set_epsilon(-1)


# ----------------------------------------------------------------------------------------
# errors

def test_constructor_validation():
    with pytest.raises(ValueError, match="loss_epsilon_insensitive_"):
        loss_epsilon_insensitive_(-0.1)
    with pytest.raises(TypeError, match="loss_epsilon_insensitive_"):
        loss_epsilon_insensitive_("1")
    with pytest.raises(ValueError, match="loss_metric_.*margin"):
        loss_metric_(0, 0.6)
    with pytest.raises(ValueError, match="loss_metric_.*dist_thresh"):
        loss_metric_(0.04, -1)
    with pytest.raises(ValueError, match="loss_barlow_twins_.*lambda"):
        loss_barlow_twins_(0)
    with pytest.raises(ValueError, match="loss_metric"):
        loss_metric[0.04, 0.0, fc[2, input_tensor]]


def test_bad_outputs_and_labels(rng):
    with pytest.raises(ValueError, match=r"loss_mean_squared_: the net output \(2, 3, 1, 1\).*k == 1"):
        run(loss_mean_squared_(), rng.standard_normal((2, 3, 1, 1)), [1.0, 2.0])
    with pytest.raises(ValueError, match="loss_mean_squared_: got 3 labels for 2 samples"):
        run(loss_mean_squared_(), rng.standard_normal((2, 1, 1, 1)), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="loss_epsilon_insensitive_: labels must be numbers, got strings"):
        run(loss_epsilon_insensitive_(), rng.standard_normal((2, 1, 1, 1)), ["a", "b"])
    with pytest.raises(ValueError, match="loss_mean_squared_multioutput_.*3"):
        run(loss_mean_squared_multioutput_(), rng.standard_normal((2, 3, 1, 1)), [np.zeros(2), np.zeros(2)])
    with pytest.raises(ValueError, match="loss_dot_.*label 1 has 3 values.*outputs 4"):
        run(loss_dot_(), rng.standard_normal((2, 4, 1, 1)), [np.zeros(4), np.zeros(3)])
    with pytest.raises(ValueError, match="loss_metric_.*nr == 1"):
        run(loss_metric_(), rng.standard_normal((4, 2, 2, 1)), [0, 0, 1, 1])
    with pytest.raises(TypeError, match="loss_metric_"):
        run(loss_metric_(), rng.standard_normal((4, 2, 1, 1)), [0.5, 0, 1, 1])


def test_sample_expansion_factor_checks(rng):
    with pytest.raises(ValueError, match="loss_mean_squared_.*sample expansion factor of 1"):
        run(loss_mean_squared_(), rng.standard_normal((4, 1, 1, 1)), [1.0, 2.0], sef=2)
    with pytest.raises(ValueError, match="loss_barlow_twins_.*sample expansion factor of 2.*has 1"):
        run(loss_barlow_twins_(), rng.standard_normal((4, 3, 1, 1)), sef=1)
    with pytest.raises(ValueError, match="loss_barlow_twins_.*at least 4"):
        run(loss_barlow_twins_(), rng.standard_normal((2, 3, 1, 1)), sef=2)


def test_batches_the_losses_cannot_use(rng):
    with pytest.raises(ValueError, match="loss_metric_: make sure each mini-batch contains both positive"):
        run(loss_metric_(), rng.standard_normal((3, 2, 1, 1)), [0, 1, 2])
    with pytest.raises(ValueError, match="loss_metric_: make sure each mini-batch contains both positive"):
        run(loss_metric_(), rng.standard_normal((3, 2, 1, 1)), [4, 4, 4])
    with pytest.raises(ValueError, match="loss_ranking_: .*only one class"):
        run(loss_ranking_(), rng.standard_normal((3, 1, 1, 1)), [1.0, 2.0, 0.0])


# ----------------------------------------------------------------------------------------
# inside nets

def _param_gradient_check(net, batch, labels, eps=1e-6):
    """Central differences of compute_loss over the fc's parameters, float64."""
    fc_layer = net.subnet().layer_details()
    params = fc_layer.get_layer_params()
    analytic = np.array(net.subnet().get_parameter_gradient().host_read()).reshape(-1)
    numeric = np.zeros_like(analytic)
    for i in range(analytic.size):
        flat = params.host().reshape(-1)
        old = flat[i]
        flat[i] = old + eps
        up = net.compute_loss(batch, labels)
        params.host().reshape(-1)[i] = old - eps
        down = net.compute_loss(batch, labels)
        params.host().reshape(-1)[i] = old
        numeric[i] = (up - down) / (2 * eps)
    return analytic, numeric


def test_mean_squared_net(rng):
    with default_dtype(np.float64):
        net = loss_mean_squared[fc[1, input[np.float64]]]()
        batch = [rng.standard_normal((2, 3)) for _ in range(4)]
        y = list(rng.standard_normal(4))
        predictions = net(batch)
        assert len(predictions) == 4 and all(isinstance(p, float) for p in predictions)
        loss = net.compute_parameter_gradients(batch, y)
        assert loss == pytest.approx(np.mean((np.array(y) - predictions) ** 2), rel=1e-12)
        analytic, numeric = _param_gradient_check(net, batch, y)
        np.testing.assert_allclose(analytic, 0.5 * numeric, rtol=1e-5, atol=1e-9)  # dlib's half gradient


def test_metric_net_and_type_round_trip(rng):
    nt = loss_metric[0.1, 0.75, fc[3, input[np.float32]]]
    assert net_type_from_string(repr(nt)) is nt
    net = nt()
    assert repr(net.loss_details()) == "loss_metric (margin=0.1, distance_threshold=0.75)"
    batch = [rng.standard_normal((2, 2)).astype(np.float32) for _ in range(6)]
    labels = [0, 0, 1, 1, 2, 2]
    embeddings = net(batch)
    assert len(embeddings) == 6 and embeddings[0].shape == (3,)
    loss = net.compute_parameter_gradients(batch, labels)
    assert loss >= 0 and np.isfinite(np.asarray(net.subnet().get_parameter_gradient())).all()


def test_other_losses_in_nets(rng):
    batch = [rng.standard_normal((2, 2)).astype(np.float32) for _ in range(4)]
    for nt, labels in [
        (loss_epsilon_insensitive[0.5, fc[1, input[np.float32]]], [5.0, -5.0, 0.0, 1.0]),
        (loss_ranking[fc[1, input[np.float32]]], [1.0, -1.0, 1.0, -1.0]),
        (loss_dot[fc[3, input[np.float32]]], [np.ones(3, np.float32)] * 4),
        (loss_mean_squared_multioutput[fc[2, input[np.float32]]], [np.zeros(2, np.float32)] * 4),
    ]:
        assert net_type_from_string(repr(nt)) is nt
        net = nt()
        assert len(net(batch)) == 4
        loss = net.compute_parameter_gradients(batch, labels)
        assert np.isfinite(loss)
        assert np.abs(np.asarray(net.subnet().get_parameter_gradient())).sum() > 0


def test_barlow_twins_net_is_unsupervised(rng):
    with default_dtype(np.float64):
        net = loss_barlow_twins[0.1, fc[3, input_rgb_image_pair]]()
        pairs = [(rng.integers(0, 256, (3, 3, 3), dtype=np.uint8), rng.integers(0, 256, (3, 3, 3), dtype=np.uint8))
                 for _ in range(4)]
        loss = net.compute_parameter_gradients(pairs)
        assert net.sample_expansion_factor() == 2
        assert loss > 0
        analytic, numeric = _param_gradient_check(net, pairs, None)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8)
