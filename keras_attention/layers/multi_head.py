import math
import numbers

import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention import scores
from keras_attention import validation
from keras_attention.layers.content_attention import ContentAttention
from keras_attention.layers.kernel_args import KernelArgsMixin
from keras_attention.rotary import rotary_embedding


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHead(KernelArgsMixin, ContentAttention):
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
        Embedding", 2021.
    """

    has_heads = True

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

    def _output_features(self, query_shape, value_shape):
        return self.output_dim or query_shape[-1]

    def _split_heads(self, x, heads):
        size = x.shape[-1] // heads
        x = ops.reshape(x, (*ops.shape(x)[:-1], heads, size))  # (B, T, heads, d)
        return ops.transpose(x, (0, 2, 1, 3))  # (B, heads, T, d)

    def _key_value_heads(self, key, value, positions=None):
        """`(B, Hkv, Tv, dk)` keys, rotated at `positions` (default `0..Tv-1`), and values."""
        key = self._split_heads(self.key_dense(key), self._kv_heads)  # (B, Hkv, Tv, dk)
        value = self._split_heads(self.value_dense(value), self._kv_heads)  # (B, Hkv, Tv, dv)
        if self.rotary:
            if positions is None:
                positions = ops.arange(ops.shape(key)[-2], dtype="int32")  # (Tv,)
            key = rotary_embedding(key, positions, self.rotary_base)
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
            return ops.reshape(projected, (-1, self.num_heads, self.key_dim))
        return self._split_heads(projected, self.num_heads)  # (B, H, Tq, dk)

    def _score(self, query, key, query_positions=None):
        if self.rotary:
            if query_positions is None:  # end-aligned, like the causal rule
                query_length, key_length = ops.shape(query)[-2], ops.shape(key)[-2]
                offset = ops.cast(key_length, "int32") - ops.cast(query_length, "int32")
                query_positions = ops.arange(query_length, dtype="int32") + offset  # (Tq,)
            query = rotary_embedding(query, query_positions, self.rotary_base)
        return scores.DotScore(1.0 / math.sqrt(self.key_dim), self.key_dim), query, key, ()

    def _merge(self, context):
        if len(context.shape) == 3:  # one step: (B, H, dv) -> (B, H*dv), a rank-2 Dense
            return self.output_dense(ops.reshape(context, (-1, self.num_heads * self._value_dim)))
        context = ops.transpose(context, (0, 2, 1, 3))  # (B, Tq, H, dv)
        shape = (*ops.shape(context)[:-2], self.num_heads * self._value_dim)
        context = ops.reshape(context, shape)  # (B, Tq, H*dv)
        return self.output_dense(context)

    # ------------------------------------------------------- decoding cache
    def init_cache(self, batch_size, max_length, dtype=None):
        """An empty key/value cache for `call_with_cache`: `(keys, values)` zeros.

        Keys are `(B, Hkv, max_length, dk)` and values `(B, Hkv, max_length,
        dv)`, one entry per key/value head (grouped-query heads share theirs),
        in `dtype` (default: the layer's compute dtype). `batch_size` and
        `max_length` are positive Python ints, or scalar integer tensors when
        they are known only at run time (a search inside `tf.function` over
        a batch of any size). The layer must be built for self-attention
        (called once, or `layer.build(input_shape)`).
        """
        if not self.built:
            validation.fail(
                self._owner,
                "layer",
                "built before `init_cache` (call it once or use `layer.build(input_shape)`)",
                "an unbuilt layer",
            )
        batch_size = self._size("batch_size", batch_size)
        max_length = self._size("max_length", max_length)
        dtype = keras.backend.standardize_dtype(dtype or self.compute_dtype)
        shape = (batch_size, self._kv_heads, max_length)
        return ops.zeros((*shape, self.key_dim), dtype), ops.zeros((*shape, self._value_dim), dtype)

    def _size(self, name, value):
        """A positive Python int, or a scalar integer tensor (known only when run)."""
        return validation.int_or_scalar_tensor(self._owner, name, value)

    def call_with_cache(self, query, cache, index, training=None):
        """Causal self-attention of new tokens over the cache; returns `(context, cache)`.

        Projects the `s` new tokens' keys and values (rotated at positions
        `index..index+s-1` with `rotary=True`), writes them into the cache at
        `index` (`ops.slice_update`), and lets token `i` attend to cached
        positions `<= index + i` (with a `window`, only those inside its
        window). The cache keeps its shape, so a compiled step
        (`tf.function(jit_compile=True)`, `jax.jit`) is traced once. Step-by-step
        outputs equal `layer(x, x, use_causal_mask=True)` row by row.

        Args:
            query: the new tokens `(B, s, d)` (a prompt, or one token), or
                `(B, d)` for one token.
            cache: `(keys, values)` from `init_cache` or a previous call.
            index: position of the first new token: a Python int or a scalar
                integer tensor. `index + s` must not exceed the cache length
                (checked when both are Python ints; past it, `slice_update`'s
                backend-specific clamping applies).
            training: enables dropout on the weights.

        Returns:
            `(context, cache)`: context `(B, s, output_dim)` (or `(B,
            output_dim)` for a rank-2 query) and the updated cache.
        """
        key_cache, value_cache = self._check_cache_call(query, cache, index)
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)  # (B, 1, d)
        steps = ops.shape(query)[1]
        positions = ops.cast(index, "int32") + ops.arange(steps, dtype="int32")  # (s,)
        keys, values = self._key_value_heads(query, query, positions)  # (B, Hkv, s, ·)
        zero = ops.zeros((), "int32")
        start = ops.stack([zero, zero, ops.cast(index, "int32"), zero])
        key_cache = ops.slice_update(key_cache, start, ops.cast(keys, key_cache.dtype))
        value_cache = ops.slice_update(value_cache, start, ops.cast(values, value_cache.dtype))
        context = self._attend_cache(query, key_cache, value_cache, positions, training)
        if single_step:
            context = ops.squeeze(context, 1)  # (B, output_dim)
        return context, (key_cache, value_cache)

    def _attend_cache(self, query, key_cache, value_cache, positions, training):
        """`(B, s, output_dim)` context of new tokens at `positions` over the whole cache."""
        heads, group = self.num_heads, self.num_heads // self._kv_heads
        query = self._project_query(query)  # (B, H, s, dk)
        batch, steps = ops.shape(query)[0], ops.shape(query)[2]
        # Head h reads key/value head h // G: the G query heads of a key/value
        # head become G·s rows over its cache, which is never repeated.
        query = ops.reshape(query, (batch, self._kv_heads, group * steps, self.key_dim))
        rows = ops.tile(positions, (group,))  # (G*s,) the position of each row
        score, query_in, key_in, params = self._score(query, key_cache, query_positions=rows)
        logits = score.logits(score.prepare(query_in), key_in, *params)  # (B, Hkv, G*s, T)
        cached = ops.arange(ops.shape(key_cache)[2], dtype="int32")  # (T,)
        # (G*s, T): written, not in the future, and inside the sliding window.
        visible = masks_lib.band_rule(rows, cached, 0, *masks_lib.key_band(True, self.window))
        masks = dict(
            query_mask=None,
            value_mask=None,
            attention_mask=visible[None],
            use_causal_mask=False,
            window=None,
        )
        dropout = self.dropout if training and self.dropout > 0 else 0.0
        context, _ = self._normalize_and_sum(logits, value_cache, masks, dropout)
        context = ops.reshape(context, (batch, heads, steps, self._value_dim))  # (B, H, s, dv)
        return self._merge(context)

    def _check_cache_call(self, query, cache, index):
        if len(query.shape) not in (2, 3):
            validation.fail(
                self._owner,
                "query",
                "a (batch, [time,] features) tensor",
                f"shape {tuple(query.shape)}",
            )
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            validation.fail(
                self._owner,
                "cache",
                "the (keys, values) pair of `init_cache`",
                type(cache).__name__,
            )
        key_cache, value_cache = cache
        for name, tensor, size in zip(("keys", "values"), cache, (self.key_dim, self._value_dim)):
            shape = tuple(tensor.shape)
            if len(shape) != 4 or shape[-1] != size or shape[1] != self._kv_heads:
                validation.fail(
                    self._owner,
                    f"cache {name}",
                    f"shape (B, {self._kv_heads}, T, {size}) from `init_cache`",
                    f"shape {shape}",
                )
        features = self.query_dense.kernel.shape[0]
        if query.shape[-1] != features or self.key_dense.kernel.shape[0] != features:
            validation.fail(
                self._owner,
                "query",
                f"{features} features, the size the layer "
                "was built for, with keys and values from the query (self-attention)",
                f"shape {tuple(query.shape)}",
            )
        if isinstance(index, numbers.Integral) or not hasattr(index, "shape"):
            index = validation.integer(self._owner, "index", index, minimum=0)
            steps = 1 if len(query.shape) == 2 else validation.static(query.shape[1])
            length = validation.static(key_cache.shape[2])
            if steps is not None and length is not None and index + steps > length:
                validation.fail(
                    self._owner,
                    "index",
                    f"at most {length} - {steps} (the cache "
                    f"holds {length} positions, the query has {steps})",
                    index,
                )
        else:
            validation.int_or_scalar_tensor(self._owner, "index", index, minimum=0)
        return key_cache, value_cache

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
        )
        return config
