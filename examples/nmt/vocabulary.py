"""Text standardization and word vocabularies, in TensorFlow ops.

Ids: 0 = ``[PAD]`` (so ``Embedding(mask_zero=True)`` masks padding),
1 = ``[UNK]``, 2 = ``[START]``, 3 = ``[END]``, then tokens by decreasing
count (ties in token order). A vocabulary is saved as a plain text file, one
token a line, line number = id. Standardization never produces a reserved
token: it lower-cases and splits brackets off.
"""

from __future__ import annotations

import collections
import os
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import tensorflow as tf

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
RESERVED = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3

# Control characters become spaces; spaces go around every character that is
# not a letter, mark, digit or space, and between digits and letters.
# (One pattern matching every token is 10-20x slower.)
_SPACING = (
    (r"\p{Cc}", " "),
    (r"([^\pL\pM\pN\pZ\s])", r" \1 "),
    (r"(\pN)([\pL\pM])", r"\1 \2"),
    (r"([\pL\pM])(\pN)", r"\1 \2"),
    (r"[\pZ\s]+", " "),
)


def _nfkc_bytes(text: bytes) -> bytes:
    return unicodedata.normalize("NFKC", text.decode("utf-8")).encode("utf-8")


_nfkc = np.vectorize(_nfkc_bytes, otypes=[object])


def _space_tokens(texts: tf.Tensor) -> tf.Tensor:
    """Lower-cases and space-separates the tokens of NFKC-normalized ``texts``."""
    texts = tf.strings.lower(texts, encoding="utf-8")
    for pattern, rewrite in _SPACING:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.strip(texts)


def standardize_without_nfkc(texts: tf.Tensor) -> tf.Tensor:
    """``standardize`` minus its NFKC step: TensorFlow string ops only.

    For a SavedModel, which cannot hold ``tf.numpy_function``; text that NFKC
    would change (full-width characters, ligatures) may tokenize differently.
    """
    return _space_tokens(tf.convert_to_tensor(texts, dtype=tf.string))


def standardize(texts: tf.Tensor) -> tf.Tensor:
    """NFKC-normalizes, lower-cases and space-separates tokens of ``texts``.

    Tokens are digit runs, letter runs and single other characters:
    ``"May 9th, 1998"`` -> ``"may 9 th , 1998"``. Works on string tensors of
    any shape, eagerly, in ``tf.function`` and in ``tf.data``.
    """
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    normalized = tf.numpy_function(_nfkc, [texts], tf.string, stateful=False)
    return _space_tokens(tf.ensure_shape(normalized, texts.shape))


def tokenize(texts: tf.Tensor) -> tf.RaggedTensor | tf.Tensor:
    """Standardized tokens: a ``(...,)`` string tensor gives ``(..., None)``."""
    return tf.strings.split(standardize(texts))


def lookup_table(tokens: Sequence[str]) -> tf.lookup.StaticHashTable:
    """Token -> int64 id (line number) table, ``UNK_ID`` for unknown tokens."""
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(tuple(tokens)), tf.range(len(tokens), dtype=tf.int64)
    )
    return tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)


def detokenize(ids: tf.Tensor, tokens: tf.Tensor) -> tf.Tensor:
    """``(..., T)`` ids -> ``(...)`` strings of ``tokens[ids]``, stopping at ``[END]``.

    Padding and ``[START]`` are dropped; the tokens are joined by single
    spaces. ``tokens`` is the ``(V,)`` string tensor of a vocabulary. Pure
    TensorFlow ops: it runs in ``tf.function`` and in a SavedModel.
    """
    ids = tf.convert_to_tensor(ids, dtype=tf.int32)
    before_end = tf.cumsum(tf.cast(ids == END_ID, tf.int32), axis=-1) == 0
    keep = before_end & (ids != PAD_ID) & (ids != START_ID)
    words = tf.where(keep, tf.gather(tokens, ids), "")
    joined = tf.strings.reduce_join(words, axis=-1, separator=" ")
    return tf.strings.strip(tf.strings.regex_replace(joined, " +", " "))


class Vocabulary:
    """A token list with lookups both ways; see the module doc for the ids."""

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(RESERVED)]) != RESERVED:
            raise ValueError(
                f"Expected the first tokens to be {RESERVED}. Received: {tuple(tokens[:4])}"
            )
        if len(set(tokens)) != len(tokens):
            raise ValueError("Expected distinct tokens. Received duplicates.")
        self.tokens = tuple(tokens)
        self._token_tensor = tf.constant(self.tokens)
        self._table = lookup_table(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_counts(
        cls, counts: collections.Counter, max_size: int | None = None, min_count: int = 1
    ) -> Vocabulary:
        """Most frequent tokens first, at most ``max_size`` ids in all."""
        ranked = sorted((-n, token) for token, n in counts.items() if n >= min_count)
        words = [token for _, token in ranked if token not in RESERVED]
        limit = None if max_size is None else max(max_size - len(RESERVED), 0)
        return cls(RESERVED + tuple(words[:limit]))

    def save(self, path: str | os.PathLike) -> None:
        """Writes one token a line (UTF-8)."""
        with open(path, "w", encoding="utf-8", newline="\n") as file:
            file.write("\n".join(self.tokens) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        with open(path, encoding="utf-8", newline="\n") as file:
            return cls(file.read().split("\n")[:-1])

    def lookup(self, tokens: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Token strings -> int32 ids (``UNK_ID`` for unknown tokens)."""
        if isinstance(tokens, tf.RaggedTensor):
            return tokens.with_flat_values(self.lookup(tokens.flat_values))
        return tf.cast(self._table.lookup(tokens), tf.int32)

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """``(..., T)`` ids -> ``(...)`` strings, stopping at ``[END]``.

        Padding and ``[START]`` are dropped; the tokens are joined by spaces
        (``detokenize``).
        """
        return detokenize(ids, self._token_tensor)


class Vocabularies(NamedTuple):
    """Source and target vocabularies, saved as two text files in a folder."""

    source: Vocabulary
    target: Vocabulary

    def save(self, directory: str | os.PathLike) -> None:
        os.makedirs(directory, exist_ok=True)
        self.source.save(os.path.join(directory, "source_vocabulary.txt"))
        self.target.save(os.path.join(directory, "target_vocabulary.txt"))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Vocabularies:
        return cls(
            Vocabulary.load(os.path.join(directory, "source_vocabulary.txt")),
            Vocabulary.load(os.path.join(directory, "target_vocabulary.txt")),
        )


def _update_counts(counts: collections.Counter, texts: tf.Tensor) -> None:
    counts.update(token.decode("utf-8") for token in tokenize(texts).flat_values.numpy())


def build_vocabularies(
    train: tf.data.Dataset,
    max_size: int | None = None,
    min_count: int = 1,
    batch_size: int = 4096,
) -> Vocabularies:
    """Source and target vocabularies from examples ``{"source", "target"}``.

    Args:
        train: the training split, as ``load_splits`` returns it.
        max_size: the most ids in each vocabulary, reserved ones included.
        min_count: tokens seen fewer times map to ``[UNK]``.
        batch_size: strings standardized at once.
    """
    source_counts: collections.Counter = collections.Counter()
    target_counts: collections.Counter = collections.Counter()
    texts = train.map(lambda example: (example["source"], example["target"]))
    for sources, targets in texts.batch(batch_size):
        _update_counts(source_counts, sources)
        _update_counts(target_counts, targets)
    return Vocabularies(
        Vocabulary.from_counts(source_counts, max_size, min_count),
        Vocabulary.from_counts(target_counts, max_size, min_count),
    )
