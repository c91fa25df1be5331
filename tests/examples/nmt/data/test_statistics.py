"""Batch statistics: the target unigram prior."""

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("examples.nmt is TensorFlow-based", allow_module_level=True)

tf = pytest.importorskip("tensorflow")

from examples.nmt.data import statistics  # noqa: E402


def test_target_log_prior_counts_targets_without_padding():
    target_out_ids = tf.constant([[5, 4, 3, 0], [4, 4, 3, 0]], tf.int32)
    batches = tf.data.Dataset.from_tensors(((target_out_ids, target_out_ids), target_out_ids))
    prior = statistics.target_log_prior(batches, vocab_size=6)
    counts = np.array([0, 0, 0, 2, 3, 1]) + 1  # add-one smoothing; padding not counted
    np.testing.assert_allclose(prior, np.log(counts / counts.sum()), rtol=1e-6)


def test_count_and_prior_is_one_pass_of_count_batches_and_target_log_prior():
    rng = np.random.default_rng(0)
    targets = [rng.integers(0, 7, size=(3, 5)).astype("int32") for _ in range(4)]
    batches = tf.data.Dataset.from_generator(
        lambda: (((t, t), t) for t in targets),
        output_signature=(
            (tf.TensorSpec([None, None], tf.int32),) * 2,
            tf.TensorSpec([None, None], tf.int32),
        ),
    )
    count, prior = statistics.count_and_prior(batches, vocab_size=7)
    ids = np.concatenate([t.ravel() for t in targets])
    counts = np.bincount(ids[ids != 0], minlength=7) + 1
    assert count == 4 == statistics.count_batches(batches)
    np.testing.assert_allclose(prior, np.log(counts / counts.sum()), rtol=1e-6)
    np.testing.assert_allclose(statistics.target_log_prior(batches, 7), prior, rtol=1e-6)
