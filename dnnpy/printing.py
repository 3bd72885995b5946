"""Numbers and tensors as dlib's C++ streams print them: ``net_to_xml`` sets the stream's
precision to 9 significant digits (``xml_num``, ``xml_matrix``), ``net_to_dot`` and
``operator<<`` keep the default 6 (``cpp_num``)."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["cpp_num", "xml_num", "xml_matrix"]


def cpp_num(x, precision=6) -> str:
    """``x`` as a C++ ostream prints it at ``precision``: integers in full, floating point
    like printf's ``%.{precision}g`` (glibc's ``inf``, ``-inf``, ``nan``, ``-nan``).

    dlib's float members (alphas, rates, thresholds) are printed from their float32 value,
    so pass them as float32 values (``float(np.float32(v))``), as the layers store them."""
    if isinstance(x, (bool, np.bool_)):
        return "1" if x else "0"
    if isinstance(x, (numbers.Integral, np.integer)):
        return str(int(x))
    x = float(x)
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%.*g" % (precision, x)


def xml_num(x) -> str:
    """A number as ``net_to_xml`` prints it (stream precision 9)."""
    return cpp_num(x, 9)


def xml_matrix(t) -> str:
    """A tensor as dlib's ``out << mat(t)`` prints it inside ``net_to_xml``: ``num_samples``
    rows of ``size/num_samples`` float32 values, each followed by a space.

    dlib's matrix printer right-aligns every value to a width it measures in a fresh
    ``ostringstream`` (default precision 6), then prints the values on the caller's stream
    (precision 9): a value longer at precision 9 than the widest at precision 6 is not
    padded, and shorter ones are padded only to the precision-6 width."""
    if t.size() == 0:
        return ""
    rows = np.asarray(t.host_read(), dtype=np.float32).reshape(t.num_samples(), -1)
    flat = rows.reshape(-1).tolist()  # float32 values as exact Python floats
    width = max(len(cpp_num(v, 6)) for v in flat)
    ncols = rows.shape[1]
    cells = [xml_num(v).rjust(width) + " " for v in flat]
    return "".join("".join(cells[r * ncols:(r + 1) * ncols]) + "\n" for r in range(rows.shape[0]))
