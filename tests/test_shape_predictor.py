"""dnnpy.shape_predictor: dlib's landmark predictor read, run and written.

Synthetic predictors are written here with ``serialization.primitives.Writer`` (dlib's encoding
one value at a time, an independent path from the vectorised reader and writer) and compared
with dlib-bin's ``shape_predictor`` on random images and boxes (skipped without dlib-bin);
dlib's released 5- and 68-point models run on dlib's photos when ``face_recognition_models``
and the photos are there. Landmarks are integers, so "equal" is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import dnnpy
import dnnpy.models
from dnnpy import SerializationError, shape_predictor
from dnnpy import jit
from dnnpy.serialization import packed
from dnnpy.serialization.primitives import Writer
from helpers import face_photos, needs_compiled_kernels


def _synthetic(parts=5, levels=3, trees=20, depth=3, features=30, seed=0):
    """dlib's bytes of a random, valid shape predictor."""
    rng = np.random.default_rng(seed)
    w = Writer()
    w.int(1)
    initial = rng.uniform(0.2, 0.8, 2 * parts).astype(np.float32)
    w.int(-len(initial)), w.int(-1)
    for v in initial:
        w.float32(v)
    nsplit, nleaf = 2 ** depth - 1, 2 ** depth
    w.uint(levels)
    for _ in range(levels):
        w.uint(trees)
        for _ in range(trees):
            w.uint(nsplit)
            for _ in range(nsplit):
                w.uint(int(rng.integers(features))), w.uint(int(rng.integers(features)))
                w.float32(rng.normal(0, 20))
            w.uint(nleaf)
            for _ in range(nleaf):
                w.int(-2 * parts), w.int(-1)
                for v in rng.normal(0, 0.01, 2 * parts).astype(np.float32):
                    w.float32(v)
    w.uint(levels)
    for _ in range(levels):
        w.uint(features)
        for a in rng.integers(parts, size=features):
            w.uint(int(a))
    w.uint(levels)
    for _ in range(levels):
        w.uint(features)
        for v in rng.normal(0, 0.1, 2 * features).astype(np.float32):
            w.float32(v)
    return w.bytes()


def _random_boxes(rng, h, w, k):
    out = []
    for _ in range(k):
        x0, y0 = int(rng.integers(-w // 4, w)), int(rng.integers(-h // 4, h))
        out.append(dnnpy.rectangle(x0, y0, x0 + int(rng.integers(5, w)), y0 + int(rng.integers(5, h))))
    return out


def test_numpy_reduces_an_outer_axis_row_after_row():
    """The predictor adds the leaves of a level with ``np.add.reduce(x, axis=0)``: dlib's
    float32 order (shape + leaf 0, then + leaf 1, ...) only while numpy reduces an outer axis
    one row after the other, without pairwise summation."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((501, 3, 136)) * rng.choice([1e-4, 1.0, 1e4], (501, 3, 136))).astype(np.float32)
    seq = x[0].copy()
    for row in x[1:]:
        seq = seq + row
    assert np.array_equal(np.add.reduce(x, axis=0), seq)


def test_packed_codec_equals_dlibs_encoding(kernels):
    rng = np.random.default_rng(2)
    values = np.concatenate([[0, 1, -1, 255, 256, -(2 ** 62), 2 ** 63 - 1],
                             rng.integers(-2 ** 40, 2 ** 40, 50_000)]).astype(np.int64)
    w = Writer()
    for v in values:
        w.int(int(v))
    data = np.frombuffer(w.bytes(), np.uint8)
    assert packed.encode_ints(values) == w.bytes()
    stream = packed.decode_stream(data, "test")           # several segments of the lockstep walk
    assert np.array_equal(stream.values, values)
    starts = np.cumsum(np.concatenate([[0], [len(packed.encode_ints(v[None])) for v in values[:-1]]]))
    assert np.array_equal(stream.starts(), starts)
    assert [stream.start(i) for i in (0, 5, len(values) - 1)] == [starts[0], starts[5], starts[-1]]
    with pytest.raises(SerializationError, match="does not fit in 32 bits"):
        packed.decode_stream(data, "test", dtype=np.int32)
    floats = rng.standard_normal(5000).astype(np.float32)
    floats[:6] = [0.0, -0.0, np.inf, -np.inf, 1e-40, 3.0e38]
    w = Writer()
    for f in floats:
        w.float32(f)
    m, e = packed.from_floats(floats)
    pairs = np.stack([m, e], axis=1).ravel()
    assert packed.encode_ints(pairs) == w.bytes()
    assert np.array_equal(packed.to_floats(m, e), floats)
    # partial: a record followed by other bytes gives the starts up to where they stop
    tail = np.concatenate([data, np.frombuffer(b"\x70" * 100, np.uint8)])
    assert np.array_equal(packed.decode_stream(tail, "test", partial=True).values[:len(values)], values)
    with pytest.raises(SerializationError, match="byte offset"):
        packed.decode_stream(data[:-1], "test")
    # 10 MB in which chains never meet (01 01 01 ...: two interleaved chains): refused fast
    import time
    start = time.monotonic()
    with pytest.raises(SerializationError, match="line up|byte offset"):
        packed.decode_stream(np.full(10_000_001, 1, np.uint8), "hostile")
    assert time.monotonic() - start < 2


def test_synthetic_predictor_reads_runs_and_writes_dlibs_bytes(tmp_path, kernels):
    data = _synthetic()
    path = tmp_path / "sp.dat"
    path.write_bytes(data)
    sp = shape_predictor(path)
    assert sp.num_parts() == 5 and sp.num_features() == 3 * 20 * 8
    assert sp.to_bytes() == data
    # what the predictor keeps is its own: no view into the decoded stream (133 MB kept
    # alive by the 68-point model's anchors, before)
    def root(a):
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a
    assert all(root(a).nbytes == a.nbytes for lv in sp.levels for a in (lv.anchor, lv.deltas, lv.leaves))
    sp.save(tmp_path / "again.dat")
    assert (tmp_path / "again.dat").read_bytes() == data
    dnnpy.serialize(sp, tmp_path / "via_serialize.dat")            # dlib's bytes, as dlib's serialize
    assert (tmp_path / "via_serialize.dat").read_bytes() == data
    back = dnnpy.deserialize(tmp_path / "via_serialize.dat", shape_predictor())
    assert back.to_bytes() == data and shape_predictor(data).to_bytes() == data   # bytes in too
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    boxes = _random_boxes(rng, 40, 50, 12)
    one = [sp(img, b) for b in boxes]
    assert [d.parts for d in sp.batch(img, boxes)] == [d.parts for d in one]
    grey = img[:, :, 0].copy()
    both = sp.batch([img, grey], [boxes[:3], boxes[3:5]])
    assert [d.parts for d in both[0]] == [d.parts for d in one[:3]]
    assert [d.parts for d in both[1]] == [sp(grey, b).parts for b in boxes[3:5]]
    assert sp.batch(img, []) == []
    assert one[0].rect == boxes[0] and one[0].num_parts() == 5


def test_synthetic_predictor_equals_dlib(tmp_path, kernels):
    dlib = pytest.importorskip("dlib", reason="dlib-bin is the oracle")
    rng = np.random.default_rng(4)
    # depths 2 to 5: trees of up to 15 splits find their leaf by a table, deeper ones walk
    for seed in range(4):    # parts compare as tuples of ints with dlib's points
        path = tmp_path / f"sp{seed}.dat"
        path.write_bytes(_synthetic(parts=3 + seed, seed=seed, depth=2 + seed))
        ours, theirs = shape_predictor(path), dlib.shape_predictor(str(path))
        for img in (rng.integers(0, 256, (37, 53, 3), dtype=np.uint8),
                    rng.integers(0, 256, (41, 29), dtype=np.uint8)):
            boxes = _random_boxes(rng, *img.shape[:2], 20)
            got = ours.batch(img, boxes)
            for box, shape in zip(boxes, got):
                want = theirs(img, dlib.rectangle(box.left(), box.top(), box.right(), box.bottom()))
                assert shape.parts == [(float(p.x), float(p.y)) for p in want.parts()]


def test_bad_files_and_images_say_what_is_wrong(tmp_path, kernels):
    data = _synthetic()
    p = tmp_path / "cut.dat"
    for cut in (3, len(data) // 2, len(data) - 1):
        p.write_bytes(data[:cut])
        with pytest.raises(SerializationError, match=r"cut\.dat.*(byte offset|truncated)"):
            shape_predictor(p)
    net = dnnpy.loss_mean_squared[dnnpy.fc[1, dnnpy.input[np.float32]]]()
    dnnpy.serialize(net, tmp_path / "net.dnnpy")
    with pytest.raises(SerializationError, match="not a shape predictor: use dnnpy.load"):
        shape_predictor(tmp_path / "net.dnnpy")
    dnnpy.serialize(net, tmp_path / "net.dat")
    with pytest.raises(SerializationError, match=r"net\.dat: not a shape predictor: it holds 'loss_mean_squared_'"):
        shape_predictor(tmp_path / "net.dat")
    dnnpy.image.save_png(np.zeros((2, 2), np.uint8), tmp_path / "a.png")
    with pytest.raises(SerializationError, match="PNG image"):
        shape_predictor(tmp_path / "a.png")
    (tmp_path / "sp.dat").write_bytes(data)
    sp = shape_predictor(tmp_path / "sp.dat")
    box = dnnpy.rectangle(0, 0, 9, 9)
    with pytest.raises(TypeError, match="uint8"):
        sp(np.zeros((10, 10), np.float32), box)
    with pytest.raises(ValueError, match=r"img\[:, :, :3\]"):
        sp(np.zeros((10, 10, 4), np.uint8), box)
    assert sp(np.zeros((10, 10, 3), np.uint8)[:, ::-1], box).num_parts() == 5   # any strides
    assert sp(np.zeros((0, 5), np.uint8), box).num_parts() == 5      # empty: every read is 0


def test_compiled_cascade_equals_numpys(tmp_path):
    """The compiled cascade (dnnpy/kernels/landmarks.py) and the numpy one give the same
    landmarks: every image layout (grey, RGB, strided, flipped), boxes in, across and outside
    the image, a batch over several images split across threads, trees deep and shallow."""

    needs_compiled_kernels()
    rng = np.random.default_rng(7)
    for seed, depth in ((0, 1), (1, 4), (2, 6), (3, 0)):
        sp = shape_predictor(_synthetic(parts=4 + seed, seed=seed, depth=depth, levels=4))
        rgb = rng.integers(0, 256, (60, 70, 3), dtype=np.uint8)
        images = [rgb, rgb[:, :, 1].copy(), rgb[::2, ::-1], rgb[:, :, 2]]
        boxes = [_random_boxes(rng, *im.shape[:2], 11) for im in images]
        boxes[0] += [dnnpy.rectangle(-200, -200, -150, -150), dnnpy.rectangle(500, 10, 900, 80)]
        got = sp.batch(images, boxes)
        with jit.force_numpy():
            want = sp.batch(images, boxes)
        assert [[d.parts for d in ds] for ds in got] == [[d.parts for d in ds] for ds in want]
        assert sp(images[2], boxes[2][0]).parts == want[2][0].parts


@pytest.mark.parametrize("name", ["shape_predictor_5_face_landmarks.dat",
                                  "shape_predictor_68_face_landmarks.dat"])
def test_dlibs_face_models_equal_dlib_on_dlibs_photos(name, kernels):
    dlib = pytest.importorskip("dlib", reason="dlib-bin is the oracle")
    try:
        path = dnnpy.models.dlib_model_path(name)
    except FileNotFoundError as e:
        pytest.skip(f"model missing: {e}")
    ours, theirs = shape_predictor(path), dlib.shape_predictor(path)
    hog = dlib.get_frontal_face_detector()
    boxes = 0
    for photo in face_photos():
        img = dlib.load_rgb_image(photo)
        dets = list(hog(img, 1))
        got = ours.batch(img, [dnnpy.rectangle(d.left(), d.top(), d.right(), d.bottom()) for d in dets])
        want = dlib.full_object_detections()
        for d, shape in zip(dets, got):
            want.append(theirs(img, d))
            assert shape.parts() == [(p.x, p.y) for p in want[-1].parts()], photo
            assert shape.part(2).x == want[-1].part(2).x and shape.num_parts == want[-1].num_parts
            boxes += 1
        # the aligned chips (what the face recognition net takes) equal dlib's
        chips = dnnpy.image.get_face_chips(img, got, 150, 0.25)
        if dets:
            for a, b in zip(chips, dlib.get_face_chips(img, want, 150, 0.25)):
                assert np.array_equal(a, np.asarray(b)), photo
    assert boxes >= 10
    if "5_face" in name:           # the 9 MB model: written back byte for byte
        with open(path, "rb") as f:
            assert ours.to_bytes() == f.read()


def test_a_stream_ending_in_a_long_integer_reads(kernels):
    """The last 512-byte segment of the numpy decoder's walk lies inside the last integer,
    whose magnitude bytes there read as control bytes (0x05, 0x01): it holds no start, and
    the valid 1026-byte stream reads."""
    values = np.array([257] + [112] * 509 + [0x01050000], np.int64)     # (0x70: no control byte)
    data = np.frombuffer(packed.encode_ints(values), np.uint8)
    assert len(data) == 1026 and data[1024] == 0x05 and data[1025] == 0x01
    stream = packed.decode_stream(data, "t")
    assert np.array_equal(stream.values, values) and stream.start(510) == 1021


def test_runs_of_small_integers_read(kernels):
    """Integers 1 to 8 encode as ``01 0k``, whose bytes are all control bytes: a run of them
    holds two chains of starts that never meet, which the numpy decoder's segments resolve
    by walking the run integer by integer."""
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.integers(-10**6, 10**6, 3000), np.full(20000, 3),
                             rng.integers(-10**6, 10**6, 3000), np.tile([1, 8, 2], 3000), [5]])
    data = np.frombuffer(packed.encode_ints(values), np.uint8)
    stream = packed.decode_stream(data, "t")
    assert np.array_equal(stream.values, values)
    lengths = np.array([len(packed.encode_ints(v[None])) for v in values])
    assert np.array_equal(stream.starts(), np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    with pytest.raises(SerializationError, match=r"byte offset 4\d+, found the byte 0x70"):
        damaged = data.copy()
        damaged[len(data) // 2] = 0x70
        packed.decode_stream(damaged, "t")


def test_compiled_decoder_equals_numpys():
    """The compiled packed-integer decoder (dnnpy/kernels/packed.py) against the numpy one:
    the same values and byte offsets on valid streams of every integer size, int64 and
    int32; on damaged streams both refuse (SerializationError), or both read the same
    values; ``partial`` streams give the same values up to where they stop."""
    needs_compiled_kernels()
    rng = np.random.default_rng(9)
    for trial in range(40):
        scale = 2.0 ** rng.integers(1, 62)
        values = (rng.standard_normal(int(rng.integers(1, 3000))) * scale).astype(np.int64)
        data = np.frombuffer(packed.encode_ints(values), np.uint8).copy()
        dtype = np.int32 if trial % 3 == 0 else np.int64

        def both(d, **kw):
            out = []
            for force in (False, True):
                try:
                    if force:
                        with jit.force_numpy():
                            s = packed.decode_stream(d, "t", dtype=dtype, **kw)
                    else:
                        s = packed.decode_stream(d, "t", dtype=dtype, **kw)
                    out.append((s.values.tolist(), s.starts().tolist()))
                except SerializationError as e:
                    out.append(type(e))
            return out

        a, b = both(data)
        assert a == b
        damaged = data.copy()
        damaged[rng.integers(len(damaged), size=3)] = rng.integers(0, 256, 3)
        a, b = both(damaged)
        assert a == b or (a is SerializationError and b is SerializationError)
        cut = int(rng.integers(len(data)))
        tail = np.concatenate([data[:cut], np.full(20, 0x70, np.uint8)])
        a, b = both(tail, partial=True)
        assert a == b
        a, b = both(data[:cut], partial=True)          # cut inside an integer: not read
        assert a == b


def test_compiled_floats_equal_numpys():
    """dlib's (mantissa, exponent) pairs to float32 by the compiled loop and by numpy: the
    same bits, for 24-bit mantissas (dlib's), wider ones (rounded once from float64),
    subnormals, overflow, infinities and NaN, on 1-, 2- and 3-D and strided arrays."""
    needs_compiled_kernels()
    rng = np.random.default_rng(12)
    floats = np.concatenate([rng.standard_normal(20000).astype(np.float32),
                             np.array([0, -0.0, np.inf, -np.inf, 1e-45, 1e-40, 3.4e38], np.float32)])
    cases = [packed.from_floats(floats),
             (rng.integers(-2 ** 62, 2 ** 62, (30, 40)), rng.integers(-500, 500, (30, 40))),
             (rng.integers(-2 ** 23, 2 ** 23, (4, 5, 12)).astype(np.int32)[:, :, ::2],
              rng.integers(-160, 130, (4, 5, 12)).astype(np.int32)[:, :, 1::2])]
    cases[1][1][0, :3] = [32000, 32001, 32005]
    for m, e in cases:
        got = packed.to_floats(m, e)
        with jit.force_numpy():
            want = packed.to_floats(m, e)
        assert got.shape == want.shape and np.array_equal(got.view(np.int32), want.view(np.int32))
    assert np.array_equal(packed.to_floats(*cases[0]), floats)


def test_mutated_files_end_in_a_serialization_error_or_a_predictor(kernels):
    """Flipped, inserted and deleted bytes and truncations of a predictor file: each either
    reads (and runs) or raises SerializationError, quickly; nothing else escapes."""
    import time
    data = _synthetic()
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    for _ in range(150):
        d = bytearray(data)
        kind, at = int(rng.integers(4)), int(rng.integers(len(d)))
        if kind == 0:
            d[at] = int(rng.integers(256))
        elif kind == 1:
            d = d[:at]
        elif kind == 2:
            d[at:at] = bytes(rng.integers(0, 256, 5).astype(np.uint8))
        else:
            del d[at:at + 5]
        start = time.monotonic()
        try:
            shape_predictor(bytes(d))(img, dnnpy.rectangle(2, 2, 30, 25))
        except SerializationError:
            pass
        assert time.monotonic() - start < 1
