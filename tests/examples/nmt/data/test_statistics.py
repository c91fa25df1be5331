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
