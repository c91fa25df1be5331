"""Pronouncing dictionaries: the CMUdict and Phonetisaurus formats.

One word a line, then its phonemes:

* CMUdict 0.7b: ``WORD  PH ON EMES`` (two spaces), ``;;;`` comment lines,
  alternates numbered ``WORD(1)``, ``WORD(2)``;
* CMUdict as CMU Sphinx ships it (``cmudict.dict``, the copy bundled in
  ``examples/nmt/data/cmudict/``): ``word PH ON EMES`` (one space),
  alternates ``word(2)``, a trailing ``# comment`` on some lines;
* Phonetisaurus / g2p-seq2seq: ``word<TAB>PH ON EMES``, and in test
  reference files (the standard CMUdict split's ``cmudict.dic.test``) every
  pronunciation of a word on its line, one a tab-separated field:
  ``word<TAB>PH ON EMES<TAB>PH ON EMES``.

``write_pronunciations`` writes the Phonetisaurus format, one pronunciation
a line. ``read_pronunciations`` reads any of them and yields ``(word,
phonemes)`` pairs, one a pronunciation: an alternate, numbered ``word(2)``
on its own line or in its own tab-separated field, is one more entry (one
more reference) of the same word, the number dropped; the phonemes are
joined by single spaces; with ``stress=False`` (the G2P papers'
setting: 39 phonemes) the stress digits are removed, ``AH0`` -> ``AH``. The
file may be plain, ``.gz``, ``.bz2`` or ``.xz``. Words keep their case
(the example's ``letters`` vocabulary lower-cases them).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import re
from collections.abc import Iterable
from collections.abc import Iterator

# The bundled CMUdict (examples.nmt.data.pronouncing_dictionary's TFDS dataset of this name).
BUNDLED = "cmu_pronouncing_dictionary"
DICTIONARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmudict", "cmudict.dict.xz")
# SHA-256 of the uncompressed cmudict.dict (cmudict/README.md).
DICTIONARY_SHA256 = "81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22"
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_ALTERNATE = re.compile(r"\(\d+\)$")
# A trailing comment: white space, then "#" (a word may start with "#").
_COMMENT = re.compile(r"\s#.*$")
# A stress digit at the end of a phoneme that has letters: AH0, ER1, EY2.
_STRESS = re.compile(r"(?<=[^\W\d_])\d$")


class DictionaryFormatError(ValueError):
    """A line of a pronouncing dictionary is not ``WORD PH ON EMES``."""


def check_dictionary(path: str = DICTIONARY, sha256: str = DICTIONARY_SHA256) -> None:
    """Raises ``ValueError`` unless the uncompressed ``path`` has the hash ``sha256``."""
    with lzma.open(path, "rb") as file:
        digest = hashlib.sha256(file.read()).hexdigest()
    if digest != sha256:
        raise ValueError(
            f"Expected the bundled CMUdict with SHA-256 {sha256}. Received {path} with {digest}: "
            "the file was changed; restore it from the repository"
        )


def is_pronunciation(dataset: str) -> bool:
    """Whether ``dataset`` is words -> phonemes: ``dict:PATH`` or the bundled ``BUNDLED``."""
    return dataset.startswith("dict:") or dataset.split("/")[0] == BUNDLED


def remove_stress(phonemes: str) -> str:
    """``"P R AH0 N AH2 N S IY0 EY1 SH AH0 N"`` -> ``"P R AH N AH N S IY EY SH AH N"``."""
    return " ".join(_STRESS.sub("", phoneme) for phoneme in phonemes.split())


def parse_line(line: str, where: str = "line") -> tuple[str, list[str]] | None:
    """``(word, pronunciations)`` of one line, or None for a blank or ``;;;`` comment line.

    A line with a tab lists one pronunciation a tab-separated field after
    the word (empty fields skipped); a line without one, a single
    pronunciation after the first space. Each pronunciation is its phonemes
    joined by single spaces.

    Raises:
        DictionaryFormatError: a line without a word and at least one
            phoneme, naming ``where``.
    """
    text = line.strip()
    if not text or text.startswith(";;;"):
        return None
    separator = "\t" if "\t" in text else " "
    word, _, rest = text.partition(separator)
    rest = _COMMENT.sub("", " " + rest)  # the comment ends the line, tabs and all
    fields = rest.split("\t") if separator == "\t" else [rest]
    phonemes = [" ".join(field.split()) for field in fields if field.split()]
    word = _ALTERNATE.sub("", word.strip())
    if not word or not phonemes:
        raise DictionaryFormatError(
            f"{where}: expected 'WORD PH ON EMES' (a word, then its phonemes after a tab "
            f"or spaces; more pronunciations in more tab-separated fields). "
            f"Received: {line.rstrip()[:80]!r}"
        )
    return word, phonemes


def read_pronunciations(path: str | os.PathLike, stress: bool = False) -> Iterator[tuple[str, str]]:
    """Yields the ``(word, phonemes)`` entries of a dictionary file, in file order.

    One entry a pronunciation: a line of several tab-separated
    pronunciations yields one entry for each, in field order.

    Args:
        path: a plain, ``.gz``, ``.bz2`` or ``.xz`` dictionary file.
        stress: keep the stress digits (``AH0``); removed if False.

    Raises:
        FileNotFoundError: naming the missing file.
        DictionaryFormatError: naming the file and line of the first
            malformed or non-UTF-8 line.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such dictionary file: {path}")
    opener = _OPENERS.get(os.path.splitext(path)[1], open)
    with opener(path, "rb") as file:
        for line_number, raw in enumerate(file, start=1):
            where = f"{path}, line {line_number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DictionaryFormatError(f"{where}: not UTF-8 text ({error})") from error
            if line_number == 1:
                line = line.removeprefix("\ufeff")
            entry = parse_line(line, where)
            if entry is not None:
                word, alternatives = entry
                for phonemes in alternatives:
                    yield word, phonemes if stress else remove_stress(phonemes)


def write_pronunciations(entries: Iterable[tuple[str, str]], path: str | os.PathLike) -> int:
    """Writes ``(word, phonemes)`` entries as ``word<TAB>PH ON EMES`` lines; returns their count.

    The Phonetisaurus format, one pronunciation a line, which
    ``read_pronunciations`` reads back entry for entry (an alternate is one
    more line of its word).

    Raises:
        DictionaryFormatError: an entry that would not read back (an empty
            word or no phonemes, a tab or line break in it), naming it.
    """
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        for word, phonemes in entries:
            if not word.strip() or not phonemes.split() or re.search(r"[\t\r\n]", word + phonemes):
                raise DictionaryFormatError(
                    "Expected entries of a word and at least one phoneme, without tabs or "
                    f"line breaks. Received: {(word, phonemes)!r}"
                )
            file.write(f"{word}\t{' '.join(phonemes.split())}\n")
            count += 1
    return count
