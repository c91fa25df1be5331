"""Attention layers sharing one call contract (see `base.BaseAttention`)."""

from keras_attention.layers.attention_rnn import AttentionRNN
from keras_attention.layers.attention_rnn_cell import AttentionRNNCell
from keras_attention.layers.bahdanau import BahdanauAttention
from keras_attention.layers.base import BaseAttention
from keras_attention.layers.luong import LuongAttention
from keras_attention.layers.multi_head import MultiHead
from keras_attention.layers.positional import LearnedPositionalEmbedding
from keras_attention.layers.positional import SinusoidalPositionalEncoding
from keras_attention.layers.scaled_dot_product import ScaledDotProduct

__all__ = [
    "AttentionRNN",
    "AttentionRNNCell",
    "BaseAttention",
    "BahdanauAttention",
    "LearnedPositionalEmbedding",
    "LuongAttention",
    "MultiHead",
    "ScaledDotProduct",
    "SinusoidalPositionalEncoding",
]
