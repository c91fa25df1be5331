"""Pure attention math in `keras.ops`: scores, masked normalizers, the weighted sum.

Every function takes tensors and returns tensors, runs on the TensorFlow, JAX
and PyTorch backends, and is safe under `jit_compile=True`/`jax.jit` (no Python
control flow on tensor values). The layers in `keras_attention.layers` only
project their inputs and call these.

Shape letters: `B` batch, `H` heads, `Tq` queries, `Tv` keys/values,
`dk` key (and query) features, `dv` value features, `U` additive units.
Leading dimensions written `...` may be `(B,)` or `(B, H)`.
"""

from __future__ import annotations

import math

from keras import ops

from keras_attention import validation
from keras_attention.backends import matmul
from keras_attention.masks import MASKED_LOGIT
from keras_attention.masks import fill_masked
from keras_attention.masks import zero_masked
from keras_attention.precision import math_dtype
from keras_attention.scores import AdditiveScore
from keras_attention.scores import DotScore
from keras_attention.scores import add_bias

__all__ = [
    "PROBABILITY_FNS",
    "additive_scores",
    "attention_weights",
    "dot_product_scores",
    "masked_hardmax",
    "masked_normalized_sigmoid",
    "masked_softmax",
    "masked_sparsemax",
    "scaled_dot_product_attention",
    "weighted_sum",
]

PROBABILITY_FNS = ("softmax", "sparsemax", "hardmax", "sigmoid")


# ----------------------------------------------------------------------------
# Scores (logits); defined in `keras_attention.scores`.
# ----------------------------------------------------------------------------
def dot_product_scores(query, key, scale: float | None = None):
    """`(..., Tq, dk) x (..., Tv, dk) -> (..., Tq, Tv)` logits `scale * q·k`.

    `scale=None` means no scaling (Luong's dot score); pass `1/sqrt(dk)` for
    scaled dot-product attention. The scale is applied to the query first;
    float16 products are guarded against overflow (`scores.DotScore`).
    """
    query, key = ops.convert_to_tensor(query), ops.convert_to_tensor(key)
    score = DotScore(scale, query.shape[-1])
    return score.logits(score.prepare(query), key)


def additive_scores(query, key, v, bias=None):
    """Additive (Bahdanau / Luong "concat") logits `v · tanh(q + k + b)`.

    Args:
        query: `(B, Tq, U)`, the already projected queries `W_q q`.
        key: `(B, Tv, U)`, the already projected keys `W_k k`.
        v: `(U,)` scoring vector.
        bias: optional `(U,)` bias inside the tanh.

    Returns:
        `(B, Tq, Tv)` logits (`scores.AdditiveScore`).
    """
    query, key, v = (ops.convert_to_tensor(x) for x in (query, key, v))
    if bias is not None:
        query = add_bias(query, ops.convert_to_tensor(bias))
    return AdditiveScore().logits(query, key, v)


# ----------------------------------------------------------------------------
# Normalizers. All run in float32 (float64 for float64 logits) and return
# that dtype.
# ----------------------------------------------------------------------------
def _prepare_logits(logits, mask):
    logits = ops.cast(logits, math_dtype(logits))
    if mask is None:
        return logits, None
    mask = ops.cast(mask, "bool")
    return fill_masked(logits, mask), mask


def masked_softmax(logits, mask=None):
    """Softmax over the last axis in float32, exactly 0 where `mask` is False.

    A row with no True entry gives all zeros (never NaN), with zero gradients.
    """
    logits, mask = _prepare_logits(logits, mask)
    if logits.shape[-1] == 1:  # one key: weight 1 (Keras warns on a size-1 softmax)
        return zero_masked(ops.ones_like(logits), mask)
    return zero_masked(ops.softmax(logits, axis=-1), mask)


def masked_sparsemax(logits, mask=None):
    """Sparsemax (Martins & Astudillo, 2016) over the last axis, in float32.

    The Euclidean projection of the logits onto the simplex: weights sum to 1
    and many are exactly 0. `tau = max_k (cumsum_k - 1) / k` over the sorted
    logits where the support condition `1 + k z_k > cumsum_k` holds; no
    gather, so it compiles under XLA. Masked entries are exactly 0.
    """
    logits, mask = _prepare_logits(logits, mask)
    # Shift-invariant; shifting by the row max keeps the cumsum exact-ish.
    logits = logits - ops.stop_gradient(ops.max(logits, axis=-1, keepdims=True))
    sorted_desc = ops.flip(ops.sort(logits, axis=-1), axis=-1)  # (..., T)
    cumulative = ops.cumsum(sorted_desc, axis=-1)  # (..., T)
    size = ops.shape(logits)[-1]
    k = ops.arange(1, size + 1, dtype=logits.dtype)  # (T,)
    # k = 1 always belongs to the support; saying so keeps tau finite even
    # when float32 rounding hides it (rows of large-negative fill).
    in_support = ops.logical_or(1.0 + k * sorted_desc > cumulative, k == 1.0)
    candidates = ops.where(in_support, (cumulative - 1.0) / k, MASKED_LOGIT)
    tau = ops.max(candidates, axis=-1, keepdims=True)  # (..., 1)
    return zero_masked(ops.maximum(logits - tau, 0.0), mask)


def masked_hardmax(logits, mask=None):
    """One-hot at the largest unmasked logit, trained with the softmax gradient.

    The forward value is exactly one-hot (all zeros for a fully masked row);
    the backward pass is the gradient of `masked_softmax` (straight-through),
    so layers using hard attention still learn.
    """
    soft = masked_softmax(logits, mask)
    prepared, mask = _prepare_logits(logits, mask)
    size = ops.shape(prepared)[-1]
    best = ops.cast(ops.argmax(prepared, axis=-1), "int32")[..., None]  # (..., 1)
    positions = ops.arange(size, dtype="int32")  # (T,)
    hard = ops.cast(ops.equal(positions, best), prepared.dtype)  # (..., T)
    hard = zero_masked(hard, mask)
    # `soft - stop_gradient(soft)` is exactly 0 in the forward pass.
    return hard + (soft - ops.stop_gradient(soft))


def masked_normalized_sigmoid(logits, mask=None):
    """Chorowski et al. (2015)'s "smoothing": `w_j = σ(e_j) / Σ_k σ(e_k)`, in float32.

    Each logit is squashed by a sigmoid before normalizing, so no key can
    take all the weight: the weights are flatter than softmax's and several
    positions can share the attention. Computed as the softmax of `log σ(e)`,
    which is the same ratio without underflow when every logit is very
    negative. Masked entries are exactly 0; a row with no True entry gives
    all zeros (never NaN), with zero gradients, as `masked_softmax`.
    """
    logits, mask = _prepare_logits(logits, mask)  # finite fill before the log-sigmoid
    return masked_softmax(ops.log_sigmoid(logits), mask)


_NORMALIZERS = {
    "softmax": masked_softmax,
    "sparsemax": masked_sparsemax,
    "hardmax": masked_hardmax,
    "sigmoid": masked_normalized_sigmoid,
}


def attention_weights(logits, mask=None, probability_fn: str = "softmax"):
    """Turn logits into attention weights with the named masked normalizer.

    Returns float32 weights (float64 for float64 logits) of the logits'
    shape; see `masked_softmax`, `masked_sparsemax`, `masked_hardmax`,
    `masked_normalized_sigmoid` (`"sigmoid"`).
    """
    validation.choice("attention_weights", "probability_fn", probability_fn, PROBABILITY_FNS)
    return _NORMALIZERS[probability_fn](logits, mask)


# ----------------------------------------------------------------------------
# Weighted sum and the whole scaled dot-product attention.
# ----------------------------------------------------------------------------
def weighted_sum(weights, value):
    """`(..., Tq, Tv) x (..., Tv, dv) -> (..., Tq, dv)` context, `weights @ value`."""
    return matmul(ops.cast(weights, value.dtype), value)


def scaled_dot_product_attention(
    query,
    key,
    value,
    mask=None,
    scale: float | None = None,
    probability_fn: str = "softmax",
):
    """`attention_weights(scale * q kᵀ, mask) v`, returning `(context, weights)`.

    `query` `(..., Tq, dk)`, `key` `(..., Tv, dk)`, `value` `(..., Tv, dv)`,
    `mask` broadcastable to `(..., Tq, Tv)`. `scale=None` uses `1/sqrt(dk)`.
    Weights are float32, context is in `value`'s dtype.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    weights = attention_weights(dot_product_scores(query, key, scale), mask, probability_fn)
    return weighted_sum(weights, value), weights
