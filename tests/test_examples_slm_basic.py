"""slm_basic_train (dlib's slm_basic_train_ex): one shared --quick run (train, save in dlib's
format, reload as the inference net, generate), the --generate path on its own, dlib's net
layout and training windows, --help and bad input."""

import math

import numpy as np
import pytest

import dnnpy
from dnnpy.examples import slm_basic_train as ex

QUICK_CFG = dict(vocab_size=ex.VOCAB_SIZE, num_layers=1, num_heads=4, embedding_dim=16, max_seq_len=8)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("slm")
    return out, ex.main(["--quick", "--quiet", "--out", str(out)])


def _set_up(net, seq_len):
    """Parameters are allocated by the first forward (as in dlib)."""
    net([np.zeros((seq_len, 1), np.int32)])
    return net


def _layers(net):
    found = []
    dnnpy.visit_computational_layers(net, found.append)
    return found


def test_quick_run(quick):
    out, r = quick
    assert r["model_file"] == out / ex.MODEL_FILE and r["model_file"].exists()
    assert 0.0 <= r["training_accuracy"] <= 1.0 and np.isfinite(r["final_loss"])
    assert r["num_samples"] == 200 - (8 + 1)                  # dlib: len - (T+1) windows
    assert r["num_parameters"] == dnnpy.count_parameters(_set_up(ex.transformer_config(**QUICK_CFG).network_type(True)(), 8))
    assert r["generation_compared"] == 20 and 0.0 <= r["generation_match"] <= 1.0
    assert 0 <= r["generation_exact_prefix"] <= 20


def test_reload_and_generate_again(quick, capsys):
    """The saved file reads back into dlib's inference type (dropout_10 -> multiply 0.9), and
    --generate on its own regenerates the same text from it."""
    out, r = quick
    cfg = ex.transformer_config(**QUICK_CFG)
    net = dnnpy.deserialize(r["model_file"], cfg.network_type(False)())
    names = [type(layer).__name__ for layer in _layers(net)]
    assert "dropout_rate_" not in names and names.count("multiply_") == 3
    vals = {type(layer).__name__: layer.get_multiply_value() for layer in _layers(net)
            if isinstance(layer, dnnpy.multiply_)}
    assert vals["multiply_"] == pytest.approx(0.9)
    assert vals["scale_weights_"] == pytest.approx(1 / math.sqrt(16 / 4))
    # the same file also reads into the training type (dlib's net_type<true>)
    dnnpy.deserialize(r["model_file"], cfg.network_type(True)())
    _, prompt = dnnpy.data.datasets.load_shakespeare()
    tokens = ex.generate(net, ex.char_based_tokenize(prompt[:8]), 8, 20)
    assert ex.decode(tokens) == r["generated_text"]
    capsys.readouterr()
    r2 = ex.main(["--quick", "--generate", "--out", str(out)])
    text = capsys.readouterr().out
    assert "=== TRAIN MODE ===" not in text and "Loaded model from" in text
    assert "Generated text:\nQUEEN EL" + r["generated_text"] in text
    assert r2["generated_text"] == r["generated_text"]
    assert r2["generation_match"] == r["generation_match"]


def test_generate_with_another_config_says_why(quick):
    out, _ = quick
    with pytest.raises(SystemExit, match="same --layers"):
        ex.main(["--generate", "--out", str(out)])


def test_net_layout_is_dlibs():
    cfg = ex.transformer_config(**QUICK_CFG)
    names = [type(layer).__name__ for layer in _layers(cfg.network_type(True)())]
    # output first, as dlib's layer<i> numbering: head, feed-forward, attention, embeddings
    assert names == ["fc_", "rms_norm_", "add_prev_", "dropout_rate_", "extract_", "fc_", "gelu_", "fc_",
                     "rms_norm_", "add_prev_", "dropout_rate_", "extract_", "multm_prev_", "dropout_rate_",
                     "softmax_", "tril_", "scale_weights_", "multm_prev_", "extract_", "extract_",
                     "extract_", "fc_", "rms_norm_", "positional_encodings_", "embeddings_"]
    # dlib's documented size of its own configuration (slm_basic_train_ex.cpp, end comment)
    dlib_cfg = ex.transformer_config(ex.VOCAB_SIZE, 3, 4, 64, 80)
    assert dnnpy.count_parameters(_set_up(dlib_cfg.network_type(False)(), 80)) == 8_247_496
    with pytest.raises(ValueError, match="divisible"):
        ex.transformer_config(ex.VOCAB_SIZE, 1, 3, 16, 8)


def test_training_windows():
    tokens = ex.char_based_tokenize("abcdefg")
    samples, labels = ex.make_training_set(tokens, 3, 50000)
    assert len(samples) == 7 - 4 and samples[0].shape == (3, 1) and samples[0].dtype == np.int32
    assert [ex.decode(s[:, 0]) for s in samples] == ["abc", "bcd", "cde"]
    assert labels == [ord("d"), ord("e"), ord("f")]
    assert len(ex.make_training_set(tokens, 3, 2)[0]) == 2
    assert ex.make_training_set(tokens, 7, 50000) == ([], [])


def test_help_and_bad_input(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        ex.main(["--help"])
    assert e.value.code == 0 and "--generate" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        ex.main(["--quick", "--batch-size", "0", "--out", str(tmp_path)])
    short = tmp_path / "short.txt"
    short.write_text("too short")
    with pytest.raises(SystemExit, match="too short"):
        ex.main(["--quick", "--text", str(short), "--out", str(tmp_path)])
