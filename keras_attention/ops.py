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
from typing import Optional

from keras import ops

from keras_attention.masks import _FLOAT32_LARGE_NEGATIVE
from keras_attention.masks import attention_mask_from  # noqa: F401 (re-export)
from keras_attention.masks import causal_mask  # noqa: F401 (re-export)
from keras_attention.masks import combine_masks  # noqa: F401 (re-export)
from keras_attention.masks import padding_mask  # noqa: F401 (re-export)

PROBABILITY_FNS = ("softmax", "sparsemax", "hardmax")


# ----------------------------------------------------------------------------
# Scores (logits)
# ----------------------------------------------------------------------------
def dot_product_scores(query, key, scale: Optional[float] = None):
    """`(..., Tq, dk) x (..., Tv, dk) -> (..., Tq, Tv)` logits `scale * q·k`.

    `scale=None` means no scaling (Luong's dot score); pass `1/sqrt(dk)` for
    scaled dot-product attention.
    """
    logits = ops.matmul(query, ops.swapaxes(key, -1, -2))  # (..., Tq, Tv)
    if scale is not None:
        logits = logits * ops.cast(scale, logits.dtype)
    return logits


def additive_scores(query, key, v, bias=None):
    """Additive (Bahdanau / Luong "concat") logits `v · tanh(q + k + b)`.

    Args:
        query: `(B, Tq, U)`, the already projected queries `W_q q`.
        key: `(B, Tv, U)`, the already projected keys `W_k k`.
        v: `(U,)` scoring vector.
        bias: optional `(U,)` bias inside the tanh.

    Returns:
        `(B, Tq, Tv)` logits.

    The `(B, Tq, Tv, U)` tanh is unavoidable in the math; the contraction with
    `v` is a matrix product rather than a multiply-and-reduce, which keeps the
    forward and backward passes at one large temporary each. It is written as
    a rank-2 product, which TensorFlow runs as a plain `MatMul`: a rank-4 one
    becomes a `Tensordot`, whose gradient XLA cannot compile inside a while
    loop (an RNN over `AttentionRNNCell` under `jit_compile=True`).
    """
    query, key, v = (ops.convert_to_tensor(x) for x in (query, key, v))
    if bias is not None:
        query = _add_bias(query, ops.convert_to_tensor(bias))
    hidden = ops.tanh(ops.expand_dims(query, -2) + ops.expand_dims(key, -3))  # (B, Tq, Tv, U)
    units = ops.shape(v)[0]
    logits = ops.matmul(ops.reshape(hidden, (-1, units)), ops.expand_dims(v, -1))  # (N, 1)
    return ops.reshape(logits, ops.shape(hidden)[:-1])  # (B, Tq, Tv)


def _add_bias(x, bias):
    """`x + bias` over the last axis, the broadcast written as a matrix product.

    The gradient of a broadcast add is a sum; under XLA the bias's sum of the
    query's (or key's) gradient, itself a sum over the `(B, Tq, Tv, U)` tanh
    gradient, is folded into a second reduction over that whole tensor, which
    doubled the time of `BahdanauAttention`'s forward and backward step under
    XLA (benchmarks/layers.py). The gradient of `ones @ bias` is a matrix product,
    which XLA leaves alone. The value is exact (`1.0 * b`).
    """
    rows = ops.reshape(x, (-1, ops.shape(bias)[0]))  # (N, U)
    ones = ops.ones_like(rows[:, :1])  # (N, 1)
    return x + ops.reshape(ops.matmul(ones, ops.expand_dims(bias, 0)), ops.shape(x))


# ----------------------------------------------------------------------------
# Normalizers. All run in float32 and return float32.
# ----------------------------------------------------------------------------
def _prepare_logits(logits, mask):
    logits = ops.cast(logits, "float32")
    if mask is None:
        return logits, None
    mask = ops.cast(mask, "bool")
    return ops.where(mask, logits, _FLOAT32_LARGE_NEGATIVE), mask


def _zero_masked(weights, mask):
    if mask is None:
        return weights
    return ops.where(mask, weights, ops.zeros_like(weights))


def masked_softmax(logits, mask=None):
    """Softmax over the last axis in float32, exactly 0 where `mask` is False.

    A row with no True entry gives all zeros (never NaN), with zero gradients.
    """
    logits, mask = _prepare_logits(logits, mask)
    if logits.shape[-1] == 1:  # one key: weight 1 (Keras warns on a size-1 softmax)
        return _zero_masked(ops.ones_like(logits), mask)
    return _zero_masked(ops.softmax(logits, axis=-1), mask)


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
    k = ops.arange(1, size + 1, dtype="float32")  # (T,)
    # k = 1 always belongs to the support; saying so keeps tau finite even
    # when float32 rounding hides it (rows of large-negative fill).
    in_support = ops.logical_or(1.0 + k * sorted_desc > cumulative, k == 1.0)
    candidates = ops.where(in_support, (cumulative - 1.0) / k, _FLOAT32_LARGE_NEGATIVE)
    tau = ops.max(candidates, axis=-1, keepdims=True)  # (..., 1)
    return _zero_masked(ops.maximum(logits - tau, 0.0), mask)


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
    hard = ops.cast(ops.equal(positions, best), "float32")  # (..., T)
    hard = _zero_masked(hard, mask)
    # `soft - stop_gradient(soft)` is exactly 0 in the forward pass.
    return hard + (soft - ops.stop_gradient(soft))


_NORMALIZERS = {
    "softmax": masked_softmax,
    "sparsemax": masked_sparsemax,
    "hardmax": masked_hardmax,
}


def normalize(logits, mask=None, probability_fn: str = "softmax"):
    """Turn logits into attention weights with the named masked normalizer.

    Returns float32 weights of the logits' shape; see `masked_softmax`,
    `masked_sparsemax`, `masked_hardmax`.
    """
    if probability_fn not in _NORMALIZERS:
        raise ValueError(
            f"`probability_fn` must be one of {PROBABILITY_FNS}. "
            f"Received: probability_fn={probability_fn!r}"
        )
    return _NORMALIZERS[probability_fn](logits, mask)


# ----------------------------------------------------------------------------
# Weighted sum and the whole scaled dot-product attention.
# ----------------------------------------------------------------------------
def attend(weights, value):
    """`(..., Tq, Tv) x (..., Tv, dv) -> (..., Tq, dv)` context, `weights @ value`."""
    return ops.matmul(ops.cast(weights, value.dtype), value)


def scaled_dot_product_attention(
    query,
    key,
    value,
    mask=None,
    scale: Optional[float] = None,
    probability_fn: str = "softmax",
):
    """`normalize(scale * q kᵀ, mask) v`, returning `(context, weights)`.

    `query` `(..., Tq, dk)`, `key` `(..., Tv, dk)`, `value` `(..., Tv, dv)`,
    `mask` broadcastable to `(..., Tq, Tv)`. `scale=None` uses `1/sqrt(dk)`.
    Weights are float32, context is in `value`'s dtype.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    weights = normalize(dot_product_scores(query, key, scale), mask, probability_fn)
    return attend(weights, value), weights
