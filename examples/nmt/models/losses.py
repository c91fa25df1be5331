"""The training loss: token cross-entropy with label smoothing over non-padding targets."""

from __future__ import annotations

import keras
from keras import ops

from examples.nmt.text.special import PAD_ID


@keras.saving.register_keras_serializable(package="examples_nmt")
class MaskedCrossentropy(keras.losses.Loss):
    """Token cross-entropy from logits, with label smoothing, over non-padding targets.

    The target distribution puts ``1 - label_smoothing`` on the gold token
    and spreads ``label_smoothing`` evenly over the vocabulary (Szegedy et
    al., 2016); the loss is the mean over tokens with ``y_true != 0``.
    """

    def __init__(self, label_smoothing: float = 0.0, name: str = "masked_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")  # (B, T)
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)  # (B, T, V)
        gold = -ops.take_along_axis(log_probs, y_true[..., None], axis=-1)[..., 0]  # (B, T)
        uniform = -ops.mean(log_probs, axis=-1)  # (B, T)
        per_token = (1.0 - self.label_smoothing) * gold + self.label_smoothing * uniform
        mask = ops.cast(ops.not_equal(y_true, PAD_ID), "float32")
        # The token mean, a scalar: Keras's reduction keeps it as it is, with
        # or without the logits' padding mask (which it rescales to mean 1).
        return ops.divide_no_nan(ops.sum(per_token * mask), ops.sum(mask))

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}
