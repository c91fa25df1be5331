"""Attention layers sharing one call contract (`base.BaseAttention`), by family.

```
layers/
  base.py        BaseAttention: the call contract, masks, output shapes, one step
  grid.py        attention over grids (B, *grid, d), flattened to (B, T, d)
  kernel_args.py initializers, regularizers, constraints of the projections
  content/       ContentAttention and its layers: Bahdanau, Luong, local-p,
                 ScaledDotProduct, MultiHead (with its options and cache)
  alignment/     AlignmentAttention and its layers: location-sensitive,
                 monotonic (Bahdanau, Luong, stepwise), GMM, dynamic convolution
  recurrent/     AttentionRNNCell, AttentionRNN, AttentionRNNState
  positional/    SinusoidalPositionalEncoding, LearnedPositionalEmbedding
```

Registered names (`"keras_attention>ClassName"`) never changed, and the
module paths of the former flat folder still import (`former_paths`).
"""

from keras_attention.layers import former_paths
from keras_attention.layers.alignment import AlignmentAttention
from keras_attention.layers.alignment import BahdanauMonotonicAttention
from keras_attention.layers.alignment import DynamicConvolutionAttention
from keras_attention.layers.alignment import GMMAttention
from keras_attention.layers.alignment import LocationSensitiveAttention
from keras_attention.layers.alignment import LuongMonotonicAttention
from keras_attention.layers.alignment import StepwiseMonotonicAttention
from keras_attention.layers.base import BaseAttention
from keras_attention.layers.content import BahdanauAttention
from keras_attention.layers.content import ContentAttention
from keras_attention.layers.content import LuongAttention
from keras_attention.layers.content import LuongLocalPAttention
from keras_attention.layers.content import MultiHead
from keras_attention.layers.content import ScaledDotProduct
from keras_attention.layers.positional import LearnedPositionalEmbedding
from keras_attention.layers.positional import SinusoidalPositionalEncoding
from keras_attention.layers.recurrent import AttentionRNN
from keras_attention.layers.recurrent import AttentionRNNCell
from keras_attention.layers.recurrent import AttentionRNNState

former_paths.install()  # the modules of the flat layout, for older `.keras` files and imports

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


def __getattr__(name):
    # `keras_attention.layers.<former module>` as an attribute, as the flat folder had it.
    if name in former_paths.FORMER_PATHS:
        return former_paths.module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
