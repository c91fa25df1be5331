"""The captioner's Transformer decoder (``architecture="transformer"``): tokens over the grid.

Pre-layer-norm blocks (Vaswani et al.; Xiong et al.): ``x + SelfAttention(LN(x))``
(causal), ``x + CrossAttention(LN(x), grid)``, ``x + FF(LN(x))``, every
attention a ``keras_attention.MultiHead``; learned token and position
embeddings in, a final layer norm out. The grid memory is flattened
row-major to ``(B, H'*W', ·)`` and the ink mask to ``(B, H'*W')``, the
cross-attention's ``value_mask``. The alignment that the metrics, the
overlays and the doubly stochastic penalty read is the last block's
cross-attention averaged over its heads.

Decoding: ``initial_state`` projects the grid once per block
(``MultiHead.project_memory``) and makes an empty key/value cache per block
(``MultiHead.init_cache``); ``step`` runs one token through
``MultiHead.call_with_cache``, so a step costs one token's work.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

import keras_attention


@keras.saving.register_keras_serializable(package="examples_captioning")
class DecoderBlock(keras.layers.Layer):
    """Pre-LN decoder block: causal self-attention, cross-attention, feed-forward."""

    def __init__(self, d_model: int, num_heads: int, ff_dim: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.ff_dim = d_model, num_heads, ff_dim
        size = d_model // num_heads
        self.self_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="self_norm")
        self.self_attention = keras_attention.MultiHead(num_heads, size, name="self_attention")
        self.cross_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="cross_norm")
        self.cross_attention = keras_attention.MultiHead(num_heads, size, name="cross_attention")
        self.ff_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="ff_norm")
        self.ff_inner = keras.layers.Dense(ff_dim, activation="relu", name="ff_inner")
        self.ff_outer = keras.layers.Dense(d_model, name="ff_outer")

    def call(self, x, keys, values, mask=None):
        """``(B, T, d)`` over ``(B, S, ·)`` memory: ``(x, cross-attention (B, heads, T, S))``."""
        h = self.self_norm(x)
        x = x + self.self_attention(h, h, use_causal_mask=True)
        context, weights = self.cross_attention(
            self.cross_norm(x), values, key=keys, value_mask=mask, return_attention_scores=True
        )
        return self._feed_forward(x + context), weights

    def step(self, x, cache, index, keys, values, mask):
        """One token ``(N, d)`` at ``index``; ``keys``/``values`` from ``project_memory``."""
        h, cache = self.self_attention.call_with_cache(self.self_norm(x), cache, index)
        x = x + h
        context, weights = self.cross_attention.attend(
            self.cross_norm(x), keys, values, value_mask=mask, return_attention_scores=True
        )
        return self._feed_forward(x + context), cache, weights  # weights (N, heads, S)

    def _feed_forward(self, x):
        return x + self.ff_outer(self.ff_inner(self.ff_norm(x)))

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
        }


@keras.saving.register_keras_serializable(package="examples_captioning")
class TransformerDecoder(keras.layers.Layer):
    """Token ids + flattened grid -> ``(B, T, d_model)`` features and the alignment.

    Args:
        vocabulary_size: the token embedding's rows.
        max_length: the most positions (the caption's tokens, the start included).
        num_layers, num_heads, d_model, ff_dim: the blocks' count and sizes.
    """

    def __init__(
        self,
        vocabulary_size: int,
        max_length: int,
        num_layers: int = 2,
        num_heads: int = 4,
        d_model: int = 64,
        ff_dim: int = 128,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        for name, value in dict(num_layers=num_layers, num_heads=num_heads, ff_dim=ff_dim).items():
            if value < 1:
                raise ValueError(f"Expected {name} >= 1. Received: {name}={value}")
        if d_model < 1 or d_model % num_heads:
            raise ValueError(
                "Expected d_model a positive multiple of num_heads. "
                f"Received: d_model={d_model}, num_heads={num_heads}"
            )
        self.vocabulary_size, self.max_length = vocabulary_size, max_length
        self.num_layers, self.num_heads, self.d_model, self.ff_dim = (
            num_layers,
            num_heads,
            d_model,
            ff_dim,
        )
        self.embedding = keras.layers.Embedding(vocabulary_size, d_model, name="embedding")
        self.positions = keras_attention.LearnedPositionalEmbedding(max_length, name="positions")
        self.blocks = [
            DecoderBlock(d_model, num_heads, ff_dim, name=f"block_{index}")
            for index in range(num_layers)
        ]
        self.norm = keras.layers.LayerNormalization(epsilon=1e-6, name="norm")

    def call(self, ids, keys, values, mask=None):
        """``(B, T)`` ids over ``(B, S, ·)`` memory: ``(B, T, d)`` and weights ``(B, T, S)``."""
        x = self.positions(self.embedding(ids))
        for block in self.blocks:
            x, weights = block(x, keys, values, mask)
        return self.norm(x), ops.mean(weights, axis=1)  # the last block's, heads averaged

    def initial_state(self, keys, values, mask=None) -> tuple[dict[str, Any], tuple]:
        """Empty caches for ``max_length`` steps; the memory projected once per block."""
        batch = ops.shape(values)[0]
        projected_keys, projected_values, caches = [], [], []
        for block in self.blocks:
            block_keys, block_values = block.cross_attention.project_memory(
                keys, values, value_mask=mask
            )
            projected_keys.append(block_keys)
            projected_values.append(block_values)
            caches.append(block.self_attention.init_cache(batch, self.max_length))
        return {"cache": caches}, (projected_keys, projected_values, mask)

    def step(self, ids, state: dict[str, Any], memory: tuple, index: Any):
        """``(N,)`` ids at position ``index``: ``(N, d)``, the new state, ``(N, S)`` weights."""
        x = self.positions(self.embedding(ids[:, None]), start_index=index)[:, 0]  # (N, d)
        keys, values, mask = memory
        caches = []
        for block, cache, block_keys, block_values in zip(
            self.blocks, state["cache"], keys, values, strict=True
        ):
            x, cache, weights = block.step(x, cache, index, block_keys, block_values, mask)
            caches.append(cache)
        return self.norm(x), {"cache": caches}, ops.mean(weights, axis=1)

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "max_length": self.max_length,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "d_model": self.d_model,
            "ff_dim": self.ff_dim,
        }
