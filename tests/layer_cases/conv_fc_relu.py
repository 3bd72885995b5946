"""test_layer cases: con_, cont_, fc_, relu_."""

from dnnpy import FC_NO_BIAS, con_, cont_, fc_, relu_


def _no_bias(layer):
    layer.disable_bias()
    return layer


# (layer factory, fake-subnet shape or None for dlib's random shapes)
CASES = {
    "con 3x3 s1 same": (lambda: con_(3, 3, 3, 1, 1), None),
    "con 1x1": (lambda: con_(2, 1, 1, 1, 1), None),
    "con 5x5 s1 p2": (lambda: con_(3, 5, 5, 1, 1), None),
    "con 3x5 non-square p(1,2)": (lambda: con_(2, 3, 5, 1, 1), (3, 2, 6, 7)),
    # 6x6 -> 2x2 (an 8x8 input draws, at seed 0, an input of -3.7e-4 whose relative step
    # float32 cannot resolve at any of the eleven step sizes; float64 passes either way)
    "con 4x4 s2 p0": (lambda: con_(2, 4, 4, 2, 2), (3, 3, 6, 6)),
    "con 3x3 s3 p1": (lambda: con_(2, 3, 3, 3, 3, 1, 1), (3, 2, 7, 8)),
    "con 5x3 s(2,1) p(2,1)": (lambda: con_(2, 5, 3, 2, 1, 2, 1), None),
    "con 2x4 s(1,2) p(0,1)": (lambda: con_(3, 2, 4, 1, 2, 0, 1), (3, 2, 5, 6)),
    "con 2x2 s1 p0 (filter larger than stride)": (lambda: con_(2, 2, 2, 1, 1, 0, 0), None),
    "con whole input (nr=nc=0)": (lambda: con_(2, 0, 0, 1, 1), None),
    "con no bias": (lambda: _no_bias(con_(2, 3, 3, 1, 1)), None),
    "cont 3x3 s1 same": (lambda: cont_(3, 3, 3, 1, 1), None),
    "cont 3x3 s2": (lambda: cont_(3, 3, 3, 2, 2), None),
    "cont 4x4 s2 (seed net)": (lambda: cont_(2, 4, 4, 2, 2), None),
    "cont 5x3 s(3,2) p(2,1)": (lambda: cont_(2, 5, 3, 3, 2, 2, 1), None),
    "cont 1x1": (lambda: cont_(2, 1, 1, 1, 1), None),
    "cont 2x3 s(1,3) p(1,0)": (lambda: cont_(2, 2, 3, 1, 3, 1, 0), None),
    "cont 4x4 s2 p1": (lambda: cont_(2, 4, 4, 2, 2, 1, 1), None),
    "cont no bias": (lambda: _no_bias(cont_(2, 3, 3, 2, 2)), None),
    "fc 4": (lambda: fc_(4), None),
    "fc 1": (lambda: fc_(1), None),
    "fc_no_bias 5": (lambda: fc_(5, FC_NO_BIAS), None),
    "relu": (lambda: relu_(), None),
}
