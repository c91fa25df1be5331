"""Text to tokens on the host, in plain Python: the definitions both pipelines share.

What a vocabulary is made of is defined here once, without TensorFlow:
``rank_tokens`` (tokens by decreasing count, ties in code-point order),
the token file format (``write_tokens``/``read_tokens``: one token a line,
line number = id) and ``train_sentencepiece`` (the SentencePiece trainer's
settings). ``examples.nmt.text`` builds its TensorFlow vocabularies with
them, so a run's vocabulary files are the same bytes whichever pipeline
wrote them.

The tokenizers mirror the TensorFlow ops of ``examples.nmt.text`` exactly,
character class by character class (tests compare them on every code point):
NFKC is ``unicodedata`` (TensorFlow Text uses ICU), lower-casing Python's
full case mapping (``tf.strings.lower(encoding="utf-8")``: ICU's), RE2's
``\\s`` is ASCII ``[\\t\\n\\f\\r ]`` (no ``\\v``), ``\\pZ`` the Unicode
separators, and ``tf.strings.strip``/``split`` use ASCII white space with
``\\v``. The two agree on every code point both Unicode databases assign,
except the few that one of them added later.
"""

from __future__ import annotations

import collections
import io
import os
import re
import unicodedata
from collections.abc import Iterable
from collections.abc import Sequence

from examples.nmt.host.fingerprint import fingerprint64
from examples.nmt.text.special import END_ID
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import RESERVED
from examples.nmt.text.special import START_ID
from examples.nmt.text.special import UNK_ID

# The token kinds of a vocabulary, and the SentencePiece model types among them.
TOKENIZERS = ("words", "unigram", "bpe", "char", "letters", "symbols")
MODEL_TYPES = ("unigram", "bpe", "char")
# A run of white space in a ``letters`` text (SentencePiece's word-boundary piece).
WORD_BOUNDARY = "\u2581"
HASH_BUCKETS = 10_000
# Sentences SentencePiece samples to learn from (Tatoeba fra-eng has ~200k).
_TRAINING_SENTENCES = 1_000_000

_RE2_SPACE = "\t\n\f\r "  # RE2's \s
_ASCII_SPACE = " \t\n\v\f\r"  # tf.strings.strip and split
_SEPARATORS = "".join(
    chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) in ("Zs", "Zl", "Zp")
)
_SPACE_RUN = re.compile(f"[{re.escape(_RE2_SPACE)}]+")
_SEPARATOR_RUN = re.compile(f"[{re.escape(_SEPARATORS + _RE2_SPACE)}]+")
_ASCII_SPACE_RUN = re.compile(f"[{re.escape(_ASCII_SPACE)}]+")


def normalize(text: str) -> str:
    """Unicode NFKC, as ``examples.nmt.text.normalization.normalize``."""
    return unicodedata.normalize("NFKC", text)


def source_key(text: str) -> str:
    """The NFKC-normalized, lower-cased, space-folded source (the splits' key)."""
    return _SPACE_RUN.sub(" ", normalize(text).lower()).strip(_ASCII_SPACE)


def hash_bucket(text: str) -> int:
    """The split bucket of a source: FarmHash Fingerprint64 of ``source_key``, in 10,000 buckets."""
    return fingerprint64(source_key(text).encode("utf-8")) % HASH_BUCKETS


def letters(text: str) -> list[str]:
    """Lower-cased characters, a white-space run one ``WORD_BOUNDARY`` (``words.letters``)."""
    text = normalize(text).lower().strip(_ASCII_SPACE)
    return list(_SEPARATOR_RUN.sub(WORD_BOUNDARY, text))


def symbols(text: str) -> list[str]:
    """The white-space-separated fields, case kept (``words.symbols``)."""
    return [field for field in _ASCII_SPACE_RUN.split(normalize(text)) if field]


def _spaced(char: str, category: str) -> str:
    if category == "Cc":
        return " "
    if category[0] in "LMNZ" or char in _RE2_SPACE:
        return char
    return f" {char} "


def words(text: str) -> list[str]:
    """Lower-cased word tokens (``normalization.tokenize``): ``"May 9th,"`` -> may 9 th ,."""
    pieces, previous = [], ""
    for char in normalize(text).lower():
        category = unicodedata.category(char)
        kind = category[0] if category[0] in "LMN" else ""
        if {previous, kind} == {"N", "L"} or {previous, kind} == {"N", "M"}:
            pieces.append(" ")  # between digits and letters
        pieces.append(_spaced(char, category))
        previous = "L" if kind == "M" else kind
    return [token for token in _SEPARATOR_RUN.split("".join(pieces)) if token]


SPLITTERS = {"words": words, "letters": letters, "symbols": symbols}
SEPARATORS = {"words": " ", "letters": "", "symbols": " "}


def join_tokens(tokens: Sequence[str], separator: str) -> str:
    """Decoded tokens as text (``words.detokenize``): boundaries to spaces, spaces folded."""
    text = separator.join(tokens)
    if not separator:
        text = text.replace(WORD_BOUNDARY, " ")
    return re.sub(" +", " ", text).strip(_ASCII_SPACE)


def content(ids: Iterable[int]) -> list[int]:
    """The ids before the first ``[END]``, less pads and ``[START]`` (``special.content_mask``)."""
    kept = []
    for index in ids:
        if index == END_ID:
            break
        if index not in (PAD_ID, START_ID):
            kept.append(int(index))
    return kept


def rank_tokens(
    counts: collections.Counter, max_size: int | None = None, min_count: int = 1
) -> tuple[str, ...]:
    """The reserved tokens, then the others by decreasing count (ties in code-point order).

    At most ``max_size`` tokens in all; a token seen fewer than ``min_count`` times is left out.
    """
    ranked = sorted((-n, token) for token, n in counts.items() if n >= min_count)
    kept = [token for _, token in ranked if token not in RESERVED]
    limit = None if max_size is None else max(max_size - len(RESERVED), 0)
    return RESERVED + tuple(kept[:limit])


def write_tokens(tokens: Sequence[str], path: str | os.PathLike) -> None:
    """One token a line (UTF-8, ``\\n``): a vocabulary file, line number = id."""
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write("\n".join(tokens) + "\n")


def read_tokens(path: str | os.PathLike) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as file:
        return file.read().split("\n")[:-1]


def train_sentencepiece(sentences: Iterable[str], model_type: str, vocab_size: int) -> bytes:
    """A SentencePiece model (serialized) learned from NFKC-normalized ``sentences``.

    ``vocab_size`` counts the reserved pieces; a small corpus may yield fewer
    pieces (no error). Every character is kept (``character_coverage=1.0``),
    so no training character maps to ``[UNK]``; a ``"char"`` model has no
    word-boundary piece. The same sentences in the same order give the same
    bytes (fewer than a million are all kept, in order).
    """
    import sentencepiece  # noqa: PLC0415  (only to learn or run a model)

    if model_type not in MODEL_TYPES:
        raise ValueError(f"Expected `model_type` in {MODEL_TYPES}. Received: {model_type!r}")
    writer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=writer,
        model_type=model_type,
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=1.0,
        input_sentence_size=_TRAINING_SENTENCES,
        shuffle_input_sentence=True,
        add_dummy_prefix=model_type != "char",
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=START_ID,
        eos_id=END_ID,
        pad_piece=RESERVED[PAD_ID],
        unk_piece=RESERVED[UNK_ID],
        bos_piece=RESERVED[START_ID],
        eos_piece=RESERVED[END_ID],
        num_threads=2,
        minloglevel=2,
    )
    return writer.getvalue()
