"""Boolean mask helpers. Convention everywhere: `True` means "may attend".

The causal rule, the masked fill of logits and the zeroing of masked weights
are defined here once; the exact path (`keras_attention.ops`) and the tiles of
the chunked path (`keras_attention.memory_efficient`) both use them.

Shape letters: `B` batch, `Tq` query length, `Tv` key/value length.
"""

from __future__ import annotations

from typing import Optional

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


def combine_masks(*masks) -> Optional[keras.KerasTensor]:
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
