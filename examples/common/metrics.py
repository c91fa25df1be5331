"""The examples' training metric: token accuracy over the targets that are not padding."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops


# Registered under the NMT example's package name, which its saved models since 2026-11 carry.
@keras.saving.register_keras_serializable(package="examples_nmt")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over targets ``y_true != pad_id`` (the argmax of ``y_pred``'s last axis)."""

    def __init__(self, name: str = "masked_accuracy", pad_id: int = 0, **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        del sample_weight  # the padding mask is the only weight
        y_true = ops.cast(y_true, "int32")
        mask = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")
        hits = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, -1), "int32"), y_true), "float32")
        self.correct.assign_add(ops.sum(hits * mask))
        self.count.assign_add(ops.sum(mask))

    def result(self):
        return ops.divide_no_nan(self.correct, self.count)

    def get_config(self):
        return {**super().get_config(), "pad_id": self.pad_id}
