"""bpe_tokenizer: dlib's training rule, encode/decode, special tokens and serialized bytes.

Every expected value here was printed by dlib's own C++: tests/dlib_cpp/bpe_tokenizer.cpp,
built from dlib's header dlib/tokenizer/bpe_tokenizer.h (dlib 20.0.1 sdist, the same file as
dlib master; g++ -O1 -std=c++17 on x86-64; build and run lines in its header comment). Its
output is hard-coded (long lists as the sha256 of the line dlib printed, ``"N: id id ..."``),
so this test needs no compiler and no dlib."""

import hashlib

import numpy as np
import pytest

import dnnpy
from dnnpy import (SerializationError, bpe_tokenizer, deserialize_objects, fc, input,
                   loss_multiclass_log, serialize_objects)
from dnnpy.serialization import Reader, Writer

SMALL = "aaaa aaa\tbb\r\nabab abab aaa  ccc\n\nabéé été".encode()

# name -> (vocab_size asked, max_bytes, probe text, vocab_size after, serialized hex,
#          encode(training text), encode(probe))
CASES = {
    "small300": (300, 0, "aaaaaaa abba <pad> é".encode(), 297,
                 "010e6270655f746f6b656e697a65725f022901010d0161016101026161016101620102616201c3"
                 "01a90102c3a90163016301026363020001016101036161610201010201010104616261620162"
                 "0162010262620174020201010374c3a902000102000101046161616102010102020101046162"
                 "c3a90202010207010105c3a974c3a90203010163010363636302090102020101066162c3a9c3a9",
                 [264, 32, 260, 9, 262, 13, 10, 261, 32, 261, 32, 260, 32, 32, 267, 10, 10, 268,
                  32, 266],
                 [264, 260, 32, 257, 98, 97, 32, 60, 112, 97, 100, 62, 32, 258]),
    "small290": (290, 0, b"aaaaaaa abba", 290,
                 "010e6270655f746f6b656e697a65725f02220101060161016101026161016101620102616201c3"
                 "01a90102c3a9016301630102636302000101610103616161020101020101010461626162",
                 [256, 256, 32, 260, 9, 98, 98, 13, 10, 261, 32, 261, 32, 260, 32, 32, 259, 99,
                  10, 10, 257, 258, 258, 32, 258, 116, 258],
                 [256, 256, 260, 32, 257, 98, 97]),
    "small284": (284, 0, b"aaaa", 284, "010e6270655f746f6b656e697a65725f021c010100",
                 list(SMALL), [97, 97, 97, 97]),
    "small_maxbytes": (300, 12, b"aaaa aaa\tbb", 288,
                       "010e6270655f746f6b656e697a65725f0220010104016101610102616101620162010262"
                       "6202000101610103616161020001020001010461616161",
                       [259, 32, 258, 9, 257, 13, 10, 97, 98, 97, 98, 32, 97, 98, 97, 98, 32, 258,
                        32, 32, 99, 99, 99, 10, 10, 97, 98, 195, 169, 195, 169, 32, 195, 169, 116,
                        195, 169],
                       [259, 32, 258, 9, 257]),
}

VERBOSE_SMALL300 = """Training BPE tokenizer on 45 bytes...
Target vocabulary size: 300
Base vocabulary: 256 tokens
Special tokens: 28 tokens
Available merges: 16
Created 20 segments for training
Merge 0: (97, 97) -> 256 (occurrences: 7, pattern length: 2)
Merge 1: (97, 98) -> 257 (occurrences: 5, pattern length: 2)
Merge 2: (195, 169) -> 258 (occurrences: 4, pattern length: 2)
Merge 3: (99, 99) -> 259 (occurrences: 2, pattern length: 2)
Merge 4: (256, 97) -> 260 (occurrences: 2, pattern length: 3)
Merge 5: (257, 257) -> 261 (occurrences: 2, pattern length: 4)
Merge 6: (98, 98) -> 262 (occurrences: 1, pattern length: 2)
Merge 7: (116, 258) -> 263 (occurrences: 1, pattern length: 3)
Merge 8: (256, 256) -> 264 (occurrences: 1, pattern length: 4)
Merge 9: (257, 258) -> 265 (occurrences: 1, pattern length: 4)

No more pairs to merge at iteration 13

Training complete!
Base vocabulary: 256 tokens
Merges performed: 13
Special tokens: 28 tokens
Total vocabulary size: 297
"""

SHAKESPEARE_PROBE = "ROMEO:\nBut soft, what light through yonder window breaks? é"
# vocab -> (serialized length, sha256 of the bytes, encode(text) line's token count and
#           sha256, encode(probe))
SHAKESPEARE = {
    400: (1066, "165353efb3bbd901fa6f251e4fc5e3c06d11b6652c2b7a6985567722adee3b47",
          10151, "6e41f29b1f770ee8d249628ba0c6be8f23ea89e6943fccf186761c29d7af4d7e",
          [82, 79, 77, 69, 79, 58, 10, 66, 316, 32, 115, 283, 116, 44, 32, 119, 318, 32, 329, 308,
           32, 256, 114, 259, 303, 32, 121, 111, 260, 257, 32, 119, 258, 100, 349, 32, 98, 299,
           97, 107, 115, 63, 32, 195, 169]),
    1000: (7421, "d28eafe2167f348e1ea009f7ed1a6fb496b2adfe2abc8ac65bb24291947e85aa",
           7221, "d450e63ad956744a53a7b456d1959396cb20760fc0c4af6908908bb5881fb2be",
           [82, 79, 77, 69, 79, 58, 10, 480, 32, 115, 283, 447, 32, 380, 32, 329, 308, 32, 256,
            114, 259, 303, 32, 121, 111, 469, 32, 945, 100, 349, 32, 815, 577, 32, 195, 169]),
}
SHAKESPEARE_FIRST_MERGES = [(116, 104), (101, 114), (105, 110), (111, 117), (110, 100), (104, 97),
                            (256, 101), (105, 115), (111, 114), (108, 108)]


def _bytes(tok):
    w = Writer()
    tok.serialize(w)
    return w.bytes()


def _line(ids):
    """dlib's printed line for a token list, as hashed above."""
    return f"{len(ids)}: " + " ".join(map(str, ids))


@pytest.fixture(scope="module")
def shakespeare():
    text, _ = dnnpy.data.datasets.load_shakespeare()
    out = {}
    for vocab in SHAKESPEARE:
        tok = bpe_tokenizer()
        tok.train(text, vocab)
        out[vocab] = tok
    return text, out


@pytest.mark.parametrize("name", list(CASES))
def test_small_texts_equal_dlibs(name):
    vocab, max_bytes, probe, vocab_after, hexbytes, enc_train, enc_probe = CASES[name]
    tok = bpe_tokenizer()
    tok.train(SMALL, vocab, max_bytes)
    assert tok.get_vocab_size() == vocab_after
    assert tok.get_vocab_without_specials_size() == vocab_after - 28
    assert tok.get_specials_size() == 28
    assert _bytes(tok).hex() == hexbytes
    assert tok.encode(SMALL) == enc_train
    assert tok.encode(probe) == enc_probe
    assert tok.decode_bytes(enc_train) == SMALL
    back = bpe_tokenizer()
    back.deserialize(Reader(bytes.fromhex(hexbytes)))
    assert back == tok and back.encode(probe) == enc_probe


def test_verbose_prints_dlibs_lines(capsys):
    bpe_tokenizer().train(SMALL, 300, verbose=True)
    assert capsys.readouterr().out == VERBOSE_SMALL300
    bpe_tokenizer().train(SMALL, 284, verbose=True)
    assert capsys.readouterr().out == ("Warning: max_vocab_size too small for any merges. Need at "
                                       "least 285 tokens.\n")


@pytest.mark.parametrize("vocab", list(SHAKESPEARE))
def test_shakespeare_equals_dlib(shakespeare, vocab):
    text, toks = shakespeare
    tok = toks[vocab]
    nbytes, sha_bytes, ntok, sha_tok, probe = SHAKESPEARE[vocab]
    assert tok.merges[:10] == SHAKESPEARE_FIRST_MERGES
    data = _bytes(tok)
    assert (len(data), hashlib.sha256(data).hexdigest()) == (nbytes, sha_bytes)
    ids = tok.encode(text)
    assert len(ids) == ntok
    assert hashlib.sha256(_line(ids).encode()).hexdigest() == sha_tok
    assert tok.encode(SHAKESPEARE_PROBE) == probe
    # round trip: every byte back, the str too (the text is valid UTF-8)
    assert tok.decode_bytes(ids) == text.encode()
    assert tok.decode(ids) == text
    assert tok.decode(tok.encode(SHAKESPEARE_PROBE)) == SHAKESPEARE_PROBE
    arr = tok.encode_array(text)
    assert arr.dtype == np.int64 and arr.tolist() == ids
    assert 256 <= max(ids) < tok.get_vocab_without_specials_size()


def test_training_is_deterministic(shakespeare):
    text, toks = shakespeare
    again = bpe_tokenizer()
    again.train(text, 400)
    assert again == toks[400] and _bytes(again) == _bytes(toks[400])
    # the bytes of a str and the str itself train the same tokenizer
    from_bytes = bpe_tokenizer()
    from_bytes.train(text.encode(), 400)
    assert from_bytes == toks[400]


def test_decode_specials_and_unknown_ids_as_dlib():
    tok = bpe_tokenizer()
    tok.train(SMALL, 290)
    v = tok.get_vocab_size()
    ids = [97, 256, v - 28, v - 1, v, -1, 65, 300]
    # dlib: decode_show / decode_hide / decode(v - 2)
    assert tok.decode_bytes(ids).hex() == "6161613c746578743e3c7061643e3c756e6b3e3c756e6b3e413c756e6b3e"
    assert tok.decode_bytes(ids, False).hex() == "6161613c756e6b3e3c756e6b3e413c756e6b3e"
    assert tok.decode_bytes(v - 2).hex() == "3c756e6b3e"
    assert tok.decode(np.array(ids)) == "aaa<text><pad><unk><unk>A<unk>"
    assert (tok.get_special_token_id("<text>"), tok.get_special_token_id("<pad>"),
            tok.get_special_token_id("<unk>")) == (262, 289, 288)
    with pytest.raises(KeyError, match="<nope>"):
        tok.get_special_token_id("<nope>")
    fresh = bpe_tokenizer()
    assert fresh.get_special_token_id("<text>") == 256 and fresh.get_vocab_size() == 284
    assert _bytes(fresh).hex() == "010e6270655f746f6b656e697a65725f021c010100"
    # a token cut inside a UTF-8 character: exact bytes, and U+FFFD in the str
    assert tok.decode_bytes(195) == b"\xc3" and tok.decode(195) == "\ufffd"


def test_empty_text_and_no_room_keep_the_tokenizer():
    tok = bpe_tokenizer()
    tok.train(SMALL, 290)
    before = _bytes(tok)
    tok.train("", 300)
    tok.train(SMALL, 284)          # dlib returns before resetting the merges
    assert _bytes(tok) == before
    assert tok.encode("") == [] and tok.decode([]) == ""


@pytest.mark.parametrize("args, err, match", [
    (("abc", 283), ValueError, r"vocab_size must be in \[284, 65564\].*283"),
    (("abc", 70000), ValueError, "65564"),
    (("abc", 300.0), TypeError, "vocab_size must be an int"),
    (("abc", 300, -1), ValueError, "max_bytes"),
    ((["abc"], 300), TypeError, "expected str or bytes, got list"),
])
def test_train_refuses_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        bpe_tokenizer().train(*args)


def test_encode_decode_refuse_bad_input():
    tok = bpe_tokenizer()
    with pytest.raises(TypeError, match="encode: expected str or bytes"):
        tok.encode(123)
    with pytest.raises(TypeError, match="decode: ids must be"):
        tok.decode(["x"])


def _mutate(hexbytes, old, new):
    assert old in hexbytes
    return bytes.fromhex(hexbytes.replace(old, new, 1))


@pytest.mark.parametrize("data, match", [
    (bytes.fromhex("010e6270655f746f6b656e697a65725e021c010100"), "expected the version"),
    # vocab_size 285 with no merge
    (bytes.fromhex("010e6270655f746f6b656e697a65725f021d010100"), "vocab_size 285 but 0 merges"),
    # merge 0 = (97, 300): an id not yet made
    (_mutate(CASES["small290"][4], "0101060161016101026161", "0101060161022c0101026161"),
     r"joins ids \(97, 300\)"),
    # merge 0's pattern "ab" instead of "aa"
    (_mutate(CASES["small290"][4], "0101060161016101026161", "0101060161016101026162"),
     "not the bytes of ids 97 and 97"),
    (bytes.fromhex(CASES["small290"][4])[:-3], "remain"),
    (bytes.fromhex("010e6270655f746f6b656e697a65725f021c0104ffffff7f"), "claims"),
])
def test_deserialize_refuses_bad_records_and_changes_nothing(data, match):
    tok = bpe_tokenizer()
    tok.train(SMALL, 290)
    before = _bytes(tok)
    with pytest.raises(SerializationError, match=match):
        dnnpy.deserialize(bytearray(data), tok)    # bytearray: always data, never a path
    assert _bytes(tok) == before


def test_net_then_tokenizer_in_one_file(tmp_path):
    net = loss_multiclass_log[fc[3, input[np.float32]]]()
    net(np.zeros((2, 2, 2), np.float32))       # set up
    tok = bpe_tokenizer()
    tok.train(SMALL, 290)
    path = tmp_path / "slm.dat"                 # dlib's bytes: the net, then the tokenizer
    serialize_objects(path, net, tok)
    data = path.read_bytes()
    assert data.endswith(bytes.fromhex(CASES["small290"][4]))
    net2, tok2 = deserialize_objects(path, loss_multiclass_log[fc[3, input[np.float32]]],
                                     bpe_tokenizer())
    assert tok2 == tok and tok2.encode(SMALL) == CASES["small290"][5]
    # the dnnpy format names the tokenizer in its header and checks it on reading
    path2 = tmp_path / "slm.dnn"
    serialize_objects(path2, net, tok)
    _, tok3 = deserialize_objects(path2, loss_multiclass_log[fc[3, input[np.float32]]],
                                  bpe_tokenizer())
    assert tok3 == tok
