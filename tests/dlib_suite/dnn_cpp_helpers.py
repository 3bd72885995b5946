"""What the ports of dlib's ``dlib/test/dnn.cpp`` share: dlib's test helpers (``mat``,
``max(abs(...))``, its random fills, ``compare_gradients`` and the central-difference
``grad_src`` lambdas) over dnnpy tensors."""

import numpy as np

import dnnpy.tensor_tools as tt


def f64(t):
    return np.asarray(t, dtype=np.float64)


def mat(t):
    """dlib's ``mat(tensor)``: the ``num_samples x k*nr*nc`` matrix, in float64."""
    a = f64(t)
    return a.reshape(a.shape[0], -1)


def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0))


def gaussian_randm(rng, nr, nc):
    """dlib's ``matrix_cast<float>(gaussian_randm(nr, nc, seed))``: a float32 matrix of
    standard normal values (from ``rng``, not dlib's seeded stream)."""
    return rng.standard_normal((nr, nc)).astype(np.float32)


def fill_uniform(rng, *tensors):
    for t in tensors:
        t.assign(rng.random(t.shape))


def fill_gaussian(rng, t, mean=0.0, stddev=1.0):
    t.assign(mean + stddev * rng.standard_normal(t.shape))


def compare_gradients(t, grad):
    """dlib's ``compare_gradients``: ``max_i |t[i] - grad(i)|`` over every element of t."""
    p = f64(t).reshape(-1)
    return max(abs(p[i] - grad(i)) for i in range(t.size()))


def central_difference(x, run, gradient_input, dest, eps=0.01):
    """dlib's ``grad_src`` lambdas: ``grad(idx)`` moves ``x[idx]`` by +-eps (in float32, as
    ``src.host()[idx] += eps``), reruns ``run()`` and returns the central difference of
    ``dot(gradient_input, dest)``; ``x[idx]`` is restored exactly."""
    def grad(idx):
        def f(e):
            p = x.host().reshape(-1)
            old = p[idx]
            p[idx] += np.float32(e)
            run()
            result = tt.dot(gradient_input, dest)
            x.host().reshape(-1)[idx] = old
            return result
        return (f(+eps) - f(-eps)) / (2 * eps)
    return grad
