"""A Griffe extension that reads two docstring habits of keras_attention as Google style.

Loaded by mkdocstrings (see `mkdocs.yml`); it changes the text that the API
reference renders, never the package.

1. `Example:` (singular, as in the house style) becomes `Examples:`, so the
   `>>>` lines render as highlighted doctest code instead of a quote block;
   example lines written flush with the header are indented under it.
2. In `Args:`, one entry naming several arguments
   (`kernel_initializer, bias_initializer, ...: for W and b.`, possibly over
   several lines) becomes one entry per argument with that description.

3. Entries of a `Call arguments:` section (Keras's name for the arguments of
   `call`) become a bullet list instead of one run-on paragraph.

Docstrings already written one entry per argument and with `Examples:` pass
through unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADER = re.compile(r"^(\s*)([A-Z][A-Za-z ]*):\s*$")
_NAME_LIST = re.compile(r"^[\w*]+(\s*,\s*[\w*]+)*,?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _fix_examples(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _HEADER.match(lines[i])
        if not (match and match.group(2) == "Example"):
            out.append(lines[i])
            i += 1
            continue
        level = len(match.group(1))
        out.append(f"{match.group(1)}Examples:")
        i += 1
        block: list[str] = []
        while i < len(lines):
            header = _HEADER.match(lines[i])
            if header and len(header.group(1)) <= level and block and block[-1].strip() == "":
                break
            block.append(lines[i])
            i += 1
        while block and not block[0].strip():
            block.pop(0)
        trailing = []
        while block and not block[-1].strip():
            trailing.append(block.pop())
        if block and min(_indent(line) for line in block if line.strip()) <= level:
            block = [("    " + line) if line.strip() else line for line in block]
        out.extend(block + trailing)
    return out


def _fix_args(lines: list[str]) -> list[str]:
    out: list[str] = []
    section = None
    entry_level = None
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _HEADER.match(line)
        if header:
            section, entry_level = header.group(2), None
            out.append(line)
            i += 1
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            out.append(line)
            i += 1
            continue
        entry_level = _indent(line) if entry_level is None else entry_level
        # Gather an entry's head: lines at the entry level up to the first colon.
        head, j = line.strip(), i + 1
        while ":" not in head and j < len(lines) and _indent(lines[j]) == entry_level:
            head += " " + lines[j].strip()
            j += 1
        names, _, description = head.partition(":")
        if _indent(line) != entry_level or "," not in names or not _NAME_LIST.match(names.strip()):
            out.append(line)
            i += 1
            continue
        continuation = []
        while j < len(lines) and lines[j].strip() and _indent(lines[j]) > entry_level:
            continuation.append(lines[j])
            j += 1
        pad = " " * entry_level
        for name in (n.strip() for n in names.split(",") if n.strip()):
            out.append(f"{pad}{name}:{description}")
            out.extend(continuation)
        i = j
    return out


def _fix_call_arguments(lines: list[str]) -> list[str]:
    out: list[str] = []
    entry_level = None
    for line in lines:
        header = _HEADER.match(line)
        if header:
            entry_level = -1 if header.group(2) == "Call arguments" else None
        elif entry_level is not None and line.strip():
            entry_level = _indent(line) if entry_level < 0 else entry_level
            if _indent(line) == entry_level:
                line = f"{' ' * entry_level}- {line.strip()}"
        out.append(line)
    return out


class KerasAttentionDocstrings(griffe.Extension):
    """Rewrites `Example:` and multi-name `Args:` entries before parsing."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None or obj.is_alias:
            return
        lines = obj.docstring.value.split("\n")
        obj.docstring.value = "\n".join(_fix_call_arguments(_fix_args(_fix_examples(lines))))
