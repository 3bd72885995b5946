"""dlib's slm_advanced_train_ex: a transformer that memorises a text and regenerates it byte
for byte (RoPE attention, a mixture of experts, BPE tokens).

    python -m dnnpy.examples.slm_advanced_train [--train] [--generate] [--verify] [--out DIR]

dlib's example trains a ``bpe_tokenizer`` on the text (enwiki), encodes it between ``<text>``
and ``</text>``, trains a transformer to predict each token from the ``max_seq_len`` tokens
before it, saves ``net << tokenizer`` in one file; ``--generate`` reloads it as the inference
net (``dropout_10`` read back as ``multiply``), starts from the text's first ``max_seq_len``
tokens and predicts token after token (a ``context_manager`` keeps the window, ``<pad>``
filled) until ``</text>`` or the text's size; ``--verify`` compares the regenerated file with
the original, byte for byte. The net is dlib's, layer for layer
(``transformer_config::network_type<is_training>``)::

    multihead_attention = rms_norm<add_prev1<DO<linear_no_bias<D, reshape_to<1,T,D,
        multm_prev2<softmaxm<tril_mask<scale_weights<D/H, multm_prev3<
        rope<query<T,D,H, skip1<tag3<transpose<rope<key<T,D,H, skip1<
        tag2<value<T,D,H, tag1<SUBNET>>>>>>>>>>>>>>>>>>>>>
    query/key/value = reshape_to<H, T, D/H, linear_no_bias<D, SUBNET>>
    moe_router = softmax<fc<2, avg_pool_everything<DO<leaky_relu<fc<16, DO<leaky_relu<
        fc<32, DO<fc<16, SUBNET>>>>>>>>>>>
    expert = DO<linear<D, DO<ACT<linear<4D, SUBNET>>>>>
    weighted_sum_of_experts = add_prev<itag3, mult_prev<itag1, extract<0,1,1,1, skip6<
        itag1<expert<iskip<itag3<mult_prev<itag2, extract<1,1,1,1, skip6<
        itag2<expert<itag0<SUBNET>>>>>>>>>>>>>>
    moe_feed_forward = rms_norm<add_prev5<weighted_sum_of_experts<skip5<tag6<
        moe_router<tag5<SUBNET>>>>>>>
    net = loss_multiclass_log<fc<V, repeat<L, moe_feed_forward<multihead_attention<...>>,
        rms_norm<DO<positional_encodings<embeddings<V, D, input<matrix<int,0,1>>>>>>>>>

``rope`` is the example's own layer, ``rotary_positional_embedding_`` (below, written
against dnnpy's layer interface, serialized as dlib's example serializes it); ``ACT = gelu``,
``DO = dropout_10`` (training) or ``multiply`` (inference). Two of dlib's quirks are kept
as they are: ``reshape_to<H, T, D/H>`` splits a ``T x D`` block in memory order (not per
token), and ``mult_prev`` multiplies zero-padded (dlib's ``multiply_zero_padded``), so a
router weight of shape ``1x1`` scales only element (0, 0) of its expert's ``T x D`` output;
the experts reach the residual stream almost nowhere.

What differs, and why (dlib's net: 4 layers, D=228, 6 heads, T=30, 8000 BPE tokens, on up to
1 MB of enwiki, hours on a GPU):

- the text is the first 1.5 KB (``--max-bytes``) of the shipped Shakespeare text (``--text
  FILE`` for your own); the BPE vocabulary is 400 (``--vocab-size``: 116 merges + 28 special
  tokens), 2 layers, D=32, 4 heads, T=16 (``--layers``, ``--dim``, ``--heads``,
  ``--seq-len``; 0.27 M parameters);
- learning rate 3e-3 with a cosine decay over ``--max-epochs`` 30, shuffled every epoch,
  ``--seed`` for initialisation, dropout and shuffling (dlib: 3e-4, ``std::shuffle`` with a
  default engine, 10 epochs);
- with none of ``--train``, ``--generate``, ``--verify`` all three run (dlib prints its
  options); every file goes to ``--out``: the tokenizer (``<name>.vocab``, dlib's bytes),
  the tokens (``<name>.partial.tokens.bin``, dlib's layout: uint64 count, then uint32 ids),
  the model (``dlib_slm_model.dat``: net then tokenizer, dlib's ``serialize(f) << net <<
  tokenizer``) and the regenerated text;
- a model file is trained afresh unless ``--resume`` (dlib always continues from it); no
  synchronization file, no SIGINT handling.

Metric (dlib's): "Training accuracy" of the inference net on every window (dlib warns below
0.999) and ``--verify``'s byte-for-byte comparison (the whole text: dlib compares only the
original's first ``len(generated)`` bytes). The default run is seeded, so it repeats.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy import (add_prev, add_prev1, add_prev5, avg_pool_everything, bpe_tokenizer, dropout_10,
                   embeddings, extract, fc, gelu, input, iskip, itag0, itag1, itag2, itag3,
                   leaky_relu, linear, linear_no_bias, loss_multiclass_log, mult_prev, multiply,
                   multm_prev2, multm_prev3, positional_encodings, repeat, reshape_to, rms_norm,
                   skip1, skip5, skip6, softmax, softmaxm, tag1, tag2, tag3, tag5, tag6,
                   transpose, tril_mask)
from dnnpy.data.datasets import load_shakespeare
from dnnpy.examples._util import Timer, base_parser, make_trainer, out_dir
# one definition of dlib's scale_weights_ for both language-model examples
from dnnpy.examples.slm_basic_train import check_transformer_sizes, scale_weights
from dnnpy.layers.base import computational_layer, seeded_initialisation
from dnnpy.serialization import from_bytes, to_bytes
from dnnpy.templates import layer_template

MODEL_FILE = "dlib_slm_model.dat"
OUTPUT_FILE = "shakespeare_generated.txt"


# ----------------------------------------------------------------------------------------
# the example's own layer: rotary positional embeddings

class rotary_positional_embedding_(computational_layer):
    """dlib's example layer: rotates each pair of features ``(2i, 2i+1)`` of every row
    ``pos`` of a ``(N, heads, seq_len, d_head)`` input by the angle ``pos * 10000^(-2(i +
    0.5)/d_head)`` (float32, as dlib computes it); an odd last feature passes through.
    Backward applies the inverse rotation to the gradient (a rotation's transpose) and adds
    it to the subnet's gradient. No parameters; ``seq_len`` and ``d_head`` are fixed by
    ``setup`` from the first input, and a later input of another shape is an error."""

    dot_name = "rotary_positional_embedding"

    def __init__(self):
        super().__init__()
        self.seq_len = self.d_head = 0
        self.angles = self.cos_values = self.sin_values = np.zeros((0, 0), np.float32)

    def setup(self, sub):
        x = sub.get_output()
        self.seq_len, self.d_head = x.nr(), x.nc()
        half = self.d_head // 2
        inv_freq = np.power(np.float32(10000), np.float32(-2) * (np.arange(half, dtype=np.float32)
                                                             + np.float32(0.5)) / np.float32(self.d_head))
        self.angles = (np.arange(self.seq_len, dtype=np.float32)[:, None] * inv_freq[None, :]).astype(np.float32)
        self.cos_values, self.sin_values = np.cos(self.angles), np.sin(self.angles)

    def _rotate(self, x, inverse):
        """``x`` (N, k, seq_len, d_head) rotated (a new array)."""
        if x.shape[2:] != (self.seq_len, self.d_head):
            raise ValueError(f"rotary_positional_embedding: the input's rows x columns "
                             f"{x.shape[2:]} must be (seq_len, d_head) = "
                             f"({self.seq_len}, {self.d_head}), fixed by the first input")
        out = x.copy()
        rot = self.d_head - (self.d_head % 2)
        x0, x1 = x[..., 0:rot:2], x[..., 1:rot:2]
        c, s = self.cos_values, self.sin_values
        if inverse:
            s = -s
        out[..., 0:rot:2] = x0 * c - x1 * s
        out[..., 1:rot:2] = x0 * s + x1 * c
        return out

    def forward(self, sub, output):
        x = sub.get_output()
        output.copy_size(x)
        output.host_write_only()[...] = self._rotate(x.host_read(), False)

    def backward(self, gradient_input, sub, params_grad):
        g = sub.get_gradient_input()
        g.host()[...] += self._rotate(gradient_input.host_read(), True)

    def __repr__(self):
        return f"rotary_positional_embedding (d_head={self.d_head}, seq_len={self.seq_len})"

    def to_xml(self):
        return f"<rotary_positional_embedding d_head='{self.d_head}' seq_len='{self.seq_len}'/>\n"

    # the example's record: version, seq_len, d_head, then angles, cos and sin as dlib's
    # matrix<float> (-rows, -columns, then the elements)
    def serialize(self, w):
        w.string("rotary_positional_embedding_")
        w.int(self.seq_len)
        w.int(self.d_head)
        for m in (self.angles, self.cos_values, self.sin_values):
            w.int(-m.shape[0])
            w.int(-m.shape[1])
            for v in m.ravel():
                w.float32(v)

    def deserialize(self, r):
        r.expect_string("rotary_positional_embedding_")
        seq_len, d_head = r.int("seq_len"), r.int("d_head")
        mats = []
        for name in ("angles", "cos_values", "sin_values"):
            nr, nc = -r.int(f"{name} rows"), -r.int(f"{name} columns")
            if (nr, nc) != (seq_len, d_head // 2):
                raise r.error(f"rotary_positional_embedding_: {name} is {nr}x{nc}, expected "
                              f"{seq_len}x{d_head // 2}")
            mats.append(np.array([r.float32() for _ in range(nr * nc)], np.float32).reshape(nr, nc))
        self.seq_len, self.d_head = seq_len, d_head
        self.angles, self.cos_values, self.sin_values = mats


rope = layer_template("rope", rotary_positional_embedding_)


# ----------------------------------------------------------------------------------------
# the net

class transformer_config:
    """dlib's example ``transformer_config<vocab_size, num_layers, num_heads, embedding_dim,
    max_seq_len, gelu, dropout_10>``: ``network_type(is_training)`` and ``describe()``."""

    def __init__(self, vocab_size, num_layers, num_heads, embedding_dim, max_seq_len,
                 activation_func=gelu, dropout_policy=dropout_10):
        check_transformer_sizes(vocab_size, num_layers, num_heads, embedding_dim, max_seq_len)
        self.V, self.L, self.H, self.D, self.T = vocab_size, num_layers, num_heads, embedding_dim, max_seq_len
        self.ACT, self.DO = activation_func, dropout_policy

    def _qkv(self, SUBNET):
        return reshape_to[self.H, self.T, self.D // self.H, linear_no_bias[self.D, SUBNET]]

    def multihead_attention(self, DO, SUBNET):
        D, T, H = self.D, self.T, self.H
        return rms_norm[add_prev1[DO[linear_no_bias[D, reshape_to[1, T, D,
            multm_prev2[softmaxm[tril_mask[scale_weights[D // H, multm_prev3[
            rope[self._qkv(skip1[tag3[transpose[rope[self._qkv(skip1[
            tag2[self._qkv(tag1[SUBNET])]])]]]])]]]]]]]]]]]

    def moe_router(self, DO, SUBNET, num_experts=2):
        return softmax[fc[num_experts, avg_pool_everything[DO[leaky_relu[fc[16, DO[leaky_relu[
            fc[32, DO[fc[16, SUBNET]]]]]]]]]]]

    def expert(self, DO, SUBNET):
        return DO[linear[self.D, DO[self.ACT[linear[self.D * 4, SUBNET]]]]]

    def weighted_sum_of_experts(self, DO, SUBNET):
        return add_prev[itag3, mult_prev[itag1, extract[0, 1, 1, 1, skip6[
            itag1[self.expert(DO, iskip[
            itag3[mult_prev[itag2, extract[1, 1, 1, 1, skip6[
            itag2[self.expert(DO, itag0[SUBNET])]]]]]])]]]]]

    def moe_feed_forward(self, DO, SUBNET):
        return rms_norm[add_prev5[self.weighted_sum_of_experts(DO, skip5[tag6[
            self.moe_router(DO, tag5[SUBNET])]])]]

    def transformer_block(self, DO):
        return lambda SUBNET: self.moe_feed_forward(DO, self.multihead_attention(DO, SUBNET))

    def network_type(self, is_training):
        DO = self.DO if is_training else multiply
        return loss_multiclass_log[fc[self.V, repeat[self.L, self.transformer_block(DO),
            rms_norm[DO[positional_encodings[embeddings[self.V, self.D, input[np.int32]]]]]]]]

    def describe(self):
        return (f"Transformer model configuration:\n- vocabulary size: {self.V}\n"
                f"- layers: {self.L}\n- attention heads: {self.H}\n"
                f"- embedding dimension: {self.D}\n- sequence length: {self.T}")


# ----------------------------------------------------------------------------------------
# example-local helpers (dlib's)

class context_manager:
    """dlib's example ``context_manager``: the last ``max_context_tokens`` tokens; an input
    window is the last ``desired_length`` of them, ``padding_token``-filled at the end."""

    def __init__(self, max_context_tokens=1024, min_prompt_tokens=100, padding_token=-1):
        if min_prompt_tokens >= max_context_tokens:
            raise ValueError("Minimum prompt size must be smaller than maximum context size")
        if min_prompt_tokens < 10:
            raise ValueError("Minimum prompt size must be at least 10")
        self.max_context_size, self.min_prompt_size = max_context_tokens, min_prompt_tokens
        self.padding_token = padding_token
        self.context: list[int] = []

    def add_token(self, token):
        if len(self.context) >= self.max_context_size:
            del self.context[0]
        self.context.append(int(token))

    def add_tokens(self, tokens):
        for t in tokens:
            self.add_token(t)

    def get_input_sequence(self, desired_length):
        if desired_length < self.min_prompt_size:
            raise ValueError("Requested length is smaller than minimum prompt size")
        seq = np.full((desired_length, 1), self.padding_token, np.int32)
        tail = self.context[-desired_length:]
        seq[:len(tail), 0] = tail
        return seq


def save_tokens_to_file(tokens, path):
    """dlib's layout: uint64 count, then each token as uint32 (little-endian here)."""
    Path(path).write_bytes(struct.pack("<Q", len(tokens)) + np.asarray(tokens, "<u4").tobytes())


def load_tokens_from_file(path):
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: a tokens file starts with an 8-byte count, got {len(data)} bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if len(data) != 8 + 4 * n:
        raise ValueError(f"{path}: the count says {n} tokens ({8 + 4 * n} bytes) but the file "
                         f"has {len(data)} bytes")
    return np.frombuffer(data, "<u4", n, 8).astype(np.int64).tolist()


def _fmt(b):
    return chr(b) if 32 <= b < 127 else f"\\x{b:02x}"


def verify_match(original: bytes, generated: bytes) -> bool:
    """dlib's byte-for-byte comparison, with its report (first mismatches in context, error
    regions, most common substitutions)."""
    if len(original) != len(generated):
        print(f"Size mismatch: original={len(original)} bytes, generated={len(generated)} bytes")
        return False
    a, b = np.frombuffer(original, np.uint8), np.frombuffer(generated, np.uint8)
    bad = np.flatnonzero(a != b)
    if bad.size == 0:
        print(f"Files match perfectly. All {len(original)} bytes are identical.")
        return True
    for i, pos in enumerate(bad[:10]):
        lo, hi = max(0, pos - 10), min(len(a), pos + 11)
        print(f"\n----- Mismatch #{i + 1} -----\nContext at position {pos}:")
        print(f"Original ({a[pos]} = '{_fmt(a[pos])}'): {''.join(map(_fmt, a[lo:hi]))}")
        print(f"Generated ({b[pos]} = '{_fmt(b[pos])}'): {''.join(map(_fmt, b[lo:hi]))}")
    starts = bad[np.r_[True, np.diff(bad) > 1]]
    print(f"\n===== Error Summary =====\nTotal mismatches: {bad.size} bytes "
          f"({bad.size * 100.0 / len(a):g}%)\n\nFound {starts.size} error regions:")
    for i, s in enumerate(starts[:20]):
        length = int(np.argmax(np.r_[a[s:] == b[s:], True]))
        print(f"  Region #{i + 1}: Position {s}, Length {length}")
    return False


# ----------------------------------------------------------------------------------------

def cosine_schedule(start, end, steps):
    i = np.arange(steps) / max(steps - 1, 1)
    return end + 0.5 * (start - end) * (1 + np.cos(np.pi * i))


def _inference_net(cfg, net):
    """dlib's ``net_infer g_infer = net``: the training net's parameters in the inference
    type (each dropout read back as a multiply), through dlib's bytes."""
    return from_bytes(to_bytes(net, "dlib"), cfg.network_type(False)())


def generate(net, tok, prompt_tokens, T, target_size):
    """dlib's generation loop: a ``context_manager(4T, T, <pad>)`` holding the prompt, then one
    token at a time until ``</text>`` (or ``<text>``) or ``target_size`` bytes. Returns the
    text (specials not shown) and the number of generated tokens."""
    ctx = context_manager(T * 4, T, tok.get_special_token_id("<pad>"))
    ctx.add_tokens(prompt_tokens)
    out = [tok.decode_bytes(prompt_tokens, False)]
    total = len(out[0])
    stop = {tok.get_special_token_id("<text>"), tok.get_special_token_id("</text>")}
    count = 0
    while total < target_size:
        nxt = int(net([ctx.get_input_sequence(T)])[0])
        count += 1
        if nxt in stop:
            break
        piece = tok.decode_bytes([nxt], False)
        out.append(piece)
        total += len(piece)
        ctx.add_token(nxt)
    return b"".join(out), count


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--train", action="store_true", help="tokenize the text and train the model")
    parser.add_argument("--generate", action="store_true", help="regenerate the text from the model")
    parser.add_argument("--verify", action="store_true",
                        help="compare the regenerated text with the original, byte for byte")
    parser.add_argument("--text", metavar="FILE", default=None,
                        help="a text file of your own (default: dlib's Shakespeare text, shipped)")
    parser.add_argument("--max-bytes", type=int, default=1500,
                        help="bytes of the text used (0: all; dlib's --max-bytes)")
    parser.add_argument("--vocab-size", type=int, default=400, help="BPE vocabulary (dlib: 8000)")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="(dlib: 3e-4)")
    parser.add_argument("--batch-size", type=int, default=64, help="mini-batch size (dlib: 64)")
    parser.add_argument("--max-epochs", type=int, default=30, help="(dlib: 10)")
    parser.add_argument("--alpha", type=float, default=0.004, help="adam's weight decay")
    parser.add_argument("--beta1", type=float, default=0.9, help="adam's first moment decay")
    parser.add_argument("--beta2", type=float, default=0.999, help="adam's second moment decay")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (dlib: 4)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (dlib: 6)")
    parser.add_argument("--dim", type=int, default=32, help="embedding dimension (dlib: 228)")
    parser.add_argument("--seq-len", type=int, default=16, help="max_seq_len (dlib: 30)")
    parser.add_argument("--resume", action="store_true",
                        help="continue training from the model file when it exists (dlib always does)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation, dropout and shuffle seed")
    args = parser.parse_args(argv)
    if not (args.train or args.generate or args.verify):
        args.train = args.generate = args.verify = True
    if args.quick:
        args.max_bytes, args.max_epochs, args.layers, args.dim, args.seq_len = 200, 1, 1, 16, 10
    for name in ("batch_size", "max_epochs", "seq_len"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.seq_len < 10:
        parser.error(f"--seq-len must be at least 10 (dlib's context_manager), got {args.seq_len}")
    if args.max_bytes < 0:
        parser.error(f"--max-bytes must be >= 0, got {args.max_bytes}")
    timer = Timer()
    out = out_dir(args.out)
    name = Path(args.text).name if args.text else "shakespeare.txt"
    raw = Path(args.text).read_bytes() if args.text else load_shakespeare()[0].encode()
    text = raw[:args.max_bytes] if args.max_bytes else raw
    tokenizer_file = out / (name + ".vocab")
    tokens_file = out / f"{name}.{'partial' if args.max_bytes else 'full'}.tokens.bin"
    model_file, output_file = out / MODEL_FILE, out / OUTPUT_FILE
    results = {"model_file": model_file, "tokenizer_file": tokenizer_file, "tokens_file": tokens_file,
               "output_file": output_file}
    T = args.seq_len

    if args.train:
        print("=== TRAINING MODE ===")
        print(f"Read {len(text)} bytes")
        tok = bpe_tokenizer()
        print(f"Training new BPE tokenizer with vocabulary size {args.vocab_size}...")
        try:
            tok.train(text, args.vocab_size, 0, not args.quiet)
        except ValueError as e:
            parser.error(str(e))
        dnnpy.serialize_objects(tokenizer_file, tok, format="dlib")
        print(f"Tokenizer saved to {tokenizer_file}")
        full = ([tok.get_special_token_id("<text>")] + tok.encode(text)
                + [tok.get_special_token_id("</text>")])
        print(f"Number of tokens: {len(full)}")
        save_tokens_to_file(full, tokens_file)
        if len(full) <= T:
            raise SystemExit(f"Error: Not enough tokens to create training sequences. Need at least "
                             f"{T + 1} tokens.")
        full_arr = np.asarray(full, np.int32)
        idx = np.arange(len(full) - T)[:, None] + np.arange(T)[None, :]
        samples = list(full_arr[idx][..., None])
        labels = full_arr[T:].tolist()
        print(f"Created {len(samples)} training samples (100%)...")
        try:
            cfg = transformer_config(tok.get_vocab_size(), args.layers, args.heads, args.dim, T)
        except ValueError as e:
            parser.error(str(e))
        print("Model architecture:\n" + cfg.describe())
        with seeded_initialisation(args.seed):
            dnnpy.set_dropout_seed(args.seed)
            net = cfg.network_type(True)()
            if args.resume and model_file.exists():
                dnnpy.deserialize_objects(model_file, net, bpe_tokenizer())
                print(f"Resuming from {model_file}")
            trainer = make_trainer(net, dnnpy.adam(args.alpha, args.beta1, args.beta2),
                                   args.learning_rate, args.batch_size, args.max_epochs,
                                   not args.quiet, min_learning_rate=1e-6)
            steps = args.max_epochs * -(-len(samples) // args.batch_size)
            trainer.set_learning_rate_schedule(cosine_schedule(args.learning_rate, 1e-6, steps))
            print("Starting training...")
            t = Timer()
            trainer.train(samples, labels, shuffle=True, seed=args.seed)
            net = trainer.get_net()
        results["train_seconds"] = t()
        net.clean()
        dnnpy.serialize_objects(model_file, net, tok, format="dlib")
        print(f"Model saved to {model_file}")
        print("Evaluating model accuracy...")
        infer = _inference_net(cfg, net)
        predicted = np.asarray(infer(samples, batch_size=256))
        accuracy = float(np.mean(predicted == np.asarray(labels)))
        print(f"Training accuracy: {accuracy * 100:g}%")
        if accuracy < 0.999:
            print("WARNING: Model accuracy is less than 99.90%. The model may not perfectly "
                  "reconstruct the input text.")
        results.update(training_accuracy=accuracy, num_samples=len(samples), num_tokens=len(full),
                       vocab_size=tok.get_vocab_size(), num_parameters=dnnpy.count_parameters(net),
                       final_loss=trainer.get_average_loss())

    if args.generate:
        print("=== GENERATION MODE ===")
        if not model_file.exists():
            raise SystemExit("Error: model file not found. Please run --train first.")
        tok = bpe_tokenizer()
        full = load_tokens_from_file(tokens_file)
        # the vocabulary size comes from the tokenizer stored behind the net
        probe = dnnpy.deserialize_objects(tokenizer_file, bpe_tokenizer())[0]
        cfg = transformer_config(probe.get_vocab_size(), args.layers, args.heads, args.dim, T)
        net, tok = dnnpy.deserialize_objects(model_file, cfg.network_type(False), tok)
        print(f"Loaded model from {model_file}")
        print(f"Number of model parameters: {dnnpy.count_parameters(net)}")
        prompt = full[:T]
        print(f"Using {len(prompt)} tokens for initial prompt")
        print(f"Will generate approximately {len(text)} bytes")
        t = Timer()
        generated, count = generate(net, tok, prompt, T, len(text))
        output_file.write_bytes(generated)
        results.update(generate_seconds=t(), generated_tokens=count, generated_bytes=len(generated))
        print(f"Generated {count} tokens after prompt, {len(generated)} bytes total")
        print(f"Output saved to {output_file}")

    if args.verify:
        print("=== VERIFICATION MODE ===")
        if not output_file.exists():
            raise SystemExit(f"Error: Generated file not found at {output_file}")
        generated = output_file.read_bytes()
        # the whole text (dlib compares the original's first len(generated) bytes, so a
        # generation that stopped early would pass there)
        match = verify_match(text, generated)
        print("SUCCESS: The generated file matches the original text perfectly!" if match
              else "FAILED: The generated file does not match the original text.")
        results["verified"] = match
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


if __name__ == "__main__":
    main()
