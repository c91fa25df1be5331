"""Examples read from files: ``tsv:PATH``, ``dict:PATH`` and a ``--test`` file.

``pairs_splits`` shuffles a file's ``(source, target)`` pairs (Anki files are
sorted by length) and splits them by hash (``examples.nmt.data.splitting``);
``test_file_split`` reads the ``--test`` file in the dataset's format: a
dictionary's test split has one example a pronunciation (every reference
of a word, on its own line or in a tab-separated field of its line).
"""

from __future__ import annotations

import random

import tensorflow as tf

from examples.nmt.data import pronouncing_dictionary
from examples.nmt.data import pronunciations
from examples.nmt.data import tsv
from examples.nmt.data.splitting import Splits
from examples.nmt.data.splitting import check_split_sizes
from examples.nmt.data.splitting import split_by_hash
from examples.nmt.data.splitting import without_sources

_ENGLISH = ("en", "eng", "english")


def tsv_pairs(path: str, source_lang: str | None, target_lang: str | None) -> list[tuple[str, str]]:
    """Reads ``English<TAB>Other`` as ``(source, target)``: Other first unless told otherwise."""
    pairs = list(tsv.read_pairs(path))
    english_first = source_lang in _ENGLISH or (
        target_lang is not None and target_lang not in _ENGLISH
    )
    return [pair if english_first else pair[::-1] for pair in pairs]


def test_file_split(
    dataset: str,
    path: str,
    source_lang: str | None,
    target_lang: str | None,
    keep_stress: bool,
) -> tf.data.Dataset:
    """The ``--test`` file as a split, read in the format of ``dataset``."""
    if dataset.startswith("tsv:"):
        pairs = tsv_pairs(path, source_lang, target_lang)
    elif pronouncing_dictionary.is_pronunciation(dataset):
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
    sources, targets = zip(*pairs, strict=True)
    return tf.data.Dataset.from_tensor_slices({"source": list(sources), "target": list(targets)})


def pairs_splits(
    path: str,
    pairs: list[tuple[str, str]],
    fraction: float,
    test: tf.data.Dataset | None = None,
) -> Splits:
    """``(source, target)`` pairs of a file, shuffled, split by hash.

    Validation and test are carved by hash; with a ``test`` split, only
    validation, from the pairs whose sources are not in ``test``.
    """
    if not pairs:
        raise tsv.TsvFormatError(f"Expected examples in {path}. Received an empty file.")
    pairs = list(pairs)
    random.Random(0).shuffle(pairs)  # Anki files are sorted by length.
    sources, targets = zip(*pairs, strict=True)
    examples = tf.data.Dataset.from_tensor_slices(
        {"source": list(sources), "target": list(targets)}
    )
    if test is None:
        check_split_sizes(path, list(sources), ["validation", "test"], fraction)
        return split_by_hash(examples, ["validation", "test"], fraction)
    examples = without_sources(examples, test)
    kept = [s.decode("utf-8") for s in examples.map(lambda e: e["source"]).as_numpy_iterator()]
    check_split_sizes(path, kept, ["validation"], fraction)
    return {**split_by_hash(examples, ["validation"], fraction), "test": test}
