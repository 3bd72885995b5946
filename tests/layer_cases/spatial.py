"""test_layer cases: pooling, resampling/reshaping, reorg, transpose, extract, slice, concat."""

from dnnpy import (avg_pool_, concat_, extract_, max_pool_, reorg_, reshape_to_,
                   resize_prev_to_tagged_, resize_to_, slice_, tag1, tag2, tag3, transpose_,
                   upsample_)
from dnnpy.layers.resize import _flatten

# (layer factory, fake-subnet shape or None for dlib's random shapes)
CASES = {
    "max_pool 3x3 s2 p0": (lambda: max_pool_(3, 3, 2, 2), (2, 2, 5, 7)),
    "max_pool 3x3 s1 default p1": (lambda: max_pool_(3, 3, 1, 1), None),
    "max_pool 2x2 s2": (lambda: max_pool_(2, 2, 2, 2), (2, 3, 4, 6)),
    "max_pool 2x3 s(2,1) p(1,2)": (lambda: max_pool_(2, 3, 2, 1, 1, 2), (3, 2, 6, 7)),
    "max_pool_everything": (lambda: max_pool_(0, 0, 1, 1), None),
    "avg_pool 3x3 s2 p0": (lambda: avg_pool_(3, 3, 2, 2), (2, 2, 5, 7)),
    "avg_pool 3x3 s1 default p1": (lambda: avg_pool_(3, 3, 1, 1), None),
    "avg_pool 2x3 s(2,1) p(1,2)": (lambda: avg_pool_(2, 3, 2, 1, 1, 2), (3, 2, 6, 7)),
    "avg_pool_everything": (lambda: avg_pool_(0, 0, 1, 1), None),
    "upsample 2": (lambda: upsample_(2), None),
    "upsample (2,3)": (lambda: upsample_(2, 3), (2, 2, 3, 2)),
    "resize_to 3x5": (lambda: resize_to_(3, 5), None),
    "resize_to 5x2": (lambda: resize_to_(5, 2), (2, 2, 3, 4)),
    "reshape_to spatial rescale": (lambda: reshape_to_(-1, 3, 3), None),
    "reshape_to pure (2,8,1)": (lambda: reshape_to_(2, 8, 1), (2, 4, 2, 2)),
    "reshape_to pure (1,4,8)": (lambda: reshape_to_(1, 4, 8), (3, 2, 4, 4)),
    "flatten 2x4x4": (lambda: _flatten(2, 4, 4), (3, 2, 4, 4)),
    "reorg 2x2": (lambda: reorg_(), (2, 3, 4, 6)),
    "reorg 3x2": (lambda: reorg_(3, 2), (2, 2, 6, 4)),
    "transpose": (lambda: transpose_(), None),
    "transpose 2x5": (lambda: transpose_(), (2, 3, 2, 5)),
    "extract offset 3": (lambda: extract_(3, 2, 2, 1), None),
    "extract offset 0": (lambda: extract_(0, 1, 1, 4), None),
    "slice (1,0,1) 1x2x1": (lambda: slice_(1, 0, 1, 1, 2, 1), None),
    "slice (0,1,1) 2x2x3": (lambda: slice_(0, 1, 1, 2, 2, 3), (2, 3, 4, 5)),
    "concat tag1 tag2": (lambda: concat_(tag1, tag2), None),
    "concat tag3 tag1 tag2": (lambda: concat_(tag3, tag1, tag2), None),
    "resize_prev_to_tagged tag1": (lambda: resize_prev_to_tagged_(tag1), None),
    "resize_prev_to_tagged tag2": (lambda: resize_prev_to_tagged_(tag2), (2, 3, 4, 2)),
}
