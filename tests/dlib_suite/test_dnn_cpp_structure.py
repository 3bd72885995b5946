"""dlib's dnn tests of net structure, tagging, visitors and tensor copies, ported from dlib
20.0.1's ``dlib/test/dnn.cpp`` (``/tmp/dnn2001.cpp``):

* ``test_tagging`` (lines 2618-2640, with the ``rcon``/``rfc`` aliases);
* ``test_visit_functions`` (lines 2644-2749, with the ``block``/``residual``/``residual_down``/
  ``res``/``ares``/``res_down``/``ares_down``/``pres`` aliases);
* ``test_copy_tensor_cpu``, ``test_copy_tensor_add_to_cpu``, ``test_copy_tensor_slice_cpu``,
  ``test_copy_tensor_slice_add_to_cpu`` (lines 2751-2994) on the CPU twin (``force_cpu()``,
  dlib's ``cpu::copy_tensor``), and their ``#ifdef DLIB_USE_CUDA`` twins
  ``test_copy_tensor_gpu``, ``test_copy_tensor_add_to_gpu``, ``test_copy_tensor_slice_gpu``,
  ``test_copy_tensor_slice_add_to_gpu`` (lines 2995-3233), ``@pytest.mark.cuda``: dlib's
  value checks on the CUDA twin's result, which must also equal the CPU twin's;
* ``test_concat`` (lines 3237-3299, with the ``concat_block1..3``/``concat_incept`` aliases);
* ``test_layers_scale_and_scale_prev`` (4860-4910), ``test_resize_to`` (4912-4943),
  ``test_disable_duplicative_biases`` (4945-4984, with ``conp``/``stem``/``dense_layer``),
  ``test_set_learning_rate_multipliers`` (4988-5001), ``test_input_ouput_mappers``
  (5006-5016, dlib's spelling of the name kept), ``test_fuse_layers`` (5104-5130),
  ``test_reorg`` (5134-5150) and ``test_input_tensor`` (5152-5182).

``test_reorg`` is, in dlib, only a ``#ifdef DLIB_USE_CUDA`` comparison of ``cuda::reorg`` with
``cpu::reorg``: here ``tt.reorg`` and ``tt.reorg_gradient`` (the active backend) against a
numpy evaluation of dlib's CPU index formula (``cpu_dlib.cpp``), exactly, as dlib requires
(the ops only move numbers). dlib's second check there compares the forward outputs again
(``out_cuda`` vs ``out_cpu``) where it means the gradients; the gradient is what is checked here.

dlib's ``tensor_rand`` and ``dlib::rand`` fills are ``np.random.default_rng`` with fixed seeds.

Spellings (dlib -> here): ``layer<tag1>(net)`` -> ``layer(net, tag1)``; a ``using`` alias ->
an ``@dnnpy.alias`` function; ``add_layer<con_<...>, SUBNET>`` -> ``add_layer[con_(...), SUBNET]``;
``net_type net2(num_fc_outputs(4))`` -> ``net_type(num_fc_outputs(4))``;
``net_type_fused f(net)`` -> ``net_type_fused(net)``; ``set_learning_rate_multipliers_range<2,4>(net, v)``
-> ``set_learning_rate_multipliers_range(net, 2, 4, v)``; ``to_tensor(begin, end, out)`` ->
``to_tensor(items, out)``; ``point p(32, 32)`` -> the tuple ``(32, 32)``; a visitor taking
``relu_&`` (dlib visits only layers of that type) -> a visitor of every layer that tests
``isinstance``; ``layer<3>(net2).layer_details() = layer<1>(net1).layer_details()`` ->
``layer(net2, 3).set_layer_details(copy.deepcopy(...))`` (Python cannot assign to a call), and
likewise ``l = leaky_relu_(0.001f)`` inside a visitor. dlib's ``&a.get_output() == &b.get_output()``
(the same tensor object) is checked, after a forward pass, as the two read-only views showing
the same memory window: dnnpy hands out a new view object per ``get_output()`` call, so ``is``
cannot say it.

Not ported: ``test_visit_functions``' checks on ``const net_type2&`` (C++ const overloads; the
visits are the same calls here), including "a visitor taking a non-const ``relu_&`` does not
bind on a const net" (a C++ overload-resolution property). dlib's ``memcmp(a, b, t.size())``
in ``test_concat`` compares only the first ``size()`` bytes (a quarter of the floats); here
the whole tensors are compared.
"""

import copy
import warnings

import numpy as np
import pytest

import dnnpy
import dnnpy.tensor_tools as tt
from dnnpy import (add_layer, add_prev1, add_prev2, affine, avg_pool, avg_pool_everything, bn_con,
                   bn_fc, con, con_, concat2, count_parameters, disable_duplicative_biases, fc, flatten,
                   fuse_layers, inception3, input, input_rgb_image, input_tensor,
                   input_tensor_to_output_tensor, itag1, itag2, itag3, layer, layer_norm,
                   leaky_relu, leaky_relu_, loss_binary_log, loss_binary_log_per_pixel,
                   loss_multiclass_log, max_pool, max_pool_, num_fc_outputs,
                   output_tensor_to_input_tensor, prelu, relu, relu_, repeat, reshape_to,
                   resizable_tensor, scale1, scale_prev2, set_all_learning_rate_multipliers,
                   set_learning_rate_multipliers_range, skip1, tag1, tag2, tag4,
                   visit_computational_layers, visit_layer_parameter_gradients,
                   visit_layer_parameters)


def gaussian(rng, *shape):
    t = resizable_tensor(*shape)
    t.assign(rng.standard_normal(shape))
    return t


# ----------------------------------------------------------------------------------------
# test_tagging

@dnnpy.alias
def rcon(n, SUBNET):
    return max_pool[2, 2, 2, 2, relu[bn_con[con[n, 5, 5, 1, 1, SUBNET]]]]


@dnnpy.alias
def rfc(n, SUBNET):
    return relu[bn_fc[fc[n, SUBNET]]]


def test_tagging():
    net_type = loss_multiclass_log[rfc[10, skip1[rfc[84, rfc[120, tag1[rcon[16, rcon[6,
                                   input[np.uint8]]]]]]]]]
    net = net_type()
    net2 = net_type(num_fc_outputs(4))

    assert layer(net, tag1).num_computational_layers == 8
    assert layer(net, skip1).num_computational_layers == 8 + 3 + 3
    assert layer(net, tag1).num_layers == 10
    assert layer(net, skip1).num_layers == 10 + 3 + 3 + 1

    # the views only have memory to compare once a pass has sized the outputs
    images = np.random.default_rng(2617).integers(0, 256, (2, 28, 28), dtype=np.uint8)
    net.subnet().forward(net.to_tensor(images))
    skip_out = layer(net, skip1).get_output()
    tag_out = layer(net, tag1).get_output()
    assert skip_out.is_aliased_with(tag_out) and not skip_out.overlaps_elsewhere(tag_out)
    assert not skip_out.is_aliased_with(layer(net, tag1).subnet().subnet().get_output())

    assert net.subnet().subnet().subnet().layer_details().get_num_outputs() == 10
    assert net2.subnet().subnet().subnet().layer_details().get_num_outputs() == 4


# ----------------------------------------------------------------------------------------
# test_visit_functions

@dnnpy.alias
def block(N, BN, stride, SUBNET):
    return BN[con[N, 3, 3, 1, 1, relu[BN[con[N, 3, 3, stride, stride, SUBNET]]]]]


@dnnpy.alias
def residual(block, N, BN, SUBNET):
    return add_prev1[block(N, BN, 1, tag1[SUBNET])]


@dnnpy.alias
def residual_down(block, N, BN, SUBNET):
    return add_prev2[avg_pool[2, 2, 2, 2, skip1[tag2[block(N, BN, 2, tag1[SUBNET])]]]]


@dnnpy.alias
def res(SUBNET):
    return relu[residual(block, 8, bn_con, SUBNET)]


@dnnpy.alias
def ares(SUBNET):
    return relu[residual(block, 8, affine, SUBNET)]


@dnnpy.alias
def res_down(SUBNET):
    return relu[residual_down(block, 8, bn_con, SUBNET)]


@dnnpy.alias
def ares_down(SUBNET):
    return relu[residual_down(block, 8, affine, SUBNET)]


@dnnpy.alias
def pres(SUBNET):
    return prelu[add_prev1[bn_con[con[8, 3, 3, 1, 1, prelu[bn_con[con[8, 3, 3, 1, 1, tag1[SUBNET]]]]]]]]


def test_visit_functions():
    net_type2 = loss_multiclass_log[fc[10,
        avg_pool_everything[
        pres[res[res[res_down[      # 2 prelu layers here
        tag4[repeat[9, pres,        # 9 groups, each containing 2 prelu layers
        res_down[
        leaky_relu[res[
        input[np.uint8]
        ]]]]]]]]]]]]
    pnet = net_type2()

    assert pnet.num_layers == 132, pnet.num_layers
    assert pnet.num_computational_layers == 110, pnet.num_computational_layers

    hit, count = [False] * pnet.num_computational_layers, [0]

    def mark(i, t):
        hit[i] = True
        count[0] += 1

    for visit in (visit_layer_parameter_gradients, visit_layer_parameters):
        hit[:], count[0] = [False] * pnet.num_computational_layers, 0
        visit(pnet, mark)
        assert all(hit), visit.__name__
        assert count[0] == pnet.num_computational_layers, visit.__name__

    relus = []
    visit_computational_layers(pnet, lambda l: relus.append(l) if isinstance(l, relu_) else None)
    assert len(relus) == 10

    assert layer(pnet, leaky_relu).layer_details().get_alpha() == np.float32(0.01)

    def replace(i, l):
        if isinstance(l, leaky_relu_):
            layer(pnet, i).set_layer_details(leaky_relu_(0.001))

    visit_computational_layers(pnet, replace)
    assert layer(pnet, leaky_relu).layer_details().get_alpha() == np.float32(0.001)

    # count_parameters() depends on visiting too: 0 until a forward pass allocates them
    assert count_parameters(pnet) == 0, count_parameters(pnet)
    inp = np.zeros((40, 40), np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dnnpy.EvaluationWarning)
        pnet(inp)
    assert count_parameters(pnet) == 17606, count_parameters(pnet)


# ----------------------------------------------------------------------------------------
# test_copy_tensor_*: three copies into dest (10, 9, 7, 15), then dlib's per-region checks

def copy_tensor_case(rng, sliced, add_to):
    """dlib's three ``copy_tensor`` calls; returns dest, its old values and the sources."""
    dest = gaussian(rng, 10, 9, 7, 15)
    src1 = gaussian(rng, 10, 3, 7, 15)
    src2 = gaussian(rng, 10, 3, 6, 12) if sliced else gaussian(rng, 10, 3, 7, 15)
    src3 = gaussian(rng, 10, 9, 7, 15)
    old_dest = dest.numpy()
    if sliced:
        tt.copy_tensor(add_to, dest, 0, 0, 0, src1, 0, 0, 0, src1.k(), src1.nr(), src1.nc())
        tt.copy_tensor(add_to, dest, src1.k(), 0, 0, src2, 0, 0, 0, src2.k(), src2.nr(), src2.nc())
        tt.copy_tensor(add_to, dest, src1.k() + src2.k(), 1, 1, src3, 3, 1, 1, 3, src3.nr() - 2, src3.nc() - 2)
    else:
        tt.copy_tensor(add_to, dest, 0, src1, 0, src1.k())
        tt.copy_tensor(add_to, dest, src1.k(), src2, 0, src2.k())
        tt.copy_tensor(add_to, dest, src1.k() + src2.k(), src3, 3, 3)
    return dest, old_dest, src1, src2, src3


def check_copy_tensor(dest, old_dest, src1, src2, src3, sliced, add_to):
    d = dest.numpy()
    s1, s2, s3 = src1.numpy(), src2.numpy(), src3.numpy()
    k1, k2 = src1.k(), src2.k()

    def copied(dest_block, old_block, src_block):
        if add_to:   # dlib adds in float too, then allows 1e-6
            assert np.all(np.abs((src_block + old_block) - dest_block) < 1e-6)
        else:
            np.testing.assert_array_equal(dest_block, src_block)

    copied(d[:, :k1], old_dest[:, :k1], s1)
    part2 = np.s_[:, k1:k1 + k2, :src2.nr(), :src2.nc()] if sliced else np.s_[:, k1:k1 + k2]
    copied(d[part2], old_dest[part2], s2)
    part3 = np.s_[:, k1 + k2:, 1:-1, 1:-1] if sliced else np.s_[:, k1 + k2:]
    copied(d[part3], old_dest[part3], s3[:, 3:6, 1:-1, 1:-1] if sliced else s3[:, 3:6])
    untouched = np.ones(d.shape, bool)
    untouched[:, :k1] = False
    untouched[part2] = False
    untouched[part3] = False
    np.testing.assert_array_equal(d[untouched], old_dest[untouched])
    if not sliced:
        assert not untouched.any()


COPY_CASES = {  # dlib's name -> (sliced, add_to)
    "copy_tensor": (False, False),
    "copy_tensor_add_to": (False, True),
    "copy_tensor_slice": (True, False),
    "copy_tensor_slice_add_to": (True, True),
}


def run_copy_cpu(name, seed):
    sliced, add_to = COPY_CASES[name]
    with dnnpy.force_cpu():
        case = copy_tensor_case(np.random.default_rng(seed), sliced, add_to)
    check_copy_tensor(*case, sliced, add_to)
    return case


def test_copy_tensor_cpu():
    run_copy_cpu("copy_tensor", 2754)


def test_copy_tensor_add_to_cpu():
    run_copy_cpu("copy_tensor_add_to", 2808)


def test_copy_tensor_slice_cpu():
    run_copy_cpu("copy_tensor_slice", 2862)


def test_copy_tensor_slice_add_to_cpu():
    run_copy_cpu("copy_tensor_slice_add_to", 2929)


def run_copy_gpu(name, seed):
    sliced, add_to = COPY_CASES[name]
    dest, *rest = case = copy_tensor_case(np.random.default_rng(seed), sliced, add_to)
    assert dest.is_device_current() and not dest.is_host_current(), "the copies did not run on the CUDA twin"
    check_copy_tensor(*case, sliced, add_to)
    cpu_dest = run_copy_cpu(name, seed)[0]
    np.testing.assert_array_equal(dest.numpy(), cpu_dest.numpy())


@pytest.mark.cuda
def test_copy_tensor_gpu():
    run_copy_gpu("copy_tensor", 2995)


@pytest.mark.cuda
def test_copy_tensor_add_to_gpu():
    run_copy_gpu("copy_tensor_add_to", 3044)


@pytest.mark.cuda
def test_copy_tensor_slice_gpu():
    run_copy_gpu("copy_tensor_slice", 3101)


@pytest.mark.cuda
def test_copy_tensor_slice_add_to_gpu():
    run_copy_gpu("copy_tensor_slice_add_to", 3168)


# ----------------------------------------------------------------------------------------
# test_concat

@dnnpy.alias
def concat_block1(SUBNET):
    return con[5, 1, 1, 1, 1, SUBNET]


@dnnpy.alias
def concat_block2(SUBNET):
    return con[8, 3, 3, 1, 1, SUBNET]


@dnnpy.alias
def concat_block3(SUBNET):
    return max_pool[3, 3, 1, 1, SUBNET]


@dnnpy.alias
def concat_incept(SUBNET):
    return inception3[concat_block1, concat_block2, concat_block3, SUBNET]


def test_concat():
    rng = np.random.default_rng(3242)
    net_type = concat_incept[input[np.float32]]
    data = gaussian(rng, 10, 1, 111, 222)
    net = net_type()

    out = net.forward(data)
    b1o = layer(net, itag1).get_output()
    b2o = layer(net, itag2).get_output()
    b3o = layer(net, itag3).get_output()

    dest = resizable_tensor(10, 14, 111, 222)
    tt.copy_tensor(False, dest, 0, b1o, 0, b1o.k())
    tt.copy_tensor(False, dest, b1o.k(), b2o, 0, b2o.k())
    tt.copy_tensor(False, dest, b1o.k() + b2o.k(), b3o, 0, b3o.k())
    assert dest.size() == out.size()
    np.testing.assert_array_equal(dest.numpy(), out.numpy())

    gr = gaussian(rng, 10, 14, 111, 222)
    params = resizable_tensor()
    net.layer_details().backward(gr, net, params)

    b1g = layer(net, itag1).subnet().get_gradient_input()
    b2g = layer(net, itag2).subnet().get_gradient_input()
    b3g = layer(net, itag3).subnet().get_gradient_input()

    g1 = resizable_tensor(10, 5, 111, 222)
    g2 = resizable_tensor(10, 8, 111, 222)
    g3 = resizable_tensor(10, 1, 111, 222)
    tt.copy_tensor(False, g1, 0, gr, 0, g1.k())
    tt.copy_tensor(False, g2, 0, gr, g1.k(), g2.k())
    tt.copy_tensor(False, g3, 0, gr, g1.k() + g2.k(), g3.k())
    for g, bg in ((g1, b1g), (g2, b2g), (g3, b3g)):
        assert g.size() == bg.size()
        np.testing.assert_array_equal(g.numpy(), bg.numpy())


# ----------------------------------------------------------------------------------------

def test_layers_scale_and_scale_prev():
    net_type1 = scale1[con[3, 1, 1, 1, 1, avg_pool_everything[tag1[input_rgb_image]]]]
    net_type2 = scale_prev2[skip1[tag2[con[3, 1, 1, 1, 1, avg_pool_everything[tag1[input_rgb_image]]]]]]

    rng = np.random.default_rng(4863)
    x = gaussian(rng, 1, 3, 64, 64)
    net1 = net_type1()
    net2 = net_type2()
    net1.forward(x)
    net2.forward(x)

    # make sure both convolutional layers have the same weights
    layer(net2, 3).set_layer_details(copy.deepcopy(layer(net1, 1).layer_details()))
    params1 = layer(net1, 1).layer_details().get_layer_params().numpy()
    params2 = layer(net2, 3).layer_details().get_layer_params().numpy()
    assert params1.size == params2.size
    np.testing.assert_array_equal(params1, params2)
    net2.forward(x)

    # make sure both outputs are the same
    out1 = net1.get_output().numpy()
    out2 = net2.get_output().numpy()
    assert out1.size == out2.size
    np.testing.assert_array_equal(out1, out2)

    # make sure gradients are the same (within some precision)
    epsilon = 1e-4
    gradient = resizable_tensor(rng.standard_normal(out1.shape))
    net1.back_propagate_error(x, gradient)
    grad1 = layer(net1, 1).get_parameter_gradient().numpy()
    net2.back_propagate_error(x, gradient)
    grad2 = layer(net2, 3).get_parameter_gradient().numpy()
    assert grad1.size == grad2.size
    assert np.all(np.abs(grad1 - grad2) < epsilon)


def test_resize_to():
    nr, nc = 8, 12
    n_samples, k, h = 5, 1, 4
    net_type = tag1[reshape_to[k, nr, nc,
                    flatten[h, nr, nc // h, reshape_to[h, nr, nc // h,
                    input[np.float32]]]]]
    net = net_type()

    rng = np.random.default_rng(4920)
    x = [rng.standard_normal((nr, nc)).astype(np.float32) for _ in range(n_samples)]
    input_tensor_ = net.to_tensor(x)
    net.forward(input_tensor_)

    output_tensor = layer(net, tag1).get_output()
    assert output_tensor.num_samples() == input_tensor_.num_samples()
    assert output_tensor.k() == input_tensor_.k()
    assert output_tensor.nr() == input_tensor_.nr()
    assert output_tensor.nc() == input_tensor_.nc()
    assert np.max(np.abs(output_tensor.numpy() - input_tensor_.numpy())) < 1e-5


# ----------------------------------------------------------------------------------------
# test_disable_duplicative_biases

@dnnpy.alias
def conp(num_filters, ks, s, SUBNET):
    return add_layer[con_(num_filters, ks, ks, s, s, ks // 2, ks // 2), SUBNET]


@dnnpy.alias
def stem(INPUT):
    return add_layer[max_pool_(3, 3, 2, 2, 1, 1), relu[bn_con[conp[16, 7, 2, INPUT]]]]


@dnnpy.alias
def dense_layer(num_filters, growth_rate, SUBNET):
    return concat2[tag1, tag2,
                   tag2[conp[growth_rate, 3, 1,
                   relu[bn_con[conp[4 * growth_rate, 1, 1,
                   relu[bn_con[tag1[SUBNET]]]]]]]]]


@dnnpy.alias
def dense_layer_32(SUBNET):
    return dense_layer[32, 8, SUBNET]


def test_disable_duplicative_biases():
    net_type = fc[10, relu[layer_norm[fc[15, relu[bn_fc[fc[20,
               relu[layer_norm[conp[32, 3, 1,
               repeat[2, dense_layer_32,
               stem[input_rgb_image]]]]]]]]]]]]
    net = net_type()
    checked = (0, 3, 6, 9, 12, 15, 21, 24, 31)
    for i in checked:
        assert layer(net, i).layer_details().bias_is_disabled() is False, i
    disable_duplicative_biases(net)
    disabled = {3, 6, 9, 15, 24, 31}
    for i in checked:
        assert layer(net, i).layer_details().bias_is_disabled() is (i in disabled), i


def test_set_learning_rate_multipliers():
    net_type = loss_binary_log[fc[2, relu[bn_con[con[16, 5, 5, 2, 2, input[np.float32]]]]]]
    net = net_type()
    set_all_learning_rate_multipliers(net, 0.5)
    assert layer(net, 1).layer_details().get_learning_rate_multiplier() == 0.5
    assert layer(net, 3).layer_details().get_learning_rate_multiplier() == 0.5
    assert layer(net, 4).layer_details().get_learning_rate_multiplier() == 0.5
    set_learning_rate_multipliers_range(net, 2, 4, 0.1)
    set_learning_rate_multipliers_range(net, 4, 6, 0.01)
    assert layer(net, 1).layer_details().get_learning_rate_multiplier() == 0.5
    assert layer(net, 3).layer_details().get_learning_rate_multiplier() == 0.1
    assert layer(net, 4).layer_details().get_learning_rate_multiplier() == 0.01


@dnnpy.alias
def conblock(SUBNET):
    return relu[bn_con[add_layer[con_(16, 3, 3, 2, 2, 1, 1), SUBNET]]]


def test_input_ouput_mappers():
    net_type = loss_binary_log_per_pixel[con[1, 1, 1, 1, 1, repeat[3, conblock, tag1[input_rgb_image]]]]
    net = net_type()
    p = (32, 32)
    assert input_tensor_to_output_tensor(net, p) == (32 / 8, 32 / 8)
    assert output_tensor_to_input_tensor(net, p) == (32 * 8, 32 * 8)


# ----------------------------------------------------------------------------------------

def test_fuse_layers():
    net_type = fc[10, avg_pool_everything[relu[bn_con[con[16, 3, 3, 1, 1, input_rgb_image]]]]]
    net_type_fused = fc[10, avg_pool_everything[relu[affine[con[16, 3, 3, 1, 1, input_rgb_image]]]]]
    net_bias, net_nobias = net_type(), net_type()
    disable_duplicative_biases(net_nobias)
    image = np.zeros((8, 8, 3), np.uint8)
    x = net_bias.to_tensor([image])
    net_nobias.to_tensor([image], x)
    net_bias.forward(x)
    net_nobias.forward(x)
    net_fused_bias = net_type_fused(net_bias)
    net_fused_nobias = net_type_fused(net_nobias)
    out_bias = net_bias.get_output().numpy()
    out_nobias = net_nobias.get_output().numpy()
    fuse_layers(net_fused_bias)
    fuse_layers(net_fused_nobias)
    net_fused_bias.forward(x)
    net_fused_nobias.forward(x)
    out_bias_fused = net_fused_bias.get_output().numpy()
    out_nobias_fused = net_fused_nobias.get_output().numpy()

    assert np.max(np.square(out_bias - out_bias_fused)) < 1e-10
    assert np.max(np.square(out_nobias - out_nobias_fused)) < 1e-10


# ----------------------------------------------------------------------------------------
# test_reorg

def reorg_reference(src, row_stride, col_stride):
    """dlib's cpu::reorg: dest(n, k, r, c) = src(n, k % K, r*rs + (k/K)/cs, c*cs + (k/K)%cs)."""
    n, sk, snr, snc = src.shape
    dk, dnr, dnc = sk * row_stride * col_stride, snr // row_stride, snc // col_stride
    k, r, c = np.meshgrid(np.arange(dk), np.arange(dnr), np.arange(dnc), indexing="ij")
    return src[:, k % sk, r * row_stride + (k // sk) // col_stride, c * col_stride + (k // sk) % col_stride]


def reorg_gradient_reference(gradient_input, grad_shape, row_stride, col_stride):
    """dlib's cpu::reorg_gradient: grad(n, k % K, r*rs + (k/K)/cs, c*cs + (k/K)%cs) = gi(n, k, r, c)."""
    grad = np.full(grad_shape, np.nan)
    gk = grad_shape[1]
    k, r, c = np.meshgrid(*(np.arange(s) for s in gradient_input.shape[1:]), indexing="ij")
    block = k // gk
    grad[:, k % gk, r * row_stride + block // col_stride, c * col_stride + block % col_stride] = gradient_input
    return grad


def test_reorg():
    rng = np.random.default_rng(5138)
    x = gaussian(rng, 2, 4, 8, 16)
    out = resizable_tensor(2, 16, 4, 8)
    grad = resizable_tensor(*x.shape)
    tt.reorg(False, out, 2, 2, x)
    # a permutation: exact, as dlib requires of cuda vs cpu (max squared difference == 0)
    np.testing.assert_array_equal(out.numpy(), reorg_reference(x.numpy().astype(np.float64), 2, 2))
    tt.reorg_gradient(False, grad, 2, 2, out)
    np.testing.assert_array_equal(grad.numpy(), reorg_gradient_reference(out.numpy().astype(np.float64),
                                                                        grad.shape, 2, 2))
    np.testing.assert_array_equal(grad.numpy(), x.numpy())


def test_input_tensor():
    rng = np.random.default_rng(5156)
    tensors = [resizable_tensor() for _ in range(3)]
    for t in tensors:
        t.set_size(1, 3, 224, 224)
        t.assign(rng.standard_normal(t.shape))

    out = resizable_tensor()
    input_layer = input_tensor()
    input_layer.to_tensor(tensors, out)

    assert out.num_samples() == 3
    assert out.k() == 3
    assert out.nr() == 224
    assert out.nc() == 224
    flat = out.numpy().reshape(-1)
    stride = out.k() * out.nr() * out.nc()
    for i, t in enumerate(tensors):
        np.testing.assert_array_equal(flat[i * stride:(i + 1) * stride], t.numpy().reshape(-1))
