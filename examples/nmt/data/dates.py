"""Date normalization as translation: surface forms in, ISO dates out.

Pure Python, deterministic and fast (about 20 µs an example). Each example
pairs a surface form such as ``"Sat 9 May 1998"``, ``"9/5/98"``,
``"May 9th, 1998"`` or ``"saturday the ninth of may, nineteen ninety-eight"``
with the ISO date, ``"1998-05-09"`` (ten target tokens: one a character), and
the gold alignment: for each target character, the source tokens that
determine it.

Conventions that keep every surface form unambiguous:

* numeric forms are day first (``9/5/98`` is 9 May);
* two-digit years only appear for 1950-2049 (``50``-``99`` -> 19xx,
  ``00``-``49`` -> 20xx);
* source tokens are the runs that ``tokenize`` finds (digits, letters, single
  punctuation marks) after lower-casing, the same tokens as
  ``examples.nmt.text.normalization.standardize`` gives for ASCII text.
"""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping

import numpy as np

FIRST_DAY = datetime.date(1900, 1, 1)
LAST_DAY = datetime.date(2099, 12, 31)
SPLITS = ("train", "validation", "test")
# The dataset's configs (``date_normalization`` and ``date_normalization/small``): split sizes.
CONFIGS = {
    "default": {"train": 50_000, "validation": 2_000, "test": 2_000},
    "small": {"train": 2_000, "validation": 200, "test": 200},
}
SEED = 0

# Which date field decides each of the 10 target characters "yyyy-mm-dd".
TARGET_ROLES = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve "
    "thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL_ONES = (
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth "
    "eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth "
    "eighteenth nineteenth"
).split()
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()

_TOKEN = re.compile(r"[0-9]+|[a-z]+|[^0-9a-z\s]")
_FIELD = re.compile(r"\{(\w+)\}")


def cardinal_words(number: int) -> str:
    """English words for 0 <= number < 100, e.g. ``98 -> "ninety-eight"``."""
    if number < 20:
        return _ONES[number]
    tens, ones = divmod(number, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


def ordinal_words(number: int) -> str:
    """English ordinal words for 1 <= number < 100, e.g. ``21 -> "twenty-first"``."""
    if number < 20:
        return _ORDINAL_ONES[number]
    tens, ones = divmod(number, 10)
    if ones == 0:
        return _TENS[tens][:-1] + "ieth"
    return f"{_TENS[tens]}-{_ORDINAL_ONES[ones]}"


def ordinal_suffix(number: int) -> str:
    """``"st"``, ``"nd"``, ``"rd"`` or ``"th"``, as in 1st, 22nd, 13th."""
    if number % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def year_words(year: int) -> str:
    """Spoken year for 1900-2099, e.g. ``"nineteen oh five"``, ``"twenty twelve"``."""
    century, rest = divmod(year, 100)
    if year == 2000:
        return "two thousand"
    if century == 20 and rest < 10:
        return f"two thousand {_ONES[rest]}"
    lead = cardinal_words(century)
    if rest == 0:
        return f"{lead} hundred"
    if rest < 10:
        return f"{lead} oh {_ONES[rest]}"
    return f"{lead} {cardinal_words(rest)}"


# Field name -> (render function, role of the field in the alignment).
_FIELDS: dict[str, tuple[Callable[[datetime.date], str], str]] = {
    "d": (lambda d: str(d.day), "day"),
    "dd": (lambda d: f"{d.day:02d}", "day"),
    "dth": (lambda d: f"{d.day}{ordinal_suffix(d.day)}", "day"),
    "dword": (lambda d: ordinal_words(d.day), "day"),
    "m": (lambda d: str(d.month), "month"),
    "mm": (lambda d: f"{d.month:02d}", "month"),
    "mon": (lambda d: _MONTHS[d.month - 1][:3], "month"),
    "month": (lambda d: _MONTHS[d.month - 1], "month"),
    "yyyy": (lambda d: str(d.year), "year"),
    "yy": (lambda d: f"{d.year % 100:02d}", "year"),
    "yword": (lambda d: year_words(d.year), "year"),
    "wd": (lambda d: _WEEKDAYS[d.weekday()][:3], "weekday"),
    "weekday": (lambda d: _WEEKDAYS[d.weekday()], "weekday"),
}

TEMPLATES = (
    "{wd} {d} {mon} {yyyy}",
    "{d}/{m}/{yy}",
    "{month} {dth}, {yyyy}",
    "{weekday} the {dword} of {month}, {yword}",
    "{dd}.{mm}.{yyyy}",
    "{yyyy}-{mm}-{dd}",
    "{d} {month} {yyyy}",
    "{month} {d}, {yyyy}",
    "{weekday}, {month} {d}, {yyyy}",
    "{dd}/{mm}/{yyyy}",
    "the {dth} of {month} {yyyy}",
    "{d}-{mon}-{yy}",
    "{mon} {d} '{yy}",
    "{dword} {month} {yword}",
    "{wd}, {dd} {mon} {yyyy}",
)
_CASINGS = ("lower", "capitalized", "upper")


def tokenize(text: str) -> list[str]:
    """Lower-cased digit runs, letter runs and single other characters."""
    return _TOKEN.findall(text.lower())


def _apply_casing(text: str, casing: str) -> str:
    if casing == "upper":
        return text.upper()
    if casing == "capitalized":
        return re.sub(r"\b[a-z]+", lambda match: match.group().capitalize(), text)
    return text


def _pieces(day: datetime.date, template: str) -> list[tuple[str, str | None]]:
    """``(text, role)`` pieces of a rendered template; literals have no role."""
    parts = _FIELD.split(template)  # literal, field, literal, field, ..., literal
    return [
        (part, None) if index % 2 == 0 else (_FIELDS[part][0](day), _FIELDS[part][1])
        for index, part in enumerate(parts)
    ]


def render(day: datetime.date, template: str, casing: str = "lower") -> dict:
    """Renders ``day`` with ``template``; returns source, target and alignment.

    Returns:
        A dict with ``source`` (str), ``target`` (str, the ISO date: 10
        characters, one target token each) and ``alignment``: int32 ``(L, 2)`` links
        ``(target_index, source_index)`` into ``tokenize(source)``.
    """
    pieces = _pieces(day, template)
    positions: dict[str | None, list[int]] = {}
    count = 0
    for text, role in pieces:
        n_tokens = len(tokenize(text))
        positions.setdefault(role, []).extend(range(count, count + n_tokens))
        count += n_tokens
    links = [
        (target_index, source_index)
        for target_index, role in enumerate(TARGET_ROLES)
        if role is not None
        for source_index in positions.get(role, [])
    ]
    return {
        "source": _apply_casing("".join(text for text, _ in pieces), casing),
        "target": day.isoformat(),
        "alignment": np.asarray(links, dtype=np.int32).reshape(-1, 2),
    }


def _templates_for(day: datetime.date) -> tuple[str, ...]:
    if 1950 <= day.year <= 2049:
        return TEMPLATES
    return tuple(t for t in TEMPLATES if "{yy}" not in t)


def split_days(sizes: Mapping[str, int], seed: int) -> dict[str, list[datetime.date]]:
    """Disjoint, shuffled days for each split; train cycles if it needs more."""
    n_days = (LAST_DAY - FIRST_DAY).days + 1
    days = [FIRST_DAY + datetime.timedelta(days=i) for i in range(n_days)]
    random.Random(f"days-{seed}").shuffle(days)
    held_out = sizes["test"] + sizes["validation"]
    if held_out >= n_days:
        raise ValueError(f"Expected fewer than {n_days} held-out days. Received: {held_out}")
    pools = {"test": days[: sizes["test"]], "validation": days[sizes["test"] : held_out]}
    train_pool = days[held_out:]
    pools["train"] = [train_pool[i % len(train_pool)] for i in range(sizes["train"])]
    return pools


def generate_examples(split: str, sizes: Mapping[str, int], seed: int = 0) -> Iterator[dict]:
    """Yields ``sizes[split]`` examples of ``split``, the same for the same seed."""
    if split not in SPLITS:
        raise ValueError(f"Expected split in {SPLITS}. Received: {split!r}")
    rng = random.Random(f"{split}-{seed}")
    for day in split_days(sizes, seed)[split]:
        yield render(day, rng.choice(_templates_for(day)), rng.choice(_CASINGS))
