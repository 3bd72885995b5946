"""Transformer building blocks: ``tril_`` (triangular masks), ``positional_encodings_``
and ``embeddings_``.

Implementation quirks kept from dlib (layers.h), where its documentation says otherwise:

* ``tril_`` with a fill value of 0 (``tril``, and ``tril_diag`` with ``num == 0``) is the
  identity: dlib only builds the mask when the fill value is non-zero, so nothing is ever
  zeroed. ``tril_mask`` (-inf) and non-zero ``tril_diag`` values do mask.
* ``positional_encodings_`` uses ``theta = r / 10000^(c / nc)`` with the column index ``c``
  itself (not ``2*(c//2)``), sine on even columns and cosine on odd ones.
* ``embeddings_`` keeps its table outside ``get_layer_params()`` (which is empty) and
  updates it inside ``backward`` (``embs[t] -= lr_mult * freq_scale * gradient``, with
  ``freq_scale`` 0.15 when ``scale_by_freq``); no gradient reaches its input.
"""

from __future__ import annotations

import numpy as np

from .. import tensor_tools as tt
from ..tensor import resizable_tensor
from ..templates import layer_template
from . import base
from ._serial import assign_tensor, version_only
from .base import check_int, computational_layer
from ..printing import cpp_num, xml_matrix, xml_num

__all__ = ["tril_", "tril", "tril_mask", "tril_diag", "zero_tag", "neg_infinity_tag",
           "positional_encodings_", "positional_encodings", "embeddings_", "embeddings"]


class zero_tag:
    """``tril_``'s fill-value tag: 0 (dlib's ``zero_tag``)."""


class neg_infinity_tag:
    """``tril_``'s fill-value tag: -inf (dlib's ``neg_infinity_tag``)."""


def _identity_map(cls):
    cls.map_input_to_output = lambda self, p: tuple(p)
    cls.map_output_to_input = lambda self, p: tuple(p)
    return cls


@_identity_map
class tril_(computational_layer):
    """Keep the lower triangle of every (nr x nc) plane: elements with ``c <= r + diag``
    pass through; the others become ``diag_value``: -inf for ``neg_infinity_tag``, 0 for
    ``zero_tag``, else ``float32(num) / float32(den)``.

    As dlib's implementation, when ``diag_value == 0`` no element is masked at all (see the
    module docstring). The gradient passes where the mask keeps the input.
    """

    def template_args(self):
        return {"diag": self.diag, "tag": self.tag, "num": self.num, "den": self.den}

    def __init__(self, diag=0, tag=None, num=0, den=1):
        super().__init__()
        self.diag = check_int("tril_", "diag", diag)
        if tag is not None and tag not in (zero_tag, neg_infinity_tag):
            raise TypeError(f"tril_: tag must be zero_tag, neg_infinity_tag or None, got {tag!r}")
        num = check_int("tril_", "num", num)
        den = check_int("tril_", "den", den)
        if tag is None and den == 0:
            raise ValueError("tril_: den must not be 0")
        self.tag = tag
        # with a tag the fill is fixed, so num and den are not part of the layer's type
        self.num, self.den = (num, den) if tag is None else (0, 1)
        if tag is neg_infinity_tag:
            self.diag_value = float("-inf")
        elif tag is zero_tag:
            self.diag_value = 0.0
        else:
            self.diag_value = float(np.float32(num) / np.float32(den))
        self.binary_mask = resizable_tensor()
        self.output_mask = resizable_tensor()

    def _check_mask(self, t):
        if self.binary_mask.shape == t.shape:
            return
        self.binary_mask.copy_size(t)
        self.binary_mask.fill(1)
        if self.diag_value == 0:
            # dlib sizes output_mask (and so runs its masking loop) only for a non-zero value
            return
        self.output_mask.copy_size(t)
        _, _, nr, nc = t.shape
        r = np.arange(nr)[:, None]
        c = np.arange(nc)[None, :]
        above = c >= np.maximum(r + self.diag + 1, 0)          # (nr, nc), broadcast over (n, k)
        self.binary_mask.host_write_only()[...] = np.where(above, 0, 1)
        self.output_mask.host_write_only()[...] = np.where(above, self.diag_value, 0)

    def forward(self, sub, output):
        prev = sub.get_output()
        output.copy_size(prev)
        self._check_mask(prev)
        tt.multiply(False, output, prev, self.binary_mask)
        if self.diag_value != 0:
            tt.add(1, output, 1, self.output_mask)

    def backward(self, gradient_input, sub, params_grad):
        tt.multiply(True, sub.get_gradient_input(), gradient_input, self.binary_mask)

    def serialize(self, w):
        """dlib's "tril_": diag (long), diag_value (float)."""
        w.string("tril_")
        w.int(self.diag)
        w.float32(self.diag_value)

    def deserialize(self, r):
        """dlib reads both into the layer; here they come from the template arguments, so the
        file's must be the type's (a different value would change what the layer computes)."""
        r.expect_string("tril_")
        at = r.pos
        diag = r.int("tril_'s diag")
        diag_value = r.float32("tril_'s diag_value")
        if diag != self.diag or diag_value != float(np.float32(self.diag_value)):
            raise r.error(f"tril_: the file has diag={diag}, diag_value={diag_value} but the net type "
                          f"has diag={self.diag}, diag_value={self.diag_value}", at)

    def __repr__(self):
        return f"tril (diag={self.diag}, diag_value={cpp_num(self.diag_value)})"

    def to_xml(self):
        return f"<tril diag='{self.diag}' diag_value='{xml_num(self.diag_value)}'/>\n"

    def dot_label(self):
        return f"tril | {{diag|{{{self.diag}}}}} | {{diag_value|{{{cpp_num(self.diag_value)}}}}}"

    def to_onnx(self, g, x):
        """A zero fill masks nothing in dlib (see the class docstring): the identity. Otherwise
        ``Where(lower, x, diag_value)`` with a constant ``(nr, nc)`` mask, ``lower`` being
        ``c <= r + diag``. (dlib computes ``x*mask + fill``, so a non-finite x in the masked
        part gives NaN in dnnpy and the fill here.)"""
        if self.diag_value == 0:
            return x
        _, _, nr, nc = g.shape(x)
        r = np.arange(nr)[:, None]
        c = np.arange(nc)[None, :]
        keep = ~(c >= np.maximum(r + self.diag + 1, 0))
        mask = g.const(keep, np.bool_, "lower")
        return g.node("Where", [mask, x, g.scalar(self.diag_value)], shape=g.shape(x), dtype=np.float32)


tril = layer_template("tril", tril_, diag=0, tag=zero_tag)
tril_mask = layer_template("tril_mask", tril_, diag=0, tag=neg_infinity_tag)
tril_diag = layer_template("tril_diag", tril_, tag=None)   # dlib's tril_<diag, void, num, den>


class positional_encodings_(version_only, computational_layer):
    """``output = input + PE`` with ``PE(n,k,r,c) = sin(theta)`` for even c and ``cos(theta)``
    for odd c, ``theta = r / 10000^(c / nc)`` (dlib's implementation: ``c``, not ``2i``).

    The constructor's ``sequence_dim`` / ``embedding_dim`` are replaced by the input's nr
    and nc at setup; PE is rebuilt whenever the input's dimensions change.
    """

    dot_name = "positional_encodings"
    _ser_version = "positional_encodings_"  # dlib stores nothing else (PE is rebuilt)

    def template_args(self):
        return {"sequence_dim": self.sequence_dim, "embedding_dim": self.embedding_dim}

    def __init__(self, sequence_dim=1, embedding_dim=1):
        super().__init__()
        self.sequence_dim = check_int("positional_encodings_", "sequence_dim", sequence_dim, 0)
        self.embedding_dim = check_int("positional_encodings_", "embedding_dim", embedding_dim, 0)
        self.pe = resizable_tensor()

    def setup(self, sub):
        prev = sub.get_output()
        n, k, self.sequence_dim, self.embedding_dim = prev.shape
        self.pe.set_size(*prev.shape)
        a = self.pe.host_write_only()
        dt = a.dtype.type  # dlib computes in float; float64 in test_layer's float64 mode
        r = np.arange(self.sequence_dim, dtype=a.dtype)[:, None]
        c = np.arange(self.embedding_dim)
        theta = r / np.power(dt(10000), c.astype(a.dtype) / dt(max(self.embedding_dim, 1)))
        plane = np.where(c % 2 == 0, np.sin(theta), np.cos(theta))
        a[...] = plane

    def get_positional_encodings(self):
        return self.pe

    def forward(self, sub, output):
        prev = sub.get_output()
        if self.pe.shape != prev.shape:
            self.setup(sub)
        output.set_size(prev.num_samples(), prev.k(), self.sequence_dim, self.embedding_dim)
        tt.add(output, prev, self.pe)

    def backward(self, gradient_input, sub, params_grad):
        g = sub.get_gradient_input()
        tt.add(g, g, gradient_input)

    def __repr__(self):
        return "positional_encodings"

    def to_xml(self):
        return "<positional_encodings />\n"

    def to_onnx(self, g, x):
        """``Add`` of the constant encodings (computed by setup for this input's shape)."""
        _, k, nr, nc = g.shape(x)
        pe = self.pe.numpy()
        if pe.shape[1:] != (k, nr, nc):
            g.refuse(f"its encodings were made for (k, nr, nc) = {pe.shape[1:]}, not the exported input's "
                     f"{(k, nr, nc)}")
        return g.node("Add", [x, g.const(pe[:1], hint="pe")])


class embeddings_(computational_layer):
    """Token embedding lookup: ``out(n,k,r,:) = embs[token(n,k,r)]`` where the token is the
    input's column 0, truncated; out-of-range tokens give zeros. Output
    ``(N, k, nr, embedding_dim)``.

    ``embs`` ``(num_embeddings, embedding_dim)`` is initialised N(0, 1) and is NOT a solver
    parameter: backward updates it directly (see the module docstring) when the
    learning-rate multiplier is non-zero, and sends no gradient to the input.
    """

    def template_args(self):
        return {"num_embeddings": self.num_embeddings, "embedding_dim": self.embedding_dim}

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.num_embeddings = check_int("embeddings_", "num_embeddings", num_embeddings, 1)
        self.embedding_dim = check_int("embeddings_", "embedding_dim", embedding_dim, 1)
        self.learning_rate_multiplier = 1.0
        self.scale_by_freq = True
        self.embs = resizable_tensor()
        self.freqs = resizable_tensor()

    def get_learning_rate_multiplier(self):
        return self.learning_rate_multiplier

    def set_learning_rate_multiplier(self, val):
        self.learning_rate_multiplier = float(val)

    def get_scale_by_freq(self):
        return self.scale_by_freq

    def set_scale_by_freq(self, val):
        self.scale_by_freq = bool(val)

    def get_num_embeddings(self):
        return self.num_embeddings

    def set_num_embeddings(self, num):
        num = check_int("embeddings_", "num_embeddings", num, 1)
        if num != self.num_embeddings and self.embs.size() != 0:
            raise ValueError("embeddings_: can't change the size of the dictionary once the table is allocated")
        # as dlib: the setter only validates; the size is the template argument

    def get_embedding_dim(self):
        return self.embedding_dim

    def set_embedding_dim(self, dim):
        dim = check_int("embeddings_", "embedding_dim", dim, 1)
        if dim != self.embedding_dim and self.embs.size() != 0:
            raise ValueError("embeddings_: can't change the embedding size once the table is allocated")

    def get_embeddings(self):
        return self.embs

    def setup(self, sub):
        self.embs.set_size(self.num_embeddings, self.embedding_dim)
        a = self.embs.host_write_only()
        a[...] = base._rng.standard_normal(a.shape)

    def forward(self, sub, output):
        prev = sub.get_output()
        output.set_size(prev.num_samples(), prev.k(), prev.nr(), self.embedding_dim)
        tt.embeddings(output, prev, self.embs)

    def backward(self, gradient_input, sub, params_grad):
        # dlib: the layer sits right after the input, so no gradient goes to it; the table
        # is updated here rather than by the solver
        if self.learning_rate_multiplier != 0:
            prev = sub.get_output()
            if self.freqs.size() == 0:
                self.freqs.set_size(self.num_embeddings, 1, 1, 1)
            tt.calc_token_freqs(self.freqs, prev)
            tt.embeddings_gradient(prev, gradient_input, self.embs, self.freqs,
                                   self.learning_rate_multiplier, self.scale_by_freq)

    def serialize(self, w):
        """dlib's "embeddings_": embs (tensor), num_embeddings, embedding_dim (unsigned
        longs), learning_rate_multiplier (double), scale_by_freq (bool)."""
        w.string("embeddings_")
        w.tensor(self.embs)
        w.uint(self.num_embeddings)
        w.uint(self.embedding_dim)
        w.float64(self.learning_rate_multiplier)
        w.bool(self.scale_by_freq)

    def deserialize(self, r):
        """The sizes must be the type's, and the table empty (before setup) or
        ``(num_embeddings, embedding_dim)``; the table and the settings come from the file."""
        r.expect_string("embeddings_")
        at = r.pos
        embs = r.tensor("embeddings_'s embs")
        size_at = r.pos
        num = r.uint("embeddings_'s num_embeddings")
        dim = r.uint("embeddings_'s embedding_dim")
        lr_mult = r.float64("embeddings_'s learning_rate_multiplier")
        scale_by_freq = r.bool("embeddings_'s scale_by_freq")
        if (num, dim) != (self.num_embeddings, self.embedding_dim):
            raise r.error(f"embeddings_: the file has num_embeddings={num}, embedding_dim={dim} but the "
                          f"net type has num_embeddings={self.num_embeddings}, "
                          f"embedding_dim={self.embedding_dim}", size_at)
        if embs.size() and embs.shape != (num, dim, 1, 1):
            raise r.error(f"embeddings_: the file's table has shape {embs.shape}, expected "
                          f"({num}, {dim}, 1, 1)", at)
        assign_tensor(self.embs, embs)
        self.learning_rate_multiplier, self.scale_by_freq = lr_mult, scale_by_freq

    def __repr__(self):
        return (f"embeddings (num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim})"
                f" learning_rate_mult={cpp_num(self.learning_rate_multiplier)}")

    def to_xml(self):
        return (f"<embeddings num_embeddings='{self.num_embeddings}' embedding_dim='{self.embedding_dim}'"
                f" learning_rate_mult='{xml_num(self.learning_rate_multiplier)}'>\n"
                + xml_matrix(self.embs) + "</embeddings>\n")

    def dot_label(self):
        return (f"embeddings | {{num_embeddings|{{{self.num_embeddings}}}}}"
                f" | {{embedding_dim|{{{self.embedding_dim}}}}}")

    def to_onnx(self, g, x):
        """The token is column 0 of each row, truncated; tokens outside ``[0, num_embeddings)``
        (and NaN) give zeros. Both bounds are tested in float before the ``Cast`` (``x > -1``
        and ``x < num``: NaN and huge values land in the mask; ONNX leaves a Cast of NaN
        undefined), then ``Gather`` rows of the table and ``Mul`` by the mask."""
        n, k, nr, _ = g.shape(x)
        col = g.node("Slice", [x, g.ints([0]), g.ints([1]), g.ints([3])], shape=(n, k, nr, 1))
        above = g.node("Greater", [col, g.scalar(-1)], dtype=np.bool_)
        below = g.node("Less", [col, g.scalar(self.num_embeddings)], dtype=np.bool_)
        valid = g.node("And", [above, below])
        safe = g.node("Where", [valid, col, g.scalar(0)], dtype=np.float32)
        idx = g.node("Cast", [safe], dtype=np.int64, to=7)
        table = g.const(self.embs.numpy().reshape(self.num_embeddings, self.embedding_dim), hint="table")
        rows = g.node("Gather", [table, idx], shape=(n, k, nr, 1, self.embedding_dim), axis=0)
        mask = g.node("Unsqueeze", [g.node("Cast", [valid], dtype=np.float32, to=1), g.ints([4])],
                      shape=(n, k, nr, 1, 1))
        return g.reshape(g.node("Mul", [rows, mask]), [0, k, nr, self.embedding_dim],
                         (n, k, nr, self.embedding_dim))


embeddings = layer_template("embeddings", embeddings_)
positional_encodings = layer_template("positional_encodings", positional_encodings_)
