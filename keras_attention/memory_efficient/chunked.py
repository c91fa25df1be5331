"""Chunked attention: any score of `keras_attention.scores`, in tiles, `O(T)` memory.

The forward pass keeps per query row only a running max, a running sum and the
unnormalized context (the online softmax); the custom gradient stores only the
context `O` and the log-sum-exp `L` per row and recomputes each tile's weights
(FlashAttention's backward pass). See `keras_attention.memory_efficient`.
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_attention import masks as masks_lib
from keras_attention import validation
from keras_attention.memory_efficient.dropout import TileDropout
from keras_attention.memory_efficient.tiles import Plan
from keras_attention.memory_efficient.tiles import TileMasks
from keras_attention.memory_efficient.tiles import Tiles
from keras_attention.scores import AdditiveScore
from keras_attention.scores import DotScore

# Tile sides that keep one tile's temporaries a few MiB: a dot-product tile is
# (B, H, block, block); an additive tile is (B, block, block, U).
DEFAULT_DOT_BLOCK_SIZE = 512  # with a band (causal, window) or an unknown batch
DEFAULT_ADDITIVE_BLOCK_SIZE = 32
# Without a band, a dot-product tile is as large as fits DOT_TILE_BYTES (float32), up to
# the backend's largest: each tile costs a loop iteration's fixed work. A training step at
# T = 8,192 (B = 1, 8 heads, CPU, 2026-12-07), 512- against 1024-wide tiles: PyTorch (eager)
# 29.6 s and 20.7 s of CPU time, peak 0.38 and 0.48 GiB: 1024. JAX 4.3 s and 5.1 s: 512.
# TensorFlow on one core 2.6-2.7 s and 2.7-3.0 s, peaks 0.24-0.28 GiB and 0.34-2.4 GiB
# (its while loop ran several 1024-wide tiles at once): 512.
LARGEST_DOT_BLOCK_SIZE = {"torch": 1024}
DOT_TILE_BYTES = 32 * 2**20


def dot_block_size(batch_heads: int | None, banded: bool, backend: str | None = None) -> int:
    """The default side of a dot-product tile of `batch_heads = B * H` rows.

    With a band (causal mask, sliding window) or `B * H` unknown: 512, the
    side the band's skipped tiles were tuned for. Otherwise the largest power
    of two in [512, largest] whose `(B, H, side, side)` float32 tile fits 32
    MiB, where largest is 1024 on PyTorch and 512 on TensorFlow and JAX: on
    PyTorch 1024 for `B * H <= 8`, else 512.
    """
    if banded or not isinstance(batch_heads, int):
        return DEFAULT_DOT_BLOCK_SIZE
    side = LARGEST_DOT_BLOCK_SIZE.get(backend or keras.backend.backend(), DEFAULT_DOT_BLOCK_SIZE)
    while side > DEFAULT_DOT_BLOCK_SIZE and batch_heads * side * side * 4 > DOT_TILE_BYTES:
        side //= 2
    return side


def chunked_dot_product_attention(query, key, value, *, scale: float | None = None, **options):
    """Softmax attention `softmax(scale · q kᵀ) v` in tiles, `O(T)` memory.

    Equal to `ops.scaled_dot_product_attention(...)[0]` with the combined
    mask, forward and backward, without ever holding the `(..., Tq, Tv)`
    weights.

    Args:
        query: `(..., Tq, dk)`; `...` is `(B,)` or `(B, H)`.
        key: `(..., Tv, dk)`.
        value: `(..., Tv, dv)`.
        scale: multiplies the logits; `None` means `1/sqrt(dk)`.
        **options: `query_mask`, `value_mask`, `attention_mask`,
            `use_causal_mask`, `window`, `dropout_rate`, `seed`, `block_size`
            (default `dot_block_size`), as in `chunked_attention`.

    Returns:
        The context `(..., Tq, dv)` in `value`'s dtype.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    return chunked_attention(DotScore(scale, query.shape[-1]), query, key, value, **options)


def chunked_additive_attention(query, key, value, score_vector, **options):
    """Additive attention `softmax(v · tanh(q_i + k_j)) value` in tiles.

    The blockwise form of `ops.additive_scores` followed by a masked softmax
    and `ops.weighted_sum`: the `(B, Tq, Tv, U)` tanh exists one
    `(B, block, block, U)` tile at a time, forward and backward.

    Args:
        query: `(B, Tq, U)`, the projected queries (plus any bias).
        key: `(B, Tv, U)`, the projected keys.
        value: `(B, Tv, dv)`.
        score_vector: `(U,)`, the `v` of the score (scaled as you need).
        **options: as in `chunked_attention` (`block_size` 32 by default).

    Returns:
        The context `(B, Tq, dv)` in `value`'s dtype.
    """
    return chunked_attention(AdditiveScore(), query, key, value, score_vector, **options)


def chunked_attention(
    score,
    query,
    key,
    value,
    *params,
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    use_causal_mask: bool = False,
    window=None,
    dropout_rate: float = 0.0,
    seed=None,
    block_size: int | None = None,
):
    """Softmax attention with `score` (a `keras_attention.scores` object) in tiles.

    Args:
        score: `scores.DotScore` or `scores.AdditiveScore`.
        query: `(..., Tq, d)` (unprepared: the score scales it); `...` is
            `(B,)` or `(B, H)`.
        key: `(..., Tv, d)`.
        value: `(..., Tv, dv)`.
        *params: the score's tensors (the additive score's vector); their
            gradients come back through the custom gradient.
        query_mask, value_mask, attention_mask, use_causal_mask: the mask
            pieces described in `keras_attention.memory_efficient` (heads
            share them).
        window: a sliding window, as in `masks.sliding_window_mask`; tiles
            wholly outside the band are never computed.
        dropout_rate: fraction of the attention weights dropped.
        seed: int, `keras.random.SeedGenerator` or None, for the dropout.
        block_size: queries and keys per tile; None means 32 for an additive
            score, and for a dot score `dot_block_size` (512 with a band,
            else up to 1024 as the batch and heads allow).

    Returns:
        The context `(..., Tq, dv)` in `value`'s dtype.
    """
    window = validation.window("chunked_attention", "window", window)
    heads = len(query.shape) == 4
    if not heads:  # (B, T, d) -> (B, 1, T, d)
        query, key, value = (ops.expand_dims(x, 1) for x in (query, key, value))
    if block_size is None and score.kind == "additive":
        block_size = DEFAULT_ADDITIVE_BLOCK_SIZE
    elif block_size is None:
        batch, count = query.shape[:2]
        known = isinstance(batch, int) and isinstance(count, int)
        banded = use_causal_mask or window is not None
        block_size = dot_block_size(batch * count if known else None, banded)
    block_size = validation.integer("chunked_attention", "block_size", block_size)
    tq, tv = query.shape[-2], key.shape[-2]
    if not isinstance(tq, int) or not isinstance(tv, int):
        raise ValueError(
            "chunked_attention: the chunked path needs static sequence lengths. "
            f"Received: query shape {tuple(query.shape)}, key shape {tuple(key.shape)}"
        )
    if tq == 0 or tv == 0:  # nothing to attend to: zero context, as for a masked row
        context = ops.zeros((*ops.shape(query)[:-1], ops.shape(value)[-1]), value.dtype)
        return context if heads else ops.squeeze(context, 1)
    masks = dict(query_mask=query_mask, value_mask=value_mask, attention_mask=attention_mask)
    banded = use_causal_mask or window is not None
    guard = banded or any(mask is not None for mask in masks.values())
    if guard:  # a NaN where a query may not look must not reach it
        key, value, hits = masks_lib.guard_memory(
            key, value, tq, use_causal_mask=use_causal_mask, window=window, **masks
        )
    plan = Plan(tq, tv, block_size, bool(use_causal_mask), window)
    tiles = Tiles(
        score,
        plan,
        TileMasks(plan, query_mask, value_mask, attention_mask),
        TileDropout(plan, dropout_rate, seed, ops.shape(query)[:2]),
    )

    @ops.custom_gradient
    def attention(query, key, value, *params):
        padded = tiles.pad(score.prepare(query), key, value)
        context, log_sum_exp = tiles.forward(*padded, params)
        output = ops.cast(context[..., :tq, :], value.dtype)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            grads = tiles.backward(*padded, params, context, log_sum_exp, upstream)
            inputs = (query, key, value) + params
            return tuple(ops.cast(g, x.dtype) for g, x in zip(grads, inputs))

        return output, grad

    context = attention(query, key, value, *params)
    if guard:
        context = masks_lib.poison(context, hits)
    return context if heads else ops.squeeze(context, 1)
