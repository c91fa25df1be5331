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

from examples.nmt.data import tsv
from examples.nmt.data.splitting import Splits
from examples.nmt.data.splitting import check_split_sizes
from examples.nmt.data.splitting import split_by_hash
from examples.nmt.data.splitting import without_sources
from examples.nmt.data.tsv import tsv_pairs  # noqa: F401  (its home was here)
from examples.nmt.host.splits import test_file_pairs


def test_file_split(
    dataset: str,
    path: str,
    source_lang: str | None,
    target_lang: str | None,
    keep_stress: bool,
) -> tf.data.Dataset:
    """The ``--test`` file as a split, read in the format of ``dataset`` (``host.splits``)."""
    pairs = test_file_pairs(dataset, path, source_lang, target_lang, keep_stress)
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
