"""The example's batches: pairs of ids as a ``keras.utils.PyDataset``, on every backend.

``make_batches`` encodes a split's pairs once and cuts them into
``((source_ids, target_in_ids), target_out_ids)`` batches, int32 NumPy, 0-padded:
with ``training``, each of ``passes`` passes shuffled with its own seed
(``seed * 1_000_003 + pass``, NumPy's generator: deterministic whatever was
iterated before, so a resumed run skips to an uninterrupted run's batches)
and bucketed by length as ``tf.data``'s ``bucket_by_sequence_length`` does
(a batch leaves when its bucket is full; the last partial ones at the end of
the pass), then the pass's batches shuffled (``tf.data`` in a window of
1,024 batches, here all of them), so that those partial batches, one length
after another, do not all come just before validation; otherwise in order.
``pad_batches`` gives a compiling backend its few static shapes. The batches
follow that pipeline's rules, not its order.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from examples.nmt.text.special import END_ID
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import START_ID

Example = tuple[list[int], list[int], list[int]]  # source, [START] + target, target + [END]


DEFAULT_BUCKET_STEP = 2.0


def bucket_boundaries(max_length: int, step: float = DEFAULT_BUCKET_STEP) -> list[int]:
    """The upper lengths of the length buckets (both pipelines' ``bucket_by_sequence_length``).

    The first is 8; each next one is the last times ``step`` (rounded down,
    and at least one more), up to ``max_length``: ``step`` 2 gives 8, 16, 32,
    64, ...; 1.1 (Tensor2Tensor's ``length_bucket_step``) gives one length a
    bucket from 8 to 19 tokens (shorter pairs share the first), then buckets
    about a tenth wide. A batch is padded
    to its longest example, so finer buckets pad less (fra-eng's training
    pairs, batches of 128: 1.52x their tokens with 2, 1.11x with 1.1).

    Raises:
        ValueError: ``step`` not a finite number above 1.
    """
    if not 1 < step < math.inf:
        raise ValueError(f"Expected a finite length bucket step above 1. Received: {step!r}")
    boundaries, length = [], 8
    while length < max_length:
        boundaries.append(length)
        length = max(int(length * step), length + 1)
    return boundaries


def encode_pairs(pairs: Sequence[tuple[str, str]], vocabularies: Any, max_length: int):
    """Each pair's ids: the source cut at ``max_length``, the target at ``max_length - 1``."""
    sources = vocabularies.source.encode([source for source, _ in pairs])
    targets = vocabularies.target.encode([target for _, target in pairs])
    return [
        (
            source[:max_length],
            [START_ID, *target[: max_length - 1]],
            [*target[: max_length - 1], END_ID],
        )
        for source, target in zip(sources, targets)
    ]


def _pad(rows: Sequence[list[int]], count: int, length: int) -> np.ndarray:
    array = np.full((count, length), PAD_ID, "int32")
    for index, row in enumerate(rows):
        array[index, : len(row)] = row
    return array


def _round_up(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


class Batches(keras.utils.PyDataset):
    """Batches of encoded examples, padded when read; see the module doc.

    ``rows`` and ``length_multiple`` (``pad_batches``): all-padding rows up to
    ``rows`` and columns up to a multiple of ``length_multiple``. ``part``
    (``shard``): ``(index, count)``, this process's share of each padded
    batch, rows ``index * rows / count`` on. ``skip`` and ``repeat`` as
    ``training.fit`` calls them (``tf.data.Dataset``'s meanings).
    """

    def __init__(
        self,
        batches: list[list[Example]],
        rows: int | None = None,
        length_multiple: int = 1,
        part: tuple[int, int] = (0, 1),
    ):
        super().__init__()
        self.batches = batches
        self.rows = rows
        self.length_multiple = length_multiple
        self.part = part

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> tuple:
        examples = self.batches[index]
        count = self.rows or len(examples)
        source_length = max(len(example[0]) for example in examples)
        target_length = max(len(example[1]) for example in examples)
        source_length = _round_up(max(source_length, 1), self.length_multiple)
        target_length = _round_up(target_length, self.length_multiple)
        source = _pad([example[0] for example in examples], count, source_length)
        target_in = _pad([example[1] for example in examples], count, target_length)
        target_out = _pad([example[2] for example in examples], count, target_length)
        part, parts = self.part
        if parts > 1:
            share = count // parts
            rows = slice(part * share, (part + 1) * share)
            source, target_in, target_out = source[rows], target_in[rows], target_out[rows]
        return (source, target_in), target_out

    def skip(self, count: int) -> Batches:
        return Batches(self.batches[count:], self.rows, self.length_multiple, self.part)

    def repeat(self) -> Batches:
        return self  # Keras starts a PyDataset again when it runs out

    def shard(self, index: int, count: int) -> Batches:
        """Process ``index`` of ``count``'s contiguous rows of each batch (``shard_batches``).

        Every process builds the same batches from the same seed, so the rows
        of one step share one padded length, and together they are the batch.
        The batches need ``rows`` (``pad_batches``), a multiple of ``count``.
        """
        if not self.rows or self.rows % count:
            raise ValueError(
                f"Expected batches padded to a number of rows divisible by {count} processes "
                f"(pad_batches). Received: rows={self.rows}"
            )
        return Batches(self.batches, self.rows, self.length_multiple, (index, count))


def _bucketed(examples: list[Example], order: np.ndarray, batch_size: int, boundaries: list[int]):
    buckets: list[list[Example]] = [[] for _ in range(len(boundaries) + 1)]
    batches = []
    for index in order:
        example = examples[index]
        bucket = buckets[bisect.bisect_right(boundaries, max(len(example[0]), len(example[1])))]
        bucket.append(example)
        if len(bucket) == batch_size:
            batches.append(list(bucket))
            bucket.clear()
    return batches + [bucket for bucket in buckets if bucket]


def make_batches(
    pairs: Sequence[tuple[str, str]],
    vocabularies: Any,
    batch_size: int = 64,
    *,
    training: bool = False,
    max_length: int = 64,
    seed: int | None = 0,
    passes: int = 1,
    bucket_step: float = DEFAULT_BUCKET_STEP,
    bucketed: bool = False,
) -> Batches:
    """``((source_ids, target_in_ids), target_out_ids)`` batches of pairs; see the module doc."""
    examples = encode_pairs(pairs, vocabularies, max_length)
    if training:
        return Batches(_flat(_passes(examples, batch_size, max_length, seed, passes, bucket_step)))
    if bucketed:  # in order, each example to its bucket
        boundaries = bucket_boundaries(max_length, bucket_step)
        return Batches(_bucketed(examples, np.arange(len(examples)), batch_size, boundaries))
    return Batches([examples[i : i + batch_size] for i in range(0, len(examples), batch_size)])


def training_batches(
    pairs: Sequence[tuple[str, str]],
    vocabularies: Any,
    batch_size: int = 64,
    *,
    max_length: int = 64,
    seed: int | None = 0,
    passes: int = 1,
    bucket_step: float = DEFAULT_BUCKET_STEP,
) -> tuple[Batches, Batches]:
    """The first training pass and the stream of ``passes`` passes, the pairs encoded once."""
    examples = encode_pairs(pairs, vocabularies, max_length)
    each = _passes(examples, batch_size, max_length, seed, passes, bucket_step)
    return Batches(each[0]), Batches(_flat(each))


def _passes(
    examples: list[Example],
    batch_size: int,
    max_length: int,
    seed: int | None,
    passes: int,
    step: float,
) -> list[list[list[Example]]]:
    """Each pass's batches: shuffled with ``seed * 1_000_003 + i``, bucketed, shuffled again."""

    def one_pass(index: int) -> list[list[Example]]:
        generator = np.random.default_rng(None if seed is None else seed * 1_000_003 + index)
        batches = _bucketed(examples, generator.permutation(len(examples)), batch_size, boundaries)
        return [batches[position] for position in generator.permutation(len(batches))]

    boundaries = bucket_boundaries(max_length, step)
    return [one_pass(index) for index in range(passes)]


def _flat(passes: list[list[list[Example]]]) -> list[list[Example]]:
    return [batch for one_pass in passes for batch in one_pass]


def pad_batches(batches: Batches, rows: int, length_multiple: int) -> Batches:
    """Every batch at ``rows`` rows, lengths a multiple of the given (a compiling backend)."""
    return Batches(batches.batches, rows, length_multiple, batches.part)


def count_batches(batches: Batches) -> int:
    return len(batches)


def target_log_prior(batches: Batches, vocab_size: int) -> np.ndarray:
    """The log unigram frequencies of the targets, add-one smoothed (``--output-bias unigram``)."""
    counts = np.ones(vocab_size, "int64")
    for batch in batches.batches:
        for _, _, target_out in batch:
            counts += np.bincount(target_out, minlength=vocab_size)[:vocab_size]
    return np.log(counts / counts.sum()).astype("float32")


def count_and_prior(batches: Batches, vocab_size: int) -> tuple[int, np.ndarray]:
    """``count_batches`` and ``target_log_prior`` in one pass."""
    return count_batches(batches), target_log_prior(batches, vocab_size)
