"""PyTorch as an independent oracle (float64): forward values, input gradients and
parameter gradients of the layers and losses that have an exact torch equivalent.

Each check builds a one-layer net over ``input_tensor``, runs ``forward`` and
``back_propagate_error`` with a random gradient input, and compares with torch autograd on
the same data and parameters. Only what matches dlib's semantics exactly is compared
(e.g. dlib's ``layer_norm_`` uses per-sample statistics with per-channel gamma, which is not
``torch.nn.functional.layer_norm``; ``avg_pool`` excludes padding = torch's
``count_include_pad=False``; bilinear resampling is ``align_corners=True``). Skipped
without torch.
"""

import numpy as np
import pytest

import dnnpy
from dnnpy import (layer_norm, rms_norm, avg_pool, bn_con, bn_fc, clipped_relu, con, cont, elu, embeddings, fc, fc_no_bias, gelu,
                   htan, input_tensor, leaky_relu, loss_binary_hinge, loss_binary_log,
                   loss_mean_squared, loss_multibinary_log, loss_multiclass_log,
                   loss_multiclass_log_per_pixel, max_pool, mish, prelu, relu, resize_to,
                   sig, silu, smelu, softmax, softmax_all, softmaxm, upsample, l2normalize, linear)
from dnnpy.tensor import default_dtype

torch = pytest.importorskip("torch")
F = torch.nn.functional

RTOL, ATOL = 1e-9, 1e-11


@pytest.fixture(autouse=True)
def _float64():
    with default_dtype(np.float64):
        yield


def _run(net, x, gi=None, seed=0):
    """forward + backward through a one-layer net; returns (out, dx, params_grad, gi)."""
    xt = net.to_tensor([x])
    out = np.array(net.forward(xt))
    if gi is None:
        gi = np.random.default_rng(seed).standard_normal(out.shape)
    gt = dnnpy.resizable_tensor(gi.astype(np.float64))
    net.back_propagate_error(xt, gt)
    dx = np.array(net.get_final_data_gradient())
    pg = np.array(net.get_parameter_gradient()).ravel()
    return out, dx, pg, gi


def _torch(fn, x, gi, *params):
    """torch forward/backward of ``fn(x, *params)``: (out, dx, [param grads])."""
    tx = torch.tensor(x, requires_grad=True)
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    y = fn(tx, *tp)
    y.backward(torch.tensor(gi))
    return y.detach().numpy(), tx.grad.numpy(), [p.grad.numpy() for p in tp]


def _close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=what)


def _params(net):
    return np.array(net.layer_details().get_layer_params()).ravel()


# ----------------------------------------------------------------------------------------
# activations

ACTS = [
    ("relu", lambda: relu[input_tensor](), F.relu),
    ("sig", lambda: sig[input_tensor](), torch.sigmoid),
    ("htan", lambda: htan[input_tensor](), torch.tanh),
    ("gelu", lambda: gelu[input_tensor](), F.gelu),
    ("silu", lambda: silu[input_tensor](), F.silu),
    ("mish", lambda: mish[input_tensor](), F.mish),
    ("elu 0.5", lambda: elu[0.5, input_tensor](), lambda t: F.elu(t, 0.5)),
    ("leaky_relu 0.25", lambda: leaky_relu[0.25, input_tensor](), lambda t: F.leaky_relu(t, 0.25)),
    ("clipped_relu 2", lambda: clipped_relu[2.0, input_tensor](), lambda t: F.hardtanh(t, 0.0, 2.0)),
    ("smelu 1.5", lambda: smelu[1.5, input_tensor](),
     lambda t: torch.where(t >= 1.5, t, torch.where(t <= -1.5, 0 * t, (t + 1.5) ** 2 / 6.0))),
    ("softmax", lambda: softmax[input_tensor](), lambda t: torch.softmax(t, 1)),
    ("softmaxm", lambda: softmaxm[input_tensor](), lambda t: torch.softmax(t, 3)),
    ("softmax_all", lambda: softmax_all[input_tensor](),
     lambda t: torch.softmax(t.reshape(t.shape[0], -1), 1).reshape(t.shape)),
    ("l2normalize", lambda: l2normalize[input_tensor](),
     lambda t: t / torch.sqrt((t ** 2).sum(dim=(1, 2, 3), keepdim=True) + 1e-5)),
]


@pytest.mark.parametrize("name, make, ref", ACTS, ids=[a[0] for a in ACTS])
def test_activation_forward_and_gradient(name, make, ref):
    # |x| < 8: mish's derivative is clamped beyond (dlib's code)
    x = np.random.default_rng(1).uniform(-6, 6, (2, 3, 4, 5))
    x[np.abs(x) < 1e-3] = 0.5          # keep away from relu/leaky kinks
    out, dx, _, gi = _run(make(), x)
    tout, tdx, _ = _torch(ref, x, gi)
    _close(out, tout, name + " forward")
    _close(dx, tdx, name + " input gradient")


def test_prelu_forward_and_gradients():
    x = np.random.default_rng(2).standard_normal((3, 2, 3, 4))
    net = prelu[input_tensor]()
    net.layer_details().__init__(0.3)
    out, dx, pg, gi = _run(net, x)
    p = _params(net)
    tout, tdx, (tp,) = _torch(lambda t, a: F.prelu(t, a), x, gi, p)
    _close(out, tout, "prelu forward")
    _close(dx, tdx, "prelu input gradient")
    _close(pg, tp, "prelu parameter gradient")


# ----------------------------------------------------------------------------------------
# pooling with padding (forward and gradient; dlib clips windows to the image)

POOLS = [(3, 3, 2, 2, 1, 1), (2, 4, 1, 2, 1, 2), (3, 3, 1, 1, 1, 1), (5, 5, 3, 3, 2, 2),
         (7, 9, 1, 1, 0, 0)]     # the last: a window covering the whole 7x9 input (large-window path)


@pytest.mark.parametrize("cfg", POOLS)
def test_max_pool_forward_and_gradient(cfg):
    wh, ww, sy, sx, py, px = cfg
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 9))
    out, dx, _, gi = _run(max_pool[wh, ww, sy, sx, py, px, input_tensor](), x)
    tout, tdx, _ = _torch(lambda t: F.max_pool2d(t, (wh, ww), (sy, sx), (py, px)), x, gi)
    _close(out, tout, "max_pool forward")
    _close(dx, tdx, "max_pool gradient")


@pytest.mark.parametrize("cfg", POOLS)
def test_avg_pool_forward_and_gradient(cfg):
    wh, ww, sy, sx, py, px = cfg
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 9))
    out, dx, _, gi = _run(avg_pool[wh, ww, sy, sx, py, px, input_tensor](), x)
    tout, tdx, _ = _torch(lambda t: F.avg_pool2d(t, (wh, ww), (sy, sx), (py, px),
                                                 count_include_pad=False), x, gi)
    _close(out, tout, "avg_pool forward")
    _close(dx, tdx, "avg_pool gradient")


# ----------------------------------------------------------------------------------------
# bilinear resampling (align corners)

@pytest.mark.parametrize("make, size", [
    (lambda: upsample[2, input_tensor](), (10, 12)),
    (lambda: upsample[3, input_tensor](), (15, 18)),
    (lambda: resize_to[7, 4, input_tensor](), (7, 4)),     # down in x, up in y
    (lambda: resize_to[3, 3, input_tensor](), (3, 3)),
])
def test_bilinear_resize_forward_and_gradient(make, size):
    x = np.random.default_rng(5).standard_normal((2, 3, 5, 6))
    out, dx, _, gi = _run(make(), x)
    tout, tdx, _ = _torch(lambda t: F.interpolate(t, size=size, mode="bilinear",
                                                  align_corners=True), x, gi)
    _close(out, tout, "bilinear forward")
    _close(dx, tdx, "bilinear gradient")


# ----------------------------------------------------------------------------------------
# batch normalisation

@pytest.mark.parametrize("conv", [True, False], ids=["bn_con", "bn_fc"])
def test_batch_norm_training_inference_and_gradients(conv):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 3, 2, 4)) * 2 + 1
    net = (bn_con if conv else bn_fc)[input_tensor]()
    net.to_tensor([x])
    net([x])                                   # setup; then random gamma/beta
    bn = net.layer_details()
    p = bn.get_layer_params()
    p.assign(rng.standard_normal(p.size()).reshape(p.shape))
    bn.num_updates = 0
    out, dx, pg, gi = _run(net, x)
    half = p.size() // 2
    gamma, beta = _params(net)[:half], _params(net)[half:]

    def ref(t, g, b):
        tt = t if conv else t.reshape(t.shape[0], -1)
        y = F.batch_norm(tt, None, None, g, b, training=True, eps=1e-4)
        return y.reshape(t.shape)

    tout, tdx, (tg, tb) = _torch(ref, x, gi, gamma, beta)
    _close(out, tout, "bn training forward")
    _close(dx, tdx, "bn input gradient")
    _close(pg, np.concatenate([tg, tb]), "bn gamma/beta gradient")
    # running statistics after one update (decay 1): batch mean, unbiased variance
    flat = torch.tensor(x if conv else x.reshape(x.shape[0], -1))
    rm = torch.zeros(half, dtype=torch.float64)
    rv = torch.ones(half, dtype=torch.float64)
    F.batch_norm(flat, rm, rv, training=True, momentum=1.0, eps=1e-4)
    _close(np.array(bn.running_means).ravel(), rm.numpy(), "running means")
    _close(np.array(bn.running_variances).ravel(), rv.numpy(), "running variances")
    # one sample: inference with the running statistics
    x1 = rng.standard_normal((1,) + x.shape[1:])
    t1 = torch.tensor(x1 if conv else x1.reshape(1, -1))
    want = F.batch_norm(t1, rm, rv, torch.tensor(gamma), torch.tensor(beta), training=False,
                        eps=1e-4).reshape(x1.shape)
    _close(np.array(net([x1])), want.numpy(), "bn inference")


# ----------------------------------------------------------------------------------------
# layer / RMS normalisation: dlib's statistics are per sample over k*nr*nc with gamma/beta
# per channel, i.e. torch's layer_norm / rms_norm over (k, nr, nc) with the per-channel
# parameters broadcast over (nr, nc)

@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_layer_and_rms_norm_forward_and_gradients(rms):
    x = np.random.default_rng(22).standard_normal((3, 4, 2, 5)) * 1.5 + 0.3
    net = (rms_norm if rms else layer_norm)[input_tensor]()
    _randomize_params(net, x, 23)
    out, dx, pg, gi = _run(net, x)
    p = _params(net)
    shape = x.shape[1:]
    if rms:
        ref = lambda t, g: F.rms_norm(t, shape, g[:, None, None].expand(shape), eps=1e-5)
        tout, tdx, (tg,) = _torch(ref, x, gi, p)
        want_pg = tg
    else:
        ref = lambda t, g, b: F.layer_norm(t, shape, g[:, None, None].expand(shape),
                                           b[:, None, None].expand(shape), eps=1e-5)
        tout, tdx, (tg, tb) = _torch(ref, x, gi, p[:4], p[4:])
        want_pg = np.concatenate([tg, tb])
    _close(out, tout, "forward")
    _close(dx, tdx, "input gradient")
    _close(pg, want_pg, "gamma/beta gradient")


# ----------------------------------------------------------------------------------------
# convolutions and fully connected layers

def _randomize_params(net, x, seed):
    net([x])
    p = net.layer_details().get_layer_params()
    p.assign(np.random.default_rng(seed).standard_normal(p.size()).reshape(p.shape))


@pytest.mark.parametrize("cfg", [(4, 3, 3, 1, 1, 1, 1), (4, 4, 4, 2, 2, 0, 0), (3, 5, 3, 2, 3, 2, 1),
                                 (2, 3, 2, 3, 2, 1, 0)])
def test_con_forward_and_gradients(cfg):
    k, r, s, sy, sx, py, px = cfg
    x = np.random.default_rng(7).standard_normal((2, 3, 9, 10))
    net = con[k, r, s, sy, sx, py, px, input_tensor]()
    _randomize_params(net, x, 8)
    out, dx, pg, gi = _run(net, x)
    p = _params(net)
    w, b = p[:k * 3 * r * s].reshape(k, 3, r, s), p[k * 3 * r * s:]
    tout, tdx, (tw, tb) = _torch(lambda t, w_, b_: F.conv2d(t, w_, b_, (sy, sx), (py, px)),
                                 x, gi, w, b)
    _close(out, tout, "con forward")
    _close(dx, tdx, "con input gradient")
    _close(pg, np.concatenate([tw.ravel(), tb]), "con parameter gradient")


@pytest.mark.parametrize("cfg", [(4, 3, 3, 1, 1, 1, 1), (3, 4, 4, 2, 2, 0, 0), (2, 5, 3, 2, 3, 2, 1),
                                 (2, 2, 2, 3, 3, 0, 0), (3, 3, 5, 2, 1, 1, 2)])
def test_cont_forward_and_gradients(cfg):
    k, r, s, sy, sx, py, px = cfg
    x = np.random.default_rng(9).standard_normal((2, 3, 5, 6))
    net = cont[k, r, s, sy, sx, py, px, input_tensor]()
    _randomize_params(net, x, 10)
    out, dx, pg, gi = _run(net, x)
    p = _params(net)
    w, b = p[:3 * k * r * s].reshape(3, k, r, s), p[3 * k * r * s:]
    tout, tdx, (tw, tb) = _torch(
        lambda t, w_, b_: F.conv_transpose2d(t, w_, b_, (sy, sx), (py, px)), x, gi, w, b)
    _close(out, tout, "cont forward")
    _close(dx, tdx, "cont input gradient")
    _close(pg, np.concatenate([tw.ravel(), tb]), "cont parameter gradient")


@pytest.mark.parametrize("bias", [True, False])
def test_fc_forward_and_gradients(bias):
    x = np.random.default_rng(11).standard_normal((4, 2, 3, 2))
    net = (fc if bias else fc_no_bias)[5, input_tensor]()
    _randomize_params(net, x, 12)
    out, dx, pg, gi = _run(net, x)
    p = _params(net).reshape(-1, 5)         # (num_inputs [+1], num_outputs): W then bias row
    w = p[:12]
    if bias:
        ref = lambda t, w_, b_: (t.reshape(4, -1) @ w_ + b_).reshape(4, 5, 1, 1)
        tout, tdx, (tw, tb) = _torch(ref, x, gi, w, p[12])
        want_pg = np.concatenate([tw.ravel(), tb])
    else:
        tout, tdx, (tw,) = _torch(lambda t, w_: (t.reshape(4, -1) @ w_).reshape(4, 5, 1, 1), x, gi, w)
        want_pg = tw.ravel()
    _close(out, tout, "fc forward")
    _close(dx, tdx, "fc input gradient")
    _close(pg, want_pg, "fc parameter gradient")


def test_linear_forward_and_gradients():
    x = np.random.default_rng(13).standard_normal((2, 3, 4, 6))
    net = linear[5, input_tensor]()
    _randomize_params(net, x, 14)
    out, dx, pg, gi = _run(net, x)
    p = _params(net).reshape(-1, 5)
    tout, tdx, (tw, tb) = _torch(lambda t, w_, b_: t @ w_ + b_, x, gi, p[:6], p[6])
    _close(out, tout, "linear forward")
    _close(dx, tdx, "linear input gradient")
    _close(pg, np.concatenate([tw.ravel(), tb]), "linear parameter gradient")


def test_embeddings_forward_matches_torch_embedding():
    rng = np.random.default_rng(15)
    tokens = rng.integers(0, 10, (2, 3, 4, 1)).astype(np.float64)
    net = embeddings[10, 6, input_tensor]()
    out = np.array(net([tokens]))
    table = np.array(net.layer_details().get_embeddings()).reshape(10, 6)
    want = F.embedding(torch.tensor(tokens[..., 0]).long(), torch.tensor(table)).numpy()
    _close(out, want, "embeddings forward")


# ----------------------------------------------------------------------------------------
# losses: value and the gradient dlib writes (its scale conventions noted per case)

def _loss(net, x, labels):
    loss = net.compute_parameter_gradients([x[i:i + 1] for i in range(len(x))], labels)
    return loss, np.array(net.get_final_data_gradient())


def _torch_loss(fn, x):
    tx = torch.tensor(x, requires_grad=True)
    v = fn(tx)
    v.backward()
    return v.item(), tx.grad.numpy()


def test_binary_hinge_loss():
    rng = np.random.default_rng(16)
    x = rng.standard_normal((8, 1, 1, 1)) * 2
    y = rng.choice([-1.0, 1.0], 8)
    loss, g = _loss(loss_binary_hinge[input_tensor](), x, list(y))
    tl, tg = _torch_loss(lambda t: F.relu(1 - torch.tensor(y) * t.reshape(-1)).mean(), x)
    assert loss == pytest.approx(tl, rel=1e-12)
    _close(g, tg, "hinge gradient")


def test_binary_log_loss_with_weights():
    rng = np.random.default_rng(17)
    x = rng.standard_normal((8, 1, 1, 1)) * 3
    y = rng.choice([-1.0, 1.0], 8) * rng.uniform(0.5, 2, 8)   # sign = class, magnitude = weight
    loss, g = _loss(loss_binary_log[input_tensor](), x, list(y))
    ref = lambda t: F.binary_cross_entropy_with_logits(
        t.reshape(-1), torch.tensor((y > 0).astype(np.float64)), weight=torch.tensor(np.abs(y)))
    tl, tg = _torch_loss(ref, x)
    assert loss == pytest.approx(tl, rel=1e-12)
    _close(g, tg, "binary log gradient")


def test_multibinary_log_loss():
    rng = np.random.default_rng(18)
    x = rng.standard_normal((4, 3, 1, 1)) * 3
    y = rng.choice([-1.0, 1.0], (4, 3))
    loss, g = _loss(loss_multibinary_log[input_tensor](), x, [row for row in y])
    ref = lambda t: F.binary_cross_entropy_with_logits(
        t.reshape(4, 3), torch.tensor((y > 0).astype(np.float64)), reduction="sum") / 4
    tl, tg = _torch_loss(ref, x)
    assert loss == pytest.approx(tl, rel=1e-12)
    _close(g, tg, "multibinary log gradient")


def test_multiclass_log_loss():
    rng = np.random.default_rng(19)
    x = rng.standard_normal((6, 5, 1, 1)) * 2
    y = rng.integers(0, 5, 6)
    loss, g = _loss(loss_multiclass_log[input_tensor](), x, [int(v) for v in y])
    tl, tg = _torch_loss(lambda t: F.cross_entropy(t.reshape(6, 5), torch.tensor(y)), x)
    assert loss == pytest.approx(tl, rel=1e-9)       # safe_log's 1e-10 is far below this
    _close(g, tg, "multiclass log gradient")


def test_multiclass_log_per_pixel_loss_with_ignored_pixels():
    rng = np.random.default_rng(20)
    x = rng.standard_normal((2, 4, 3, 5)) * 2
    y = rng.integers(0, 4, (2, 3, 5))
    y[0, 1, 2] = y[1, 0, 0] = 65535
    net = loss_multiclass_log_per_pixel[input_tensor]()
    loss, g = _loss(net, x, [y[0].astype(np.uint16), y[1].astype(np.uint16)])
    ty = torch.tensor(y.astype(np.int64))
    # ignored pixels still count in dlib's 1/(N*nr*nc)
    ref = lambda t: F.cross_entropy(t, ty, ignore_index=65535, reduction="sum") / y.size
    tl, tg = _torch_loss(ref, x)
    assert loss == pytest.approx(tl, rel=1e-9)
    _close(g, tg, "multiclass per-pixel gradient")


def test_mean_squared_loss_writes_half_the_gradient():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((5, 1, 1, 1))
    y = rng.standard_normal(5)
    loss, g = _loss(loss_mean_squared[input_tensor](), x, list(y))
    tl, tg = _torch_loss(lambda t: F.mse_loss(t.reshape(-1), torch.tensor(y)), x)
    assert loss == pytest.approx(tl, rel=1e-12)
    _close(g, tg / 2, "mean squared gradient")


def test_erf_within_one_ulp_of_libm():
    import math

    from dnnpy.tensor_tools.cpu.activations import erf

    rng = np.random.default_rng(24)
    x = np.concatenate([rng.uniform(-7, 7, 20000), rng.standard_normal(2000) * 1e-4,
                        [0.0, -0.0, 0.84375, 1.25, 1 / 0.35, 6.0, -6.0, 5.999999, 1e-300, 40.0, -np.inf]])
    ref = np.array([math.erf(v) for v in x])
    got = erf(x)
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref)))
    assert np.signbit(erf(np.array([-0.0]))[0]) and np.isnan(erf(np.array([np.nan]))[0])
    np.testing.assert_allclose(erf(torch.linspace(-5, 5, 101, dtype=torch.float64).numpy()),
                               torch.erf(torch.linspace(-5, 5, 101, dtype=torch.float64)).numpy(),
                               rtol=0, atol=2.3e-16)
