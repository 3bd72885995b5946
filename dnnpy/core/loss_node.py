"""``add_loss_layer``: a loss on top of a net, dlib's net-level calls (``net(data,
batch_size)``, ``process``, ``compute_loss``, ``compute_parameter_gradients``)."""

from __future__ import annotations

from ..tensor import resizable_tensor, tensor
from .calls import blame, naming_layers, split
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
        x = self._as_tensor(batch)
        with naming_layers(self):
            self._subnet._forward(x)
            try:
                return self._loss.to_label(x, self._wsub, *args, **kwargs)
            except Exception as e:
                if type(self._loss).__name__ not in str(e):
                    blame(e, self, "to_label", None)
                raise

    def __call__(self, batch, *args, batch_size=None, **kwargs):
        """Labels for a batch of input objects (or for an already converted tensor), as
        dlib's ``net(data, batch_size)``: one label per input object, in a new list. With
        ``batch_size`` the batch runs in pieces of that many objects. Extra arguments go to
        the loss's ``to_label`` (e.g. ``adjust_threshold`` for loss_mmod)."""
        if batch_size is None or isinstance(batch, tensor):
            return self._labels(batch, args, kwargs)
        labels = []
        for piece in split(batch, batch_size):
            labels.extend(self._labels(piece, args, kwargs))
        return labels

    def process(self, batch, *args, batch_size=None, **kwargs):
        """dlib's ``process``/``process_batch``: ``net(batch, ...)`` with the extra arguments
        passed to the loss's ``to_label``."""
        return self(batch, *args, batch_size=batch_size, **kwargs)

    def process_batch(self, data, batch_size, *args, **kwargs):
        """dlib's ``process_batch(data, batch_size, args...)``."""
        return self(data, *args, batch_size=batch_size, **kwargs)

    def predict(self, batch, batch_size=128):
        """``net(batch, batch_size=batch_size)``: labels for any number of input objects in
        bounded memory (dlib's ``operator()(data, batch_size = 128)``)."""
        return self(batch, batch_size=batch_size)

    def compute_loss(self, batch, labels=None) -> float:
        """Forward, then the loss; ASSIGNS the top layer's gradient input. ``labels`` is
        None for unsupervised losses."""
        x = self._as_tensor(batch)
        with naming_layers(self):
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
        x = self._as_tensor(batch)
        with naming_layers(self):
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
