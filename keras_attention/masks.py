"""Boolean mask helpers. Convention everywhere: `True` means "may attend".

The causal rule, the masked fill of logits and the zeroing of masked weights
are defined here once; the exact path (`keras_attention.ops`) and the tiles of
the chunked path (`keras_attention.memory_efficient`) both use them.

Shape letters: `B` batch, `Tq` query length, `Tv` key/value length.
"""

from __future__ import annotations

import keras
from keras import ops

# Finite fill for masked logits. Normalization always runs in float32 (see
# `keras_attention.ops`), so this value never meets float16 arithmetic, where
# -1e9 would be -inf.
MASKED_LOGIT = -1e9


def padding_mask(lengths, maxlen: int):
    """`(B,)` integer lengths -> `(B, maxlen)` boolean mask, True on real tokens."""
    positions = ops.arange(maxlen, dtype="int32")  # (T,)
    lengths = ops.cast(lengths, "int32")
    return ops.less(positions[None, :], lengths[:, None])  # (B, T)


def causal_rule(query_positions, key_positions, offset):
    """`(R, C)` boolean: query at position `i` may attend key `j` iff `j <= i + offset`.

    With `offset = Tv - Tq` the mask is aligned to the end of the keys (see
    `causal_mask`). Positions are int32 vectors, so a tile of a longer
    sequence gets its part of the mask from its absolute positions.
    """
    return ops.less_equal(key_positions[None, :], query_positions[:, None] + offset)


def causal_mask(query_length, value_length):
    """`(Tq, Tv)` boolean mask: query `i` may attend key `j` iff `j <= i + Tv - Tq`.

    The mask is aligned to the end of the key sequence, so with `Tq == Tv` it
    is the usual lower triangle, and a block of new queries attending to a
    longer history (step-by-step decoding with cached keys) sees the whole
    history plus itself.
    """
    offset = ops.cast(value_length, "int32") - ops.cast(query_length, "int32")
    return causal_rule(
        ops.arange(query_length, dtype="int32"), ops.arange(value_length, dtype="int32"), offset
    )


def combine_masks(*masks) -> keras.KerasTensor | None:
    """Logical AND of broadcastable boolean masks; `None` entries are skipped.

    Returns `None` when every entry is `None`.
    """
    combined = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        combined = mask if combined is None else ops.logical_and(combined, mask)
    return combined


def attention_mask_from(
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    use_causal_mask: bool = False,
    query_length=None,
    value_length=None,
):
    """Combine the call's masks into one `(B, Tq, Tv)` (or broadcastable) mask.

    `query_mask` is `(B, Tq)`, `value_mask` `(B, Tv)`, `attention_mask`
    `(B, Tq, Tv)`. A masked query row ends up with nothing to attend to, which
    the normalizers in `keras_attention.ops` turn into zero weights.
    """
    parts = [attention_mask]
    if query_mask is not None:
        parts.append(ops.expand_dims(query_mask, -1))  # (B, Tq, 1)
    if value_mask is not None:
        parts.append(ops.expand_dims(value_mask, -2))  # (B, 1, Tv)
    if use_causal_mask:
        parts.append(causal_mask(query_length, value_length)[None])  # (1, Tq, Tv)
    return combine_masks(*parts)


def fill_masked(logits, mask):
    """float32 `logits` with masked entries replaced by the finite `MASKED_LOGIT`.

    A NaN or Inf logit at a masked position is replaced too, so it cannot
    reach the normalizer. `mask=None` returns `logits` unchanged.
    """
    if mask is None:
        return logits
    return ops.where(mask, logits, MASKED_LOGIT)


def zero_masked(x, mask):
    """`x` with masked entries set to exactly 0 (a `where`, so NaN does not survive)."""
    if mask is None:
        return x
    return ops.where(mask, x, ops.zeros_like(x))


# ----------------------------------------------------------------------------
# Non-finite memory. A NaN or Inf at a masked position must not reach the
# queries that may not see it, but `0 * NaN` is NaN in `weights @ value` (and
# in the query's gradient through the keys). Positions whose key or value is
# not finite are zeroed, and the queries that may attend to one of them get a
# NaN context, as they would without the guard.
# ----------------------------------------------------------------------------
def guard_non_finite(key, value):
    """`(key, value, bad)`: non-finite positions zeroed, `bad` `(..., Tv)` marks them.

    `key` `(..., Tv, dk)` and `value` `(..., Tv, dv)` share their leading axes.
    """
    bad = ops.logical_not(
        ops.logical_and(ops.all(ops.isfinite(key), axis=-1), ops.all(ops.isfinite(value), axis=-1))
    )  # (..., Tv)
    keep = ops.logical_not(bad)[..., None]  # (..., Tv, 1)
    return zero_masked(key, keep), zero_masked(value, keep), bad


def poison(context, hits):
    """`context` `(..., Tq, dv)` with NaN rows where `hits` `(..., Tq)` is True."""
    nan = ops.cast(float("nan"), context.dtype)
    return ops.where(hits[..., None], nan, context)


def guard_memory(
    key,
    value,
    query_length: int,
    *,
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    use_causal_mask=False,
):
    """`(key, value, hits)` for a call whose keys/values may hold NaN or Inf.

    `key` `(B, [H,] Tv, dk)`, `value` `(B, [H,] Tv, dv)`; the mask pieces as in
    `attention_mask_from`. Non-finite positions are zeroed; `hits`
    `(B, [H,] Tq)` marks the queries allowed to attend one of them (pass it to
    `poison`). No `(Tq, Tv)` mask is built unless `attention_mask` is given.
    """
    heads = len(key.shape) == 4
    if not heads:
        key, value = key[:, None], value[:, None]  # (B, 1, Tv, d)
    key, value, bad = guard_non_finite(key, value)  # bad: (B, H, Tv)
    if value_mask is not None:
        bad = ops.logical_and(bad, ops.cast(value_mask, "bool")[:, None, :])
    hits = _rows_seeing(bad, query_length, query_mask, attention_mask, use_causal_mask)
    if not heads:
        key, value, hits = key[:, 0], value[:, 0], hits[:, 0]
    return key, value, hits


def _rows_seeing(bad, query_length, query_mask, attention_mask, use_causal_mask):
    """Whether each query may attend a `bad` position, from the mask pieces.

    `bad` is `(B, H, Tv)` (already False where `value_mask` is False),
    `query_mask` `(B, Tq)`, `attention_mask` `(B, Tq, Tv)`; returns
    `(B, H, Tq)` (or `(B, H, 1)`, the same for every query). Under a causal
    mask, query `i` sees a bad key iff one lies at or before `i + Tv - Tq`: a
    running count, `O(T)`.
    """
    value_length = ops.shape(bad)[-1]
    if attention_mask is not None:
        mask = attention_mask[:, None]  # (B, 1, Tq, Tv)
        if use_causal_mask:
            mask = ops.logical_and(mask, causal_mask(query_length, value_length))
        hits = ops.any(ops.logical_and(ops.cast(mask, "bool"), bad[..., None, :]), axis=-1)
    elif use_causal_mask:
        seen = ops.cumsum(ops.cast(bad, "int32"), axis=-1)  # (B, H, Tv)
        seen = ops.pad(seen, [(0, 0), (0, 0), (1, 0)])  # seen[..., n]: bad among the first n
        visible = ops.arange(query_length, dtype="int32") + 1 + (value_length - query_length)
        hits = ops.take(seen, ops.clip(visible, 0, value_length), axis=-1) > 0  # (B, H, Tq)
    else:
        hits = ops.any(bad, axis=-1, keepdims=True)  # (B, H, 1): every query sees every key
    if query_mask is not None:
        hits = ops.logical_and(hits, ops.cast(query_mask, "bool")[:, None, :])
    return hits
