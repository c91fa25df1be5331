"""``examples.nmt.training.distribution``: the strategies, the devices line, the batches each
process feeds. Data-parallel training itself is tested in test_data_parallel.py (JAX)
and ``--strategy mirrored`` in test_fit.py (TensorFlow)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from examples.nmt import backend  # noqa: E402
from examples.nmt.data.batching import pad_batches  # noqa: E402
from examples.nmt.training import distribution  # noqa: E402


def batches(rows=(5, 3), length=(4, 6)):
    """Two batches ``((source, target_in), target_out)`` of row ids, ``rows[i]`` rows each."""

    def batch(count, columns, start):
        ids = np.arange(start, start + count, dtype="int32")[:, None] + np.ones(columns, "int32")
        return (ids, ids + 100), ids + 200

    made = [batch(count, columns, 10 * i) for i, (count, columns) in enumerate(zip(rows, length))]
    return tf.data.Dataset.from_generator(
        lambda: iter(made),
        output_signature=(
            (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32)),
            tf.TensorSpec([None, None], tf.int32),
        ),
    )


def test_pad_batches_gives_full_batches_at_few_lengths():
    padded = list(pad_batches(batches(), rows=6, length_multiple=8).as_numpy_iterator())
    for (source, target_in), target_out in padded:
        assert source.shape == target_in.shape == target_out.shape == (6, 8)
    (source, _), target_out = padded[1]
    assert np.all(source[3:] == 0) and np.all(source[:3, 6:] == 0)  # padding rows and columns
    np.testing.assert_array_equal(source[:3, :6], np.repeat(np.arange(11, 14)[:, None], 6, 1))


def test_each_process_keeps_its_own_rows_of_the_global_batch():
    padded = pad_batches(batches(), rows=6, length_multiple=8)
    whole = list(padded.as_numpy_iterator())
    parts = [
        list(
            distribution.shard_batches(
                padded, distribution.Distribution("data", 2, processes=2, process_id=index)
            ).as_numpy_iterator()
        )
        for index in range(2)
    ]
    for step, ((source, target_in), target_out) in enumerate(whole):
        for index, part in enumerate(parts):
            (got_source, got_in), got_out = part[step]
            rows = slice(3 * index, 3 * index + 3)
            np.testing.assert_array_equal(got_source, source[rows])
            np.testing.assert_array_equal(got_in, target_in[rows])
            np.testing.assert_array_equal(got_out, target_out[rows])


def test_one_process_feeds_the_batches_as_they_are():
    data = batches()
    assert distribution.shard_batches(data, distribution.Distribution("data", 2)) is data


def test_the_first_line_names_the_backend_and_devices():
    line = distribution.Distribution().describe()
    label = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}[backend.name()]
    assert line.startswith(f"Training on: {label}, ")
    assert "GPU" in line or "logical cores)" in line
    two = distribution.Distribution("data", 4, processes=2, process_id=1)
    assert two.describe().endswith("--strategy data, 4 replicas in 2 processes")
    assert not two.is_chief and distribution.Distribution().is_chief


def test_the_default_strategy_needs_nothing():
    assert distribution.setup("default") == distribution.Distribution()


def test_process_flags_need_the_data_strategy():
    with pytest.raises(distribution.RunError, match="need --strategy data"):
        distribution.setup("default", coordinator="localhost:1234", num_processes=2, process_id=0)
