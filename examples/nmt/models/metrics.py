"""The training metric: token accuracy over non-padding targets."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from examples.nmt.text.special import PAD_ID


@keras.saving.register_keras_serializable(package="examples_nmt")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over non-padding targets (``y_true != 0``)."""

    def __init__(self, name: str = "masked_accuracy", **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        del sample_weight  # the padding mask is the only weight
        y_true = ops.cast(y_true, "int32")
        mask = ops.cast(ops.not_equal(y_true, PAD_ID), "float32")
        hits = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, -1), "int32"), y_true), "float32")
        self.correct.assign_add(ops.sum(hits * mask))
        self.count.assign_add(ops.sum(mask))

    def result(self):
        return ops.divide_no_nan(self.correct, self.count)
