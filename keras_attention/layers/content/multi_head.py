import math

import keras
from keras import ops

from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.content.content_attention import ContentAttention
from keras_attention.layers.content.head_options import HeadOptionsMixin
from keras_attention.layers.content.kv_cache import KeyValueCacheMixin
from keras_attention.layers.kernel_args import KernelArgsMixin


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHead(HeadOptionsMixin, KeyValueCacheMixin, KernelArgsMixin, ContentAttention):
    """Multi-head attention (Vaswani et al., 2017), with grouped-query heads.

    Each of `H = num_heads` heads projects the query to `dk = key_dim`
    features, runs scaled dot-product attention over keys and values
    projected by one of `num_key_value_heads` key/value heads (grouped-query
    attention, Ainslie et al. 2023; `num_key_value_heads=1` is multi-query
    attention), and the heads' contexts are concatenated and projected to
    `output_dim` features.

    The key/value projections depend only on the keys and values:
    `project_memory` computes them once for step-by-step decoding. For
    causal self-attention decoding, `init_cache` and `call_with_cache` keep
    the projected keys and values of the tokens seen so far, per key/value
    head, in fixed-size tensors (static shapes for XLA and `jax.jit`).

    With `rotary=True` the projected queries and keys of every head are
    rotated by their positions (RoPE, `keras_attention.rotary`,
    "rotate-half" convention). Key `j` is at position `j`; query `i` is at
    `Tv - Tq + i`, aligned to the end of the keys like the causal mask, so a
    self-attention call puts query `i` at `i`, a single step (rank-2 query)
    at `Tv - 1`, and `call_with_cache` at `index + i`. For cross-attention
    with another position layout, rotate with `rotary_embedding` yourself.

    Args:
        num_heads: number of query heads `H`.
        key_dim: features per head for queries and keys, `dk`.
        value_dim: features per head for values, `dv`; defaults to `key_dim`.
        num_key_value_heads: key/value heads; must divide `num_heads`;
            defaults to `num_heads`.
        output_dim: features of the output; defaults to the query's.
        use_bias: biases in the four projections.
        probability_fn, dropout, seed, implementation, block_size: as in
            `ContentAttention`; the heads share one tile layout.
        kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, kernel_constraint, bias_constraint: for the four
            projections; each gets its own copy (a seeded initializer a seed
            derived per projection), so they never start equal.
        rotary: apply rotary position embeddings to the projected queries
            and keys; needs an even `key_dim`.
        rotary_base: the wavelength base of the rotation (10,000 in RoFormer).
        window: a sliding window, as in `ContentAttention` (e.g. `window=4096`
            with `use_causal_mask=True`: Mistral's); `call_with_cache` applies
            it too, to the cached positions.
        rope_scaling: context extension of the rotation (`rotary=True`):
            None (default), `{"rope_type": "linear" | "dynamic", "factor":
            s}` or `{"rope_type": "yarn", "factor": s,
            "original_max_position_embeddings": L}` (optional `beta_fast`,
            `beta_slow`, `truncate`): KerasHub's `rope_type`s, defined in
            `keras_attention.rotary`.
        use_gate: gate the heads' context by `sigmoid(W_g query)` before the
            output projection (gated attention, Keras's `use_gate`).
        qk_norm: RMS-normalize each head's queries and keys over `dk`, with a
            learned `(dk,)` scale each (ones at first), before the rotation
            (QK-norm as in Gemma 3 and Qwen 3; `keras_attention.heads`).
        logit_soft_cap: None, or `c > 0`: logits `c · tanh(s / c)` before
            masks and softmax (Gemma 2's 50). Not on the fused path.
        attention_axes: the axes that attend, `keras.layers.MultiHeadAttention`'s
            meaning: an int or a tuple, or None (default) for every axis but
            the batch and the features (a sequence's). Inputs `(B, *axes,
            d)` of one rank; the other axes act as batch axes; the weights
            are `(B, *other, H, *query attended, *value attended)`
            (`keras_attention.layers.grid`).
        **kwargs: base layer arguments.

    Call arguments and returns: the contract of `BaseAttention`; the context
    is `(B, Tq, output_dim)` and the weights `(B, H, Tq, Tv)` (without `Tq`
    for a rank-2 query).

    Example:

    >>> import numpy as np
    >>> from keras_attention import MultiHead
    >>> layer = MultiHead(num_heads=4, key_dim=8, num_key_value_heads=2)
    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> context, weights = layer(x, x, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 5, 16), (2, 4, 5, 5))

    References:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
        Ainslie et al., "GQA: Training Generalized Multi-Query Transformer
        Models from Multi-Head Checkpoints", EMNLP 2023.
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position
        Embedding", 2021; Peng et al., "YaRN", ICLR 2024.
        Gemma Team, "Gemma 2", 2024 (logit soft-capping); Qiu et al.,
        "Gated Attention for Large Language Models", 2025.
    """

    has_heads = True
    accepts_grids = False  # N-D inputs attend over `attention_axes` instead
    attends_axes = True

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        num_key_value_heads=None,
        output_dim=None,
        use_bias=True,
        probability_fn="softmax",
        dropout=0.0,
        seed=None,
        implementation="auto",
        block_size=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        rotary=False,
        rotary_base=10000.0,
        window=None,
        use_gate=False,
        qk_norm=False,
        logit_soft_cap=None,
        rope_scaling=None,
        attention_axes=None,
        **kwargs,
    ):
        super().__init__(
            probability_fn=probability_fn,
            dropout=dropout,
            seed=seed,
            implementation=implementation,
            block_size=block_size,
            window=window,
            **kwargs,
        )
        self.num_heads = validation.integer("MultiHead", "num_heads", num_heads)
        self.key_dim = validation.integer("MultiHead", "key_dim", key_dim)
        self.value_dim = validation.integer("MultiHead", "value_dim", value_dim, allow_none=True)
        self.num_key_value_heads = validation.integer(
            "MultiHead", "num_key_value_heads", num_key_value_heads, allow_none=True
        )
        self.output_dim = validation.integer("MultiHead", "output_dim", output_dim, allow_none=True)
        if self.num_heads % self._kv_heads:
            raise ValueError(
                "MultiHead: `num_key_value_heads` must divide `num_heads`. "
                f"Received: num_heads={num_heads}, "
                f"num_key_value_heads={num_key_value_heads}"
            )
        self.use_bias = validation.flag("MultiHead", "use_bias", use_bias)
        self.rotary = validation.flag("MultiHead", "rotary", rotary)
        self.rotary_base = validation.positive_number("MultiHead", "rotary_base", rotary_base)
        if self.rotary and self.key_dim % 2:
            validation.fail("MultiHead", "key_dim", "even with rotary=True", key_dim)
        self._set_head_options(use_gate, qk_norm, logit_soft_cap, rope_scaling)
        self.attention_axes = validation.attention_axes(
            "MultiHead", "attention_axes", attention_axes
        )
        self._set_kernel_args(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
        )

    @property
    def _kv_heads(self):
        return self.num_key_value_heads or self.num_heads

    @property
    def _value_dim(self):
        return self.value_dim or self.key_dim

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        h, hkv, dk, dv = self.num_heads, self._kv_heads, self.key_dim, self._value_dim
        bias = self.use_bias
        self.query_dense = self._dense(h * dk, "query", bias, query_shape[-1])
        self.key_dense = self._dense(hkv * dk, "key", bias, key_shape[-1])
        self.value_dense = self._dense(hkv * dv, "value", bias, value_shape[-1])
        output_dim = self.output_dim or query_shape[-1]
        self.output_dense = self._dense(output_dim, "output", bias, h * dv)
        self._build_head_options(query_shape[-1])

    def _output_features(self, query_shape, value_shape):
        return self.output_dim or query_shape[-1]

    def _split_heads(self, x, heads):
        size = x.shape[-1] // heads
        if isinstance(x, keras.KerasTensor) and None in x.shape[:-1]:
            # Outside a layer's call (a memory projected in a Functional graph), an op
            # records its arguments: a Reshape layer keeps the unknown sizes unknown.
            x = keras.layers.Reshape((-1, heads, size))(x)  # (B, T, heads, d)
        else:
            x = ops.reshape(x, (*ops.shape(x)[:-1], heads, size))  # (B, T, heads, d)
        return ops.transpose(x, (0, 2, 1, 3))  # (B, heads, T, d)

    def _key_value_heads(self, key, value, positions=None):
        """`(B, Hkv, Tv, dk)` keys, rotated at `positions` (default `0..Tv-1`), and values."""
        key = self._split_heads(self.key_dense(key), self._kv_heads)  # (B, Hkv, Tv, dk)
        value = self._split_heads(self.value_dense(value), self._kv_heads)  # (B, Hkv, Tv, dv)
        key = self._normalized(key, getattr(self, "key_norm", None))
        if self.rotary:
            if positions is None:
                positions = ops.arange(ops.shape(key)[-2], dtype="int32")  # (Tv,)
            key = self._rotated(key, positions)
        return key, value

    def _project_memory(self, key, value):
        key, value = self._key_value_heads(key, value)
        group = self.num_heads // self._kv_heads
        if group > 1:
            key = ops.repeat(key, group, axis=1)  # (B, H, Tv, dk)
            value = ops.repeat(value, group, axis=1)  # (B, H, Tv, dv)
        return key, value

    def _project_query(self, query):
        projected = self.query_dense(query)
        if len(query.shape) == 2:  # one step: (B, H, dk)
            projected = ops.reshape(projected, (-1, self.num_heads, self.key_dim))
        else:
            projected = self._split_heads(projected, self.num_heads)  # (B, H, Tq, dk)
        return self._normalized(projected, getattr(self, "query_norm", None))

    def _score(self, query, key, query_positions=None):
        if self.rotary:
            if query_positions is None:  # end-aligned, like the causal rule
                query_length, key_length = ops.shape(query)[-2], ops.shape(key)[-2]
                offset = ops.cast(key_length, "int32") - ops.cast(query_length, "int32")
                query_positions = ops.arange(query_length, dtype="int32") + offset  # (Tq,)
            query = self._rotated(query, query_positions)
        scale = 1.0 / math.sqrt(self.key_dim)
        return scores.DotScore(scale, self.key_dim, self.logit_soft_cap), query, key, ()

    def _merge(self, context):
        """The heads side by side, `(B, Tq, H*dv)` (`(B, H*dv)` for one step); `attend`
        then gates and projects them (`HeadOptionsMixin._output`)."""
        if len(context.shape) == 3:  # one step: (B, H, dv) -> (B, H*dv), for a rank-2 Dense
            return ops.reshape(context, (-1, self.num_heads * self._value_dim))
        context = ops.transpose(context, (0, 2, 1, 3))  # (B, Tq, H, dv)
        shape = (*ops.shape(context)[:-2], self.num_heads * self._value_dim)
        return ops.reshape(context, shape)  # (B, Tq, H*dv)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            value_dim=self.value_dim,
            num_key_value_heads=self.num_key_value_heads,
            output_dim=self.output_dim,
            use_bias=self.use_bias,
            **self._kernel_config(),
            rotary=self.rotary,
            rotary_base=self.rotary_base,
            **self._head_options_config(),
            attention_axes=self.attention_axes,
        )
        return config
