"""keras_attention: serializable, masked, multi-backend Keras 3 attention layers.

Public API:

- Layers: `BahdanauAttention`, `LuongAttention`, `ScaledDotProduct`, `MultiHead`.
- Pure math: `keras_attention.ops` (scores, masked softmax / sparsemax /
  hardmax, the weighted sum) and `keras_attention.masks`.
"""

__version__ = "0.1.0"

from keras_attention import masks
from keras_attention import ops
from keras_attention.layers import BahdanauAttention
from keras_attention.layers import BaseAttention
from keras_attention.layers import LuongAttention
from keras_attention.layers import MultiHead
from keras_attention.layers import ScaledDotProduct

__all__ = [
    "BahdanauAttention",
    "BaseAttention",
    "LuongAttention",
    "MultiHead",
    "ScaledDotProduct",
    "masks",
    "ops",
    "__version__",
]
