"""What the CPU twin's modules share: storing computed values with dlib's assign/add rule."""

def _store(dest, values):
    """Assign ``values`` (already computed from the inputs) to dest."""
    dest.host_write_only()[...] = values


def _grad_out(grad, gradient_input, values):
    """dlib's rule for the activation gradients: assign when grad is gradient_input,
    otherwise add."""
    if grad is gradient_input:
        grad.host_write_only()[...] = values
    else:
        grad.host()[...] += values
