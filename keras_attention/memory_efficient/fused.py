"""The fused path: `keras.ops.dot_product_attention` on this package's layout.

Backends with a fused attention kernel (PyTorch's `scaled_dot_product_attention`
on any device, cuDNN flash attention under JAX on a GPU) compute softmax
attention in `O(T)` memory. `paths.fused_attention_available` says which calls
qualify; this module only changes layout and applies the query mask.
"""

from __future__ import annotations

from keras import ops


def fused_dot_product_attention(
    query,
    key,
    value,
    *,
    scale: float | None = None,
    query_mask=None,
    use_causal_mask: bool = False,
):
    """`keras.ops.dot_product_attention` on this package's layout and masks.

    `query` `(..., Tq, dk)`, `key` `(..., Tv, dk)`, `value` `(..., Tv, dv)`
    with `...` `(B,)` or `(B, H)`; `query_mask` `(B, Tq)` zeroes masked rows.
    Only for the cases `fused_attention_available` accepts.
    """
    heads = len(query.shape) == 4
    if not heads:
        query, key, value = (ops.expand_dims(x, 1) for x in (query, key, value))
    query, key, value = (ops.swapaxes(x, 1, 2) for x in (query, key, value))  # (B, T, H, d)
    context = ops.dot_product_attention(query, key, value, scale=scale, is_causal=use_causal_mask)
    context = ops.swapaxes(context, 1, 2)  # (B, H, Tq, dv)
    if query_mask is not None:
        keep = ops.cast(query_mask, "bool")[:, None, :, None]  # (B, 1, Tq, 1)
        context = ops.where(keep, context, ops.zeros_like(context))
    return context if heads else ops.squeeze(context, 1)
