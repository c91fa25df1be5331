"""Attention layers sharing one call contract (see `base.BaseAttention`)."""

from keras_attention.layers.alignment_attention import AlignmentAttention
from keras_attention.layers.attention_rnn import AttentionRNN
from keras_attention.layers.attention_rnn_cell import AttentionRNNCell
from keras_attention.layers.attention_rnn_state import AttentionRNNState
from keras_attention.layers.bahdanau import BahdanauAttention
from keras_attention.layers.bahdanau_monotonic import BahdanauMonotonicAttention
from keras_attention.layers.base import BaseAttention
from keras_attention.layers.content_attention import ContentAttention
from keras_attention.layers.dynamic_convolution_attention import DynamicConvolutionAttention
from keras_attention.layers.gmm_attention import GMMAttention
from keras_attention.layers.location_sensitive import LocationSensitiveAttention
from keras_attention.layers.luong import LuongAttention
from keras_attention.layers.luong_local_p import LuongLocalPAttention
from keras_attention.layers.luong_monotonic import LuongMonotonicAttention
from keras_attention.layers.multi_head import MultiHead
from keras_attention.layers.positional import LearnedPositionalEmbedding
from keras_attention.layers.positional import SinusoidalPositionalEncoding
from keras_attention.layers.scaled_dot_product import ScaledDotProduct
from keras_attention.layers.stepwise_monotonic import StepwiseMonotonicAttention

__all__ = [
    "AlignmentAttention",
    "AttentionRNN",
    "AttentionRNNCell",
    "AttentionRNNState",
    "BaseAttention",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "ContentAttention",
    "DynamicConvolutionAttention",
    "GMMAttention",
    "LearnedPositionalEmbedding",
    "LocationSensitiveAttention",
    "LuongAttention",
    "LuongLocalPAttention",
    "LuongMonotonicAttention",
    "MultiHead",
    "ScaledDotProduct",
    "SinusoidalPositionalEncoding",
    "StepwiseMonotonicAttention",
]
