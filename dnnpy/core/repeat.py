"""``repeat[N, block, SUBNET]``: N copies of a block, each a net of its own."""

from __future__ import annotations

from ..tensor import resizable_tensor
from .nodes import input_node, net_node

__all__ = ["repeat_layer"]


class repeat_layer(net_node):
    """``repeat[N, block, SUBNET]``: N copies of ``block`` stacked on ``subnet``.

    ``copies[0]`` is nearest the output. Each copy is a full net whose bottom is an input
    node fed with the output of the copy (or subnet) below it, as in dlib, so tags inside a
    block resolve within that copy.
    """

    def __init__(self, copies, subnet):
        if not copies:
            raise ValueError("repeat: the number of repetitions must be > 0")
        self.copies = list(copies)
        self._subnet = subnet

    def num_repetitions(self) -> int:
        """N of ``repeat[N, ...]``."""
        return len(self.copies)

    def get_repeated_layer(self, i):
        """Copy ``i`` of the block (0 is nearest the output), a net of its own."""
        return self.copies[i]

    def layers_in_each_group(self) -> int:
        """Layers in one copy of the block."""
        return self.copies[0].num_layers - 1

    def _count_layers(self):
        return len(self.copies) * self.layers_in_each_group() + self._subnet._count_layers()

    def _own_layers(self):
        # each copy's layers without its repeat-internal input (dlib: layer<0> of a repeat is
        # its first copy)
        return [entry for c in self.copies for entry in c.layers()[:-1]]

    def _count_computational(self):
        return (len(self.copies) * self.copies[0]._count_computational()
                + self._subnet._count_computational())

    def to_tensor(self, batch, data=None) -> resizable_tensor:
        """The subnet's ``to_tensor``; then, as dlib's ``repeat::to_tensor`` (which runs each
        copy's ``to_tensor`` on the converted data), every copy records the net's sample
        expansion factor (written in each copy's bottom record in files)."""
        data = self._subnet.to_tensor(batch, data)
        self._set_copies_sample_expansion_factor(self._subnet.sample_expansion_factor())
        return data

    def _set_copies_sample_expansion_factor(self, sef):
        for c in self.copies:
            node = c
            while not isinstance(node, input_node):
                if isinstance(node, repeat_layer):  # a repeat inside the repeated block
                    node._set_copies_sample_expansion_factor(sef)
                node = node.subnet_node()
            node.set_sample_expansion_factor(sef)

    def _forward(self, x):
        self._subnet._forward(x)
        out = self._subnet._private_get_output()
        for block in reversed(self.copies):
            block._forward(out)
            out = block._private_get_output()

    def get_output(self):
        """The output of the top copy."""
        return self.copies[0].get_output()

    def get_gradient_input(self):
        """The gradient input of the top copy."""
        return self.copies[0].get_gradient_input()

    def _private_get_output(self):
        return self.copies[0]._private_get_output()

    def _private_get_gradient_input(self):
        return self.copies[0]._private_get_gradient_input()

    def _private_get_gradient_input_target(self):
        return self.copies[0]._private_get_gradient_input_target()

    def _backward(self, x, gradient_input=None, zero_grads=True):
        copies = self.copies
        below = [c._private_get_output() for c in copies[1:]] + [self._subnet._private_get_output()]
        gi = gradient_input
        for block, block_input in zip(copies, below):
            block._backward(block_input, gi, zero_grads)
            gi = block.input_node().grad_final
        self._subnet._backward(x, gi, zero_grads)

    def _requires_forward_output(self):
        return self.copies[0]._requires_forward_output()

    def _disable_getters(self):
        self.copies[0]._disable_getters()

    def set_gradient_inputs_to_zero(self):
        for c in self.copies:
            c.set_gradient_inputs_to_zero()
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        for c in self.copies:
            c.clean()
        self._subnet.clean()

    def _find(self, match):
        for c in self.copies:
            found = c._find(match)
            if found is not None:
                return found
        return self._subnet._find(match)

    def _print(self, lines, idx, min_length):
        per = self.layers_in_each_group()
        for c in self.copies:
            sub = []
            c._print(sub, idx, min_length)
            lines.extend(sub[:-1])  # the copy's input line is internal to repeat
            idx += per
        self._subnet._print(lines, idx, min_length)

    def _label(self):
        return f"repeat({len(self.copies)})"
