"""Running one case through dnnpy and through the compiled driver, and comparing what they
produce (the tolerances are explained in ``test_dlib_parity.py``'s docstring)."""

from __future__ import annotations

import dataclasses
import os
import subprocess

import numpy as np

import dnnpy
from dnnpy.serialization import Reader, Writer, read_net, write_net

from blob import BlobReader, BlobWriter

LR = 0.01
SGD = dict(weight_decay=0.0005, momentum=0.9)
ADAM = dict(weight_decay=0.0005, momentum1=0.9, momentum2=0.999)

# |dnnpy - dlib| <= RTOL * max|dlib| + ATOL per tensor, and RTOL * max(1, |dlib|) + ATOL per
# scalar (see the module docstring of test_dlib_parity.py for why these values)
RTOL = 2.0 ** -14
ATOL = 0.0


# ----------------------------------------------------------------------------------------
# dlib bytes

def dlib_bytes(net) -> bytes:
    """The bytes dlib's ``serialize(net, out)`` writes for ``net`` (dnnpy's dlib layout)."""
    w = Writer()
    write_net(w, net)
    return w.bytes()


def read_into(net, data: bytes):
    r = Reader(data, "dlib file")
    read_net(r, net)
    assert r.at_end(), f"{len(data) - r.pos} bytes left after reading the net"
    return net


class Recorder(Writer):
    """A Writer that also records what it writes, one token per call made by a serialize
    method: ``(kind, value)``; tensors are recorded as ``("tensor", (shape, array, obj))``."""

    def __init__(self):
        super().__init__()
        self.tokens = []
        self._depth = 0

    def _rec(self, kind, value, write, *args):
        self._depth += 1
        try:
            if self._depth == 1:
                self.tokens.append((kind, value))
            write(self, *args)
        finally:
            self._depth -= 1

    def int(self, v):
        self._rec("int", int(v), Writer.int, v)

    def uint(self, v):
        self._rec("int", int(v), Writer.int, v)

    def byte(self, v):
        self._rec("byte", int(v) & 0xFF, Writer.byte, v)

    def bool(self, v):
        self._rec("bool", bool(v), Writer.bool, v)

    def float32(self, v):
        self._rec("float32", float(np.float32(v)), Writer.float32, v)

    def float64(self, v):
        self._rec("float64", float(v), Writer.float64, v)

    def string(self, s):
        self._rec("string", s if isinstance(s, str) else bytes(s).decode(), Writer.string, s)

    def raw(self, data):
        self._rec("raw", bytes(data), Writer.raw, data)

    def alias(self, a):
        self._rec("alias", tuple(a.shape), Writer.alias, a)

    def tensor(self, t):
        if self._depth == 0:
            arr = np.array(t.host_read(), dtype=np.float32).reshape(t.shape) if t.size() else \
                np.zeros(t.shape, np.float32)
            self.tokens.append(("tensor", (tuple(t.shape), arr, t)))
        self._depth += 1
        try:
            Writer.tensor(self, t)
        finally:
            self._depth -= 1


def tokens_of(net):
    w = Recorder()
    write_net(w, net)
    return w.tokens


# ----------------------------------------------------------------------------------------
# comparisons

@dataclasses.dataclass
class Errors:
    """The largest differences seen by one check."""
    max_abs: float = 0.0
    max_rel: float = 0.0      # |a - b| / max|b| of the tensor
    worst: str = ""

    def add(self, a, b, where):
        a = np.atleast_1d(np.asarray(a, np.float64))
        b = np.atleast_1d(np.asarray(b, np.float64))
        if a.size == 0:
            return
        d = np.abs(a - b)
        d[np.isnan(d) & (np.isnan(a) == np.isnan(b)) & (np.isinf(a) == np.isinf(b))] = 0
        d[np.isinf(a) & (a == b)] = 0
        m = float(np.max(d))
        scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0))
        if b.size == 1:  # a scalar (loss, label value): relative to max(1, |b|), as its tolerance
            scale = max(scale, 1.0)
        rel = m / scale if scale > 0 else (0.0 if m == 0 else np.inf)
        if m > self.max_abs:
            self.max_abs, self.worst = m, where
        self.max_rel = max(self.max_rel, rel)


def allclose_tensor(a, b, where, errors=None, rtol=RTOL, atol=ATOL, tol=None):
    """``|a - b| <= rtol*max|b| + atol`` elementwise (or ``<= tol``, an array or scalar), the
    same shape, and the same NaN / inf positions; a failure message names ``where``."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    assert a.shape == b.shape, f"{where}: shape {a.shape} (dnnpy) != {b.shape} (dlib)"
    if errors is not None:
        errors.add(a, b, where)
    if a.size == 0:
        return
    assert np.array_equal(np.isnan(a), np.isnan(b)), f"{where}: NaNs at different places"
    fin = np.isfinite(b)
    assert np.array_equal(a[~fin & ~np.isnan(b)], b[~fin & ~np.isnan(b)]), f"{where}: infinities differ"
    if tol is None:
        tol = rtol * float(np.max(np.abs(b[fin]), initial=0.0)) + atol
    tol = np.broadcast_to(np.asarray(tol, np.float64), a.shape)
    d = np.abs(a - b)
    bad = fin & (d > tol)
    if bad.any():
        i = np.unravel_index(int(np.argmax(np.where(bad, d - tol, -np.inf))), a.shape)
        raise AssertionError(
            f"{where}: {int(bad.sum())} of {a.size} values differ by more than the tolerance; "
            f"worst at {tuple(int(v) for v in i)}: dnnpy {a[i]!r}, dlib {b[i]!r}, |diff| {d[i]:.3g} > "
            f"tol {tol[i]:.3g} (max|dlib| {float(np.max(np.abs(b[fin]), initial=0)):.3g})")


def compare_tokens(py_tokens, dl_tokens, what, errors=None, tensor_tol=None):
    """Everything but tensors equal; tensors within tolerance (``tensor_tol(index, obj)``
    may return a per-element tolerance for dnnpy's tensor object ``obj``)."""
    assert len(py_tokens) == len(dl_tokens), (
        f"{what}: dnnpy writes {len(py_tokens)} fields, dlib {len(dl_tokens)}")
    layer = "?"
    for i, ((kp, vp), (kd, vd)) in enumerate(zip(py_tokens, dl_tokens)):
        if kp == "string":
            layer = vp
        where = f"{what}: field {i} (after the record {layer!r})"
        assert kp == kd, f"{where}: dnnpy writes a {kp}, dlib a {kd}"
        if kp != "tensor":
            assert vp == vd or (vp != vp and vd != vd), f"{where}: dnnpy {vp!r}, dlib {vd!r}"
            continue
        (sp, ap, obj), (sd, ad, _) = vp, vd
        assert sp == sd, f"{where}: tensor shape {sp} (dnnpy) != {sd} (dlib)"
        tol = tensor_tol(i, obj) if tensor_tol is not None else None
        allclose_tensor(ap, ad, f"{where}: tensor{sp}", errors, tol=tol)


def skeleton(tokens):
    """The tokens with tensor values dropped (the shapes kept)."""
    return [(k, v[0] if k == "tensor" else v) for k, v in tokens]


def adam_tolerance(params, grad, lr):
    """Per-element bound on |dnnpy - dlib| of the parameters after one adam step from the same
    parameters, when the two gradients may differ by the gradient tolerance ``delta``.

    On the first step adam's update of one element is ``s(g) = -lr*c*g/(c*|g| + 1e-8)``
    (``c = sqrt(1 - beta2)``, ``g`` the gradient plus weight decay), whose slope
    ``lr*c*1e-8/(c*|g| + 1e-8)**2`` is largest (``lr*c/1e-8``, about ``3e6*lr``) at ``g = 0``:
    a gradient that is zero in exact arithmetic and 1e-9 by rounding moves by ``3e-3*lr``, and
    its sign can differ between two correct float32 programs. So the bound is the slope at
    the point of ``[|g| - delta - wd*|p|, |g| + delta]`` nearest 0, times ``delta``, capped
    at ``2*lr`` (the update never exceeds ``lr`` in size), plus the usual tensor tolerance."""
    c = np.sqrt(1 - ADAM["momentum2"])
    g = np.abs(np.asarray(grad, np.float64)).reshape(-1)
    p = np.abs(np.asarray(params, np.float64)).reshape(-1)
    if g.size != p.size:  # no gradient recorded (a layer whose lr multiplier is 0)
        return None
    delta = RTOL * float(np.max(g, initial=0.0)) + ATOL
    gmin = np.maximum(0.0, g - delta - ADAM["weight_decay"] * p)
    slope = lr * c * 1e-8 / (c * gmin + 1e-8) ** 2
    base = RTOL * float(np.max(p, initial=0.0)) + ATOL
    return (base + np.minimum(2 * lr, slope * delta)).reshape(np.shape(params))


# ----------------------------------------------------------------------------------------
# running a case

@dataclasses.dataclass
class Run:
    case: object
    dir: str
    batch: object
    labels: object
    py_bytes: bytes

    def file(self, name) -> bytes:
        with open(os.path.join(self.dir, name), "rb") as f:
            return f.read()

    def exists(self, name):
        return os.path.exists(os.path.join(self.dir, name))

    def forward_result(self, name):
        """(output tensor, labels or None) from fwd.bin / own_fwd.bin / twin_fwd.bin."""
        r = BlobReader(self.file(name))
        out = r.tensor()
        labels = None
        if self.case.kind.get is not None:
            labels = [self.case.kind.get(r) for _ in range(r.count())]
        assert r.at_end()
        return out, labels

    def step_results(self):
        """[(loss, final data gradient)] for sgd then adam, from step.bin."""
        r = BlobReader(self.file("step.bin"))
        out = [(r.f64(), r.tensor()) for _ in range(2)]
        assert r.at_end()
        return out


def run_case(case, driver, workdir) -> Run:
    rng = np.random.default_rng(case.seed)
    # dnnpy's initialisers share one generator: seed it so a case's net does not depend on
    # which cases ran before it
    dnnpy.set_random_seed(case.seed)
    net = case.new_net()
    batch, inputs_blob = case.inputs(rng)
    labels, labels_blob = case.labels(rng) if case.labels is not None else (None, b"")
    forward(net, batch)
    if case.prepare is not None:
        case.prepare(net, rng)
        forward(net, batch)  # the cached outputs are the batch's, as in dlib's own net
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "py.dat")
    dnnpy.serialize(net, path, format="dlib", clean=False)   # caches included, as dlib writes them
    with open(path, "rb") as f:
        py_bytes = f.read()
    for name, data in (("inputs.bin", inputs_blob), ("labels.bin", labels_blob)):
        with open(os.path.join(workdir, name), "wb") as f:
            f.write(data)
    w = BlobWriter()
    w.f64(LR)
    w.f32(SGD["weight_decay"])
    w.f32(SGD["momentum"])
    w.f32(ADAM["weight_decay"])
    w.f32(ADAM["momentum1"])
    w.f32(ADAM["momentum2"])
    w.i64(1 if case.steps else 0)
    with open(os.path.join(workdir, "config.bin"), "wb") as f:
        f.write(w.bytes())
    p = subprocess.run([driver, case.name, workdir], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, f"parity_driver {case.name} failed (exit {p.returncode}):\n{p.stdout}"
    return Run(case, workdir, batch, labels, py_bytes)


def forward(net, batch):
    """Forward ``batch``; returns the loss layer's input tensor as an array (and runs
    to_label where the loss has one)."""
    if hasattr(net.loss_details(), "to_label"):
        labels = net(batch)
    else:
        labels = None
        net.forward(net.to_tensor(batch))
    return np.array(net.subnet().get_output().host_read()), labels


def net_from(case, data, net_type=None):
    net = case.new_net() if net_type is None else net_type()
    return read_into(net, data)
