"""The date normalization data: surface forms, gold alignments, TFDS builder."""

import datetime
import hashlib
import re

import numpy as np
import pytest

from examples.nmt.data import dates

DEFAULT_SIZES = {"train": 50_000, "validation": 2_000, "test": 2_000}
SMALL_SIZES = {"train": 2_000, "validation": 200, "test": 200}

# An independent reading of the surface forms, to check the alignments.
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_UNITS.update(
    {
        w: i + 10
        for i, w in enumerate(
            "ten eleven twelve thirteen fourteen fifteen sixteen "
            "seventeen eighteen nineteen".split()
        )
    }
)
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fifth": 5,
    "eighth": 8,
    "ninth": 9,
    "twelfth": 12,
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def _number(words: list[str]) -> int:
    """Reads "twenty - first", "ninth", "ninety - eight", "oh five", "9", "9 th"."""
    total = 0
    for word in words:
        if word.isdigit():
            total += int(word)
        elif word in _ORDINALS:
            total += _ORDINALS[word]
        elif word.endswith("ieth"):
            total += _TENS[word[:-4] + "y"]
        elif word.endswith("th") and word[:-2] in _UNITS:
            total += _UNITS[word[:-2]]
        elif word.endswith("teenth"):
            total += _UNITS[word[:-2]]
        else:
            total += _TENS.get(word, _UNITS.get(word, 0))
    return total


def read_year(tokens: list[str]) -> int:
    if len(tokens) == 1 and tokens[0].isdigit():
        value = int(tokens[0])
        return value if len(tokens[0]) == 4 else (1900 + value if value >= 50 else 2000 + value)
    if tokens[:2] == ["two", "thousand"]:
        return 2000 + _number(tokens[2:])
    century, rest = _number(tokens[:1]), tokens[1:]
    return century * 100 + (0 if rest == ["hundred"] else _number(rest))


def read_month(tokens: list[str]) -> int:
    (token,) = tokens
    return int(token) if token.isdigit() else _MONTHS.index(token[:3]) + 1


def read_day(tokens: list[str]) -> int:
    return _number([t for t in tokens if t not in ("st", "nd", "rd", "th")])


def spans(example: dict) -> dict:
    """Source tokens aligned to the year, month and day target digits."""
    tokens = dates.tokenize(example["source"])
    roles = {0: "year", 5: "month", 8: "day"}
    result = {}
    for target_index, role in roles.items():
        indices = sorted(s for t, s in example["alignment"] if t == target_index)
        result[role] = [tokens[i] for i in indices]
    return result


def test_number_words():
    assert dates.cardinal_words(98) == "ninety-eight"
    assert dates.ordinal_words(9) == "ninth"
    assert dates.ordinal_words(21) == "twenty-first"
    assert dates.ordinal_words(30) == "thirtieth"
    assert [dates.ordinal_suffix(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23)] == (
        "st nd rd th th th th st nd rd".split()
    )
    assert dates.year_words(1998) == "nineteen ninety-eight"
    assert dates.year_words(1900) == "nineteen hundred"
    assert dates.year_words(1905) == "nineteen oh five"
    assert dates.year_words(2000) == "two thousand"
    assert dates.year_words(2007) == "two thousand seven"
    assert dates.year_words(2012) == "twenty twelve"


def test_render_the_issue_examples():
    day = datetime.date(1998, 5, 9)
    expected = {
        "{wd} {d} {mon} {yyyy}": "sat 9 may 1998",
        "{d}/{m}/{yy}": "9/5/98",
        "{month} {dth}, {yyyy}": "may 9th, 1998",
        "{weekday} the {dword} of {month}, {yword}": (
            "saturday the ninth of may, nineteen ninety-eight"
        ),
    }
    for template, source in expected.items():
        example = dates.render(day, template)
        assert example["source"] == source
        assert example["target"] == "1998-05-09"
    links = dates.render(day, "{wd} {d} {mon} {yyyy}")["alignment"]
    assert links.dtype == np.int32
    assert links.tolist() == [[t, 3] for t in range(4)] + [[5, 2], [6, 2], [8, 1], [9, 1]]


@pytest.mark.parametrize("template", dates.TEMPLATES)
def test_alignments_spell_the_target(template):
    rng = np.random.default_rng(0)
    edges = [
        datetime.date(1900, 1, 1),
        datetime.date(1905, 3, 3),
        datetime.date(2000, 2, 29),
        dates.LAST_DAY,
    ]
    randoms = [
        dates.FIRST_DAY + datetime.timedelta(days=int(n)) for n in rng.integers(0, 73_049, size=80)
    ]
    for day in edges + randoms:
        if "{yy}" in template and not 1950 <= day.year <= 2049:
            continue
        example = dates.render(day, template, casing="capitalized")
        found = spans(example)
        assert read_year(found["year"]) == day.year, (example, found)
        assert read_month(found["month"]) == day.month, (example, found)
        assert read_day(found["day"]) == day.day, (example, found)
        for target_index in range(10):
            linked = [s for t, s in example["alignment"] if t == target_index]
            assert (len(linked) == 0) == (target_index in (4, 7))
            assert linked == sorted(set(linked))
        assert example["target"] == day.isoformat()


def test_weekdays_are_true_and_unaligned():
    example = dates.render(datetime.date(2024, 2, 29), "{weekday}, {month} {d}, {yyyy}")
    assert example["source"].startswith("thursday")
    assert 0 not in set(example["alignment"][:, 1].tolist())


def test_generation_is_deterministic_unambiguous_and_sized():
    digests, target_of = [], {}
    for split in dates.SPLITS:
        examples = list(dates.generate_examples(split, DEFAULT_SIZES))
        assert len(examples) == DEFAULT_SIZES[split]
        for example in examples:
            key = " ".join(dates.tokenize(example["source"]))
            # One source never maps to two targets, and never repeats across splits.
            assert target_of.setdefault(key, (split, example["target"])) == (
                split,
                example["target"],
            )
        digests.append(
            hashlib.sha256(
                repr([(e["source"], e["alignment"].tobytes()) for e in examples]).encode()
            )
        )
    again = list(dates.generate_examples("test", DEFAULT_SIZES))
    assert hashlib.sha256(
        repr([(e["source"], e["alignment"].tobytes()) for e in again]).encode()
    ).digest() == (digests[-1].digest())
    other_seed = list(dates.generate_examples("test", DEFAULT_SIZES, seed=1))
    assert [e["source"] for e in other_seed] != [e["source"] for e in again]


def test_two_digit_years_stay_in_their_window():
    two_digit_years = 0
    for example in dates.generate_examples("train", {"train": 5_000, "validation": 0, "test": 0}):
        if re.fullmatch(
            r"\d+/\d+/\d\d|\d+-[a-z]+-\d\d|[a-z]+ \d+ '\d\d", example["source"].lower()
        ):
            two_digit_years += 1
            assert 1950 <= int(example["target"][:4]) <= 2049
    assert two_digit_years > 100


def test_generated_tokens_match_the_pipeline_tokenizer():
    tf = pytest.importorskip("tensorflow")
    from examples.nmt.text import normalization

    examples = list(dates.generate_examples("validation", SMALL_SIZES))
    sources = [e["source"] for e in examples]
    pipeline = normalization.tokenize(tf.constant(sources)).to_list()
    assert [[t.decode() for t in tokens] for tokens in pipeline] == [
        dates.tokenize(s) for s in sources
    ]


def test_tfds_builder_builds_and_caches(date_data_dir):
    tfds = pytest.importorskip("tensorflow_datasets")
    builder = tfds.builder("date_normalization/small", data_dir=str(date_data_dir))
    assert builder.is_prepared()
    assert {name: split.num_examples for name, split in builder.info.splits.items()} == SMALL_SIZES
    assert builder.info.supervised_keys == ("source", "target")
    built = {
        ex["source"].decode(): (ex["target"].decode(), ex["alignment"].tolist())
        for ex in tfds.as_numpy(builder.as_dataset(split="test"))
    }
    generated = {
        e["source"]: (e["target"], e["alignment"].tolist())
        for e in dates.generate_examples("test", SMALL_SIZES)
    }
    assert built == generated


def test_default_config_sizes():
    tfds = pytest.importorskip("tensorflow_datasets")
    from examples.nmt.data import date_normalization

    config = date_normalization.DateNormalization.builder_configs["default"]
    assert config.sizes() == DEFAULT_SIZES
    assert tfds.builder("date_normalization").builder_config.name == "default"
