"""``add_loss_layer``: a loss on top of a net, dlib's net-level calls (``net(data,
batch_size)``, ``process``, ``compute_loss``, ``compute_parameter_gradients``)."""

from __future__ import annotations

import inspect

import numpy as np

from ..tensor import resizable_tensor, tensor
from .calls import blame, hint_if_training_net, running, split
from .nodes import net_node, subnet_wrapper

__all__ = ["add_loss_layer"]


class add_loss_layer(net_node):
    """A loss on top of a net: ``net(batch)`` gives labels, ``compute_loss(batch, labels)``
    the loss, ``compute_parameter_gradients(batch, labels)`` loss and all gradients."""

    def __init__(self, loss_details, subnet):
        self._loss = loss_details
        self._subnet = subnet
        self._wsub = subnet_wrapper(subnet)
        self._temp = resizable_tensor()

    def loss_details(self):
        """The loss object (dlib's ``loss_details()``)."""
        return self._loss

    def layer_details(self):
        """The loss object (as ``loss_details()``)."""
        return self._loss

    def set_loss_details(self, loss):
        """Replace the loss object by one of the same kind (``copy_net_as``, reading files)."""
        self._loss = loss

    def _label(self):
        return repr(self._loss)

    def _name(self):
        return type(self._loss).__name__

    def _forward(self, x):
        self._subnet._forward(x)

    def get_output(self):
        """The output of the net below the loss (a ``read_only_view``)."""
        return self._subnet.get_output()

    def _private_get_output(self):
        return self._subnet._private_get_output()

    def _as_tensor(self, batch_or_tensor):
        if isinstance(batch_or_tensor, tensor):
            return batch_or_tensor
        return self._subnet.to_tensor(batch_or_tensor, self._temp)

    def _labels(self, batch, args, kwargs):
        if not hasattr(self._loss, "to_label"):
            raise TypeError(f"{self._name()} gives no labels (as in dlib, it has no to_label): run the "
                            f"part below the loss, net.subnet()(batch)")
        with running(self):
            x = self._as_tensor(batch)
            self._subnet._forward(x)
            try:
                return self._loss.to_label(x, self._wsub, *args, **kwargs)
            except Exception as e:
                if type(self._loss).__name__ not in str(e):
                    blame(e, self, "to_label", None)
                raise

    def __call__(self, data, *args, batch_size=None, **kwargs):
        """Labels, as dlib's ``net(x)`` and ``net(data, batch_size)``.

        * ``net(batch)``, ``net(batch, batch_size)``, ``net(batch, batch_size=n)``: a batch
          of input objects (a list, a stacked array, or an already converted tensor) gives
          one label per object, in a new list; with a batch size it runs in pieces of that
          many objects. The second positional argument is the batch size, as in dlib.
        * ``net(x)``, ``net(x, args...)``: ONE input object (an image, a matrix: see
          ``input_layer.is_one_input``) gives its label, and extra arguments go to the loss's
          ``to_label``, as dlib's ``process(x, args...)`` (``net(img, adjust_threshold)``).

        Keyword arguments always go to ``to_label`` (``adjust_threshold=-0.5`` for
        loss_mmod); with positional ones use ``process_batch(data, batch_size, args...)``.
        """
        hint_if_training_net(self)
        if self._is_one_input(data):
            if args:
                self._check_label_arguments(args)
            return self._labels([data], args, kwargs)[0]
        if args:
            batch_size = self._batch_size_argument(args, batch_size)
        return self._batched(data, batch_size, (), kwargs)

    def _check_label_arguments(self, args):
        """``net(x, args...)`` with ONE input object passes ``args`` to ``to_label``; when it
        takes fewer, the caller most likely meant dlib's ``net(data, batch_size)`` on a
        single image: a TypeError that says so (not Python's count of ``to_label``'s
        arguments)."""
        params = self._to_label_extra_parameters()
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            return
        takes = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        if len(args) <= len(takes):
            return
        what = (f"takes {len(takes)} ({', '.join(takes)})" if takes else "takes none")
        raise TypeError(
            f"net(x, {', '.join(map(repr, args))}): x is ONE input object, so the arguments "
            f"after it go to {self._name()}.to_label, which {what}. For dlib's "
            f"net(data, batch_size), pass the data as a list: net([x], {args[0]!r}) (or "
            f"net([x], batch_size={args[0]!r}))")

    def _is_one_input(self, data):
        return not isinstance(data, tensor) and self.input_layer().is_one_input(data)

    def _batch_size_argument(self, args, batch_size):
        """``net(data, batch_size)``'s positional batch size, or a TypeError that names the
        form meant (a ``to_label`` argument passed here by mistake is named as such)."""
        extra = self._to_label_parameters()
        fix = (f"; arguments for {self._name()}.to_label ({', '.join(extra)}) go to "
               f"net.process_batch(data, batch_size, {', '.join(map(repr, args))}), to "
               f"net.process(one_input, ...) or as keywords, net(data, {extra[0]}=...)" if extra else "")
        if len(args) > 1 or batch_size is not None:
            raise TypeError(f"net(data, batch_size): one positional argument after the data, the batch "
                            f"size (dlib's net(data, batch_size)); got {len(args)} positional "
                            f"argument(s){' and batch_size=' + repr(batch_size) if batch_size is not None else ''}"
                            f"{fix}")
        n = args[0]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise TypeError(f"net(data, batch_size): the second argument is the batch size, an integer "
                            f">= 1, as in dlib's net(data, batch_size); got {n!r}{fix}")
        return int(n)

    def _to_label_extra_parameters(self):
        """The parameters of the loss's ``to_label`` after its input tensor and subnet."""
        if not hasattr(self._loss, "to_label"):
            return []
        return list(inspect.signature(self._loss.to_label).parameters.values())[2:]

    def _to_label_parameters(self):
        return [p.name for p in self._to_label_extra_parameters()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def _batched(self, data, batch_size, args, kwargs):
        if batch_size is None or isinstance(data, tensor):
            return self._labels(data, args, kwargs)
        labels = []
        with self.input_node().lock:        # the pieces of one call run together
            for piece in split(data, batch_size):
                labels.extend(self._labels(piece, args, kwargs))
        return labels

    def process(self, data, *args, batch_size=None, **kwargs):
        """dlib's ``process(x, args...)``: the label of ONE input object, with ``args``
        passed to the loss's ``to_label`` (``net.process(img, -0.5)``: loss_mmod's
        ``adjust_threshold``). Given a batch instead, the list of its labels (in pieces of
        ``batch_size``), with the same arguments."""
        hint_if_training_net(self)
        if self._is_one_input(data):
            return self._labels([data], args, kwargs)[0]
        return self._batched(data, batch_size, args, kwargs)

    def process_batch(self, data, batch_size, *args, **kwargs):
        """dlib's ``process_batch(data, batch_size, args...)``: labels of a batch, run in
        pieces of ``batch_size``, with ``args`` passed to the loss's ``to_label``."""
        hint_if_training_net(self)
        return self._batched(data, batch_size, args, kwargs)

    def predict(self, batch, batch_size=128):
        """``net(batch, batch_size=batch_size)``: labels for any number of input objects in
        bounded memory (dlib's ``operator()(data, batch_size = 128)``)."""
        return self(batch, batch_size=batch_size)

    def compute_loss(self, batch, labels=None) -> float:
        """Forward, then the loss; ASSIGNS the top layer's gradient input. ``labels`` is
        None for unsupervised losses."""
        with running(self):
            x = self._as_tensor(batch)
            self._subnet._forward(x)
            return self._loss_value(x, labels)

    def _loss_value(self, x, labels):
        try:
            if labels is None:
                return float(self._loss.compute_loss_value_and_gradient(x, self._wsub))
            return float(self._loss.compute_loss_value_and_gradient(x, labels, self._wsub))
        except Exception as e:
            if type(self._loss).__name__ not in str(e):  # label errors name the loss already
                blame(e, self, "loss", None)
            raise

    def compute_parameter_gradients(self, batch, labels=None, zero_grads=True) -> float:
        """``compute_loss`` then backpropagation; returns the loss. Every layer's
        ``get_parameter_gradient()`` then holds its gradient."""
        with running(self):
            x = self._as_tensor(batch)
            self._subnet._forward(x)
            loss = self._loss_value(x, labels)
            self._subnet._backward(x, zero_grads=zero_grads)
        return loss

    def _backward(self, x, gradient_input=None, zero_grads=True):
        self._subnet._backward(x, gradient_input, zero_grads)

    def clean(self):
        self._temp.clear()
        self._subnet.clean()

    def _print(self, lines, idx, min_length):
        lines.append(f"layer<{idx}>\t{self._loss!r}")
        self._subnet._print(lines, idx + 1, min_length)
