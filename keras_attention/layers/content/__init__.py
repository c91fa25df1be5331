"""Content attention: a score of the query and the keys, normalized over the memory.

`ContentAttention` (`content_attention.py`) owns what only this family has:
the normalizer (`probability_fn`), dropout, the computation paths
(`implementation`, `block_size`) and the sliding `window`. Each layer
overrides its score: `BahdanauAttention` (additive), `LuongAttention` (dot,
general, concat) and its local-p form `LuongLocalPAttention`,
`ScaledDotProduct`, and `MultiHead`, whose Transformer options
(`head_options.py`) and decoding cache (`kv_cache.py`) are mixins of their own.
Their step keeps an empty alignment state.
"""

from keras_attention.layers.content.bahdanau_attention import BahdanauAttention
from keras_attention.layers.content.content_attention import ContentAttention
from keras_attention.layers.content.luong_attention import LuongAttention
from keras_attention.layers.content.luong_local_p_attention import LuongLocalPAttention
from keras_attention.layers.content.multi_head import MultiHead
from keras_attention.layers.content.scaled_dot_product import ScaledDotProduct

__all__ = [
    "BahdanauAttention",
    "ContentAttention",
    "LuongAttention",
    "LuongLocalPAttention",
    "MultiHead",
    "ScaledDotProduct",
]
