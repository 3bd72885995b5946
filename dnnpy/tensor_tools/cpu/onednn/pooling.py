"""oneDNN's max and average pooling, forward and backward, for the CPU twin.

dlib's semantics map exactly: the output size is dlib's floor, which makes oneDNN's right
padding ``(Ho-1)*s + window - H - pad`` possibly negative (oneDNN accepts it); average
pooling excludes the padding from each window's count (``pooling_avg_exclude_padding``);
padding never wins a max; a tied max window sends its gradient to its first maximum in
row-major order, as dlib's ``max_point`` (checked in tests/test_onednn_ops.py). Results are
bit-identical to numpy's for finite inputs. NaN would differ: oneDNN's max ignores NaNs (a
window's max is that of its other pixels, which gets the gradient), numpy's propagates
them (NaN out, gradient to the window's first pixel), and a window of -inf gives -FLT_MAX
(numpy: -inf). A NaN that max pooling swallowed would hide a diverging net, so max pooling
checks its input (its minimum and maximum, a few percent of the op) and hands an input holding NaN or an
infinity to numpy, forward and backward.

Where the source's values are blocked (a convolution's output kept in its layout,
``layout.py``), both passes run in that layout and leave their results blocked.

Max pooling's backward needs the forward's workspace (the argmax of each window, one byte
per output here). ``tt.pooling`` owns a ``state`` dict and passes it to both calls: the
forward keeps the workspace there with ``src.write_stamp()``; the backward uses it only if
the stamp still matches (same view, not written since), otherwise re-runs the forward into
scratch to rebuild it (about 2x the backward's cost, still far below numpy's).
"""

from __future__ import annotations

import numpy as np

from . import _api as A
from . import _primitive as P
from ._common import OwnedPD, assign_or_add, cached, float32_tensors, has_non_finite, scratch
from ._state import active
from .layout import Mirror, channel_tag, current, fresh_output, in_layout

__all__ = ["pooling_forward", "pooling_backward"]

_SRC, _DST, _WS = A.ARGS["DNNL_ARG_SRC"], A.ARGS["DNNL_ARG_DST"], A.ARGS["DNNL_ARG_WORKSPACE"]
_DIFF_SRC, _DIFF_DST = A.ARGS["DNNL_ARG_DIFF_SRC"], A.ARGS["DNNL_ARG_DIFF_DST"]
_STATE_KEY = "onednn_max_pool_workspace"
_cache = P.Cache()


def _geometry(src_shape, dst_shape, wh, ww, sy, sx, py, px):
    """(strides, kernel, dilation, padding_l, padding_r) as ``dnnl_dims_t``."""
    h, w = src_shape[2:]
    ho, wo = dst_shape[2:]
    pr_y = (ho - 1) * sy + wh - h - py       # may be negative: dlib's floor output size
    pr_x = (wo - 1) * sx + ww - w - px
    return (A.dims(sy, sx), A.dims(wh, ww), A.dims(0, 0), A.dims(py, px), A.dims(pr_y, pr_x))


def _alg(do_max):
    return A.ENUMS["dnnl_pooling_max" if do_max else "dnnl_pooling_avg_exclude_padding"]


def _forward_pd(src_md, dst_md, do_max, training, geometry):
    prop = A.ENUMS["dnnl_forward_training" if training else "dnnl_forward_inference"]
    return A.api().new("dnnl_pooling_forward_primitive_desc_create", P.engine(), prop,
                       _alg(do_max), src_md.handle, dst_md.handle, *geometry, None)


def _mds(src_shape, dst_shape, lanes):
    """The source and destination descriptors: NCHW, or ``nChw{lanes}c`` blocked."""
    tag = channel_tag(lanes)
    return P.MemoryDesc(src_shape, tag), P.MemoryDesc(dst_shape, tag)


def _build_forward(src_shape, dst_shape, do_max, training, window, lanes=0):
    src_md, dst_md = _mds(src_shape, dst_shape, lanes)
    try:
        pd = _forward_pd(src_md, dst_md, do_max, training, _geometry(src_shape, dst_shape, *window))
    except Exception:
        src_md.destroy()
        dst_md.destroy()
        raise
    external = {_SRC: src_md, _DST: dst_md}
    if do_max and training:
        external[_WS] = A.ENUMS["dnnl_query_workspace_md"]
    prim = P.Primitive(pd, external, owned=[src_md, dst_md])
    prim.dst_md = dst_md.handle       # for the mirror of a blocked output
    prim.workspace_bytes = (A.api().dnnl_memory_desc_get_size(
        prim.query_md(A.ENUMS["dnnl_query_workspace_md"])) if do_max and training else 0)
    return prim


def _build_backward(src_shape, dst_shape, do_max, window, lanes=0):
    src_md, dst_md = _mds(src_shape, dst_shape, lanes)
    geometry = _geometry(src_shape, dst_shape, *window)
    hint = None
    try:
        hint = OwnedPD(_forward_pd(src_md, dst_md, do_max, True, geometry))
        pd = A.api().new("dnnl_pooling_backward_primitive_desc_create", P.engine(),
                         _alg(do_max), src_md.handle, dst_md.handle, *geometry, hint.handle, None)
    except Exception:
        for o in (src_md, dst_md, hint):
            if o is not None:
                o.destroy()
        raise
    external = {_DIFF_DST: dst_md, _DIFF_SRC: src_md}
    if do_max:
        external[_WS] = A.ENUMS["dnnl_query_workspace_md"]
    prim = P.Primitive(pd, external, owned=[src_md, dst_md, hint])
    prim.src_md, prim.dst_md = src_md.handle, dst_md.handle     # the forward's descriptors
    return prim


def _work(dst_shape, window):
    """Elements visited: each output reads its window."""
    return int(np.prod(dst_shape)) * window[0] * window[1]


def _forward_prim(src_shape, dst_shape, do_max, training, window, lanes=0):
    return cached(_cache, ("pooling_forward", src_shape, dst_shape, do_max, training, window, lanes),
                  lambda: _build_forward(src_shape, dst_shape, do_max, training, window, lanes),
                  work=_work(dst_shape, window))


def pooling_forward(dest, src, do_max, wh, ww, sy, sx, py, px, state=None) -> bool:
    """dlib's pooling forward into ``dest`` (already sized); with ``state`` (a dict owned by
    ``tt.pooling``) max pooling keeps its workspace there for the backward. On blocked
    values where ``src`` has them (``layout.py``), the result left blocked in ``dest``."""
    if not active() or not float32_tensors(dest) or src.size() == 0:
        return False
    window = (wh, ww, sy, sx, py, px)
    # blocked when src's values are and dest can hold blocked values (fresh_output's terms)
    m = current_blocked(src) if dest.covers_storage() and dest.writable() else None
    x = m.floats if m is not None else src.host_read()
    if m is None and not P.f32_contiguous(x):
        return False
    if do_max and has_non_finite(x):
        if state is not None:
            state[_STATE_KEY] = None
        return False
    lanes = m.lanes() if m is not None else 0
    training = do_max and state is not None
    prim = _forward_prim(src.shape, dest.shape, do_max, training, window, lanes)
    if prim is None:
        return False
    out_mirror = fresh_output(dest, prim.dst_md) if lanes else None
    src_buf = m.address if lanes else x
    out = out_mirror.address if lanes else dest.host_write_only()
    if not training:
        prim({_SRC: src_buf, _DST: out})
    else:
        kept = state.get(_STATE_KEY)
        ws = kept[2] if kept is not None and kept[2].size == prim.workspace_bytes else \
            np.empty(prim.workspace_bytes, np.uint8)
        state[_STATE_KEY] = None          # invalid while being rewritten
        prim({_SRC: src_buf, _DST: out, _WS: ws})
    if lanes:
        dest.set_layout_mirror(out_mirror, host_current=False)
    if training:
        state[_STATE_KEY] = ((src.shape, dest.shape, window, lanes), src.write_stamp(), ws)
    return True


def current_blocked(t):
    """``t``'s current mirror when it holds ``t``'s shape channel-blocked
    (``Mirror.lanes``), else None."""
    m = t.layout_mirror()
    return m if type(m) is Mirror and m.shape == t.shape and m.lanes() else None


def _workspace(state, src, x, dst_shape, window, lanes):
    """The max-pool workspace of ``src`` from ``state`` if it is current, else recomputed
    into scratch by a training forward whose output is discarded. ``x``: the values
    (blocked when ``lanes``: the mirror's floats)."""
    kept = state.get(_STATE_KEY) if state is not None else None
    if (kept is not None and kept[0] == (src.shape, dst_shape, window, lanes)
            and kept[1] == src.write_stamp()):
        return kept[2]
    if has_non_finite(x):
        return None
    prim = _forward_prim(src.shape, dst_shape, True, True, window, lanes)
    if prim is None:
        return None
    ws = scratch("pooling_workspace", (prim.workspace_bytes,), np.uint8)
    dst = scratch("pooling_dst", (A.api().dnnl_memory_desc_get_size(prim.dst_md) // 4,))
    prim({_SRC: x, _DST: dst, _WS: ws})
    return ws


def pooling_backward(gradient_input, dest, src, grad, do_max, wh, ww, sy, sx, py, px,
                     add_to=True, state=None) -> bool:
    """dlib's pooling gradient: added to ``grad`` (assigned when ``add_to`` is False). On
    blocked values where ``src`` has them (the gradients are taken in its layout)."""
    if not active() or not float32_tensors(grad) or src.size() == 0:
        return False
    window = (wh, ww, sy, sx, py, px)
    m = current_blocked(src)
    if m is not None and _blocked_backward(gradient_input, src, grad, do_max, window, add_to,
                                           state, m):
        return True
    x = src.host_read()
    gi = gradient_input.host_read()
    if not P.f32_contiguous(x, gi):
        return False
    key = ("pooling_backward", x.shape, gi.shape, do_max, window, 0)
    prim = cached(_cache, key, lambda: _build_backward(x.shape, gi.shape, do_max, window),
                  work=_work(gi.shape, window))
    if prim is None:
        return False
    buffers = {_DIFF_DST: gi}
    if do_max:
        ws = _workspace(state, src, x, gi.shape, window, 0)
        if ws is None:
            return False
        buffers[_WS] = ws
    assign_or_add(prim, buffers, _DIFF_SRC, grad.host() if add_to else grad.host_write_only(),
                  add_to, "pooling_backward")
    return True


def _blocked_backward(gradient_input, src, grad, do_max, window, add_to, state, m):
    """The gradient on ``src``'s blocked values ``m``: ``gradient_input`` taken in the
    matching layout (reordered into it if need be), ``grad`` written or added to blocked.
    False when a tensor cannot (then the NCHW route runs)."""
    lanes = m.lanes()
    key = ("pooling_backward", src.shape, gradient_input.shape, do_max, window, lanes)
    prim = cached(_cache, key, lambda: _build_backward(src.shape, gradient_input.shape, do_max,
                                                       window, lanes),
                  work=_work(gradient_input.shape, window))
    if prim is None or grad.is_aliased_with(gradient_input) or grad.is_aliased_with(src):
        return False
    gi = in_layout(gradient_input, prim.dst_md)
    out = current(grad, prim.src_md) if add_to else fresh_output(grad, prim.src_md)
    if gi is None or out is None or not grad.writable():
        return False
    buffers = {_DIFF_DST: gi.address}
    if do_max:
        ws = _workspace(state, src, m.floats, gradient_input.shape, window, lanes)
        if ws is None:
            return False
        buffers[_WS] = ws
    assign_or_add(prim, buffers, _DIFF_SRC, out.floats, add_to, "pooling_backward")
    grad.set_layout_mirror(out, host_current=False)
    return True
