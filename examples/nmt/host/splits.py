"""Every dataset's splits as lists of ``(source, target)`` pairs: the one input pipeline.

``load_splits`` reads ``tsv:``, ``dict:``, the bundled dictionary, the
default ``date_normalization`` (generated here, in Python: its pairs are
``AlignedPair``s that carry their gold alignment), ``folder:`` and TFDS
catalogue datasets (read through TensorFlow Datasets, the only part of the
pipeline that needs TensorFlow) into ``{"train", "validation", "test"}``
lists of pairs. Files are read the same way for every backend (``tsv``,
``pronunciations``), a file's pairs shuffled by ``random.Random(0)``, and
missing validation and test splits carved from train by the hash of the
normalized source (``host.text.hash_bucket``, which is TensorFlow's
``tf.strings.to_hash_bucket_fast`` of the same key, so the splits of runs
made with the former ``tf.data`` pipeline hold the same examples).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from examples.nmt.data import dates
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
DATES = "date_normalization"


class AlignedPair(tuple):
    """A ``(source, target)`` pair that also carries its gold ``alignment``.

    It unpacks, compares and hashes as the pair; ``alignment`` is int32
    ``(L, 2)`` ``(target_index, source_index)`` links into the source's
    tokens (``examples.nmt.data.dates``).
    """

    alignment: np.ndarray

    def __new__(cls, source: str, target: str, alignment: np.ndarray) -> AlignedPair:
        pair = super().__new__(cls, (source, target))
        pair.alignment = np.asarray(alignment, "int32").reshape(-1, 2)
        return pair


def date_splits(dataset: str) -> Splits:
    """``date_normalization[/CONFIG]``: the date task's splits, generated (``dates``)."""
    _, _, config = dataset.partition("/")
    sizes = dates.CONFIGS.get(config or "default")
    if sizes is None:
        raise ValueError(
            f"Expected --dataset {DATES} or {DATES}/CONFIG with CONFIG in "
            f"{sorted(dates.CONFIGS)}. Received: {dataset!r}"
        )
    return {
        split: [
            AlignedPair(example["source"], example["target"], example["alignment"])
            for example in dates.generate_examples(split, sizes, dates.SEED)
        ]
        for split in SPLITS
    }


def split_by_hash(pairs: Pairs, held_out: Sequence[str], fraction: float) -> Splits:
    """Source-disjoint splits by the hash of the normalized source, the pairs' order kept.

    Each name in ``held_out`` gets ``fraction`` of the hash buckets and
    ``"train"`` the rest, so equal sources always land in the same split: no
    test source is seen in training, and test scores measure unseen sentences.
    """
    width = round(fraction * HASH_BUCKETS)
    if not 0 < width * len(held_out) < HASH_BUCKETS:
        raise ValueError(f"Expected 0 < fraction < {1 / len(held_out)}. Received: {fraction}")
    splits: Splits = {name: [] for name in (*held_out, "train")}
    for pair in pairs:
        index = hash_bucket(pair[0]) // width
        splits[held_out[index] if index < len(held_out) else "train"].append(pair)
    return splits


def check_split_sizes(path: str, sources: list[str], held_out: Sequence[str], fraction: float):
    """Raises unless ``split_by_hash`` gives every split one of ``sources`` ."""
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


def complete_splits(found: Splits, fraction: float) -> Splits:
    """A dataset's own splits, the missing ``validation``/``test`` carved from ``train`` by hash."""
    if "train" not in found:
        raise ValueError(f"Expected a 'train' split. Received: {sorted(found)}")
    missing = [name for name in SPLITS if name not in found]
    if not missing:
        return dict(found)
    return {**found, **split_by_hash(found["train"], missing, fraction)}


def load_splits(
    dataset: str,
    *,
    data_dir: str | None = None,
    source_lang: str | None = None,
    target_lang: str | None = None,
    max_examples: int | None = None,
    held_out_fraction: float = 0.05,
    download: bool = False,
    test: str | None = None,
    keep_stress: bool = False,
    join_words: int | None = None,
) -> Splits:
    """Loads ``train``, ``validation`` and ``test`` lists of pairs of ``dataset``.

    Args:
        dataset: ``date_normalization[/small]`` (the default), the bundled
            ``cmu_pronouncing_dictionary[/stress]``, ``tsv:PATH``,
            ``dict:PATH``, ``folder:PATH`` or a TFDS catalogue name.
        data_dir: where TFDS keeps built datasets (TFDS's default if None).
        source_lang, target_lang: language keys, where the dataset's own
            direction is missing or should be reversed.
        max_examples: keep the first this many examples of each split.
        held_out_fraction: the share of examples in each split carved by hash.
        download: download and prepare a TFDS catalogue dataset that is not
            prepared in ``data_dir`` (``sources.catalogue_builder``).
        test: a file in the dataset's format to test on instead of the hash
            split (``tsv:``, ``dict:``, the bundled dictionary); its sources
            are dropped from training.
        keep_stress: keep the stress digits of ``dict:`` dictionaries (and
            of a ``test`` dictionary).
        join_words: pronunciations only: train and validation examples
            become joins of 1 to ``join_words`` words
            (``examples.nmt.data.joined_words.join_pairs``); test stays one
            word an example.
    """
    kind, _, path = dataset.partition(":")
    test_pairs = None
    if test is not None:
        test_pairs = test_file_pairs(dataset, test, source_lang, target_lang, keep_stress)
    if join_words is not None and not is_pronunciation(dataset):
        raise ValueError(
            "Expected --join-words with a pronunciation dataset (dict:PATH or "
            f"cmu_pronouncing_dictionary). Received --dataset {dataset}"
        )
    if dataset.split("/")[0] == DATES:
        splits = date_splits(dataset)
    elif (kind == "folder" and path) or not (
        (kind in ("tsv", "dict") and path) or dataset.split("/")[0] == pronunciations.BUNDLED
    ):
        from examples.nmt.data import sources  # noqa: PLC0415  (TensorFlow Datasets)

        found = sources.catalogue_pairs(dataset, data_dir, download, source_lang, target_lang)
        splits = complete_splits(found, held_out_fraction)
    elif kind in ("tsv", "dict"):
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


def splits_from_args(args: Any) -> Splits:
    """``load_splits`` with the flags of ``examples.nmt.data.arguments.add_arguments``.

    ``args``: a ``Config`` or another command's namespace (those without a flag
    take its default).
    """
    return load_splits(
        args.dataset,
        data_dir=getattr(args, "data_dir", None),
        download=getattr(args, "download", False),
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        max_examples=args.max_examples,
        test=getattr(args, "test", None),
        keep_stress=getattr(args, "keep_stress", False),
        join_words=getattr(args, "join_words", None),
    )
