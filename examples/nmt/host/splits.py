"""The splits of ``tsv:``, ``dict:`` and the bundled dictionary, as lists of pairs, no TensorFlow.

``load_splits`` gives ``examples.nmt.data.sources.load_splits``'s splits
(``{"train", "validation", "test"}``) as lists of ``(source, target)`` pairs:
the same files read the same way (``tsv``, ``pronunciations``), the same
``random.Random(0)`` shuffle of a file's pairs, the same hash split
(``host.text.hash_bucket`` is ``tf.strings.to_hash_bucket_fast`` of the same
key), the same ``--test``, ``--join-words`` and ``--max-examples``, so a
split holds the same examples in the same order. One difference: the bundled
``cmu_pronouncing_dictionary`` is read in file order, where TFDS reads it in
the order its builder shuffled the records into; the splits hold the same
pairs. TFDS catalogue names (and the default ``date_normalization``) need
TensorFlow Datasets: ``check_dataset`` refuses them.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from examples.nmt.data import joined_words
from examples.nmt.data import pronunciations
from examples.nmt.data import tsv
from examples.nmt.data.arguments import SPLITS
from examples.nmt.data.arguments import is_pronunciation
from examples.nmt.host.text import HASH_BUCKETS
from examples.nmt.host.text import hash_bucket
from examples.nmt.host.text import source_key

Pairs = list[tuple[str, str]]
Splits = dict[str, Pairs]


def check_dataset(dataset: str) -> None:
    """Raises ``ValueError`` for a dataset the host pipeline cannot read (a TFDS name)."""
    kind, _, path = dataset.partition(":")
    if (kind in ("tsv", "dict") and path) or dataset.split("/")[0] == pronunciations.BUNDLED:
        return
    raise ValueError(
        f"--dataset {dataset} needs TensorFlow and TensorFlow Datasets (a TFDS dataset or "
        "folder:), which this Python lacks (or --input-pipeline numpy was asked for); "
        "without TensorFlow, train on tsv:PATH, dict:PATH or cmu_pronouncing_dictionary, or "
        "install them (pip install '.[examples]')"
    )


def split_by_hash(pairs: Pairs, held_out: Sequence[str], fraction: float) -> Splits:
    """``splitting.split_by_hash`` of pairs: source-disjoint splits, the pairs' order kept."""
    width = round(fraction * HASH_BUCKETS)
    if not 0 < width * len(held_out) < HASH_BUCKETS:
        raise ValueError(f"Expected 0 < fraction < {1 / len(held_out)}. Received: {fraction}")
    splits: Splits = {name: [] for name in (*held_out, "train")}
    for pair in pairs:
        index = hash_bucket(pair[0]) // width
        splits[held_out[index] if index < len(held_out) else "train"].append(pair)
    return splits


def check_split_sizes(path: str, sources: list[str], held_out: Sequence[str], fraction: float):
    """Raises unless ``split_by_hash`` gives every split one of ``sources`` (``splitting``'s)."""
    width = round(fraction * HASH_BUCKETS)
    buckets = [hash_bucket(source) for source in sources]
    counts = {
        name: sum(index * width <= bucket < (index + 1) * width for bucket in buckets)
        for index, name in enumerate(held_out)
    }
    counts = {"training": len(sources) - sum(counts.values()), **counts}
    if min(counts.values()) == 0:
        sizes = [f"{count} {name}" for name, count in counts.items()]
        sizes = ", ".join(sizes[:-1]) + f" and {sizes[-1]}"
        raise tsv.TsvFormatError(
            f"{path}: {len(sources)} sentence pairs give {sizes} examples; every split needs one "
            f"({' and '.join(held_out)} each take ~{fraction:.0%} of the distinct sources, by "
            "hash): use a larger file"
        )


def without_sources(pairs: Pairs, test: Pairs) -> Pairs:
    """``pairs`` less those whose ``source_key`` is a test source's; prints how many went."""
    keys = {source_key(source) for source, _ in test}
    kept = [pair for pair in pairs if source_key(pair[0]) not in keys]
    if len(kept) < len(pairs):
        print(
            f"Dropped {len(pairs) - len(kept):,} of {len(pairs):,} training examples: their "
            "sources are in the test file."
        )
    return kept


def test_file_pairs(
    dataset: str, path: str, source_lang: str | None, target_lang: str | None, keep_stress: bool
) -> Pairs:
    """The ``--test`` file's pairs in the format of ``dataset`` (``files.test_file_split``)."""
    if dataset.startswith("tsv:"):
        pairs = tsv.tsv_pairs(path, source_lang, target_lang)
    elif is_pronunciation(dataset):
        stress = keep_stress or dataset.split("/")[-1] == "stress"
        pairs = list(pronunciations.read_pronunciations(path, stress=stress))
        words = {word for word, _ in pairs}
        print(f"Test file {path}: {len(words):,} words, {len(set(pairs)):,} references")
    else:
        raise ValueError(
            "Expected --test with a tsv:PATH, dict:PATH or cmu_pronouncing_dictionary dataset "
            f"(a file in that format). Received --dataset {dataset} (use its own test split)"
        )
    if not pairs:
        raise ValueError(f"Expected examples in the test file {path}. Received an empty file.")
    return pairs


def pairs_splits(path: str, pairs: Pairs, fraction: float, test: Pairs | None = None) -> Splits:
    """``files.pairs_splits``: a file's pairs, shuffled (Anki files are sorted), split by hash."""
    if not pairs:
        raise tsv.TsvFormatError(f"Expected examples in {path}. Received an empty file.")
    pairs = list(pairs)
    random.Random(0).shuffle(pairs)
    if test is None:
        check_split_sizes(path, [source for source, _ in pairs], ["validation", "test"], fraction)
        return split_by_hash(pairs, ["validation", "test"], fraction)
    pairs = without_sources(pairs, test)
    check_split_sizes(path, [source for source, _ in pairs], ["validation"], fraction)
    return {**split_by_hash(pairs, ["validation"], fraction), "test": test}


def load_splits(
    dataset: str,
    *,
    source_lang: str | None = None,
    target_lang: str | None = None,
    max_examples: int | None = None,
    held_out_fraction: float = 0.05,
    test: str | None = None,
    keep_stress: bool = False,
    join_words: int | None = None,
) -> Splits:
    """``sources.load_splits`` for ``tsv:``, ``dict:`` and the bundled dictionary; see the doc."""
    check_dataset(dataset)
    kind, _, path = dataset.partition(":")
    test_pairs = None
    if test is not None:
        test_pairs = test_file_pairs(dataset, test, source_lang, target_lang, keep_stress)
    if kind in ("tsv", "dict"):
        if kind == "tsv":
            pairs = tsv.tsv_pairs(path, source_lang, target_lang)
        else:
            pairs = list(pronunciations.read_pronunciations(path, stress=keep_stress))
        splits = pairs_splits(path, pairs, held_out_fraction, test_pairs)
    else:  # the bundled dictionary: one train split, carved by hash (no shuffle, no size check)
        pronunciations.check_dictionary()
        stress = dataset.split("/")[-1] == "stress"
        train = list(pronunciations.read_pronunciations(pronunciations.DICTIONARY, stress=stress))
        held_out = ["validation", "test"]
        if test_pairs is not None:
            train, held_out = without_sources(train, test_pairs), ["validation"]
        splits = split_by_hash(train, held_out, held_out_fraction)
        if test_pairs is not None:
            splits["test"] = test_pairs
    if join_words is not None:
        for name in ("train", "validation"):
            splits[name] = joined_words.join_pairs(splits[name], join_words) or splits[name]
    if max_examples is not None:
        splits = {name: split[:max_examples] for name, split in splits.items()}
    return {name: splits[name] for name in SPLITS}


def splits_from_args(args: argparse.Namespace) -> Splits:
    """``load_splits`` with the flags of ``examples.nmt.data.arguments.add_arguments``."""
    return load_splits(
        args.dataset,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        max_examples=args.max_examples,
        test=getattr(args, "test", None),
        keep_stress=getattr(args, "keep_stress", False),
        join_words=getattr(args, "join_words", None),
    )
