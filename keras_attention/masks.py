"""Boolean mask helpers. Convention everywhere: `True` means "may attend".

The causal and sliding-window rules (one banded rule, `band_rule`), the
masked fill of logits and the zeroing of masked weights are defined here
once; the exact path (`keras_attention.ops`), the tiles of the chunked path
(`keras_attention.memory_efficient`) and `MultiHead`'s key/value cache all use
them.

Positions are aligned to the end of the keys: query `i` of `Tq` is at
position `i + Tv - Tq` among `Tv` keys, so new queries over a longer history
(cached decoding) are its last positions.

Shape letters: `B` batch, `Tq` query length, `Tv` key/value length.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention import validation

__all__ = [
    "MASKED_LOGIT",
    "attention_mask_from",
    "band_rule",
    "causal_mask",
    "combine_masks",
    "fill_masked",
    "padding_mask",
    "sliding_window_mask",
    "zero_masked",
]

# Finite fill for masked logits, and the package's one large negative (the
# searches' `decoding.NEG_INF` is this value). Normalization always runs in
# float32 (see `keras_attention.ops`), so it never meets float16 arithmetic,
# where -1e9 would be -inf.
MASKED_LOGIT = -1e9


def padding_mask(lengths, maxlen: int):
    """`(B,)` integer lengths -> `(B, maxlen)` boolean mask, True on real tokens."""
    positions = ops.arange(maxlen, dtype="int32")  # (T,)
    lengths = ops.cast(lengths, "int32")
    return ops.less(positions[None, :], lengths[:, None])  # (B, T)


def window_sides(window) -> tuple[int, int] | None:
    """`(left, right)` reach of a validated `window`; None for no window.

    An int `w` is the symmetric band `|p - j| < w` (`w - 1` keys on each
    side, as `keras.layers.MultiHeadAttention(sliding_window=w)`), so with a
    causal mask a query sees the `w` most recent keys, itself included (the
    window `W` of Mistral). A pair `(left, right)` is FlashAttention's
    `window_size`: keys `p - left <= j <= p + right`.
    """
    if window is None:
        return None
    if isinstance(window, int):
        return window - 1, window - 1
    left, right = window
    return left, right


def key_band(use_causal_mask: bool = False, window=None) -> tuple[int | None, int | None]:
    """`(left, right)`: how far before and after its position a query may look.

    `None` is unbounded on that side. A causal mask bounds `right` by 0; a
    `window` (see `window_sides`) bounds both sides. `(None, None)`: no band;
    otherwise `right` is an int (only `left` may be unbounded).
    """
    left, right = window_sides(window) or (None, None)
    if use_causal_mask:
        right = 0 if right is None else min(right, 0)
    return left, right


def visible_keys(query_positions, offset, left, right):
    """`(first, last)`: the first and last key a query may see, inclusive.

    Query `i` is at position `p = i + offset` and sees keys `p - left <= j <=
    p + right` (`None`: that side unbounded, returned as None). Plain
    arithmetic: it takes Python ints (the chunked path's tile plan) as well
    as int32 vectors (masks, the non-finite guard).
    """
    position = query_positions + offset
    first = None if left is None else position - left
    last = None if right is None else position + right
    return first, last


def band_rule(query_positions, key_positions, offset, left, right):
    """`(R, C)` boolean: query `i` may attend key `j` iff `j` is in its band.

    The band is `visible_keys(i, offset, left, right)`; `(None, None)` gives
    all True. Positions are int32 vectors, so a tile of a longer sequence
    gets its part of the mask from its absolute positions.
    """
    first, last = visible_keys(query_positions, offset, left, right)
    keys = key_positions[None, :]
    after_first = None if first is None else ops.greater_equal(keys, first[:, None])
    before_last = None if last is None else ops.less_equal(keys, last[:, None])
    allowed = combine_masks(after_first, before_last)  # one comparison when causal only
    if allowed is None:
        return ops.ones((ops.shape(query_positions)[0], ops.shape(key_positions)[0]), "bool")
    return allowed


def _band_mask(query_length, value_length, left, right):
    offset = ops.cast(value_length, "int32") - ops.cast(query_length, "int32")
    return band_rule(
        ops.arange(query_length, dtype="int32"),
        ops.arange(value_length, dtype="int32"),
        offset,
        left,
        right,
    )


def causal_mask(query_length, value_length):
    """`(Tq, Tv)` boolean mask: query `i` may attend key `j` iff `j <= i + Tv - Tq`.

    The mask is aligned to the end of the key sequence, so with `Tq == Tv` it
    is the usual lower triangle, and a block of new queries attending to a
    longer history (step-by-step decoding with cached keys) sees the whole
    history plus itself.
    """
    return _band_mask(query_length, value_length, *key_band(True))


def sliding_window_mask(query_length, value_length, window, use_causal_mask: bool = False):
    """`(Tq, Tv)` boolean sliding-window (banded, local) mask.

    Query `i`, at position `p = i + Tv - Tq` (aligned to the end of the keys
    like `causal_mask`), may attend key `j` iff `p - left <= j <= p + right`:

    - `window=w` (a positive int): `|p - j| < w`, `w - 1` keys on each side,
      as `keras.layers.MultiHeadAttention(sliding_window=w)` (which aligns
      positions to the start instead: the same mask when `Tq == Tv`);
    - `window=(left, right)` (non-negative ints): FlashAttention's
      `window_size`; `(w - 1, 0)` is the same as `w` with a causal mask.

    With `use_causal_mask=True` the band also stops at `p` (`j <= p`): with
    `window=w` each query sees its `w` most recent keys, itself included (the
    sliding window `W` of Mistral). Rows whose band holds no key (possible
    when `Tq > Tv`) are all False; the layers give them zero context.

    Example:

    >>> import keras
    >>> from keras_attention import masks
    >>> keras.ops.convert_to_numpy(masks.sliding_window_mask(4, 4, 2)).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    window = validation.window("sliding_window_mask", "window", window)
    if window is None:
        validation.fail(
            "sliding_window_mask", "window", "a positive int or a (left, right) pair", None
        )
    return _band_mask(query_length, value_length, *key_band(use_causal_mask, window))


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
    window=None,
):
    """Combine the call's masks into one `(B, Tq, Tv)` (or broadcastable) mask.

    `query_mask` is `(B, Tq)`, `value_mask` `(B, Tv)`, `attention_mask`
    `(B, Tq, Tv)`; `use_causal_mask` and a sliding `window` (see
    `sliding_window_mask`) add one `(1, Tq, Tv)` band. A masked query row ends
    up with nothing to attend to, which the normalizers in
    `keras_attention.ops` turn into zero weights.
    """
    parts = [attention_mask]
    if query_mask is not None:
        parts.append(ops.expand_dims(query_mask, -1))  # (B, Tq, 1)
    if value_mask is not None:
        parts.append(ops.expand_dims(value_mask, -2))  # (B, 1, Tv)
    left, right = key_band(use_causal_mask, window)
    if left is not None or right is not None:
        parts.append(_band_mask(query_length, value_length, left, right)[None])  # (1, Tq, Tv)
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
    window=None,
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
    band = key_band(use_causal_mask, window)
    hits = _rows_seeing(bad, query_length, query_mask, attention_mask, band)
    if not heads:
        key, value, hits = key[:, 0], value[:, 0], hits[:, 0]
    return key, value, hits


def _rows_seeing(bad, query_length, query_mask, attention_mask, band):
    """Whether each query may attend a `bad` position, from the mask pieces.

    `bad` is `(B, H, Tv)` (already False where `value_mask` is False),
    `query_mask` `(B, Tq)`, `attention_mask` `(B, Tq, Tv)`, `band` the
    `(left, right)` of `key_band`; returns `(B, H, Tq)` (or `(B, H, 1)`, the
    same for every query). Under a band (causal, sliding window), query `i`
    sees a bad key iff one lies in `visible_keys(i)`: a difference of running
    counts, `O(T)`.
    """
    value_length = ops.shape(bad)[-1]
    banded = band != (None, None)
    if attention_mask is not None:
        mask = attention_mask[:, None]  # (B, 1, Tq, Tv)
        if banded:
            mask = ops.logical_and(mask, _band_mask(query_length, value_length, *band))
        hits = ops.any(ops.logical_and(ops.cast(mask, "bool"), bad[..., None, :]), axis=-1)
    elif banded:
        seen = ops.cumsum(ops.cast(bad, "int32"), axis=-1)  # (B, H, Tv)
        seen = ops.pad(seen, [(0, 0), (0, 0), (1, 0)])  # seen[..., n]: bad among the first n
        first, last = visible_keys(
            ops.arange(query_length, dtype="int32"), value_length - query_length, *band
        )  # (Tq,) each, or None

        def bad_before(n):  # (B, H, Tq): bad keys at positions < n
            return ops.take(seen, ops.clip(n, 0, value_length), axis=-1)

        hits = bad_before(last + 1)  # a band always bounds `right` (`key_band`)
        if first is not None:
            hits = hits - bad_before(first)
        hits = hits > 0
    else:
        hits = ops.any(bad, axis=-1, keepdims=True)  # (B, H, 1): every query sees every key
    if query_mask is not None:
        hits = ops.logical_and(hits, ops.cast(query_mask, "bool")[:, None, :])
    return hits
