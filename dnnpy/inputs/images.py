"""More of dlib's image input layers (input.h):

* ``input_rgb_image_sized[NR]`` / ``input_rgb_image_sized[NR, NC]``: ``input_rgb_image``
  that only accepts ``NR x NC`` images (dlib's ``input_rgb_image_sized<NR,NC=NR>``);
* ``input_rgb_image_pair``: a batch of ``(first, second)`` RGB image pairs -> ``(2N, 3, nr, nc)``,
  all firsts then all seconds (sample_expansion_factor 2, for loss_barlow_twins);
* ``input_array[dtype, K]``: dlib's ``input<std::array<matrix<T>,K>>``, a batch of K-tuples of
  equally sized 2-D arrays -> ``(N, K, nr, nc)``;
* ``input_array2d[dtype]``: dlib's ``input<array2d<T>>``, the same conversion as
  ``input[dtype]`` (``input<matrix<T>>``) under its own name.

The bracketed ones return a cached input layer CLASS (like ``input[np.uint8]``), usable as a
SUBNET; its ``type_expr()`` (``input_rgb_image_sized[4, 6]``, ``input_array[uint8, 3]``) is
parsed back by ``dnnpy.net_type_from_string``. uint8 data is divided by 256, other dtypes are
copied, always in the data tensor's dtype.
"""

from __future__ import annotations

import numbers

import numpy as np

from .base import (_input_matrix, _input_template, image_space_identity, input_layer,
                   rgb_averages, rgb_images_to_tensor, safe_cast)

__all__ = ["input_rgb_image_sized", "input_rgb_image_pair", "input_array", "input_array2d"]


def _positive_int(owner, what, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}[...]: {what} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{owner}[...]: {what} must be >= 1 (dlib: the input image can't be empty), "
                         f"got {value}")
    return int(value)


def _dtype_arg(owner, dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{owner}[...] takes a numpy dtype such as np.float32, got {dtype!r}") from None
    if dt.type not in _input_template._SUPPORTED:
        raise TypeError(f"{owner}[...]: unsupported dtype {dt.name}")
    return dt


class _bracket_input:
    """``name[args]`` -> a cached input layer class (found by the parser through
    ``is_input_template`` and ``name``)."""

    is_input_template = True

    def __init__(self, name, normalize, make):
        self.name = name
        self._normalize, self._make, self._cache = normalize, make, {}

    def __getitem__(self, args):
        key = self._normalize(*(args if isinstance(args, tuple) else (args,)))
        cls = self._cache.get(key)
        if cls is None:
            cls = self._cache[key] = self._make(*key)
        return cls

    def __repr__(self):
        return self.name


# ----------------------------------------------------------------------------------------
# input_rgb_image_sized

class _input_rgb_image_sized(rgb_averages, image_space_identity, input_layer):
    """``input_rgb_image`` restricted to ``NR x NC`` images (class attributes set by
    ``input_rgb_image_sized[NR, NC]``). Constructor: three channel means (dlib's defaults) or
    another RGB input layer to copy them from."""

    NR = NC = None
    sample_ndim = 3

    def _looks_like_one(self, a):
        return a.shape[-1] == 3

    @classmethod
    def type_expr(cls) -> str:
        return f"input_rgb_image_sized[{cls.NR}, {cls.NC}]"

    def to_tensor(self, batch, data):
        items = self._batch(batch)
        for i, item in enumerate(items):
            shape = np.shape(item)
            if len(shape) < 2 or shape[:2] != (self.NR, self.NC):
                got = f"{shape[0]} rows and {shape[1]} columns" if len(shape) >= 2 else f"shape {shape}"
                raise ValueError(
                    f"{self.type_expr()}.to_tensor: all input images must have {self.NR} rows and "
                    f"{self.NC} columns, but input {i} has {got}")
        rgb_images_to_tensor(self, items, data, (self.avg_red, self.avg_green, self.avg_blue))

    def serialize(self, w):
        w.string("input_rgb_image_sized")
        self._write_avgs(w)
        w.uint(self.NR)
        w.uint(self.NC)

    def deserialize(self, r):
        # dlib's reader takes only its own record, and the sizes must be the type's
        r.expect_string("input_rgb_image_sized")
        red = r.float32("avg_red")
        green = r.float32("avg_green")
        blue = r.float32("avg_blue")
        start = r.pos
        nr = r.uint("input_rgb_image_sized's nr")
        nc = r.uint("input_rgb_image_sized's nc")
        if (nr, nc) != (self.NR, self.NC):
            raise r.error(f"input_rgb_image_sized: the file has images of nr={nr} rows and nc={nc} "
                          f"columns but the net type has nr={self.NR} and nc={self.NC}", start)
        self.avg_red, self.avg_green, self.avg_blue = red, green, blue

    def __repr__(self):
        return f"input_rgb_image_sized{self._avgs_str()} nr={self.NR} nc={self.NC}"

    def to_xml(self):
        return f"<input_rgb_image_sized {self._avgs_xml()} nr='{self.NR}' nc='{self.NC}'/>\n"

    def onnx_tensor_shape(self):
        """The tensor shape ``dnnpy.onnx.export`` uses when none is given."""
        return (3, self.NR, self.NC)

    def to_onnx(self, g, shape, batch):
        """As ``input_rgb_image``: uint8 ``(N, NR, NC, 3)`` images, preprocessed in the graph."""
        if shape[1:] != (3, self.NR, self.NC):
            g.refuse(f"the images are {self.NR}x{self.NC} RGB, so the tensor is (3, {self.NR}, {self.NC}), "
                     f"not input_shape {shape[1:]}")
        return g.image_input(np.uint8, shape, batch, "nhwc", (self.avg_red, self.avg_green, self.avg_blue))


def _sized_args(nr, nc=None):
    nr = _positive_int("input_rgb_image_sized", "NR", nr)
    nc = nr if nc is None else _positive_int("input_rgb_image_sized", "NC", nc)
    return nr, nc


def _make_sized(nr, nc):
    return type(f"input_rgb_image_sized_{nr}x{nc}", (_input_rgb_image_sized,),
                {"NR": nr, "NC": nc, "__module__": __name__})


input_rgb_image_sized = _bracket_input("input_rgb_image_sized", _sized_args, _make_sized)
"""``input_rgb_image_sized[NR]`` (NC = NR) or ``input_rgb_image_sized[NR, NC]``."""


# ----------------------------------------------------------------------------------------
# input_rgb_image_pair

class input_rgb_image_pair(rgb_averages, image_space_identity, input_layer):
    """Batch of ``(first, second)`` pairs of ``H x W x 3`` uint8 images (all of one size) ->
    ``(2N, 3, H, W)``: the N first images, then the N second images, each
    ``(channel - avg) / 256``. The net's sample_expansion_factor becomes 2."""

    converts_from = (rgb_averages,)   # as input_rgb_image's

    def is_one_input(self, obj) -> bool:
        """One ``(first, second)`` pair: a tuple/list of two H x W x 3 arrays, or one
        ``(2, H, W, 3)`` array."""
        if isinstance(obj, np.ndarray):
            return obj.ndim == 4 and obj.shape[0] == 2 and obj.shape[-1] == 3
        return (isinstance(obj, (tuple, list)) and len(obj) == 2
                and all(isinstance(a, np.ndarray) and a.ndim == 3 for a in obj))

    def to_tensor(self, batch, data):
        items = self._batch(batch)
        firsts, seconds = [], []
        for i, item in enumerate(items):
            if isinstance(item, np.ndarray) and item.ndim == 4 and item.shape[0] == 2:
                item = (item[0], item[1])
            if not isinstance(item, (tuple, list, np.ndarray)) or len(item) != 2:
                raise ValueError(f"{self!r}.to_tensor: every input must be a (first, second) pair "
                                 f"of images; input {i} is {type(item).__name__}")
            firsts.append(np.asarray(item[0]))
            seconds.append(np.asarray(item[1]))
            if firsts[-1].shape != firsts[0].shape or seconds[-1].shape != firsts[0].shape:
                raise ValueError(
                    f"{self!r}.to_tensor: all images must have one size; the first image of input 0 "
                    f"has shape {firsts[0].shape}, input {i} has shapes {firsts[-1].shape} (first) "
                    f"and {seconds[-1].shape} (second)")
        rgb_images_to_tensor(self, firsts + seconds, data,
                             (self.avg_red, self.avg_green, self.avg_blue))

    def serialize(self, w):
        w.string("input_rgb_image_pair")
        self._write_avgs(w)

    def deserialize(self, r):
        self._read_rgb_record(r, "input_rgb_image_pair")

    def __repr__(self):
        return f"input_rgb_image_pair{self._avgs_str()}"

    def to_xml(self):
        return f"<input_rgb_image_pair {self._avgs_xml()}/>\n"

    def to_onnx(self, g, shape, batch):
        """Refused: the net's batch is 2N tensors for N pairs (all firsts, then all seconds),
        so a graph taking the pairs would have outputs whose batch is not its inputs'; export
        with ``input_mode="tensor"`` and feed ``net.to_tensor(pairs)``."""
        g.refuse("a pair input makes 2N samples from N pairs (all firsts, then all seconds), so the "
                 "graph's outputs would not have its inputs' batch size: export with input_mode='tensor' "
                 "and feed the (2N, 3, H, W) tensor net.to_tensor(pairs) makes")


# ----------------------------------------------------------------------------------------
# input_array[dtype, K]: dlib's input<std::array<matrix<T>,K>>

class _input_array(image_space_identity, input_layer):
    """Batch of K-tuples of 2-D ``dtype`` arrays, all of one size -> ``(N, K, nr, nc)``
    (``data[n, k] = item_n[k]``); uint8 values are divided by 256, others copied."""

    dtype = None
    K = None
    _ser_version = "input<array<matrix>>"
    sample_ndim = 3      # one (K, nr, nc) array

    def _looks_like_one(self, a):
        return a.shape[0] == self.K

    @classmethod
    def type_expr(cls) -> str:
        return f"input_array[{np.dtype(cls.dtype).name}, {cls.K}]"

    def to_tensor(self, batch, data):
        items = self._batch(batch)
        dt = np.dtype(self.dtype)
        first = None
        for i, item in enumerate(items):
            if not hasattr(item, "__len__") or len(item) != self.K:
                raise ValueError(f"{self.type_expr()}.to_tensor: every input must hold {self.K} "
                                 f"matrices; input {i} is {item!r:.60}")
            for k, m in enumerate(item):
                m = np.asarray(m)
                if first is None:
                    first = m.shape
                if m.ndim != 2 or m.shape != first:
                    raise ValueError(
                        f"{self.type_expr()}.to_tensor: all matrices in a batch must be 2-D {dt.name} "
                        f"arrays of one size; input 0 matrix 0 has shape {first}, input {i} matrix "
                        f"{k} has shape {m.shape}")
        stacked = np.asarray(items) if isinstance(items, np.ndarray) else np.stack(
            [np.stack([np.asarray(m) for m in item]) for item in items])
        stacked = safe_cast(self, stacked, dt, "the batch")
        data.set_size(stacked.shape[0], self.K, *first)
        out = data.host_write_only()
        if dt == np.uint8:
            np.divide(stacked, out.dtype.type(256), out=out, dtype=out.dtype)
        else:
            out[...] = stacked

    def __repr__(self):
        return "input<array<matrix>>"

    def to_xml(self):
        return "<input/>\n"

    def to_onnx(self, g, shape, batch):
        """Graph input: ``(N, K, H, W)`` of the layer's dtype; ``Cast``, ``Div`` 256 for uint8."""
        if shape[1] != self.K:
            g.refuse(f"the input holds K={self.K} matrices, but input_shape has k={shape[1]}")
        return g.image_input(self.dtype, shape, batch)


def _array_args(dtype, k):
    return _dtype_arg("input_array", dtype), _positive_int("input_array", "K", k)


def _make_array(dt, k):
    return type(f"input_array_{dt.name}_{k}", (_input_array,),
                {"dtype": dt.type, "K": k, "__module__": __name__})


input_array = _bracket_input("input_array", _array_args, _make_array)
"""``input_array[dtype, K]``: dlib's ``input<std::array<matrix<T>,K>>``."""


# ----------------------------------------------------------------------------------------
# input_array2d[dtype]: dlib's input<array2d<T>>

class _input_array2d(_input_matrix):
    """dlib's ``input<array2d<T>>``: the same conversion as ``input<matrix<T>>``."""

    _ser_version = "input<array2d>"

    @classmethod
    def type_expr(cls) -> str:
        return f"input_array2d[{np.dtype(cls.dtype).name}]"

    def __repr__(self):
        return "input<array2d>"


def _array2d_args(dtype):
    return (_dtype_arg("input_array2d", dtype),)


def _make_array2d(dt):
    return type(f"input_array2d_{dt.name}", (_input_array2d,), {"dtype": dt.type, "__module__": __name__})


input_array2d = _bracket_input("input_array2d", _array2d_args, _make_array2d)
"""``input_array2d[dtype]``: dlib's ``input<array2d<T>>``."""
