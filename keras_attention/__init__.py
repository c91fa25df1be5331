"""keras_attention: serializable, masked, multi-backend Keras 3 attention layers.

Public API:

- Layers: `BahdanauAttention`, `LuongAttention` (and its local-p form,
  `LuongLocalPAttention`), `ScaledDotProduct`, `MultiHead`,
  `AttentionRNNCell` (input-feeding decoder cell around one or more of them,
  TFA's `AttentionWrapper`; its state by name is an `AttentionRNNState`) and
  `AttentionRNN` (the RNN layer that runs it over a memory).
- Every layer has one decoding step (`step`, from `initial_alignment_state`):
  content attention (`ContentAttention`) keeps an empty state.
- Attention with an alignment state (`AlignmentAttention`), which reads where
  it attended before: `LocationSensitiveAttention`,
  `BahdanauMonotonicAttention`, `LuongMonotonicAttention`,
  `StepwiseMonotonicAttention`, and `keras_attention.monotonic`
  (`monotonic_attention`, `stepwise_monotonic_attention`, `safe_cumprod`);
  the location-relative `GMMAttention` and `DynamicConvolutionAttention`,
  and `keras_attention.location_relative` (their math).
- Positions: `SinusoidalPositionalEncoding`, `LearnedPositionalEmbedding`,
  and rotary embeddings (`keras_attention.rotary`, `MultiHead(rotary=True)`).
- Pure math: `keras_attention.scores` (each score defined once, for every
  path), `keras_attention.ops` (scores as functions, masked softmax /
  sparsemax / hardmax, the weighted sum) and `keras_attention.masks`.
- Long sequences: `keras_attention.memory_efficient` (chunked and fused
  attention in O(T) memory, and the rule that picks a path).
- Search: `keras_attention.decoding` (greedy search, beam search with GNMT
  penalties and alignment history, sampling) over any step function.
- Saving: `keras_attention.saving.load_model`, Keras's loader with clear
  errors for damaged files and classes of packages not imported.
- Plots: `plot_attention`, `plot_heads`, `reduce_heads`,
  `save_attention_html`, and over an image `plot_image_attention`,
  `save_image_attention_html` (matplotlib is imported only when plotting).
"""

__version__ = "0.1.0"

from keras_attention import decoding
from keras_attention import location_relative
from keras_attention import masks
from keras_attention import memory_efficient
from keras_attention import monotonic
from keras_attention import ops
from keras_attention import plotting
from keras_attention import rotary
from keras_attention import saving
from keras_attention import scores
from keras_attention.layers import AlignmentAttention
from keras_attention.layers import AttentionRNN
from keras_attention.layers import AttentionRNNCell
from keras_attention.layers import AttentionRNNState
from keras_attention.layers import BahdanauAttention
from keras_attention.layers import BahdanauMonotonicAttention
from keras_attention.layers import BaseAttention
from keras_attention.layers import ContentAttention
from keras_attention.layers import DynamicConvolutionAttention
from keras_attention.layers import GMMAttention
from keras_attention.layers import LearnedPositionalEmbedding
from keras_attention.layers import LocationSensitiveAttention
from keras_attention.layers import LuongAttention
from keras_attention.layers import LuongLocalPAttention
from keras_attention.layers import LuongMonotonicAttention
from keras_attention.layers import MultiHead
from keras_attention.layers import ScaledDotProduct
from keras_attention.layers import SinusoidalPositionalEncoding
from keras_attention.layers import StepwiseMonotonicAttention
from keras_attention.plotting import plot_attention
from keras_attention.plotting import plot_heads
from keras_attention.plotting import plot_image_attention
from keras_attention.plotting import reduce_heads
from keras_attention.plotting import save_attention_html
from keras_attention.plotting import save_image_attention_html

__all__ = [
    "AlignmentAttention",
    "AttentionRNN",
    "AttentionRNNCell",
    "AttentionRNNState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "BaseAttention",
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
    "decoding",
    "location_relative",
    "masks",
    "memory_efficient",
    "monotonic",
    "ops",
    "plot_attention",
    "plot_heads",
    "plot_image_attention",
    "plotting",
    "reduce_heads",
    "rotary",
    "save_attention_html",
    "save_image_attention_html",
    "saving",
    "scores",
    "__version__",
]
