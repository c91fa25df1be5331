"""Tab-separated parallel text in the Tatoeba/Anki format.

Each line is ``English<TAB>Other[<TAB>attribution]``, as in the files of
manythings.org/anki that the TensorFlow NMT tutorial uses. The file may be
plain text or a zip archive holding one such ``.txt`` file. Blank lines are
skipped; any other line without two non-empty text fields is an error naming
the file and the line number. A UTF-8 byte order mark at the start is dropped.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Iterator
from typing import BinaryIO


class TsvFormatError(ValueError):
    """A line of a parallel text file is not ``English<TAB>Other[<TAB>...]``."""


def _zip_member(archive: zipfile.ZipFile, path: str) -> str:
    names = [
        name
        for name in archive.namelist()
        if name.endswith((".txt", ".tsv")) and not os.path.basename(name).startswith("_")
    ]
    if len(names) != 1:
        raise TsvFormatError(
            f"Expected one .txt or .tsv file (not starting with '_') in {path}. Received: {names}"
        )
    return names[0]


@contextlib.contextmanager
def _open_binary(path: str) -> Iterator[tuple[BinaryIO, str]]:
    """Opens ``path``, or the text file inside a zip, and names what was opened."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            member = _zip_member(archive, path)
            with archive.open(member) as file:
                yield file, f"{path}:{member}"
    else:
        with open(path, "rb") as file:
            yield file, path


def _parse_line(line: str, where: str) -> tuple[str, str]:
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) not in (2, 3) or not fields[0].strip() or not fields[1].strip():
        raise TsvFormatError(
            f"{where}: expected 'English<TAB>Other[<TAB>attribution]' with non-empty "
            f"texts. Received {len(fields)} field(s): {line.rstrip()[:80]!r}"
        )
    return fields[0].strip(), fields[1].strip()


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TsvFormatError(f"{where}: not UTF-8 text ({error})") from error


def read_pairs(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """Yields ``(english, other)`` pairs of a plain or zipped TSV file.

    Raises:
        FileNotFoundError: naming the missing file.
        TsvFormatError: naming the file and line of the first malformed line.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such TSV file: {os.fspath(path)}")
    with _open_binary(os.fspath(path)) as (file, name):
        for line_number, raw in enumerate(file, start=1):
            if line_number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark
            where = f"{name}, line {line_number}"
            line = _decode(raw, where)
            if line.strip():
                yield _parse_line(line, where)


_ENGLISH = ("en", "eng", "english")


def tsv_pairs(path: str, source_lang: str | None, target_lang: str | None) -> list[tuple[str, str]]:
    """Reads ``English<TAB>Other`` as ``(source, target)``: Other first unless told otherwise."""
    pairs = list(read_pairs(path))
    english_first = source_lang in _ENGLISH or (
        target_lang is not None and target_lang not in _ENGLISH
    )
    return [pair if english_first else pair[::-1] for pair in pairs]
