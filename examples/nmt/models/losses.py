"""The training loss: token cross-entropy with label smoothing over non-padding targets."""

from __future__ import annotations

import keras
import tensorflow as tf

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
        y_true = tf.cast(y_true, tf.int32)  # (B, T)
        log_probs = tf.nn.log_softmax(tf.cast(y_pred, tf.float32))  # (B, T, V)
        gold = -tf.gather(log_probs, y_true, batch_dims=2)  # (B, T)
        uniform = -tf.reduce_mean(log_probs, axis=-1)  # (B, T)
        per_token = (1.0 - self.label_smoothing) * gold + self.label_smoothing * uniform
        mask = tf.cast(y_true != PAD_ID, tf.float32)
        # The token mean, a scalar: Keras's reduction keeps it as it is, with
        # or without the logits' padding mask (which it rescales to mean 1).
        return tf.math.divide_no_nan(tf.reduce_sum(per_token * mask), tf.reduce_sum(mask))

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}
