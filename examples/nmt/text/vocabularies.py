"""A run's pair of vocabularies: which kind each side is, how they are built, saved and loaded.

Either side is a token-list ``Vocabulary`` (``examples.nmt.text.words``:
lower-cased words, lower-cased letters, or symbols such as phonemes) or a
``SentencePieceVocabulary``
(``examples.nmt.text.sentencepiece_vocabulary``: subwords or characters, case
kept); both share the special ids of ``examples.nmt.text.special`` and the
methods ``encode``, ``decode`` and ``tokens``.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import tensorflow as tf

from examples.nmt.host import text as host_text
from examples.nmt.text.sentencepiece_vocabulary import SentencePieceVocabulary
from examples.nmt.text.words import KINDS
from examples.nmt.text.words import token_vocabulary


class Vocabularies(NamedTuple):
    """Source and target vocabularies, saved as two files in a run's folder.

    Either side is a word ``Vocabulary`` (``{side}_vocabulary.txt``), a
    ``LetterVocabulary`` (``{side}_letters.txt``), a ``SymbolVocabulary``
    (``{side}_symbols.txt``) or a ``SentencePieceVocabulary``
    (``{side}_sentencepiece.model``).
    """

    source: tf.Module
    target: tf.Module

    def save(self, directory: str | os.PathLike) -> None:
        os.makedirs(directory, exist_ok=True)
        self.source.save(os.path.join(directory, self.source.file_name("source")))
        self.target.save(os.path.join(directory, self.target.file_name("target")))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Vocabularies:
        sides = []
        for side in ("source", "target"):
            kinds = (SentencePieceVocabulary, *KINDS.values())
            paths = [os.path.join(directory, kind.file_name(side)) for kind in kinds]
            found = [(kind, path) for kind, path in zip(kinds, paths) if os.path.isfile(path)]
            if not found:
                raise FileNotFoundError(
                    f"no {side} vocabulary in {directory}: one of {', '.join(paths)}"
                )
            kind, path = found[0]
            sides.append(kind.load(path))
        return cls(*sides)


TOKENIZERS = host_text.TOKENIZERS


def build_vocabulary(texts: tf.data.Dataset, kind: str, max_size: int | None = None) -> tf.Module:
    """A vocabulary of ``kind`` (one of ``TOKENIZERS``) from ``(B,)`` string batches.

    ``"words"``: lower-cased word tokens; ``"letters"``: lower-cased
    characters; ``"symbols"``: white-space-separated fields, case kept
    (``examples.nmt.text.words``); ``"unigram"``/``"bpe"``/``"char"``: a
    SentencePiece model of that type, case kept (``examples.nmt.text.sentencepiece_vocabulary``).
    """
    if kind in KINDS:
        return token_vocabulary(texts, kind, max_size)
    if kind in TOKENIZERS:
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
