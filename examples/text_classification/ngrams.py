"""Hashed n-gram features of the fastText-style classifier, computed in the batcher.

A text becomes one *bag* of row ids of the model's embedding table ``[vocab_size + buckets, d]``:

* its word-piece **unigrams**: the BERT tokenizer's ids (``[CLS]``, ``[SEP]`` and ``[PAD]``
  left out), cut to the first ``max_tokens``, rows ``[0, vocab_size)``;
* its **hashed n-grams** for n = 2 .. ``ngrams`` (bigrams, optionally trigrams…) over those
  unigrams: each run of n consecutive ids is hashed to one of ``buckets`` rows after the
  vocabulary, rows ``[vocab_size, vocab_size + buckets)``;
* optionally its **head features**: its first ``head_tokens`` unigrams once more, hashed
  into the same buckets with another seed (the title of a news item, the subject of a
  DbPedia abstract).

The hash is a fixed function of the ids (a 64-bit multiply-xor-shift mix, the SplitMix64
finaliser, applied token by token from a seed that depends on n), computed with NumPy
``uint64`` arithmetic over the whole batch at once. It never uses Python's salted ``hash``,
so the same text gets the same rows in every process and after a saved model is reloaded;
:data:`HASH_VERSION` names the function (a model's record is only meaningful with it).

Layout of a batch (PyTorch's ``EmbeddingBag`` form): flat ``indices [N]`` and ``offsets [B]``,
bag b is ``indices[offsets[b]:offsets[b+1]]``, holding the text's unigrams, then its bigrams,
then its trigrams, then (optionally) its head features, in text order. An empty text gives an
empty bag.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.ngrams import NGramHasher``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

DEFAULT_BUCKETS = 2**19
HASH_VERSION = "splitmix64-v1"

_U64 = np.uint64
_MIX_1 = _U64(0xBF58476D1CE4E5B9)
_MIX_2 = _U64(0x94D049BB133111EB)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = _U64(30), _U64(27), _U64(31)


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (a bijection of uint64), in place on ``h``; returns ``h``."""
    h ^= h >> _S30
    h *= _MIX_1
    h ^= h >> _S27
    h *= _MIX_2
    h ^= h >> _S31
    return h


def hash_ngrams(tokens: np.ndarray, starts: np.ndarray, n: int, kind: int = 0) -> np.ndarray:
    """The 64-bit hashes of the n-grams ``tokens[s:s+n]`` for every start ``s`` in ``starts``.

    ``h = mix(seed ^ t0); h = mix((h * φ) ^ t1); ...`` with ``seed = mix((n + 256·kind) · φ)``
    and φ the 64-bit golden ratio: order-sensitive, and different for each n and kind.

    Args:
        tokens: int token ids ``[T]`` (values below 2^63).
        starts: int positions ``[K]`` with ``s + n <= T``.
        n: the n-gram order (>= 1).
        kind: 0 for n-grams, 1 for the head unigrams (see :class:`NGramHasher`).

    Returns:
        ``uint64 [K]``.
    """
    tokens = np.ascontiguousarray(tokens, dtype=np.int64).view(_U64)
    starts = np.asarray(starts, dtype=np.int64)
    seed = np.full(1, n + 256 * kind, dtype=_U64)
    seed *= _GOLDEN  # array arithmetic wraps modulo 2^64 silently (scalar arithmetic warns)
    h = np.full(starts.shape[0], _mix(seed)[0], dtype=_U64)
    for j in range(n):
        if j:
            h *= _GOLDEN
        h ^= tokens[starts + j]
        _mix(h)
    return h


def flatten(token_lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens int64 [T], lengths int64 [B])`` of a list of token-id lists."""
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    tokens = np.fromiter(itertools.chain.from_iterable(token_lists), dtype=np.int64, count=int(lengths.sum()))
    return tokens, lengths


class NGramFeatures:
    """A batch of bags: ``indices int64 [N]`` and ``offsets int64 [B]`` (see the module doc).

    Args:
        indices: the row ids, bag after bag.
        offsets: where each bag starts in ``indices``.
    """

    __slots__ = ("indices", "offsets")

    def __init__(self, indices: np.ndarray, offsets: np.ndarray):
        self.indices = indices
        self.offsets = offsets

    def bag(self, b: int) -> np.ndarray:
        """The row ids of bag ``b``."""
        end = self.offsets[b + 1] if b + 1 < len(self.offsets) else len(self.indices)
        return self.indices[self.offsets[b] : end]

    def __len__(self) -> int:
        return len(self.offsets)

    def __repr__(self) -> str:
        return f"NGramFeatures(bags={len(self.offsets)}, indices={len(self.indices)})"


class NGramHasher:
    """Turns token-id sequences into bags of unigram + hashed n-gram rows.

    Args:
        vocab_size: rows of the unigrams (the tokenizer's ``vocab_size()``); every token id
            must be below it.
        buckets: rows of the hashed features, after the vocabulary (default 2^19).
        ngrams: the longest n-gram: 1 unigrams only, 2 adds bigrams (default), 3 trigrams.
        max_tokens: unigrams kept per text (its first ones); n-grams are formed over them.
        head_tokens: the first ``head_tokens`` unigrams of each text also count once more as
            *head* features, hashed into the buckets apart from the n-grams (0: none). A
            news item starts with its title and a DbPedia text with its subject, so the
            head's words may weigh differently from the same words further on.
        drop_ids: token ids left out before anything else (the special tokens).
    """

    def __init__(
        self,
        vocab_size: int,
        buckets: int = DEFAULT_BUCKETS,
        ngrams: int = 2,
        max_tokens: int = 512,
        head_tokens: int = 0,
        drop_ids: Sequence[int] = (),
    ):
        for name, value, low in (
            ("vocab_size", vocab_size, 1),
            ("buckets", buckets, 0),
            ("ngrams", ngrams, 1),
            ("max_tokens", max_tokens, 1),
            ("head_tokens", head_tokens, 0),
        ):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
                raise ValueError(f"NGramHasher: {name} must be an int >= {low}, got {value!r}")
        if (ngrams > 1 or head_tokens > 0) and buckets < 1:
            raise ValueError(
                f"NGramHasher: ngrams={ngrams} / head_tokens={head_tokens} need buckets >= 1 to hash "
                "into, got 0"
            )
        self.vocab_size = int(vocab_size)
        self.buckets = int(buckets)
        self.ngrams = int(ngrams)
        self.max_tokens = int(max_tokens)
        self.head_tokens = int(head_tokens)
        self.drop_ids = np.array(sorted({int(i) for i in drop_ids}), dtype=np.int64)

    @property
    def num_rows(self) -> int:
        """Rows of the embedding table these features index: ``vocab_size + buckets``."""
        return self.vocab_size + self.buckets

    def features(self, token_lists: Sequence[Sequence[int]]) -> NGramFeatures:
        """The bags of a batch of token-id lists.

        Args:
            token_lists: one sequence of token ids per text.
        """
        return self.features_flat(*flatten(token_lists))

    def features_flat(self, tokens: np.ndarray, lengths: np.ndarray) -> NGramFeatures:
        """The bags of a batch given as flat ``tokens [T]`` and per-text ``lengths [B]``.

        Bag b holds the text's L unigrams, then its L - 1 bigrams, L - 2 trigrams, ..., then
        its min(L, head_tokens) head features, each group in text order.

        Args:
            tokens: int token ids of every text, one text after the other.
            lengths: the number of ids of each text (sums to T).

        Raises:
            IndexError: a token id outside ``[0, vocab_size)``.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if (
            lengths.ndim != 1
            or tokens.ndim != 1
            or int(lengths.sum()) != tokens.shape[0]
            or (lengths < 0).any()
        ):
            raise ValueError(
                f"NGramHasher: lengths (sum {int(lengths.sum())}) must be >= 0 and add up to the "
                f"{tokens.shape[0]} tokens"
            )
        n_bags = lengths.shape[0]
        bag = np.repeat(np.arange(n_bags, dtype=np.int64), lengths)
        if self.drop_ids.size:  # the special tokens go first, then the cut counts real tokens only
            keep = ~np.isin(tokens, self.drop_ids)
            if not keep.all():
                tokens, bag = tokens[keep], bag[keep]
                lengths = np.bincount(bag, minlength=n_bags).astype(np.int64)
        starts = np.zeros(n_bags, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        position = np.arange(tokens.shape[0], dtype=np.int64) - starts[bag]
        if n_bags and int(lengths.max()) > self.max_tokens:
            keep = position < self.max_tokens
            tokens, bag, position = tokens[keep], bag[keep], position[keep]
            lengths = np.minimum(lengths, self.max_tokens)
        if tokens.size:
            low, high = int(tokens.min()), int(tokens.max())
            if low < 0 or high >= self.vocab_size:
                raise IndexError(
                    f"NGramHasher: token id {low if low < 0 else high} is outside the vocabulary of "
                    f"{self.vocab_size} ids (expected 0 <= id < {self.vocab_size})"
                )
        # the size of each group of each bag, so that every feature is written straight to its place
        groups = [lengths] + [np.maximum(lengths - (n - 1), 0) for n in range(2, self.ngrams + 1)]
        if self.head_tokens:
            groups.append(np.minimum(lengths, self.head_tokens))
        counts = np.sum(groups, axis=0) if n_bags else np.zeros(0, np.int64)
        offsets = np.zeros(n_bags, dtype=np.int64)
        np.cumsum(counts[:-1], out=offsets[1:])
        indices = np.empty(int(counts.sum()), dtype=np.int64)
        base = offsets[bag] + position  # a token's place in its bag's first group
        indices[base] = tokens
        section = lengths[bag].copy()  # where the next group starts, relative to the token's place
        buckets = np.uint64(max(self.buckets, 1))
        for n in range(2, self.ngrams + 1):
            at = np.flatnonzero(position <= lengths[bag] - n)  # tokens that start an n-gram of their text
            if at.size:
                hashed = hash_ngrams(tokens, at, n) % buckets
                indices[base[at] + section[at]] = hashed.astype(np.int64) + self.vocab_size
            section += np.maximum(lengths[bag] - (n - 1), 0)
        if self.head_tokens:
            at = np.flatnonzero(position < self.head_tokens)
            if at.size:
                hashed = hash_ngrams(tokens, at, 1, kind=1) % buckets
                indices[base[at] + section[at]] = hashed.astype(np.int64) + self.vocab_size
        return NGramFeatures(indices, offsets)

    def __repr__(self) -> str:
        return (
            f"NGramHasher(vocab_size={self.vocab_size}, buckets={self.buckets}, ngrams={self.ngrams}, "
            f"max_tokens={self.max_tokens}, head_tokens={self.head_tokens}, hash={HASH_VERSION!r})"
        )
