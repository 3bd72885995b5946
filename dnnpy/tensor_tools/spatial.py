"""Spatial ops: dlib's ``tt::pooling`` (max / average), ``reorg`` / ``reorg_gradient``
(space to depth), ``copy_tensor`` (channel-range and 3-D block copies) and ``transpose``.

Dispatchers: each checks shapes once (``ValueError`` naming the op and the shapes) and calls
the active backend's twin. The CPU twin lives in ``cpu/spatial.py``; its functions are
``pooling_forward``, ``pooling_backward``, ``reorg``, ``reorg_gradient``, ``copy_tensor``
(always the 12-argument block form) and ``transpose``.
"""

from __future__ import annotations

from ..tensor import resizable_tensor
from .backend import _backend, _check_tensors

__all__ = ["pooling", "reorg", "reorg_gradient", "copy_tensor", "transpose"]


def _distinct(op, **named):
    """dlib's ``!is_same_object(a, b)`` plus "the memory areas do not overlap"."""
    items = list(named.items())
    for i, (na, a) in enumerate(items):
        for nb, b in items[i + 1:]:
            if a is b or a.is_aliased_with(b):
                raise ValueError(f"{op}: {na}{a.shape} and {nb}{b.shape} must not share memory")


# ----------------------------------------------------------------------------------------
# pooling

class pooling:
    """dlib's ``tt::pooling``: max or average pooling over ``window_height x window_width``
    windows.

    The window of output pixel ``(r, c)`` has its top-left corner at input pixel
    ``(r*stride_y - padding_y, c*stride_x - padding_x)`` (dlib's ``centered_rect(c*stride_x
    + window_width/2 - padding_x, ...)``) and is clipped to the image: padding never wins a
    max, and an average is over the pixels inside the image only (cuDNN's
    ``AVERAGE_COUNT_EXCLUDE_PADDING``). Max ties go to the first pixel in row-major order.

    Call ``setup_max_pooling`` or ``setup_avg_pooling`` first (they record the parameters).

    ``state`` is the object's workspace, a dict handed to the backend twins (keyword
    ``state``): a twin may keep there what its backward reuses from the forward (oneDNN's
    max-pool workspace), checked against the tensors it is given and recomputed when stale.
    Setting the object up again empties it.
    """

    def __init__(self):
        self.do_max_pooling = True
        self.state = {}
        self.clear()

    def clear(self):
        """Forget the window (``does_max_pooling()`` is left as it was, as in dlib)."""
        self.window_height = self.window_width = 0
        self.stride_y = self.stride_x = 0
        self.padding_y = self.padding_x = 0
        self.state = {}

    def _setup(self, op, window_height, window_width, stride_y, stride_x, padding_y, padding_x):
        vals = [int(v) for v in (window_height, window_width, stride_y, stride_x, padding_y, padding_x)]
        wh, ww, sy, sx, py, px = vals
        if wh <= 0 or ww <= 0 or sy <= 0 or sx <= 0:
            raise ValueError(f"pooling.{op}: window ({wh}x{ww}) and strides ({sy}, {sx}) must be > 0")
        if not (0 <= py < wh and 0 <= px < ww):
            raise ValueError(f"pooling.{op}: padding ({py}, {px}) must be >= 0 and smaller than the "
                             f"window ({wh}x{ww})")
        if vals != [self.window_height, self.window_width, self.stride_y, self.stride_x,
                    self.padding_y, self.padding_x]:
            self.state = {}
        (self.window_height, self.window_width, self.stride_y, self.stride_x,
         self.padding_y, self.padding_x) = vals

    def setup_max_pooling(self, window_height, window_width, stride_y, stride_x, padding_y, padding_x):
        """Requires: windows and strides > 0, ``0 <= padding < window`` in each direction.
        Ensures: ``__call__`` does max pooling with these parameters."""
        if not self.do_max_pooling:
            self.state = {}
        self._setup("setup_max_pooling", window_height, window_width, stride_y, stride_x,
                    padding_y, padding_x)
        self.do_max_pooling = True

    def setup_avg_pooling(self, window_height, window_width, stride_y, stride_x, padding_y, padding_x):
        """As ``setup_max_pooling``, for average pooling."""
        if self.do_max_pooling:
            self.state = {}
        self._setup("setup_avg_pooling", window_height, window_width, stride_y, stride_x,
                    padding_y, padding_x)
        self.do_max_pooling = False

    def does_max_pooling(self) -> bool:
        return self.do_max_pooling

    def _args(self):
        return (self.do_max_pooling, self.window_height, self.window_width, self.stride_y,
                self.stride_x, self.padding_y, self.padding_x)

    def output_shape(self, src):
        n, k, nr, nc = src.shape
        return (n, k, 1 + (nr + 2 * self.padding_y - self.window_height) // self.stride_y,
                1 + (nc + 2 * self.padding_x - self.window_width) // self.stride_x)

    def __call__(self, dest, src):
        """Requires: a setup call; dest is a ``resizable_tensor`` distinct from src; the
        window fits in the padded image (``window_height <= src.nr() + 2*padding_y``, same
        for width).
        Ensures: dest is resized to ``(N, K, 1 + (nr + 2*padding_y - window_height) //
        stride_y, 1 + (nc + 2*padding_x - window_width) // stride_x)`` and assigned the max
        (or mean) of each clipped window; an empty src gives a zero-filled dest."""
        _check_tensors("pooling", dest=dest, src=src)
        if self.window_height <= 0:
            raise ValueError("pooling: call setup_max_pooling() or setup_avg_pooling() first")
        if not isinstance(dest, resizable_tensor):
            raise TypeError("pooling: dest must be a resizable_tensor (it is resized)")
        _distinct("pooling", dest=dest, src=src)
        if (self.window_height > src.nr() + 2 * self.padding_y
                or self.window_width > src.nc() + 2 * self.padding_x):
            raise ValueError(
                f"pooling: the {self.window_height}x{self.window_width} window does not fit in "
                f"src{src.shape} padded by ({self.padding_y}, {self.padding_x})")
        dest.set_size(*self.output_shape(src))
        if src.size() == 0:
            dest.fill(0)
            return
        _backend().pooling_forward(dest, src, *self._args(), state=self.state)

    def get_gradient(self, gradient_input, dest, src, grad, add_to=True):
        """Requires: ``dest`` holds ``self(dest, src)``; ``gradient_input`` has dest's
        dimensions and ``grad`` src's; grad shares memory with none of the others.
        Ensures: ADDS to grad (``add_to``, dlib's behaviour) or ASSIGNS every element of grad
        (``add_to=False``: its old contents, even NaN, are not read) the gradient of
        ``dot(gradient_input, dest)`` with respect to src: a max window sends its gradient to
        its (first) maximum, an average window spreads it evenly over its clipped pixels."""
        _check_tensors("pooling.get_gradient", gradient_input=gradient_input, dest=dest, src=src,
                       grad=grad)
        if self.window_height <= 0:
            raise ValueError("pooling.get_gradient: call setup_max_pooling() or setup_avg_pooling() first")
        if gradient_input.shape != dest.shape or src.shape != grad.shape:
            raise ValueError(
                f"pooling.get_gradient: gradient_input{gradient_input.shape} must match "
                f"dest{dest.shape} and grad{grad.shape} must match src{src.shape}")
        if dest.shape != self.output_shape(src):
            raise ValueError(f"pooling.get_gradient: dest{dest.shape} is not the pooling of "
                             f"src{src.shape} (expected {self.output_shape(src)})")
        _distinct("pooling.get_gradient", grad=grad, gradient_input=gradient_input)
        _distinct("pooling.get_gradient", grad=grad, dest=dest)
        _distinct("pooling.get_gradient", grad=grad, src=src)
        if src.size() == 0:
            return
        _backend().pooling_backward(gradient_input, dest, src, grad, *self._args(),
                                    add_to=bool(add_to), state=self.state)


# ----------------------------------------------------------------------------------------
# reorg (space to depth)

def reorg(add_to, dest, row_stride, col_stride, src):
    """Space to depth: ``dest(n, k, r, c) (+)= src(n, k % K, r*row_stride + (k // K) //
    col_stride, c*col_stride + (k // K) % col_stride)`` with ``K = src.k()``.

    Requires: dest and src distinct; ``src.nr() % row_stride == 0``, ``src.nc() %
    col_stride == 0``; dest is ``(N, K*row_stride*col_stride, nr/row_stride,
    nc/col_stride)``. Ensures: assigned, or added when ``add_to``.
    """
    _check_tensors("reorg", dest=dest, src=src)
    _distinct("reorg", dest=dest, src=src)
    rs, cs = int(row_stride), int(col_stride)
    n, k, nr, nc = src.shape
    if rs < 1 or cs < 1 or nr % rs or nc % cs:
        raise ValueError(f"reorg: src{src.shape} rows/columns must be divisible by the strides "
                         f"({row_stride}, {col_stride})")
    if dest.shape != (n, k * rs * cs, nr // rs, nc // cs):
        raise ValueError(f"reorg: dest{dest.shape} must be {(n, k * rs * cs, nr // rs, nc // cs)} "
                         f"for src{src.shape} and strides ({rs}, {cs})")
    _backend().reorg(bool(add_to), dest, rs, cs, src)


def reorg_gradient(add_to, grad, row_stride, col_stride, gradient_input):
    """The inverse permutation of ``reorg``: ``grad(n, k, r, c) (+)= gradient_input(n,
    k + K*((r % row_stride)*col_stride + c % col_stride), r // row_stride, c // col_stride)``
    with ``K = grad.k()``.

    Requires: distinct tensors; ``grad`` is ``(N, gi.k()/(row_stride*col_stride),
    gi.nr()*row_stride, gi.nc()*col_stride)``. Ensures: assigned, or added when ``add_to``.
    """
    _check_tensors("reorg_gradient", grad=grad, gradient_input=gradient_input)
    _distinct("reorg_gradient", grad=grad, gradient_input=gradient_input)
    rs, cs = int(row_stride), int(col_stride)
    n, k, nr, nc = gradient_input.shape
    if rs < 1 or cs < 1 or k % (rs * cs) or grad.shape != (n, k // (rs * cs), nr * rs, nc * cs):
        raise ValueError(f"reorg_gradient: grad{grad.shape} must be "
                         f"{(n, k // max(rs * cs, 1), nr * rs, nc * cs)} for "
                         f"gradient_input{gradient_input.shape} and strides ({rs}, {cs})")
    _backend().reorg_gradient(bool(add_to), grad, rs, cs, gradient_input)


# ----------------------------------------------------------------------------------------
# copies

def copy_tensor(add_to, dest, *args):
    """dlib's two ``tt::copy_tensor`` overloads, told apart by the number of arguments.

    ``copy_tensor(add_to, dest, dest_k_offset, src, src_k_offset, count_k)``:
    ``dest[n, dest_k_offset + j] (+)= src[n, src_k_offset + j]`` for ``j < count_k``.
    Requires: same num_samples, nr and nc; ``dest.k() - dest_k_offset >= count_k`` and
    ``src.k() - src_k_offset >= count_k``.

    ``copy_tensor(add_to, dest, dk, dnr, dnc, src, sk, snr, snc, k, nr, nc)``:
    ``dest[n, dk+j, dnr+r, dnc+c] (+)= src[n, sk+j, snr+r, snc+c]`` over the ``k x nr x nc``
    block. Requires: same num_samples; the block fits in both tensors.

    Both: dest and src do not share memory; offsets >= 0. Ensures: the block of dest is
    assigned (or added to when ``add_to``); the rest of dest is untouched.
    """
    if len(args) == 4:
        dk, src, sk, count_k = args
        _check_tensors("copy_tensor", dest=dest, src=src)
        if dest.shape[0] != src.shape[0] or dest.shape[2:] != src.shape[2:]:
            raise ValueError(f"copy_tensor: dest{dest.shape} and src{src.shape} must have the same "
                             "num_samples, nr and nc")
        block = (int(dk), 0, 0, int(sk), 0, 0, int(count_k), src.nr(), src.nc())
    elif len(args) == 10:
        dk, dnr, dnc, src, sk, snr, snc, k, nr, nc = args
        _check_tensors("copy_tensor", dest=dest, src=src)
        if dest.num_samples() != src.num_samples():
            raise ValueError(f"copy_tensor: dest{dest.shape} and src{src.shape} must have the same "
                             "num_samples")
        block = tuple(int(v) for v in (dk, dnr, dnc, sk, snr, snc, k, nr, nc))
    else:
        raise TypeError("copy_tensor(add_to, dest, dest_k_offset, src, src_k_offset, count_k) or "
                        "copy_tensor(add_to, dest, dk, dnr, dnc, src, sk, snr, snc, k, nr, nc): "
                        f"got {2 + len(args)} arguments")
    dk, dnr, dnc, sk, snr, snc, k, nr, nc = block
    if min(block) < 0:
        raise ValueError(f"copy_tensor: offsets and sizes must be >= 0, got {block}")
    for name, t, off in (("dest", dest, (dk, dnr, dnc)), ("src", src, (sk, snr, snc))):
        if any(o + s > d for o, s, d in zip(off, (k, nr, nc), t.shape[1:])):
            raise ValueError(f"copy_tensor: a (k={k}, nr={nr}, nc={nc}) block at offset "
                             f"(k={off[0]}, nr={off[1]}, nc={off[2]}) does not fit in {name}{t.shape}")
    _distinct("copy_tensor", dest=dest, src=src)
    _backend().copy_tensor(bool(add_to), dest, dk, dnr, dnc, src, sk, snr, snc, k, nr, nc)


def transpose(add_to, dest, src):
    """``dest(n, k, c, r) (+)= src(n, k, r, c)``: every nr x nc plane transposed.

    Requires: dest and src distinct, dest is ``(N, K, src.nc(), src.nr())``.
    Ensures: assigned, or added when ``add_to``.
    """
    _check_tensors("transpose", dest=dest, src=src)
    n, k, nr, nc = src.shape
    if dest.shape != (n, k, nc, nr):
        raise ValueError(f"transpose: dest{dest.shape} must be {(n, k, nc, nr)} for src{src.shape}")
    _distinct("transpose", dest=dest, src=src)
    _backend().transpose(bool(add_to), dest, src)
