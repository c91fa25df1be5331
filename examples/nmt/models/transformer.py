"""An encoder-decoder Transformer built from the package's layers.

``Transformer`` (built by ``build_transformer``) has the interface of the RNN
``Seq2Seq`` model (``examples.nmt.models.decoding``), so the training loop,
the searches, the evaluation and the SavedModel take either: a Functional
model ``(source_ids (B, Ts), target_in_ids (B, Tt)) -> logits (B, Tt, V)``
for teacher-forced training, and ``initial_state``/``step`` for decoding one
token at a time.

The architecture is the pre-layer-norm Transformer (Vaswani et al., 2017,
with the layer norm moved before each sub-layer as in Xiong et al., 2020,
which trains without a long warm-up): token embeddings scaled by
``sqrt(d_model)`` plus ``keras_attention.SinusoidalPositionalEncoding``;
``layers`` encoder blocks (self-attention, feed-forward) and ``layers``
decoder blocks (causal self-attention, cross-attention over the encoder's
output, feed-forward), every attention a ``keras_attention.MultiHead``; a
final layer norm on each side and a float32 output projection.

Decoding: ``initial_state(source_ids, max_length)`` encodes the source once,
projects every decoder block's cross-attention keys and values once
(``MultiHead.project_memory``) and makes an empty key/value cache per block
(``MultiHead.init_cache``); ``step(ids, state, memory, index)`` runs one
token at position ``index`` through the blocks with
``MultiHead.call_with_cache``, so a step costs one token's work instead of
recomputing the prefix. The attention a step returns (for the beam search's
coverage penalty, alignment accuracy and the heat-maps) is the
cross-attention of the decoder block named by ``alignment_layer``, averaged
over its heads; ``cross_attention`` gives every head of every block for a
teacher-forced pass (``plot_heads``, the HTML head selector).
"""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

import keras_attention
from examples.nmt.models.decoding import Memory
from examples.nmt.models.functional import LayersFirstModel
from examples.nmt.text.special import PAD_ID


def _check_sizes(d_model: int, num_heads: int, layers: int, ff_dim: int) -> None:
    sizes = dict(d_model=d_model, num_heads=num_heads, layers=layers, ff_dim=ff_dim)
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"Expected {name} >= 1. Received: {name}={value}")
    if d_model % num_heads:
        raise ValueError(
            f"Expected num_heads dividing d_model. Received: d_model={d_model}, "
            f"num_heads={num_heads}"
        )


class _Block(keras.layers.Layer):
    """What encoder and decoder blocks share: sizes, the feed-forward sub-layer, config."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        ff_dim: int,
        dropout: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.ff_dim, self.dropout = (
            d_model,
            num_heads,
            ff_dim,
            dropout,
        )
        self.ff_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="ff_norm")
        self.ff_inner = keras.layers.Dense(ff_dim, activation="relu", name="ff_inner")
        self.ff_outer = keras.layers.Dense(d_model, name="ff_outer")
        self.ff_dropout = keras.layers.Dropout(dropout, name="ff_dropout")
        self.residual_dropout = keras.layers.Dropout(dropout, name="residual_dropout")

    def _attention(self, name: str) -> keras_attention.MultiHead:
        return keras_attention.MultiHead(
            self.num_heads, self.d_model // self.num_heads, dropout=self.dropout, name=name
        )

    def _build_feed_forward(self, x_shape):
        self.ff_norm.build(x_shape)
        self.ff_inner.build(x_shape)
        self.ff_outer.build((*x_shape[:-1], self.ff_dim))

    def _feed_forward(self, x, training=None):
        h = self.ff_inner(self.ff_norm(x))
        h = self.ff_outer(self.ff_dropout(h, training=training))
        return x + self.residual_dropout(h, training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
        }


@keras.saving.register_keras_serializable(package="examples_nmt")
class EncoderBlock(_Block):
    """Pre-LN encoder block: ``x + SelfAttention(LN(x))``, then ``x + FF(LN(x))``."""

    def __init__(self, d_model, num_heads, ff_dim, dropout=0.0, **kwargs):
        super().__init__(d_model, num_heads, ff_dim, dropout, **kwargs)
        self.attention_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="attention_norm")
        self.self_attention = self._attention("self_attention")

    def build(self, x_shape):
        self.attention_norm.build(x_shape)
        self.self_attention.build(x_shape, x_shape)
        self._build_feed_forward(x_shape)

    def call(self, x, padding_mask=None, training=None):
        """``(B, Ts, d)`` tokens, ``(B, Ts)`` boolean mask (True on real tokens)."""
        h = self.attention_norm(x)
        h = self.self_attention(h, h, value_mask=padding_mask, training=training)
        x = x + self.residual_dropout(h, training=training)
        return self._feed_forward(x, training)

    def compute_output_shape(self, x_shape):
        return x_shape


@keras.saving.register_keras_serializable(package="examples_nmt")
class DecoderBlock(_Block):
    """Pre-LN decoder block: causal self-attention, cross-attention, feed-forward."""

    def __init__(self, d_model, num_heads, ff_dim, dropout=0.0, **kwargs):
        super().__init__(d_model, num_heads, ff_dim, dropout, **kwargs)
        self.self_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="self_norm")
        self.self_attention = self._attention("self_attention")
        self.cross_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="cross_norm")
        self.cross_attention = self._attention("cross_attention")

    def build(self, x_shape, memory_shape):
        self.self_norm.build(x_shape)
        self.self_attention.build(x_shape, x_shape)
        self.cross_norm.build(x_shape)
        self.cross_attention.build(x_shape, memory_shape)
        self._build_feed_forward(x_shape)

    def call(self, x, memory, memory_mask=None, return_attention_scores=False, training=None):
        """``(B, Tt, d)`` targets over ``(B, Ts, d)`` memory; cross-attention ``(B, H, Tt, Ts)``."""
        h = self.self_norm(x)
        h = self.self_attention(h, h, use_causal_mask=True, training=training)
        x = x + self.residual_dropout(h, training=training)
        context = self.cross_attention(
            self.cross_norm(x),
            memory,
            value_mask=memory_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            context, weights = context
        x = self._feed_forward(x + self.residual_dropout(context, training=training), training)
        return (x, weights) if return_attention_scores else x

    def step(self, x, cache, index, keys, values, memory_mask):
        """One token ``(N, d)`` at position ``index``: ``(x, cache, weights (N, H, Ts))``."""
        h, cache = self.self_attention.call_with_cache(self.self_norm(x), cache, index)
        x = x + h
        context, weights = self.cross_attention.attend(
            self.cross_norm(x), keys, values, value_mask=memory_mask, return_attention_scores=True
        )
        return self._feed_forward(x + context), cache, weights

    def compute_output_shape(self, x_shape, memory_shape):
        return x_shape


@keras.saving.register_keras_serializable(package="examples_nmt")
class ScaledEmbedding(keras.layers.Embedding):
    """Token embeddings times ``sqrt(output_dim)``, initialised ``N(0, 1/output_dim)``.

    The product has unit variance, the scale of the sinusoidal encodings it
    is added to.
    """

    def __init__(self, input_dim: int, output_dim: int, **kwargs: Any):
        kwargs.setdefault(
            "embeddings_initializer", keras.initializers.RandomNormal(stddev=output_dim**-0.5)
        )
        super().__init__(input_dim, output_dim, **kwargs)

    def call(self, inputs):
        return super().call(inputs) * ops.cast(math.sqrt(self.output_dim), self.compute_dtype)


@keras.saving.register_keras_serializable(package="examples_nmt")
class Transformer(LayersFirstModel):
    """The Transformer translation model; see the module doc and ``build_transformer``."""

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        d_model: int = 128,
        num_heads: int = 4,
        layers: int = 2,
        ff_dim: int = 512,
        dropout: float = 0.0,
        alignment_layer: int = -1,
        **kwargs: Any,
    ):
        _check_sizes(d_model, num_heads, layers, ff_dim)
        if not -layers <= alignment_layer < layers:
            raise ValueError(
                f"Expected alignment_layer in [{-layers}, {layers}). Received: "
                f"alignment_layer={alignment_layer}"
            )
        block_args = dict(d_model=d_model, num_heads=num_heads, ff_dim=ff_dim, dropout=dropout)
        # === Layers (what `step` runs) ===
        self.source_embedding = ScaledEmbedding(source_vocab_size, d_model, name="source_embedding")
        self.target_embedding = ScaledEmbedding(target_vocab_size, d_model, name="target_embedding")
        self.positions = keras_attention.SinusoidalPositionalEncoding(name="positions")
        self.source_dropout = keras.layers.Dropout(dropout, name="source_dropout")
        self.target_dropout = keras.layers.Dropout(dropout, name="target_dropout")
        self.encoder_blocks = [
            EncoderBlock(**block_args, name=f"encoder_{index}") for index in range(layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="encoder_norm")
        self.decoder_blocks = [
            DecoderBlock(**block_args, name=f"decoder_{index}") for index in range(layers)
        ]
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="decoder_norm")
        self.output_layer = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")

        # === Functional model (teacher forcing) ===
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
        memory, mask = self.encode(source_ids)
        x, _ = self.decode(target_in_ids, memory, mask)
        logits = self.output_layer(self.decoder_norm(x))
        kwargs.setdefault("name", "nmt_transformer")
        super().__init__(inputs=[source_ids, target_in_ids], outputs=logits, **kwargs)

        # === Config ===
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.d_model = d_model
        self.num_heads = num_heads
        self.layers_count = layers
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.alignment_layer = alignment_layer

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "layers": self.layers_count,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "alignment_layer": self.alignment_layer,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    # ------------------------------------------------------------ encoding
    def encode(self, source_ids, training=None):
        """Memory ``(B, Ts, d_model)`` and its boolean mask ``(B, Ts)``."""
        mask = ops.not_equal(source_ids, PAD_ID)
        x = self.positions(self.source_embedding(source_ids))
        x = self.source_dropout(x, training=training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=mask, training=training)
        return self.encoder_norm(x), mask

    def decode(self, target_in_ids, memory, mask, return_attention_scores=False, training=None):
        """Teacher-forced decoder blocks: ``(B, Tt, d_model)`` before the final norm.

        With ``return_attention_scores``, also every block's cross-attention
        ``(B, H, Tt, Ts)`` (a list); otherwise None in its place.
        """
        x = self.positions(self.target_embedding(target_in_ids))
        x = self.target_dropout(x, training=training)
        weights = []
        for block in self.decoder_blocks:
            x = block(
                x,
                memory,
                memory_mask=mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            if return_attention_scores:
                x, block_weights = x
                weights.append(block_weights)
        return x, (weights if return_attention_scores else None)

    def cross_attention(self, source_ids, target_in_ids) -> list:
        """Every decoder block's cross-attention ``(B, H, Tt, Ts)`` for a teacher-forced pass."""
        memory, mask = self.encode(source_ids, training=False)
        _, weights = self.decode(
            target_in_ids, memory, mask, return_attention_scores=True, training=False
        )
        return weights

    # ------------------------------------------------------------ decoding
    def initial_state(self, source_ids: Any, max_length: Any = 64) -> tuple[dict[str, Any], Memory]:
        """Encodes ``(B, Ts)`` ids once: empty caches for ``max_length`` steps and the memory.

        ``Memory.keys``/``values`` hold one projected tensor per decoder block.
        """
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        memory, mask = self.encode(source_ids)
        batch = ops.shape(source_ids)[0]
        keys, values, caches = [], [], []
        for block in self.decoder_blocks:
            block_keys, block_values = block.cross_attention.project_memory(
                memory, memory, value_mask=mask
            )
            keys.append(block_keys)
            values.append(block_values)
            caches.append(block.self_attention.init_cache(batch, max_length))
        return {"cache": caches}, Memory(keys, values, mask)

    def step(
        self,
        inputs: Any,
        state: dict[str, Any],
        memory: Memory,
        index: Any = 0,
    ) -> tuple[Any, dict[str, Any], Any]:
        """``(N,)`` ids at position ``index``: ``(N, V)`` logits, new state, ``(N, Ts)`` weights."""
        embedded = self.target_embedding(inputs[:, None])  # (N, 1, d)
        x = self.positions(embedded, start_index=index)[:, 0]  # (N, d)
        caches, all_weights = [], []
        for block, cache, keys, values in zip(
            self.decoder_blocks, state["cache"], memory.keys, memory.values
        ):
            x, cache, weights = block.step(x, cache, index, keys, values, memory.mask)
            caches.append(cache)
            all_weights.append(weights)
        logits = ops.cast(self.output_layer(self.decoder_norm(x)), "float32")
        weights = ops.mean(all_weights[self.alignment_layer], axis=1)  # (N, Ts), heads averaged
        return logits, {"cache": caches}, ops.cast(weights, "float32")


def build_transformer(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    d_model: int = 128,
    num_heads: int = 4,
    layers: int = 2,
    ff_dim: int = 512,
    dropout: float = 0.0,
    alignment_layer: int = -1,
) -> Transformer:
    """The teacher-forced Transformer; see the module doc.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 pads).
        d_model: features of every token representation.
        num_heads: heads of every attention; divides ``d_model``.
        layers: encoder blocks, and as many decoder blocks.
        ff_dim: inner size of the feed-forward sub-layers.
        dropout: on the embeddings, the attention weights, the feed-forward
            inner activations and every residual branch.
        alignment_layer: the decoder block whose cross-attention (averaged
            over heads) a decoding step returns; negative counts from the end.
    """
    return Transformer(
        source_vocab_size,
        target_vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        layers=layers,
        ff_dim=ff_dim,
        dropout=dropout,
        alignment_layer=alignment_layer,
    )
