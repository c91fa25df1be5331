"""Source-disjoint splits: carving validation and test out of train by a hash of the source.

Every split is a ``tf.data.Dataset`` of ``{"source": str, "target": str}``
dicts. The hash key is the source after NFKC, lower-casing and folding white
space (``source_key``): equal sources always land in one split, so no test
source is seen in training.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from examples.nmt.data.arguments import SPLITS
from examples.nmt.data.batching import unbatch
from examples.nmt.data.tsv import TsvFormatError
from examples.nmt.host.text import HASH_BUCKETS
from examples.nmt.text.normalization import normalize

_HASH_BUCKETS = HASH_BUCKETS

# One split's examples: {"source": tf.string, "target": tf.string[, "alignment"]}.
Splits = dict[str, tf.data.Dataset]


def source_key(source: tf.Tensor) -> tf.Tensor:
    """The NFKC-normalized, case- and space-folded source: equal keys, one split."""
    key = tf.strings.lower(normalize(source), encoding="utf-8")
    return tf.strings.strip(tf.strings.regex_replace(key, r"\s+", " "))


def hash_bucket(source: tf.Tensor) -> tf.Tensor:
    """The hash bucket of ``source_key(source)``."""
    return tf.strings.to_hash_bucket_fast(source_key(source), _HASH_BUCKETS)


def split_by_hash(examples: tf.data.Dataset, held_out: Sequence[str], fraction: float) -> Splits:
    """Splits by a hash of the normalized source sentence: source-disjoint splits.

    The hash key is the source after NFKC, lower-casing and folding white
    space. Each name in ``held_out`` gets ``fraction`` of the hash buckets and
    ``"train"`` the rest, so equal sources always land in the same split: no
    test source is seen in training (several references of one source stay
    together), and test scores measure translation of unseen sentences.
    """
    width = round(fraction * _HASH_BUCKETS)
    if not 0 < width * len(held_out) < _HASH_BUCKETS:
        raise ValueError(f"Expected 0 < fraction < {1 / len(held_out)}. Received: {fraction}")
    # Selecting within batches is ~6x faster than `Dataset.filter`.
    batches = examples.ragged_batch(1024)

    def bucket_range(low: int, high: int) -> tf.data.Dataset:
        def select(batch: dict) -> dict:
            bucket = hash_bucket(batch["source"])
            keep = tf.logical_and(bucket >= low, bucket < high)
            return tf.nest.map_structure(lambda x: tf.ragged.boolean_mask(x, keep), batch)

        return unbatch(batches.map(select))

    splits = {
        name: bucket_range(index * width, (index + 1) * width)
        for index, name in enumerate(held_out)
    }
    splits["train"] = bucket_range(len(held_out) * width, _HASH_BUCKETS)
    return splits


def complete_splits(splits: Splits, fraction: float) -> Splits:
    """Carves the missing ``validation``/``test`` splits out of ``train`` by hash."""
    missing = [name for name in SPLITS if name not in splits]
    if not missing:
        return dict(splits)
    return {**splits, **split_by_hash(splits["train"], missing, fraction)}


def without_sources(examples: tf.data.Dataset, test: tf.data.Dataset) -> tf.data.Dataset:
    """``examples`` less those whose ``source_key`` is a source key of ``test``.

    Prints how many were dropped (one pass over ``examples``).
    """
    keys = set()
    for batch in test.map(lambda e: source_key(e["source"])).batch(4096).as_numpy_iterator():
        keys.update(batch.tolist())
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(sorted(keys), tf.string), tf.zeros(len(keys), tf.int32)
        ),
        default_value=1,
    )

    def select(batch: dict) -> dict:
        keep = table.lookup(source_key(batch["source"])) > 0
        return tf.nest.map_structure(lambda x: tf.ragged.boolean_mask(x, keep), batch)

    kept = unbatch(examples.ragged_batch(1024).map(select))
    before = int(examples.reduce(0, lambda n, _: n + 1))
    after = int(kept.reduce(0, lambda n, _: n + 1))
    if after < before:
        print(
            f"Dropped {before - after:,} of {before:,} training examples: their sources are "
            "in the test file."
        )
    return kept


def check_split_sizes(
    path: str, sources: list[str], held_out: Sequence[str], fraction: float
) -> None:
    """Raises unless ``split_by_hash`` gives every split at least one of ``sources``."""
    width = round(fraction * _HASH_BUCKETS)
    buckets = hash_bucket(tf.constant(sources)).numpy()
    counts = {
        name: int(((buckets >= index * width) & (buckets < (index + 1) * width)).sum())
        for index, name in enumerate(held_out)
    }
    counts = {"training": len(sources) - sum(counts.values()), **counts}
    if min(counts.values()) == 0:
        sizes = [f"{count} {name}" for name, count in counts.items()]
        sizes = ", ".join(sizes[:-1]) + f" and {sizes[-1]}"
        raise TsvFormatError(
            f"{path}: {len(sources)} sentence pairs give {sizes} examples; every split needs one "
            f"({' and '.join(held_out)} each take ~{fraction:.0%} of the distinct sources, by "
            "hash): use a larger file"
        )
