"""Numbers and tensors as dlib prints them in ``to_xml`` (``net_to_xml`` sets the stream's
precision to 9 significant digits)."""

from __future__ import annotations

import numpy as np

__all__ = ["xml_num", "xml_matrix"]


def xml_num(x) -> str:
    """A number at precision 9, as C++'s ostream prints it after ``precision(9)``."""
    return f"{x:.9g}"


def xml_matrix(t) -> str:
    """A tensor as dlib prints ``mat(t)``: ``num_samples`` rows of ``size/num_samples``
    values, each right-aligned to the widest and followed by a space."""
    if t.size() == 0:
        return ""
    rows = np.asarray(t.host_read(), dtype=np.float64).reshape(t.num_samples(), -1)
    cells = [[xml_num(float(v)) for v in row] for row in rows]
    width = max(len(c) for row in cells for c in row)
    return "".join("".join(c.rjust(width) + " " for c in row) + "\n" for row in cells)
