"""test_layer cases: tag merges (add_prev_, mult_prev_), linear_, tril_, positional_encodings_,
embeddings_, adaptive_computation_time_.

The fake subnet's tagged level has the subnet's num_samples, nr and nc but draws its own k
(2..5). multm_prev_ works with that when the planes are square and the subnet's k is at most
2 (dlib's PLANE_WISE gemm then multiplies the first N*k planes of the tagged output). scale_
and scale_prev_ need the tagged k to equal the subnet's: their rows give the tagged shape
(third item) so the fake subnet builds it (as do two more multm_prev_ rows). tril_mask is not here: its -inf
outputs make f = dot(output, gradient) infinite (dlib does not test it with test_layer either).
"""

from dnnpy import (LINEAR_NO_BIAS, adaptive_computation_time_, add_prev_, embeddings_, linear_, scale_, scale_prev_,
                   mult_prev_, multm_prev_, positional_encodings_, tril_, zero_tag)
from dnnpy.templates import tag_templates

tag1, tag2, tag3, tag10 = (tag_templates[i] for i in (0, 1, 2, 9))

# (layer factory, fake-subnet shape or None for dlib's random shapes)
CASES = {
    # the tagged level has its own k: the sum / product is zero-padded along k
    "add_prev1": (lambda: add_prev_(tag1), None),
    "add_prev3 (2,3,2,4)": (lambda: add_prev_(tag3), (2, 3, 2, 4)),
    "mult_prev2": (lambda: mult_prev_(tag2), None),
    "mult_prev10 (3,4,4,2)": (lambda: mult_prev_(tag10), (3, 4, 4, 2)),
    "multm_prev1 (2,2,3,3)": (lambda: multm_prev_(tag1), (2, 2, 3, 3)),
    "multm_prev2 (3,1,2,2)": (lambda: multm_prev_(tag2), (3, 1, 2, 2)),
    "linear 3": (lambda: linear_(3), None),
    "linear_no_bias 2": (lambda: linear_(2, LINEAR_NO_BIAS), (2, 2, 3, 5)),
    # dlib's tril (fill value 0) masks nothing; tril_diag with a non-zero value masks
    "tril (zero_tag)": (lambda: tril_(0, zero_tag), None),
    "tril_diag -1 1/2": (lambda: tril_(-1, None, 1, 2), (2, 2, 4, 4)),
    "tril_diag 1 3/1 non-square": (lambda: tril_(1, None, 3, 1), (2, 1, 3, 5)),
    "tril_diag -5 1/2 (dlib's case)": (lambda: tril_(-5, None, 1, 2), None),
    "positional_encodings": (lambda: positional_encodings_(), None),
    "positional_encodings (2,2,5,6)": (lambda: positional_encodings_(5, 6), (2, 2, 5, 6)),
    # embeddings: a table lookup on truncated tokens, piecewise constant in its input (its
    # backward updates the table instead; tests/test_merge.py checks that by hand)
    "embeddings 7x12 (dlib's case)": (lambda: embeddings_(7, 12), None),
    "embeddings 3x4": (lambda: embeddings_(3, 4), (2, 2, 3, 1)),
    # ACT: the effective weights sum to 1, so the output is the input; params_grad is 0
    "act 6 (dlib's case)": (lambda: adaptive_computation_time_(6), (2, 2, 2, 3)),
    "act 4": (lambda: adaptive_computation_time_(4), (3, 1, 4, 2)),
    # merge layers whose tagged input needs a particular shape: (factory, subnet shape,
    # tagged shape as a function of the subnet's)
    "multm_prev1 4x3 @ 3x5": (lambda: multm_prev_(tag1), (2, 3, 4, 3), lambda s: (s[0], s[1], s[3], 5)),
    "multm_prev2 2x2 @ 2x3": (lambda: multm_prev_(tag2), (3, 2, 2, 2), lambda s: (s[0], s[1], s[3], 3)),
    "scale1 (scales = subnet)": (lambda: scale_(tag1), (2, 3, 1, 1), lambda s: (s[0], s[1], 3, 2)),
    "scale3 one channel": (lambda: scale_(tag3), (3, 1, 1, 1), lambda s: (s[0], s[1], 2, 4)),
    "scale_prev1 (scales = tagged)": (lambda: scale_prev_(tag1), (2, 3, 2, 4), lambda s: (s[0], s[1], 1, 1)),
    "scale_prev2 4x4": (lambda: scale_prev_(tag2), (2, 2, 4, 4), lambda s: (s[0], s[1], 1, 1)),
}
