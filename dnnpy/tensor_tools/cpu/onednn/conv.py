"""oneDNN convolution: the forward pass (fused bias, ReLU and ``add_to_output``), the data
gradient and the filter gradient (with the bias gradient), for ``con_`` and ``cont_`` alike
(``cont_`` drives ``tensor_conv`` backwards, so one set of primitives serves both).

Entry points have the CPU twin's signatures and return True when oneDNN did the work,
False when numpy must run: oneDNN off (``active()`` false), a dtype other than float32, a
non-contiguous view, or a case oneDNN refuses (cached as such, logged once through
``note_fallback``).

Geometry: dlib's output size is ``1 + (H + 2p - R) // s`` (floor), so the right/bottom
padding oneDNN is given is ``pr = (Ho-1)*s + R - H - pl``, which can be negative.

Layout, per pass and geometry, chosen once and cached like cuDNN's algorithm cache:

- ``plain``: every descriptor NCHW / OIHW (``abcd``); oneDNN runs im2col + sgemm on the
  caller's buffers directly.
- ``any``: the primitive picks its layouts (blocked ``nChw16c`` for the direct JIT
  kernels); the caller's NCHW buffers are reordered into blocked buffers owned by the
  prepared object and the results reordered back (``add_to_output`` is then a ``sum``
  post-op on that reorder, free).

``DNNPY_ONEDNN_LAYOUT=any|plain|auto`` (default ``auto``) forces one. Measured (2 threads,
AVX-512, oneDNN 3.2), ``any`` wins by 1.3-4x everywhere, forwards writing 1 to 6 channels
included (LeNet's first layer: 0.7 against 1.0-1.6 ms), except the data gradient that
*writes* few channels (a 1- to 6-channel data gradient, a 3-channel transposed-conv output),
where ``plain`` (gemm) wins by 1.3-7x; from 8 channels on ``any`` wins there too. So ``auto``
is a fixed rule, not a timing: ``plain`` for a data gradient of fewer than ``FEW_CHANNELS``
channels, ``any`` otherwise, and the other layout when oneDNN refuses the first. A rule keeps results
reproducible from run to run (timing both, tried first, picked by the machine's load, and
the two layouts round differently).

Accumulation: the forward's ``add_to_output`` is oneDNN's ``sum`` post-op (scale 1), so
with biases it is ``old + conv + bias`` like the numpy twin; ``use_relu`` is then numpy's
``maximum`` on the output (oneDNN's ReLU maps NaN to 0, numpy's and dlib's keep it). Backward
primitives only assign: with ``add_to_output`` they write a per-thread scratch buffer that
is then added (plain layout), or their blocked result is reordered onto the destination
with a ``sum`` post-op (``any``). Without it they write the destination directly; every
element is assigned, so a stale (NaN-filled) destination does not leak.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

import numpy as np

from ....tensor import tensor
from . import _api as A
from . import _primitive as P
from . import _state
from . import layout as _mirrors
from ._common import OwnedPD, scratch

__all__ = ["conv_forward", "conv_backward_data", "conv_backward_filters", "layout_mode",
           "chosen_layouts", "clear_cache", "FEW_CHANNELS"]

FEW_CHANNELS = 8
KEPT_COPIES = 8         # blocked copies of filters kept per pass and geometry (``_Conv._copy``)
LAYOUT_ENV = "DNNPY_ONEDNN_LAYOUT"

_E = A.ENUMS
_ARG = A.ARGS
_FWD, _BWD_DATA, _BWD_FILTERS = "conv forward", "conv backward data", "conv backward filters"

# role -> (execution argument, query of its descriptor in the pd)
_ROLES = {
    "src": (_ARG["DNNL_ARG_SRC"], _E["dnnl_query_src_md"]),
    "weights": (_ARG["DNNL_ARG_WEIGHTS"], _E["dnnl_query_weights_md"]),
    "bias": (_ARG["DNNL_ARG_BIAS"], None),
    "dst": (_ARG["DNNL_ARG_DST"], _E["dnnl_query_dst_md"]),
    "diff_src": (_ARG["DNNL_ARG_DIFF_SRC"], _E["dnnl_query_diff_src_md"]),
    "diff_weights": (_ARG["DNNL_ARG_DIFF_WEIGHTS"], _E["dnnl_query_diff_weights_md"]),
    "diff_bias": (_ARG["DNNL_ARG_DIFF_BIAS"], None),
    "diff_dst": (_ARG["DNNL_ARG_DIFF_DST"], _E["dnnl_query_diff_dst_md"]),
}
# per pass: (input roles, output role, optional bias role)
_PASSES = {
    _FWD: (("src", "weights"), "dst", "bias"),
    _BWD_DATA: (("diff_dst", "weights"), "diff_src", None),
    _BWD_FILTERS: (("src", "diff_dst"), "diff_weights", "diff_bias"),
}

_cache = P.Cache(capacity=256)
_layouts = {}              # (pass, geometry) -> "any" | "plain": the auto choice
_layouts_lock = threading.Lock()


def layout_mode() -> str:
    """``any``, ``plain`` or ``auto``, from ``DNNPY_ONEDNN_LAYOUT`` (default ``auto``)."""
    mode = os.environ.get(LAYOUT_ENV, "").strip().lower() or "auto"
    if mode not in ("any", "plain", "auto"):
        raise ValueError(f"{LAYOUT_ENV}={mode!r}: expected any, plain or auto")
    return mode


def chosen_layouts() -> dict:
    """``{(pass, geometry): layout}`` chosen so far by ``auto`` (for tests and reports)."""
    with _layouts_lock:
        return dict(_layouts)


def clear_cache():
    """Drop this thread's prepared primitives and every auto layout choice."""
    _cache.clear()
    with _layouts_lock:
        _layouts.clear()


class _Conv:
    """One pass prepared for one geometry, flags and layout: the primitive, the reorders
    between the caller's NCHW buffers and the primitive's blocked ones, and those blocked
    buffers. ``run(buffers)`` takes ``{role: array}`` (inputs, output, bias if any)."""

    def __init__(self, kind, geom, bias, add, layout):
        self.kind, self.add = kind, add
        self._objs = []          # destroyed in reverse order
        try:
            self._build(kind, geom, bias, add, layout)
        except Exception:
            self.destroy()
            raise

    def _own(self, obj):
        self._objs.append(obj)
        return obj

    def _pd(self, create, *args):
        pd = A.api().new(create, *args)
        self._objs.append(OwnedPD(pd))
        return pd

    def _build(self, kind, geom, bias, add, layout):
        api = A.api()
        n, c, h, w, k, r, s, ho, wo, sy, sx, py, px = geom
        shapes = {"src": (n, c, h, w), "diff_src": (n, c, h, w), "weights": (k, c, r, s),
                  "diff_weights": (k, c, r, s), "dst": (n, k, ho, wo), "diff_dst": (n, k, ho, wo)}
        tag = _E["dnnl_format_tag_any"] if layout == "any" else _E["dnnl_abcd"]
        x_md, w_md, y_md = (self._own(P.MemoryDesc(sh, tag)).handle
                            for sh in ((n, c, h, w), (k, c, r, s), (n, k, ho, wo)))
        plain = {role: self._own(P.plain(sh)).handle for role, sh in shapes.items()}
        b_md = self._own(P.plain((k,))).handle if bias else None
        conv_args = (A.dims(sy, sx), A.dims(0, 0), A.dims(py, px),
                     A.dims((ho - 1) * sy + r - h - py, (wo - 1) * sx + s - w - px))
        alg, e = _E["dnnl_convolution_direct"], P.engine()
        inputs, out_role, bias_role = _PASSES[kind]
        main_sum = False
        if kind == _FWD:
            def forward(with_sum):
                attr = P.Attr(*((("sum", 1.0),) if with_sum else ()))
                try:
                    return A.api().new("dnnl_convolution_forward_primitive_desc_create", e,
                                       _E["dnnl_forward_training"], alg, x_md, w_md, b_md, y_md,
                                       *conv_args, attr.handle)
                finally:
                    attr.destroy()
            # the sum post-op goes into the conv when the conv writes the caller's buffer
            # (plain dst); otherwise the reorder out adds
            main_sum = add and layout == "plain"
            pd = forward(main_sum)
            if add and not main_sum and P.same_md(api.dnnl_primitive_desc_query_md(
                    pd, _E["dnnl_query_dst_md"], 0), plain["dst"]):
                api.dnnl_primitive_desc_destroy(pd)
                main_sum, pd = True, forward(True)
        else:
            hint = self._pd("dnnl_convolution_forward_primitive_desc_create", e,
                            _E["dnnl_forward_training"], alg, x_md, w_md,
                            b_md if kind == _BWD_FILTERS else None, y_md, *conv_args, None)
            if kind == _BWD_DATA:
                pd = api.new("dnnl_convolution_backward_data_primitive_desc_create", e, alg,
                             x_md, w_md, y_md, *conv_args, hint, None)
            else:
                pd = api.new("dnnl_convolution_backward_weights_primitive_desc_create", e, alg,
                             x_md, w_md, b_md, y_md, *conv_args, hint, None)
        # the descriptors the primitive chose, and which of them differ from NCHW
        try:
            chosen = {role: api.dnnl_primitive_desc_query_md(pd, _ROLES[role][1], 0)
                      for role in inputs + (out_role,)}
            blocked = {role for role, md in chosen.items() if not P.same_md(md, plain[role])}
        except Exception:
            api.dnnl_primitive_desc_destroy(pd)
            raise
        external = {_ROLES[role][0]: _ROLES[role][1] for role in chosen}
        if bias:
            external[_ROLES[bias_role][0]] = P.Borrowed(b_md)
        self.prim = self._own(P.Primitive(pd, external))
        self.impl = self.prim.impl()
        # blocked buffers and the reorders around the primitive
        self._inputs = inputs
        self._md = {role: chosen[role] for role in blocked}   # borrowed from the pd
        self._sizes = {role: api.dnnl_memory_desc_get_size(chosen[role]) for role in blocked}
        self._copies = {}        # input role -> {stamp key: (storage ref, blocked copy)} (``_copy``)
        self._reorder_in = {}    # input role -> reorder NCHW -> blocked
        self._post = None        # reorder blocked -> NCHW, for an output with no mirror
        for role in blocked:
            if role != out_role:
                self._reorder_in[role] = self._own(P.Reorder(plain[role], chosen[role]))
        if out_role in blocked:
            # the blocked result, when it is not written into out's mirror
            buf = self._own(_Buffer(_mirrors.aligned(self._sizes[out_role])))
            self._out_address = P.pointer(buf.array)
            self._out_floats = buf.array.view(np.float32)
        self.out_role, self.bias_role = out_role, (bias_role if bias else None)
        if out_role in blocked:
            self._post = self._own(P.Reorder(chosen[out_role], plain[out_role],
                                             add and not main_sum))
            self._scratch_add = False
        else:
            # a plain output the primitive cannot accumulate into: scratch, then +=
            self._scratch_add = add and not main_sum
        self.out_shape = shapes[out_role]

    def run(self, inputs, out, bias=None, relu=False):
        """Execute: ``inputs`` ``{role: tensor}`` are read, ``out`` (a tensor) is assigned
        or added to per this object's flags, ``bias`` (a float32 array) added, then ReLU
        (numpy's ``maximum``: it keeps NaN) when asked. A blocked input is taken from the
        tensor's layout mirror when that holds it, otherwise reordered into the mirror
        (kept for the next op reading that layout); a blocked output is left in ``out``'s
        mirror (``layout.py``), or added there when ``out``'s values are in it."""
        args = {}
        for role in self._inputs:
            t = inputs[role]
            md = self._md.get(role)
            if md is None:
                args[role] = t.host_read()
                continue
            m = _mirrors.in_layout(t, md)
            args[role] = m.address if m is not None else self._copy(role, t)
        if bias is not None:
            args[self.bias_role] = bias
        mirror = None
        if self._post is not None:
            md = self._md[self.out_role]
            # added to: where out's values are blocked in this layout, added there
            mirror = (None if not out.writable() else _mirrors.current(out, md) if self.add
                      else _mirrors.fresh_output(out, md))
        if mirror is not None and self.add:
            args[self.out_role] = self._out_address
        elif mirror is not None:
            args[self.out_role] = mirror.address
        elif self._post is not None:
            args[self.out_role] = self._out_address
        else:
            dest = out.host() if self.add else out.host_write_only()
            args[self.out_role] = (scratch("conv_result", self.out_shape) if self._scratch_add
                                   else dest)
        self.prim({_ROLES[role][0]: buf for role, buf in args.items()})
        if mirror is not None:
            if self.add:
                np.add(mirror.floats, self._out_floats, out=mirror.floats)
            if relu:
                np.maximum(mirror.floats, 0, out=mirror.floats)
            out.set_layout_mirror(mirror, host_current=False)
            return
        if self._post is not None:
            dest = out.host() if self.add else out.host_write_only()
            self._post({_ARG["DNNL_ARG_FROM"]: self._out_address, _ARG["DNNL_ARG_TO"]: dest})
        elif self._scratch_add:
            dest += args[self.out_role]
        if relu:
            np.maximum(dest, 0, out=dest)

    def _copy(self, role, t):
        """The address of ``t`` reordered into this pass's layout for ``role``, for a tensor
        that cannot have a mirror (filters: a window into the parameters). The copies of the
        last few tensors are kept while nothing writes them (``write_stamp``), so inference
        reorders its filters once, also where layers of one geometry share this object. A
        write replaces the tensor's copy; a copy holds no reference to the storage."""
        copies = self._copies.setdefault(role, OrderedDict())
        storage, *view = t.write_stamp()
        key = (id(storage), *view)              # (storage, offset, shape, generation)
        kept = copies.get(key)
        if kept is not None and kept[0]() is storage:
            copies.move_to_end(key)
            return P.pointer(kept[1])
        # this tensor's older copy, a dead storage's or the oldest: its buffer is reused
        old = [k for k, (ref, _) in copies.items() if k[:3] == key[:3] or ref() is None]
        if old or len(copies) >= KEPT_COPIES:
            buf = copies.pop(old[0] if old else next(iter(copies)))[1]
        else:
            buf = _mirrors.aligned(self._sizes[role])
        self._reorder_in[role]({_ARG["DNNL_ARG_FROM"]: t.host_read(),
                                _ARG["DNNL_ARG_TO"]: P.pointer(buf)})
        copies[key] = (weakref.ref(storage), buf)
        return P.pointer(buf)

    def destroy(self):
        self._copies = {}
        objs, self._objs = self._objs, []
        for obj in reversed(objs):
            obj.destroy()


class _Buffer:
    """A blocked intermediate owned by a ``_Conv``."""

    def __init__(self, array):
        self.array = array

    def destroy(self):
        self.array = None


# ----------------------------------------------------------------------------------------
# building, refusing and choosing the layout

def _refused(e):
    return isinstance(e, A.DnnlError) and e.name in ("unimplemented", "invalid_arguments")


def _describe(geom):
    n, c, h, w, k, r, s, ho, wo, sy, sx, py, px = geom
    return f"x {n}x{c}x{h}x{w} w {k}x{c}x{r}x{s} s({sy},{sx}) p({py},{px}) -> {ho}x{wo}"


def _try_build(kind, geom, flags, layout):
    """A ``_Conv`` or the reason oneDNN refuses it (a string)."""
    try:
        return _Conv(kind, geom, *flags, layout)
    except A.DnnlError as e:
        if not _refused(e):
            raise
        return f"{layout}: {e}"


def _build(kind, geom, flags, layout):
    op = _try_build(kind, geom, flags, layout)
    if isinstance(op, str):
        _state.note_fallback(kind, _describe(geom), op)
        return None
    return op


def _choose(kind, geom, flags):
    """``(layout, op)`` for a geometry met first, by the rule in the module docstring (op
    None when oneDNN refuses both layouts)."""
    first = "plain" if kind == _BWD_DATA and geom[1] < FEW_CHANNELS else "any"
    second = "any" if first == "plain" else "plain"
    op = _try_build(kind, geom, flags, first)
    winner = first
    if isinstance(op, str):
        other = _try_build(kind, geom, flags, second)
        if isinstance(other, str):
            with _layouts_lock:
                _layouts[(kind, geom)] = first
            _state.note_fallback(kind, _describe(geom), f"{op}; {other}")
            return first, None
        winner, op = second, other
    with _layouts_lock:
        _layouts[(kind, geom)] = winner
    return winner, op


def _work(geom):
    """The multiply-adds of each pass (forward, data and filter gradients alike), in
    element-equivalents (``_primitive.SERIAL_WORK``)."""
    n, c, h, w, k, r, s, ho, wo = geom[:9]
    return n * k * ho * wo * c * r * s * P.MAC_WORK


def _op(kind, geom, flags):
    """The prepared ``_Conv`` for this call, or None when numpy must run it."""
    mode = layout_mode()
    serial = P.is_serial(_work(geom))
    if mode == "auto":
        layout = _layouts.get((kind, geom))
        if layout is None:
            with P.building(serial):
                layout, op = _choose(kind, geom, flags)
            got = _cache.get((kind, geom, flags, layout), lambda: op, serial)
            if got is not op and op is not None:
                op.destroy()   # another call of this thread prepared it meanwhile
            return got
    else:
        layout = mode
    return _cache.get((kind, geom, flags, layout), lambda: _build(kind, geom, flags, layout),
                      serial)


def _geometry(x_shape, w_shape, y_shape, sy, sx, py, px):
    n, c, h, w = x_shape
    k, _, r, s = w_shape
    return (n, c, h, w, k, r, s, y_shape[2], y_shape[3], int(sy), int(sx), int(py), int(px))


def _usable(*tensors):
    """Non-empty float32 dnnpy tensors (a duck-typed stand-in runs on numpy)."""
    return all(isinstance(t, tensor) and t.dtype == np.float32 and t.size() for t in tensors)


# ----------------------------------------------------------------------------------------
# the twin's entry points

def conv_forward(add_to_output, output, data, filters, stride_y, stride_x, padding_y,
                 padding_x, biases=None, use_relu=False) -> bool:
    """``output (+)= conv(data, filters)`` then ``+ biases`` (fused) and ReLU if asked;
    False when numpy must run it."""
    if not _state.active():
        return False
    if not _usable(data, filters, output, *(() if biases is None else (biases,))):
        return False
    geom = _geometry(data.shape, filters.shape, output.shape, stride_y, stride_x, padding_y,
                     padding_x)
    # no fused ReLU post-op: oneDNN's ReLU maps NaN to 0, which would hide a diverging net;
    # numpy's maximum (one pass over the output) keeps NaN, as dlib and cuDNN do
    op = _op(_FWD, geom, (biases is not None, bool(add_to_output)))
    if op is None:
        return False
    op.run({"src": data, "weights": filters}, output,
           None if biases is None else biases.host_read().reshape(-1), use_relu)
    return True


def conv_backward_data(add_to_output, gradient_input, filters, data_gradient, stride_y,
                       stride_x, padding_y, padding_x) -> bool:
    """``data_gradient (+)=`` the data gradient; False when numpy must run it."""
    if not _state.active():
        return False
    if not _usable(gradient_input, filters, data_gradient):
        return False
    geom = _geometry(data_gradient.shape, filters.shape, gradient_input.shape, stride_y,
                     stride_x, padding_y, padding_x)
    op = _op(_BWD_DATA, geom, (False, bool(add_to_output)))
    if op is None:
        return False
    op.run({"diff_dst": gradient_input, "weights": filters}, data_gradient)
    return True


def conv_backward_filters(add_to_output, gradient_input, data, filters_gradient, stride_y,
                          stride_x, padding_y, padding_x, bias_gradient=None) -> bool:
    """``filters_gradient (+)=`` the filter gradient and, when given, ``bias_gradient =``
    the bias gradient (always assigned); False when numpy must run it."""
    if not _state.active():
        return False
    if not _usable(gradient_input, data, filters_gradient,
                   *(() if bias_gradient is None else (bias_gradient,))):
        return False
    geom = _geometry(data.shape, filters_gradient.shape, gradient_input.shape, stride_y,
                     stride_x, padding_y, padding_x)
    op = _op(_BWD_FILTERS, geom, (bias_gradient is not None, bool(add_to_output)))
    if op is None:
        return False
    op.run({"src": data, "diff_dst": gradient_input}, filters_gradient,
           None if bias_gradient is None else bias_gradient.host_write_only().reshape(-1))
    return True
