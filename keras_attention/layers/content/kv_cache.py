"""`MultiHead`'s key/value cache for causal self-attention decoding.

`init_cache` makes fixed-size `(keys, values)` tensors, one entry per
key/value head, and `call_with_cache` writes the new tokens' projected keys
and values (normalized and rotated as a full call would) at `index` and
attends over the cache: static shapes, so a compiled step (XLA, `jax.jit`)
is traced once. The layer's own hooks do the math (`_key_value_heads`,
`_project_query`, `_score`, `_normalize_and_sum`, `_merge`, `_output`), so
every option of a full call (grouped-query heads, rotary embeddings and their
scaling, QK-norm, the soft cap, the gate, a sliding window) holds here too.
"""

import numbers

import keras
from keras import ops

from keras_attention import call_checks
from keras_attention import masks as masks_lib
from keras_attention import validation


class KeyValueCacheMixin:
    """`init_cache` and `call_with_cache` of `MultiHead`."""

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

        Projects the `s` new tokens' keys and values (normalized with
        `qk_norm`, rotated at positions `index..index+s-1` with
        `rotary=True`), writes them into the cache at `index`
        (`ops.slice_update`), and lets token `i` attend to cached
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

    def _attend_cache(self, tokens, key_cache, value_cache, positions, training):
        """`(B, s, output_dim)` context of new `tokens` at `positions` over the whole cache."""
        heads, group = self.num_heads, self.num_heads // self._kv_heads
        query = self._project_query(tokens)  # (B, H, s, dk)
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
        return self._output(self._merge(context), tokens)  # (B, s, output_dim)

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
            steps = 1 if len(query.shape) == 2 else call_checks.static(query.shape[1])
            length = call_checks.static(key_cache.shape[2])
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
