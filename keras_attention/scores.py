"""Attention scores (the logits before normalization), each defined once.

A score object holds the static settings of one score; its learned tensors
(the additive score's vector) are passed to its methods, so the chunked path's
custom gradient can return their gradients. Every path uses the same object:

- exact (`BaseAttention`, `keras_attention.ops`): `score.logits(score.prepare(query), key,
  *params)` over the whole `(..., Tq, Tv)`, differentiated by autodiff;
- chunked (`keras_attention.memory_efficient`): the same calls per tile, and
  `augment` / `shifted_logits` / `grads` for its recomputing backward pass;
- fused (`keras.ops.dot_product_attention`): `DotScore` only, through its
  `scale`; never with a soft cap (no backend's kernel has a tanh cap).

Scores:

- `DotScore(scale, soft_cap=None)`: `scale · q kᵀ` (Luong dot and general,
  scaled dot product, every head of multi-head attention). The scale is
  applied to the query before the product, as Keras does; in float16 the
  product is further divided by `√dk` and multiplied back in float32, so
  logits that fit float32 never overflow float16's 65,504. With `soft_cap`
  the logits are `soft_cap(scale · q kᵀ, c) = c · tanh(scale · q kᵀ / c)`
  (Gemma 2), on every path, before masking and normalization.
- `AdditiveScore()`: `v · tanh(q_i + k_j)` (Bahdanau, Luong concat), with the
  projections and any bias already in `q` and `k` (see `add_bias`).

Shape letters: `B` batch, `H` heads, `Tq` queries, `Tv` keys, `dk` features,
`U` additive units; `...` is `(B,)` or `(B, H)`.
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_attention import backends
from keras_attention import call_checks

__all__ = [
    "AdditiveScore",
    "DotScore",
    "add_bias",
    "soft_cap",
    "weight_normalized",
]


def soft_cap(logits, cap: float | None):
    """`cap · tanh(logits / cap)`: logits bounded to `(-cap, cap)` (Gemma 2's soft-capping).

    Nearly the identity for `|logits| << cap`; `cap=None` returns `logits`
    unchanged. Computed in the logits' dtype (the dot score hands it float32
    logits when it restores float16 products).

    Example:

    >>> import keras
    >>> from keras_attention.scores import soft_cap
    >>> logits = keras.ops.convert_to_tensor([0.5, 100.0])
    >>> keras.ops.convert_to_numpy(soft_cap(logits, 50.0)).astype("float64").round(3).tolist()
    [0.5, 48.201]

    References:
        Gemma Team, "Gemma 2: Improving Open Language Models at a Practical
        Size", 2024 (attention logits capped at 50).
    """
    if cap is None:
        return logits
    cap = ops.convert_to_tensor(cap, logits.dtype)
    return ops.tanh(logits / cap) * cap


class DotScore:
    """`scale · q kᵀ`, `(..., Tq, dk) x (..., Tv, dk) -> (..., Tq, Tv)`.

    Args:
        scale: multiplies the logits; `None` means no scaling (Luong's dot
            score). Pass `1/√dk` for scaled dot-product attention.
        feature_size: `dk`, for the float16 guard (`None`: no guard).
        soft_cap: `c > 0` bounds the logits by `soft_cap` (`c · tanh(s / c)`);
            `None` (default): no cap.
    """

    kind = "dot"

    def __init__(
        self,
        scale: float | None = None,
        feature_size: int | None = None,
        soft_cap: float | None = None,
    ):
        self.scale = None if scale is None else float(scale)
        self.feature_size = call_checks.static(feature_size)
        self.soft_cap = None if soft_cap is None else float(soft_cap)

    def _logit_factor(self, x) -> float:
        """How much of the product is restored in float32 (float16 only)."""
        if self.feature_size is None or keras.backend.standardize_dtype(x.dtype) != "float16":
            return 1.0
        return math.sqrt(self.feature_size)

    def _query_factor(self, x) -> float:
        return (1.0 if self.scale is None else self.scale) / self._logit_factor(x)

    def prepare(self, query):
        """The query with the scale (and the float16 guard) folded in."""
        factor = self._query_factor(query)
        # `convert_to_tensor(.., dtype)`, not `cast`: a cast would round the
        # factor through float32 first (float64 layers lose their precision).
        return query if factor == 1.0 else query * ops.convert_to_tensor(factor, query.dtype)

    def _products(self, query, key):
        """`scale · q kᵀ` of a prepared query, before any cap; float32 when restored."""
        logits = backends.matmul(query, ops.swapaxes(key, -1, -2))  # (..., Tq, Tv)
        factor = self._logit_factor(query)
        if factor != 1.0:
            logits = ops.cast(logits, "float32") * factor
        return logits

    def logits(self, query, key):
        """Logits of a prepared query; float32 when restored from float16."""
        return soft_cap(self._products(query, key), self.soft_cap)

    # The chunked path's backward pass over tiles of prepared queries.
    def augment(self, query, key, log_sum_exp):
        """`[q, -L/c]` and `[k, 1]`: their logits are `S - L` (`c` the float16 factor).

        With a soft cap the shift comes after the tanh, so it cannot ride in
        the product: the inputs are returned as they are.
        """
        if self.soft_cap is not None:
            return query, key
        shift = -log_sum_exp / self._logit_factor(query)
        return append_feature(query, shift), append_feature(key, 1.0)

    def shifted_logits(self, query, key, shift):
        """`(S - shift, cache)`: without a cap the shift already rides in the
        augmented features (cache None); with one, the cache is `tanh(s / c)`."""
        if self.soft_cap is None:
            return ops.cast(self.logits(query, key), "float32"), None
        bounded = ops.tanh(ops.cast(self._products(query, key), "float32") / self.soft_cap)
        return bounded * self.soft_cap - shift[..., None], bounded

    def grads(self, d_logits, query, key, cache):
        """float32 `(d_query, d_key, d_params)` of a `(B, H, R, C)` tile, unprepared query."""
        if cache is not None:  # through the cap: d(c·tanh(s/c))/ds = 1 - tanh²
            d_logits = d_logits * (1.0 - cache * cache)
        d_logits = ops.cast(d_logits * self._logit_factor(query), query.dtype)
        d_query = backends.matmul(d_logits, key)  # (B, H, R, dk)
        d_key = ops.einsum("bhqk,bhqd->bhkd", d_logits, query)  # (B, H, C, dk)
        d_query = ops.cast(d_query, "float32") * self._query_factor(query)
        return d_query, ops.cast(d_key, "float32"), ()


class AdditiveScore:
    """`v · tanh(q_i + k_j)`, `(..., Tq, U) x (..., Tv, U) -> (..., Tq, Tv)`.

    `q` and `k` are the projected queries and keys (`W_q q + b`, `W_k k`);
    `v` `(U,)` is passed to each method.
    """

    kind = "additive"
    scale = None

    @staticmethod
    def prepare(query):
        return query

    @staticmethod
    def hidden(query, key):
        """The `(..., Tq, Tv, U)` tanh: the only place the package computes it."""
        return ops.tanh(ops.expand_dims(query, -2) + ops.expand_dims(key, -3))

    @staticmethod
    def project(hidden, vector):
        """`hidden · v` over the last axis, as a rank-2 matrix product.

        One large temporary forward and backward. A rank-2 product is a plain
        `MatMul` on TensorFlow; a higher-rank one is a `Tensordot`, whose
        gradient XLA cannot compile inside a while loop (an RNN over
        `AttentionRNNCell` under `jit_compile=True`).

        A backend may have a faster form on the device it runs on
        (`backends.additive_projection`: multiply-and-reduce under JAX on a GPU).
        """
        fast = backends.additive_projection(hidden, vector)
        if fast is not None:
            return fast
        units = ops.shape(vector)[0]
        logits = backends.matmul(ops.reshape(hidden, (-1, units)), ops.expand_dims(vector, -1))
        return ops.reshape(logits, ops.shape(hidden)[:-1])  # (..., Tq, Tv)

    def logits(self, query, key, vector):
        return self.project(self.hidden(query, key), vector)

    # The chunked path's backward pass.
    @staticmethod
    def augment(query, key, log_sum_exp):
        del log_sum_exp
        return query, key

    def shifted_logits(self, query, key, shift, vector):
        """`(S - shift, tanh)`: the backward pass reuses the tanh."""
        hidden = self.hidden(query, key)
        logits = ops.cast(self.project(hidden, vector), "float32")
        return logits - shift[..., None], hidden

    @staticmethod
    def grads(d_logits, query, key, hidden, vector):
        """float32 `(d_query, d_key, (d_vector,))` of a `(B, H, R, C)` tile."""
        del query, key
        hidden = ops.cast(hidden, "float32")
        d_vector = ops.einsum("bhqk,bhqku->u", d_logits, hidden)  # (U,)
        slope = 1.0 - hidden * hidden  # tanh', (B, H, R, C, U)
        vector = ops.cast(vector, "float32")
        d_query = ops.einsum("bhqk,bhqku->bhqu", d_logits, slope) * vector  # (B, H, R, U)
        d_key = ops.einsum("bhqk,bhqku->bhku", d_logits, slope) * vector  # (B, H, C, U)
        return d_query, d_key, (d_vector,)


def weight_normalized(vector, gain):
    """`g · v / ‖v‖` (Salimans & Kingma, 2016): the additive score's vector, normalized."""
    return gain * vector / ops.sqrt(ops.sum(ops.square(vector)))


def add_bias(x, bias):
    """`x + bias` over the last axis, the broadcast written as a matrix product.

    The gradient of a broadcast add is a sum; under XLA the bias's sum of the
    query's gradient, itself a sum over the `(B, Tq, Tv, U)` tanh gradient, was
    folded into a second reduction over that whole tensor, which doubled the
    time of `BahdanauAttention`'s step (benchmarks/layers.py). The gradient of
    `ones @ bias` is a matrix product, which XLA leaves alone. The value is
    exact (`1.0 * b`).
    """
    rows = ops.reshape(x, (-1, ops.shape(bias)[0]))  # (N, U)
    ones = ops.ones_like(rows[:, :1])  # (N, 1)
    return x + ops.reshape(backends.matmul(ones, ops.expand_dims(bias, 0)), ops.shape(x))


def append_feature(x, column):
    """`(..., T, d)` -> `(..., T, d + 1)` with `column` (`(..., T)` or a number) last."""
    if not hasattr(column, "shape"):
        column = ops.full(ops.shape(x)[:-1], column)
    return ops.concatenate([x, ops.cast(column, x.dtype)[..., None]], axis=-1)
