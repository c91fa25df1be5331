"""Text normalization, word vocabularies and a run's pair of vocabularies, in TensorFlow ops.

Every vocabulary of the example (``Vocabulary`` here: lower-cased words;
``examples.nmt.tokenizer.SentencePieceVocabulary``: subwords or characters,
case kept) shares the ids 0 = ``[PAD]`` (so ``Embedding(mask_zero=True)``
masks padding), 1 = ``[UNK]``, 2 = ``[START]``, 3 = ``[END]``, and the same
methods: ``encode`` (strings -> ragged int32 ids), ``decode`` (ids ->
strings, stopping at ``[END]``) and ``tokens`` (id -> token string). Both
are ``tf.Module``s, so a SavedModel that holds one carries its tables.

Text is NFKC-normalized by ``normalize`` (a TensorFlow Text op), the same
in training, evaluation and the SavedModel. A word vocabulary lists tokens
by decreasing count (ties in token order) and is saved as a plain text file,
one token a line, line number = id. Standardization never produces a
reserved token: it lower-cases and splits brackets off.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence
from typing import NamedTuple

import tensorflow as tf
import tensorflow_text as tf_text

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


def normalize(texts: tf.Tensor) -> tf.Tensor:
    """Unicode NFKC (``"\uff21"`` -> ``"A"``, ``"\ufb01"`` -> ``"fi"``), as a graph op."""
    return tf_text.normalize_utf8(tf.convert_to_tensor(texts, dtype=tf.string), "NFKC")


def standardize(texts: tf.Tensor) -> tf.Tensor:
    """NFKC-normalizes, lower-cases and space-separates tokens of ``texts``.

    Tokens are digit runs, letter runs and single other characters:
    ``"May 9th, 1998"`` -> ``"may 9 th , 1998"``. TensorFlow ops only: works
    on string tensors of any shape, eagerly, in ``tf.data`` and in a SavedModel.
    """
    texts = tf.strings.lower(normalize(texts), encoding="utf-8")
    for pattern, rewrite in _SPACING:
        texts = tf.strings.regex_replace(texts, pattern, rewrite)
    return tf.strings.strip(texts)


def tokenize(texts: tf.Tensor) -> tf.RaggedTensor | tf.Tensor:
    """Standardized tokens: a ``(...,)`` string tensor gives ``(..., None)``."""
    return tf.strings.split(standardize(texts))


def lookup_table(tokens: Sequence[str]) -> tf.lookup.StaticHashTable:
    """Token -> int64 id (line number) table, ``UNK_ID`` for unknown tokens."""
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(tuple(tokens)), tf.range(len(tokens), dtype=tf.int64)
    )
    return tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)


def content_mask(ids: tf.Tensor) -> tf.Tensor:
    """True on ``(..., T)`` ``ids`` before the first ``[END]``, except pads and ``[START]``."""
    before_end = tf.cumsum(tf.cast(ids == END_ID, tf.int32), axis=-1) == 0
    return before_end & (ids != PAD_ID) & (ids != START_ID)


def detokenize(ids: tf.Tensor, tokens: tf.Tensor) -> tf.Tensor:
    """``(..., T)`` ids -> ``(...)`` strings of ``tokens[ids]``, stopping at ``[END]``.

    Padding and ``[START]`` are dropped; the tokens are joined by single
    spaces. ``tokens`` is the ``(V,)`` string tensor of a vocabulary. Pure
    TensorFlow ops: it runs in ``tf.function`` and in a SavedModel.
    """
    ids = tf.convert_to_tensor(ids, dtype=tf.int32)
    keep = content_mask(ids)
    words = tf.where(keep, tf.gather(tokens, ids), "")
    joined = tf.strings.reduce_join(words, axis=-1, separator=" ")
    return tf.strings.strip(tf.strings.regex_replace(joined, " +", " "))


class Vocabulary(tf.Module):
    """Lower-cased word tokens with lookups both ways; see the module doc for the ids."""

    kind = "words"

    def __init__(self, tokens: Sequence[str]):
        super().__init__(name="word_vocabulary")
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

    @staticmethod
    def file_name(side: str) -> str:
        """The file of a run's ``side`` (``"source"``/``"target"``) vocabulary."""
        return f"{side}_vocabulary.txt"

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

    def encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``(B,)`` strings -> ``(B, None)`` int32 ids of their standardized words."""
        return self.lookup(tokenize(texts))

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """``(..., T)`` ids -> ``(...)`` strings, stopping at ``[END]``.

        Padding and ``[START]`` are dropped; the tokens are joined by spaces
        (``detokenize``).
        """
        return detokenize(ids, self._token_tensor)


class Vocabularies(NamedTuple):
    """Source and target vocabularies, saved as two files in a run's folder.

    Either side is a word ``Vocabulary`` (``{side}_vocabulary.txt``) or a
    ``SentencePieceVocabulary`` (``{side}_sentencepiece.model``).
    """

    source: tf.Module
    target: tf.Module

    def save(self, directory: str | os.PathLike) -> None:
        os.makedirs(directory, exist_ok=True)
        self.source.save(os.path.join(directory, self.source.file_name("source")))
        self.target.save(os.path.join(directory, self.target.file_name("target")))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Vocabularies:
        from examples.nmt.tokenizer import SentencePieceVocabulary  # noqa: PLC0415

        sides = []
        for side in ("source", "target"):
            words = os.path.join(directory, Vocabulary.file_name(side))
            pieces = os.path.join(directory, SentencePieceVocabulary.file_name(side))
            if os.path.isfile(pieces):
                sides.append(SentencePieceVocabulary.load(pieces))
            elif os.path.isfile(words):
                sides.append(Vocabulary.load(words))
            else:
                raise FileNotFoundError(f"no {side} vocabulary in {directory}: {words} or {pieces}")
        return cls(*sides)


def _update_counts(counts: collections.Counter, texts: tf.Tensor) -> None:
    counts.update(token.decode("utf-8") for token in tokenize(texts).flat_values.numpy())


def word_vocabulary(
    texts: tf.data.Dataset, max_size: int | None = None, min_count: int = 1
) -> Vocabulary:
    """A word ``Vocabulary`` of a dataset of ``(B,)`` string batches."""
    counts: collections.Counter = collections.Counter()
    for batch in texts:
        _update_counts(counts, batch)
    return Vocabulary.from_counts(counts, max_size, min_count)


TOKENIZERS = ("words", "unigram", "bpe", "char")


def build_vocabulary(texts: tf.data.Dataset, kind: str, max_size: int | None = None) -> tf.Module:
    """A vocabulary of ``kind`` (one of ``TOKENIZERS``) from ``(B,)`` string batches.

    ``"words"``: lower-cased word tokens; ``"unigram"``/``"bpe"``/``"char"``: a
    SentencePiece model of that type, case kept (``examples.nmt.tokenizer``).
    """
    if kind == "words":
        return word_vocabulary(texts, max_size)
    if kind in TOKENIZERS:
        from examples.nmt.tokenizer import SentencePieceVocabulary  # noqa: PLC0415

        return SentencePieceVocabulary.train(texts, kind, max_size or 8000)
    raise ValueError(f"Expected a tokenizer in {TOKENIZERS}. Received: {kind!r}")


def build_vocabularies(
    train: tf.data.Dataset,
    max_size: int | None = None,
    source_kind: str = "words",
    target_kind: str = "words",
    batch_size: int = 4096,
) -> Vocabularies:
    """Source and target vocabularies from examples ``{"source", "target"}``.

    Args:
        train: the training split, as ``load_splits`` returns it (only it: no
            validation or test text leaks into the vocabularies).
        max_size: the most ids in each vocabulary, reserved ones included.
        source_kind, target_kind: tokenizers, see ``build_vocabulary``.
        batch_size: strings read at once.
    """
    return Vocabularies(
        build_vocabulary(train.map(lambda e: e["source"]).batch(batch_size), source_kind, max_size),
        build_vocabulary(train.map(lambda e: e["target"]).batch(batch_size), target_kind, max_size),
    )
