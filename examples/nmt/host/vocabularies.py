"""A run's vocabularies: one object each, with two engines (as KerasHub's tokenizers).

``TokenVocabulary`` (words, letters, symbols: a token list) and
``SentencePieceVocabulary`` (a SentencePiece model's bytes) are built from the
training split's texts (``build_vocabularies``), saved into and loaded from a
run's folder, and run eagerly in plain Python (``encode``: strings -> lists of
ids, no special ids; ``decode``: ids -> strings, stopping at ``[END]``), on
every backend, without TensorFlow. ``tensorflow()`` gives the same vocabulary
as graph ops (``examples.nmt.text``: TensorFlow Text, lookup tables), which
only the SavedModel needs; tests hold the two engines equal, text by text.
``Vocabularies`` is a run's pair.
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

    def tensorflow(self) -> Any:
        """The same vocabulary as TensorFlow ops (``examples.nmt.text.words``), for a graph."""
        from examples.nmt.text.words import KINDS  # noqa: PLC0415  (TensorFlow: export only)

        return KINDS[self.kind](self.tokens)


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

    def tensorflow(self) -> Any:
        """The same model run by TensorFlow Text (``text.sentencepiece_vocabulary``)."""
        from examples.nmt.text import sentencepiece_vocabulary  # noqa: PLC0415  (export only)

        return sentencepiece_vocabulary.SentencePieceVocabulary(self.model)


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
    """Source and target vocabularies, saved as two files in a run's folder.

    Either side is a word vocabulary (``{side}_vocabulary.txt``), letters
    (``{side}_letters.txt``), symbols (``{side}_symbols.txt``) or a
    SentencePiece model (``{side}_sentencepiece.model``).
    """

    source: Any
    target: Any

    def save(self, directory: str | os.PathLike) -> None:
        os.makedirs(directory, exist_ok=True)
        for side, vocabulary in zip(("source", "target"), self):
            vocabulary.save(os.path.join(directory, vocabulary.file_name(side)))

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Vocabularies:
        return cls(load_vocabulary(directory, "source"), load_vocabulary(directory, "target"))

    def tensorflow(self) -> Vocabularies:
        """Both sides as TensorFlow ops (``tensorflow()`` of each), for the SavedModel."""
        return Vocabularies(self.source.tensorflow(), self.target.tensorflow())


def build_vocabulary(texts: Sequence[str], kind: str, max_size: int | None = None) -> Vocabulary:
    """A vocabulary of ``kind`` (``text.TOKENIZERS``) of ``texts``.

    ``"words"``: lower-cased word tokens; ``"letters"``: lower-cased
    characters, white space one boundary token; ``"symbols"``:
    white-space-separated fields, case kept (phonemes); ``"unigram"``,
    ``"bpe"``, ``"char"``: a SentencePiece model of that type, case kept,
    ``max_size`` pieces (8,000 when None) or fewer on a small corpus.
    """
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
