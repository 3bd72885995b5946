"""The sliding window that ``con_``, ``cont_``, ``max_pool_`` and ``avg_pool_`` share: its
size, strides and paddings, their accessors, dlib's coordinate maps and the window's part of
the ``net_to_dot`` label.

The values are kept as dlib keeps them: ``nr_``, ``nc_``, ``stride_y_``, ``stride_x_`` are
the template arguments (``nr_``/``nc_`` 0: the window spans the whole input), and
``padding_y_``, ``padding_x_`` the members of the same names.
"""

from __future__ import annotations

from .base import check_int

__all__ = ["sliding_window", "default_padding"]


def default_padding(stride, size):
    """dlib's default padding of a window of ``size`` at ``stride``: "same" (half the window)
    at stride 1, none otherwise."""
    return size // 2 if stride == 1 else 0


class sliding_window:
    """Mixin: call ``_init_window`` from the constructor."""

    _window_noun = "window"  # "filter" for the convolutions, in error messages

    def template_args(self):
        return {"nr": self.nr_,
                "nc": self.nc_,
                "stride_y": self.stride_y_,
                "stride_x": self.stride_x_,
                "padding_y": self.padding_y_,
                "padding_x": self.padding_x_}

    def has_default_padding(self) -> bool:
        """Whether the padding is dlib's default for the window and strides (what dlib's
        template aliases, ``con<...>`` or ``max_pool<...>``, give)."""
        return (self.padding_y_, self.padding_x_) == (default_padding(self.stride_y_, self.nr_),
                                                       default_padding(self.stride_x_, self.nc_))

    def _init_window(self, nr, nc, stride_y, stride_x, padding_y, padding_x, min_size):
        name = type(self).__name__
        self.nr_ = check_int(name, "nr", nr, min_size)
        self.nc_ = check_int(name, "nc", nc, min_size)
        self.stride_y_ = check_int(name, "stride_y", stride_y, 1)
        self.stride_x_ = check_int(name, "stride_x", stride_x, 1)
        if padding_y is None:
            padding_y = default_padding(self.stride_y_, self.nr_)
        if padding_x is None:
            padding_x = default_padding(self.stride_x_, self.nc_)
        self.padding_y_ = check_int(name, "padding_y", padding_y, 0)
        self.padding_x_ = check_int(name, "padding_x", padding_x, 0)
        noun = self._window_noun
        for axis, pad, size in (("y", self.padding_y_, self.nr_), ("x", self.padding_x_, self.nc_)):
            if size == 0 and pad != 0:
                raise ValueError(f"{name}: padding_{axis} must be 0 when the {noun} spans the whole "
                                 f"input, got {pad}")
            if size != 0 and pad >= size:
                raise ValueError(f"{name}: padding_{axis}={pad} must be smaller than the {noun} "
                                 f"size {size}")

    # dlib's accessors (con_ overrides nr()/nc(): a whole-input filter reports its size)
    def nr(self):
        return self.nr_

    def nc(self):
        return self.nc_

    def stride_y(self):
        return self.stride_y_

    def stride_x(self):
        return self.stride_x_

    def padding_y(self):
        return self.padding_y_

    def padding_x(self):
        return self.padding_x_

    def _window_fields(self):
        """The template's nr, nc, strides, then the paddings: the order of dlib's records."""
        return (self.nr_, self.nc_, self.stride_y_, self.stride_x_, self.padding_y_, self.padding_x_)

    # dlib's coordinate maps (used by input_tensor_to_output_tensor): a window centred on an
    # input point; nr()//2 and nc()//2 are integer halves, then a double division, as in dlib.
    def _window_map(self, p):
        x, y = p
        return ((x + self.padding_x_ - self.nc() // 2) / self.stride_x_,
                (y + self.padding_y_ - self.nr() // 2) / self.stride_y_)

    def _window_unmap(self, p):
        x, y = p
        return (x * self.stride_x_ - self.padding_x_ + self.nc() // 2,
                y * self.stride_y_ - self.padding_y_ + self.nr() // 2)

    def _window_xml(self):
        """``nr='..' nc='..' stride_y='..' ... padding_x='..'`` (the template's nr, nc)."""
        return (f"nr='{self.nr_}' nc='{self.nc_}' stride_y='{self.stride_y_}' "
                f"stride_x='{self.stride_x_}' padding_y='{self.padding_y_}' "
                f"padding_x='{self.padding_x_}'")

    def _window_dot(self):
        """dlib's visitor_net_to_dot fields: the template's size, the stride unless 1, the
        padding unless 0."""
        s = f" | {{size|{{{self.nr_},{self.nc_}}}}}"
        if self.stride_y_ != 1 or self.stride_x_ != 1:
            s += f" | {{stride|{{{self.stride_y_},{self.stride_x_}}}}}"
        if self.padding_y_ != 0 or self.padding_x_ != 0:
            s += f" | {{pad|{{{self.padding_y_},{self.padding_x_}}}}}"
        return s
