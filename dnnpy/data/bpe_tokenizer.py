"""dlib's ``bpe_tokenizer`` (``dlib/tokenizer/bpe_tokenizer.h``): byte pair encoding with
dlib's training rule, token numbering, special tokens and serialized bytes.

Vocabulary: ids 0..255 are the bytes, then one id per merge (``256 + k`` for the k-th
merge), then dlib's 28 special tokens in ``SPECIAL_TOKENS`` order. A fresh tokenizer has
no merges (vocabulary 284, ``<text>`` = 256).

Training (dlib's algorithm, same merges in the same order):

1. the text's bytes (UTF-8 for a ``str``), cut to ``max_bytes`` when it is not 0;
2. segments: runs of bytes other than space, ``\\n``, ``\\t``, ``\\r``; each of those four is
   a segment of its own, so no merge ever spans them;
3. adjacent pairs are counted inside segments, overlapping ("aaa" counts (a, a) twice);
4. repeatedly the most frequent pair (ties: the smallest ``(left, right)``) becomes the
   next id; it replaces the pair left to right without overlap in the segments holding it,
   which are then recounted; training stops after ``vocab_size - 284`` merges or when no
   pair is left.

Identical segments are counted once with their multiplicity (dlib keeps one copy per
occurrence); the counts, hence the merges, are the same.

Encoding applies every merge in creation order to the whole byte string, each as one left to
right, non-overlapping pass (dlib's encode; special-token text is not parsed). Each pass is a
vectorised numpy step.
"""

from __future__ import annotations

import heapq
import sys

import numpy as np

__all__ = ["bpe_tokenizer", "SPECIAL_TOKENS", "BPE_BASE_VOCAB_SIZE"]

BPE_BASE_VOCAB_SIZE = 256
SPECIAL_TOKENS = (
    "<text>", "</text>", "<url>", "</url>",
    "<image>", "</image>", "<video>", "</video>",
    "<audio>", "</audio>", "<file>", "</file>",
    "<code>", "</code>", "<summary>", "</summary>",
    "<think>", "</think>", "<start>", "<end>",
    "<user>", "<bot>", "<system>", "<question>",
    "<answer>", "<search>", "<unk>", "<pad>")
_NUM_SPECIALS = len(SPECIAL_TOKENS)
_MIN_VOCAB = BPE_BASE_VOCAB_SIZE + _NUM_SPECIALS
# dlib keeps token ids in uint16 while training: the last merge id is 65535
_MAX_VOCAB = 65536 + _NUM_SPECIALS
_DELIMITERS = frozenset(b" \n\t\r")
_VERSION = "bpe_tokenizer_"


def _as_bytes(text, what):
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"bpe_tokenizer.{what}: expected str or bytes, got {type(text).__name__}")


def _segments(data: bytes):
    """dlib's ``tokenize``: ``{segment bytes: occurrences}`` (insertion ordered)."""
    counts: dict[bytes, int] = {}
    start = 0
    for i, b in enumerate(data):
        if b in _DELIMITERS:
            if i > start:
                seg = data[start:i]
                counts[seg] = counts.get(seg, 0) + 1
            seg = data[i:i + 1]
            counts[seg] = counts.get(seg, 0) + 1
            start = i + 1
    if start < len(data):
        seg = data[start:]
        counts[seg] = counts.get(seg, 0) + 1
    return counts


def _merge_pass(tokens: np.ndarray, left: int, right: int, new: int) -> np.ndarray:
    """Replace ``(left, right)`` by ``new`` left to right, without overlap."""
    if tokens.size < 2:
        return tokens
    hit = tokens[:-1] == left
    hit &= tokens[1:] == right
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return tokens
    if left == right:
        # in a run of k equal tokens the greedy pass takes pairs 0, 2, 4, ... of the run
        starts = np.ones(idx.size, bool)
        starts[1:] = idx[1:] != idx[:-1] + 1
        run_start = np.maximum.accumulate(np.where(starts, idx, 0))
        idx = idx[(idx - run_start) % 2 == 0]
    keep = np.ones(tokens.size, bool)
    keep[idx + 1] = False
    out = tokens.copy()
    out[idx] = new
    return out[keep]


class bpe_tokenizer:
    """dlib's ``bpe_tokenizer``: ``train``, ``encode``, ``decode``, the special tokens and
    dlib's serialized bytes (``serialize(w)`` / ``deserialize(r)``; with
    ``dnnpy.serialize_objects(path, net, tok)`` a net and its tokenizer share one file, as
    dlib's ``serialize(file) << net << tokenizer``)."""

    def __init__(self):
        self._reset()
        self.vocab_size = _MIN_VOCAB

    def _reset(self):
        # (left, right, pattern) per token id; the byte tokens are (i, i, bytes([i]))
        self._merges = [(i, i, bytes([i])) for i in range(BPE_BASE_VOCAB_SIZE)]

    # -- training -------------------------------------------------------------------------
    def train(self, text, vocab_size, max_bytes=0, verbose=False):
        """Learn ``vocab_size - 284`` merges from ``text`` (str: its UTF-8 bytes, or bytes),
        or from its first ``max_bytes`` bytes when ``max_bytes`` is not 0 (dlib's
        ``train(text, vocab_size, max_bytes, verbose)``). Stops early when no pair is left;
        then ``get_vocab_size()`` is smaller than asked. As in dlib, an empty text, or
        ``vocab_size == 284`` (room for no merge), leaves the tokenizer as it was.
        ``verbose`` prints dlib's progress lines.

        ``vocab_size`` must be in [284, 65564]: below 284 dlib's merge count underflows and
        above 65564 its uint16 token ids wrap around, so those are refused here."""
        data = _as_bytes(text, "train")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
            raise TypeError(f"bpe_tokenizer.train: vocab_size must be an int, got "
                            f"{type(vocab_size).__name__}")
        if not _MIN_VOCAB <= vocab_size <= _MAX_VOCAB:
            raise ValueError(f"bpe_tokenizer.train: vocab_size must be in [{_MIN_VOCAB}, "
                             f"{_MAX_VOCAB}] (256 bytes + {_NUM_SPECIALS} special tokens + the "
                             f"merges, merge ids below 65536), got {vocab_size}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) \
                or max_bytes < 0:
            raise ValueError(f"bpe_tokenizer.train: max_bytes must be an int >= 0, got "
                             f"{max_bytes!r}")
        if not data:
            return
        if max_bytes and len(data) > max_bytes:
            data = data[:max_bytes]
        num_merges = int(vocab_size) - _MIN_VOCAB
        if num_merges == 0:
            if verbose:
                print(f"Warning: max_vocab_size too small for any merges. Need at least "
                      f"{_MIN_VOCAB + 1} tokens.")
            return
        if verbose:
            print(f"Training BPE tokenizer on {len(data)} bytes...")
            print(f"Target vocabulary size: {vocab_size}")
            print(f"Base vocabulary: {BPE_BASE_VOCAB_SIZE} tokens")
            print(f"Special tokens: {_NUM_SPECIALS} tokens")
            print(f"Available merges: {num_merges}")
        self._reset()
        counts = _segments(data)
        if verbose:
            print(f"Created {sum(counts.values())} segments for training")
        segments = [list(s) for s in counts]
        weights = list(counts.values())
        pair_counts: dict[tuple[int, int], int] = {}
        where: dict[tuple[int, int], set[int]] = {}
        heap: list[tuple[int, int, int]] = []   # (-count, left, right), stale entries skipped

        def count_in(seg_idx, sign):
            seg = segments[seg_idx]
            delta = sign * weights[seg_idx]
            for pair in zip(seg, seg[1:]):
                c = pair_counts.get(pair, 0) + delta
                pair_counts[pair] = c
                if sign > 0:
                    where.setdefault(pair, set()).add(seg_idx)
                else:
                    where[pair].discard(seg_idx)
                if c > 0:
                    heapq.heappush(heap, (-c, pair[0], pair[1]))

        for i in range(len(segments)):
            count_in(i, 1)
        performed = 0
        for merge_idx in range(num_merges):
            best = None
            while heap:
                neg, left, right = heapq.heappop(heap)
                if pair_counts.get((left, right), 0) == -neg:
                    best = (left, right, -neg)
                    break
            if best is None:
                if verbose:
                    print(f"\nNo more pairs to merge at iteration {merge_idx}")
                break
            left, right, count = best
            new = BPE_BASE_VOCAB_SIZE + merge_idx
            pattern = self._merges[left][2] + self._merges[right][2]
            self._merges.append((left, right, pattern))
            if verbose and (merge_idx % 1000 == 0 or merge_idx < 10):
                print(f"Merge {merge_idx}: ({left}, {right}) -> {new} (occurrences: {count}, "
                      f"pattern length: {len(pattern)})")
            for seg_idx in sorted(where.get((left, right), ())):
                count_in(seg_idx, -1)
                seg, out, j = segments[seg_idx], [], 0
                while j < len(seg):
                    if j + 1 < len(seg) and seg[j] == left and seg[j + 1] == right:
                        out.append(new)
                        j += 2
                    else:
                        out.append(seg[j])
                        j += 1
                segments[seg_idx] = out
                count_in(seg_idx, 1)
            pair_counts[(left, right)] = 0
            performed += 1
        self.vocab_size = len(self._merges) + _NUM_SPECIALS
        if verbose:
            print("\nTraining complete!")
            print(f"Base vocabulary: {BPE_BASE_VOCAB_SIZE} tokens")
            print(f"Merges performed: {performed}")
            print(f"Special tokens: {_NUM_SPECIALS} tokens")
            print(f"Total vocabulary size: {self.vocab_size}")
        sys.stdout.flush()

    # -- encoding -------------------------------------------------------------------------
    def encode(self, text) -> list[int]:
        """The token ids of ``text`` (str: its UTF-8 bytes, or bytes): every merge applied in
        creation order (dlib's ``encode``). Special-token text such as ``"<pad>"`` is encoded
        as ordinary bytes, as in dlib. Returns a list of int (dlib's ``std::vector<int>``);
        ``encode_array`` gives the same as a numpy int64 array."""
        return self.encode_array(text).tolist()

    def encode_array(self, text) -> np.ndarray:
        """``encode(text)`` as a 1-D numpy int64 array."""
        tokens = np.frombuffer(_as_bytes(text, "encode"), np.uint8).astype(np.int64)
        for new in range(BPE_BASE_VOCAB_SIZE, len(self._merges)):
            if tokens.size < 2:
                break
            left, right, _ = self._merges[new]
            tokens = _merge_pass(tokens, left, right, new)
        return tokens

    # -- decoding -------------------------------------------------------------------------
    def _table(self, display_special_tokens):
        specials = [s.encode() if display_special_tokens else b"" for s in SPECIAL_TOKENS]
        table = [m[2] for m in self._merges]
        # ids between the merges and vocab_size are special tokens (dlib's decode); a file
        # read from dlib always has exactly 28 of them there
        table += specials[:max(0, self.vocab_size - len(table))]
        return table

    def decode_bytes(self, ids, display_special_tokens=True) -> bytes:
        """dlib's ``decode`` exactly: the bytes of ``ids`` (an int or a sequence of ints);
        special ids give their text (nothing when ``display_special_tokens`` is false); any
        other id (negative, or at least ``get_vocab_size()``) gives ``<unk>``."""
        if isinstance(ids, (int, np.integer)):
            ids = [ids]
        table = self._table(display_special_tokens)
        n = len(table)
        unk = b"<unk>"
        try:
            return b"".join([table[i] if 0 <= i < n else unk for i in map(int, ids)])
        except (TypeError, ValueError) as e:
            raise TypeError(f"bpe_tokenizer.decode: ids must be an int or a sequence of ints: "
                            f"{e}") from None

    def decode(self, ids, display_special_tokens=True) -> str:
        """``decode_bytes(ids, display_special_tokens)`` as text: UTF-8, with any invalid
        sequence (a multi-byte character cut between tokens) replaced by U+FFFD. Use
        ``decode_bytes`` for dlib's exact bytes."""
        return self.decode_bytes(ids, display_special_tokens).decode("utf-8", errors="replace")

    # -- vocabulary -----------------------------------------------------------------------
    def get_special_token_id(self, token: str) -> int:
        """The id of special token ``token`` (e.g. ``"<pad>"``); ``KeyError`` if it is not one
        of ``SPECIAL_TOKENS`` (dlib throws "Special token not found")."""
        try:
            return self.get_vocab_without_specials_size() + SPECIAL_TOKENS.index(token)
        except ValueError:
            raise KeyError(f"bpe_tokenizer: special token not found: {token!r} (the special "
                           f"tokens are {', '.join(SPECIAL_TOKENS)})") from None

    def get_specials_size(self) -> int:
        return _NUM_SPECIALS

    def get_vocab_size(self) -> int:
        """Bytes + merges + special tokens."""
        return self.vocab_size

    def get_vocab_without_specials_size(self) -> int:
        return self.vocab_size - _NUM_SPECIALS

    @property
    def merges(self) -> list[tuple[int, int]]:
        """The learnt merges in creation order: ``(left, right)`` for ids 256, 257, ..."""
        return [(m[0], m[1]) for m in self._merges[BPE_BASE_VOCAB_SIZE:]]

    def __repr__(self):
        return f"bpe_tokenizer(vocab_size={self.vocab_size}, merges={len(self._merges) - 256})"

    def __eq__(self, other):
        return (isinstance(other, bpe_tokenizer) and self.vocab_size == other.vocab_size
                and self._merges == other._merges)

    __hash__ = None

    # -- dlib's bytes ---------------------------------------------------------------------
    def serialize(self, w):
        """dlib's record: ``"bpe_tokenizer_"``, vocab_size, the number of merges, then per
        merge left, right (ints) and its byte pattern (``std::vector<uint8_t>``)."""
        w.string(_VERSION)
        w.uint(self.vocab_size)
        w.uint(len(self._merges) - BPE_BASE_VOCAB_SIZE)
        for left, right, pattern in self._merges[BPE_BASE_VOCAB_SIZE:]:
            w.int(left)
            w.int(right)
            w.string(pattern)

    def deserialize(self, r):
        """Read dlib's record. Stricter than dlib, which trusts the file: every merge must
        join two earlier ids into exactly their bytes, and vocab_size must be the merges plus
        256 + 28, else ``SerializationError`` (and this tokenizer is unchanged)."""
        start = r.pos
        version = r.string("the bpe_tokenizer version string")
        if version != _VERSION:
            raise r.error(f"bpe_tokenizer: expected the version {_VERSION!r}, found {version!r}",
                          start)
        vocab_size = r.uint("bpe_tokenizer's vocab_size")
        at = r.pos
        n = r.uint("bpe_tokenizer's number of merges")
        if n > r.remaining() // 5 or n > _MAX_VOCAB - _MIN_VOCAB:
            raise r.error(f"bpe_tokenizer: the data claims {n} merges but only {r.remaining()} "
                          f"bytes remain (a merge takes at least 5)", at)
        merges = [(i, i, bytes([i])) for i in range(BPE_BASE_VOCAB_SIZE)]
        for k in range(n):
            at = r.pos
            left = r.int(f"merge {k}'s left id")
            right = r.int(f"merge {k}'s right id")
            pattern = r.raw(r.uint(f"merge {k}'s pattern length"), f"bytes of merge {k}'s pattern")
            new = BPE_BASE_VOCAB_SIZE + k
            if not (0 <= left < new and 0 <= right < new):
                raise r.error(f"bpe_tokenizer: merge {k} (id {new}) joins ids ({left}, {right}); "
                              f"both must be below {new}", at)
            if pattern != merges[left][2] + merges[right][2]:
                raise r.error(f"bpe_tokenizer: merge {k} (id {new}): its pattern {pattern!r} is "
                              f"not the bytes of ids {left} and {right} joined", at)
            merges.append((left, right, pattern))
        if vocab_size != len(merges) + _NUM_SPECIALS:
            raise r.error(f"bpe_tokenizer: vocab_size {vocab_size} but {n} merges: expected "
                          f"{len(merges) + _NUM_SPECIALS} (256 + merges + {_NUM_SPECIALS})", start)
        self._merges = merges
        self.vocab_size = vocab_size
