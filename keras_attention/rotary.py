"""Rotary position embeddings (RoPE, Su et al. 2021) as pure `keras.ops` functions.

RoPE encodes a position by rotating pairs of features of the queries and the
keys by angles proportional to the position, so the dot product of a query at
position `m` and a key at position `n` depends on `m - n` only.

Convention: "rotate half" (GPT-NeoX, Llama). Feature `i` is paired with
feature `i + d/2` (not with its neighbour `i + 1`, the interleaved layout of
the paper and of GPT-J); pair `i` turns by `position · base^(-2i/d)`:

```text
x1, x2 = x[..., :d/2], x[..., d/2:]
out = [x1 cos θ - x2 sin θ,  x2 cos θ + x1 sin θ]      θ_i = position · base^(-2i/d)
```

Both layouts give the same attention once the projections are trained; they
differ only in which features form a pair, so weights trained with one
convention do not load into the other.

Shape letters: `T` positions, `d` features (even); `...` any leading axes.
"""

from __future__ import annotations

from keras import ops

from keras_attention import validation


def rotary_angles(positions, features: int, base: float = 10000.0):
    """float32 `(..., T, features/2)` angles `position · base^(-2i/features)`.

    Args:
        positions: integer or float positions, `(T,)` or any `(..., T)`.
        features: `d`, the (even) number of features that will be rotated.
        base: the wavelength base (10,000 in the paper).
    """
    positions = ops.cast(positions, "float32")
    exponents = ops.arange(0, features // 2, dtype="float32") * (2.0 / features)
    inverse_frequencies = ops.power(ops.cast(base, "float32"), -exponents)  # (d/2,)
    return positions[..., None] * inverse_frequencies  # (..., T, d/2)


def rotary_embedding(x, positions, base: float = 10000.0):
    """Rotate the features of `x` `(..., T, d)` by their positions (RoPE, rotate-half).

    Args:
        x: queries or keys, `(..., T, d)` with an even `d`, e.g. `(B, H, T, dk)`.
        positions: the position of each of the `T` rows: `(T,)`, or any shape
            that broadcasts against `x.shape[:-1]` (`(B, 1, T)` for a
            `(B, H, T, d)` input). Integers or floats.
        base: the wavelength base; a positive number.

    Returns:
        A tensor of `x`'s shape and dtype. The angles and the rotation are
        computed in float32, so float16 inputs lose no position precision.

    Raises:
        ValueError: `d` is odd, or `base` is not positive.

    Example:

    >>> import numpy as np
    >>> from keras_attention.rotary import rotary_embedding
    >>> q = np.random.rand(2, 4, 5, 8).astype("float32")  # (B, H, T, dk)
    >>> tuple(rotary_embedding(q, np.arange(5)).shape)
    (2, 4, 5, 8)

    References:
        Su et al., "RoFormer: Enhanced Transformer with Rotary Position
        Embedding", 2021 (arXiv:2104.09864).
    """
    owner = "rotary_embedding"
    base = validation.positive_number(owner, "base", base)
    x = ops.convert_to_tensor(x)
    features = validation.static(x.shape[-1])
    if features is None or features % 2:
        validation.fail(
            owner,
            "x",
            "a tensor whose last dimension is a known even number",
            f"a tensor of shape {tuple(x.shape)}",
        )
    angles = rotary_angles(positions, features, base)  # (..., T, d/2)
    cos, sin = ops.cos(angles), ops.sin(angles)
    values = ops.cast(x, "float32")
    first, second = values[..., : features // 2], values[..., features // 2 :]
    rotated = ops.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return ops.cast(rotated, x.dtype)  # (..., T, d)
