import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_collection_modifyitems(config, items):
    """The one skip rule of ``@pytest.mark.cuda``: the test needs the CUDA backend in use
    (``tt.use_cuda()``), decided once, and only when such a test was collected (deciding
    imports CuPy where it is installed). ``@pytest.mark.cuda(guard=True)`` marks a test that
    runs anyway: one that must FAIL when a device exists but the backend is not in use."""
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_items:
        return
    import dnnpy.tensor_tools as tt

    if tt.use_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (tt.use_cuda() is False)")
    for item in cuda_items:
        if not item.get_closest_marker("cuda").kwargs.get("guard"):
            item.add_marker(skip)
