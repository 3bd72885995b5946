"""Input layers (dlib input.h): converted values against float64 hand computations, printed
forms, bracket types that parse back, errors naming the layer, and use inside nets."""

import numpy as np
import pytest

from dnnpy import (fc, input, input_array, input_array2d, input_rgb_image, input_rgb_image_pair,
                   input_rgb_image_sized, input_tensor, net_type_from_string, relu)
from dnnpy.tensor import default_dtype, resizable_tensor
from dnnpy import loss_mean_squared_multioutput

AVG = (122.782, 117.001, 104.298)


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def rgb(rng, n, nr=3, nc=4):
    return [rng.integers(0, 256, (nr, nc, 3), dtype=np.uint8) for _ in range(n)]


def convert(layer, batch, dtype=np.float32):
    with default_dtype(dtype):
        data = resizable_tensor()
        layer.to_tensor(batch, data)
        return np.array(data.host_read())


def rgb_reference(img, avgs):
    """(pixel - avg)/256 per channel, planar, from the float32 averages (float64 math)."""
    nr, nc, _ = img.shape
    out = np.zeros((3, nr, nc))
    for ch in range(3):
        for r in range(nr):
            for c in range(nc):
                out[ch, r, c] = (float(img[r, c, ch]) - float(np.float32(avgs[ch]))) / 256.0
    return out


# ----------------------------------------------------------------------------------------
# the RGB family

def test_input_rgb_image_values_float32_and_float64(rng):
    imgs = rgb(rng, 2)
    got32 = convert(input_rgb_image(), imgs)
    got64 = convert(input_rgb_image(10, 20.5, 30), imgs, np.float64)
    assert got32.dtype == np.float32 and got64.dtype == np.float64
    for i in range(2):
        np.testing.assert_allclose(got32[i], rgb_reference(imgs[i], AVG), rtol=0, atol=1e-7)
        np.testing.assert_array_equal(got64[i], rgb_reference(imgs[i], (10, 20.5, 30)))


def test_rgb_inputs_convert_into_each_other():
    pair = input_rgb_image_pair(1, 2, 3)
    plain = input_rgb_image(pair)
    sized = input_rgb_image_sized[4](plain)
    assert (plain.get_avg_red(), plain.get_avg_green(), plain.get_avg_blue()) == (1, 2, 3)
    assert (sized.avg_red, sized.avg_green, sized.avg_blue) == (1, 2, 3)
    assert input_rgb_image_pair(sized).get_avg_blue() == 3 and sized.get_avg_green() == 2
    with pytest.raises(TypeError, match="input_rgb_image: avg_red"):
        input_rgb_image("red")


def test_input_rgb_image_sized_types(rng):
    t = input_rgb_image_sized[3, 4]
    assert t is input_rgb_image_sized[3, 4]
    assert input_rgb_image_sized[5] is input_rgb_image_sized[5, 5]
    assert (t.NR, t.NC) == (3, 4)
    assert t.type_expr() == "input_rgb_image_sized[3, 4]"
    imgs = rgb(rng, 3, 3, 4)
    np.testing.assert_array_equal(convert(t(), imgs), convert(input_rgb_image(), imgs))
    for bad, err in [(0, ValueError), (-2, ValueError), (2.5, TypeError), (True, TypeError)]:
        with pytest.raises(err, match="input_rgb_image_sized"):
            input_rgb_image_sized[bad]
    with pytest.raises(ValueError, match="input_rgb_image_sized.*NC"):
        input_rgb_image_sized[3, 0]


def test_input_rgb_image_sized_rejects_other_sizes(rng):
    layer = input_rgb_image_sized[3, 4]()
    with pytest.raises(ValueError, match=r"input_rgb_image_sized\[3, 4\].*3 rows and 4 columns.*"
                                         r"input 1 has 4 rows and 3 columns"):
        convert(layer, [rgb(rng, 1, 3, 4)[0], rgb(rng, 1, 4, 3)[0]])
    with pytest.raises(ValueError, match=r"input_rgb_image_sized.*uint8"):
        convert(layer, [np.zeros((3, 4, 3), np.float32)])


def test_input_rgb_image_pair_puts_all_firsts_before_all_seconds(rng):
    firsts, seconds = rgb(rng, 3), rgb(rng, 3)
    got = convert(input_rgb_image_pair(), list(zip(firsts, seconds)))
    assert got.shape == (6, 3, 3, 4)
    for i in range(3):
        np.testing.assert_allclose(got[i], rgb_reference(firsts[i], AVG), atol=1e-7)
        np.testing.assert_allclose(got[3 + i], rgb_reference(seconds[i], AVG), atol=1e-7)


def test_input_rgb_image_pair_errors(rng):
    layer = input_rgb_image_pair()
    a, b = rgb(rng, 1)[0], rgb(rng, 1, 5, 4)[0]
    with pytest.raises(ValueError, match=r"input_rgb_image_pair.*\(3, 4, 3\).*\(5, 4, 3\)"):
        convert(layer, [(a, a), (a, b)])
    with pytest.raises(ValueError, match="input_rgb_image_pair.*pair.*input 0"):
        convert(layer, [a])
    with pytest.raises(ValueError, match="input_rgb_image_pair.*empty"):
        convert(layer, [])


RGB_PRINTED = [
    (input_rgb_image(), "input_rgb_image(122.782,117.001,104.298)",
     "<input_rgb_image r='122.781998' g='117.000999' b='104.297997'/>\n"),
    (input_rgb_image(1, 2.5, 3), "input_rgb_image(1,2.5,3)", "<input_rgb_image r='1' g='2.5' b='3'/>\n"),
    (input_rgb_image_sized[3, 4](), "input_rgb_image_sized(122.782,117.001,104.298) nr=3 nc=4",
     "<input_rgb_image_sized r='122.781998' g='117.000999' b='104.297997' nr='3' nc='4'/>\n"),
    (input_rgb_image_pair(), "input_rgb_image_pair(122.782,117.001,104.298)",
     "<input_rgb_image_pair r='122.781998' g='117.000999' b='104.297997'/>\n"),
    (input[np.uint8](), "input<matrix>", "<input/>\n"),
    (input_array2d[np.uint8](), "input<array2d>", "<input/>\n"),
    (input_array[np.float32, 2](), "input<array<matrix>>", "<input/>\n"),
    (input_tensor(), "input_tensor", "<input_tensor/>\n"),
]


@pytest.mark.parametrize("layer, text, xml", RGB_PRINTED, ids=[t for _, t, _ in RGB_PRINTED])
def test_printed_forms(layer, text, xml):
    assert repr(layer) == text
    assert layer.to_xml() == xml  # numbers at net_to_xml's precision 9


# ----------------------------------------------------------------------------------------
# matrices, arrays of matrices, array2d

def test_input_array_values(rng):
    batch = [tuple(rng.integers(0, 256, (2, 3), dtype=np.uint8) for _ in range(3)) for _ in range(2)]
    got = convert(input_array[np.uint8, 3](), batch)
    assert got.shape == (2, 3, 2, 3)
    for n in range(2):
        for k in range(3):
            for r in range(2):
                for c in range(3):
                    assert got[n, k, r, c] == batch[n][k][r, c] / 256.0
    floats = rng.standard_normal((2, 2, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(convert(input_array[np.float32, 2](), list(floats)), floats)
    np.testing.assert_array_equal(convert(input_array[np.float32, 2](), floats), floats)  # one ndarray
    assert input_array[np.float32, 2] is input_array["float32", 2]


def test_input_array_errors(rng):
    layer = input_array[np.float32, 2]()
    m = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"input_array\[float32, 2\].*hold 2 matrices.*input 1"):
        convert(layer, [(m, m), (m,)])
    with pytest.raises(ValueError, match=r"input_array\[float32, 2\].*input 1 matrix 1 has shape \(3, 3\)"):
        convert(layer, [(m, m), (m, np.zeros((3, 3), np.float32))])
    # integers are cast to float32 (no value changes); floats never become uint8 silently
    np.testing.assert_array_equal(convert(layer, [(m, m.astype(np.uint8) + 7)])[0, 1], 7)
    with pytest.raises(ValueError, match=r"input_array\[uint8, 2\].*got float32.*np.clip"):
        convert(input_array[np.uint8, 2](), [(m, m)])
    with pytest.raises(ValueError, match="input_array.*K"):
        input_array[np.float32, 0]
    with pytest.raises(TypeError, match="input_array.*dtype"):
        input_array[np.complex64, 2]


def test_input_array2d_is_input_matrix_under_another_name(rng):
    imgs = [rng.integers(0, 256, (3, 2), dtype=np.uint8) for _ in range(2)]
    got = convert(input_array2d[np.uint8](), imgs)
    np.testing.assert_array_equal(got, convert(input[np.uint8](), imgs))
    np.testing.assert_array_equal(got[1, 0], imgs[1] / 256.0)
    assert input_array2d[np.uint8].type_expr() == "input_array2d[uint8]"
    with pytest.raises(ValueError, match=r"input_array2d\[uint8\].*expected uint8 data, got float64"):
        convert(input_array2d[np.uint8](), [np.zeros((2, 2), np.float64)])


def test_input_matrix_and_tensor_float64(rng):
    f = [rng.standard_normal((2, 2)) for _ in range(2)]
    got = convert(input[np.float64](), f, np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got[:, 0], np.stack(f))
    t = rng.standard_normal((2, 3, 1, 2))
    np.testing.assert_array_equal(convert(input_tensor(), [t, t[:1]], np.float64), np.concatenate([t, t[:1]]))


def test_image_space_maps_are_identity():
    layer = input_rgb_image()
    data = resizable_tensor(1, 3, 4, 5)
    assert layer.image_contained_point(data, (4, 3)) and not layer.image_contained_point(data, (5, 3))
    assert not layer.image_contained_point(data, (0, -1))
    assert layer.tensor_space_to_image_space(data, (1, 2, 3, 4)) == (1, 2, 3, 4)
    assert layer.image_space_to_tensor_space(data, 2.0, (1, 2, 3, 4)) == (1, 2, 3, 4)


# ----------------------------------------------------------------------------------------
# inside nets

@pytest.mark.parametrize("expr", [
    "fc[2, input_rgb_image_sized[3, 4]]",
    "fc[2, input_rgb_image_pair]",
    "fc[2, input_array[uint8, 3]]",
    "relu[fc[2, input_array2d[float32]]]",
    "fc[2, input[uint8]]",
])
def test_bracket_expressions_parse_back(expr):
    nt = net_type_from_string(expr)
    assert repr(nt) == expr
    assert net_type_from_string(repr(nt)) is nt


def test_nets_on_the_new_inputs(rng):
    net = fc[2, input_rgb_image_sized[3, 4]]()
    assert net(rgb(rng, 2)).shape == (2, 2, 1, 1)
    assert str(net).splitlines()[1] == "layer<1>\tinput_rgb_image_sized(122.782,117.001,104.298) nr=3 nc=4"
    with pytest.raises(ValueError, match=r"input_rgb_image_sized\[3, 4\].*5 rows"):
        net(rgb(rng, 1, 5, 4))

    pairs = fc[2, input_rgb_image_pair]()
    out = np.asarray(pairs(list(zip(rgb(rng, 3), rgb(rng, 3)))))
    assert out.shape == (6, 2, 1, 1) and pairs.sample_expansion_factor() == 2

    arrays = relu[fc[2, input_array[np.uint8, 3]]]()
    batch = [[rng.integers(0, 256, (2, 2), dtype=np.uint8) for _ in range(3)] for _ in range(4)]
    assert np.asarray(arrays(batch)).shape == (4, 2, 1, 1)
    assert str(arrays).splitlines()[-1] == "layer<2>\tinput<array<matrix>>"


# ----------------------------------------------------------------------------------------
# numpy in: safe casts, stacked batches, one unwrapped sample, input_tensor batches

def test_safe_casts_change_no_value(rng):
    ints = rng.integers(0, 256, (3, 4, 5))                          # int64, as np.arange gives
    np.testing.assert_array_equal(convert(input[np.uint8](), ints),
                                  convert(input[np.uint8](), ints.astype(np.uint8)))
    f64 = rng.standard_normal((2, 3, 3))                            # numpy's default float
    np.testing.assert_array_equal(convert(input[np.float32](), f64)[:, 0], f64.astype(np.float32))
    imgs = rng.integers(0, 256, (2, 4, 4, 3))
    np.testing.assert_array_equal(convert(input_rgb_image(), imgs),
                                  convert(input_rgb_image(), imgs.astype(np.uint8)))


@pytest.mark.parametrize("layer, batch, message", [
    (input[np.uint8](), np.full((2, 3, 3), 256), r"int64 values 256..256.*do not fit uint8 \(0..255\)"),
    (input[np.uint8](), [np.arange(9).reshape(3, 3) - 1], r"input 0 holds int64 values -1..7"),
    (input[np.uint8](), np.ones((2, 3, 3)) / 2, r"expected uint8 data, got float64.*np.clip"),
    (input_rgb_image(), np.zeros((2, 4, 4, 3), np.float32), r"expected uint8 data, got float32"),
    (input[np.float32](), np.zeros((2, 3, 3), complex), r"expected float32 data, got complex128"),
])
def test_casts_that_would_change_values_are_refused(layer, batch, message):
    with pytest.raises(ValueError, match=message):
        convert(layer, batch)


def test_list_batches_stack_like_np_stack_and_refuse_mixed_shapes(rng):
    # a list of same-shape, same-dtype arrays takes the stacking fast path; the result must
    # equal the checked path's (here forced by one list item), and items whose rows add up
    # (14 + 42 = 2 * 28, which a bare concatenate would accept) must still be refused
    imgs = [rng.integers(0, 256, (5, 7), dtype=np.uint8) for _ in range(3)]
    fast = convert(input[np.uint8](), imgs)
    np.testing.assert_array_equal(fast[:, 0], np.stack(imgs) / np.float32(256))
    np.testing.assert_array_equal(fast, convert(input[np.uint8](), imgs[:2] + [imgs[2].tolist()]))
    with pytest.raises(ValueError, match=r"of one shape; input 0 has shape \(14, 28\), input 1 has shape \(42, 28\)"):
        convert(input[np.uint8](), [np.zeros((14, 28), np.uint8), np.zeros((42, 28), np.uint8)])


def test_one_unwrapped_sample_says_what_to_pass():
    with pytest.raises(ValueError, match=r"single array of shape \(8, 8\).*8 inputs of shape \(8,\).*list \[x\]"):
        convert(input[np.uint8](), np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"single array of shape \(4, 4, 3\).*list \[x\]"):
        convert(input_rgb_image(), np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(ValueError, match=r"CHW image\? move the channels last"):
        convert(input_rgb_image(), [np.zeros((3, 4, 4), np.uint8)])


def test_input_tensor_takes_a_stacked_batch_and_one_sample_items(rng):
    X = rng.random((3, 4, 2, 2))                                     # float64 (N, k, nr, nc)
    t = resizable_tensor()
    with default_dtype(np.float32):
        input_tensor().to_tensor(X, t)
    assert t.shape == (3, 4, 2, 2)
    np.testing.assert_array_equal(t.host_read(), X.astype(np.float32))
    for items in (list(X), list(X[:, None]), [resizable_tensor(a[None]) for a in X]):
        u = resizable_tensor()
        input_tensor().to_tensor(items, u)
        np.testing.assert_array_equal(u.host_read(), t.host_read())
    net = loss_mean_squared_multioutput[fc[2, input_tensor]]()
    assert len(net(X)) == 3 and net.sample_expansion_factor() == 1
    with pytest.raises(ValueError, match=r"input 1 has \(4, 3, 2\)"):
        input_tensor().to_tensor([X[0], rng.random((4, 3, 2))], resizable_tensor())
    with pytest.raises(ValueError, match=r"input 0 has shape \(4, 2\)"):
        input_tensor().to_tensor([np.zeros((4, 2))], resizable_tensor())


def test_input_rgb_pixel_is_dlibs_input_matrix_of_rgb_pixel(rng):
    """dlib's input<matrix<rgb_pixel>>: channels planar, each divided by 256, no means."""
    from dnnpy import rgb_pixel
    imgs = rng.integers(0, 256, (2, 3, 4, 3), dtype=np.uint8)
    T = input[rgb_pixel]
    assert T is input["rgb_pixel"] and T.type_expr() == "input[rgb_pixel]"
    got = convert(T(), imgs)
    np.testing.assert_array_equal(got, imgs.transpose(0, 3, 1, 2) / np.float32(256))
    nt = fc[2, T]
    assert net_type_from_string(repr(nt)) is nt
    from helpers import ser, s
    assert ser(T()) == s("input<matrix>")          # dlib writes every input<matrix<T>> so
    with pytest.raises(ValueError, match=r"input\[rgb_pixel\].*H x W x 3"):
        convert(T(), [np.zeros((3, 4), np.uint8)])
