"""Encoded, bucketed, padded batches of parallel text for the NMT example.

Ids follow ``examples.nmt.text.special``: 0 pads, so ``Embedding(mask_zero=True)``
masks padding; ``[START]`` opens the decoder input and ``[END]`` closes the
decoder target. The source has no special tokens, so the source indices of a
gold alignment are the positions of ``source_ids``.
"""

from __future__ import annotations

import tensorflow as tf

from examples.nmt.host.batches import DEFAULT_BUCKET_STEP
from examples.nmt.host.batches import bucket_boundaries
from examples.nmt.text.special import END_ID
from examples.nmt.text.special import PAD_ID
from examples.nmt.text.special import START_ID
from examples.nmt.text.vocabularies import Vocabularies

_SHUFFLE_BUFFER = 20_000
# Batches, shuffled after bucketing: a whole pass of fra-eng's (about 1,000
# batches of 128) or CMUdict's (952); a longer pass is shuffled in a window.
_BATCH_SHUFFLE_BUFFER = 1_024


def unbatch(batches: tf.data.Dataset) -> tf.data.Dataset:
    """``unbatch`` of ragged batches, with dense element specs.

    ``unbatch`` reports rows of a ragged batch as ``RaggedTensorSpec`` of
    ragged rank 0, which ``padded_batch`` rejects; a no-op ``map`` retypes them.
    """
    return batches.unbatch().map(lambda example: example)


def encode_texts(
    texts: tf.Tensor, vocabulary: tf.Module, max_length: int | None = None
) -> tf.Tensor:
    """``(B,)`` strings -> ``(B, T)`` int32 ids, 0-padded, no special tokens.

    The source side of a batch; ``translate`` scripts feed raw sentences here.
    """
    ids = vocabulary.encode(texts)[:, :max_length]
    return ids.to_tensor(default_value=PAD_ID)


def _column(rows: tf.Tensor, value: int) -> tf.RaggedTensor:
    """A ``(rows, 1)`` int32 column of ``value``, as a ragged tensor for ``concat``."""
    return tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), value))


def _encode_batch(
    batch: dict, vocabularies: Vocabularies, max_length: int, with_alignment: bool
) -> dict:
    """Ragged ids of a batch: source, ``[START] + target``, ``target + [END]``."""
    source = vocabularies.source.encode(batch["source"])[:, :max_length]
    target = vocabularies.target.encode(batch["target"])[:, : max_length - 1]
    encoded = {
        "source_ids": source,
        "target_in_ids": tf.concat([_column(target.nrows(), START_ID), target], axis=1),
        "target_out_ids": tf.concat([target, _column(target.nrows(), END_ID)], axis=1),
    }
    if with_alignment:
        encoded["alignment"] = batch["alignment"]
    return encoded


def alignment_matrix(
    links: tf.Tensor, target_length: tf.Tensor, source_length: tf.Tensor
) -> tf.Tensor:
    """``(L, 2)`` ``(target, source)`` links -> float32 0/1 ``(Tt, Ts)`` matrix.

    Links outside the (possibly truncated) lengths are dropped.
    """
    links = tf.cast(links, tf.int32)
    inside = tf.logical_and(links[:, 0] < target_length, links[:, 1] < source_length)
    links = tf.boolean_mask(links, inside)
    ones = tf.ones(tf.shape(links)[:1], tf.float32)
    shape = tf.stack([target_length, source_length])
    return tf.minimum(tf.scatter_nd(links, ones, shape), 1.0)


def _with_alignment_matrix(example: dict) -> dict:
    lengths = tf.shape(example["target_out_ids"])[0], tf.shape(example["source_ids"])[0]
    return {**example, "alignment": alignment_matrix(example["alignment"], *lengths)}


_bucket_boundaries = bucket_boundaries  # the host pipeline's definition


def _example_length(example: dict) -> tf.Tensor:
    return tf.maximum(tf.shape(example["source_ids"])[0], tf.shape(example["target_in_ids"])[0])


def _model_inputs(batch: dict) -> tuple:
    inputs = (batch["source_ids"], batch["target_in_ids"]), batch["target_out_ids"]
    return inputs + (batch["alignment"],) if "alignment" in batch else inputs


def make_batches(
    examples: tf.data.Dataset,
    vocabularies: Vocabularies,
    batch_size: int = 64,
    *,
    training: bool = False,
    max_length: int = 64,
    with_alignment: bool = False,
    cache: bool | str = True,
    seed: int | None = 0,
    passes: int = 1,
    bucket_step: float = DEFAULT_BUCKET_STEP,
    bucketed: bool = False,
) -> tf.data.Dataset:
    """Batches of ``((source_ids, target_in_ids), target_out_ids)``.

    Shapes ``(B, Ts)``, ``(B, Tt)``, ``(B, Tt)``, int32, padded with 0:
    ``target_in_ids = [START] + target``, ``target_out_ids = target + [END]``,
    the source has no special tokens. With ``with_alignment`` (only for
    examples that have one) a fourth float32 ``(B, Tt, Ts)`` gold alignment
    follows, row ``t`` for ``target_out_ids[:, t]`` (do not pass those
    batches to ``fit``, which would read it as sample weights).

    Args:
        examples: one split of ``load_splits``.
        vocabularies: from ``build_vocabularies`` or ``Vocabularies.load``.
        batch_size: examples per batch.
        training: shuffle (with ``seed``), bucket by length, then shuffle
            the batches (a window of 1,024); otherwise keep the order.
        max_length: truncate sources to this many tokens, targets so that
            ``Tt <= max_length``.
        with_alignment: add the gold alignment matrices.
        cache: cache the encoded examples in memory (True) or in files with
            this prefix.
        seed: shuffle seed.
        passes: with ``training``, this many passes over the data one after
            another. With a ``seed``, pass ``i`` is shuffled with its own seed
            (``seed * 1_000_003 + i``) whatever iterators were made before,
            so a resumed run's stream (``skip``) is an uninterrupted run's on
            every backend (Keras on JAX makes an iterator of its own first,
            which would move a ``reshuffle_each_iteration`` order).
        bucket_step: with ``training`` or ``bucketed``, the growth of the
            length buckets' edges (``bucket_boundaries``: 2 gives 8, 16, 32, ...).
        bucketed: without ``training``, the examples in their order, each to
            its length bucket, a batch leaving when its bucket is full and
            the partial ones at the end: every example once, padded far less
            than batches in order (what ``fit`` validates on; fra-eng's
            validation split pads 2.5x its tokens in order).
    """
    encoded = _encoded(examples, vocabularies, max_length, with_alignment, cache)
    if training:
        return _passes(encoded, batch_size, max_length, seed, passes, bucket_step)
    if bucketed:
        batches = _by_length(encoded, batch_size, _bucket_boundaries(max_length, bucket_step))
    else:
        batches = encoded.padded_batch(batch_size)
    return batches.map(_model_inputs).prefetch(tf.data.AUTOTUNE)


def training_batches(
    examples: tf.data.Dataset,
    vocabularies: Vocabularies,
    batch_size: int = 64,
    *,
    max_length: int = 64,
    cache: bool | str = True,
    seed: int | None = 0,
    passes: int = 1,
    bucket_step: float = DEFAULT_BUCKET_STEP,
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """``make_batches(training=True)``'s first pass and its stream of ``passes``, encoded once.

    What ``fit`` reads: the first pass to count the batches of an epoch and
    the targets' tokens, the stream to train on (its first pass is the same
    batches). Both read one cache of the encoded examples, so the split is
    encoded once, not once for each.
    """
    encoded = _encoded(examples, vocabularies, max_length, False, cache)
    return (
        _passes(encoded, batch_size, max_length, seed, 1, bucket_step),
        _passes(encoded, batch_size, max_length, seed, passes, bucket_step),
    )


def _encoded(
    examples: tf.data.Dataset,
    vocabularies: Vocabularies,
    max_length: int,
    with_alignment: bool,
    cache: bool | str,
) -> tf.data.Dataset:
    """The examples' ids (and gold alignments), one example an element, cached if ``cache``."""
    if with_alignment and "alignment" not in examples.element_spec:
        raise ValueError("Expected examples with an 'alignment'. Received none.")

    def encode(batch: dict) -> dict:
        return _encode_batch(batch, vocabularies, max_length, with_alignment)

    encoded = unbatch(examples.ragged_batch(1024).map(encode, num_parallel_calls=tf.data.AUTOTUNE))
    if with_alignment:
        encoded = encoded.map(_with_alignment_matrix, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:
        encoded = encoded.cache("" if cache is True else cache)
    return encoded


def _by_length(
    examples: tf.data.Dataset, batch_size: int, boundaries: list[int]
) -> tf.data.Dataset:
    """Batches of one length bucket each, a batch leaving when its bucket is full."""
    return examples.bucket_by_sequence_length(
        _example_length, boundaries, [batch_size] * (len(boundaries) + 1)
    )


def _passes(
    encoded: tf.data.Dataset,
    batch_size: int,
    max_length: int,
    seed: int | None,
    passes: int,
    step: float,
) -> tf.data.Dataset:
    """``passes`` shuffled, length-bucketed passes over ``encoded``; see ``make_batches``."""
    boundaries = _bucket_boundaries(max_length, step)

    def shuffle(dataset: tf.data.Dataset, buffer: int, index: int) -> tf.data.Dataset:
        if seed is None:
            return dataset.shuffle(buffer)
        return dataset.shuffle(
            buffer, seed=seed * 1_000_003 + index, reshuffle_each_iteration=False
        )

    def one_pass(index: int) -> tf.data.Dataset:
        bucketed = _by_length(shuffle(encoded, _SHUFFLE_BUFFER, index), batch_size, boundaries)
        # Each bucket's last, partial batch leaves at the end of the pass, one
        # length after another (with fine buckets, dozens of steps just before
        # validation); shuffling the batches spreads them over the pass.
        return shuffle(bucketed, _BATCH_SHUFFLE_BUFFER, index)

    batches = one_pass(0)
    for index in range(1, passes):
        batches = batches.concatenate(one_pass(index))
    return batches.map(_model_inputs).prefetch(tf.data.AUTOTUNE)


def make_text_batches(
    examples: tf.data.Dataset,
    vocabularies: Vocabularies,
    batch_size: int = 256,
    *,
    max_length: int = 64,
    with_alignment: bool = False,
) -> tf.data.Dataset:
    """Batches of the raw strings ``{"source": (B,), "target": (B,)}``, in order.

    What translation from text reads (``examples.nmt.evaluation``). With
    ``with_alignment``, also ``"alignment"``: the float32 ``(B, Tt, Ts)`` gold
    alignment of ``make_batches`` for the same ``max_length``.
    """
    if with_alignment and "alignment" not in examples.element_spec:
        raise ValueError("Expected examples with an 'alignment'. Received none.")

    def texts(batch: dict) -> dict:
        kept = {"source": batch["source"], "target": batch["target"]}
        if with_alignment:
            kept.update(_encode_batch(batch, vocabularies, max_length, with_alignment=True))
        return kept

    def drop_ids(example: dict) -> dict:
        example = _with_alignment_matrix(example)
        return {key: example[key] for key in ("source", "target", "alignment")}

    examples = unbatch(examples.ragged_batch(1024).map(texts, num_parallel_calls=tf.data.AUTOTUNE))
    if with_alignment:
        examples = examples.map(drop_ids, num_parallel_calls=tf.data.AUTOTUNE)
    return examples.padded_batch(batch_size).prefetch(tf.data.AUTOTUNE)


def pad_batches(batches: tf.data.Dataset, rows: int, length_multiple: int) -> tf.data.Dataset:
    """``make_batches``'s training batches at a few static shapes, for a compiling backend.

    Every batch gets all-padding rows up to ``rows`` and padding columns up to
    a multiple of ``length_multiple`` (sources and targets apart). Padding
    weighs nothing (the loss and the accuracy skip target 0, attention masks
    source 0), so a step on a padded batch is the step on the batch itself;
    JAX then compiles one program per shape, a handful per run, instead of one
    per batch (bucketed batches differ in length and in their last rows).
    """

    def pad(tensor: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
        shape = tf.shape(tensor)
        padded = tf.pad(tensor, [[0, rows - shape[0]], [0, length - shape[1]]])
        return tf.ensure_shape(padded, [rows, None])

    def round_up(length: tf.Tensor) -> tf.Tensor:
        return (length + length_multiple - 1) // length_multiple * length_multiple

    def pad_batch(inputs: tuple, target_out_ids: tf.Tensor) -> tuple:
        source_ids, target_in_ids = inputs
        source_length = round_up(tf.shape(source_ids)[1])
        target_length = round_up(tf.shape(target_out_ids)[1])
        return (
            (pad(source_ids, source_length), pad(target_in_ids, target_length)),
            pad(target_out_ids, target_length),
        )

    return batches.map(pad_batch)
