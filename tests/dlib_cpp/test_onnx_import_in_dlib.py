"""``dnnpy import MODEL.onnx -o NET.dat``: the file and the C++ declaration it prints run in
dlib's C++ (compiled from its sdist, opt-in with the parity suite: ``python -m pytest -q -m
dlib_cpp``) and give onnxruntime's outputs.

Five torch-exported models (``onnx_models.py``): LeNet; a ResNet with identity and
downsampling blocks and batch norm (dnnpy's ``affine``, whose mode travels in the file); an
inception-style block (three branches concatenated) with bilinear resizes (``upsample``,
``resize_to``); a U-Net (blocks within blocks: each decoder concat's branch holds the next
one, a residual in the bottleneck), whose inner blocks take other tag ids; a transformer
block (causal multi-head attention as dlib's multm_prev, softmaxm and tril_mask, the heads
split by reshape_to and transpose; linear, rms_norm, gelu, residuals) on (N, T, D) sequences,
which dlib reads as (N, 1, T, D).
``onnx_import.cpp`` declares their types exactly as dnnpy prints them (checked first), reads
the ``.dat`` files ``dnnpy import`` wrote, and writes the scores below the loss layer for a
random batch. Tolerance: ``|dlib - ort| <= 2**-14 * max(1, max|ort|)`` (the parity suite's
budget: float32 in both, summed in different orders).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from dnnpy import cli
from dnnpy.cpp import cpp_type
from dnnpy.onnx import import_model
from dnnpy.onnx.layer_mapping import sample_dims

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_models  # noqa: E402

BUDGET = 2.0 ** -14
pytestmark = [pytest.mark.dlib_cpp]


@pytest.fixture(scope="module")
def program(onnx_import_program):
    return onnx_import_program


@pytest.mark.parametrize("name", sorted(onnx_models.MODELS))
def test_imported_onnx_models_run_in_dlib(name, program, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    data = onnx_models.onnx_bytes(torch, name)
    model = tmp_path / f"{name}.onnx"
    model.write_bytes(data)
    # the declaration dnnpy prints is the one compiled into onnx_import.cpp
    with open(os.path.join(HERE, "onnx_import.cpp")) as f:
        compiled = re.search(rf"using {name}_type = (.*);", f.read()).group(1)
    assert cpp_type(import_model(data, loss="multiclass_log")) == compiled
    dat = tmp_path / f"{name}.dat"
    assert cli.main(["import", str(model), "-o", str(dat), "--loss", "multiclass_log"]) == 0
    assert compiled in capsys.readouterr().out and compiled in (tmp_path / f"{name}.hpp").read_text()
    shape = onnx_models.MODELS[name][1]
    x = np.random.default_rng(5).standard_normal((3,) + shape).astype(np.float32)
    inp, out = tmp_path / "in.bin", tmp_path / "out.bin"
    dims = (len(x),) + sample_dims(x.shape)             # a sequence (N, T, D) is dlib's (N, 1, T, D)
    inp.write_bytes(np.array(dims, "<i4").tobytes() + x.tobytes())
    subprocess.run([program, name, str(dat), str(inp), str(out)], check=True, timeout=120)
    raw = out.read_bytes()
    dims = np.frombuffer(raw[:16], "<i4")
    theirs = np.frombuffer(raw[16:], "<f4").reshape(dims)
    want = ort.InferenceSession(data).run(None, {"x": x})[0]
    assert theirs.reshape(want.shape).shape == want.shape
    assert np.abs(theirs.reshape(want.shape) - want).max() <= BUDGET * max(1.0, float(np.abs(want).max()))
