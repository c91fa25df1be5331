"""Token-list vocabularies looked up in TensorFlow ops: words, letters, symbols.

Three ways to cut a text into tokens, each a ``Vocabulary`` class:

* ``Vocabulary`` (``"words"``): lower-cased, standardized word tokens
  (``examples.nmt.text.normalization.tokenize``), joined by spaces again;
* ``LetterVocabulary`` (``"letters"``): one token a character of the
  lower-cased text, a run of white space one ``"▁"`` token (a word
  boundary), joined with nothing: the input side of pronunciations,
  ``"Pro nun"`` -> ``p r o ▁ n u n``;
* ``SymbolVocabulary`` (``"symbols"``): the white-space-separated fields of
  the text, case kept, joined by spaces: phonemes, ``"P R OW1"`` ->
  ``P R OW1``.

Each lists tokens by decreasing count (ties in token order) after the
reserved ones (``examples.nmt.text.special``) and is saved as a plain text
file, one token a line, line number = id. Like ``SentencePieceVocabulary``
it is a ``tf.Module`` with ``encode`` (strings -> ragged int32 ids),
``decode`` (ids -> strings, stopping at ``[END]``) and ``tokens`` (id ->
token string), so a SavedModel that holds one carries its tables.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence

import tensorflow as tf

from examples.nmt.host import text as host_text
from examples.nmt.text.normalization import normalize
from examples.nmt.text.normalization import tokenize
from examples.nmt.text.special import RESERVED
from examples.nmt.text.special import UNK_ID
from examples.nmt.text.special import content_mask


def lookup_table(tokens: Sequence[str]) -> tf.lookup.StaticHashTable:
    """Token -> int64 id (line number) table, ``UNK_ID`` for unknown tokens."""
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(tuple(tokens)), tf.range(len(tokens), dtype=tf.int64)
    )
    return tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)


# The token of a run of white space in a LetterVocabulary (SentencePiece's
# word-boundary piece).
WORD_BOUNDARY = host_text.WORD_BOUNDARY


def detokenize(ids: tf.Tensor, tokens: tf.Tensor, separator: str = " ") -> tf.Tensor:
    """``(..., T)`` ids -> ``(...)`` strings of ``tokens[ids]``, stopping at ``[END]``.

    Padding and ``[START]`` are dropped; the tokens are joined by
    ``separator`` (single spaces; with ``""``, ``WORD_BOUNDARY`` tokens become
    spaces). ``tokens`` is the ``(V,)`` string tensor of a vocabulary. Pure
    TensorFlow ops: it runs in ``tf.function`` and in a SavedModel.
    """
    ids = tf.convert_to_tensor(ids, dtype=tf.int32)
    keep = content_mask(ids)
    words = tf.where(keep, tf.gather(tokens, ids), "")
    joined = tf.strings.reduce_join(words, axis=-1, separator=separator)
    if not separator:
        joined = tf.strings.regex_replace(joined, WORD_BOUNDARY, " ")
    return tf.strings.strip(tf.strings.regex_replace(joined, " +", " "))


def letters(texts: tf.Tensor) -> tf.RaggedTensor | tf.Tensor:
    """The lower-cased characters of ``texts``, a white-space run one ``WORD_BOUNDARY``."""
    texts = tf.strings.lower(normalize(texts), encoding="utf-8")
    texts = tf.strings.regex_replace(tf.strings.strip(texts), r"[\pZ\s]+", WORD_BOUNDARY)
    return tf.strings.unicode_split(texts, "UTF-8")


def symbols(texts: tf.Tensor) -> tf.RaggedTensor | tf.Tensor:
    """The white-space-separated fields of NFKC-normalized ``texts``, case kept."""
    return tf.strings.split(normalize(texts))


class Vocabulary(tf.Module):
    """Lower-cased word tokens with lookups both ways; see the module doc."""

    kind = "words"
    # Text -> tokens, and what joins decoded tokens.
    split = staticmethod(tokenize)
    separator = " "

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
        return cls(host_text.rank_tokens(counts, max_size, min_count))

    @classmethod
    def file_name(cls, side: str) -> str:
        """The file of a run's ``side`` (``"source"``/``"target"``) vocabulary."""
        return f"{side}_vocabulary.txt" if cls.kind == "words" else f"{side}_{cls.kind}.txt"

    def save(self, path: str | os.PathLike) -> None:
        """Writes one token a line (UTF-8; ``host.text.write_tokens``)."""
        host_text.write_tokens(self.tokens, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        return cls(host_text.read_tokens(path))

    def lookup(self, tokens: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Token strings -> int32 ids (``UNK_ID`` for unknown tokens)."""
        if isinstance(tokens, tf.RaggedTensor):
            return tokens.with_flat_values(self.lookup(tokens.flat_values))
        return tf.cast(self._table.lookup(tokens), tf.int32)

    def encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``(B,)`` strings -> ``(B, None)`` int32 ids of their tokens (``split``)."""
        return self.lookup(self.split(texts))

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        """``(..., T)`` ids -> ``(...)`` strings, stopping at ``[END]``.

        Padding and ``[START]`` are dropped; the tokens are joined by
        ``separator`` (``detokenize``).
        """
        return detokenize(ids, self._token_tensor, self.separator)


class LetterVocabulary(Vocabulary):
    """Lower-cased characters, ``WORD_BOUNDARY`` between words; see the module doc."""

    kind = "letters"
    split = staticmethod(letters)
    separator = ""


class SymbolVocabulary(Vocabulary):
    """White-space-separated symbols (phonemes), case kept; see the module doc."""

    kind = "symbols"
    split = staticmethod(symbols)


# kind -> class, for ``token_vocabulary`` and loading a run's files.
KINDS = {cls.kind: cls for cls in (Vocabulary, LetterVocabulary, SymbolVocabulary)}


def token_vocabulary(
    texts: tf.data.Dataset, kind: str = "words", max_size: int | None = None, min_count: int = 1
) -> Vocabulary:
    """A ``KINDS[kind]`` vocabulary of a dataset of ``(B,)`` string batches."""
    cls = KINDS[kind]
    counts: collections.Counter = collections.Counter()
    for batch in texts:
        counts.update(token.decode("utf-8") for token in cls.split(batch).flat_values.numpy())
    return cls.from_counts(counts, max_size, min_count)


def word_vocabulary(
    texts: tf.data.Dataset, max_size: int | None = None, min_count: int = 1
) -> Vocabulary:
    """A word ``Vocabulary`` of a dataset of ``(B,)`` string batches."""
    return token_vocabulary(texts, "words", max_size, min_count)
