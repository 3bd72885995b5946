"""Layers that combine their input with the output of a tagged layer below:
``add_prev_``, ``mult_prev_``, ``multm_prev_``, ``scale_`` and ``scale_prev_``.

Each takes the tag as its constructor argument (a tag template: ``add_prev_(tag1)``,
``mult_prev_(itag1)``, or one made with ``tag_template``);
``add_prev[tag1, SUBNET]`` and the numbered aliases ``add_prev1[SUBNET]`` ..
``add_prev10[SUBNET]`` build them. None has parameters; backward ADDS to the gradient
inputs of both the subnet and the tagged layer.
"""

from __future__ import annotations

from .. import tensor_tools as tt
from ..core import layer
from ..tensor import alias_tensor
from ..templates import check_tag, layer_template, tag_templates
from ._serial import read_alias, write_alias
from .base import computational_layer, gradient_input_target

__all__ = ["add_prev_", "mult_prev_", "multm_prev_", "scale_", "scale_prev_",
           "add_prev", "mult_prev", "multm_prev", "scale", "scale_prev"]


class _tag_merge(computational_layer):
    """Holds the tag (``self.tag``, a tag template; ``self.id``, its number) and prints
    ``<name><id>`` as dlib's ``operator<<`` does."""

    _name = ""  # dlib's printed / xml name
    dot_edges = "tag"

    # dlib's record of add_prev_, mult_prev_ and multm_prev_: the version string (the class
    # name) alone; the tag id is not stored
    def template_args(self):
        return {"tag": self.tag}

    def serialize(self, w):
        w.string(type(self).__name__)

    def deserialize(self, r):
        r.expect_string(type(self).__name__)

    def __init__(self, tag):
        super().__init__()
        # any tag template: tag1..tag10, dlib's itag0..itag5 (``add_prev<itag3, ...>`` in
        # slm_advanced's mixture of experts) or one made with tag_template
        self.tag = check_tag(type(self).__name__, tag)
        self.id = tag.id

    def _tag_list(self):
        return [self.tag]

    def _tagged(self, sub):
        return layer(sub, self.tag)

    def __repr__(self):
        return f"{self._name}{self.id}"

    def to_xml(self):
        return f"<{self._name} tag='{self.id}'/>\n"


class _identity_map:
    def map_input_to_output(self, p):
        return tuple(p)

    def map_output_to_input(self, p):
        return tuple(p)


def _max_dims(t1, t2):
    return tuple(max(a, b) for a, b in zip(t1.shape, t2.shape))


class add_prev_(_identity_map, _tag_merge):
    """``output = sub + tagged``, zero-padded to the largest of each dimension."""

    _name = "add_prev"
    dot_name = "add"

    def forward(self, sub, output):
        t1, t2 = sub.get_output(), self._tagged(sub).get_output()
        output.set_size(*_max_dims(t1, t2))
        tt.add(output, t1, t2)

    def backward(self, gradient_input, sub, params_grad):
        # each gradient is its own tensor plus the matching (cropped) part of gradient_input;
        # one this pass has not written yet is assigned when the shapes agree (no zero-fill)
        for node in (sub, self._tagged(sub)):
            g, add_to = gradient_input_target(node)
            if g.shape == gradient_input.shape:
                tt.add(1 if add_to else 0, g, 1, gradient_input)
            else:
                if not add_to:
                    g.fill(0)
                tt.add(g, g, gradient_input)

    def to_onnx(self, g, x):
        """``Add``; tensors of different sizes are zero-padded at the end of each dimension
        to the larger (``Pad``), as dlib's ``add`` of mismatched tensors."""
        t = g.tagged(self.tag)
        if g.shape(x)[0] != g.shape(t)[0]:
            g.refuse(f"its input{g.shape(x)} and tag{self.id}'s output{g.shape(t)} differ in num_samples")
        shape = tuple(max(a, b) for a, b in zip(g.shape(x), g.shape(t)))
        return g.node("Add", [g.zero_pad_to(x, shape), g.zero_pad_to(t, shape)], shape=shape)


class mult_prev_(_identity_map, _tag_merge):
    """``output = sub * tagged`` pointwise, zero-padded to the largest of each dimension."""

    _name = "mult_prev"
    dot_name = "mult"

    def forward(self, sub, output):
        t1, t2 = sub.get_output(), self._tagged(sub).get_output()
        output.set_size(*_max_dims(t1, t2))
        tt.multiply_zero_padded(False, output, t1, t2)

    def backward(self, gradient_input, sub, params_grad):
        t1, t2 = sub.get_output(), self._tagged(sub).get_output()
        tt.multiply_zero_padded(True, sub.get_gradient_input(), t2, gradient_input)
        tt.multiply_zero_padded(True, self._tagged(sub).get_gradient_input(), t1, gradient_input)

    def to_onnx(self, g, x):
        """``Mul``, zero-padded to the larger size as ``add_prev_``."""
        t = g.tagged(self.tag)
        if g.shape(x)[0] != g.shape(t)[0]:
            g.refuse(f"its input{g.shape(x)} and tag{self.id}'s output{g.shape(t)} differ in num_samples")
        shape = tuple(max(a, b) for a, b in zip(g.shape(x), g.shape(t)))
        return g.node("Mul", [g.zero_pad_to(x, shape), g.zero_pad_to(t, shape)], shape=shape)


class multm_prev_(_identity_map, _tag_merge):
    """Per-(n, k) matrix product: ``output[n,k] = sub[n,k] @ tagged[n,k]``, shape
    ``(N, k, sub.nr, tagged.nc)`` (``tt.gemm`` PLANE_WISE, with its matrix rules)."""

    _name = "multm_prev"
    dot_name = "multm"

    def forward(self, sub, output):
        t1, t2 = sub.get_output(), self._tagged(sub).get_output()
        output.set_size(t1.num_samples(), t1.k(), t1.nr(), t2.nc())
        try:
            tt.gemm(0, output, 1, t1, False, t2, False, tt.PLANE_WISE)
        except ValueError as e:
            raise ValueError(f"multm_prev_: can't multiply the planes of the input{t1.shape} by those of "
                             f"tag{self.id}'s output{t2.shape}: {e}") from None

    def backward(self, gradient_input, sub, params_grad):
        t1, t2 = sub.get_output(), self._tagged(sub).get_output()
        tt.gemm(1, sub.get_gradient_input(), 1, gradient_input, False, t2, True, tt.PLANE_WISE)
        tt.gemm(1, self._tagged(sub).get_gradient_input(), 1, t1, True, gradient_input, False, tt.PLANE_WISE)

    def to_onnx(self, g, x):
        """``MatMul`` of the planes, ``(N, k, M, L) x (N, k, L, P)``. Only for equal N and k:
        dnnpy's PLANE_WISE gemm reads other shape pairs in ways (the first min(N) x min(k)
        planes, an ``(N, K, 1, 1)`` tensor as one matrix) that ONNX cannot express."""
        t = g.tagged(self.tag)
        a, b = g.shape(x), g.shape(t)
        if a[:2] != b[:2] or a[3] != b[2]:
            g.refuse(f"only the per-plane product of (N, k, M, L) by (N, k, L, P) is exported; its input "
                     f"is {a} and tag{self.id}'s output {b}")
        return g.node("MatMul", [x, t], shape=(a[0], a[1], a[2], b[3]))


class _scale_base(_tag_merge):
    """``OUT(n,k,r,c) = INPUT(n,k,r,c) * SCALES(n,k)``; the subclasses say which of the
    subnet and the tagged layer is INPUT and which is SCALES ``(N, k, 1, 1)``.

    ``reshape_scales`` / ``reshape_src`` are dlib's (serialized) views used by backward."""

    def __init__(self, tag):
        super().__init__(tag)
        # dlib's default-constructed alias_tensor: all four dims 0 (it writes 0,0,0,0)
        self.reshape_scales = alias_tensor(0, 0, 0, 0)
        self.reshape_src = alias_tensor(0, 0, 0, 0)

    def serialize(self, w):
        """dlib's "scale_" / "scale_prev_": the alias shapes reshape_scales, reshape_src."""
        w.string(type(self).__name__)
        write_alias(w, self.reshape_scales)
        write_alias(w, self.reshape_src)

    def deserialize(self, r):
        name = type(self).__name__
        r.expect_string(name)
        scales = read_alias(r, f"{name} reshape_scales")
        src = read_alias(r, f"{name} reshape_src")
        self.reshape_scales, self.reshape_src = scales, src

    def _roles(self, sub):
        """(src node, scales node)."""
        raise NotImplementedError

    def forward(self, sub, output):
        src_node, scales_node = self._roles(sub)
        src, scales = src_node.get_output(), scales_node.get_output()
        if scales.shape != (src.num_samples(), src.k(), 1, 1):
            raise ValueError(f"{type(self).__name__}: the scales{scales.shape} must be "
                             f"({src.num_samples()}, {src.k()}, 1, 1) for the scaled input{src.shape}")
        output.copy_size(src)
        tt.scale_channels(False, output, src, scales)

    def backward(self, gradient_input, sub, params_grad):
        src_node, scales_node = self._roles(sub)
        src, scales = src_node.get_output(), scales_node.get_output()
        tt.scale_channels(True, src_node.get_gradient_input(), gradient_input, scales)
        if self.reshape_src.num_samples() != src.num_samples():
            # dlib's condition (it compares num_samples with N*k): true on the first call
            self.reshape_scales = alias_tensor(src.num_samples() * src.k())
            self.reshape_src = alias_tensor(src.num_samples() * src.k(), src.nr() * src.nc())
        sgrad = self.reshape_scales(scales_node.get_gradient_input())
        tt.dot_prods(True, sgrad, self.reshape_src(src), self.reshape_src(gradient_input))

    def to_onnx(self, g, x):
        """``Mul`` of the scaled input by the ``(N, k, 1, 1)`` scales (broadcast)."""
        t = g.tagged(self.tag)
        src, scales = (t, x) if isinstance(self, scale_) else (x, t)
        n, k = g.shape(src)[:2]
        if g.shape(scales) != (n, k, 1, 1):
            g.refuse(f"the scales{g.shape(scales)} must be ({n}, {k}, 1, 1) for the scaled input{g.shape(src)}")
        return g.node("Mul", [src, scales], shape=g.shape(src))


class scale_(_scale_base):
    """INPUT is the tagged layer's output, SCALES the subnet's output (dlib's ``scale_``,
    as in squeeze-and-excitation blocks)."""

    _name = "scale"
    dot_name = "scale"

    def _roles(self, sub):
        return self._tagged(sub), sub


class scale_prev_(_identity_map, _scale_base):
    """INPUT is the subnet's output, SCALES the tagged layer's output."""

    _name = "scale_prev"
    dot_name = "scale"

    def _roles(self, sub):
        return sub, self._tagged(sub)


add_prev = layer_template("add_prev", add_prev_)
mult_prev = layer_template("mult_prev", mult_prev_)
multm_prev = layer_template("multm_prev", multm_prev_)
scale = layer_template("scale", scale_)
scale_prev = layer_template("scale_prev", scale_prev_)

# the numbered aliases: add_prev1 = add_prev<tag1, ...> ... scale_prev10
for _base, _cls in (("add_prev", add_prev_), ("mult_prev", mult_prev_), ("multm_prev", multm_prev_),
                    ("scale", scale_), ("scale_prev", scale_prev_)):
    for _tag in tag_templates:
        _alias = f"{_base}{_tag.id}"
        globals()[_alias] = layer_template(_alias, _cls, tag=_tag)
        __all__.append(_alias)
del _base, _cls, _tag, _alias
