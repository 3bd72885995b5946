"""``add_layer``: one computational layer (its details object) stacked on a subnet, with
the layer's output, the gradient at its output and its parameter gradient, and dlib's
in-place rule (see the package docstring)."""

from __future__ import annotations

import inspect

import numpy as np

from ..tensor import read_only_view, resizable_tensor, tensor
from .calls import blame
from .nodes import net_node, subnet_wrapper, wrapper_state

__all__ = ["add_layer", "backward_inplace_takes_add_to"]


def backward_inplace_takes_add_to(details) -> bool:
    """Whether an in-place layer's ``backward_inplace`` accepts the ``add_to`` keyword: the
    net then passes ``add_to=False`` when its out-of-place ``data_grad`` is stale (assign
    every element) and True otherwise (docs/layer_interface.md). Read from the method's own
    signature, so a subclass that overrides it without the keyword is called without it."""
    method = getattr(details, "backward_inplace", None)
    try:
        return method is not None and "add_to" in inspect.signature(method).parameters
    except (TypeError, ValueError):  # a callable without a signature: call it as dlib does
        return False


class add_layer(net_node):
    """One computational layer (``details``) stacked on ``subnet``."""

    computational = True

    def __init__(self, details, subnet):
        self._details = details
        self._subnet = subnet
        self._setup_called = False
        self._gradient_input_is_stale = True
        self._getters_disabled = False
        self._x_grad = resizable_tensor()
        self._cached_output = resizable_tensor()
        self._params_grad = resizable_tensor()
        self._wsub = subnet_wrapper(subnet)
        self._inplace_capable = hasattr(details, "forward_inplace")
        self._needs_output = bool(getattr(details, "backward_needs_output", False))
        self._assigns_stale = backward_inplace_takes_add_to(details)
        self._inplace = self._inplace_capable and not subnet._requires_forward_output()
        if self._inplace:
            subnet._disable_getters()

    # -- structure -----------------------------------------------------------------------
    def layer_details(self):
        """The layer object (dlib's ``layer_details()``)."""
        return self._details

    def set_layer_details(self, details, setup_called=None):
        """Replace the layer object by one of the same kind (``copy_net_as``, reading files);
        ``setup_called`` says whether its parameters are already set up."""
        self._details = details
        if setup_called is not None:
            self._setup_called = bool(setup_called)

    def _count_computational(self):
        return 1 + self._subnet._count_computational()

    def wrapper_state(self) -> wrapper_state:
        """The add_layer's own bookkeeping (what dlib writes beside the details)."""
        return wrapper_state(self._setup_called, self._gradient_input_is_stale,
                             self._getters_disabled, self._x_grad, self._cached_output,
                             self._params_grad)

    def set_wrapper_state(self, state: wrapper_state):
        """Restore what ``wrapper_state()`` returned (reading a file, copying a net)."""
        self._setup_called = bool(state.setup_called)
        self._gradient_input_is_stale = bool(state.gradient_input_is_stale)
        self._getters_disabled = bool(state.getters_disabled)
        self._x_grad = state.x_grad
        self._cached_output = state.cached_output
        self._params_grad = state.params_grad

    def _requires_forward_output(self):
        return self._needs_output

    def _disable_getters(self):
        self._getters_disabled = True

    # -- tensors -------------------------------------------------------------------------
    def _private_get_output(self):
        return self._subnet._private_get_output() if self._inplace else self._cached_output

    def _private_get_gradient_input(self):
        if self._inplace:
            return self._subnet._private_get_gradient_input()
        if self._gradient_input_is_stale:
            self._gradient_input_is_stale = False
            self._x_grad.copy_size(self._private_get_output())
            self._x_grad.fill(0)
        return self._x_grad

    def _private_get_gradient_input_target(self):
        if self._inplace:
            return self._subnet._private_get_gradient_input_target()
        if self._gradient_input_is_stale:
            # sized, not zeroed: the caller assigns every element (see get_gradient_input_target)
            self._gradient_input_is_stale = False
            self._x_grad.copy_size(self._private_get_output())
            return self._x_grad, False
        return self._x_grad, True

    def _check_getters(self, what):
        if self._getters_disabled:
            raise RuntimeError(
                f"Accessing this layer's {what}() is disabled because an in-place layer has been "
                f"stacked on top of it ({self._details!r})")

    def get_output(self) -> tensor:
        """The output of the last forward pass, as a ``read_only_view`` (valid until the next
        pass writes it; ``.numpy()`` copies)."""
        self._check_getters("get_output")
        return read_only_view(self._private_get_output(), f"the output of {self._name()}")

    def get_gradient_input(self) -> tensor:
        """The gradient with respect to this layer's output: writable, ADD into it to
        backpropagate your own gradient (as in dlib); zeroed lazily by each pass."""
        self._check_getters("get_gradient_input")
        return self._private_get_gradient_input()

    def get_gradient_input_target(self):
        """``(tensor, add_to)``: the gradient input for a layer above that can either assign
        or add. If this backward pass has not yet written it, it is sized but NOT zeroed and
        ``add_to`` is False: the caller must assign every element (one write instead of a
        zero-fill and an ADD). Otherwise ``add_to`` is True: ADD into it. Either way it is
        no longer stale afterwards, so a second writer (a tag read by two layers) adds."""
        self._check_getters("get_gradient_input_target")
        return self._private_get_gradient_input_target()

    def get_parameter_gradient(self) -> tensor:
        """The gradient of the parameters from the last backward pass, as a
        ``read_only_view`` (valid until the next backward pass; ``.numpy()`` copies)."""
        return read_only_view(self._params_grad, f"the parameter gradient of {self._name()}")

    def assign_parameter_gradient(self, values):
        """Replace the parameter gradient of the last backward pass by ``values`` (a numpy or
        CuPy array with as many elements), before ``update_parameters``: data-parallel
        training writes back the gradients summed over the replicas this way."""
        g = self._params_grad
        if values.size != g.size():
            raise ValueError(f"assign_parameter_gradient: {self._name()}'s parameter gradient has "
                             f"{g.size()} elements, got {values.size}")
        on_device = hasattr(values, "__cuda_array_interface__") and not isinstance(values, np.ndarray)
        dst = g.device_write_only() if on_device else g.host_write_only()
        dst[...] = values.reshape(dst.shape)

    # -- computation ---------------------------------------------------------------------
    def _forward(self, x):
        self._subnet._forward(x)
        d = self._details
        phase = "setup"
        try:
            if not self._setup_called:
                d.setup(self._wsub)
                self._setup_called = True
            phase = "forward"
            if self._inplace:
                out = self._subnet._private_get_output()
                d.forward_inplace(out, out)
            elif self._inplace_capable:
                src = self._subnet._private_get_output()
                self._cached_output.copy_size(src)
                d.forward_inplace(src, self._cached_output)
            else:
                d.forward(self._wsub, self._cached_output)
        except Exception as e:
            blame(e, self, phase, self._input_shape())
            raise
        self._gradient_input_is_stale = True

    def _input_shape(self):
        try:
            return self._subnet._private_get_output().shape
        except Exception:  # noqa: BLE001 - only for the message
            return None

    def _backward(self, x, gradient_input=None, zero_grads=True):
        gi = self._private_get_gradient_input() if gradient_input is None else gradient_input
        d = self._details
        try:
            self._params_grad.copy_size(d.get_layer_params())
            if self._inplace_capable:
                if self._assigns_stale:
                    data_grad, add_to = self._wsub.get_gradient_input_target()
                    extra = {"add_to": add_to}
                else:
                    data_grad, extra = self._wsub.get_gradient_input(), {}
                if self._needs_output:
                    d.backward_inplace(self._private_get_output(), gi, data_grad,
                                       self._params_grad, **extra)
                else:
                    d.backward_inplace(gi, data_grad, self._params_grad, **extra)
            elif self._needs_output:
                d.backward(self._private_get_output(), gi, self._wsub, self._params_grad)
            else:
                d.backward(gi, self._wsub, self._params_grad)
        except Exception as e:
            blame(e, self, "backward", gi.shape)
            raise
        self._subnet._backward(x, zero_grads=zero_grads)
        self._gradient_input_is_stale = zero_grads

    def set_gradient_inputs_to_zero(self):
        self._gradient_input_is_stale = True
        self._subnet.set_gradient_inputs_to_zero()

    def clean(self):
        """Free cached outputs and gradients (outputs are recomputed by the next forward)."""
        self._x_grad.clear()
        self._cached_output.clear()
        self._params_grad.clear()
        self._gradient_input_is_stale = True
        self._subnet.clean()
        clean = getattr(self._details, "clean", None)
        if clean is not None:
            clean()

    def _label(self):
        return repr(self._details)

    def _name(self):
        return type(self._details).__name__
