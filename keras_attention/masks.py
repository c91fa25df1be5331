"""Boolean mask helpers. Convention everywhere: `True` means "may attend".

Shape letters: `B` batch, `Tq` query length, `Tv` key/value length.
"""

from __future__ import annotations

from typing import Optional

import keras
from keras import ops

# Finite fill for masked logits. Normalization always runs in float32 (see
# `keras_attention.ops`), so this value never meets float16 arithmetic.
_FLOAT32_LARGE_NEGATIVE = -1e9


def large_negative(dtype) -> float:
    """A finite, very negative number that is safe in `dtype`.

    `-1e9` overflows to `-inf` in float16; this returns the most negative
    finite value there (and `-1e9` for float32/float64/bfloat16-sized ranges).
    """
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype == "float16":
        return -65504.0
    return _FLOAT32_LARGE_NEGATIVE


def padding_mask(lengths, maxlen: int):
    """`(B,)` integer lengths -> `(B, maxlen)` boolean mask, True on real tokens."""
    positions = ops.arange(maxlen, dtype="int32")  # (T,)
    lengths = ops.cast(lengths, "int32")
    return ops.less(positions[None, :], lengths[:, None])  # (B, T)


def causal_mask(query_length, value_length):
    """`(Tq, Tv)` boolean mask: query `i` may attend key `j` iff `j <= i + Tv - Tq`.

    The mask is aligned to the end of the key sequence, so with `Tq == Tv` it
    is the usual lower triangle, and a block of new queries attending to a
    longer history (step-by-step decoding with cached keys) sees the whole
    history plus itself.
    """
    rows = ops.arange(query_length, dtype="int32")[:, None]  # (Tq, 1)
    cols = ops.arange(value_length, dtype="int32")[None, :]  # (1, Tv)
    offset = ops.cast(value_length, "int32") - ops.cast(query_length, "int32")
    return ops.less_equal(cols, rows + offset)  # (Tq, Tv)


def combine_masks(*masks) -> Optional["keras.KerasTensor"]:
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
