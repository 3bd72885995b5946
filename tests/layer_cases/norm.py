"""test_layer cases: bn_ (both modes), affine_ (both modes), layer_norm_, rms_norm_.

Setup initialises gamma = 1 and beta = 0, which would let a wrong gamma/beta gradient slip
through. test_layer redraws the learnable parameters after setup itself; ``_random_params``
makes a layer's setup draw them too, which matters for affine_, whose gamma/beta are not
learnable (get_layer_params() is empty), so test_layer leaves them as setup wrote them (the
instance keeps its class, so the catalogue counts it as that layer)."""

import types

import numpy as np

from dnnpy.layers.affine import affine_
from dnnpy.layers.norm import CONV_MODE, FC_MODE, bn_, layer_norm_, rms_norm_


def _random_params(layer, seed):
    """After the class's setup, fill ``params`` with values in +-[0.5, 2]."""
    base_setup = type(layer).setup

    def setup(self, sub):
        base_setup(self, sub)
        rnd = np.random.default_rng(seed)
        shape = self.params.shape
        self.params.assign(rnd.uniform(0.5, 2.0, shape) * rnd.choice([-1.0, 1.0], shape))

    # a bound method in the instance dict: test_layer's deepcopy rebinds it to the copy
    layer.setup = types.MethodType(setup, layer)
    return layer


# (layer factory, fake-subnet shape or None for dlib's random shapes)
CASES = {
    "bn_con": (lambda: bn_(CONV_MODE), None),
    "bn_con random gamma/beta, eps 1e-3": (lambda: _random_params(bn_(CONV_MODE, 10, 1e-3), 3), (4, 3, 3, 2)),
    "bn_fc": (lambda: bn_(FC_MODE), None),
    "bn_fc random gamma/beta": (lambda: _random_params(bn_(FC_MODE), 4), (5, 2, 2, 3)),
    "affine fc random gamma/beta": (lambda: _random_params(affine_(FC_MODE), 7), None),
    "affine con random gamma/beta": (lambda: _random_params(affine_(CONV_MODE), 8), (3, 4, 3, 2)),
    "affine default setup (identity)": (lambda: affine_(), None),
    "layer_norm": (lambda: layer_norm_(), None),
    "layer_norm random gamma/beta, eps 1e-3": (lambda: _random_params(layer_norm_(1e-3), 5), (3, 4, 2, 3)),
    "rms_norm": (lambda: rms_norm_(), None),
    "rms_norm random gamma": (lambda: _random_params(rms_norm_(), 6), (4, 3, 2, 2)),
}
