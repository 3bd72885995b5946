"""Every layer configuration through ``test_layer``, in float32 (dlib's tolerances) and in
float64 (tight tolerances: 1e-4 relative / 1e-6 absolute, see dnnpy/testing.py).

The configurations live in ``tests/layer_cases/<family>.py``, each a dict ``CASES`` of
``name -> (layer factory, fake-subnet shape or None for dlib's random shapes[, tagged shape])``
where the optional third item maps the subnet's shape to the shape of the level that
``layer(sub, tagN)`` returns; this file runs them all. Add a layer's rows there (at least two configurations per layer).
"""

import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest

from dnnpy import test_layer


def _collect():
    cases = {}
    folder = Path(__file__).parent / "layer_cases"
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
        module = importlib.import_module(f"layer_cases.{info.name}")
        for name, case in module.CASES.items():
            if name in cases:
                raise ValueError(f"duplicate test_layer case name {name!r} in layer_cases/{info.name}.py")
            cases[name] = case
    return cases


LAYERS = _collect()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_table(name, dtype):
    make, shape, *tagged = LAYERS[name]
    result = test_layer(make(), dtype=dtype, input_shape=shape, tagged_shape=tagged[0] if tagged else None)
    assert result, f"{name}:\n{result.log}"
