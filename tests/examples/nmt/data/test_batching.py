"""Batches: encoded, bucketed, padded ids with gold alignments; raw text batches."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

from examples.nmt.data import batching  # noqa: E402
from examples.nmt.data import sources  # noqa: E402
from examples.nmt.text import special  # noqa: E402
from examples.nmt.text.vocabularies import build_vocabularies  # noqa: E402
from examples.nmt.text.words import Vocabulary  # noqa: E402


def encoded_batches(examples, **kwargs):
    vocabs = build_vocabularies(examples)
    return vocabs, list(batching.make_batches(examples, vocabs, **kwargs).as_numpy_iterator())


def test_make_batches_layout():
    examples = tf.data.Dataset.from_tensor_slices(
        {
            "source": ["un deux trois", "quatre", "cinq six"],
            "target": ["one two three", "four", "five six"],
        }
    )
    vocabs, batches = encoded_batches(examples, batch_size=2)
    ((source, target_in), target_out) = batches[0]
    assert source.dtype == target_in.dtype == target_out.dtype == np.int32
    assert source.shape == (2, 3) and target_in.shape == target_out.shape == (2, 4)
    assert np.all(target_in[:, 0] == special.START_ID)
    assert target_out[0, 3] == special.END_ID and target_out[1, 1] == special.END_ID
    assert np.all(target_in[1, 2:] == special.PAD_ID) and np.all(source[1, 1:] == special.PAD_ID)
    np.testing.assert_array_equal(
        target_in[:, 1:], np.where(target_out[:, :-1] == special.END_ID, 0, target_out[:, :-1])
    )
    assert vocabs.source.decode(source).numpy().tolist() == [b"un deux trois", b"quatre"]
    assert vocabs.target.decode(target_out).numpy().tolist() == [b"one two three", b"four"]


def test_make_batches_truncates_and_buckets():
    sentences = [" ".join(["w"] * n) for n in range(1, 41)]
    examples = tf.data.Dataset.from_tensor_slices({"source": sentences, "target": sentences})
    _, batches = encoded_batches(examples, batch_size=4, training=True, max_length=20)
    assert sum(len(b[1]) for b in batches) == 40
    for (source, target_in), _ in batches:
        assert source.shape[1] <= 20 and target_in.shape[1] <= 20
        lengths = np.count_nonzero(target_in, axis=1)
        assert lengths.max() - lengths.min() <= 8  # Bucketed by length.
    _, again = encoded_batches(examples, batch_size=4, training=True, max_length=20)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(batches, again, strict=True))  # Seeded.


def test_training_passes_keep_their_order_whatever_iterators_came_before():
    """A resumed run skips to the same batches: Keras on JAX makes an iterator of its own first."""
    sentences = [" ".join(["w"] * (n % 12 + 1)) + f" x{n}" for n in range(48)]
    examples = tf.data.Dataset.from_tensor_slices({"source": sentences, "target": sentences})
    vocabs = build_vocabularies(examples)
    batches = batching.make_batches(examples, vocabs, batch_size=4, training=True, passes=3)
    first = [b[1] for b in batches.as_numpy_iterator()]
    next(iter(batches))  # one more iterator, as Keras's JAX trainer makes to build the model
    again = [b[1] for b in batches.as_numpy_iterator()]
    assert len(first) == len(again) and all(np.array_equal(a, b) for a, b in zip(first, again))
    one_pass = len(list(batching.make_batches(examples, vocabs, batch_size=4, training=True)))
    assert len(first) == 3 * one_pass

    def rows(batches):  # each example's ids, in the order they came
        return [tuple(row[row > 0]) for batch in batches for row in batch]

    passes = [rows(first[i * one_pass : (i + 1) * one_pass]) for i in range(3)]
    assert sorted(passes[0]) == sorted(passes[1]) == sorted(passes[2])  # each holds every example
    assert passes[0] != passes[1] != passes[2]  # each in its own order


def test_training_batches_encode_the_split_once_for_the_count_and_the_stream():
    """``fit`` counts the first pass, then trains on the stream: one encoding serves both."""
    sentences = [" ".join(["w"] * (n % 12 + 1)) + f" x{n}" for n in range(48)]
    vocabs = build_vocabularies(
        tf.data.Dataset.from_tensor_slices({"source": sentences, "target": sentences})
    )
    read = []

    def generate():  # what the split yields, counted as it is read
        for sentence in sentences:
            read.append(sentence)
            yield {"source": sentence, "target": sentence}

    spec = {key: tf.TensorSpec([], tf.string) for key in ("source", "target")}
    examples = tf.data.Dataset.from_generator(generate, output_signature=spec)
    first, stream = batching.training_batches(examples, vocabs, batch_size=4, passes=3)
    first = [b[1] for b in first.as_numpy_iterator()]
    streamed = [b[1] for b in stream.as_numpy_iterator()]
    assert len(read) == len(sentences)  # the stream read the first pass's cache
    assert all(np.array_equal(a, b) for a, b in zip(first, streamed[: len(first)], strict=True))
    tf_examples = tf.data.Dataset.from_tensor_slices({"source": sentences, "target": sentences})
    alone = batching.make_batches(tf_examples, vocabs, batch_size=4, training=True, passes=3)
    alone = [b[1] for b in alone.as_numpy_iterator()]
    assert len(streamed) == len(alone) == 3 * len(first)
    assert all(np.array_equal(a, b) for a, b in zip(streamed, alone, strict=True))


def test_make_batches_alignment_matrices(date_data_dir):
    splits = sources.load_splits(
        "date_normalization/small", data_dir=str(date_data_dir), max_examples=8
    )
    vocabs = build_vocabularies(splits["train"], source_kind="words", target_kind="char")
    (source, _), target_out, alignment = next(
        batching.make_batches(
            splits["test"], vocabs, batch_size=8, with_alignment=True
        ).as_numpy_iterator()
    )
    assert alignment.shape == target_out.shape + source.shape[1:] and alignment.dtype == np.float32
    raw = list(splits["test"].as_numpy_iterator())
    for b, example in enumerate(raw):
        expected = np.zeros(alignment.shape[1:], np.float32)
        expected[tuple(example["alignment"].T)] = 1.0
        np.testing.assert_array_equal(alignment[b], expected)
        assert not alignment[b, 10].any()  # The [END] row.
    plain = next(batching.make_batches(splits["test"], vocabs, batch_size=8).as_numpy_iterator())
    assert len(plain) == 2


def test_encode_texts():
    vocab = Vocabulary(special.RESERVED + ("hello", "world"))
    ids = batching.encode_texts(tf.constant(["Hello, world!", "hello"]), vocab, max_length=3)
    assert ids.numpy().tolist() == [[4, 1, 5], [4, 0, 0]]
