"""dlib's running statistics (statistics.h, running_gradient.h) against hand computations and
an independent ordinary-least-squares reference."""

import math

import numpy as np
import pytest

from dnnpy.serialization.primitives import Reader, Writer
from dnnpy.training.statistics import (count_steps_without_decrease, count_steps_without_decrease_robust,
                              count_steps_without_increase, find_upper_quantile,
                              probability_gradient_greater_than, probability_that_sequence_is_increasing,
                              probability_values_are_increasing, probability_values_are_increasing_robust,
                              running_gradient, running_stats, running_stats_decayed)


def ols(values):
    """(slope, standard error of the slope) of y over x = 0..n-1, the textbook way."""
    y = np.asarray(values, dtype=np.float64)
    x = np.arange(len(y), dtype=np.float64)
    slope, intercept = np.polyfit(x, y, 1)
    sse = float(np.sum((y - (slope * x + intercept)) ** 2))
    sxx = float(np.sum((x - x.mean()) ** 2))
    return slope, math.sqrt(sse / (len(y) - 2) / sxx), intercept


def p_greater(slope, se):
    return 1 - 0.5 * math.erfc(-(0 - slope) / se / math.sqrt(2))


def reference_count(values, p=0.51, keep=None):
    """Largest j such that the (kept) last j values, reversed, have P(slope > 0) < p."""
    count = 0
    rev = list(reversed(values))
    for j in range(1, len(rev) + 1):
        window = [v for v in rev[:j] if keep is None or v <= keep]
        if len(window) > 2:
            slope, se, _ = ols(window)
            if p_greater(slope, se) < p:
                count = j
    return count


def test_running_stats_by_hand():
    rs = running_stats()
    assert rs.mean() == 0 and rs.current_n() == 0
    for v in (1, 2, 3, 4):
        rs.add(v)
    assert rs.mean() == 2.5 and rs.current_n() == 4
    assert rs.variance() == pytest.approx(5 / 3)
    assert rs.min() == 1 and rs.max() == 4
    rs.clear()
    assert rs.mean() == 0
    with pytest.raises(ValueError, match="running_stats"):
        rs.variance()


def test_running_stats_decayed_by_hand():
    rs = running_stats_decayed(1)          # forget = 0.5
    assert rs.forget_factor() == 0.5
    rs.add(1)
    rs.add(2)
    assert rs.current_n() == 1.5
    assert rs.mean() == pytest.approx(2.5 / 1.5)
    with pytest.raises(ValueError):
        running_stats_decayed(0)


def test_running_gradient_matches_least_squares():
    rng = np.random.default_rng(1)
    y = 3.0 - 0.25 * np.arange(40) + rng.normal(0, 0.5, 40)
    g = running_gradient()
    for v in y:
        g.add(v)
    slope, se, intercept = ols(y)
    # the RLS prior (R = 1e6 I) makes the fit differ from OLS by ~1e-6 relative
    assert g.gradient() == pytest.approx(slope, rel=1e-5)
    assert g.intercept() == pytest.approx(intercept, rel=1e-5)
    assert g.standard_error() == pytest.approx(se, rel=1e-5)
    assert g.probability_gradient_greater_than(0) == pytest.approx(p_greater(slope, se), abs=1e-6)
    assert probability_gradient_greater_than(y, 0) == g.probability_gradient_greater_than(0)


def test_running_gradient_exact_line():
    g = running_gradient()
    for x in range(10):
        g.add(2 * x + 1)
    assert g.gradient() == pytest.approx(2, rel=1e-6)   # the 1e6*I prior, not exact OLS
    assert g.intercept() == pytest.approx(1, abs=1e-6)
    assert g.probability_gradient_greater_than(0) == 1.0
    with pytest.raises(ValueError):
        running_gradient().standard_error()


def test_count_steps_hand_sequences():
    assert count_steps_without_decrease([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]) == 0   # always decreasing
    assert count_steps_without_decrease([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == 10  # never decreasing
    # decreasing for a long time, then rising over the last 4: only the recent windows are not
    # decreasing: 3 values (2,3,4 reversed), 4 (1,2,3,4)... up to where the old descent dominates
    seq = [9, 8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4]
    assert count_steps_without_decrease(seq) == reference_count(seq)
    assert 4 <= count_steps_without_decrease(seq) < len(seq)
    assert count_steps_without_decrease([]) == 0
    assert count_steps_without_decrease([5, 5]) == 0                               # < 3 values
    assert count_steps_without_increase([1, 2, 3, 4, 5]) == 0
    assert count_steps_without_increase([5, 4, 3, 2, 1]) == 5
    with pytest.raises(ValueError):
        count_steps_without_decrease([1, 2, 3], 0.4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_count_steps_against_reference(seed):
    rng = np.random.default_rng(seed)
    # a decreasing loss that flattens out: the recent flat part is "without decrease"
    n = 120
    seq = list(np.concatenate([np.linspace(5, 1, 60), np.ones(60)]) + rng.normal(0, 0.3, n))
    assert count_steps_without_decrease(seq) == reference_count(seq)
    keep = find_upper_quantile(seq, 0.1)
    assert count_steps_without_decrease_robust(seq) == reference_count(seq, keep=keep)


def test_robust_ignores_spikes():
    seq = list(np.linspace(10, 1, 100)) + [100.0]      # steady decrease, one bad last mini-batch
    assert count_steps_without_decrease(seq) > 0
    assert count_steps_without_decrease_robust(seq) == 0
    assert count_steps_without_decrease_robust([]) == 0


def test_find_upper_quantile():
    assert find_upper_quantile(list(range(1, 11)), 0.1) == 9      # index round(9*0.9)=8
    assert find_upper_quantile([6, 5, 4, 3, 2, 1], 0.1) == 6      # round(4.5) = 5 (half away)
    assert find_upper_quantile([3.0], 0.5) == 3.0


def test_probability_values_are_increasing():
    assert probability_values_are_increasing([1, 2]) == 0.5
    assert probability_values_are_increasing([1, 2, 3, 4]) == 1.0
    assert probability_values_are_increasing([4, 3, 2, 1]) == 0.0
    assert probability_that_sequence_is_increasing is probability_values_are_increasing
    rng = np.random.default_rng(3)
    y = 0.02 * np.arange(50) + rng.normal(0, 0.5, 50)
    slope, se, _ = ols(y)
    assert probability_values_are_increasing(y) == pytest.approx(p_greater(slope, se), abs=1e-6)
    spiky = list(-0.1 * np.arange(30)) + [50.0, 50.0]
    assert probability_values_are_increasing(spiky) > 0.5
    assert probability_values_are_increasing_robust(spiky) < 0.01


def _roundtrip(obj, fresh):
    w = Writer()
    obj.serialize(w)
    data = w.bytes()
    r = Reader(data)
    fresh.deserialize(r)
    assert r.at_end()
    w2 = Writer()
    fresh.serialize(w2)
    assert w2.bytes() == data
    return data


def test_serialization_bytes_and_roundtrip():
    empty = running_stats()
    data = _roundtrip(empty, running_stats())
    # int 2, five doubles 0.0 (01 00 01 0b), min = +inf, max = -inf (exponents 32000/32001)
    assert data == (bytes([1, 2]) + bytes([1, 0, 1, 0x0b]) * 5
                    + bytes([1, 0, 2, 0x00, 0x7d]) + bytes([1, 0, 2, 0x01, 0x7d]))
    rs = running_stats()
    for v in (0.5, 1.5, -2.25):
        rs.add(v)
    back = running_stats()
    _roundtrip(rs, back)
    assert back.mean() == rs.mean() and back.variance() == rs.variance() and back.min() == -2.25
    d = running_stats_decayed(200)
    for v in (1, 2, 3):
        d.add(v)
    back = running_stats_decayed(7)
    _roundtrip(d, back)
    assert back.forget_factor() == d.forget_factor() and back.mean() == d.mean()
    g = running_gradient()
    for v in (3, 1, 4, 1, 5):
        g.add(v)
    back = running_gradient()
    _roundtrip(g, back)
    assert back.gradient() == g.gradient() and back.standard_error() == g.standard_error()


def test_deserialize_bad_version():
    from dnnpy import SerializationError

    with pytest.raises(SerializationError, match="running_stats"):
        running_stats().deserialize(Reader(bytes([1, 3])))
    with pytest.raises(SerializationError, match="running_stats_decayed"):
        running_stats_decayed().deserialize(Reader(bytes([1, 2])))
