"""Absolute positional encodings for Transformer inputs: fixed sinusoids and a learned table.

Both layers take `(B, T, d)` inputs and, by default, return them with the
encoding of each row's position added (`mode="add"`); `mode="encoding"`
returns the encoding alone, broadcast to the inputs' shape. Positions are
`start_index + t` for row `t`, so a decoding step at position `t` gets row
`t` of the encoding, or explicit integer `positions` `(T,)` or `(B, T)`.
A Keras mask on the inputs passes through unchanged.

For rotary encodings, applied to queries and keys inside attention, see
`keras_attention.rotary` and `MultiHead(rotary=True)`.
"""

from keras_attention.layers.positional.learned_positional_embedding import (
    LearnedPositionalEmbedding,
)
from keras_attention.layers.positional.sinusoidal_positional_encoding import (
    SinusoidalPositionalEncoding,
)

__all__ = ["LearnedPositionalEmbedding", "SinusoidalPositionalEncoding"]
