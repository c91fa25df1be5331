"""The fused path: `keras.ops.dot_product_attention` on this package's layout.

Backends with a fused attention kernel (PyTorch's `scaled_dot_product_attention`
on any device, cuDNN flash attention under JAX on a GPU) compute softmax
attention in `O(T)` memory. `paths.fused_attention_available` says which calls
qualify; this module only changes layout, applies the query mask, and hands a
sliding window to the kernel in the form it takes (`backends.windowed_attention`
where the backend has one, else a `(Tq, Tv)` band mask).
"""

from __future__ import annotations

from keras import ops

from keras_attention import backends
from keras_attention import masks as masks_lib


def fused_dot_product_attention(
    query,
    key,
    value,
    *,
    scale: float | None = None,
    query_mask=None,
    use_causal_mask: bool = False,
    window=None,
):
    """`keras.ops.dot_product_attention` on this package's layout and masks.

    `query` `(..., Tq, dk)`, `key` `(..., Tv, dk)`, `value` `(..., Tv, dv)`
    with `...` `(B,)` or `(B, H)`; `query_mask` `(B, Tq)` zeroes masked rows;
    `window` a sliding window (`masks.sliding_window_mask`, end-aligned like
    the causal mask). Only for the cases `fused_attention_available` accepts.
    """
    heads = len(query.shape) == 4
    if not heads:
        query, key, value = (ops.expand_dims(x, 1) for x in (query, key, value))
    query, key, value = (ops.swapaxes(x, 1, 2) for x in (query, key, value))  # (B, T, H, d)
    if window is None:
        context = ops.dot_product_attention(
            query, key, value, scale=scale, is_causal=use_causal_mask
        )
    else:
        context = windowed_dot_product_attention(query, key, value, scale, use_causal_mask, window)
    context = ops.swapaxes(context, 1, 2)  # (B, H, Tq, dv)
    if query_mask is not None:
        keep = ops.cast(query_mask, "bool")[:, None, :, None]  # (B, 1, Tq, 1)
        context = ops.where(keep, context, ops.zeros_like(context))
    return context if heads else ops.squeeze(context, 1)


def windowed_dot_product_attention(query, key, value, scale, use_causal_mask, window):
    """Fused attention of `(B, T, H, d)` inputs inside a sliding window, `(B, Tq, H, dv)`.

    The backend's own windowed kernel where it has one (`backends.windowed_attention`:
    JAX's `local_window_size`), else `keras.ops.dot_product_attention` with the
    `(1, 1, Tq, Tv)` band as its mask (PyTorch: `scaled_dot_product_attention`
    with `attn_mask`; the causal rule rides in the band, end-aligned).
    """
    left, right = masks_lib.key_band(use_causal_mask, window)
    fast = backends.windowed_attention(query, key, value, scale, left, right, use_causal_mask)
    if fast is not None:
        return fast
    band = masks_lib.sliding_window_mask(
        ops.shape(query)[1], ops.shape(key)[1], window, use_causal_mask
    )  # (Tq, Tv)
    return ops.dot_product_attention(query, key, value, mask=band[None, None], scale=scale)
