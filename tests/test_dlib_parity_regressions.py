"""Cheap regression tests (no compiler) for the differences from compiled dlib that the
opt-in parity suite (tests/dlib_cpp, ``pytest -m dlib_cpp``) found; each names dlib's code
that it follows. The suite itself checks them against dlib's own binaries."""

import numpy as np
import pytest

import dnnpy
from dnnpy import (CONV_MODE, affine, bn_con, con, embeddings, fc, htan, input, input_rgb_image,
                   layer, loss_mean_squared_multioutput, loss_mmod, loss_mmod_, mmod_options, relu,
                   repeat, tag1, tag2)
from dnnpy.loss.mmod_options import detector_window_details
from dnnpy.serialization import Reader, Writer, read_net, to_bytes, write_net

F32 = np.float32


def _matrices(n, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(F32) for _ in range(n)]


def _targets(n, k):
    return [np.linspace(-1, 1, k, dtype=F32).reshape(k, 1)] * n


def test_tag_on_the_input_keeps_its_gradient_after_backward():
    """(a) dlib's add_tag_layer on the input layer (core.h) does nothing in
    back_propagate_error: its gradient input stays readable afterwards and its
    gradient_input_is_stale flag (written to files) stays false."""
    net = loss_mean_squared_multioutput[fc[2, dnnpy.add_prev1[con[1, 3, 3, 1, 1, tag1[input[F32]]]]]]()
    x = _matrices(2, (4, 4))
    net.compute_parameter_gradients(x, _targets(2, 2))
    final = np.array(net.get_final_data_gradient().host_read())
    assert final.shape == (2, 1, 4, 4) and np.abs(final).max() > 0
    got = layer(net, tag1).get_gradient_input()
    np.testing.assert_array_equal(np.asarray(got.host_read()), final)
    np.testing.assert_array_equal(np.asarray(net.get_final_data_gradient().host_read()), final)
    # the tag record ends with: cached_output, grad_final, bool stale ('0'), sef
    data = to_bytes(net, "dlib", clean=False)
    w = Writer()
    w.tensor(net.get_final_data_gradient())
    w.bool(False)
    w.uint(1)
    assert w.bytes() in data


def test_tag_at_the_bottom_of_a_repeated_block():
    """(a) and dlib's repeat: the block's tag on repeat's input keeps only a pointer to its
    input, so its record's cached_output stays empty (unless read from a file)."""
    block = lambda s: relu[dnnpy.add_prev2[con[2, 3, 3, 1, 1, tag2[s]]]]
    nt = loss_mean_squared_multioutput[fc[2, repeat[2, block, con[2, 3, 3, 1, 1, input[F32]]]]]
    net = nt()
    net.compute_parameter_gradients(_matrices(2, (4, 4)), _targets(2, 2))
    data = to_bytes(net, "dlib", clean=False)
    empty = bytes.fromhex("01 02 01 00 01 00 01 00 01 00")
    w = Writer()
    w.int(2)  # add_tag_layer on repeat's input: version 2, then (no input layer) cached_output
    assert w.bytes() + empty in data
    back = nt()
    read_net(Reader(data), back)
    assert to_bytes(back, "dlib", clean=False) == data


def test_repeat_copies_record_the_sample_expansion_factor():
    """(c) dlib's repeat::to_tensor runs each copy's to_tensor, which sets its bottom
    layer's sample_expansion_factor (1 here, not 0)."""
    nt = loss_mean_squared_multioutput[fc[2, repeat[2, lambda s: htan[con[2, 3, 3, 1, 1, s]],
                                                   input_rgb_image]]]
    net = nt()
    imgs = [np.zeros((4, 4, 3), np.uint8)] * 2
    net.to_tensor(imgs)
    rep = net.subnet().subnet()
    for i in range(rep.num_repetitions()):
        assert rep.get_repeated_layer(i).sample_expansion_factor() == 1
    net(imgs)
    # each copy's bottom add_layer record ends with its sef: unsigned 1
    data = to_bytes(net, "dlib", clean=False)
    ours = dnnpy.serialization.from_bytes(data, nt())
    assert to_bytes(ours, "dlib", clean=False) == data


def test_embeddings_on_the_input_give_a_zero_data_gradient():
    """(d) dlib's bottom add_layer zeroes grad_final (shaped as the input) at the start of
    back-propagation; embeddings_ sends it nothing, so it stays zeros of the input's shape."""
    net = loss_mean_squared_multioutput[fc[2, embeddings[5, 3, input[F32]]]]()
    tokens = [np.array([[0], [3], [4]], F32), np.array([[1], [1], [2]], F32)]
    net.compute_parameter_gradients(tokens, _targets(2, 2))
    g = net.get_final_data_gradient()
    assert g.shape == (2, 1, 3, 1)
    assert not np.asarray(g.host_read()).any()


def test_affine_read_from_a_bn_record_writes_affine_2():
    """(b) dlib's affine_ deserialize converts a bn_con2/bn_fc2 record and its serialize
    always writes "affine_2"."""
    train = loss_mean_squared_multioutput[fc[2, relu[bn_con[con[2, 3, 3, 1, 1, input[F32]]]]]]()
    x = _matrices(3, (4, 4))
    for _ in range(3):
        train(x)
    data = to_bytes(train, "dlib", clean=False)
    infer = loss_mean_squared_multioutput[fc[2, relu[affine[con[2, 3, 3, 1, 1, input[F32]]]]]]()
    read_net(Reader(data), infer)
    out = to_bytes(infer, "dlib", clean=False)
    w = Writer()
    w.string("affine_2")
    assert w.bytes() in out and b"bn_con2" not in out
    assert layer(infer, 3).layer_details().get_mode() == CONV_MODE


def test_mmod_orders_tied_scores_by_window_row_column():
    """(f) dlib sorts detections with std::sort by score, which leaves ties in an unspecified
    order (its g++ build and dnnpy used to disagree). dnnpy's rule: descending score, ties in
    the output tensor's scan order (detector window, then row, then column)."""
    opts = mmod_options()
    opts.detector_windows = [detector_window_details(3, 3), detector_window_details(3, 3)]
    opts.overlaps_nms = dnnpy.test_box_overlap(1.0, 1.0)  # nothing suppresses anything
    opts.assume_image_pyramid = dnnpy.use_image_pyramid.no
    net = loss_mmod[con[2, 1, 1, 1, 1, input[F32]]](loss_mmod_(opts))
    x = [np.zeros((6, 6), F32)]
    net(x)
    top = net.subnet().layer_details()
    p = top.get_layer_params().host()
    p[:] = 0
    p[-2:] = 1.0  # both windows score exactly 1 everywhere: all ties
    dets = net(x)[0]
    centers = [((d.rect.left() + d.rect.right()) // 2, (d.rect.top() + d.rect.bottom()) // 2) for d in dets]
    assert len(dets) == 2 * 36
    # window 0's 36 positions first, each row by row, then window 1's
    expected = [(c, r) for _ in range(2) for r in range(6) for c in range(6)]
    assert centers == expected
