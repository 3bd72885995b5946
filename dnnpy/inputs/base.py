"""Input layers: convert a batch of Python/numpy objects into a network's input tensor.

Every input layer has ``to_tensor(batch, data)`` that fills the ``resizable_tensor``
``data``, ``__repr__`` in dlib's printed form, and a class-level ``type_expr()`` naming it
inside a bracket expression. Images are written planar: ``data[n, channel, row, col]``.
"""

from __future__ import annotations

import numpy as np

from ..printing import xml_num
from ..tensor import resizable_tensor, tensor

__all__ = ["input", "input_tensor", "input_rgb_image", "rgb_pixel"]  # (safe_cast is shared by the input modules)


class input_layer:
    """Base class of input layers (its subclasses are usable as a template's SUBNET)."""

    @classmethod
    def type_expr(cls) -> str:
        return cls.__name__

    def to_tensor(self, batch, data: resizable_tensor):
        raise NotImplementedError

    # the dimensions of ONE input object given as a numpy array (2: a matrix, 3: an RGB
    # image); None when an array is never a single input object
    sample_ndim = None

    def is_one_input(self, obj) -> bool:
        """Whether ``obj`` is ONE input object (dlib's ``input_type``: one image, one
        matrix) rather than a batch of them, so that ``net(img)`` is dlib's single-sample
        ``net(x)``. Only an unambiguous array counts: one of exactly ``sample_ndim``
        dimensions (a batch is a list, or an array with a leading batch axis)."""
        return (self.sample_ndim is not None and isinstance(obj, np.ndarray)
                and obj.ndim == self.sample_ndim and self._looks_like_one(obj))

    def _looks_like_one(self, a):
        return True

    # dlib's serialize/deserialize. Input layers without fields write only their version
    # string (``_ser_version``); the others override both methods.
    _ser_version = None

    def serialize(self, w) -> None:
        if self._ser_version is None:
            raise NotImplementedError(f"{type(self).__name__} has no dlib serialization")
        w.string(self._ser_version)

    def deserialize(self, r) -> None:
        r.expect_string(self._ser_version)

    def _batch(self, batch):
        items = list(batch) if not isinstance(batch, np.ndarray) else batch
        if len(items) == 0:
            raise ValueError(f"{self!r}.to_tensor: the batch is empty")
        return items


def _name(layer):
    """The layer as a user wrote it in the net type (``input[uint8]``)."""
    expr = getattr(layer, "type_expr", None)
    return expr() if expr is not None else repr(layer)


def safe_cast(layer, a, dtype, where="the input"):
    """``a`` as ``dtype`` when that changes no value's meaning, else a ``ValueError`` naming
    the layer and the fix.

    * to a float dtype: any float or integer array (float64 -> float32 only rounds);
    * to an integer dtype: integer arrays whose values all fit (e.g. int64 pixels in 0..255
      for uint8); float arrays are refused, since a [0, 1] image cast to uint8 would
      silently become 0s and 1s;
    * bool arrays are refused: a mask read as uint8 pixels is 0/1 out of 255, nearly black,
      and which of 0/1, 0/255 or 0.0/1.0 was meant is the caller's to say.
    """
    dt = np.dtype(dtype)
    if a.dtype == dt:
        return a
    kind = a.dtype.kind
    if kind == "b":
        fix = ("mask.astype(np.uint8) * 255 for a black and white image, or mask.astype(np.uint8) "
               "for 0/1 values" if dt == np.uint8 else f"mask.astype(np.{dt.name})")
        raise ValueError(f"{_name(layer)}.to_tensor: got a bool array in {where}; a mask is not "
                         f"{dt.name} data: convert it first ({fix})")
    if dt.kind == "f" and kind in "fiu":
        return a.astype(dt)
    if dt.kind in "iu" and kind in "iu":
        if a.size:
            info = np.iinfo(dt)
            lo, hi = a.min(), a.max()
            if lo < info.min or hi > info.max:
                raise ValueError(f"{_name(layer)}.to_tensor: {where} holds {a.dtype} values {lo}..{hi}, "
                                 f"which do not fit {dt.name} ({info.min}..{info.max})")
        return a.astype(dt)
    fix = ("np.clip(x, 0, 255).astype(np.uint8), or (x * 255).round().astype(np.uint8) for "
           "images in [0, 1]" if dt == np.uint8 else f"x.astype(np.{dt.name})")
    raise ValueError(f"{_name(layer)}.to_tensor: expected {dt.name} data, got {a.dtype} in {where}; "
                     f"convert it first ({fix})")


def _stack_uniform(items, ndim, shape, dtype):
    """The common batch, stacked without a Python check per item: arrays of one shape
    (``ndim`` dimensions) and already of ``dtype``. None when the batch is anything else
    (the caller then checks and casts item by item, naming the item that is wrong)."""
    if len(shape) != ndim or ndim == 0:
        return None
    try:
        kinds = {(a.shape, a.dtype) for a in items}
    except AttributeError:                  # not all arrays
        return None
    if len(kinds) != 1:
        return None
    (got_shape, got_dtype), = kinds
    if got_shape != shape or (dtype is not None and got_dtype != np.dtype(dtype)):
        return None
    # one concatenate along the first axis then a reshape: the same array as np.stack, at
    # half its cost (stack adds an axis to every item first)
    return np.concatenate(items).reshape((len(items),) + shape)


def refuse_one_input(layer, batch, ndim, what):
    """The error for one input object given where a batch is expected (``to_tensor(img)``):
    iterating it would give its rows."""
    if isinstance(batch, np.ndarray) and batch.ndim == ndim:
        raise ValueError(f"{_name(layer)}.to_tensor: got a single array of shape {batch.shape}, "
                         f"which would be read as {len(batch)} inputs of shape {batch.shape[1:]}; "
                         f"each input must be {what}: pass a list [x] or a stacked array with a "
                         f"leading batch axis, shape (N,) + {batch.shape} (net(x) itself takes one "
                         f"input object)")


def _stack_images(layer, items, ndim, what, dtype=None):
    """Stack a batch of equally sized arrays (cast with ``safe_cast`` to ``dtype``), with
    errors naming the layer, the input and the shapes."""
    refuse_one_input(layer, items, ndim, what)
    if isinstance(items, np.ndarray):
        a = items
        if a.ndim != ndim + 1:
            raise ValueError(f"{_name(layer)}.to_tensor: every input must be {what}; got a stacked "
                             f"batch of shape {a.shape}, i.e. inputs of shape {a.shape[1:]}")
        return a if dtype is None else safe_cast(layer, a, dtype, "the batch")
    first = np.shape(items[0])
    stacked = _stack_uniform(items, ndim, first, dtype)
    if stacked is not None:
        return stacked
    arrays = []
    for i, item in enumerate(items):
        a = np.asarray(item)
        if a.ndim != ndim:
            raise ValueError(f"{_name(layer)}.to_tensor: every input must be {what}; input {i} has "
                             f"{a.ndim} dimensions (shape {a.shape})")
        if a.shape != first:
            raise ValueError(
                f"{_name(layer)}.to_tensor: every input must be {what} of one shape; input 0 has shape "
                f"{first}, input {i} has shape {a.shape}")
        arrays.append(a if dtype is None else safe_cast(layer, a, dtype, f"input {i}"))
    return np.stack(arrays)



class image_space_identity:
    """dlib's coordinate maps of the plain image inputs: tensor space is image space.
    Points are ``(x, y)``; rectangles are passed through unchanged."""

    def image_contained_point(self, data, p):
        """True iff the point ``(x, y)`` lies inside the ``nc x nr`` image of ``data``."""
        x, y = p
        return 0 <= x <= data.nc() - 1 and 0 <= y <= data.nr() - 1

    def tensor_space_to_image_space(self, data, r):
        return r

    def image_space_to_tensor_space(self, data, scale, r):
        return r


def write_rgb_planar(out, imgs, avgs):
    """``out[n, c, r, col] = (imgs[n, r, col, c] - avgs[c]) / 256`` in ``out``'s dtype (dlib's
    ``(pixel - avg)/256``: float32 arithmetic for float32 tensors; the division is exact)."""
    avg = np.asarray(avgs, dtype=out.dtype)[None, :, None, None]
    np.subtract(imgs.transpose(0, 3, 1, 2), avg, out=out, dtype=out.dtype)
    out /= out.dtype.type(256)


def rgb_images_to_tensor(layer, batch, data, avgs):
    """A batch of ``H x W x 3`` uint8 images (a list or one stacked array) into ``data``,
    ``(N, 3, H, W)`` of ``(pixel - avg) / 256``."""
    imgs = _stack_images(layer, layer._batch(batch), 3, "an H x W x 3 uint8 RGB image", np.uint8)
    check_rgb_batch(layer, imgs)
    n, nr, nc, _ = imgs.shape
    data.set_size(n, 3, nr, nc)
    write_rgb_planar(data.host_write_only(), imgs, avgs)


def check_rgb_batch(layer, imgs):
    """``imgs`` (a stacked batch, already cast to uint8) must be N x H x W x 3."""
    if imgs.ndim != 4 or imgs.shape[3] != 3:
        extra = (" (a CHW image? move the channels last: x.transpose(1, 2, 0))"
                 if imgs.ndim == 4 and imgs.shape[1] == 3 else "")
        raise ValueError(f"{layer!r}.to_tensor: expected H x W x 3 uint8 images, got images of "
                         f"shape {imgs.shape[1:]}{extra}")


class rgb_averages:
    """The three float channel means of dlib's RGB input layers. The constructor takes the
    three means, or another RGB input layer to copy them from (dlib's converting
    constructors between input_rgb_image, input_rgb_image_sized and input_rgb_image_pair)."""

    def __init__(self, avg_red=122.782, avg_green=117.001, avg_blue=104.298):
        if isinstance(avg_red, rgb_averages):
            avg_red, avg_green, avg_blue = avg_red.avg_red, avg_red.avg_green, avg_red.avg_blue
        for name, v in (("avg_red", avg_red), ("avg_green", avg_green), ("avg_blue", avg_blue)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{type(self).__name__}: {name} must be a number, got {v!r}")
        # dlib stores floats
        self.avg_red = float(np.float32(avg_red))
        self.avg_green = float(np.float32(avg_green))
        self.avg_blue = float(np.float32(avg_blue))

    def get_avg_red(self):
        return self.avg_red

    def get_avg_green(self):
        return self.avg_green

    def get_avg_blue(self):
        return self.avg_blue

    def _write_avgs(self, w):
        """The three ``float`` means, in dlib's order."""
        w.float32(self.avg_red)
        w.float32(self.avg_green)
        w.float32(self.avg_blue)

    def _read_rgb_record(self, r, own):
        """dlib's readers of ``input_rgb_image`` and ``input_rgb_image_pair``: they accept the
        records of input_rgb_image, input_rgb_image_sized (whose nr, nc are read and dropped)
        and input_rgb_image_pair, and keep only the means."""
        versions = (own,) + tuple(v for v in ("input_rgb_image", "input_rgb_image_sized",
                                               "input_rgb_image_pair") if v != own)
        found = r.expect_string(*versions)
        red = r.float32("avg_red")
        green = r.float32("avg_green")
        blue = r.float32("avg_blue")
        if found == "input_rgb_image_sized":
            r.uint("input_rgb_image_sized's nr")
            r.uint("input_rgb_image_sized's nc")
        self.avg_red, self.avg_green, self.avg_blue = red, green, blue

    def _avgs_str(self):
        return f"({self.avg_red:g},{self.avg_green:g},{self.avg_blue:g})"

    def _avgs_xml(self):
        return f"r='{xml_num(self.avg_red)}' g='{xml_num(self.avg_green)}' b='{xml_num(self.avg_blue)}'"


class input_rgb_image(rgb_averages, image_space_identity, input_layer):
    """Batch of ``H x W x 3`` uint8 RGB images -> ``(N, 3, H, W)`` with
    ``(channel - avg) / 256`` (dlib's mean subtraction)."""

    # dlib's converting constructor from the other RGB input layers (the means travel), so
    # that loss_metric<backbone<input_rgb_image>> fnet(layer<5>(barlow_twins_net)) works.
    # (dlib also builds input_rgb_image_sized from input_rgb_image; not done here: the size
    # check would be silently dropped or added.)
    converts_from = (rgb_averages,)
    sample_ndim = 3

    def _looks_like_one(self, a):
        return a.shape[-1] == 3

    def to_tensor(self, batch, data):
        rgb_images_to_tensor(self, batch, data, (self.avg_red, self.avg_green, self.avg_blue))

    def serialize(self, w):
        w.string("input_rgb_image")
        self._write_avgs(w)

    def deserialize(self, r):
        self._read_rgb_record(r, "input_rgb_image")

    def __repr__(self):
        return f"input_rgb_image{self._avgs_str()}"

    def to_xml(self):
        return f"<input_rgb_image {self._avgs_xml()}/>\n"

    def to_onnx(self, g, shape, batch):
        """Graph input: uint8 RGB images ``(N, H, W, 3)`` (RGB order; OpenCV gives BGR), then
        ``Cast``, ``Transpose`` to NCHW, ``Sub`` the channel means, ``Div`` 256."""
        if shape[1] != 3:
            g.refuse(f"RGB images make 3 channels, but input_shape has k={shape[1]}")
        return g.image_input(np.uint8, shape, batch, "nhwc", (self.avg_red, self.avg_green, self.avg_blue))


class input_tensor(input_layer):
    """dlib's ``input_tensor``: the batch is a list of tensors (or arrays) with equal
    ``(k, nr, nc)``, whose samples are concatenated. Each item is normally ONE sample:
    ``(1, k, nr, nc)`` or ``(k, nr, nc)``; an item with n samples makes the net's sample
    expansion factor n, as in dlib. A single ``(N, k, nr, nc)`` array (or tensor) given as
    the batch itself is N samples."""

    _ser_version = "input_tensor"
    sample_ndim = 3      # one (k, nr, nc) sample

    def to_tensor(self, batch, data):
        if isinstance(batch, tensor):
            batch = batch.host_read()
        if isinstance(batch, np.ndarray):
            if batch.ndim != 4:
                raise ValueError(f"input_tensor.to_tensor: a batch given as one array must be "
                                 f"(N, k, nr, nc); got shape {batch.shape}")
            items = list(batch[:, None])       # N one-sample items
        else:
            items = self._batch(batch)
        arrays = [t.host_read() if isinstance(t, tensor) else np.asarray(t) for t in items]
        arrays = [a[None] if a.ndim == 3 else a for a in arrays]
        first = arrays[0]
        for i, a in enumerate(arrays):
            if a.ndim != 4:
                raise ValueError(f"input_tensor.to_tensor: every input must be one sample (k, nr, nc) "
                                 f"or a 4-D tensor (n, k, nr, nc); input {i} has shape {a.shape}")
            if a.shape[1:] != first.shape[1:]:
                raise ValueError(
                    f"input_tensor.to_tensor: every input must have the same (k, nr, nc); input 0 "
                    f"has {first.shape[1:]}, input {i} has {a.shape[1:]}")
        data.set_size(sum(a.shape[0] for a in arrays), *first.shape[1:])
        out = data.host_write_only()
        np.concatenate([safe_cast(self, a, out.dtype, f"input {i}") for i, a in enumerate(arrays)],
                       axis=0, out=out)

    def __repr__(self):
        return "input_tensor"

    def to_xml(self):
        return "<input_tensor/>\n"

    def to_onnx(self, g, shape, batch):
        """The tensor itself (float32 NCHW)."""
        return g.image_input(np.float32, shape, batch)


class _input_matrix(image_space_identity, input_layer):
    """Batch of 2-D arrays of one dtype -> ``(N, 1, nr, nc)``; uint8 values are divided by
    256, others copied (dlib's ``input<matrix<T>>``)."""

    dtype = None  # set by input[dtype]
    _ser_version = "input<matrix>"
    sample_ndim = 2

    @classmethod
    def type_expr(cls) -> str:
        return f"input[{np.dtype(cls.dtype).name}]"

    def to_tensor(self, batch, data):
        items = self._batch(batch)
        imgs = _stack_images(self, items, 2, f"a 2-D {np.dtype(self.dtype).name} matrix", self.dtype)
        n, nr, nc = imgs.shape
        data.set_size(n, 1, nr, nc)
        out = data.host_write_only()[:, 0]
        if self.dtype == np.uint8:
            np.divide(imgs, np.float32(256), out=out, dtype=np.float32)
        else:
            out[...] = imgs

    def __repr__(self):
        return "input<matrix>"

    def to_xml(self):
        return "<input/>\n"

    def to_onnx(self, g, shape, batch):
        """Graph input: ``(N, H, W)`` matrices of the layer's dtype; ``Cast``, ``Unsqueeze``
        to one channel, ``Div`` 256 for uint8."""
        if shape[1] != 1:
            g.refuse(f"matrices make 1 channel, but input_shape has k={shape[1]}")
        return g.image_input(self.dtype, shape, batch, "nhw")


class rgb_pixel:
    """dlib's ``rgb_pixel`` as a pixel type: ``input[rgb_pixel]`` is dlib's
    ``input<matrix<rgb_pixel>>`` (``H x W x 3`` uint8 images, each channel divided by 256,
    no mean subtraction, unlike ``input_rgb_image``)."""

    def __init__(self):
        raise TypeError("rgb_pixel is a pixel type for input[rgb_pixel], not a value")


class _input_rgb_matrix(_input_matrix):
    """dlib's ``input<matrix<rgb_pixel>>``: ``H x W x 3`` uint8 RGB images -> ``(N, 3, H, W)``
    of ``value/256`` (pixel_to_vector's channel order: red, green, blue)."""

    dtype = np.uint8
    sample_ndim = 3

    def _looks_like_one(self, a):
        return a.shape[-1] == 3

    @classmethod
    def type_expr(cls) -> str:
        return "input[rgb_pixel]"

    def to_tensor(self, batch, data):
        rgb_images_to_tensor(self, batch, data, (0.0, 0.0, 0.0))

    def to_onnx(self, g, shape, batch):
        """Graph input: uint8 RGB images ``(N, H, W, 3)``; ``Cast``, ``Transpose``, ``Div`` 256."""
        if shape[1] != 3:
            g.refuse(f"RGB images make 3 channels, but input_shape has k={shape[1]}")
        return g.image_input(np.uint8, shape, batch, "nhwc")


_INPUT_TYPES = {rgb_pixel: _input_rgb_matrix}


class _input_template:
    """``input[np.float32]``, ``input[np.uint8]``: input layer types for 2-D arrays (dlib's
    ``input<matrix<T>>``); ``input[rgb_pixel]`` for RGB images without mean subtraction."""

    _SUPPORTED = (np.uint8, np.float32, np.float64, np.int32, np.int64, np.uint16, np.uint32, np.uint64,
                  np.int16, np.int8)
    is_input_template = True  # the bracket-expression parser finds it by this flag and name
    name = "input"

    def __getitem__(self, dtype):
        if dtype is rgb_pixel or dtype == "rgb_pixel":
            return _INPUT_TYPES[rgb_pixel]
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"input[...] takes a numpy dtype such as np.float32, got {dtype!r}") from None
        if dt.type not in self._SUPPORTED:
            raise TypeError(f"input[...]: unsupported dtype {dt.name}")
        cls = _INPUT_TYPES.get(dt)
        if cls is None:
            cls = type(f"input_{dt.name}", (_input_matrix,), {"dtype": dt.type, "__module__": __name__})
            _INPUT_TYPES[dt] = cls
        return cls

    def __repr__(self):
        return "input"


input = _input_template()
