"""Layers that move values without arithmetic: ``reorg_`` (space to depth), ``transpose_``,
``extract_``, ``slice_`` and ``concat_`` (with dlib's ``concat2..5`` and the inception
helpers ``inception2..5``, built on the tags ``itag0..itag5`` and ``iskip``).

All are out of place; their backward ADDS to the subnet's (or the tagged layers')
gradient.
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..core import add_skip_layer, layer
from ..tensor import alias_tensor
from ..templates import SUBNET, NetType, check_tag, layer_template, skip_template, tag_template
from ._serial import read_type_ints, version_only
from .base import check_int, computational_layer

__all__ = ["reorg_", "transpose_", "extract_", "slice_", "concat_", "reorg", "transpose",
           "extract", "slice", "concat2", "concat3", "concat4", "concat5",
           "itag0", "itag1", "itag2", "itag3", "itag4", "itag5", "iskip",
           "inception2", "inception3", "inception4", "inception5"]


class reorg_(computational_layer):
    """Space to depth: ``out(n, k, r, c) = in(n, k % K, r*row_stride + (k // K) //
    col_stride, c*col_stride + (k // K) % col_stride)``; the input's nr and nc must be
    divisible by the strides."""

    def template_args(self):
        return {"row_stride": self.row_stride, "col_stride": self.col_stride}

    def __init__(self, row_stride=2, col_stride=2):
        super().__init__()
        self.row_stride = check_int("reorg_", "row_stride", row_stride, 1)
        self.col_stride = check_int("reorg_", "col_stride", col_stride, 1)

    def _check(self, x):
        if x.nr() % self.row_stride or x.nc() % self.col_stride:
            raise ValueError(f"reorg_: input{x.shape} rows/columns are not divisible by the strides "
                             f"({self.row_stride}, {self.col_stride})")

    def setup(self, sub):
        self._check(sub.get_output())

    def forward(self, sub, output):
        x = sub.get_output()
        self._check(x)
        output.set_size(x.num_samples(), x.k() * self.row_stride * self.col_stride,
                        x.nr() // self.row_stride, x.nc() // self.col_stride)
        tt.reorg(False, output, self.row_stride, self.col_stride, x)

    def backward(self, gradient_input, sub, params_grad):
        tt.reorg_gradient(True, sub.get_gradient_input(), self.row_stride, self.col_stride,
                          gradient_input)

    def map_input_to_output(self, p):
        return (p[0] / self.col_stride, p[1] / self.row_stride)

    def map_output_to_input(self, p):
        return (p[0] * self.col_stride, p[1] * self.row_stride)

    def serialize(self, w):
        """dlib's "reorg_": the type's row_stride, col_stride (long longs)."""
        w.string("reorg_")
        w.int(self.row_stride)
        w.int(self.col_stride)

    def deserialize(self, r):
        r.expect_string("reorg_")
        read_type_ints(r, "reorg_", (("row_stride", self.row_stride), ("col_stride", self.col_stride)))

    def __repr__(self):
        return f"reorg\t (row_stride={self.row_stride}, col_stride={self.col_stride})"

    def to_xml(self):
        return f"<reorg row_stride='{self.row_stride}' col_stride='{self.col_stride}'/>\n"

    def dot_label(self):
        if (self.row_stride, self.col_stride) == (1, 1):
            return "reorg"
        return f"reorg | {{stride|{{{self.row_stride},{self.col_stride}}}}}"

    def to_onnx(self, g, x):
        """``src(n, c, r*rs + qy, col*cs + qx) -> dest(n, (qy*cs + qx)*k + c, r, col)``:
        ``Reshape(N, k, H/rs, rs, W/cs, cs)``, ``Transpose(0, 3, 5, 1, 2, 4)``, ``Reshape``
        (SpaceToDepth's layout, for unequal strides too)."""
        n, k, h, w = g.shape(x)
        rs, cs = self.row_stride, self.col_stride
        ho, wo = h // rs, w // cs
        six = g.reshape(x, [0, k, ho, rs, wo, cs], (n, k, ho, rs, wo, cs))
        moved = g.node("Transpose", [six], shape=(n, rs, cs, k, ho, wo), perm=[0, 3, 5, 1, 2, 4])
        return g.reshape(moved, [0, k * rs * cs, ho, wo], (n, k * rs * cs, ho, wo))


class transpose_(version_only, computational_layer):
    """Transposes every ``nr x nc`` plane: ``out(n, k, c, r) = in(n, k, r, c)``."""

    dot_name = "transpose"
    _ser_version = "transpose_"

    def forward(self, sub, output):
        x = sub.get_output()
        output.set_size(x.num_samples(), x.k(), x.nc(), x.nr())
        tt.transpose(False, output, x)

    def backward(self, gradient_input, sub, params_grad):
        tt.transpose(True, sub.get_gradient_input(), gradient_input)

    def map_input_to_output(self, p):
        return (p[1], p[0])

    def map_output_to_input(self, p):
        return (p[1], p[0])

    def __repr__(self):
        return "transpose"

    def to_xml(self):
        return "<transpose />\n"

    def to_onnx(self, g, x):
        n, k, h, w = g.shape(x)
        return g.node("Transpose", [x], shape=(n, k, w, h), perm=[0, 1, 3, 2])


class extract_(computational_layer):
    """Per sample, the ``k*nr*nc`` consecutive values starting at flat offset ``offset``
    (in memory order over the sample's k, nr, nc), shaped ``(k, nr, nc)``."""

    def template_args(self):
        return {"offset": self.offset, "k": self.k, "nr": self.nr, "nc": self.nc}

    def __init__(self, offset, k, nr, nc):
        super().__init__()
        self.offset = check_int("extract_", "offset", offset, 0)
        self.k = check_int("extract_", "k", k, 1)
        self.nr = check_int("extract_", "nr", nr, 1)
        self.nc = check_int("extract_", "nc", nc, 1)

    def _aliases(self, x):
        """dlib's ``aout``/``ain``: each sample as one row of k*nr*nc (resp. all) values."""
        n = x.num_samples()
        per_sample = x.size() // n if n else 0
        if per_sample < self.offset + self.k * self.nr * self.nc:
            raise ValueError(f"extract_: {self.k * self.nr * self.nc} values at offset {self.offset} "
                             f"do not fit in the {per_sample} values per sample of input{x.shape}")
        return alias_tensor(n, self.k * self.nr * self.nc), alias_tensor(n, per_sample)

    def setup(self, sub):
        self._aliases(sub.get_output())

    def forward(self, sub, output):
        x = sub.get_output()
        aout, ain = self._aliases(x)
        output.set_size(x.num_samples(), self.k, self.nr, self.nc)
        tt.copy_tensor(False, aout(output, 0), 0, ain(x, 0), self.offset, aout.k())

    def backward(self, gradient_input, sub, params_grad):
        grad = sub.get_gradient_input()
        aout, ain = self._aliases(grad)
        tt.copy_tensor(True, ain(grad, 0), self.offset, aout(gradient_input, 0), 0, aout.k())

    def serialize(self, w):
        """dlib's "extract_": the type's offset, k, nr, nc (longs)."""
        w.string("extract_")
        for v in (self.offset, self.k, self.nr, self.nc):
            w.int(v)

    def deserialize(self, r):
        r.expect_string("extract_")
        read_type_ints(r, "extract_", (("offset", self.offset), ("k", self.k), ("nr", self.nr),
                                       ("nc", self.nc)))

    def __repr__(self):
        return f"extract\t (offset={self.offset}, k={self.k}, nr={self.nr}, nc={self.nc})"

    def to_xml(self):
        return f"<extract offset='{self.offset}' k='{self.k}' nr='{self.nr}' nc='{self.nc}'/>\n"

    def dot_label(self):
        return "extract" + "".join(f" | {{{name}|{{{getattr(self, name)}}}}}"
                                   for name in ("offset", "k", "nr", "nc"))

    def to_onnx(self, g, x):
        """``Flatten``, ``Slice`` of the ``k*nr*nc`` values at ``offset``, ``Reshape``."""
        n, k, h, w = g.shape(x)
        size = self.k * self.nr * self.nc
        if k * h * w < self.offset + size:
            g.refuse(f"{size} values at offset {self.offset} do not fit in the {k * h * w} values per "
                     f"sample of its input{(n, k, h, w)}")
        flat = g.node("Flatten", [x], shape=(n, k * h * w), axis=1)
        part = g.node("Slice", [flat, g.ints([self.offset]), g.ints([self.offset + size]), g.ints([1])],
                      shape=(n, size))
        return g.reshape(part, [0, self.k, self.nr, self.nc], (n, self.k, self.nr, self.nc))


class slice_(computational_layer):
    """The 3-D crop ``in[:, offset_k:offset_k+k, offset_nr:offset_nr+nr,
    offset_nc:offset_nc+nc]``. dlib's net_to_dot does not know it (``unhandled layer``)."""

    _SER_FIELDS = ("offset_k", "offset_nr", "offset_nc", "k", "nr", "nc")

    def template_args(self):
        return {"offset_k": self.offset_k,
                "offset_nr": self.offset_nr,
                "offset_nc": self.offset_nc,
                "k": self.k,
                "nr": self.nr,
                "nc": self.nc}

    def serialize(self, w):
        """dlib's "slice_": the type's offset_k, offset_nr, offset_nc, k, nr, nc (longs)."""
        w.string("slice_")
        for f in self._SER_FIELDS:
            w.int(getattr(self, f))

    def deserialize(self, r):
        r.expect_string("slice_")
        read_type_ints(r, "slice_", [(f, getattr(self, f)) for f in self._SER_FIELDS])

    def __init__(self, offset_k, offset_nr, offset_nc, k, nr, nc):
        super().__init__()
        self.offset_k = check_int("slice_", "offset_k", offset_k, 0)
        self.offset_nr = check_int("slice_", "offset_nr", offset_nr, 0)
        self.offset_nc = check_int("slice_", "offset_nc", offset_nc, 0)
        self.k = check_int("slice_", "k", k, 1)
        self.nr = check_int("slice_", "nr", nr, 1)
        self.nc = check_int("slice_", "nc", nc, 1)

    def _check(self, x):
        need = (self.offset_k + self.k, self.offset_nr + self.nr, self.offset_nc + self.nc)
        if any(a > b for a, b in zip(need, x.shape[1:])):
            raise ValueError(f"slice_: the block (k={self.k}, nr={self.nr}, nc={self.nc}) at offset "
                             f"({self.offset_k}, {self.offset_nr}, {self.offset_nc}) does not fit in "
                             f"input{x.shape}")

    def setup(self, sub):
        self._check(sub.get_output())

    def forward(self, sub, output):
        x = sub.get_output()
        self._check(x)
        output.set_size(x.num_samples(), self.k, self.nr, self.nc)
        tt.copy_tensor(False, output, 0, 0, 0, x, self.offset_k, self.offset_nr, self.offset_nc,
                       self.k, self.nr, self.nc)

    def backward(self, gradient_input, sub, params_grad):
        tt.copy_tensor(True, sub.get_gradient_input(), self.offset_k, self.offset_nr, self.offset_nc,
                       gradient_input, 0, 0, 0, self.k, self.nr, self.nc)

    def __repr__(self):
        # dlib prints the three offsets without separators
        return (f"slice\t (offset_k={self.offset_k}offset_nr={self.offset_nr}"
                f"offset_nc={self.offset_nc}, k={self.k}, nr={self.nr}, nc={self.nc})")

    def to_xml(self):
        # dlib labels offset_nc as a second offset_nr
        return (f"<slice offset_k='{self.offset_k}' offset_nr='{self.offset_nr}' "
                f"offset_nr='{self.offset_nc}' k='{self.k}' nr='{self.nr}' nc='{self.nc}'/>\n")

    def to_onnx(self, g, x):
        """``Slice`` over axes 1, 2, 3."""
        n = g.shape(x)[0]
        starts = [self.offset_k, self.offset_nr, self.offset_nc]
        ends = [self.offset_k + self.k, self.offset_nr + self.nr, self.offset_nc + self.nc]
        return g.node("Slice", [x, g.ints(starts), g.ints(ends), g.ints([1, 2, 3])],
                      shape=(n, self.k, self.nr, self.nc))


class concat_(computational_layer):
    """Concatenates the outputs of the tagged layers along k, in the order of ``tags``
    (they must agree in num_samples, nr and nc). Its own subnet only hosts the tags."""

    dot_name, dot_edges = "concat", "tags"

    def __init__(self, *tags):
        super().__init__()
        if not tags:
            raise TypeError("concat_: needs at least one tag")
        self.tags = tuple(check_tag("concat_", t) for t in tags)

    def tag_count(self):
        return len(self.tags)

    def serialize(self, w):
        """dlib's "concat_": the number of tags (size_t); the tag ids are not stored."""
        w.string("concat_")
        w.uint(len(self.tags))

    def deserialize(self, r):
        r.expect_string("concat_")
        at = r.pos
        count = r.uint("concat_'s tag count")
        if count != len(self.tags):
            raise r.error(f"concat_: the file has {count} tags but the net type has {len(self.tags)}", at)

    def _tag_list(self):
        return self.tags

    def _tagged(self, sub):
        return [layer(sub, t) for t in self.tags]

    def forward(self, sub, output):
        outs = [t.get_output() for t in self._tagged(sub)]
        first = outs[0]
        for tag, o in zip(self.tags, outs):
            if o.num_samples() != first.num_samples() or o.shape[2:] != first.shape[2:]:
                detail = ", ".join(f"{t.name}{x.shape}" for t, x in zip(self.tags, outs))
                raise ValueError(f"concat_: the tagged outputs must agree in num_samples, nr and nc, "
                                 f"got {detail}")
        output.set_size(first.num_samples(), sum(o.k() for o in outs), first.nr(), first.nc())
        offset = 0
        for o in outs:
            tt.copy_tensor(False, output, offset, o, 0, o.k())
            offset += o.k()

    def backward(self, gradient_input, sub, params_grad):
        offset = 0
        for node in self._tagged(sub):
            grad = node.get_gradient_input()
            tt.copy_tensor(True, grad, 0, gradient_input, offset, grad.k())
            offset += grad.k()

    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)

    def _list_tags(self):
        return ",".join(str(t.id) for t in self.tags)

    def __repr__(self):
        return f"concat\t ({self._list_tags()})"

    def to_xml(self):
        return f"<concat tags='{self._list_tags()}'/>\n"

    def to_onnx(self, g, x):
        """``Concat(axis=1)`` of the tagged values, in the order of the tags."""
        parts = [g.tagged(t) for t in self.tags]
        shapes = [g.shape(p) for p in parts]
        if any(s[2:] != shapes[0][2:] for s in shapes):
            g.refuse(f"the tagged outputs must agree in nr and nc, got {shapes}")
        n, _, h, w = shapes[0]
        return g.node("Concat", parts, shape=(n, sum(s[1] for s in shapes), h, w), axis=1)


def _concat_n(n):
    def make(*tags):
        if len(tags) != n:
            raise TypeError(f"concat{n} takes {n} tags, got {len(tags)}")
        return concat_(*tags)

    make.__name__ = f"concat{n}"
    make.__doc__ = f"``concat{n}[tag_1, ..., tag_{n}, SUBNET]``: ``concat_`` of {n} tags."
    return make


reorg = layer_template("reorg", reorg_)
transpose = layer_template("transpose", transpose_)
extract = layer_template("extract", extract_)
slice = layer_template("slice", slice_)  # noqa: A001 (dlib's name)
concat2 = layer_template("concat2", _concat_n(2))
concat3 = layer_template("concat3", _concat_n(3))
concat4 = layer_template("concat4", _concat_n(4))
concat5 = layer_template("concat5", _concat_n(5))


# ----------------------------------------------------------------------------------------
# inception: dlib's private tags (ids 1000..1005) and the skip back to the block's input

itag0, itag1, itag2, itag3, itag4, itag5 = (tag_template(f"itag{i}", 1000 + i) for i in range(6))


class _iskip_node(add_skip_layer):
    """``iskip``: dlib's ``add_skip_layer<itag0>`` (printed ``skip1000``): outputs the output
    of the nearest ``itag0`` below, i.e. the inception block's input."""

    def is_my_tag(self, node):
        return node.template is itag0


iskip = skip_template("iskip", 1000, node_cls=_iskip_node)


def _substitute(net_type, subnet):
    """``net_type`` (a net type over ``SUBNET``) with its ``SUBNET`` placeholder replaced."""
    if net_type is SUBNET:
        return subnet
    if not isinstance(net_type, NetType):
        raise TypeError(f"expected a net type over SUBNET, got {net_type!r}")
    if net_type.subnet is SUBNET:
        below = subnet
    else:
        below = _substitute(net_type.subnet, subnet)
    return net_type.template[(*net_type.args, below)]


def _apply_block(name, block, subnet):
    """A block as ``repeat`` takes it: a net type over ``SUBNET`` or a function of SUBNET."""
    if isinstance(block, NetType):
        if block.is_loss():
            raise TypeError(f"{name}[...]: a block cannot be a loss, got {block!r}")
        return _substitute(block, subnet)
    if callable(block):
        out = block(subnet)
        if not isinstance(out, NetType) or out.is_loss():
            raise TypeError(f"{name}[...]: block {block!r} did not return a net type")
        return out
    raise TypeError(f"{name}[...]: a block must be a function of SUBNET or a net type over SUBNET, "
                    f"got {block!r}")


class _inception_template:
    """``inceptionN[B1, ..., BN, SUBNET]``: dlib's ``using`` alias

        concatN[itag1, ..., itagN, itag1[B1[iskip[itag2[B2[... itagN[BN[itag0[SUBNET]]]]]]]]]

    Every branch reads the block's input (``itag0``, reached through ``iskip``); the result
    is the branches' outputs concatenated along k. The expression returned is that expanded
    net type (an alias, like dlib's, so it prints and parses as concatN[...])."""

    def __init__(self, n):
        self.n = n
        self.name = f"inception{n}"

    def __getitem__(self, items):
        items = items if isinstance(items, tuple) else (items,)
        if len(items) != self.n + 1:
            raise TypeError(f"{self.name}[B1, ..., B{self.n}, SUBNET] takes {self.n + 1} arguments, "
                            f"got {len(items)}")
        *blocks, subnet = items
        tags = (itag1, itag2, itag3, itag4, itag5)[:self.n]
        net = itag0[subnet]
        for i in reversed(range(self.n)):
            net = tags[i][_apply_block(self.name, blocks[i], net)]
            if i:
                net = iskip[net]
        return (concat2, concat3, concat4, concat5)[self.n - 2][(*tags, net)]

    def __repr__(self):
        return self.name


inception2, inception3, inception4, inception5 = (_inception_template(n) for n in range(2, 6))
