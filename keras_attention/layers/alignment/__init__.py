"""Attention with an alignment state: each step reads where the layer attended before.

`AlignmentAttention` (`alignment_attention.py`) carries the state from step
to step. Location-sensitive attention (`LocationSensitiveAttention`), the
monotonic family on `MonotonicAttentionBase` (`BahdanauMonotonicAttention`,
`LuongMonotonicAttention`, `StepwiseMonotonicAttention`) and the
location-relative layers (`GMMAttention`, `DynamicConvolutionAttention`).
"""

from keras_attention.layers.alignment.alignment_attention import AlignmentAttention
from keras_attention.layers.alignment.bahdanau_monotonic_attention import BahdanauMonotonicAttention
from keras_attention.layers.alignment.dynamic_convolution_attention import (
    DynamicConvolutionAttention,
)
from keras_attention.layers.alignment.gmm_attention import GMMAttention
from keras_attention.layers.alignment.location_sensitive_attention import LocationSensitiveAttention
from keras_attention.layers.alignment.luong_monotonic_attention import LuongMonotonicAttention
from keras_attention.layers.alignment.stepwise_monotonic_attention import StepwiseMonotonicAttention

__all__ = [
    "AlignmentAttention",
    "BahdanauMonotonicAttention",
    "DynamicConvolutionAttention",
    "GMMAttention",
    "LocationSensitiveAttention",
    "LuongMonotonicAttention",
    "StepwiseMonotonicAttention",
]
