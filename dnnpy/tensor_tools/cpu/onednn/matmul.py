"""oneDNN's matmul for the CPU twin's ``gemm`` (dlib's ``tt::gemm`` in CHANNEL_WISE mode,
float32): ``dest = alpha*op(lhs) @ op(rhs) + beta*dest`` on the ``num_samples x rest``
matrix views.

The point is less speed (OpenBLAS is as fast at fc sizes) than threads: after a
multi-threaded OpenBLAS GEMM, its worker spins ~0.1 s and starves oneDNN's OpenMP threads on
a small machine, so a training step should make no OpenBLAS call. Transposes are format
tags on the operand descriptors (``ba``: the stored matrix read transposed); ``beta != 0``
is a sum post-op (``dst = beta*dst + result``); ``beta == 0`` does not read dest (a
NaN-filled dest does not leak). ``alpha != 1`` and PLANE_WISE mode
run on numpy.
"""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from . import _api as A
from . import _primitive as P
from ._common import cached
from ._state import active

__all__ = ["gemm", "matmul_arrays"]

_SRC, _WEI, _DST = A.ARGS["DNNL_ARG_SRC"], A.ARGS["DNNL_ARG_WEIGHTS"], A.ARGS["DNNL_ARG_DST"]
_AB, _BA = A.ENUMS["dnnl_ab"], A.ENUMS["dnnl_ba"]
_RUNTIME = -(1 << 63)            # DNNL_RUNTIME_DIM_VAL: a size given at execution
_cache = P.Cache()


def _build(m, k, n, trans_lhs, trans_rhs, beta):
    a = P.MemoryDesc((m, k), _BA if trans_lhs else _AB)
    b = P.MemoryDesc((k, n), _BA if trans_rhs else _AB)
    c = P.plain((m, n))
    attr = P.Attr(("sum", beta)) if beta != 0 else None
    owned = [a, b, c] + ([attr] if attr is not None else [])
    try:
        pd = A.api().new("dnnl_matmul_primitive_desc_create", P.engine(), a.handle, b.handle,
                         None, c.handle, attr.handle if attr is not None else None)
    except Exception:
        for o in owned:
            o.destroy()
        raise
    return P.Primitive(pd, {_SRC: a, _WEI: b, _DST: c}, owned=owned)


def _matrix(t):
    n = t.num_samples()
    return n, t.size() // n if n else 0


def gemm(beta, dest, alpha, lhs, trans_lhs, rhs, trans_rhs, mode=0) -> bool:
    """The twin's ``gemm`` through oneDNN; False when numpy must run (PLANE_WISE, alpha != 1,
    not float32, an empty matrix, dest sharing memory with an operand)."""
    if mode != 0 or alpha != 1 or not active():
        return False
    if dest.is_aliased_with(lhs) or dest.is_aliased_with(rhs):
        return False
    x, w = lhs.host_read(), rhs.host_read()
    if not P.f32_contiguous(x, w, dest.host_read()):
        return False
    (m, k), (n2, n) = _matrix(lhs), _matrix(rhs)
    if trans_lhs:
        m, k = k, m
    if trans_rhs:
        n2, n = n, n2
    if m == 0 or k == 0 or n == 0:
        return False
    prim = _primitive(m, k, n, bool(trans_lhs), bool(trans_rhs), float(beta))
    if prim is None:
        return False
    out = dest.host() if beta != 0 else dest.host_write_only()
    prim({_SRC: x, _WEI: w, _DST: out})
    return True


def matmul_arrays(lhs, rhs, out, trans_rhs=False) -> bool:
    """``out[...] = lhs @ (rhs.T if trans_rhs else rhs)`` through oneDNN, for numpy's C-contiguous
    float32 matrices (``out`` sharing no memory with the operands): for dnnpy's numpy code
    outside the tensor ops (the HOG detectors' filter banks), so that it makes no
    multi-threaded OpenBLAS call either. False when numpy must run (oneDNN unusable, other
    dtypes, layouts or shapes, an empty matrix)."""
    if not active() or lhs.ndim != 2 or rhs.ndim != 2 or out.ndim != 2:
        return False
    if not P.f32_contiguous(lhs, rhs, out) or np.shares_memory(out, lhs) or np.shares_memory(out, rhs):
        return False
    (m, k), n = lhs.shape, rhs.shape[0] if trans_rhs else rhs.shape[1]
    if (rhs.shape[1] if trans_rhs else rhs.shape[0]) != k or out.shape != (m, n) or 0 in (m, k, n):
        return False
    prim = cached(_cache, ("matmul_arrays", m, k, bool(trans_rhs)),
                  lambda: _AnyColumns(m, k, bool(trans_rhs)))
    if prim is None:
        return False
    prim(lhs, rhs, out)
    return True


class _AnyColumns:
    """A matmul primitive for ``(m, k) @ (k, n)``, the right operand stored ``(k, n)`` or
    ``(n, k)`` (read transposed), whose ``n`` is given at each call (oneDNN's run-time
    dimensions, ``DNNL_RUNTIME_DIM_VAL``). One primitive serves every ``n``: the HOG scan's
    ``n`` is a pyramid level's cell count, new with every image size, and a primitive per
    size cost 0.85 ms of JIT, 11 ms a photo of a new size on the 2-core VM (the run-time
    kernel, ``gemm:jit``, runs as fast as the per-size one, or faster). Each call binds
    memory objects of the call's sizes (about 20 us)."""

    def __init__(self, m, k, trans_rhs):
        self.m, self.k, self.trans_rhs = m, k, trans_rhs
        owned = []
        try:
            for shape, strides in (((m, k), (k, 1)), ((k, _RUNTIME), (1, k) if trans_rhs else (_RUNTIME, 1)),
                                   ((m, _RUNTIME), (_RUNTIME, 1))):
                owned.append(P.MemoryDesc(shape, strides=strides))
            pd = A.api().new("dnnl_matmul_primitive_desc_create", P.engine(),
                             *[md.handle for md in owned[:2]], None, owned[2].handle, None)
        except Exception:
            for md in owned:
                md.destroy()
            raise
        self.lhs = owned[0]
        # no memory objects of its own: each call binds those of its sizes. It is created for
        # the whole OpenMP pool and small calls run on one thread: fewer threads at execution
        # than at creation is what oneDNN allows (its gemm-based matmul, the one it picks for
        # run-time sizes, reads the count at execution)
        self.prim = P.Primitive(pd, {}, owned=owned)

    def __call__(self, lhs, rhs, out):
        api, e = A.api(), P.engine()
        m, k, n = self.m, self.k, out.shape[1]
        descs, mems = [], []
        try:
            descs.append(P.MemoryDesc((k, n), strides=(1, k) if self.trans_rhs else (n, 1)))
            descs.append(P.plain((m, n)))
            for md, array in ((self.lhs, lhs), (descs[0], rhs), (descs[1], out)):
                mems.append(api.new("dnnl_memory_create", md.handle, e, ctypes.c_void_p(P.pointer(array))))
            args = (A.ExecArg * 3)(*[A.ExecArg(arg, mem) for arg, mem in zip((_SRC, _WEI, _DST), mems)])
            s = P.stream()
            with P.one_thread() if P.is_serial(m * k * n * P.MAC_WORK) else contextlib.nullcontext():
                api.dnnl_primitive_execute(self.prim.handle, s, 3, args)
                api.dnnl_stream_wait(s)
        finally:
            for mem in mems:
                api.dnnl_memory_destroy(mem)
            for md in descs:
                md.destroy()

    def destroy(self):
        self.prim.destroy()


def _primitive(m, k, n, trans_lhs, trans_rhs, beta):
    """The cached matmul primitive for these sizes, or None when oneDNN refuses them."""
    return cached(_cache, ("gemm", m, k, n, trans_lhs, trans_rhs, beta),
                  lambda: _build(m, k, n, trans_lhs, trans_rhs, beta), work=m * k * n * P.MAC_WORK)
