"""Metric learning, ranking and self-supervised losses (dlib loss.h): ``loss_metric_``,
``loss_ranking_`` and ``loss_barlow_twins_``.

As everywhere in dnnpy's losses, the gradient is ASSIGNED to ``sub.get_gradient_input()``,
arrays are computed in the output's dtype in dlib's order of operations and the loss value is
accumulated in float64.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..templates import loss_template
from ..tensor import resizable_tensor
from ..printing import cpp_num, xml_num
from ._logistic import assign_gradient, check_output_dims, float_labels, int_labels, prepare
from .base import loss_layer, named_loss

__all__ = ["loss_metric_", "loss_metric", "loss_ranking_", "loss_ranking",
           "loss_barlow_twins_", "loss_barlow_twins"]

_F64 = np.float64


def _positive_float(owner, what, value):
    """A float32 constructor argument (dlib stores floats) that must be > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {what} must be a number, got {value!r}")
    if not value > 0:
        raise ValueError(f"{owner}: {what} must be > 0, got {value!r}")
    return float(np.float32(value))


# ----------------------------------------------------------------------------------------

class loss_metric_(loss_layer):
    """Metric learning on ``(N, D, 1, 1)`` embeddings with integer labels (dlib's
    ``loss_metric_``). For every ordered pair ``(r, c)``, ``r != c``, with Euclidean distance
    ``d``: same label -> loss ``scale*(d - (dist_thresh - margin))`` when
    ``d >= dist_thresh - margin``; different labels -> loss ``scale*((dist_thresh + margin) - d)``
    when ``d <= dist_thresh + margin`` and ``d <= neg_thresh``, where ``neg_thresh`` is the
    distance of the ``min(#pos, #neg)``-th closest negative pair (hard-negative mining: as many
    negatives as positives). ``scale = 0.5/(#pos + 0.0001)`` (pairs counted once, ``r < c``).

    dlib quirks kept: the gradient written is ``grad_mul @ output`` with ``grad_mul`` holding
    ``+-scale/d`` per pair, i.e. half of the derivative of the reported loss (each unordered
    pair is counted twice in the loss); negative-pair distances below 0.001 are clamped to
    0.001 in the gradient only. Every mini-batch needs a positive and a negative pair.
    """

    distributed_reduction = "gather"   # pairs across the whole mini-batch

    def template_args(self):
        return {"margin": self.margin, "dist_thresh": self.dist_thresh}

    def __init__(self, margin=0.04, dist_thresh=0.6):
        self.margin = _positive_float("loss_metric_", "margin", margin)
        self.dist_thresh = _positive_float("loss_metric_", "dist_thresh", dist_thresh)

    def get_margin(self):
        return self.margin

    def get_distance_threshold(self):
        return self.dist_thresh

    def to_label(self, x, sub):
        _, _, o = prepare("loss_metric_", x, sub, None, nr=1, nc=1)
        return [row.copy() for row in o.reshape(o.shape[0], -1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_metric_"
        out, labels, o = prepare(name, x, sub, labels, nr=1, nc=1)
        labels = int_labels(name, labels)
        if labels.shape != (out.num_samples(),):
            raise ValueError(f"{name}: labels must be one integer per sample, got shape {labels.shape}")
        X = o.reshape(o.shape[0], -1)
        dt = X.dtype.type
        n = X.shape[0]

        temp = X @ X.T                                          # tt::gemm, in the output's dtype
        diag = np.diagonal(temp)
        d2sq = (diag[:, None] + diag[None, :]) - dt(2) * temp  # xx + yy - 2*xy, float
        same = labels[:, None] == labels[None, :]
        upper = np.triu(np.ones((n, n), bool), 1)
        num_pos = int(np.count_nonzero(same & upper))
        num_neg = int(np.count_nonzero(~same & upper))
        if num_pos < 1 or num_neg < 1:
            raise ValueError(f"{name}: make sure each mini-batch contains both positive pairs and "
                             f"negative pairs (got {num_pos} positive and {num_neg} negative pairs "
                             f"from labels {labels.tolist()})")
        scale = 0.5 / (num_pos + 0.0001)   # dlib counts from 0.0001
        neg_sq = np.sort(np.maximum(d2sq[~same & upper], 0).astype(_F64))
        neg_thresh = dt(np.sqrt(neg_sq[min(num_pos, num_neg) - 1]))

        d = np.sqrt(np.maximum(d2sq, dt(0)))   # float sqrt; d2 <= 0 -> 0
        off = ~np.eye(n, dtype=bool)
        lo = dt(self.dist_thresh) - dt(self.margin)
        hi = dt(self.dist_thresh) + dt(self.margin)
        pos = same & off & ~(d < lo)
        neg = ~same & ~((d > hi) | (d > neg_thresh))
        d64 = d.astype(_F64)
        loss = float(np.sum(scale * (d[pos] - lo).astype(_F64)) + np.sum(scale * (hi - d[neg]).astype(_F64)))

        with np.errstate(divide="ignore"):
            w_pos = np.where(pos, scale / d64, 0.0)                           # scale/d2
            w_neg = np.where(neg, scale / np.maximum(d64, _F64(np.float32(0.001))), 0.0)
        grad_mul = w_neg - w_pos                                           # off-diagonal entries
        np.fill_diagonal(grad_mul, (w_pos - w_neg).sum(axis=1))           # gm[r,r] accumulates
        grad = grad_mul.astype(X.dtype) @ X                                # tt::gemm(grad_mul, output)
        assign_gradient(sub, grad)
        return loss

    def serialize(self, w):
        # one read from the old "loss_metric_" record (no fields) writes it back while
        # margin and dist_thresh are still the values that record means
        version = w.version_string(self, "loss_metric_2", lambda v: (
            None if (np.float32(self.margin), np.float32(self.dist_thresh)) == _V1_VALUES else
            f"{v} has no fields (it means margin 0.1 and dist_thresh 0.75) and the loss has "
            f"{cpp_num(self.margin)} and {cpp_num(self.dist_thresh)}"))
        if version == "loss_metric_2":
            w.float32(self.margin)       # C++ floats
            w.float32(self.dist_thresh)

    def deserialize(self, r):
        """dlib restores margin and dist_thresh from the file (they are constructor arguments,
        not part of the type); the old ``loss_metric_`` record means 0.1 and 0.75."""
        found = r.version_string(self, "loss_metric_", "loss_metric_2")
        if found == "loss_metric_":
            margin, dist_thresh = (float(v) for v in _V1_VALUES)
        else:
            margin = r.float32("loss_metric_'s margin")
            dist_thresh = r.float32("loss_metric_'s dist_thresh")
        self.margin, self.dist_thresh = margin, dist_thresh

    def __repr__(self):
        return f"loss_metric (margin={cpp_num(self.margin)}, distance_threshold={cpp_num(self.dist_thresh)})"

    def to_xml(self):
        return (f"<loss_metric margin='{xml_num(self.margin)}' "
                f"distance_threshold='{xml_num(self.dist_thresh)}'/>\n")


_V1_VALUES = (np.float32(0.1), np.float32(0.75))  # what dlib's old "loss_metric_" record means

loss_metric = loss_template("loss_metric", loss_metric_)


# ----------------------------------------------------------------------------------------

class loss_ranking_(named_loss):
    """Pairwise ranking on ``(N, 1, 1, 1)`` scores. Labels: > 0 relevant, < 0 non-relevant,
    0 ignored (gradient 0). With ``s = out - y`` (float): a relevant sample scores ``count *
    s`` against it for each non-relevant sample with ``s_nonrel >= s_rel`` (an inversion), a
    non-relevant one ``+count * s``; loss = sum / (#relevant * #non-relevant); gradient
    ``-count/total`` (relevant) and ``+count/total`` (non-relevant). Both classes must be in
    the mini-batch."""

    _printed = "loss_ranking"
    distributed_reduction = "gather"   # inversions across the whole mini-batch

    def to_label(self, x, sub):
        _, _, o = prepare("loss_ranking_", x, sub, None, k=1, nr=1, nc=1)
        return [float(v) for v in o.reshape(-1)]

    def compute_loss_value_and_gradient(self, x, labels, sub):
        name = "loss_ranking_"
        out, labels, o = prepare(name, x, sub, labels, k=1, nr=1, nc=1)
        o = o.reshape(-1)
        y = float_labels(name, labels).astype(o.dtype)
        rel, nonrel = y > 0, y < 0
        total = int(np.count_nonzero(rel)) * int(np.count_nonzero(nonrel))
        if total == 0:
            raise ValueError(f"{name}: you can't give a ranking mini-batch that contains only one "
                             f"class; both relevant (label > 0) and non-relevant (label < 0) samples "
                             f"must be present")
        scores = (o - y).astype(_F64)               # float difference, stored as double (dlib)
        rs, ns = scores[rel], scores[nonrel]
        # dlib's count_ranking_inversions: relevant i counts the non-relevant scores >= it,
        # non-relevant j counts the relevant scores <= it
        ns_sorted, rs_sorted = np.sort(ns), np.sort(rs)
        rel_counts = ns.size - np.searchsorted(ns_sorted, rs, side="left")
        nonrel_counts = np.searchsorted(rs_sorted, ns, side="right")
        scale = 1.0 / total
        loss = (np.sum(nonrel_counts * ns) - np.sum(rel_counts * rs)) * scale
        g = np.zeros(o.shape, _F64)
        g[rel] = -1.0 * rel_counts * scale
        g[nonrel] = nonrel_counts * scale
        assign_gradient(sub, g.astype(o.dtype))
        return float(loss)


loss_ranking = loss_template("loss_ranking", loss_ranking_)


# ----------------------------------------------------------------------------------------

class loss_barlow_twins_(loss_layer):
    """Barlow Twins (unsupervised): the output ``(2N, D, 1, 1)`` holds the embeddings of N
    first views then N second views (``input_rgb_image_pair``; sample_expansion_factor 2).
    Each half is batch-normalised with its own batch statistics (eps 1e-4, biased variance,
    gamma 1, beta 0: dlib's ``tt::batch_normalize``); ``C = A^T B / N`` (the empirical
    cross-correlation, kept as ``get_eccm()``); loss ``sum((diag(C) - 1)^2) + lambda *
    sum(offdiag(C)^2)``. The gradient is the exact derivative, through the normalisation
    (dlib's ``batch_normalize_gradient`` with gamma 1)."""

    eps = 1e-4  # dlib's fixed batch-normalisation epsilon for this loss
    distributed_reduction = "gather"   # batch statistics and cross-correlation of the batch

    def template_args(self):
        return {"lambda_": self.lambda_}

    def __init__(self, lambda_=0.0051):
        self.lambda_ = _positive_float("loss_barlow_twins_", "lambda", lambda_)
        self.eccm = resizable_tensor()

    def get_lambda(self):
        return self.lambda_

    def get_eccm(self):
        """The empirical cross-correlation matrix of the last call, a ``(D, D)`` tensor."""
        return self.eccm

    def _normalize(self, z):
        """dlib's CPU batch_normalize (gamma 1, beta 0): mean and biased variance per column
        in double, stored as the output's dtype -> (normalised, means, invstds)."""
        dt = z.dtype.type
        z64 = z.astype(_F64)
        means = z64.mean(axis=0)
        var = ((z64 - means) ** 2).mean(axis=0)
        means = means.astype(dt)
        invstds = (1.0 / np.sqrt(var + self.eps)).astype(dt)
        return (z - means) * invstds, means, invstds

    @staticmethod
    def _normalize_gradient(gi, z, means, invstds):
        """dlib's batch_normalize_gradient with gamma 1, in float64: the data gradient."""
        n = z.shape[0]
        g, c, inv = gi.astype(_F64), (z - means).astype(_F64), invstds.astype(_F64)
        dvars = np.sum(g * c, axis=0) * -0.5 * inv ** 3
        dmeans = np.sum(-g * inv, axis=0) + dvars * -2 * np.sum(c, axis=0) / n
        return g * inv + dvars * 2 * c / n + dmeans / n

    def compute_loss_value_and_gradient(self, x, sub):
        name = "loss_barlow_twins_"
        sef = sub.sample_expansion_factor()
        if sef != 2:
            raise ValueError(f"{name}: needs a sample expansion factor of 2 (pairs of views, e.g. "
                             f"from input_rgb_image_pair); the input layer has {sef}")
        out = sub.get_output()
        check_output_dims(name, out, nr=1, nc=1)
        if x is not None and x.num_samples() != out.num_samples():
            raise ValueError(f"{name}: the input tensor has {x.num_samples()} samples but the net "
                             f"output {out.shape} has {out.num_samples()}")
        if out.num_samples() < 4 or out.num_samples() % 2:
            raise ValueError(f"{name}: needs an even number of output samples, at least 4 (two "
                             f"views of at least 2 inputs: batch statistics), got {out.shape}")
        o = out.host_read()
        bs = o.shape[0] // 2
        z = o.reshape(o.shape[0], -1)
        dt = z.dtype.type
        a, means_a, inv_a = self._normalize(z[:bs])
        b, means_b, inv_b = self._normalize(z[bs:])

        eccm = (a.T @ b) / dt(bs)                      # tt::gemm then eccm /= batch_size
        d = eccm.shape[0]
        eye = np.eye(d, dtype=eccm.dtype)
        cdiag_1 = eccm * eye - eye                     # diag(C) - I, as a diagonal matrix
        off_diag = eccm * (1 - eye)
        self.eccm.set_size(d, d)
        self.eccm.host_write_only()[...] = eccm.reshape(d, d, 1, 1)

        # d/dA and d/dB of the loss (w.r.t. the normalised halves), then through the norm
        lam = _F64(np.float32(self.lambda_))
        gia = (2.0 / bs) * (b.astype(_F64) @ cdiag_1) + (lam * 2.0 / bs) * (b.astype(_F64) @ off_diag.T)
        gib = (2.0 / bs) * (a.astype(_F64) @ cdiag_1) + (lam * 2.0 / bs) * (a.astype(_F64) @ off_diag)
        grad = np.concatenate([self._normalize_gradient(gia.astype(dt), z[:bs], means_a, inv_a),
                               self._normalize_gradient(gib.astype(dt), z[bs:], means_b, inv_b)])
        assign_gradient(sub, grad.astype(dt))
        diagonal_loss = float(np.sum(cdiag_1.astype(_F64) ** 2))
        off_diag_loss = float(np.sum(off_diag.astype(_F64) ** 2))
        return float(diagonal_loss + lam * off_diag_loss)

    def serialize(self, w):
        w.string("loss_barlow_twins_")
        w.float32(self.lambda_)  # a C++ float

    def deserialize(self, r):
        r.expect_string("loss_barlow_twins_")
        self.lambda_ = r.float32("loss_barlow_twins_'s lambda")

    def __repr__(self):
        return f"loss_barlow_twins (lambda={cpp_num(self.lambda_)})"

    def to_xml(self):
        return f"<loss_barlow_twins lambda='{xml_num(self.lambda_)}'/>\n"


loss_barlow_twins = loss_template("loss_barlow_twins", loss_barlow_twins_)
