"""dlib_rand (dlib::rand's stream), randomize_samples with a dlib_rand, the colour jitter of
random_color_transform.h and chinese_whispers.

The hard-coded values were printed by tests/dlib_cpp/rand_tools.cpp, a program built from
dlib's own headers (dlib master 3d40bf57, g++ -std=c++14 on x86-64); see its header."""

import copy

import numpy as np
import pytest

from dnnpy.data import chinese_whispers, chinese_whispers_clustering, dlib_rand, randomize_samples
from dnnpy.image import (apply_random_color_offset, color_transform, disturb_colors,
                         random_color_transform)

# seed -> (5 x u32, u64, u16, u8, double, float, 3 x gaussian, 3 x get_integer_in_range(-5,
# 1000000007), get_integer(10), get_double_in_range(-2, 3)), drawn in that order
STREAMS = {
    "": ([725333953, 251387296, 3200466189, 2466988778, 2049276419], 11254692069438399531,
         5955, 61, 0.53734446376784284, 0.496697187,
         [-0.63421352964121225, -0.21398619057871499, -2.1085839454169282],
         [673314474, 478880481, 498561949], 9, 1.4012660549083695),
    "abc": ([2155509415, 946363555, 2146784666, 2833049956, 2618434060], 12088005213487044521,
            29817, 19, 0.77640284562346806, 0.35219866,
            [-0.15583958646130625, 1.1501600939319943, -0.77818518137154635],
            [766817237, 231731405, 258666721], 8, 0.33014386936795237),
    "hello world": ([3537286732, 3007859141, 2442253739, 716993476, 1563629005],
                    9929388407251634845, 3067, 109, 0.99738958408884648, 0.368962169,
                    [1.2377475026704956, 0.41791203738680321, 0.65766421146491783],
                    [454620693, 484606932, 369893452], 8, 1.9498392286164252),
    b"\xe9t\xe9": ([3977939177, 3994481145, 1911308021, 1172147112, 779455677],
                   15031195217457000460, 9604, 229, 0.73854260762667212, 0.516750872,
                   [-0.33658378949099926, -2.220433189997745, 0.17060546770505799],
                   [142023382, 28115498, 271398688], 8, -0.97835900290217737),
}


@pytest.mark.parametrize("seed", list(STREAMS))
def test_dlib_rand_stream_equals_dlibs(seed):
    u32, u64, u16, u8, dbl, flt, gau, ints, int10, rng = STREAMS[seed]
    r = dlib_rand(seed)
    assert r.get_seed() == seed
    assert [r.get_random_32bit_number() for _ in range(5)] == u32
    assert r.get_random_64bit_number() == u64
    assert (r.get_random_16bit_number(), r.get_random_8bit_number()) == (u16, u8)
    assert r.get_random_double() == dbl                      # bit-exact: same double ops
    assert np.float32(r.get_random_float()) == np.float32(flt)   # %.9g: exact for a float32
    assert [r.get_random_gaussian() for _ in range(3)] == gau    # glibc's log and sqrt both
    assert [r.get_integer_in_range(-5, 1000000007) for _ in range(3)] == ints
    assert r.get_integer(10) == int10
    assert r.get_double_in_range(-2, 3) == rng


def test_dlib_rand_seeding_variants_and_clear():
    assert dlib_rand(123).get_random_32bit_number() == 88028330      # rand((time_t)123)
    assert dlib_rand(123).get_random_32bit_number() == dlib_rand("123").get_random_32bit_number()
    r = dlib_rand("abc")
    r.get_random_gaussian()                                          # caches a second value
    r.clear()
    assert r.get_seed() == "" and r.get_random_gaussian() == 1.5649443239775982
    r.set_seed("abc")
    assert r.get_random_32bit_number() == STREAMS["abc"][0][0]
    # MT19937 core: the 10001st output of init_genrand(5489) (numpy's legacy seeding) is ours
    mt = np.random.RandomState(5489)
    assert dlib_rand().get_random_32bit_number() == int(mt.randint(0, 2**32, 10001,
                                                                       dtype=np.uint64)[-1])


def test_vectorised_draws_equal_scalar_calls():
    a, b = dlib_rand("v"), dlib_rand("v")
    assert a.get_random_32bit_numbers(5).tolist() == [b.get_random_32bit_number() for _ in range(5)]
    assert a.get_random_64bit_numbers(3).tolist() == [b.get_random_64bit_number() for _ in range(3)]
    assert a.get_random_doubles(4).tolist() == [b.get_random_double() for _ in range(4)]
    c = copy.deepcopy(a)
    assert c.get_random_32bit_number() == a.get_random_32bit_number()
    assert a.get_random_32bit_numbers(0).shape == (0,)


def test_dlib_rand_bad_input():
    with pytest.raises(TypeError, match="seed"):
        dlib_rand(1.5)
    r = dlib_rand()
    with pytest.raises(ValueError, match="begin .* > end"):
        r.get_integer_in_range(3, 2)
    with pytest.raises(ValueError, match="end must be >= 0"):
        r.get_integer(-1)
    with pytest.raises(ValueError, match="count"):
        r.get_random_32bit_numbers(-1)
    assert r.get_integer_in_range(7, 7) == 7


def test_randomize_samples_with_a_dlib_rand_is_dlibs_order():
    a, b = list(range(10)), list(range(10, 20))
    randomize_samples(a, b, rng=dlib_rand())              # dlib: randomize_samples(a, b)
    assert a == [6, 1, 0, 4, 9, 8, 2, 5, 7, 3] and b == [x + 10 for x in a]
    r = dlib_rand("xyz")
    arr = np.arange(10)
    randomize_samples(arr, rng=r)
    assert arr.tolist() == [1, 8, 3, 9, 7, 2, 4, 6, 5, 0]
    assert r.get_random_32bit_number() == 3021984449       # 9 draws taken, as dlib
    before = copy.deepcopy(r)
    randomize_samples([5], rng=r)                          # no draw for one sample
    assert r.get_random_32bit_number() == before.get_random_32bit_number()


# -- colour jitter ------------------------------------------------------------------------------

def _test_images():
    img = np.zeros((3, 4, 3), np.uint8)
    for y in range(3):
        for x in range(4):
            img[y, x] = (y * 80 + x * 20, 255 - x * 60, (y * x * 37) % 256)
    gray = np.array([[0, 70, 140], [100, 170, 240]], np.uint8)
    return img, gray


def test_colour_jitter_equals_dlibs():
    r = dlib_rand("colors")
    img, gray = _test_images()
    t = disturb_colors(img, r, 0.4, 0.2)
    assert (t.get_gamma(), t.get_red_scale(), t.get_green_scale(), t.get_blue_scale()) == (
        0.99790955492006717, 0.0038995380508951186, 0.0039215686274509803, 0.0037072684047584617)
    assert img.ravel().tolist() == [0, 255, 0, 20, 195, 0, 40, 135, 0, 60, 75, 0, 80, 255, 0, 100,
                                    195, 35, 120, 135, 70, 139, 75, 105, 159, 255, 0, 179, 195, 70,
                                    199, 135, 140, 219, 75, 210]
    disturb_colors(gray, r)
    assert gray.ravel().tolist() == [0, 81, 147, 110, 174, 233]
    apply_random_color_offset(img, r)
    assert img.ravel().tolist() == [0, 246, 0, 13, 186, 0, 33, 126, 0, 53, 66, 0, 73, 246, 0, 93,
                                    186, 26, 113, 126, 61, 132, 66, 96, 152, 246, 0, 172, 186, 61,
                                    192, 126, 131, 212, 66, 201]
    apply_random_color_offset(gray, r)
    assert gray.ravel().tolist() == [3, 84, 150, 113, 177, 236]
    assert r.get_random_32bit_number() == 295534021


def test_colour_tables_and_offsets_equal_dlibs():
    r = dlib_rand("tables")
    t = random_color_transform(r, 1.5, 0.9)
    assert t.get_gamma() == 1.1778254685925851
    weights = np.arange(1, 257, dtype=np.int64)
    assert (t.table.astype(np.int64) @ weights).tolist() == [2898024, 5281072, 1299726]
    offsets = []
    for _ in range(12):
        px = np.full((1, 1, 3), 128, np.uint8)
        apply_random_color_offset(px, r)
        offsets += (px.ravel().astype(int) - 128).tolist()
    assert offsets == [4, 6, 5, -3, 0, -1, 7, 7, 7, 3, 0, 2, 7, 7, 4, 7, 5, 5, -10, -8, -5, -3,
                       -1, 0, -2, 1, 3, -2, -4, -6, 1, 4, 1, 4, 2, -1]


def test_color_transform_properties():
    ident = color_transform()
    assert ident.table.tolist() == [list(range(256))] * 3
    x = np.arange(256, dtype=np.uint8)
    t = color_transform(0.7, 1.0, 0.5, 0.8)
    assert np.all(np.diff(t.table.astype(int), axis=1) >= 0)        # monotone
    ref = np.floor(255 * (x[None] * np.array([[1], [0.5], [0.8]]) / 255) ** 0.7 + 0.5)
    assert np.abs(t.table - ref).max() <= 1          # the closed form, up to pow's last bit
    rgb = np.stack([x, x[::-1], x], axis=-1)
    assert t(rgb).tolist() == [[t.table[0][a], t.table[1][b], t.table[2][c]]
                               for a, b, c in rgb.tolist()]
    img, _ = _test_images()
    before = img.copy()
    r = dlib_rand()
    assert disturb_colors(img, r, 0, 0).table.tolist() == ident.table.tolist()
    assert np.array_equal(img, before) and r.get_random_32bit_number() == STREAMS[""][0][0]


def test_colour_bad_input():
    r = dlib_rand()
    with pytest.raises(TypeError, match=r"uint8 HxW .* float32 with shape \(2, 2\)"):
        disturb_colors(np.zeros((2, 2), np.float32), r)
    with pytest.raises(TypeError, match=r"shape \(2, 2, 4\)"):
        apply_random_color_offset(np.zeros((2, 2, 4), np.uint8), r)
    ro = np.zeros((2, 2), np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        disturb_colors(ro, r)
    with pytest.raises(TypeError, match="dlib_rand"):
        disturb_colors(np.zeros((2, 2), np.uint8), np.random.default_rng())
    with pytest.raises(ValueError, match="red_scale"):
        color_transform(1, 1.5)
    with pytest.raises(ValueError, match="gamma"):
        color_transform(-1)


# -- chinese whispers ---------------------------------------------------------------------------

def _graph():
    return [(j, i, ((i + j) % 4 + 1) * 0.25) for i in range(20) for j in range(i + 1, 20)
            if (i * i + 3 * j) % 7 == 0 or j == i + 1]


def test_chinese_whispers_equals_dlibs():
    n, labels = chinese_whispers(_graph())
    assert n == 4 and labels.tolist() == [0, 1, 1, 2, 2, 3, 3, 0, 0, 3, 3, 2, 2, 0, 0, 2, 2, 2, 2, 2]
    r = dlib_rand("cw")
    n, labels = chinese_whispers(np.array(_graph()), 3, r)
    assert n == 6 and labels.tolist() == [0, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 2, 2, 2, 4, 2, 2, 2, 2, 5]
    assert r.get_random_32bit_number() == 1580579924
    n, labels = chinese_whispers([(0, 1), (1, 2, 3.0), (2, 0), (2, 1)], 5, ordered=True)
    assert n == 1 and labels.tolist() == [0, 0, 0]
    assert chinese_whispers([])[0] == 0
    assert chinese_whispers([(0, 0), (3, 3)])[1].tolist() == [0, 1, 2, 3]   # isolated nodes


def test_chinese_whispers_bad_input():
    with pytest.raises(ValueError, match="edge 1 "):
        chinese_whispers([(0, 1), (2,)])
    with pytest.raises(ValueError, match="integers >= 0"):
        chinese_whispers([(0, -1)])
    with pytest.raises(ValueError, match=r"\(E, 2\) or \(E, 3\)"):
        chinese_whispers(np.zeros((3, 4)))
    with pytest.raises(TypeError, match="dlib_rand"):
        chinese_whispers([(0, 1)], rnd=3)


def test_chinese_whispers_against_dlib_bin():
    dlib = pytest.importorskip("dlib")
    rng = np.random.default_rng(3)
    edges = [(int(i), int(j)) + ((float(w),) if k % 2 else ())
             for k, (i, j, w) in enumerate(zip(rng.integers(0, 40, 90), rng.integers(0, 40, 90),
                                               rng.random(90)))]
    assert chinese_whispers(edges)[1].tolist() == list(dlib.chinese_whispers(edges))
    # 4 noisy groups of 128-D descriptors, as face clustering sees them
    centres = rng.normal(size=(4, 128)) * 0.1
    desc = centres[rng.integers(0, 4, 30)] + rng.normal(size=(30, 128)) * 0.03
    ours = chinese_whispers_clustering(desc, 0.55)
    theirs = list(dlib.chinese_whispers_clustering([dlib.vector(d.tolist()) for d in desc], 0.55))
    assert ours == theirs and len(set(ours)) > 1


@pytest.mark.parametrize("seed", ["", "abc", 7])
def test_vectorised_gaussians_are_the_scalar_stream(seed):
    a, b = dlib_rand(seed), dlib_rand(seed)
    for count in (1, 2, 3, 0, 101, 6400, 5):        # odd counts leave a cached second value
        want = np.array([a.get_random_gaussian() for _ in range(count)])
        assert np.array_equal(b.get_random_gaussians(count), want)
    assert b.get_random_32bit_number() == a.get_random_32bit_number()   # same state after
    assert b.get_random_gaussian() == a.get_random_gaussian()
