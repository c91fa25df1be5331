"""Token-list vocabularies as TensorFlow ops (the SavedModel's engine): words, letters, symbols.

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

A run builds, saves and loads its vocabularies once, in plain Python
(``examples.nmt.host.vocabularies``); ``TokenVocabulary.tensorflow()`` gives
the class here of its tokens. Like ``SentencePieceVocabulary`` it is a
``tf.Module`` with ``encode`` (strings -> ragged int32 ids), ``decode`` (ids
-> strings, stopping at ``[END]``) and ``tokens`` (id -> token string), so a
SavedModel that holds one carries its tables.
"""

from __future__ import annotations

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


# kind -> class (``host.vocabularies.TokenVocabulary.tensorflow``).
KINDS = {cls.kind: cls for cls in (Vocabulary, LetterVocabulary, SymbolVocabulary)}
