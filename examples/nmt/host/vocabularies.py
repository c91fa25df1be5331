"""A run's vocabularies on the host: the files of ``examples.nmt.text``, read without TensorFlow.

``TokenVocabulary`` (words, letters, symbols: a token list) and
``SentencePieceVocabulary`` (the ``sentencepiece`` package's processor) have
the methods of the TensorFlow ones: ``encode`` (strings -> lists of ids, no
special ids), ``decode`` (ids -> strings, stopping at ``[END]``), ``tokens``,
``file_name``, ``save`` and ``load``, and are saved in the same files, the same
bytes (``examples.nmt.host.text`` defines both). ``Vocabularies`` is a run's
pair; ``build_vocabularies`` makes it from the training split's texts.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

from examples.nmt.host import text
from examples.nmt.text.special import RESERVED
from examples.nmt.text.special import UNK_ID


class TokenVocabulary:
    """A token list (``kind``: ``"words"``, ``"letters"`` or ``"symbols"``); line number = id."""

    def __init__(self, tokens: Sequence[str], kind: str = "words"):
        if tuple(tokens[: len(RESERVED)]) != RESERVED:
            raise ValueError(
                f"Expected the first tokens to be {RESERVED}. Received: {tuple(tokens[:4])}"
            )
        if len(set(tokens)) != len(tokens):
            raise ValueError("Expected distinct tokens. Received duplicates.")
        self.kind = kind
        self.tokens = tuple(tokens)
        self._ids = {token: index for index, token in enumerate(self.tokens)}
        self._split = text.SPLITTERS[kind]
        self._separator = text.SEPARATORS[kind]

    def __len__(self) -> int:
        return len(self.tokens)

    def file_name(self, side: str) -> str:
        return file_name(side, self.kind)

    def save(self, path: str | os.PathLike) -> None:
        text.write_tokens(self.tokens, path)

    def encode(self, texts: Iterable[str]) -> list[list[int]]:
        """Strings -> their tokens' ids (``UNK_ID`` for unknown tokens)."""
        return [[self._ids.get(token, UNK_ID) for token in self._split(t)] for t in texts]

    def decode(self, ids: Iterable[Iterable[int]]) -> list[str]:
        """Rows of ids -> strings, stopping at ``[END]``, pads and ``[START]`` dropped."""
        return [
            text.join_tokens([self.tokens[i] for i in text.content(row)], self._separator)
            for row in ids
        ]


class SentencePieceVocabulary:
    """A SentencePiece model (its serialized bytes), run by the ``sentencepiece`` package."""

    kind = "sentencepiece"

    def __init__(self, model: bytes):
        import sentencepiece  # noqa: PLC0415  (only runs that use a model need it)

        self.model = model
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=model)
        size = self._processor.get_piece_size()
        self.tokens = tuple(self._processor.id_to_piece(i) for i in range(size))
        if self.tokens[: len(RESERVED)] != RESERVED:
            raise ValueError(
                f"Expected a SentencePiece model whose first pieces are {RESERVED}. "
                f"Received: {self.tokens[: len(RESERVED)]}"
            )

    def __len__(self) -> int:
        return len(self.tokens)

    def file_name(self, side: str) -> str:
        return file_name(side, self.kind)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "wb") as file:
            file.write(self.model)

    def encode(self, texts: Iterable[str]) -> list[list[int]]:
        return [self._processor.encode(text.normalize(t)) for t in texts]

    def decode(self, ids: Iterable[Iterable[int]]) -> list[str]:
        return [self._processor.decode(text.content(row)) for row in ids]


Vocabulary = TokenVocabulary | SentencePieceVocabulary


def file_name(side: str, kind: str) -> str:
    """The file of a run's ``side`` (``"source"``/``"target"``) vocabulary of ``kind``."""
    if kind == "sentencepiece":
        return f"{side}_sentencepiece.model"
    return f"{side}_vocabulary.txt" if kind == "words" else f"{side}_{kind}.txt"


def load_vocabulary(directory: str | os.PathLike, side: str) -> Vocabulary:
    """The ``side`` vocabulary of a run's folder, whichever kind it is."""
    kinds = ("sentencepiece", "words", "letters", "symbols")  # the order TensorFlow's looks
    paths = [os.path.join(directory, file_name(side, kind)) for kind in kinds]
    for kind, path in zip(kinds, paths):
        if os.path.isfile(path):
            if kind == "sentencepiece":
                with open(path, "rb") as file:
                    return SentencePieceVocabulary(file.read())
            return TokenVocabulary(text.read_tokens(path), kind)
    raise FileNotFoundError(f"no {side} vocabulary in {directory}: one of {', '.join(paths)}")


class Vocabularies(NamedTuple):
    """Source and target vocabularies, in the files of ``examples.nmt.text.vocabularies``."""

    source: Any
    target: Any

    def save(self, directory: str | os.PathLike) -> None:
        os.makedirs(directory, exist_ok=True)
        for side, vocabulary in zip(("source", "target"), self):
            vocabulary.save(os.path.join(directory, vocabulary.file_name(side)))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Vocabularies:
        return cls(load_vocabulary(directory, "source"), load_vocabulary(directory, "target"))


def build_vocabulary(texts: Sequence[str], kind: str, max_size: int | None = None) -> Vocabulary:
    """A vocabulary of ``kind`` (``text.TOKENIZERS``), as ``text.vocabularies.build_vocabulary``."""
    if kind in text.SPLITTERS:
        counts: collections.Counter = collections.Counter()
        split = text.SPLITTERS[kind]
        for one in texts:
            counts.update(split(one))
        return TokenVocabulary(text.rank_tokens(counts, max_size), kind)
    if kind in text.TOKENIZERS:
        sentences = (text.normalize(one) for one in texts)
        return SentencePieceVocabulary(text.train_sentencepiece(sentences, kind, max_size or 8000))
    raise ValueError(f"Expected a tokenizer in {text.TOKENIZERS}. Received: {kind!r}")


def build_vocabularies(
    train: Sequence[tuple[str, str]],
    max_size: int | None = None,
    source_kind: str = "words",
    target_kind: str = "words",
) -> Vocabularies:
    """Source and target vocabularies of the training split's ``(source, target)`` pairs."""
    return Vocabularies(
        build_vocabulary([source for source, _ in train], source_kind, max_size),
        build_vocabulary([target for _, target in train], target_kind, max_size),
    )
