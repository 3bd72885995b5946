"""slm_advanced_train (dlib's slm_advanced_train_ex): the --quick run end to end (tokenizer,
tokens file, net + tokenizer in one dlib-format file, generation, verification), the example's
RoPE layer (gradients through test_layer, its dlib record), the context manager, the tokens
file and the byte-for-byte check."""

import numpy as np
import pytest

import dnnpy
from dnnpy import bpe_tokenizer, input_tensor
from dnnpy.examples import slm_advanced_train as ex
from dnnpy.serialization import Reader, Writer


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("slm_advanced")
    return out, ex.main(["--quick", "--quiet", "--out", str(out)])


def test_quick_run_writes_dlibs_files(quick):
    out, r = quick
    text = dnnpy.data.datasets.load_shakespeare()[0].encode()[:200]
    assert 0.0 <= r["training_accuracy"] <= 1.0
    assert r["num_samples"] == r["num_tokens"] - 10          # windows of T=10
    tok = dnnpy.deserialize_objects(r["tokenizer_file"], bpe_tokenizer())[0]
    assert tok.get_vocab_size() == r["vocab_size"] and tok.get_vocab_size() <= 400
    tokens = ex.load_tokens_from_file(r["tokens_file"])
    assert tokens[0] == tok.get_special_token_id("<text>")
    assert tokens[-1] == tok.get_special_token_id("</text>")
    assert tok.decode_bytes(tokens, False) == text
    # the model file: the inference net, then the same tokenizer (dlib's << net << tokenizer)
    cfg = ex.transformer_config(tok.get_vocab_size(), 1, 4, 16, 10)
    net, tok2 = dnnpy.deserialize_objects(r["model_file"], cfg.network_type(False), bpe_tokenizer())
    assert tok2 == tok and dnnpy.count_parameters(net) == r["num_parameters"]
    ropes = [d for d in (n.layer_details() for n in dnnpy.computational_nodes(net))
             if isinstance(d, ex.rotary_positional_embedding_)]
    assert len(ropes) == 2 and repr(ropes[0]) == "rotary_positional_embedding (d_head=4, seq_len=10)"
    # generation starts from the prompt's text and verify reports on it
    generated = r["output_file"].read_bytes()
    assert len(generated) == r["generated_bytes"] and r["verified"] == (generated == text)
    assert generated.startswith(tok.decode_bytes(tokens[:10], False))


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        ex.main(["--help"])
    assert e.value.code == 0 and "--verify" in capsys.readouterr().out


def test_rope_gradients_and_record():
    layer = ex.rotary_positional_embedding_()
    assert dnnpy.test_layer(layer)
    net = ex.rope[input_tensor]()
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 7)).astype(np.float32)
    y = np.asarray(net(x))
    d = net.layer_details()
    # position 0 is not rotated; the odd last feature passes through; norms of pairs are kept
    np.testing.assert_array_equal(y[:, :, 0], x[:, :, 0])
    np.testing.assert_array_equal(y[..., 6], x[..., 6])
    np.testing.assert_allclose(y[..., 0] ** 2 + y[..., 1] ** 2, x[..., 0] ** 2 + x[..., 1] ** 2,
                               rtol=1e-5)
    ang = 3 * 10000.0 ** (-2 * 1.5 / 7)      # position 3, pair 1
    np.testing.assert_allclose(y[0, 0, 3, 2], x[0, 0, 3, 2] * np.cos(ang) - x[0, 0, 3, 3] * np.sin(ang),
                               rtol=1e-5)
    w = Writer()
    d.serialize(w)
    data = w.bytes()
    assert data.startswith(b"\x01\x1crotary_positional_embedding_\x01\x05\x01\x07")
    back = ex.rotary_positional_embedding_()
    back.deserialize(Reader(data))
    assert (back.seq_len, back.d_head) == (5, 7)
    np.testing.assert_array_equal(back.cos_values, d.cos_values)
    with pytest.raises(ValueError, match=r"must be \(seq_len, d_head\) = \(5, 7\)"):
        net(np.zeros((1, 3, 6, 7), np.float32))


def test_context_manager_and_tokens_file(tmp_path):
    ctx = ex.context_manager(12, 10, padding_token=-7)
    ctx.add_tokens(range(5))
    seq = ctx.get_input_sequence(10)
    assert seq.shape == (10, 1) and seq[:, 0].tolist() == [0, 1, 2, 3, 4] + [-7] * 5
    ctx.add_tokens(range(5, 20))               # keeps the last 12
    assert ctx.get_input_sequence(10)[:, 0].tolist() == list(range(10, 20))
    with pytest.raises(ValueError, match="at least 10"):
        ex.context_manager(20, 5)
    with pytest.raises(ValueError, match="smaller than minimum"):
        ctx.get_input_sequence(9)
    path = tmp_path / "t.bin"
    ex.save_tokens_to_file([1, 2, 65535, 70000], path)
    assert path.read_bytes()[:8] == (4).to_bytes(8, "little")
    assert ex.load_tokens_from_file(path) == [1, 2, 65535, 70000]
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="count says 4 tokens"):
        ex.load_tokens_from_file(path)


def test_verify_match(capsys):
    assert ex.verify_match(b"hello world", b"hello world")
    assert "All 11 bytes are identical" in capsys.readouterr().out
    assert not ex.verify_match(b"hello world", b"hellO worlD")
    out = capsys.readouterr().out
    assert "Total mismatches: 2 bytes" in out and "Found 2 error regions" in out
    assert not ex.verify_match(b"abc", b"ab")
    assert "Size mismatch: original=3 bytes, generated=2 bytes" in capsys.readouterr().out
