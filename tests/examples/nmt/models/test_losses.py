"""The label-smoothed token loss."""

import keras
import numpy as np
import pytest


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_masked_crossentropy_is_the_token_mean_with_and_without_a_padding_mask(label_smoothing):

    from examples.nmt.models import losses

    y_true = np.array([[4, 5, 0, 0], [6, 0, 0, 0]])
    logits = np.random.default_rng(0).normal(size=(2, 4, 8)).astype("float32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    tokens = [(0, 0), (0, 1), (1, 0)]
    expected = np.mean(
        [
            (1 - label_smoothing) * -log_probs[b, t, y_true[b, t]]
            + label_smoothing * -log_probs[b, t].mean()
            for b, t in tokens
        ]
    )
    loss = losses.MaskedCrossentropy(label_smoothing)
    # The model's logits carry the padding mask of the target embedding
    # (mask_zero=True); Keras keeps it on the tensor, as here (a Lambda layer's
    # `mask` is Keras's public way to attach one, on every backend).
    padding_mask = keras.ops.convert_to_tensor(y_true != 0)
    masked = keras.layers.Lambda(keras.ops.copy, mask=padding_mask)(logits)
    # The mask is on: a loss without ignore_class now averages the real tokens only.
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ignoring = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    np.testing.assert_allclose(float(sparse(y_true, masked)), float(ignoring(y_true, logits)), 1e-6)
    np.testing.assert_allclose(float(loss(y_true, logits)), expected, rtol=1e-6)
    np.testing.assert_allclose(float(loss(y_true, masked)), expected, rtol=1e-6)
    if label_smoothing == 0.0:
        np.testing.assert_allclose(
            float(loss(y_true, logits)), float(ignoring(y_true, logits)), rtol=1e-6
        )
