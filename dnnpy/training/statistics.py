"""dlib's running statistics used by the trainer (``dlib/statistics/statistics.h``,
``dlib/statistics/running_gradient.h``), with dlib's arithmetic and serialization.

* ``running_stats``: mean/variance/min/max of a stream (sums of powers, as dlib).
* ``running_stats_decayed(halflife)``: exponentially forgetting mean/variance.
* ``running_gradient``: recursive least squares fit of a line through ``y_0, y_1, ...``
  (x = 0, 1, ...), with the standard error of its slope, so
  ``probability_gradient_greater_than(0)`` is P(slope > 0) under a normal approximation.
* ``count_steps_without_decrease(values, p=0.51)``: walking the sequence from its NEWEST value
  backwards, the largest window length ``j`` whose fitted line is not confidently decreasing
  (P(slope < 0 over the last j values) < p). ``count_steps_without_decrease_robust`` first
  drops values above the upper ``quantile_discard`` quantile (outlier spikes).
* ``probability_values_are_increasing(values)`` (alias ``probability_that_sequence_is_increasing``)
  and its ``_robust`` variant: P(slope > 0), 0.5 for fewer than 3 values.

``running_gradient`` keeps its 2x2 matrix and 2-vector as Python floats (R is symmetric, so
three numbers): the trainer calls ``count_steps_without_decrease`` on up to thousands of values
and scalar arithmetic is ~50x faster than numpy on 2x2 arrays.
"""

from __future__ import annotations

import math

__all__ = ["running_stats", "running_stats_decayed", "running_gradient",
           "probability_gradient_less_than", "probability_gradient_greater_than",
           "find_upper_quantile", "probability_values_are_increasing",
           "probability_values_are_increasing_robust", "probability_that_sequence_is_increasing",
           "count_steps_without_decrease", "count_steps_without_decrease_robust",
           "count_steps_without_increase"]


class running_stats:
    """dlib's ``running_stats<double>``: sums of x, x^2, x^3, x^4, count, min, max."""

    def __init__(self):
        self.clear()

    def clear(self):
        self.sum_ = self.sum_sqr = self.sum_cub = self.sum_four = 0.0
        self.n = 0.0
        self.min_value = math.inf
        self.max_value = -math.inf

    def add(self, val):
        val = float(val)
        self.sum_ += val
        self.sum_sqr += val * val
        self.sum_cub += val * val * val
        self.sum_four += val * val * val * val
        if val < self.min_value:
            self.min_value = val
        if val > self.max_value:
            self.max_value = val
        self.n += 1

    def current_n(self):
        return self.n

    def sum(self):
        return self.sum_

    def mean(self):
        return self.sum_ / self.n if self.n != 0 else 0.0

    def max(self):
        if self.n <= 0:
            raise ValueError("running_stats.max: no values added yet")
        return self.max_value

    def min(self):
        if self.n <= 0:
            raise ValueError("running_stats.min: no values added yet")
        return self.min_value

    def variance(self):
        """Unbiased variance, clamped at 0 (dlib's formula). Requires 2 or more values."""
        if self.n <= 1:
            raise ValueError("running_stats.variance: needs at least 2 values")
        temp = 1 / (self.n - 1)
        temp = temp * (self.sum_sqr - self.sum_ * self.sum_ / self.n)
        return temp if temp >= 0 else 0.0

    def stddev(self):
        return math.sqrt(self.variance())

    def scale(self, val):
        return (val - self.mean()) / math.sqrt(self.variance())

    def __add__(self, rhs):
        out = running_stats()
        out.sum_, out.sum_sqr = self.sum_ + rhs.sum_, self.sum_sqr + rhs.sum_sqr
        out.sum_cub, out.sum_four = self.sum_cub + rhs.sum_cub, self.sum_four + rhs.sum_four
        out.n = self.n + rhs.n
        out.min_value = min(rhs.min_value, self.min_value)
        out.max_value = max(rhs.max_value, self.max_value)
        return out

    def serialize(self, w):
        """dlib: int 2, then sum, sum_sqr, sum_cub, sum_four, n, min, max as doubles."""
        w.int(2)
        for v in (self.sum_, self.sum_sqr, self.sum_cub, self.sum_four, self.n,
                  self.min_value, self.max_value):
            w.float64(v)

    def deserialize(self, r):
        start = r.pos
        version = r.int("the running_stats version")
        if version != 2:
            raise r.error(f"running_stats: expected version 2, found {version}", start)
        (self.sum_, self.sum_sqr, self.sum_cub, self.sum_four, self.n, self.min_value,
         self.max_value) = (r.float64(f"running_stats.{f}") for f in
                            ("sum", "sum_sqr", "sum_cub", "sum_four", "n", "min", "max"))


class running_stats_decayed:
    """dlib's ``running_stats_decayed<double>(decay_halflife=1000)``: each new value multiplies
    the old sums by ``forget = 0.5**(1/halflife)``."""

    def __init__(self, decay_halflife=1000):
        if not decay_halflife > 0:
            raise ValueError(f"running_stats_decayed: decay_halflife must be > 0, got {decay_halflife}")
        self.sum_x = self.sum_xx = self.n = 0.0
        self.forget = math.pow(0.5, 1 / decay_halflife)

    def forget_factor(self):
        return self.forget

    def add(self, x):
        x = float(x)
        self.sum_xx = self.sum_xx * self.forget + x * x
        self.sum_x = self.sum_x * self.forget + x
        self.n = self.n * self.forget + 1

    def current_n(self):
        return self.n

    def mean(self):
        return self.sum_x / self.n if self.n != 0 else 0.0

    def variance(self):
        if self.n <= 1:
            raise ValueError("running_stats_decayed.variance: needs current_n() > 1")
        temp = 1 / (self.n - 1) * (self.sum_xx - self.sum_x * self.sum_x / self.n)
        return temp if temp >= 0 else 0.0

    def stddev(self):
        return math.sqrt(self.variance())

    def serialize(self, w):
        """dlib: int 1, then sum_x, sum_xx, n, forget as doubles."""
        w.int(1)
        for v in (self.sum_x, self.sum_xx, self.n, self.forget):
            w.float64(v)

    def deserialize(self, r):
        start = r.pos
        version = r.int("the running_stats_decayed version")
        if version != 1:
            raise r.error(f"running_stats_decayed: expected version 1, found {version}", start)
        self.sum_x, self.sum_xx, self.n, self.forget = (
            r.float64(f"running_stats_decayed.{f}") for f in ("sum_x", "sum_xx", "n", "forget"))


def _normal_cdf(value, mean, stddev):
    if stddev == 0:
        return 0.0 if value < mean else (1.0 if value > mean else 0.5)
    value = (value - mean) / stddev
    return 0.5 * math.erfc(-value / math.sqrt(2.0))


class running_gradient:
    """dlib's ``running_gradient``: recursive least squares for ``y = w0*x + w1`` with
    x = 0, 1, 2, ... (R starts at 1e6*I, w at 0), plus the running squared residual."""

    def __init__(self):
        self.clear()

    def clear(self):
        self.n = 0.0
        self.r00, self.r01, self.r11 = 1e6, 0.0, 1e6   # R (symmetric)
        self.w0 = self.w1 = 0.0
        self.residual_squared = 0.0

    def current_n(self):
        return self.n

    def add(self, y):
        y = float(y)
        x0 = self.n                                  # x = (n, 1)
        t0 = self.r00 * x0 + self.r01                # tmp = R*x
        t1 = self.r01 * x0 + self.r11
        temp = 1 + x0 * t0 + t1                      # 1 + x'Rx
        self.r00 -= t0 * t0 / temp                   # R -= tmp*tmp'/temp (stays symmetric,
        self.r01 -= t0 * t1 / temp                   # so dlib's 0.5*(R+R') is a no-op here)
        self.r11 -= t1 * t1 / temp
        err = y - (x0 * self.w0 + self.w1)
        self.w0 += (self.r00 * x0 + self.r01) * err  # w += R*x*(y - x'w)
        self.w1 += (self.r01 * x0 + self.r11) * err
        self.residual_squared += (y - (x0 * self.w0 + self.w1)) ** 2 * temp
        self.n += 1

    def gradient(self):
        if self.n <= 1:
            raise ValueError("running_gradient.gradient: needs more than 1 value")
        return self.w0

    def intercept(self):
        if self.n <= 0:
            raise ValueError("running_gradient.intercept: needs at least 1 value")
        return self.w1

    def standard_error(self):
        if self.n <= 2:
            raise ValueError("running_gradient.standard_error: needs more than 2 values")
        s = self.residual_squared / (self.n - 2)
        adjust = 12.0 / (self.n ** 3 - self.n)
        return math.sqrt(s * adjust)

    def probability_gradient_less_than(self, thresh):
        if self.n <= 2:
            raise ValueError("running_gradient.probability_gradient_less_than: needs more than 2 values")
        return _normal_cdf(thresh, self.w0, self.standard_error())

    def probability_gradient_greater_than(self, thresh):
        return 1 - self.probability_gradient_less_than(thresh)

    def serialize(self, w):
        """dlib: int 1, n, R (matrix 2x2), w (matrix 2x1), residual_squared (doubles)."""
        w.int(1)
        w.float64(self.n)
        w.int(-2), w.int(-2)
        for v in (self.r00, self.r01, self.r01, self.r11):
            w.float64(v)
        w.int(-2), w.int(-1)
        w.float64(self.w0), w.float64(self.w1)
        w.float64(self.residual_squared)

    def deserialize(self, r):
        start = r.pos
        version = r.int("the running_gradient version")
        if version != 1:
            raise r.error(f"running_gradient: expected version 1, found {version}", start)
        n = r.float64("running_gradient.n")
        for shape in ((2, 2), (2, 1)):
            at = r.pos
            dims = (abs(r.int("a matrix dimension")), abs(r.int("a matrix dimension")))
            if dims != shape:
                raise r.error(f"running_gradient: expected a {shape} matrix, found {dims}", at)
            if shape == (2, 2):
                r00, r01, _r10, r11 = (r.float64("running_gradient.R") for _ in range(4))
            else:
                w0, w1 = r.float64("running_gradient.w"), r.float64("running_gradient.w")
        self.residual_squared = r.float64("running_gradient.residual_squared")
        self.n, self.r00, self.r01, self.r11, self.w0, self.w1 = n, r00, r01, r11, w0, w1


def _fit(values):
    g = running_gradient()
    for v in values:
        g.add(v)
    return g


def probability_gradient_less_than(values, thresh):
    """P(slope of the least-squares line through ``values`` < thresh); needs > 2 values."""
    g = _fit(values)
    if g.current_n() <= 2:
        raise ValueError("probability_gradient_less_than: needs more than 2 values")
    return g.probability_gradient_less_than(thresh)


def probability_gradient_greater_than(values, thresh):
    g = _fit(values)
    if g.current_n() <= 2:
        raise ValueError("probability_gradient_greater_than: needs more than 2 values")
    return g.probability_gradient_greater_than(thresh)


def find_upper_quantile(values, quantile):
    """The value at sorted-descending index ``round((n-1)*(1-quantile))`` of ascending order:
    dlib's ``nth_element`` at that index (so quantile 0.1 gives roughly the 90th percentile)."""
    if not 0 <= quantile <= 1:
        raise ValueError(f"find_upper_quantile: quantile must be in [0, 1], got {quantile}")
    vals = sorted(float(v) for v in values)
    if not vals:
        raise ValueError("find_upper_quantile: needs at least 1 value")
    idx = _round_half_away((len(vals) - 1) * (1 - quantile))
    return vals[idx]


def _round_half_away(x):
    """std::round: halves away from zero (Python's round() rounds halves to even)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def probability_values_are_increasing(values):
    """P(the values are trending up) = P(slope > 0); 0.5 with fewer than 3 values."""
    g = _fit(values)
    return g.probability_gradient_greater_than(0) if g.current_n() > 2 else 0.5


probability_that_sequence_is_increasing = probability_values_are_increasing


def probability_values_are_increasing_robust(values, quantile_discard=0.10):
    """As ``probability_values_are_increasing`` after dropping values above the upper
    ``quantile_discard`` quantile."""
    values = [float(v) for v in values]
    thresh = find_upper_quantile(values, quantile_discard)
    g = _fit(v for v in values if v <= thresh)
    return g.probability_gradient_greater_than(0) if g.current_n() > 2 else 0.5


def _check_p(name, p):
    if not 0.5 < p < 1:
        raise ValueError(f"{name}: the probability must be in (0.5, 1), got {p}")


def _count_backwards(values, p, keep=None, decreasing=True):
    g = running_gradient()
    count = 0
    for j, v in enumerate(reversed(values), 1):
        if keep is None or v <= keep:
            g.add(v)
        if g.current_n() > 2:
            # walking backwards, a positive fitted slope means the loss went DOWN over time
            prob = (g.probability_gradient_greater_than(0) if decreasing
                    else g.probability_gradient_less_than(0))
            if prob < p:
                count = j
    return count


def count_steps_without_decrease(values, probability_of_decrease=0.51):
    """The largest ``j`` such that the last ``j`` values are not confidently decreasing
    (P(decreasing) < ``probability_of_decrease``); 0 if every window of 3+ values is."""
    _check_p("count_steps_without_decrease", probability_of_decrease)
    return _count_backwards([float(v) for v in values], probability_of_decrease)


def count_steps_without_decrease_robust(values, probability_of_decrease=0.51, quantile_discard=0.10):
    """``count_steps_without_decrease`` ignoring values above the upper ``quantile_discard``
    quantile (they still count as steps)."""
    _check_p("count_steps_without_decrease_robust", probability_of_decrease)
    if not 0 <= quantile_discard <= 1:
        raise ValueError(f"count_steps_without_decrease_robust: quantile_discard must be in "
                         f"[0, 1], got {quantile_discard}")
    values = [float(v) for v in values]
    if not values:
        return 0
    return _count_backwards(values, probability_of_decrease,
                            keep=find_upper_quantile(values, quantile_discard))


def count_steps_without_increase(values, probability_of_increase=0.51):
    _check_p("count_steps_without_increase", probability_of_increase)
    return _count_backwards([float(v) for v in values], probability_of_increase, decreasing=False)
