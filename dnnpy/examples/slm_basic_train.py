"""dlib's slm_basic_train_ex: a very small character-level transformer language model.

    python -m dnnpy.examples.slm_basic_train [--train] [--generate] [--out dnnpy_example_output]

dlib's example (with ``slm_defs.h``) trains a transformer on Shakespeare's text (``slm_data.h``)
to predict the next character from the ``max_seq_len`` characters before it, saves it, and in
``--generate`` mode reloads it as the inference net (each ``dropout_10`` read back as a
``multiply``), feeds it the first ``max_seq_len`` characters of ``shakespeare_prompt`` and
prints 400 generated characters, one ``net(window)`` at a time, shifting the window by one.
The net is dlib's, layer for layer (``transformer_config::network_type<is_training>``)::

    multihead_attention = add_prev1<DO<extract<0,1,1,D, multm_prev3<DO<softmaxm<tril_mask<
        scale_weights<D/H, multm_prev4<query<H,D, skip2<tag4<key<H,D, skip2<tag3<value<H,D,
        tag2<fc_no_bias<3*D, rms_norm<tag1<SUBNET>>>>>>>>>>>>>>>>>>>>
    feed_forward = add_prev5<DO<extract<0,1,1,D, fc<D, ACT<fc<4*D, rms_norm<tag5<SUBNET>>>>>>>>
    net = loss_multiclass_log<fc<257, rms_norm<repeat<L, transformer_block,
        positional_encodings<embeddings<257, D, input<matrix<int,0,1>>>>>>>>

with ``query = extract<0,H,D/H,1>``, ``key = extract<D,H,1,D/H>``, ``value = extract<2D,H,D/H,1>``,
``scale_weights_ = multiply_(1/sqrt(D/H))`` (here ``layer_template("scale_weights",
scale_weights_)``), ``ACT = gelu`` and ``DO = dropout_10`` (training) or ``multiply``
(inference). dlib's ``fc`` reads the whole ``T x D`` sample, so its "attention" mixes feature
rows of the projected window; this is kept as it is. Tokens are bytes (0-255), 256 pads.

What differs, and why (dlib's net is 3 layers, D=64, T=80: 8.2 M parameters, trained for
hours on the whole 15 KB text):

- the default net is 2 layers, D=32, 4 heads, T=24 (``--layers``, ``--dim``, ``--heads``,
  ``--seq-len``; 0.55 M parameters), trained on 1.5 KB of the text (``--text-size``): the
  part that starts at dlib's prompt (``--text-offset``, default: where ``shakespeare_prompt``
  is in the text), so that ``--generate`` with dlib's prompt continues text the net has read.
  ``--text FILE`` trains on a file of your own (from its start; the prompt is then its start);
- learning rate 3e-3 (dlib: 1e-4, with its ``--learning-rate``) decayed along a cosine to 1e-6
  over ``--max-epochs`` 20 (dlib: 400 epochs, the rate shrunk on plateaus: ``--schedule
  plateau``); the windows shuffled every epoch (dlib: ``--shuffle`` shuffles once; here
  ``--shuffle`` is on by default, ``--no-shuffle`` keeps dlib's text order); one thread
  (``--threads``): these ops are small, and a second OpenMP thread only spins;
- with neither ``--train`` nor ``--generate`` the example does both (dlib prints its options;
  ``--help`` does that here). dlib continues training from the model file when it exists;
  here that is ``--resume``, so that default runs repeat;
- the model file ``shakespeare_lm_char_model.dat`` (dlib's format) goes to ``--out``.

Metric. "Training accuracy (on this sample set)" is dlib's: the fraction of training windows
whose next character the (training-type) net predicts. The generation match, printed after
the generated text: the generated characters compared position by position with the text that
really follows the prompt's first ``T`` characters in the training text (over
``min(--generation-length, characters left)`` positions); the fraction equal, and the length
of the exact prefix. The default run is seeded, so it repeats.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import dnnpy
from dnnpy import (add_prev1, add_prev5, dropout_10, embeddings, extract, fc, fc_no_bias, gelu, input,
                   loss_multiclass_log, multiply, multm_prev3, multm_prev4, positional_encodings,
                   repeat, rms_norm, skip2, softmaxm, tag1, tag2, tag3, tag4, tag5, tril_mask)
from dnnpy.data.datasets import load_shakespeare
from dnnpy.errors import SerializationError
from dnnpy.examples._util import Timer, add_threads_argument, base_parser, make_trainer, num_threads, out_dir
from dnnpy.layers.base import seeded_initialisation
from dnnpy.layers.dropout import multiply_
from dnnpy.templates import layer_template

MAX_TOKEN_ID = 255
PAD_TOKEN = 256
VOCAB_SIZE = MAX_TOKEN_ID + 1 + 1       # 256 bytes + the pad token
MODEL_FILE = "shakespeare_lm_char_model.dat"


class scale_weights_(multiply_):
    """dlib's ``scale_weights_<d_k>``: a ``multiply_`` by ``1/sqrt(d_k)`` (serialized as one)."""

    def __init__(self, d_k):
        super().__init__(1.0 / math.sqrt(float(d_k)))


scale_weights = layer_template("scale_weights", scale_weights_)


def check_transformer_sizes(vocab_size, num_layers, num_heads, embedding_dim, max_seq_len):
    """dlib's ``transformer_config`` static checks: positive integers, heads dividing the
    embedding dimension (ValueError naming the size)."""
    for name, v in (("vocab_size", vocab_size), ("num_layers", num_layers),
                    ("num_heads", num_heads), ("embedding_dim", embedding_dim),
                    ("max_seq_len", max_seq_len)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"transformer_config: {name} must be a positive integer, got {v!r}")
    if embedding_dim % num_heads:
        raise ValueError(f"transformer_config: the embedding dimension ({embedding_dim}) must be "
                         f"divisible by the number of heads ({num_heads})")


class transformer_config:
    """dlib's ``transformer::transformer_config<vocab_size, num_layers, num_heads,
    embedding_dim, max_seq_len, use_squeezing, gelu, dropout_10>`` (slm_defs.h):
    ``network_type(is_training)`` builds the net type, ``describe()`` is ``model_info``."""

    def __init__(self, vocab_size=5000, num_layers=6, num_heads=8, embedding_dim=128,
                 max_seq_len=100, use_squeezing=False, activation_func=gelu, dropout_policy=dropout_10):
        check_transformer_sizes(vocab_size, num_layers, num_heads, embedding_dim, max_seq_len)
        self.vocab_size, self.num_layers, self.num_heads = vocab_size, num_layers, num_heads
        self.embedding_dim, self.max_seq_len, self.use_squeezing = embedding_dim, max_seq_len, use_squeezing
        self.ACT, self.DO = activation_func, dropout_policy

    # -- slm_defs.h, namespace def ------------------------------------------------------
    @staticmethod
    def query(h, d, SUBNET):
        return extract[0, h, d // h, 1, SUBNET]

    @staticmethod
    def key(h, d, SUBNET):
        return extract[d, h, 1, d // h, SUBNET]

    @staticmethod
    def value(h, d, SUBNET):
        return extract[2 * d, h, d // h, 1, SUBNET]

    def multihead_attention(self, DO, SUBNET):
        d, h = self.embedding_dim, self.num_heads
        return add_prev1[DO[extract[0, 1, 1, d, multm_prev3[
            DO[softmaxm[tril_mask[
            scale_weights[d // h,
            multm_prev4[self.query(h, d, skip2[
            tag4[self.key(h, d, skip2[
            tag3[self.value(h, d,
            tag2[fc_no_bias[d * 3, rms_norm[
            tag1[SUBNET]]]])]])]])]]]]]]]]]

    def feed_forward(self, DO, SUBNET):
        d = self.embedding_dim
        return add_prev5[DO[extract[0, 1, 1, d, fc[d, self.ACT[fc[d * 4, rms_norm[tag5[SUBNET]]]]]]]]

    def transformer_block(self, DO):
        return lambda SUBNET: self.feed_forward(DO, self.multihead_attention(DO, SUBNET))

    def classification_head(self, SUBNET):
        d = self.embedding_dim
        if self.use_squeezing:
            return loss_multiclass_log[fc[self.vocab_size, fc[d // 4, self.ACT[fc[d // 8, rms_norm[SUBNET]]]]]]
        return loss_multiclass_log[fc[self.vocab_size, rms_norm[SUBNET]]]

    def network_type(self, is_training):
        """dlib's ``network_type<is_training>``: dropout in training, ``multiply`` at inference."""
        DO = self.DO if is_training else multiply
        return self.classification_head(
            repeat[self.num_layers, self.transformer_block(DO),
                   positional_encodings[embeddings[self.vocab_size, self.embedding_dim, input[np.int32]]]])

    def describe(self):
        return (f"Transformer model configuration:\n- vocabulary size: {self.vocab_size}\n"
                f"- layers: {self.num_layers}\n- attention heads: {self.num_heads}\n"
                f"- embedding dimension: {self.embedding_dim}\n- max sequence length: {self.max_seq_len}")


def char_based_tokenize(text):
    """Each byte of the UTF-8 text is a token in [0, 255] (dlib iterates a ``std::string``)."""
    return np.frombuffer(text.encode("utf-8"), np.uint8).astype(np.int32)


def make_training_set(tokens, max_seq_len, max_samples):
    """dlib's samples: windows ``tokens[s:s+T]`` (as ``T x 1`` int32 matrices) labelled with
    ``tokens[s+T]``, for ``s < min(len - (T+1), max_samples)``."""
    n = min(max(len(tokens) - (max_seq_len + 1), 0), max_samples)
    idx = np.arange(n)[:, None] + np.arange(max_seq_len)[None, :]
    windows = tokens[idx][..., None]
    return list(windows), [int(v) for v in tokens[max_seq_len:max_seq_len + n]]


def generate(net, prompt_tokens, max_seq_len, length):
    """dlib's loop: a ``T x 1`` window (the prompt's first T tokens, pad-filled), predict the
    next token, shift left by one, append it (capped at 255). Returns the generated tokens."""
    window = np.full((max_seq_len, 1), PAD_TOKEN, np.int32)
    p = np.asarray(prompt_tokens[:max_seq_len], np.int32)
    window[:len(p), 0] = p
    out = np.empty(length, np.int32)
    for i in range(length):
        nxt = min(int(net([window])[0]), MAX_TOKEN_ID)
        out[i] = nxt
        window[:-1] = window[1:]
        window[-1, 0] = nxt
    return out


def cosine_schedule(start, end, steps):
    """``steps`` learning rates from ``start`` down to ``end`` along half a cosine."""
    i = np.arange(steps) / max(steps - 1, 1)
    return end + 0.5 * (start - end) * (1 + np.cos(np.pi * i))


def decode(tokens):
    return bytes(np.asarray(tokens, np.uint8)).decode("utf-8", errors="replace")


def main(argv=None) -> dict:
    parser = base_parser(" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--train", action="store_true", help="train a small transformer on the text")
    parser.add_argument("--generate", action="store_true",
                        help="generate text from the saved model, given dlib's prompt")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="(dlib: 1e-4)")
    parser.add_argument("--batch-size", type=int, default=64, help="mini-batch size")
    parser.add_argument("--generation-length", type=int, default=400, help="characters to generate")
    parser.add_argument("--alpha", type=float, default=0.004, help="adam's weight decay")
    parser.add_argument("--beta1", type=float, default=0.9, help="adam's first moment decay")
    parser.add_argument("--beta2", type=float, default=0.999, help="adam's second moment decay")
    parser.add_argument("--max-samples", type=int, default=50000, help="most training windows")
    parser.add_argument("--max-epochs", type=int, default=20, help="(dlib: 400)")
    parser.add_argument("--schedule", choices=("cosine", "plateau"), default="cosine",
                        help="learning rate: cosine decay to 1e-6 over --max-epochs, or dlib's "
                             "shrink on plateaus (15000 steps without progress)")
    parser.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                        help="shuffle the training windows every epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue training from the model file when it exists (dlib always does)")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (dlib: 3)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (dlib: 4)")
    parser.add_argument("--dim", type=int, default=32, help="embedding dimension (dlib: 64)")
    parser.add_argument("--seq-len", type=int, default=24, help="max_seq_len, the window (dlib: 80)")
    parser.add_argument("--text", metavar="FILE", default=None,
                        help="train on this UTF-8 text file instead of dlib's Shakespeare text")
    parser.add_argument("--text-offset", type=int, default=None,
                        help="first character used (default: where dlib's prompt starts; 0 with --text)")
    parser.add_argument("--text-size", type=int, default=1500,
                        help="characters of text used (0: all; dlib uses all 15,322)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation, dropout and shuffle seed")
    add_threads_argument(parser, default=1)
    args = parser.parse_args(argv)
    if not args.train and not args.generate:
        args.train = args.generate = True
    if args.quick:
        args.text_size, args.max_epochs, args.generation_length = 200, 1, 20
        args.layers, args.dim, args.seq_len = 1, 16, 8
    for name in ("batch_size", "generation_length", "max_samples", "max_epochs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    model_file = out_dir(args.out) / MODEL_FILE

    if args.text:
        text = Path(args.text).read_text(encoding="utf-8")
        prompt = None               # the start of the text used
        offset = args.text_offset or 0
    else:
        text, prompt = load_shakespeare()
        offset = text.find(prompt) if args.text_offset is None else args.text_offset
    if not 0 <= offset <= len(text):
        parser.error(f"--text-offset must be in [0, {len(text)}], got {offset}")
    text = text[offset:offset + args.text_size] if args.text_size else text[offset:]
    prompt = text if prompt is None else prompt
    try:
        cfg = transformer_config(VOCAB_SIZE, args.layers, args.heads, args.dim, args.seq_len)
    except ValueError as e:
        parser.error(str(e))
    with num_threads(args.threads):
        return _run(args, cfg, text, prompt, model_file)


def _run(args, cfg, text, prompt, model_file):
    timer = Timer()
    results = {"model_file": model_file}
    T = cfg.max_seq_len

    if args.train:
        print("=== TRAIN MODE ===")
        full_tokens = char_based_tokenize(text)
        if len(full_tokens) == 0:
            raise SystemExit("ERROR: The training text is empty. Please provide a valid training text.")
        max_sequences = max(len(full_tokens) - (T + 1), 0)
        print(f"Training text size: {len(full_tokens)} characters")
        print(f"Maximum number of sequences: {max_sequences}")
        if max_sequences == 0:
            raise SystemExit(f"ERROR: The training text is too short for training. It must contain "
                             f"at least {T + 2} characters.")
        samples, labels = make_training_set(full_tokens, T, args.max_samples)
        if args.shuffle:
            print("Shuffling training sequences and labels (every epoch)...")
        net_type = cfg.network_type(True)
        with seeded_initialisation(args.seed):
            dnnpy.set_dropout_seed(args.seed)
            net = net_type()
            if args.resume and model_file.exists():
                dnnpy.deserialize(model_file, net)
                print(f"Resuming from {model_file}")
            trainer = make_trainer(net, dnnpy.adam(args.alpha, args.beta1, args.beta2), args.learning_rate,
                                   args.batch_size, args.max_epochs, not args.quiet, min_learning_rate=1e-6)
            trainer.set_iterations_without_progress_threshold(15000)
            if args.schedule == "cosine":
                trainer.set_learning_rate_schedule(cosine_schedule(
                    args.learning_rate, 1e-6, args.max_epochs * -(-len(samples) // args.batch_size)))
            t = Timer()
            trainer.train(samples, labels, shuffle=args.shuffle, seed=args.seed)
            net = trainer.get_net()
        results["train_seconds"] = t()
        predicted = np.asarray(net(samples, batch_size=256))
        accuracy = float(np.mean(predicted == np.asarray(labels)))
        print(f"Training accuracy (on this sample set): {accuracy:g}")
        results.update(training_accuracy=accuracy, num_samples=len(samples),
                       num_parameters=dnnpy.count_parameters(net), final_loss=trainer.get_average_loss())
        net.clean()
        dnnpy.serialize(net, model_file, format="dlib")
        print(f"Model saved to {model_file}")

    if args.generate:
        print("=== GENERATE MODE ===")
        if not model_file.exists():
            raise SystemExit(f"Error: model file {model_file} not found. Please run --train first.")
        try:
            net = dnnpy.deserialize(model_file, cfg.network_type(False)())
        except SerializationError as e:
            raise SystemExit(f"Error: {model_file} does not hold this net ({e}); was it trained with "
                             f"the same --layers, --heads, --dim and --seq-len (and --quick)?") from e
        print(f"Loaded model from {model_file}")
        print(cfg.describe())
        print(f"Model parameters: {dnnpy.count_parameters(net)}\n")
        prompt_text = prompt[:T]       # dlib keeps only the first window of the prompt
        prompt_tokens = char_based_tokenize(prompt_text)[:T]
        print(f"\nInitial prompt:\n{prompt_text} (...)\n\n\nGenerated text:\n{prompt_text}", end="")
        generated = generate(net, prompt_tokens, T, args.generation_length)
        print(decode(generated))
        print("\n(end of generation)")
        # the truth: what follows the prompt's first window in the training text
        tokens = char_based_tokenize(text)
        at = _find(tokens, prompt_tokens)
        if at < 0:
            print("(the prompt is not in the training text: no generation match)")
        else:
            truth = tokens[at + len(prompt_tokens):at + len(prompt_tokens) + len(generated)]
            m = len(truth)
            same = generated[:m] == truth
            match = float(np.mean(same)) if m else 0.0
            prefix = int(np.argmin(same)) if not same.all() else m
            print(f"Generation match with the training text: {match:.4f} ({int(same.sum())} of {m} "
                  f"characters; exact for the first {prefix})")
            results.update(generation_match=match, generation_exact_prefix=prefix,
                           generation_compared=m)
        results["generated_text"] = decode(generated)
    results["seconds"] = timer()
    print(f"done in {results['seconds']:.1f} s")
    return results


def _find(haystack, needle):
    """Index of the first occurrence of the token sequence ``needle`` in ``haystack`` (-1: none)."""
    n = len(needle)
    if n == 0 or n > len(haystack):
        return -1
    windows = np.lib.stride_tricks.sliding_window_view(haystack, n)
    hits = np.flatnonzero((windows == needle).all(axis=1))
    return int(hits[0]) if len(hits) else -1


if __name__ == "__main__":
    main()
