"""loss_yolo_: options, printing, dlib's gradient and loss value against an independent loop
reference, a derivative check of the gradient's formulas, to_label + NMS, and a net."""

import io
import math

import numpy as np
import pytest

from dnnpy import (anchor_box_details, con, input_tensor, layer, loss_yolo, loss_yolo_, net_to_dot, net_type_from_string,
                   sig, tag1, tag2, tag3, tag_template, test_loss, yolo_options, yolo_rect)
from dnnpy.geometry import drectangle, mmod_rect, test_box_overlap
from dnnpy.loss.yolo import _overlap_matrix
from dnnpy.tensor import resizable_tensor


# ----------------------------------------------------------------------------------------
# an independent reference: dlib's tensor_to_loss written as plain loops over floats

def area(r):
    l, t, rr, b = r
    return 0.0 if (t > b or l > rr) else (rr - l + 1) * (b - t + 1)


def iou(a, b):
    inner = area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))
    return 0.0 if inner == 0 else inner / (area(a) + area(b) - inner)


def centered(cx, cy, w, h):
    return (cx - (w - 1) / 2, cy - (h - 1) / 2, cx + (w - 1) / 2, cy + (h - 1) / 2)


def reference(in_nr, in_nc, heads, anchors, labels, truths, o):
    """heads: {tag_id: (N, K, nr, nc) array}; truths: per sample [(l,t,r,b,label,conf,ignore)].
    Returns (loss, {tag_id: gradient}, potential): potential is the objective whose derivative
    w.r.t. the sigmoid outputs dlib's gradient is after the chain rule (valid for gamma = 0)."""
    n_samples = next(iter(heads.values())).shape[0]
    grads = {t: np.zeros_like(h) for t, h in heads.items()}
    loss, potential = 0.0, 0.0
    for n in range(n_samples):
        good = [tb for tb in truths[n]
                if not tb[6] and 0 <= (tb[0] + tb[2]) / 2 <= in_nr - 1 and 0 <= (tb[1] + tb[3]) / 2 <= in_nc - 1]
        for tid, out in heads.items():
            F = len(labels) + 5
            g = grads[tid][n]
            pot = {}
            nr, nc = out.shape[2:]
            sx, sy = in_nc / nc, in_nr / nr
            for r in range(nr):
                for c in range(nc):
                    for a, (aw, ah) in enumerate(anchors[tid]):
                        v = out[n, a * F:(a + 1) * F, r, c]
                        pred = centered((v[0] * 2 - 0.5 + c) * sx, (v[1] * 2 - 0.5 + r) * sy,
                                        v[2] / (1 - v[2]) * aw, v[3] / (1 - v[3]) * ah)
                        best = max([iou(tb[:4], pred) for tb in good], default=0.0)
                        if best < o["ignore"]:
                            p = v[4]
                            g[a * F + 4, r, c] = o["lobj"] * p ** o["gobj"] * (
                                o["gobj"] * (1 - p) * math.log(max(1 - p, 1e-10)) + p)
                            pot[(a * F + 4, r, c)] = -o["lobj"] * math.log(1 - p)
            for tb in good:
                cx, cy = (tb[0] + tb[2]) / 2, (tb[1] + tb[3]) / 2
                bw, bh = tb[2] - tb[0] + 1, tb[3] - tb[1] + 1
                best, best_a, best_t, ups = 0.0, 0, 0, []
                for t2 in sorted(anchors):
                    for a, (aw, ah) in enumerate(anchors[t2]):
                        v = iou(tb[:4], centered(cx, cy, aw, ah))
                        if v > best:
                            best, best_a, best_t = v, a, t2
                            ups.append(v)
                thr = o["anchor"]
                if thr == 0:
                    thr = (np.mean(ups) if ups else 0.0) + (np.std(ups, ddof=1) if len(ups) > 1 else 0.0)
                for a, (aw, ah) in enumerate(anchors[tid]):
                    if not (best_t == tid and best_a == a):
                        if thr >= 1 or iou(tb[:4], centered(cx, cy, aw, ah)) < thr:
                            continue
                    c, r = int(cx / sx), int(cy / sy)
                    tx, ty = cx / sx - c, cy / sy - r
                    tw, th = bw / (aw + bw), bh / (ah + bh)
                    s = o["lbox"] * (2 - bw * bh / (in_nr * in_nc))
                    v = out[n, a * F:(a + 1) * F, r, c]
                    for j, (d, factor) in enumerate(((v[0] * 2 - 0.5 - tx, 2), (v[1] * 2 - 0.5 - ty, 2),
                                                     (v[2] - tw, 1), (v[3] - th, 1))):
                        g[a * F + j, r, c] = s * min(1, max(-1, d)) * factor
                        pot[(a * F + j, r, c)] = s * (0.5 * d * d if abs(d) <= 1 else abs(d) - 0.5)
                    p = v[4]
                    g[a * F + 4, r, c] = o["lobj"] * (1 - p) ** o["gobj"] * (
                        o["gobj"] * p * math.log(max(p, 1e-10)) + p - 1)
                    pot[(a * F + 4, r, c)] = -o["lobj"] * math.log(p)
                    for i, name in enumerate(labels):
                        p = v[5 + i]
                        if tb[4] == name:
                            g[a * F + 5 + i, r, c] = tb[5] * o["lcls"] * (1 - p) ** o["gcls"] * (
                                o["gcls"] * p * math.log(max(p, 1e-10)) + p - 1)
                            pot[(a * F + 5 + i, r, c)] = -tb[5] * o["lcls"] * math.log(p)
                        else:
                            g[a * F + 5 + i, r, c] = o["lcls"] * p ** o["gcls"] * (
                                o["gcls"] * (1 - p) * math.log(max(1 - p, 1e-10)) + p)
                            pot[(a * F + 5 + i, r, c)] = -o["lcls"] * math.log(1 - p)
            loss += 0.5 * float(np.sum(g ** 2))
            potential += sum(pot.values())
    return loss / n_samples, grads, potential


# ----------------------------------------------------------------------------------------

ANCHORS = {1: [(4, 5), (9, 7)], 2: [(14, 12)]}
LABELS = ["cat", "dog"]


def make_options(**kw):
    o = yolo_options(labels=LABELS, **kw)
    o.add_anchors(tag1, [anchor_box_details(*a) for a in ANCHORS[1]])
    o.add_anchors(tag2, ANCHORS[2])
    return o


def ref_opts(o):
    return dict(ignore=o.iou_ignore_threshold, anchor=o.iou_anchor_threshold, lobj=o.lambda_obj,
                lbox=o.lambda_box, lcls=o.lambda_cls, gobj=o.gamma_obj, gcls=o.gamma_cls)


def truths_for(n_samples):
    base = [
        [yolo_rect(drectangle(2, 3, 6, 7), 1.0, "cat"), yolo_rect(drectangle(5, 1, 14, 9), 0.8, "dog"),
         yolo_rect(drectangle(0, 0, 3, 3), 1.0, "dog", ignore=True)],
        [yolo_rect(drectangle(8, 6, 15, 15), 1.0, "dog"), yolo_rect(drectangle(30, 2, 40, 6), 1.0, "cat")],
    ]
    return base[:n_samples]


def as_tuples(truths):
    return [[(b.rect.left(), b.rect.top(), b.rect.right(), b.rect.bottom(), b.label, b.detection_confidence,
              b.ignore) for b in bs] for bs in truths]


def head_outputs(rng, n=2):
    # sigmoid outputs, away from 0 and 1; tag1: 2 anchors x 7 on a 4x4 grid, tag2: 1 anchor on 2x2
    return {1: rng.uniform(0.15, 0.85, (n, 14, 4, 4)), 2: rng.uniform(0.15, 0.85, (n, 7, 2, 2))}


def input_x(n=2, nr=16, nc=16):
    x = resizable_tensor(n, 3, nr, nc)
    x.fill(0)
    return x


class _fake_sub:
    """A loss SUBNET with tagged heads (what test_loss builds, usable directly in float32)."""

    def __init__(self, heads, tags=(tag1, tag2)):
        self.levels = []
        for tag, arr in zip(tags, heads.values()):
            lv = _level(tag, arr)
            self.levels.append(lv)

    def sample_expansion_factor(self):
        return 1

    def get_output(self):
        return self.levels[0].output

    def get_gradient_input(self):
        return self.levels[0].grad

    def _find(self, match):
        return next((lv for lv in self.levels if match(lv)), None)


class _level:
    def __init__(self, tag, arr):
        self.template = tag
        self.output = resizable_tensor(*arr.shape)
        self.output.assign(arr.astype(np.float32))
        self.grad = resizable_tensor(*arr.shape)
        self.grad.fill(0)

    def get_output(self):
        return self.output

    def get_gradient_input(self):
        return self.grad


# ----------------------------------------------------------------------------------------

def test_options_defaults_and_anchors():
    o = yolo_options()
    assert (o.iou_ignore_threshold, o.iou_anchor_threshold, o.classwise_nms) == (0.7, 1.0, True)
    assert (o.lambda_obj, o.lambda_box, o.lambda_cls, o.gamma_obj, o.gamma_cls) == (1, 1, 1, 0, 0)
    assert o.overlaps_nms == test_box_overlap(0.45, 1.0)
    o.add_anchors(tag3, [(3, 4)])
    o.add_anchors(tag1, [anchor_box_details(1, 2), (5, 6)])
    assert list(o.anchors) == [1, 3]  # sorted by tag id, as dlib's std::map
    assert o.anchors[1] == [anchor_box_details(1, 2), anchor_box_details(5, 6)]
    assert yolo_options.anchor_box_details is anchor_box_details
    with pytest.raises(TypeError, match="tag template"):
        o.add_anchors(2, [(1, 1)])
    with pytest.raises(ValueError, match="anchor_box_details: width"):
        anchor_box_details(-1, 2)


def test_repr_is_dlibs_text():
    o = make_options(lambda_box=0.5, gamma_cls=2)
    loss = loss_yolo_(tag1, tag2, options=o)
    assert repr(loss) == (
        "loss_yolo\t (2 outputs:(tag1,tag2), anchor_boxes:(tag1:4x5,9x7;tag2:14x12), 2 labels:(cat,dog), "
        "iou_ignore_threshold: 0.7, iou_anchor_threshold: 1, lambda_obj:1, lambda_box:0.5, lambda_cls:1, "
        "gamma_obj:0, gamma_cls:2, overlaps_nms:(0.45,1), classwise_nms:true)")
    loss.adjust_nms(0.3, 0.9, classwise=False)
    assert repr(loss).endswith("overlaps_nms:(0.3,0.9), classwise_nms:false)")
    one = loss_yolo_(yolo_options(labels=["x"]), tag3)
    assert repr(one).startswith("loss_yolo\t (1 output:(tag3), anchor_boxes:(), 1 label:(x)")
    assert loss.to_xml() == "<loss_yolo/>\n"


def test_constructor_and_template_validation():
    with pytest.raises(TypeError, match="loss_yolo_: expected a tag template"):
        loss_yolo_(tag1, 3)
    with pytest.raises(TypeError, match="loss_yolo_: at least one tag"):
        loss_yolo_(options=yolo_options())
    with pytest.raises(TypeError, match="loss_yolo_: options must be a yolo_options"):
        loss_yolo_(tag1, options={"labels": []})
    t = loss_yolo[tag1, tag2, sig[con[7, 1, 1, 1, 1, input_tensor]]]
    assert net_type_from_string(repr(t)) is t
    with pytest.raises(TypeError, match="loss_yolo"):
        loss_yolo[5, sig[con[7, 1, 1, 1, 1, input_tensor]]]


def test_hand_computed_single_cell():
    # 4x4 input, one 1x1 head, one 4x4 anchor, one label; every number below by hand
    o = yolo_options(labels=["a"])
    o.add_anchors(tag1, [(4, 4)])
    loss = loss_yolo_(tag1, options=o)
    heads = {1: np.array([0.5, 0.5, 0.5, 0.5, 0.3, 0.6]).reshape(1, 6, 1, 1)}
    truth = [[yolo_rect(drectangle(0, 0, 3, 3), 1.0, "a")]]
    sub = _fake_sub(heads, (tag1,))
    # prediction (0.5,0.5)-(3.5,3.5) has IoU 12.25/19.75 < 0.7 with the truth: objectness 0.3 first,
    # then the truth's best anchor (IoU 1) at cell (0,0): tx = ty = 0.375, tw = th = 0.5, scale 1
    value = loss.compute_loss_value_and_gradient(input_x(1, 4, 4), truth, sub)
    g = np.asarray(sub.levels[0].grad).ravel()
    np.testing.assert_allclose(g, [0.25, 0.25, 0, 0, -0.7, -0.4], atol=1e-6)
    assert value == pytest.approx(0.5 * (0.0625 + 0.0625 + 0.49 + 0.16), rel=1e-6)
    # the truth's detection_confidence (default 0) multiplies the true class's gradient (dlib)
    truth0 = [[yolo_rect(drectangle(0, 0, 3, 3), label="a")]]
    loss.compute_loss_value_and_gradient(input_x(1, 4, 4), truth0, sub)
    assert np.asarray(sub.levels[0].grad).ravel()[5] == 0


@pytest.mark.parametrize("kw", [
    {},
    dict(iou_anchor_threshold=0.2, lambda_obj=0.7, lambda_box=1.5, lambda_cls=0.4),
    dict(iou_anchor_threshold=0.0, iou_ignore_threshold=0.3),                       # ATSS
    dict(gamma_obj=2.0, gamma_cls=1.5, iou_anchor_threshold=0.3),                    # focal (dlib's signs)
])
def test_matches_the_loop_reference(rng, kw):
    o = make_options(**kw)
    loss = loss_yolo_(tag1, tag2, options=o)
    heads = head_outputs(rng)
    truths = truths_for(2)
    sub = _fake_sub(heads)
    value = loss.compute_loss_value_and_gradient(input_x(), truths, sub)
    # the reference sees the float32 values the loss reads
    heads32 = {t: h.astype(np.float32).astype(np.float64) for t, h in heads.items()}
    ref_value, ref_grads, _ = reference(16, 16, heads32, ANCHORS, LABELS, as_tuples(truths), ref_opts(o))
    for lv, tid in zip(sub.levels, (1, 2)):
        np.testing.assert_allclose(np.asarray(lv.grad), ref_grads[tid], rtol=1e-5, atol=1e-6)
    assert value == pytest.approx(ref_value, rel=1e-5)
    assert np.count_nonzero(np.asarray(sub.levels[0].grad)) > 0


class _chain_rule_probe:
    """Wraps loss_yolo_ for test_loss: dlib's objectness/class gradients are derivatives w.r.t.
    the logits, so dividing them by p(1-p) must give the derivative of the cross-entropy
    potential w.r.t. the sigmoid outputs; the box gradients are the smooth-L1 derivatives as is."""

    def __init__(self, loss):
        self.loss = loss

    def compute_loss_value_and_gradient(self, x, labels, sub):
        self.loss.compute_loss_value_and_gradient(x, labels, sub)
        heads = {}
        for lv, tid in zip(sub.levels()[1:], (1, 2)):
            out = np.asarray(lv.output.host_read())
            g = lv.gradient_input.host()
            F = len(LABELS) + 5
            for a in range(out.shape[1] // F):
                for ch in [4] + list(range(5, F)):
                    k = a * F + ch
                    p = out[:, k]
                    g[:, k] = g[:, k] / (p * (1 - p))
            heads[tid] = out.copy()
        return reference(x.nr(), x.nc(), heads, ANCHORS, LABELS, as_tuples(labels),
                         ref_opts(self.loss.options))[2]

    def __repr__(self):
        return "chain_rule_probe(loss_yolo_)"


@pytest.mark.parametrize("kw", [dict(), dict(iou_anchor_threshold=0.2, lambda_obj=0.7, lambda_box=1.5,
                                             lambda_cls=0.4)])
def test_gradient_formulas_are_derivatives(rng, kw):
    """test_loss on the chain-rule probe (gamma = 0): the written gradient, mapped to the sigmoid
    outputs, is the central-difference derivative of BCE + smooth-L1 over the same assignment."""
    loss = loss_yolo_(tag1, tag2, options=make_options(**kw))
    heads = head_outputs(rng, 1)
    top = np.zeros((1, 1, 1, 1))
    res = test_loss(_chain_rule_probe(loss), top, truths_for(1), x=input_x(1),
                    tagged={tag1: heads[1], tag2: heads[2]})
    assert res, res.log


def test_loss_assigns_and_checks_its_inputs(rng):
    loss = loss_yolo_(tag1, tag2, options=make_options())
    heads = head_outputs(rng)
    sub = _fake_sub(heads)
    for lv in sub.levels:
        lv.grad.fill(np.inf)  # untouched entries keep what the net put there; written ones are assigned
    loss.compute_loss_value_and_gradient(input_x(), truths_for(2), sub)
    assert np.all(np.isfinite(np.asarray(sub.levels[0].grad)[:, 4::7]))  # every objectness written
    with pytest.raises(ValueError, match="loss_yolo_: got 1 labels for 2"):
        loss.compute_loss_value_and_gradient(input_x(), truths_for(1), _fake_sub(heads))
    bad = {1: heads[1][:, :13], 2: heads[2]}
    with pytest.raises(ValueError, match="loss_yolo_: tag1 outputs 13 channels.*14"):
        loss.compute_loss_value_and_gradient(input_x(), truths_for(2), _fake_sub(bad))
    noanchors = loss_yolo_(tag1, tag2, options=yolo_options(labels=LABELS))
    with pytest.raises(ValueError, match="no anchors for tag1"):
        noanchors.compute_loss_value_and_gradient(input_x(), truths_for(2), _fake_sub(heads))
    with pytest.raises(TypeError, match="yolo_rect"):
        loss.compute_loss_value_and_gradient(input_x(), [[drectangle(0, 0, 3, 3)], []], _fake_sub(heads))


def det_head(cells):
    """A 1-anchor, 2-label 2x2 head (stride 8 on 16x16) with given (r, c) -> (obj, cls0, cls1)."""
    out = np.full((1, 7, 2, 2), 0.01)
    out[0, :4] = 0.5
    for (r, c), (obj, c0, c1) in cells.items():
        out[0, 4:, r, c] = (obj, c0, c1)
    return out


def test_to_label_boxes_scores_and_nms():
    o = yolo_options(labels=["cat", "dog"])
    o.add_anchors(tag1, [(8, 8)])
    loss = loss_yolo_(tag1, options=o)
    # (0,0): cat 0.9*0.8 = 0.72 (dog 0.9*0.5 = 0.45 also kept in labels); (0,1): dog 0.6*0.9 = 0.54;
    # (1,1): obj 0.2 is below the threshold
    head = det_head({(0, 0): (0.9, 0.8, 0.5), (0, 1): (0.6, 0.1, 0.9), (1, 1): (0.2, 0.9, 0.9)})
    sub = _fake_sub({1: head}, (tag1,))
    dets, = loss.to_label(input_x(1), sub)
    assert [d.label for d in dets] == ["cat", "dog"]
    assert dets[0].detection_confidence == pytest.approx(0.72, rel=1e-6)
    assert [lab for _, lab in dets[0].labels] == ["cat", "dog"]
    # box: centre ((0.5*2-0.5+c)*8, ...), size 0.5/0.5*8 = 8 -> corners centre -/+ 3.5
    assert dets[0].rect == drectangle(0.5, 0.5, 7.5, 7.5)
    assert dets[1].rect == drectangle(8.5, 0.5, 15.5, 7.5)
    # a lower threshold admits (1,1) too
    assert len(loss.to_label(input_x(1), sub, adjust_threshold=0.1)[0]) == 3

    # NMS: two overlapping boxes of one label keep only the best; classwise lets another label through
    head = det_head({(0, 0): (0.9, 0.8, 0.1), (0, 1): (0.9, 0.7, 0.1)})
    head[0, 0, 0, 1] = 0.0  # move the (0,1) box left by 8 px: it now coincides with the (0,0) box
    sub = _fake_sub({1: head}, (tag1,))
    dets, = loss.to_label(input_x(1), sub)
    assert len(dets) == 1 and dets[0].detection_confidence == pytest.approx(0.72, rel=1e-6)
    head[0, 4:, 0, 1] = (0.9, 0.1, 0.7)  # now a dog: classwise NMS keeps both
    sub = _fake_sub({1: head}, (tag1,))
    assert [d.label for d in loss.to_label(input_x(1), sub)[0]] == ["cat", "dog"]
    loss.adjust_nms(0.45, 1.0, classwise=False)
    assert [d.label for d in loss.to_label(input_x(1), sub)[0]] == ["cat"]


def test_yolo_rect():
    r = yolo_rect(drectangle(1, 2, 3, 4), 0.5, "a")
    assert r == yolo_rect(drectangle(1, 2, 3, 4), 0.5, "a") and r != yolo_rect(drectangle(1, 2, 3, 4), 0.4, "a")
    assert yolo_rect(drectangle(), 0.1) < r
    m = yolo_rect(mmod_rect(drectangle(0, 0, 9, 9), 0.7, True, "z"))
    assert (m.detection_confidence, m.ignore, m.label, m.labels) == (0.7, True, "z", [])


def test_net_level(rng):
    net_type = loss_yolo[tag1, tag2, tag1[sig[con[14, 1, 1, 1, 1, tag2[sig[con[7, 3, 3, 1, 1,
                                                                                 input_tensor]]]]]]]
    net = net_type()
    opts = yolo_options(labels=LABELS)
    opts.add_anchors(tag1, [(4, 5), (9, 7)])
    opts.add_anchors(tag2, [(14, 12)])
    net.loss_details().options = opts        # options are runtime data, set on the loss details
    batch = [rng.standard_normal((1, 2, 16, 16)).astype(np.float32) for _ in range(2)]
    labels = truths_for(2)
    value = net.compute_loss(batch, labels)
    assert value > 0
    # the gradient went to both heads and matches the reference on the heads' outputs
    heads = {1: np.asarray(layer(net, tag1).get_output(), np.float64),
             2: np.asarray(layer(net, tag2).get_output(), np.float64)}
    ref_value, ref_grads, _ = reference(16, 16, heads, ANCHORS, LABELS, as_tuples(labels), ref_opts(opts))
    assert value == pytest.approx(ref_value, rel=1e-5)
    value2 = net.compute_parameter_gradients(batch, labels)
    assert value2 == pytest.approx(value, rel=1e-6)
    assert np.abs(np.asarray(layer(net, 3).get_parameter_gradient())).sum() > 0
    assert np.abs(np.asarray(layer(net, 6).get_parameter_gradient())).sum() > 0
    dets = net(batch, adjust_threshold=0.3)
    assert len(dets) == 2 and all(isinstance(d, yolo_rect) for d in dets[0])
    confs = [d.detection_confidence for d in dets[0]]
    assert confs == sorted(confs, reverse=True) and len(confs) >= 1
    # net_to_dot draws loss_yolo with an edge from each head (dlib's special case)
    buf = io.StringIO()
    net_to_dot(net, buf)
    assert buf.getvalue().endswith('3 -> 2\n0 [shape=record, label="{layer|{0}} | loss_yolo"]\n2 -> 0\n5 -> 0\n}')


def test_non_square_input_quirks():
    # dlib's image rectangle is rectangle(nr, nc): x must be <= nr-1 (rows), y <= nc-1
    o = yolo_options(labels=["a"])
    o.add_anchors(tag1, [(6, 6)])
    loss = loss_yolo_(tag1, options=o)
    head = np.full((1, 6, 1, 2), 0.3)          # 8x16 input, 1x2 grid, strides 8
    sub = _fake_sub({1: head}, (tag1,))
    inside = [[yolo_rect(drectangle(3, 1, 7, 5), 1.0, "a")]]      # centre x = 5 <= 7
    outside = [[yolo_rect(drectangle(8, 1, 12, 5), 1.0, "a")]]    # centre x = 10 > nr-1 = 7: skipped
    loss.compute_loss_value_and_gradient(input_x(1, 8, 16), inside, sub)
    g = np.asarray(sub.levels[0].grad)[0, :, 0]
    assert g[0, 0] != 0 and g[4, 0] == pytest.approx(0.3 - 1, rel=1e-6)
    sub = _fake_sub({1: head}, (tag1,))
    loss.compute_loss_value_and_gradient(input_x(1, 8, 16), outside, sub)
    g = np.asarray(sub.levels[0].grad)[0, :, 0]
    np.testing.assert_allclose(g[4], [0.3, 0.3], rtol=1e-6)   # negatives only
    assert not g[:4].any() and not g[5].any()
    # 16x8 input, 2x1 grid: a centre at x = 12 passes dlib's test but its cell (column 1)
    # is outside the head, where dlib writes out of bounds; dnnpy skips it
    sub = _fake_sub({1: np.full((1, 6, 2, 1), 0.3)}, (tag1,))
    loss.compute_loss_value_and_gradient(input_x(1, 16, 8), [[yolo_rect(drectangle(10, 1, 14, 5), 1.0, "a")]], sub)
    g = np.asarray(sub.levels[0].grad)[0]
    assert not g[:4].any() and np.allclose(g[4], 0.3)


def test_custom_tag_ids_as_dlibs_yolo_example():
    # dlib's dnn_yolo_train_ex tags its heads with add_tag_layer<4008> / <4016>: any tag id
    ytag8, ytag16 = tag_template("ytag8", 4008), tag_template("ytag16", 4016)
    net_type = loss_yolo[ytag8, ytag16, ytag8[sig[con[14, 1, 1, 1, 1, ytag16[sig[con[7, 3, 3, 1, 1,
                                                                                     input_tensor]]]]]]]
    net = net_type()
    opts = yolo_options(labels=LABELS)
    opts.add_anchors(ytag8, [(4, 5), (9, 7)])
    opts.add_anchors(ytag16, [(14, 12)])
    assert list(opts.anchors) == [4008, 4016] and opts.anchors_str().startswith("tag4008:4x5,9x7;tag4016:")
    net.loss_details().options = opts
    rng = np.random.default_rng(3)
    batch = [rng.standard_normal((1, 2, 16, 16)).astype(np.float32) for _ in range(2)]
    labels = truths_for(2)
    value = net.compute_loss(batch, labels)
    # the same net with tag1/tag2 gives the same loss: only the ids differ
    plain = loss_yolo[tag1, tag2, tag1[sig[con[14, 1, 1, 1, 1, tag2[sig[con[7, 3, 3, 1, 1, input_tensor]]]]]]]()
    popts = yolo_options(labels=LABELS)
    popts.add_anchors(tag1, [(4, 5), (9, 7)])
    popts.add_anchors(tag2, [(14, 12)])
    plain.loss_details().options = popts
    plain.compute_loss(batch, labels)            # allocates the parameters
    for i in (3, 6):
        layer(plain, i).layer_details().get_layer_params().host()[:] = \
            layer(net, i).layer_details().get_layer_params().host()
    assert plain.compute_loss(batch, labels) == pytest.approx(value, rel=1e-6)
    assert repr(net.loss_details()).startswith("loss_yolo\t (2 outputs:(tag4008,tag4016), anchor_boxes:(tag4008:")
    assert net_type_from_string(repr(net_type)) is net_type
    with pytest.raises(ValueError, match="no anchors for ytag16"):
        opts.anchors.pop(4016)
        net.compute_loss(batch, labels)


@pytest.mark.parametrize("iou, pct", [(0.45, 1.0), (0.3, 0.6)])
def test_overlap_matrix_matches_test_box_overlap(iou, pct):
    # the vectorised NMS matrix must agree with the scalar tester pair by pair, including
    # boxes whose corners round (lround) across a pixel, touching and disjoint boxes
    rng = np.random.default_rng(3)
    xy = rng.uniform(-5, 40, size=(60, 2))
    wh = rng.uniform(0.2, 25, size=(60, 2))
    rects = [drectangle(x, y, x + w, y + h) for (x, y), (w, h) in zip(xy, wh)]
    rects += [drectangle(0.5, 0.5, 10.5, 10.5), drectangle(-0.5, 0.5, 9.5, 10.5)]
    tester = test_box_overlap(iou, pct)
    got = _overlap_matrix(tester, rects)
    want = np.array([[tester(a, b) for b in rects] for a in rects])
    assert want.any() and not want.all()
    np.testing.assert_array_equal(got, want)
