"""Per-head transforms of multi-head attention, as pure `keras.ops` functions.

`MultiHead` holds the weights and calls these; every path (exact, chunked,
fused, the key/value cache) sees their results, since they act on the
projected queries and keys and on the heads' context, not on the scores.

- `rms_normalize(x, scale)`: QK-norm, RMSNorm over each head's `dk` features
  with a learned `(dk,)` scale (Gemma 3, Qwen 3; OLMo 2 normalizes the whole
  `H·dk` projection instead, ViT-22B uses LayerNorm), so the logits stay
  bounded however large the projections grow.
- `gate_context(context, gate_logits)`: gated attention, `context ·
  sigmoid(gate_logits)` elementwise per head feature, the gate projected from
  the query (Qiu et al. 2025; `keras.layers.MultiHeadAttention(use_gate=True)`).

The logits' soft cap lives with the scores (`scores.soft_cap`), rotary
embeddings and their context extension in `keras_attention.rotary`.
"""

from __future__ import annotations

from keras import ops

from keras_attention.precision import math_dtype

# RMSNorm's epsilon in Gemma 3, OLMo 2 and Qwen 3.
QK_NORM_EPSILON = 1e-6


def rms_normalize(x, scale=None, epsilon: float = QK_NORM_EPSILON):
    """`x / sqrt(mean(x²) + ε) · scale` over the last axis, in float32 (float64 for float64).

    Args:
        x: `(..., d)`, e.g. the queries `(B, H, Tq, dk)` of every head.
        scale: `(d,)` learned scale, or None (no scale).
        epsilon: added to the mean square.

    Returns:
        A tensor of `x`'s shape and dtype.

    Example:

    >>> import keras
    >>> from keras_attention.heads import rms_normalize
    >>> x = keras.ops.convert_to_tensor([[3.0, -4.0]])
    >>> keras.ops.convert_to_numpy(rms_normalize(x)).astype("float64").round(3).tolist()
    [[0.849, -1.131]]

    References:
        Zhang & Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019.
        Dehghani et al., "Scaling Vision Transformers to 22 Billion
        Parameters", ICML 2023 (normalizing queries and keys).
    """
    values = ops.cast(x, math_dtype(x))
    mean_square = ops.mean(ops.square(values), axis=-1, keepdims=True)
    normalized = values * ops.rsqrt(mean_square + epsilon)
    if scale is not None:
        normalized = normalized * ops.cast(scale, values.dtype)
    return ops.cast(normalized, x.dtype)


def gate_context(context, gate_logits):
    """`context · sigmoid(gate_logits)`, elementwise, in `context`'s dtype.

    Args:
        context: the heads' merged context, `(B, [Tq,] H·dv)`.
        gate_logits: the query's gate projection, the same shape.

    Example:

    >>> import keras
    >>> from keras_attention.heads import gate_context
    >>> context = keras.ops.convert_to_tensor([[2.0, 2.0]])
    >>> logits = keras.ops.convert_to_tensor([[0.0, 100.0]])
    >>> keras.ops.convert_to_numpy(gate_context(context, logits)).tolist()
    [[1.0, 2.0]]

    References:
        Qiu et al., "Gated Attention for Large Language Models:
        Non-linearity, Sparsity, and Attention-Sink-Free", 2025
        (arXiv:2505.06708).
    """
    gate = ops.sigmoid(ops.cast(gate_logits, math_dtype(context)))
    return context * ops.cast(gate, context.dtype)
