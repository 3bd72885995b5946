"""Tensors: dlib's 4-D float32 blocks (``num_samples x k x nr x nc``, NCHW, C-contiguous).

A tensor is a shape plus a window (offset, size) into a storage. The storage keeps a flat
float32 host array and, lazily, a device (CuPy) mirror, with one "current" flag per side:
a side is copied over only when the other one was written since. ``host()`` and
``device()`` hand out writable views and mark the other side stale; ``host_read()`` and
``device_read()`` do not (the host view they return is read-only, so the contract is
enforced rather than trusted).

On the CPU, oneDNN's kernels may keep a storage's values in one of their blocked layouts
(``nChw16c``: channels in blocks of 16) between two of them, as a third side, the "layout
mirror": an opaque object of the op module with ``write_host(flat)`` that reorders its values
into the flat host array. ``host()``/``host_read()`` reorder when only the mirror is current,
so numpy code never sees the difference; ``layout_mirror()`` and ``set_layout_mirror()`` are
for the ops that read and write it (docs/performance.md). As with the device copy (and dlib's
``host()`` pointers), an array that ``host()`` handed out is the tensor's values until the
next op on the tensor: write through a fresh ``host()`` after that, not through the old array.

``alias_tensor(shape)(t, offset)`` is a view into ``t``'s storage: dlib keeps each layer's
parameters in one flat tensor and reaches filters and biases through aliases, and so do we.

Views and copies, for users: ``t.numpy()`` and ``np.asarray(t)`` / ``np.array(t)`` are COPIES
(a snapshot that nothing overwrites); ``t.host_read()`` (and ``np.asarray(t, copy=False)``)
is the zero-copy, read-only view. What a net hands out after a pass (``get_output()``,
``forward()``'s result, ``get_parameter_gradient()``, ``get_final_data_gradient()``) is a
``read_only_view``: zero-copy, and valid until the net writes that memory again (its next
forward or backward pass); reading it after that raises ``StaleTensorError`` instead of
silently returning the newer values. Every storage counts its writes (``generation``) to
make that check cheap.
"""

from __future__ import annotations

import contextlib
import copy as _copy
import threading

import numpy as np

__all__ = ["tensor", "resizable_tensor", "alias_tensor", "read_only_view", "StaleTensorError",
           "have_same_dimensions", "is_same_object", "memcpy", "default_dtype", "image_plane"]

_local = threading.local()


def _default_dtype():
    return getattr(_local, "dtype", np.float32)


@contextlib.contextmanager
def default_dtype(dtype):
    """Allocate new tensor memory as ``dtype`` inside the block (per thread).

    dnnpy's tensors are float32; ``test_layer(..., dtype=np.float64)`` uses this to run a
    layer in float64, where finite differences are accurate enough for tight tolerances.
    A buffer allocated with another dtype is reallocated by its next ``set_size``.
    """
    old = _default_dtype()
    _local.dtype = np.dtype(dtype).type
    try:
        yield
    finally:
        _local.dtype = old


def _dims(n, k, nr, nc):
    # the common case first, without a generator: this runs on every set_size and view
    if type(n) is int and type(k) is int and type(nr) is int and type(nc) is int:
        if n >= 0 and k >= 0 and nr >= 0 and nc >= 0:
            return (n, k, nr, nc)
    dims = tuple(int(d) for d in (n, k, nr, nc))
    if any(d < 0 for d in dims):
        raise ValueError(f"tensor dimensions must be >= 0, got {dims}")
    return dims


def _device_empty(size, dtype):
    """A CuPy array for a storage's device mirror; out of device memory is retried once after
    freeing CuPy's pool, then reported with the bytes asked for."""
    import cupy  # only reached when a device view is asked for

    try:
        return cupy.empty(size, dtype=dtype)
    except cupy.cuda.memory.OutOfMemoryError:
        cupy.get_default_memory_pool().free_all_blocks()
        try:
            return cupy.empty(size, dtype=dtype)
        except cupy.cuda.memory.OutOfMemoryError as e:
            nbytes = size * np.dtype(dtype).itemsize
            raise MemoryError(f"dnnpy: out of device memory allocating the device copy of a tensor "
                              f"storage: {size} {np.dtype(dtype).name} values = {nbytes} bytes "
                              f"({nbytes / 2**20:.1f} MiB)") from e


class _storage:
    """Flat float32 memory on the host with a lazily created device mirror and, on the
    CPU, an optional layout mirror (the module docstring). At least one side is current.

    ``generation`` counts the writes (writable views handed out, host or device, and
    layout mirrors set alone): a ``read_only_view`` remembers it and refuses to read once it
    has moved on."""

    __slots__ = ("host_array", "device_array", "host_current", "device_current", "generation",
                 "mirror", "mirror_current", "__weakref__")

    def __init__(self, capacity: int, dtype=None):
        self.host_array = np.empty(capacity, dtype=dtype or _default_dtype())
        self.device_array = None
        self.host_current = True
        self.device_current = False
        self.generation = 0
        self.mirror = None
        self.mirror_current = False

    def __getstate__(self):
        # copies and pickles carry the host values, never the mirror (it holds oneDNN handles)
        self.sync_to_host()
        return {"host_array": self.host_array, "generation": self.generation}

    def __setstate__(self, state):
        if isinstance(state, tuple):    # pickled by an older dnnpy: (None, {slot: value})
            state = state[1]
            if not state.get("host_current", True) and state.get("device_array") is not None:
                state = {**state, "host_array": state["device_array"].get()}
        self.__init__(0, state["host_array"].dtype)
        self.host_array = state["host_array"]
        self.generation = state.get("generation", 0)

    @property
    def capacity(self) -> int:
        return self.host_array.size

    def sync_to_host(self):
        if not self.host_current:
            if self.mirror_current:
                self.mirror.write_host(self.host_array)
                self.host_current = True
                return
            # the device copy may have been written on any stream (a non-blocking one is not
            # ordered with the stream current now), so wait for the whole device first
            self.device_array.device.synchronize()
            self.device_array.get(out=self.host_array)
            self.host_current = True

    def sync_to_device(self):
        if self.device_current:
            return
        self.sync_to_host()
        if self.device_array is None or self.device_array.size != self.host_array.size:
            self.device_array = _device_empty(self.host_array.size, self.host_array.dtype)
        self.device_array.set(self.host_array)
        self.device_current = True


class tensor:
    """A 4-D float32 view ``(num_samples, k, nr, nc)`` into a storage.

    Ops in ``dnnpy.tensor_tools`` take tensor objects, so dlib's ``is_same_object(a, b)`` is
    ``a is b``. ``np.asarray(t)`` gives a copy-free read of the host data.
    """

    __slots__ = ("_storage", "_offset", "_shape")

    def __init__(self, storage: _storage, offset: int, shape):
        self._storage = storage
        self._offset = int(offset)
        self._shape = _dims(*shape)

    @classmethod
    def _view(cls, storage: _storage, offset: int, shape: tuple) -> "tensor":
        """A view whose ``offset`` (an int) and ``shape`` (a checked 4-tuple of ints) are
        already valid: skips ``__init__``'s conversions (alias_tensor calls this per use)."""
        t = object.__new__(cls)
        t._storage = storage
        t._offset = offset
        t._shape = shape
        return t

    # -- shape ---------------------------------------------------------------------------
    def num_samples(self) -> int:
        """The first dimension (samples in a batch)."""
        return self._shape[0]

    def k(self) -> int:
        """The second dimension (channels)."""
        return self._shape[1]

    def nr(self) -> int:
        """The third dimension (rows)."""
        return self._shape[2]

    def nc(self) -> int:
        """The fourth dimension (columns)."""
        return self._shape[3]

    def size(self) -> int:
        """``num_samples * k * nr * nc``."""
        n, k, nr, nc = self._shape
        return n * k * nr * nc

    @property
    def shape(self):
        """``(num_samples, k, nr, nc)``."""
        return self._shape

    # -- data access ---------------------------------------------------------------------
    def covers_storage(self) -> bool:
        """Whether this view is its whole storage (not a window into a larger one)."""
        return self._offset == 0 and self.size() == self._storage.capacity

    def _window(self, flat):
        n, k, nr, nc = shape = self._shape
        offset = self._offset
        return flat[offset:offset + n * k * nr * nc].reshape(shape)

    def host(self) -> np.ndarray:
        """Writable NCHW numpy view; marks the device copy stale."""
        s = self._storage
        s.sync_to_host()
        s.device_current = s.mirror_current = False
        s.generation += 1
        return self._window(s.host_array)

    def host_read(self) -> np.ndarray:
        """Read-only NCHW numpy view; the device copy stays current."""
        s = self._storage
        s.sync_to_host()
        view = self._window(s.host_array)
        view.flags.writeable = False
        return view

    def host_write_only(self) -> np.ndarray:
        """Writable view whose old contents are not needed (skips a device->host copy when
        the view covers its whole storage)."""
        s = self._storage
        if self.covers_storage():
            s.host_current = True
        else:
            s.sync_to_host()
        s.device_current = s.mirror_current = False
        s.generation += 1
        return self._window(s.host_array)

    def device(self):
        """Writable CuPy view; marks the host copy stale. Needs CuPy and a GPU."""
        s = self._storage
        s.sync_to_device()
        s.host_current = s.mirror_current = False
        s.generation += 1
        return self._window(s.device_array)

    def device_read(self):
        """CuPy view for reading; the host copy stays current."""
        s = self._storage
        s.sync_to_device()
        return self._window(s.device_array)

    def device_write_only(self):
        """Writable CuPy view whose old contents are not needed (skips a host->device copy
        when the view covers its whole storage); marks the host copy stale."""
        s = self._storage
        if not self.covers_storage():
            return self.device()
        if s.device_array is None or s.device_array.size != s.host_array.size:
            s.device_array = _device_empty(s.host_array.size, s.host_array.dtype)
        s.device_current = True
        s.host_current = s.mirror_current = False
        s.generation += 1
        return self._window(s.device_array)

    def host_strided_base(self, writable=False) -> np.ndarray:
        """The flat host storage from this tensor's first element to the end of its storage,
        for ops that walk strided windows reaching past ``size()`` (dlib's strided resize).
        ``writable`` marks the device copy stale; otherwise the array is read-only."""
        s = self._storage
        s.sync_to_host()
        flat = s.host_array[self._offset:]
        if writable:
            s.device_current = s.mirror_current = False
            s.generation += 1
        else:
            flat.flags.writeable = False
        return flat

    def device_strided_base(self, writable=False):
        """``host_strided_base`` on the device mirror (CuPy); ``writable`` marks the host stale."""
        s = self._storage
        s.sync_to_device()
        if writable:
            s.host_current = s.mirror_current = False
            s.generation += 1
        return s.device_array[self._offset:]

    def elements_from_offset(self) -> int:
        """How many storage elements lie from this tensor's first element to the storage's end
        (``size()`` or more: the bound a strided window must respect)."""
        return self._storage.capacity - self._offset

    def numpy(self) -> np.ndarray:
        """A copy of the data as an NCHW numpy array (owned by the caller: later passes of a
        net never change it). ``host_read()`` is the zero-copy read-only view."""
        return np.array(self.host_read())

    def __array__(self, dtype=None, copy=None):
        # numpy's default (copy=None) gets a copy, so np.asarray(net_output) is a snapshot that
        # the next forward cannot overwrite; copy=False asks for the read-only view.
        a = self.host_read()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a if copy is False else a.copy()

    # -- assignment ----------------------------------------------------------------------
    def fill(self, value: float):
        """dlib's ``t = value``."""
        self.host_write_only()[...] = value
        return self

    def assign(self, values):
        """Copy an array (or tensor) of the same shape, or a scalar, into this tensor."""
        if isinstance(values, tensor):
            values = values.host_read()
        arr = np.asarray(values)
        if arr.ndim != 0 and arr.shape != self._shape:
            if arr.size != self.size():
                raise ValueError(
                    f"tensor.assign: shape {arr.shape} does not match tensor shape {self._shape}")
            arr = arr.reshape(self._shape)
        self.host_write_only()[...] = arr
        return self

    # dlib's compound assignments: t += m and t -= m (an array, a tensor or a scalar), t *= s
    # and t /= s (scalars). Without them Python would rebind t to a new numpy array and
    # leave the tensor unchanged.
    def __iadd__(self, other):
        return self._compound(np.add, other, "+=")

    def __isub__(self, other):
        return self._compound(np.subtract, other, "-=")

    def __imul__(self, other):
        return self._compound(np.multiply, other, "*=", scalar_only=True)

    def __itruediv__(self, other):
        return self._compound(np.divide, other, "/=", scalar_only=True)

    def _compound(self, op, other, sym, scalar_only=False):
        arr = np.asarray(other.host_read() if isinstance(other, tensor) else other)
        if arr.ndim and scalar_only:
            raise TypeError(f"tensor {sym}: dlib's t {sym} s takes a number; for an elementwise "
                            f"product use tt.multiply(False, dest, a, b)")
        if arr.ndim and arr.size != self.size():
            raise ValueError(f"tensor {sym}: the operand has shape {arr.shape} ({arr.size} values), "
                             f"the tensor {self._shape} ({self.size()})")
        data = self.host()
        op(data, arr.reshape(self._shape) if arr.ndim else arr, out=data)
        return self

    def __setitem__(self, key, value):
        self.host()[key] = value

    def __getitem__(self, key):
        return self.host_read()[key]

    def __len__(self):
        return self._shape[0]

    def __repr__(self):
        n, k, nr, nc = self._shape
        return f"{type(self).__name__}(num_samples={n}, k={k}, nr={nr}, nc={nc})"

    def is_aliased_with(self, other: "tensor") -> bool:
        """True when both views share storage and their windows overlap."""
        if self._storage is not other._storage:
            return False
        a0, a1 = self._offset, self._offset + self.size()
        b0, b1 = other._offset, other._offset + other.size()
        return a0 < b1 and b0 < a1

    def overlaps_elsewhere(self, other: "tensor") -> bool:
        """True when both views share memory but are not the same window (same offset and
        shape): an op writing one while reading the other must read from a copy (the one
        alias rule of the CUDA twin's kernels)."""
        return (self.is_aliased_with(other)
                and (self._offset, self._shape) != (other._offset, other._shape))

    @property
    def dtype(self):
        """The element type (numpy dtype) of the storage."""
        return self._storage.host_array.dtype

    def write_stamp(self):
        """``(storage, offset, shape, generation)``, compared with ``==``: it stays equal
        between two calls iff the same view is asked and nothing wrote its storage in between
        (no writable view was handed out). For caches derived from a tensor's contents, e.g.
        oneDNN's max-pool workspace; it keeps the storage alive while it is held."""
        s = self._storage
        return (s, self._offset, self._shape, s.generation)

    def writable(self) -> bool:
        """Whether ops may write this view (a ``read_only_view`` refuses)."""
        return True


    def layout_mirror(self, stale_too=False):
        """The storage's layout mirror when it is current (or, with ``stale_too``, whenever
        there is one: its buffer may be reused) and this view covers the whole storage (the
        only views a mirror serves), else None. For CPU ops."""
        s = self._storage
        if (s.mirror_current or stale_too) and self.covers_storage():
            return s.mirror
        return None

    def set_layout_mirror(self, mirror, host_current: bool):
        """Make ``mirror`` (holding this view's values, in a layout of the op's) the storage's
        current layout mirror; this view must cover its storage. ``host_current``: the host
        copy holds the same values (the mirror was reordered from it); False means an op has
        just written the mirror alone, a write: the host and device copies become stale."""
        if not self.covers_storage():
            raise ValueError(f"set_layout_mirror: the view {self._shape} at {self._offset} does "
                             f"not cover its storage of {self._storage.capacity} elements")
        s = self._storage
        if not host_current:
            s.host_current = s.device_current = False
            s.generation += 1
        s.mirror, s.mirror_current = mirror, True

    def is_host_current(self) -> bool:
        """Whether the host copy of the storage holds the latest values (tests, diagnostics)."""
        return self._storage.host_current

    def is_device_current(self) -> bool:
        """Whether the device copy of the storage holds the latest values."""
        return self._storage.device_current

    def storage_host_read(self) -> np.ndarray:
        """The whole storage this view lives in, synced to the host, read-only (to check
        that an op left the elements outside its window alone)."""
        s = self._storage
        s.sync_to_host()
        view = s.host_array.view()
        view.flags.writeable = False
        return view


class resizable_tensor(tensor):
    """A tensor that owns its storage and can change shape.

    ``resizable_tensor()`` is empty; ``resizable_tensor(n, k=1, nr=1, nc=1)`` allocates
    (contents undefined, as in dlib); ``resizable_tensor(array)`` copies a 1- to 4-D array
    (missing trailing dimensions are 1, e.g. a matrix is ``(rows, cols, 1, 1)``).
    """

    # ``annotation``: dlib's ``tensor::annotation()`` (a ``dlib::any``): data an input layer
    # attaches to the tensor it fills, e.g. the level rectangles of a tiled image pyramid.
    __slots__ = ("annotation",)

    def __init__(self, *args):
        self.annotation = None
        if len(args) == 1 and not np.isscalar(args[0]):
            src = args[0]
            arr = src.host_read() if isinstance(src, tensor) else np.asarray(src)
            if not 1 <= arr.ndim <= 4:
                raise ValueError(f"resizable_tensor: expected a 1- to 4-D array, got shape {arr.shape}")
            shape = arr.shape + (1,) * (4 - arr.ndim)
            super().__init__(_storage(arr.size), 0, shape)
            self.host_write_only()[...] = arr.reshape(shape)
            return
        shape = _dims(*(tuple(args) + (1,) * (4 - len(args)))) if args else (0, 0, 0, 0)
        if len(args) > 4:
            raise TypeError(f"resizable_tensor takes at most 4 dimensions, got {len(args)}")
        n, k, nr, nc = shape
        super().__init__(_storage(n * k * nr * nc), 0, shape)

    def set_size(self, n, k=1, nr=1, nc=1):
        """Reshape; the buffer only grows (so varying batch sizes do not reallocate).
        Contents are undefined afterwards."""
        shape = _dims(n, k, nr, nc)
        size = shape[0] * shape[1] * shape[2] * shape[3]
        if size > self._storage.capacity or self._storage.host_array.dtype != _default_dtype():
            self._storage = _storage(size)
        elif shape != self._shape and self._storage.mirror_current:
            # a layout mirror holds one shape's layout: the storage keeps its bytes in NCHW
            self._storage.sync_to_host()
            self._storage.mirror_current = False
        self._shape = shape
        return self

    def copy_size(self, t: tensor):
        """``set_size`` to ``t``'s shape."""
        return self.set_size(*t.shape)

    def assign(self, values):
        """``tensor.assign``, and, as dlib's ``resizable_tensor t; t = mat(m);``, a tensor or a
        1- to 4-D array with another number of values first resizes this one to its shape
        (missing trailing dimensions are 1)."""
        arr = values.host_read() if isinstance(values, tensor) else np.asarray(values)
        if arr.ndim != 0 and arr.size != self.size():
            if not 1 <= arr.ndim <= 4:
                raise ValueError(f"resizable_tensor.assign: expected a 1- to 4-D array, got shape {arr.shape}")
            self.set_size(*(arr.shape + (1,) * (4 - arr.ndim)))
        return super().assign(arr)

    def clear(self):
        """Free the memory; the tensor becomes empty."""
        self._storage = _storage(0)
        self._shape = (0, 0, 0, 0)
        self.annotation = None

    def copy(self) -> "resizable_tensor":
        """A deep copy (dlib's resizable_tensor copy constructor), keeping the dtype."""
        t = resizable_tensor()
        t._storage = _storage(self.size(), self.dtype)
        t._shape = self._shape
        t.host_write_only()[...] = self.host_read()
        t.annotation = _copy.deepcopy(self.annotation)  # dlib copies the annotation too
        return t

    def __deepcopy__(self, memo):
        return self.copy()


class StaleTensorError(RuntimeError):
    """A ``read_only_view`` was read after the net overwrote the memory it shows."""


class read_only_view(tensor):
    """What a net hands out after a pass (``get_output()``, ``forward()``,
    ``get_parameter_gradient()``, ``get_final_data_gradient()``): a zero-copy view of the
    net's own buffer that cannot be written and that refuses to be read once a later pass
    has written that buffer (``StaleTensorError``), instead of silently showing the newer
    values. Keep data across passes with ``.numpy()`` (a copy) when you get it."""

    __slots__ = ("_generation", "_what")

    def __init__(self, t: tensor, what: str = "this tensor"):
        super().__init__(t._storage, t._offset, t._shape)
        self._generation = t._storage.generation
        self._what = what

    def is_current(self) -> bool:
        """False once the net has written the memory this view shows."""
        return self._storage.generation == self._generation

    def _check(self):
        if self._storage.generation != self._generation:
            raise StaleTensorError(
                f"{self._what} {self._shape} was overwritten by a later pass of the net; it is a "
                f"view of the net's buffer: call .numpy() on it when you get it to keep a copy")

    def host_read(self) -> np.ndarray:
        self._check()
        return super().host_read()

    def device_read(self):
        self._check()
        return super().device_read()

    def host_strided_base(self, writable=False):
        if writable:
            self._refuse_write()
        self._check()
        return super().host_strided_base(False)

    def device_strided_base(self, writable=False):
        if writable:
            self._refuse_write()
        self._check()
        return super().device_strided_base(False)

    def writable(self) -> bool:
        return False

    def layout_mirror(self, stale_too=False):
        self._check()
        return super().layout_mirror(stale_too)

    def set_layout_mirror(self, mirror, host_current: bool):
        if not host_current:
            self._refuse_write()
        self._check()
        super().set_layout_mirror(mirror, True)

    def _refuse_write(self, *args, **kwargs):
        """Refused: the view is read-only (copy it with ``.numpy()``)."""
        raise TypeError(f"{self._what} is read-only (a view of the net's buffer); copy it with "
                        f".numpy() to change the values")

    host = host_write_only = device = device_write_only = fill = assign = __setitem__ = _refuse_write

    def __repr__(self):
        n, k, nr, nc = self._shape
        state = "" if self.is_current() else ", stale"
        return f"read_only_view(num_samples={n}, k={k}, nr={nr}, nc={nc}{state})"


class alias_tensor:
    """A shape only: ``alias_tensor(n, k=1, nr=1, nc=1)(t, offset)`` is a tensor view of
    ``size()`` floats of ``t`` starting at float ``offset`` (offsets compose when ``t`` is
    itself a view)."""

    __slots__ = ("_shape",)

    def __init__(self, n=0, k=1, nr=1, nc=1):
        self._shape = _dims(n, k, nr, nc)

    def num_samples(self):
        """The first dimension of the views this makes."""
        return self._shape[0]

    def k(self):
        """The second dimension of the views this makes."""
        return self._shape[1]

    def nr(self):
        """The third dimension of the views this makes."""
        return self._shape[2]

    def nc(self):
        """The fourth dimension of the views this makes."""
        return self._shape[3]

    @property
    def shape(self):
        """``(num_samples, k, nr, nc)`` of the views this makes."""
        return self._shape

    def size(self) -> int:
        """Elements in each view."""
        n, k, nr, nc = self._shape
        return n * k * nr * nc

    def __call__(self, t: tensor, offset: int = 0) -> tensor:
        if offset < 0 or offset + self.size() > t.size():
            raise ValueError(
                f"alias_tensor{self._shape}: offset {offset} + size {self.size()} "
                f"exceeds the aliased tensor's size {t.size()}")
        return tensor._view(t._storage, t._offset + int(offset), self._shape)

    def __eq__(self, other):
        return isinstance(other, alias_tensor) and other._shape == self._shape

    def __hash__(self):
        return hash(self._shape)

    def __repr__(self):
        return f"alias_tensor{self._shape}"


def is_same_object(a, b) -> bool:
    """dlib's ``is_same_object(a, b)`` for tensors: the same tensor, or views of the same window
    of the same memory (``layer(net, skip1).get_output()`` and ``layer(net, tag1).get_output()``
    are two ``read_only_view`` objects of one buffer: the same object in dlib's sense)."""
    if a is b:
        return True
    return (isinstance(a, tensor) and isinstance(b, tensor) and a._storage is b._storage
            and a._offset == b._offset and a._shape == b._shape)


def memcpy(dest, src):
    """dlib's ``memcpy(dest, src)`` for tensors: copy ``src``'s values into ``dest`` (alias
    views included). Requires ``dest.size() == src.size()``; the shapes may differ."""
    if dest.size() != src.size():
        raise ValueError(f"memcpy: dest{dest.shape} holds {dest.size()} values, src{src.shape} "
                         f"{src.size()}; they must hold as many")
    dest.assign(src.host_read().reshape(dest.shape))


def have_same_dimensions(a: tensor, b: tensor) -> bool:
    return a.shape == b.shape


def image_plane(t, sample=0, k=0) -> np.ndarray:
    """dlib's ``image_plane(t, sample, k)``: channel ``k`` of sample ``sample`` of a tensor (or
    an NCHW numpy array) as a new ``nr x nc`` array (a copy: later passes of a net never change
    it). dlib's ``max_pointwise`` of such planes is ``np.maximum``."""
    a = t.host_read() if isinstance(t, tensor) else np.asarray(t)
    if a.ndim != 4:
        raise ValueError(f"image_plane: expected a tensor or an NCHW array, got shape {a.shape}")
    n, kk = a.shape[:2]
    for name, v, top in (("sample", sample, n), ("k", k, kk)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < top:
            raise ValueError(f"image_plane: {name}={v!r} is out of range for a tensor of shape "
                             f"{tuple(a.shape)} (need 0 <= {name} < {top})")
    return np.array(a[sample, k])
